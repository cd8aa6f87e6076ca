"""Conformance cases for search and for argument checks (SPEC §6, §7).

Part of :class:`sessiontree.testing.conformance.ConformanceSuite`. Search is one semantics
on every backend (:mod:`sessiontree.storage.search`): a case-insensitive substring of the
message text. Bad arguments raise :class:`~sessiontree.errors.InvalidArgumentError` (or, for
session ids, :class:`~sessiontree.errors.InvalidEntryError`) on every backend alike.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from sessiontree.entries import MessageEntry, dump_entry
from sessiontree.errors import InvalidArgumentError, InvalidEntryError
from sessiontree.messages import parse_message
from sessiontree.repos.base import SessionRepo
from sessiontree.testing._support import snapshot
from sessiontree.testing.builders import assistant, tool_call, tool_result, user

__all__ = ["ArgumentCases", "SearchCases"]

TEXTS = {
    "cjk-ja": "最新の状態を確認してから push してください",
    "cjk-zh": "这个仓库里有三个分支",
    "paths": "Edit main.py and src/tui-renderer.ts, then bump package.json",
    "mixed": "README.md says: run `npm test` — ÉCOLE café",
    "short": "ok hi",
}


class SearchCases:
    """What a search finds: every substring, in every script, case-insensitively."""

    async def test_search_finds_any_substring_in_any_script(self, repo: SessionRepo) -> None:
        # SQL backends searched word prefixes: a word inside a CJK run was not found, and
        # PostgreSQL missed file names (2 hits where SQLite found 50)
        a = await repo.create()
        b = await repo.create()
        ids = {
            "cjk-ja": await a.append_message(user(TEXTS["cjk-ja"])),
            "cjk-zh": await b.append_message(user(TEXTS["cjk-zh"])),
            "paths": await a.append_message(assistant(TEXTS["paths"], tool_call("c1"))),
            "result": await a.append_message(tool_result("c1", "wrote main.py (12 lines)")),
            "mixed": await b.append_message(assistant(TEXTS["mixed"])),
            "short": await b.append_message(user(TEXTS["short"])),
        }
        where = {k: (a.id if k in ("cjk-ja", "paths", "result") else b.id) for k in ids}

        async def found(query: str) -> set[str]:
            hits = await repo.search(query, limit=50)
            assert len(hits) == len({(h.session_id, h.entry_id) for h in hits}), query
            out = set()
            for h in hits:
                name = next(k for k, v in ids.items() if v == h.entry_id)
                assert h.session_id == where[name]
                out.add(name)
            return out

        expected = {
            "最新の状態": {"cjk-ja"},
            "状態": {"cjk-ja"},
            "の状": {"cjk-ja"},
            "仓库": {"cjk-zh"},
            "库": {"cjk-zh"},
            "main.py": {"paths", "result"},
            "MAIN.PY": {"paths", "result"},
            "tui-renderer.ts": {"paths"},
            "renderer.t": {"paths"},
            "package.json": {"paths"},
            "src/tui": {"paths"},
            "`npm test`": {"mixed"},
            "école": {"mixed"},
            "CAFÉ": {"mixed"},
            "hi": {"short"},
            "k h": {"short"},
            "e": {"paths", "result", "mixed"},
            "main.pyx": set(),
            "状態です": set(),
            "cafe": set(),  # no folding beyond case
            "100%": set(),
            "_": set(),
            "": set(),
            "   ": set(),
        }
        for query, names in expected.items():
            assert await found(query) == names, query
        assert len(await repo.search("e", limit=2)) == 2
        assert await repo.search("main.py", limit=0) == []
        hit = (await repo.search("tui-renderer"))[0]
        assert "tui-renderer.ts" in hit.snippet

    async def test_search_sees_entries_appended_later_and_forks(self, repo: SessionRepo) -> None:
        s = await repo.create()
        await s.append_message(user("nothing yet"))
        assert await repo.search("状態") == []
        late = await s.append_message(user("今の状態"))
        assert [h.entry_id for h in await repo.search("状態")] == [late]
        fork = await s.fork(late)
        assert {h.session_id for h in await repo.search("の状態")} == {s.id, fork.id}


class ArgumentCases:
    """Bad arguments: the same typed error on every backend, and nothing changed."""

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
            ("get_entries types str", lambda: s.get_entries(types="message"), InvalidArgumentError),  # type: ignore[arg-type]
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
            ("search None", lambda: repo.search(None), InvalidArgumentError),  # type: ignore[arg-type]
            ("search int", lambda: repo.search(5), InvalidArgumentError),  # type: ignore[arg-type]
            ("search limit str", lambda: repo.search("x", limit="5"), InvalidArgumentError),  # type: ignore[arg-type]
            ("search limit -1", lambda: repo.search("x", limit=-1), InvalidArgumentError),
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
