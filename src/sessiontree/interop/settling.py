"""Which part of a growing session file is settled: records no line written later can change.

Some agents write one record over several lines, or amend a record by a later line: Claude
Code writes a reply one content block per line (the import joins them into one message) and
the results of parallel calls in the order the tools finish (the import puts them in call
order); Codex writes a reply's token counts in a ``token_count`` event after it. A sync that
stores such a record before the later lines arrive cannot amend it (stored entries never
change), so the session would differ from a fresh import of the finished file.

:func:`settled_size` gives the length of the settled prefix: everything before the **open
turn** (the trailing records a later line could still change). A sync reading a file the
agent may still be writing stores only that prefix, with a position of that size, so the next
sync reads the held-back lines again (``docs/interop.md``, "sync"). Each format's rule lives
beside its importer (``open_tail`` in :mod:`~sessiontree.interop.claude_code` and
:mod:`~sessiontree.interop.codex`); a format without one is settled whole.
"""

from __future__ import annotations

from collections.abc import Callable

from sessiontree.interop import claude_code, codex

__all__ = ["settled_size"]

_OPEN_TAIL: dict[str, Callable[[bytes], int]] = {
    "claude-code": claude_code.open_tail,
    "codex": codex.open_tail,
}


def settled_size(data: bytes, fmt: str | None) -> int:
    """The length in bytes of the prefix of ``data`` (a file of format ``fmt``, whole lines)
    whose records no later line can change: ``len(data)`` when the format has no open-turn
    rule or its last turn is finished, else the offset where its open turn starts."""
    rule = _OPEN_TAIL.get(fmt or "")
    return len(data) if rule is None else min(rule(data), len(data))
