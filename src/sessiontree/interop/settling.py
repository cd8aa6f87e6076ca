"""Which part of a growing session file is settled: records no line written later can change.

Some agents write one record over several lines, or amend a record by a later write: Claude
Code writes a reply one content block per line (the import joins them into one message) and
the results of parallel calls in the order the tools finish (the import puts them in call
order); Codex writes a reply's token counts in a ``token_count`` event after it; Gemini CLI
writes its newest reply again with its usage and tool calls; Copilot CLI's reply takes its
model from the tool completions after it; Aider's newest run of lines grows. A sync that
stores such a record before the later lines arrive cannot amend it (stored entries never
change), so the session would differ from a fresh import of the finished file.

:func:`settled` gives the settled part: everything before the **open turn** (the trailing
records a later write could still change). A sync reading a file the agent may still be
writing stores only that part, with a position of its size, so the next sync reads the
held-back lines again (``docs/interop.md``, "sync"). Each format's rule lives beside its
importer (``open_tail``, or ``settled`` for Gemini CLI, whose older layout is one document
rewritten whole: its settled part is that document without the open reply). A format
without a rule (pi and OpenClaw, whose lines are written whole and never changed; a
document written whole at the end of a turn) is settled whole.
"""

from __future__ import annotations

from collections.abc import Callable

from sessiontree.interop import aider, claude_code, codex, copilot_cli, gemini_cli

__all__ = ["settled"]

_OPEN_TAIL: dict[str, Callable[[bytes], int]] = {
    "claude-code": claude_code.open_tail,
    "codex": codex.open_tail,
    "copilot-cli": copilot_cli.open_tail,
    "aider": aider.open_tail,
}

_SETTLED: dict[str, Callable[[bytes], bytes]] = {"gemini-cli": gemini_cli.settled}


def settled(data: bytes, fmt: str | None) -> bytes:
    """The part of ``data`` (a file of format ``fmt``, whole lines) whose records no later
    write can change: ``data`` itself when the format has no open-turn rule or its last turn
    is finished, else the prefix before its open turn (for a one-document format, the
    document without its open turn: not a prefix, never longer than ``data``)."""
    whole = _SETTLED.get(fmt or "")
    if whole is not None:
        return whole(data)
    rule = _OPEN_TAIL.get(fmt or "")
    return data if rule is None else data[: min(rule(data), len(data))]
