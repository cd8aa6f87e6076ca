"""Files no importer reads, and lone UTF-16 surrogate escapes (what JavaScript writes when
it cuts a string inside an emoji), read the same by import and by the JSONL backend
(docs/interop.md, docs/storage.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from session_files import VENDORED
from sessiontree import MemoryRepo, Session, import_session
from sessiontree._json import without_lone_surrogates
from sessiontree.backends.jsonl.repo import JSONLRepo
from sessiontree.backends.jsonl.storage import JSONLStorage
from sessiontree.cli import cli
from sessiontree.entries import MessageEntry, dump_entry, parse_entry
from sessiontree.errors import (
    CorruptSessionError,
    InvalidArgumentError,
    SessionTreeError,
    UnknownFormatError,
)
from sessiontree.interop import FORMATS, detect_format
from sessiontree.verify import torn_final_line, verify_session

PI_SMALL = VENDORED / "pi" / "agent-sessions_pi-small.v3.jsonl"

# ----------------------------------------------------------------- unknown formats


async def test_a_file_of_no_known_format_is_unknown_not_damaged(tmp_path: Path) -> None:
    path = tmp_path / "notes.md"
    path.write_text("# my notes\n\nnothing to see\n")
    for call in (import_session(path, MemoryRepo()), detect_format(path)):
        with pytest.raises(UnknownFormatError) as info:
            await call
        assert not isinstance(info.value, CorruptSessionError)  # nothing says it is damaged
        assert isinstance(info.value, SessionTreeError)
        message = str(info.value)
        assert message.startswith(f"{path}: unknown format: ")
        assert "damaged" not in message and "corrupt" not in message.lower()
        for fmt in FORMATS:
            assert fmt in message
        assert info.value.path == path
        assert info.value.formats == FORMATS
    assert {"aider", "cline"} <= set(FORMATS)


def test_the_cli_says_unknown_format_and_lists_the_formats(tmp_path: Path) -> None:
    path = tmp_path / "notes.md"
    path.write_text("# my notes\n\nnothing to see\n")
    store = tmp_path / "store"
    result = CliRunner().invoke(
        cli, ["--store", str(store), "import", str(path)], env={"SESSIONTREE_URL": None}
    )
    assert result.exit_code != 0
    output = result.output + (result.stderr if result.stderr_bytes is not None else "")
    assert "unknown format" in output
    assert "tried " + ", ".join(FORMATS) in output
    assert "Traceback" not in output


# ----------------------------------------------------------------- lone surrogates


def _with_lone_surrogate(path: Path, *, last: bool = False) -> tuple[bytes, str]:
    """PI_SMALL with a lone high surrogate escape cut into the text of line 4 (or of its last
    line, then written without its newline); returns the bytes and that entry's id."""
    lines = PI_SMALL.read_bytes().rstrip(b"\n").split(b"\n")
    at = len(lines) - 1 if last else 3
    while '"text":"' not in lines[at].decode():
        at -= 1
    obj = json.loads(lines[at])
    lines[at] = lines[at].decode().replace('"text":"', '"text":"cut here \\ud83d', 1).encode()
    data = b"\n".join(lines) + (b"" if last else b"\n")
    path.write_bytes(data)
    return data, obj["id"]


