"""Session ids and metadata have their own errors, and every error keeps its bare ``detail``."""

from __future__ import annotations

import pytest

from sessiontree import (
    CompactionError,
    DuplicateEntryError,
    InvalidEntryError,
    SessionExistsError,
    SessionRepo,
)
from sessiontree.errors import (
    CorruptSessionError,
    InvalidMetadataError,
    InvalidSessionIdError,
    SessionTreeError,
)
from sessiontree.ids import check_session_id, is_session_id


async def test_a_taken_id_is_a_session_exists_error_on_every_backend(repo: SessionRepo) -> None:
    await repo.create(id="taken")
    with pytest.raises(SessionExistsError) as err:
        await repo.create(id="taken")
    assert isinstance(err.value, DuplicateEntryError) and isinstance(err.value, ValueError)
    assert err.value.session_id == "taken"
    assert err.value.detail == "a session with this id already exists"


@pytest.mark.parametrize("bad", ["../etc", "", "x" * 129, "sp ace"])
async def test_an_unsafe_id_is_an_invalid_session_id_error_on_every_backend(
    repo: SessionRepo, bad: str
) -> None:
    with pytest.raises(InvalidSessionIdError) as err:
        await repo.create(id=bad)
    assert isinstance(err.value, InvalidEntryError) and isinstance(err.value, ValueError)
    assert repr(bad) in err.value.detail


async def test_bad_metadata_is_an_invalid_metadata_error_on_every_backend(
    repo: SessionRepo,
) -> None:
    with pytest.raises(InvalidMetadataError):
        await repo.create(metadata=["not", "a", "mapping"])  # type: ignore[arg-type]
    with pytest.raises(InvalidMetadataError, match="JSON cannot carry"):
        await repo.create(metadata={"cwd": "\ud800"})
    assert await repo.list() == []


def test_one_session_id_rule() -> None:
    assert is_session_id("a-B_9") and is_session_id("x" * 128)
    assert not is_session_id("x" * 129) and not is_session_id("a.b") and not is_session_id(7)
    assert check_session_id("ok") == "ok"
    with pytest.raises(InvalidSessionIdError):
        check_session_id("a/b")


def test_detail_is_the_message_without_code_and_location() -> None:
    exc = CompactionError("leaf_moved", "the leaf moved", session_id="s", entry_id="e")
    assert str(exc) == "[leaf_moved] the leaf moved (session 's', entry 'e')"
    assert exc.detail == "the leaf moved"
    plain = SessionTreeError("no good", session_id="s")
    assert (str(plain), plain.detail) == ("no good (session 's')", "no good")
    corrupt = CorruptSessionError("bad line", path="/x.jsonl", line_number=3, session_id="s")
    assert corrupt.detail == "/x.jsonl:3: bad line"
