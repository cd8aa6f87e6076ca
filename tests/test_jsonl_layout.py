"""The JSONL repository's layout is the repository's: the storage only asks it."""

from __future__ import annotations

from pathlib import Path

from sessiontree.backends.jsonl.layout import LOG_NAME, STATS_NAME, RepoLayout
from sessiontree.backends.jsonl.listing_index import INDEX_DIR
from sessiontree.backends.jsonl.repo import JSONLRepo
from sessiontree.backends.jsonl.storage import JSONLStorage
from sessiontree.testing.builders import user


def _names(directory: Path) -> set[str]:
    return {p.name for p in directory.iterdir()}


async def test_a_fork_through_the_repository_gets_its_own_directory(tmp_path: Path) -> None:
    repo = JSONLRepo(tmp_path)
    s = await repo.create(id="src")
    first = await s.append_message(user("one"))
    fork = await repo.fork("src", first)
    await repo.close()
    assert _names(tmp_path) == {"src", fork.id, INDEX_DIR}  # INDEX_DIR: the listing index
    assert _names(tmp_path / fork.id) >= {LOG_NAME, STATS_NAME}
    await repo.delete(fork.id)
    assert not (tmp_path / fork.id).exists()


async def test_the_storage_keeps_what_the_layout_it_is_given_asks_for(tmp_path: Path) -> None:
    repo = JSONLRepo(tmp_path)
    s = await repo.create(id="s")
    first = await s.append_message(user("one"))
    await repo.close()
    log = tmp_path / "s" / LOG_NAME
    # opened on its own, a log keeps no sidecar and forks beside itself ...
    alone = JSONLStorage(log)
    sibling = await alone.fork(first)
    assert isinstance(sibling, JSONLStorage)
    assert sibling.path == log.parent / f"{sibling.id}.jsonl"
    # ... and with the repository's layout it forks into the repository
    inside = JSONLStorage(log, layout=RepoLayout(tmp_path))
    fork = await inside.fork(first)
    assert isinstance(fork, JSONLStorage)
    assert fork.path == tmp_path / fork.id / LOG_NAME
    await fork.delete()
    assert not (tmp_path / fork.id).exists()
