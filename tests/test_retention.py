"""The trash, prune and the size report, alike on every backend (docs/storage.md "Retention")."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from sessiontree import SessionExistsError, SessionNotFoundError, SessionRepo
from sessiontree.repos import as_trash_repo, prune, store_usage
from sessiontree.testing.builders import assistant, tool_call, tool_result, user

OLD = datetime(2020, 1, 1, tzinfo=UTC)


async def _session(
    repo: SessionRepo,
    text: str,
    *,
    modified_at: datetime | None = None,
    cwd: str | None = None,
    agent: str | None = None,
    name: str | None = None,
    label: bool = False,
) -> str:
    meta: dict[str, object] = {}
    if cwd is not None:
        meta["cwd"] = cwd
    if agent is not None:
        meta["importedFrom"] = {"format": agent}
    s = await repo.create(metadata=meta)
    first = await s.append_message(user(text))
    await s.append_message(assistant(f"answer to {text}"))
    if name is not None:
        await s.append_session_name(name)
    if label:
        await s.append_label(first, "keep")
    if modified_at is not None:
        await s.storage.set_modified_at(modified_at)
    return s.id


async def _snapshot(repo: SessionRepo, session_id: str) -> tuple[object, ...]:
    s = await repo.open(session_id)
    info = next(i for i in await repo.list() if i.id == session_id)
    return (
        await s.get_entries(),
        await s.get_leaf_id(),
        await s.get_metadata(),
        info.created_at,
        info.modified_at,
        info.name,
    )


async def test_trash_and_restore_give_back_exactly_the_entries(repo: SessionRepo) -> None:
    trash = as_trash_repo(repo)
    sid = await _session(repo, "hello", name="named", modified_at=OLD, cwd="/w/app")
    s = await repo.open(sid)
    branch_point = (await s.get_entries())[0].id
    await s.set_leaf_id(branch_point)
    await s.append_message(user("a second branch"))
    before = await _snapshot(repo, sid)
    other = await _session(repo, "other")

    row = await trash.trash(sid)
    assert row.id == sid and row.name == "named" and row.size_bytes > 0
    assert row.entry_count == len(before[0])  # type: ignore[arg-type]
    assert [i.id for i in await repo.list()] == [other]
    with pytest.raises(SessionNotFoundError):
        await repo.open(sid)
    assert [h.session_id for h in await repo.search("hello")] == []
    assert [t.id for t in await trash.list_trash()] == [sid]

    restored = await trash.restore(sid)
    assert restored.id == sid
    assert await _snapshot(repo, sid) == before
    assert await trash.list_trash() == []
    assert {h.session_id for h in await repo.search("hello")} == {sid}
    await (await repo.open(sid)).append_message(user("still writable"))


async def test_a_storage_held_while_its_session_is_trashed_is_gone(repo: SessionRepo) -> None:
    sid = await _session(repo, "held")
    s = await repo.open(sid)
    await as_trash_repo(repo).trash(sid)
    with pytest.raises(SessionNotFoundError):
        await s.append_message(user("into the void"))
    restored = await as_trash_repo(repo).restore(sid)
    assert len(await restored.get_entries()) == 2


async def test_refused_trash_and_restore_change_nothing(repo: SessionRepo) -> None:
    trash = as_trash_repo(repo)
    sid = await _session(repo, "first")
    await trash.trash(sid)
    again = await repo.create(id=sid)
    await again.append_message(user("second life"))
    with pytest.raises(SessionExistsError):
        await trash.trash(sid)  # the trash holds this id already
    with pytest.raises(SessionExistsError):
        await trash.restore(sid)  # a live session holds it
    assert [i.id for i in await repo.list()] == [sid]
    assert len(await (await repo.open(sid)).get_entries()) == 1
    assert [t.entry_count for t in await trash.list_trash()] == [2]
    with pytest.raises(SessionNotFoundError):
        await trash.trash("no-such-session")
    with pytest.raises(SessionNotFoundError):
        await trash.restore("no-such-session")
    with pytest.raises(SessionNotFoundError):
        await trash.purge("no-such-session")


async def test_purge_deletes_a_trashed_session_for_good(repo: SessionRepo) -> None:
    trash = as_trash_repo(repo)
    sid = await _session(repo, "bye")
    await trash.trash(sid)
    await trash.purge(sid)
    assert await trash.list_trash() == []
    with pytest.raises(SessionNotFoundError):
        await trash.restore(sid)
    assert await repo.list() == []


async def test_prune_dry_run_lists_and_changes_nothing(repo: SessionRepo) -> None:
    old = await _session(repo, "old", modified_at=OLD)
    await _session(repo, "new")
    report = await prune(repo, timedelta(days=90), dry_run=True)
    assert [c.info.id for c in report.trashed] == [old]
    assert report.bytes_trashed > 0 and report.trashed[0].size_bytes == report.bytes_trashed
    assert len(await repo.list()) == 2
    assert await as_trash_repo(repo).list_trash() == []


async def test_prune_keeps_named_and_labelled_sessions_unless_asked(repo: SessionRepo) -> None:
    plain = await _session(repo, "plain", modified_at=OLD)
    named = await _session(repo, "named", modified_at=OLD, name="keep me")
    labelled = await _session(repo, "labelled", modified_at=OLD, label=True)
    recent = await _session(repo, "recent")
    report = await prune(repo, timedelta(days=90))
    assert [c.info.id for c in report.trashed] == [plain]
    assert {c.info.id for c in report.kept} == {named, labelled}
    assert {i.id for i in await repo.list()} == {named, labelled, recent}
    report = await prune(repo, timedelta(days=90), include_named=True)
    assert {c.info.id for c in report.trashed} == {named, labelled}
    assert [i.id for i in await repo.list()] == [recent]
    assert len(await as_trash_repo(repo).list_trash()) == 3


async def test_prune_filters_by_agent_and_project(repo: SessionRepo) -> None:
    codex_app = await _session(repo, "a", modified_at=OLD, agent="codex", cwd="/home/u/app")
    codex_lib = await _session(repo, "b", modified_at=OLD, agent="codex", cwd="/home/u/lib")
    own_app = await _session(repo, "c", modified_at=OLD, cwd="/home/u/app/sub")
    report = await prune(repo, timedelta(days=1), agent="codex", dry_run=True)
    assert {c.info.id for c in report.trashed} == {codex_app, codex_lib}
    report = await prune(repo, timedelta(days=1), project="/home/u/app", dry_run=True)
    assert {c.info.id for c in report.trashed} == {codex_app, own_app}
    report = await prune(repo, timedelta(days=1), project="lib", agent="codex")
    assert [c.info.id for c in report.trashed] == [codex_lib]


async def test_prune_purges_what_was_trashed_longer_than_the_keep_period(
    repo: SessionRepo,
) -> None:
    trash = as_trash_repo(repo)
    sid = await _session(repo, "x", modified_at=OLD)
    await prune(repo, timedelta(days=1))
    assert [t.id for t in await trash.list_trash()] == [sid]
    soon = datetime.now(UTC) + timedelta(days=10)
    report = await prune(repo, timedelta(days=1), now=soon)  # kept 30 days
    assert report.purged == [] and len(await trash.list_trash()) == 1
    later = datetime.now(UTC) + timedelta(days=31)
    report = await prune(repo, timedelta(days=1), now=later, dry_run=True)
    assert [t.id for t in report.purged] == [sid] and report.bytes_freed > 0
    assert len(await trash.list_trash()) == 1
    report = await prune(repo, timedelta(days=1), now=later)
    assert [t.id for t in report.purged] == [sid]
    assert await trash.list_trash() == []


async def test_size_report_finds_the_largest_payload(repo: SessionRepo) -> None:
    small = await _session(repo, "small", cwd="/w/small", agent="codex")
    s = await repo.create(metadata={"cwd": "/w/big"})
    await s.append_message(user("read the log"))
    await s.append_message(assistant("", tool_call("c1", "read", p="x")))
    big = await s.append_message(tool_result("c1", "x" * 50_000))
    sizes = await as_trash_repo(repo).session_sizes()
    assert set(sizes) == {small, s.id}
    assert sizes[s.id] > 50_000 > sizes[small] > 0
    usage = await store_usage(repo, limit=1)
    assert usage.sessions == 2 and usage.total_bytes == sum(sizes.values())
    assert [(g.key, g.size_bytes) for g in usage.groups] == [(s.id, sizes[s.id])]
    [top] = usage.largest_entries
    assert (top.session_id, top.entry_id, top.type) == (s.id, big, "message")
    assert 50_000 < top.size_bytes <= sizes[s.id]
    by_project = await store_usage(repo, by="project")
    assert [g.key for g in by_project.groups] == ["big", "small"]
    by_agent = await store_usage(repo, by="agent")
    assert {g.key: g.sessions for g in by_agent.groups} == {"sessiontree": 1, "codex": 1}
    await as_trash_repo(repo).trash(small)
    usage = await store_usage(repo)
    assert usage.trash_sessions == 1 and usage.trash_bytes > 0 and usage.sessions == 1