async def test_the_jsonl_backend_reads_a_lone_surrogate_as_import_does(tmp_path: Path) -> None:
    path = tmp_path / "surrogate.jsonl"
    data, entry_id = _with_lone_surrogate(path)
    imported, _ = await import_session(path, MemoryRepo())
    expected = await imported.get_entry(entry_id)
    assert isinstance(expected, MessageEntry)

    storage = JSONLStorage(path)  # in place: the line is read, not refused
    entry = await storage.get_entry(entry_id)
    assert isinstance(entry, MessageEntry)
    assert entry.message == expected.message
    assert "cut here \ufffd" in str(getattr(entry.message, "content", None))
    entries = await storage.get_entries()
    assert [e.id for e in entries] == [e.id for e in await imported.get_entries()]
    found = await verify_session(Session(storage))
    assert found.problems == []

    # the entry round-trips: written out and read back, it is the same
    assert parse_entry(dump_entry(entry)) == entry
    await storage.append_entry(
        MessageEntry.model_validate({"message": {"role": "user", "content": "next"}}),
        at_leaf=True,
    )
    await storage.close()
    after = path.read_bytes()
    assert after.startswith(data)  # nothing already in the file changed
    reopened = JSONLStorage(path)
    assert await reopened.get_entry(entry_id) == entry
    assert len(await reopened.get_entries()) == len(entries) + 1
    await reopened.close()

    # listing counts the line too (it does not stop counting there)
    root = tmp_path / "store"
    (root / "s1").mkdir(parents=True)
    (root / "s1" / "session.jsonl").write_bytes(data)
    async with JSONLRepo(root) as repo:
        (info,) = await repo.list()
        assert info.message_count == sum(isinstance(e, MessageEntry) for e in entries)


async def test_a_lone_surrogate_in_an_unterminated_last_line_is_not_a_torn_line(
    tmp_path: Path,
) -> None:
    path = tmp_path / "surrogate-last.jsonl"
    data, entry_id = _with_lone_surrogate(path, last=True)
    assert torn_final_line(path) is None
    storage = JSONLStorage(path)
    entry = await storage.get_entry(entry_id)
    assert entry is not None and "cut here \ufffd" in str(dump_entry(entry))
    await storage.append_entry(
        MessageEntry.model_validate({"message": {"role": "user", "content": "next"}}),
        at_leaf=True,
    )
    await storage.close()
    assert path.read_bytes().startswith(data + b"\n")  # the line kept, only finished


def test_only_lone_surrogate_escapes_are_replaced() -> None:
    cases = {
        rb'"a\ud83d"': rb'"a\ufffd"',  # a lone high surrogate
        rb'"a\ude00b"': rb'"a\ufffdb"',  # a lone low surrogate
        rb'"\ud83d\ude00"': rb'"\ud83d\ude00"',  # a pair: an emoji
        rb'"\ud83d\ud83d\ude00"': rb'"\ufffd\ud83d\ude00"',  # a lone one before a pair
        rb'"\\ud83d"': rb'"\\ud83d"',  # an escaped backslash, then the text ud83d
        rb'"\\\ud83d"': rb'"\\\ufffd"',  # an escaped backslash, then a lone surrogate
        rb'"\u0041\n"': rb'"\u0041\n"',
    }
    for raw, fixed in cases.items():
        assert without_lone_surrogates(raw) == fixed
        assert len(without_lone_surrogates(raw)) == len(raw)
        assert not any(0xD800 <= ord(c) <= 0xDFFF for c in json.loads(fixed))
    plain = rb'"plain \u00e9"'
    assert without_lone_surrogates(plain) is plain


async def test_a_lone_surrogate_in_the_header_is_read_by_import_and_in_place(
    tmp_path: Path,
) -> None:
    lines = PI_SMALL.read_bytes().rstrip(b"\n").split(b"\n")
    header = json.loads(lines[0])
    header["cwd"] = "/home/me/\ud83d"  # a lone surrogate: json.dumps writes it as an escape
    lines[0] = json.dumps(header).encode()
    assert b"\\ud83d" in lines[0]
    path = tmp_path / "header.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")

    imported, _ = await import_session(path, MemoryRepo())
    storage = JSONLStorage(path)
    assert storage.metadata.cwd == "/home/me/\ufffd"
    assert (await imported.get_metadata()).cwd == storage.metadata.cwd
    await storage.close()


async def test_an_unknown_format_name_is_a_bad_argument_not_a_damaged_file(
    tmp_path: Path,
) -> None:
    path = tmp_path / "session.jsonl"
    path.write_bytes(PI_SMALL.read_bytes())
    repo = MemoryRepo()
    with pytest.raises(InvalidArgumentError, match="unknown import format 'nope'") as info:
        await import_session(path, repo, format="nope")
    assert not isinstance(info.value, CorruptSessionError)
    assert await repo.list() == []
