"""CLI meta-tests: every command has help; errors are one line; prefixes resolve like git."""

from __future__ import annotations

import asyncio
import re
import uuid
from collections.abc import Mapping
from pathlib import Path

import click
import orjson
import pytest
from click.testing import CliRunner

from session_files import VENDORED
from sessiontree import open_repo
from sessiontree.cli import cli
from sessiontree.cli._common import short_id_length
from sessiontree.cli.maintenance import find_cycles, torn_final_line
from sessiontree.entries import parse_entry

COMMANDS = sorted(cli.commands)


def invoke(*args: str, store: str | None = None) -> tuple[int, str, str]:
    argv = (["--store", store] if store else []) + list(args)
    result = CliRunner().invoke(cli, argv, env={"COLUMNS": "200", "SESSIONTREE_URL": None})
    return result.exit_code, result.stdout, result.stderr


def test_the_issue_commands_all_exist() -> None:
    wanted = {"import", "list", "show", "context", "checkout", "fork", "label", "name"}
    wanted |= {"export", "rm", "search", "stats", "verify", "compact"}
    assert wanted <= set(COMMANDS)


@pytest.mark.parametrize("name", COMMANDS)
def test_every_command_has_help(name: str) -> None:
    code, out, err = invoke(name, "--help")
    assert code == 0, err
    command = cli.commands[name]
    assert command.help and len(command.help.strip()) > 20
    assert f"Usage: cli {name}" in out or f"Usage: sessiontree {name}" in out
    body = out.split("\n\n", 2)[1]
    assert body.strip(), f"{name} --help has no description"
    for param in command.params:
        if isinstance(param, click.Option):
            assert param.help, f"{name} {param.opts} has no help text"


def test_group_help_lists_every_command() -> None:
    code, out, _ = invoke("--help")
    assert code == 0
    for name in COMMANDS:
        assert f"  {name} " in out


def test_no_arguments_prints_help() -> None:
    code, out, _ = invoke()
    assert code == 0 and "Commands:" in out


def test_usage_error_is_one_line_exit_2(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 's.db'}"
    for args in (
        ["show"],
        ["nosuchcommand"],
        ["list", "--limit", "zero"],
        ["compact", "x", "--mode", "bad"],
    ):
        code, _, err = invoke(*args, store=store)
        assert code == 2, (args, err)
        assert err.startswith("error: ") and err.count("\n") == 1, err
        assert "Usage:" not in err and "Traceback" not in err


def test_unknown_store_scheme_is_one_line() -> None:
    code, _, err = invoke("list", store="bogus://nowhere")
    assert code == 1
    assert err == (
        "error: unknown store URL scheme 'bogus' in 'bogus://nowhere': use memory://, "
        "jsonl:///dir, sqlite:///file.db or postgresql://user@host/db\n"
    )


def test_debug_shows_the_exception(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 's.db'}"
    result = CliRunner().invoke(cli, ["--store", store, "--debug", "show", "nothing"])
    assert result.exit_code != 0
    from sessiontree.errors import SessionNotFoundError, StorageError

    assert isinstance(result.exception, StorageError)  # the store does not exist
    _make_sessions(store, ["one"], ["e1"])
    result = CliRunner().invoke(cli, ["--store", store, "--debug", "show", "nothing"])
    assert isinstance(result.exception, SessionNotFoundError)


def _make_sessions(store: str, ids: list[str], entry_ids: list[str]) -> None:
    async def build() -> None:
        async with open_repo(store) as repo:
            for sid in ids:
                s = await repo.create(id=sid)
                parent = None
                for eid in entry_ids:
                    entry = parse_entry(
                        {
                            "type": "message",
                            "id": eid,
                            "parentId": parent,
                            "timestamp": "2026-01-01T00:00:00.000Z",
                            "message": {"role": "user", "content": f"text {eid}", "timestamp": 1},
                        }
                    )
                    await s.append_entry(entry)
                    parent = eid
                await s.close()

    asyncio.run(build())


