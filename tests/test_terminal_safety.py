"""Text from a session file never reaches the terminal as control sequences: ``list``,
``show``, ``search`` and ``context`` drop escape sequences and bidirectional overrides an
imported file may hold (a title change, a cleared screen, text shown reversed)."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from sessiontree.cli import cli
from sessiontree.describe import one_line, printable

EVIL = "\x1b[31mred\x1b[0m \x1b]0;pwned\x07 \x1b[2J \u202etxt.exe \x9b1m"


def _pi_file(path: Path) -> Path:
    lines = [
        {
            "type": "session",
            "version": 3,
            "id": "evil-session",
            "timestamp": "2026-01-01T00:00:00.000Z",
            "cwd": "/p",
        },
        {
            "type": "message",
            "id": "u1",
            "parentId": None,
            "timestamp": "2026-01-01T00:00:01.000Z",
            "message": {"role": "user", "content": f"find {EVIL}", "timestamp": 1767225601000},
        },
        {
            "type": "message",
            "id": "a1",
            "parentId": "u1",
            "timestamp": "2026-01-01T00:00:02.000Z",
            "message": {
                "role": "assistant",
                "content": [
                    {"type": "toolCall", "id": "c1", "name": f"bash{EVIL}", "arguments": {}}
                ],
                "timestamp": 1767225602000,
            },
        },
        {
            "type": "session_info",
            "id": "n1",
            "parentId": "a1",
            "timestamp": "2026-01-01T00:00:03.000Z",
            "name": f"name {EVIL}",
        },
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def test_the_cli_prints_no_control_sequences_from_a_file(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 's.db'}"
    runner = CliRunner()
    imported = runner.invoke(
        cli, ["--store", store, "import", str(_pi_file(tmp_path / "evil.jsonl"))]
    )
    assert imported.exit_code == 0, imported.output
    for args in (
        ["list"],
        ["show", "evil-session"],
        ["search", "find"],
        ["context", "evil-session"],
    ):
        result = runner.invoke(cli, ["--store", store, *args], env={"COLUMNS": "120"})
        assert result.exit_code == 0, (args, result.output)
        out = result.output
        assert (
            "\x1b" not in out and "\x07" not in out and "\u202e" not in out and "\x9b" not in out
        ), (args, out)
        assert "red" in out or args[0] == "list"


def test_printable_keeps_text_tabs_and_newlines() -> None:
    assert printable("a\tb\nc\x1b[2Jd\u202ee\u2067f") == "a\tb\nc[2Jdef"
    assert one_line("x\x1b]0;t\x07 y") == "x]0;t y"
