"""Conformance: bad arguments raise typed errors alike on every backend (capability
``repository``): :class:`~sessiontree.errors.InvalidArgumentError`, or for session ids
:class:`~sessiontree.errors.InvalidEntryError`; nothing stored changes."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, ClassVar

import pytest

from sessiontree.entries import MessageEntry, dump_entry
from sessiontree.errors import InvalidArgumentError, InvalidEntryError
from sessiontree.messages import parse_message
from sessiontree.repos.base import SessionRepo
from sessiontree.testing.builders import user
from sessiontree.testing.conformance._base import Conformance, snapshot

__all__ = ["ArgumentConformance"]


class ArgumentConformance(Conformance):
    """Bad arguments: the same typed error on every backend, and nothing changed."""

    capability: ClassVar[str] = "repository"

    async def test_bad_arguments_raise_typed_errors_on_every_backend(
        self, repo: SessionRepo
    ) -> None:
        # get_entries(limit="5") and search(None) gave raw TypeError/AttributeError;
        # types="message" returned []; limit=-1, offset=-1, tokens_before=-5 were accepted;
        # a 3,000-character entry id failed on PostgreSQL as "cannot reach PostgreSQL"; and
        # PostgreSQL's open(123) showed raw SQL
        s = await repo.create(id="args")
        u = await s.append_message(user("hello"))
        before = await snapshot(s)
        listed = [(i.id, i.entry_count) for i in await repo.list()]
        huge = MessageEntry(id="x" * 3000, parent_id=u, message=parse_message(user("big")))
        cases: list[tuple[str, Callable[[], Awaitable[Any]], type[Exception]]] = [
            ("get_entries limit str", lambda: s.get_entries(limit="5"), InvalidArgumentError),  # type: ignore[arg-type]
            ("get_entries limit -1", lambda: s.get_entries(limit=-1), InvalidArgumentError),
            ("get_entries limit bool", lambda: s.get_entries(limit=True), InvalidArgumentError),
            ("get_entries types str", lambda: s.get_entries(types="message"), InvalidArgumentError),
            ("get_entries types int", lambda: s.get_entries(types={1}), InvalidArgumentError),  # type: ignore[arg-type]
            ("get_entries after int", lambda: s.get_entries(after=5), InvalidArgumentError),  # type: ignore[arg-type]
            ("get_entries reverse str", lambda: s.get_entries(reverse="yes"), InvalidArgumentError),  # type: ignore[arg-type]
            ("get_entry int", lambda: s.get_entry(123), InvalidArgumentError),  # type: ignore[arg-type]
            ("get_entry empty", lambda: s.get_entry(""), InvalidArgumentError),
            ("get_branch int", lambda: s.get_branch(7), InvalidArgumentError),  # type: ignore[arg-type]
            ("get_label None", lambda: s.get_label(None), InvalidArgumentError),  # type: ignore[arg-type]
            ("build_context leaf int", lambda: s.build_context(3), InvalidArgumentError),  # type: ignore[arg-type]
            ("set_leaf_id int", lambda: s.set_leaf_id(9), InvalidArgumentError),  # type: ignore[arg-type]
            ("navigate int", lambda: s.navigate(9), InvalidArgumentError),  # type: ignore[arg-type]
            ("fork int", lambda: s.fork(9), InvalidArgumentError),  # type: ignore[arg-type]
            ("label target int", lambda: s.append_label(1, "x"), InvalidArgumentError),  # type: ignore[arg-type]
            ("label text int", lambda: s.append_label(u, 5), InvalidArgumentError),  # type: ignore[arg-type]
            ("name None", lambda: s.append_session_name(None), InvalidArgumentError),  # type: ignore[arg-type]
            ("tokens_before -5", lambda: s.append_compaction("s", -5), InvalidArgumentError),
            ("tokens_before str", lambda: s.append_compaction("s", "5"), InvalidArgumentError),  # type: ignore[arg-type]
            ("3,000-char entry id", lambda: s.append_entry(huge), InvalidEntryError),
            ("list limit -1", lambda: repo.list(limit=-1), InvalidArgumentError),
            ("list offset -1", lambda: repo.list(offset=-1), InvalidArgumentError),
            ("list limit str", lambda: repo.list(limit="5"), InvalidArgumentError),  # type: ignore[arg-type]
            ("open int", lambda: repo.open(123), InvalidEntryError),  # type: ignore[arg-type]
            ("open path", lambda: repo.open("../args"), InvalidEntryError),
            ("open long", lambda: repo.open("x" * 3000), InvalidEntryError),
            ("delete int", lambda: repo.delete(123), InvalidEntryError),  # type: ignore[arg-type]
            ("fork int", lambda: repo.fork(123, u), InvalidEntryError),  # type: ignore[arg-type]
            ("create entries str", lambda: repo.create(entries="x"), InvalidArgumentError),  # type: ignore[arg-type]
            ("create entries dicts", lambda: repo.create(entries=[{}]), InvalidArgumentError),  # type: ignore[list-item]
        ]
        for name, call, error in cases:
            with pytest.raises(error) as err:
                await call()
            assert "\n" not in str(err.value), name
            assert "SELECT" not in str(err.value) and "cannot reach" not in str(err.value), name
        assert await snapshot(s) == before
        assert [(i.id, i.entry_count) for i in await repo.list()] == listed
        # the limits are limits, not types: the edges are accepted
        assert await s.get_entries(limit=0) == []
        assert [dump_entry(e) for e in await s.get_entries(types=["message"])] == [
            dump_entry(e) for e in await s.get_entries()
        ]
        ok = MessageEntry(id="y" * 512, parent_id=u, message=parse_message(user("edge")))
        assert await s.append_entry(ok) == "y" * 512
