"""Conformance: creating, opening and deleting sessions; session ids (capability ``repository``)."""

from __future__ import annotations

from typing import ClassVar

import pytest

from sessiontree.errors import (
    DuplicateEntryError,
    InvalidEntryError,
    SessionNotFoundError,
)
from sessiontree.repos.base import SessionRepo
from sessiontree.testing.builders import user
from sessiontree.testing.conformance._base import (
    Conformance,
)

__all__ = ["RepositoryConformance"]


class RepositoryConformance(Conformance):
    """Creating, opening and deleting sessions; session ids."""

    capability: ClassVar[str] = "repository"

    async def test_create_open_and_list(self, repo: SessionRepo) -> None:
        s = await repo.create(metadata={"systemPrompt": "be brief", "cwd": "/w", "custom": 1})
        await s.append_message(user("hello there"))
        other = await repo.open(s.id)
        assert other.id == s.id
        meta = await other.get_metadata()
        assert meta.system_prompt == "be brief"
        assert meta.cwd == "/w"
        assert (meta.model_extra or {}).get("custom") == 1
        infos = await repo.list()
        assert [i.id for i in infos] == [s.id]
        assert infos[0].entry_count == 1
        assert infos[0].message_count == 1
        assert infos[0].first_message == "hello there"

    async def test_create_with_id_and_duplicate(self, repo: SessionRepo) -> None:
        s = await repo.create(id="my-session_1")
        assert s.id == "my-session_1"
        with pytest.raises(DuplicateEntryError) as err:
            await repo.create(id="my-session_1")
        assert "my-session_1" in str(err.value)

    @pytest.mark.parametrize("bad", ["../etc", "a/b", "x\x00y", "", "x" * 129, "sp ace"])
    async def test_create_refuses_unsafe_ids(self, repo: SessionRepo, bad: str) -> None:
        with pytest.raises(InvalidEntryError):
            await repo.create(id=bad)
        assert await repo.list() == []

    async def test_open_unknown_session(self, repo: SessionRepo) -> None:
        with pytest.raises(SessionNotFoundError) as err:
            await repo.open("no-such-session")
        assert "no-such-session" in str(err.value)
        with pytest.raises(SessionNotFoundError):
            await repo.delete("no-such-session")

    async def test_delete(self, repo: SessionRepo) -> None:
        keep = await repo.create()
        gone = await repo.create()
        await gone.append_message(user("bye"))
        await repo.delete(gone.id)
        assert [i.id for i in await repo.list()] == [keep.id]
        with pytest.raises(SessionNotFoundError):
            await repo.open(gone.id)

    async def test_session_delete_method(self, repo: SessionRepo) -> None:
        s = await repo.create()
        await s.delete()
        with pytest.raises(SessionNotFoundError):
            await repo.open(s.id)