def test_session_and_entry_prefixes_resolve_or_fail_listing_candidates(tmp_path: Path) -> None:
    store = f"jsonl://{tmp_path / 'store'}"
    _make_sessions(store, ["abc-one", "abc-two", "xyz"], ["aa11", "aa22", "bb33"])
    code, out, err = invoke("show", "abc", store=store)
    assert code == 1
    assert err == (
        "error: 2 sessions have the id prefix 'abc'; name one by its id: abc-one, abc-two\n"
    )
    code, out, err = invoke("show", "q", store=store)
    assert code == 1 and err.count("\n") == 1 and "'q'" in err
    code, out, _ = invoke("show", "abc-t", store=store)
    assert code == 0 and "session abc-two" in out
    # entries: unique prefix moves the leaf; ambiguous and unknown prefixes fail, naming ids
    code, out, _ = invoke("checkout", "xy", "aa1", store=store)
    assert code == 0 and "→ aa11" in out
    code, _, err = invoke("checkout", "xyz", "aa", store=store)
    assert code == 1
    assert err == (
        "error: entry prefix 'aa' is ambiguous in session 'xyz': 2 entries match: aa11, aa22\n"
    )
    code, _, err = invoke("label", "xyz", "zz", "x", store=store)
    assert code == 1 and "'zz'" in err and "'xyz'" in err and err.count("\n") == 1
    code, _, _ = invoke("label", "xyz", "aa11", "start", store=store)
    assert code == 0


def test_short_id_length_is_unique_prefix() -> None:
    ids = ["01a229dd-e078-737e-8f98-279c11", "01a229dd-e078-737e-8f98-279d22", "ffff0000"]
    n = short_id_length(ids)
    assert len({i[:n] for i in ids}) == len(ids)
    assert n == len("01a229dd-e078-737e-8f98-279c")
    assert short_id_length(["abcdef12", "12345678"]) == 8


def test_find_cycles_and_torn_line_helpers(tmp_path: Path) -> None:
    def entry(eid: str, parent: str | None) -> object:
        return parse_entry(
            {
                "type": "custom",
                "id": eid,
                "parentId": parent,
                "customType": "t",
                "timestamp": "2026-01-01T00:00:00.000Z",
            }
        )

    entries = [
        entry("a", None),
        entry("b", "c"),
        entry("c", "d"),
        entry("d", "b"),
        entry("e", "zz"),
    ]
    cycles = find_cycles(entries)  # type: ignore[arg-type]
    assert len(cycles) == 1 and sorted(cycles[0]) == ["b", "c", "d"]
    f = tmp_path / "x.jsonl"
    f.write_bytes(b'{"a":1}\n{"b":2}\n')
    assert torn_final_line(f) is None
    f.write_bytes(b'{"a":1}\n{"b":2}\n{"c":')
    assert torn_final_line(f) == 3


# ----------------------------------------------------------------- output on pipes and narrow terminals

PI_SMALL = VENDORED / "pi" / "agent-sessions_pi-small.v3.jsonl"
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _run(args: list[str], env: Mapping[str, str | None]) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, args, env={"SESSIONTREE_URL": None, **env})
    return result.exit_code, ANSI.sub("", result.stdout), result.stderr


def _long_sessions(store: str) -> list[str]:
    """Three sessions with long UUID ids and a long first message; returns the ids."""
    ids = [str(uuid.UUID(int=n + (0x019E << 112))) for n in range(3)]

    async def build() -> None:
        async with open_repo(store) as repo:
            for sid in ids:
                s = await repo.create(id=sid)
                await s.append_message({"role": "user", "content": "word " * 40, "timestamp": 1})
                await s.close()

    asyncio.run(build())
    return ids


def test_piped_list_and_import_are_neither_squeezed_nor_wrapped(tmp_path: Path) -> None:
    # `sessiontree list | cat` must not come out as `┃┃ m… ┃┃┃` without COLUMNS=200
    store = f"sqlite:///{tmp_path / 'store.db'}"
    ids = _long_sessions(store)
    code, out, _ = _run(["--store", store, "list"], {"COLUMNS": None})
    assert code == 0
    header = out.splitlines()[0].split()
    for column in ("id", "name", "modified", "entries", "messages"):
        assert column in header
    for sid in ids:
        (line,) = [x for x in out.splitlines() if sid in x]
        assert line.split()[-14:-12] == ["1", "1"] and "word word" in line
    # import lines keep the whole path and session id on one line, even at COLUMNS=40
    deep = tmp_path / ("d" * 60) / ("e" * 60)
    deep.mkdir(parents=True)
    copy = deep / PI_SMALL.name
    copy.write_bytes(PI_SMALL.read_bytes())
    code, out, _ = _run(["--store", store, "import", str(copy)], {"COLUMNS": "40"})
    assert code == 0
    assert str(copy) in out and "019e19b4-eb48-746a-aa6b-8dfcfa37954b" in out


