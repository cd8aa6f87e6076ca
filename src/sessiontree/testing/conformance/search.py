"""Conformance: full-text search over messages (capability ``search``)."""

from __future__ import annotations

from typing import ClassVar

import pytest

from sessiontree.errors import InvalidArgumentError
from sessiontree.repos.base import SessionRepo
from sessiontree.testing.builders import assistant, tool_call, tool_result, user
from sessiontree.testing.conformance._base import (
    Conformance,
)

__all__ = ["SearchConformance"]

TEXTS = {
    "cjk-ja": "最新の状態を確認してから push してください",
    "cjk-zh": "这个仓库里有三个分支",
    "paths": "Edit main.py and src/tui-renderer.ts, then bump package.json",
    "mixed": "README.md says: run `npm test` — ÉCOLE café",
    "short": "ok hi",
}


class SearchConformance(Conformance):
    """Search over messages: one semantics on every backend
    (:mod:`sessiontree.storage.search`), a case-insensitive substring of the message text."""

    capability: ClassVar[str] = "search"

    async def test_search(self, repo: SessionRepo) -> None:
        a = await repo.create()
        b = await repo.create()
        await a.append_message(user("the quick brown fox jumps"))
        hit_id = await b.append_message(assistant("a lazy zebrafish sleeps"))
        await b.append_message(user("nothing to see"))
        hits = await repo.search("zebrafish", limit=10)
        assert [(h.session_id, h.entry_id) for h in hits] == [(b.id, hit_id)]
        assert "zebrafish" in hits[0].snippet
        assert await repo.search("unmatchedword") == []

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

    async def test_bad_search_arguments_raise_typed_errors(self, repo: SessionRepo) -> None:
        # search(None) gave a raw AttributeError; limits differed per backend
        s = await repo.create()
        await s.append_message(user("hello"))
        for query, limit in ((None, 5), (5, 5), ("x", "5"), ("x", -1), ("x", True)):
            with pytest.raises(InvalidArgumentError):
                await repo.search(query, limit=limit)  # type: ignore[arg-type]
        assert await repo.search("hello", limit=0) == []