def test_list_on_an_80_column_terminal_keeps_id_entries_and_messages(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'store.db'}"
    ids = _long_sessions(store)
    terminal = {"COLUMNS": "80", "TTY_COMPATIBLE": "1", "NO_COLOR": "1"}
    code, out, _ = _run(["--store", store, "list"], terminal)
    assert code == 0
    lines = out.splitlines()
    assert all(len(x) <= 80 for x in lines)
    header = lines[0].split()
    assert header[0] == "id" and "entries" in header and "messages" in header
    assert "modified" in header and "first" in header
    for sid in ids:
        (line,) = [x for x in lines[1:] if sid.endswith(x.split()[0])]
        short, _day, _time, entries, messages, *_ = line.split()
        assert len(short) >= 8 and (entries, messages) == ("1", "1")
        assert line.rstrip().endswith("…") and "word word" in line
        # the short id names the session
        code, shown, _ = _run(["--store", store, "show", short], {"COLUMNS": "200"})
        assert code == 0 and sid in shown


def test_an_empty_store_url_is_a_one_line_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    code, _, err = invoke("--store", "", "list")
    assert code == 2
    assert err.startswith("error: ") and "empty" in err and err.count("\n") == 1
    assert list(tmp_path.iterdir()) == []  # the current directory was not used as a store


def test_import_into_a_jsonl_store_that_is_a_file_fails(tmp_path: Path) -> None:
    # printed `0 imported, 1 already present, 0 failed` with status 0
    regular = tmp_path / "not-a-dir"
    regular.write_text("hello\n")
    code, out, err = invoke("import", str(PI_SMALL), store=f"jsonl://{regular}")
    assert code == 1
    assert "0 already present, 1 failed" in err
    assert "✗" in out and "already in the store" not in out
    assert regular.read_text() == "hello\n"


def test_reimporting_a_grown_file_says_how_it_differs(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'store.db'}"
    path = tmp_path / "grows.jsonl"
    path.write_bytes(PI_SMALL.read_bytes())
    assert invoke("import", str(path), store=store)[0] == 0
    stored = asyncio.run(_entry_count(store, "019e19b4-eb48-746a-aa6b-8dfcfa37954b"))
    last = orjson.loads(path.read_bytes().splitlines()[-1])
    extra = {**last, "id": "zz000001", "parentId": last["id"]}
    with path.open("ab") as fh:
        fh.write(orjson.dumps(extra) + b"\n")

    code, out, err = invoke("import", str(path), store=store)
    assert code == 0 and "1 already present" in err
    assert f"{stored:,} entries stored, {stored + 1:,} in the file" in out
    assert "--as-new" in out

    code, out, err = invoke("import", "--as-new", str(path), store=store)
    assert code == 0 and "1 imported" in err
    code, out, _ = invoke("list", "--json", store=store)
    assert sorted(s["entryCount"] for s in orjson.loads(out)) == [stored, stored + 1]


async def _entry_count(store: str, sid: str) -> int:
    async with open_repo(store) as repo:
        s = await repo.open(sid)
        n = len(await s.get_entries())
        await s.close()
        return n


def test_verify_of_an_unreadable_session_names_it(tmp_path: Path) -> None:
    # printed `FAILED : 1 problems` without the session id
    root = tmp_path / "store"
    store = f"jsonl://{root}"
    _make_sessions(store, ["broken-one"], ["a1", "a2"])
    (log,) = (root / "broken-one").glob("*.jsonl")
    log.write_text("this is not json\n")
    code, out, _ = invoke("verify", "broken-one", store=store)
    assert code == 1
    assert out.splitlines()[-1].startswith("FAILED broken-one: 1 problem, 0 warnings")


def test_show_and_verify_read_the_session_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # show and verify took 74 s and 114 s on a 100,000-entry SQLite session: every entry was
    # read and parsed two (show) or four (verify) times. The real methods still run; the
    # calls are only counted.
    from sessiontree.backends.sql.storage import SQLStorage

    store = f"sqlite:///{tmp_path / 'store.db'}"
    _make_sessions(store, ["linear"], [f"e{i:04d}" for i in range(300)])
    calls: dict[str, int] = {}

    def counted(name: str) -> None:
        real = getattr(SQLStorage, name)

        async def spy(self: SQLStorage, *args: object, **kwargs: object) -> object:
            calls[name] = calls.get(name, 0) + 1
            return await real(self, *args, **kwargs)

        monkeypatch.setattr(SQLStorage, name, spy)

    for name in ("get_entries", "get_branch", "get_entry", "get_label"):
        counted(name)
    for command in ("show", "verify"):
        calls.clear()
        code, out, _ = invoke(command, "linear", store=store)
        assert code == 0, out
        assert "300" in out
        assert calls == {"get_entries": 1}, (command, calls)
