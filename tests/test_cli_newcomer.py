"""A newcomer's first hour with the CLI: store URLs, a fresh install, an 80-column terminal,
progress and help (issue 24, items 1, 6, 8 and 9).

The CLI runs as a real process where the working directory, ``HOME`` or the terminal matter
(``TTY_COMPATIBLE=1`` makes rich treat a pipe as a terminal of ``COLUMNS`` characters), and
in-process through click's runner elsewhere.
"""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner
from rich.progress import Progress

from session_files import VENDORED
from sessiontree import open_repo
from sessiontree.backends.sql.sqlite_open import sqlite_path_from_url
from sessiontree.cli import cli
from sessiontree.cli._common import short_ids
from sessiontree.cli.importing import _bar_advancer
from sessiontree.entries import Entry
from sessiontree.errors import StorageError
from sessiontree.interop import import_session
from sessiontree.repos import default_store_path, default_url
from sessiontree.testing.builders import assistant, user

SRC = Path(__file__).resolve().parents[1] / "src"
PI_SMALL = VENDORED / "pi" / "agent-sessions_pi-small.v3.jsonl"
PI_SMALL_ID = "019e19b4-eb48-746a-aa6b-8dfcfa37954b"
PI_LARGE = VENDORED / "pi" / "pi-mono_before-compaction.v1.jsonl"
ANSI = re.compile(r"\x1b\[[0-9;]*m")
TERMINAL_80 = {"COLUMNS": "80", "TTY_COMPATIBLE": "1", "NO_COLOR": "1"}


def fresh_env(home: Path, **extra: str) -> dict[str, str]:
    """The environment of a user who never ran sessiontree: an empty ``HOME`` and XDG dirs."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("XDG_", "SESSIONTREE_"))}
    env.update(
        HOME=str(home),
        XDG_DATA_HOME=str(home / ".local" / "share"),
        XDG_CONFIG_HOME=str(home / ".config"),
        XDG_CACHE_HOME=str(home / ".cache"),
        XDG_STATE_HOME=str(home / ".local" / "state"),
        PYTHONPATH=os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")]),
    )
    env.update(extra)
    return env


def sessiontree(
    *args: str, env: dict[str, str], cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """Run ``python -m sessiontree ARGS`` as a process; stdout without colour codes."""
    done = subprocess.run(
        [sys.executable, "-m", "sessiontree", *args],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )
    return subprocess.CompletedProcess(
        done.args, done.returncode, ANSI.sub("", done.stdout), done.stderr
    )


def build(url: str, sessions: dict[str, list[dict[str, object]]]) -> None:
    """Create one session per key with these messages, appended one by one (UUID v7 ids)."""

    async def run() -> None:
        async with open_repo(url) as repo:
            for sid, messages in sessions.items():
                s = await repo.create(id=sid)
                for m in messages:
                    await s.append_message(m)
                await s.close()

    asyncio.run(run())


# ---------------------------------------------------------------- 1. sqlite:/// URLs


def test_sqlite_url_with_three_slashes_is_relative_to_the_working_directory(
    tmp_path: Path,
) -> None:
    # the README's agent example opened sqlite:///agent.db, which wrote /agent.db
    name = f"agent-{tmp_path.name}.db"
    (tmp_path / "home").mkdir()
    env = fresh_env(tmp_path / "home")
    done = sessiontree(
        "--store", f"sqlite:///{name}", "import", str(PI_SMALL), env=env, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    assert (tmp_path / name).is_file()
    assert not Path("/", name).exists()
    listed = sessiontree("list", "--json", "--store", f"sqlite:///{name}", env=env, cwd=tmp_path)
    assert [r["id"] for r in orjson.loads(listed.stdout)] == [PI_SMALL_ID]
    # four slashes: an absolute path, from any working directory
    absolute = f"sqlite:///{tmp_path / name}"
    assert absolute.startswith("sqlite:////")
    listed = sessiontree("--store", absolute, "list", "--json", env=env, cwd=tmp_path / "home")
    assert listed.returncode == 0, listed.stderr
    assert [r["id"] for r in orjson.loads(listed.stdout)] == [PI_SMALL_ID]


def test_sqlite_url_paths_follow_sqlalchemy() -> None:
    assert sqlite_path_from_url("sqlite:///agent.db")[0] == "agent.db"
    assert sqlite_path_from_url("sqlite:///data/agent.db")[0] == "data/agent.db"
    assert sqlite_path_from_url("sqlite:////abs/agent.db")[0] == "/abs/agent.db"
    assert sqlite_path_from_url("sqlite:///:memory:")[0] == ":memory:"
    assert sqlite_path_from_url("sqlite://")[0] == ":memory:"
    assert sqlite_path_from_url("sqlite:///a.db?timeout=3") == ("a.db", {"timeout": "3"})
    with pytest.raises(StorageError, match=r"sqlite:////absolute/path\.db"):
        sqlite_path_from_url("sqlite://somehost/agent.db")
    with pytest.raises(StorageError, match="no database file"):
        sqlite_path_from_url("sqlite:///")


def test_the_default_store_url_is_the_absolute_path_as_a_user_types_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SESSIONTREE_URL", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    url = default_url()
    assert url == f"sqlite:///{tmp_path / 'data' / 'sessiontree' / 'sessions.db'}"
    assert url.startswith("sqlite:////")
    assert sqlite_path_from_url(url)[0] == str(default_store_path())


def test_a_missing_relative_store_names_the_file_it_looked_for(tmp_path: Path) -> None:
    done = sessiontree(
        "--store", "sqlite:///typo.db", "list", env=fresh_env(tmp_path / "h"), cwd=tmp_path
    )
    assert done.returncode == 1
    assert (
        done.stderr
        == f"error: {tmp_path / 'typo.db'}: no store here (the file does not exist); check the path\n"
    )
    assert not (tmp_path / "typo.db").exists()


# ---------------------------------------------------------------- 6. a fresh install


def test_list_and_search_on_a_fresh_install_are_empty_answers(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    env = fresh_env(home)
    for args in (["list"], ["search", "anything"], ["list", "--json"], ["search", "x", "--json"]):
        done = sessiontree(*args, env=env, cwd=tmp_path)
        assert done.returncode == 0, (args, done.stderr)
        assert "no store here" not in done.stderr
        if "--json" in args:
            assert orjson.loads(done.stdout) == []
    assert "no sessions in this store" in sessiontree("list", env=env).stderr
    missing = sessiontree("show", "nothing", env=env)
    assert missing.returncode == 1 and "no session has this id" in missing.stderr
    assert list(home.iterdir()) == []  # reading created nothing
    # an explicitly named store that does not exist is still an error
    for given in (["--store", f"sqlite:///{tmp_path / 'nope.db'}"], []):
        extra = {} if given else {"SESSIONTREE_URL": f"jsonl://{tmp_path / 'nope'}"}
        done = sessiontree(*given, "list", env={**env, **extra})
        assert done.returncode == 1 and "no store here" in done.stderr
    # the first import creates the default store, and list then shows it
    assert sessiontree("import", str(PI_SMALL), env=env).returncode == 0
    assert default_store_path_in(home).is_file()
    assert PI_SMALL_ID in sessiontree("list", "--json", env=env).stdout


def default_store_path_in(home: Path) -> Path:
    return home / ".local" / "share" / "sessiontree" / "sessions.db"


# ---------------------------------------------------------------- 8. an 80-column terminal


def v7_store(tmp_path: Path) -> tuple[str, list[str]]:
    """Two sessions with UUID v7 ids, each of many quick appends (ids share long prefixes)."""
    url = f"sqlite:///{tmp_path / 's.db'}"
    from sessiontree.ids import new_id

    sids = [new_id(), new_id()]
    build(
        url,
        {
            sid: [
                m
                for i in range(12)
                for m in (user(f"question {i} about zebras in {sid}"), assistant(f"answer {i}"))
            ]
            for sid in sids
        },
    )
    return url, sids


def test_search_at_80_columns_keeps_the_snippet(tmp_path: Path) -> None:
    url, sids = v7_store(tmp_path)
    done = sessiontree("--store", url, "search", "zebras", env=fresh_env(tmp_path, **TERMINAL_80))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert all(len(line) <= 80 for line in lines)
    assert done.stdout.count("question") == 20  # the default --limit: every snippet shows
    for sid in sids:
        assert sid in done.stdout and f"about zebras in {sid}" in done.stdout
    # wide terminals keep the table: ids and snippet on one line
    wide = sessiontree(
        "--store",
        url,
        "search",
        "zebras",
        env=fresh_env(tmp_path, **{**TERMINAL_80, "COLUMNS": "200"}),
    )
    assert any(sids[0] in x and "zebras" in x for x in wide.stdout.splitlines())


def test_list_at_80_columns_keeps_name_modified_and_the_first_message(tmp_path: Path) -> None:
    url, sids = v7_store(tmp_path)
    cli_env = fresh_env(tmp_path, **TERMINAL_80)
    assert sessiontree("--store", url, "name", sids[0], "zebra survey", env=cli_env).returncode == 0
    done = sessiontree("--store", url, "list", env=cli_env)
    lines = done.stdout.splitlines()
    assert all(len(line) <= 80 for line in lines)
    assert lines[0].split()[:3] == ["id", "name", "modified"]
    (named,) = [x for x in lines if "zebra sur" in x]  # a long name is cut, not dropped
    assert re.search(r"\d{4}-\d\d-\d\d \d\d:\d\d", named)
    first = named[named.index("question") :].rstrip()
    assert len(first) >= 20 and first.startswith("question 0 about ze")
    short = named.split()[0]
    assert len(short) <= 12 and (sids[0].endswith(short) or sids[0].startswith(short))


def test_show_prints_short_ids_that_every_command_accepts(tmp_path: Path) -> None:
    url, sids = v7_store(tmp_path)
    env = fresh_env(tmp_path, **TERMINAL_80)
    done = sessiontree("--store", url, "show", sids[0], "--full", env=env)
    assert done.returncode == 0, done.stderr
    entries = asyncio.run(_entries(url, sids[0]))
    shown = re.findall(r"[├└]── (\S+) ", done.stdout)
    assert len(shown) == len(entries) == 24
    assert all(len(token) <= 12 for token in shown)  # not 28-character common prefixes
    assert short_ids(e.id for e in entries)(entries[4].id) == shown[4]
    # the short id names the entry everywhere an entry is taken
    target = entries[4]
    context = sessiontree("--store", url, "context", sids[0], "--leaf", shown[4], "--json", env=env)
    assert context.returncode == 0, context.stderr
    assert orjson.loads(context.stdout)["leafId"] == target.id
    moved = sessiontree("--store", url, "checkout", sids[0], shown[4], env=env)
    assert moved.returncode == 0, moved.stderr
    assert sessiontree("--store", url, "label", sids[0], shown[2], "here", env=env).returncode == 0
    stats = orjson.loads(sessiontree("--store", url, "stats", sids[0], "--json", env=env).stdout)
    assert stats["leafId"] == target.id
    # and the short session id printed by list names the session
    listed = sessiontree("--store", url, "list", env=env).stdout.splitlines()[1:]
    for line in listed:
        short = line.split()[0]
        full = sessiontree("--store", url, "show", short, "--json", env=env)
        assert orjson.loads(full.stdout)["sessionId"] in sids


async def _entries(url: str, sid: str) -> list[Entry]:
    async with open_repo(url) as repo:
        s = await repo.open(sid)
        try:
            return list(await s.get_entries())
        finally:
            await s.close()


def test_short_ids_of_a_page_of_list_are_unique_in_the_whole_store(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 's.db'}"
    # created oldest first: the page of two shows the last two, the first stays hidden
    build(url, {"s1-commo-other": [user("hidden")], "s2-common-b0": [user("b")]})
    build(url, {"s1-common-a0": [user("a")]})
    env = fresh_env(tmp_path, **{**TERMINAL_80, "COLUMNS": "40"})  # narrow: short ids
    page = sessiontree("--store", url, "list", "--limit", "2", env=env).stdout.splitlines()[1:]
    assert len(page) == 2
    for line in page:
        short = line.split()[0]
        assert len(short) < len("s1-common-a0")
        shown = sessiontree("--store", url, "show", short, "--json", env=env)
        assert shown.returncode == 0, shown.stderr
        sid = orjson.loads(shown.stdout)["sessionId"]
        assert sid in line or sid.startswith(short) or sid.endswith(short)


def test_short_ids_take_the_unique_end_of_uuid7_and_never_start_with_a_dash() -> None:
    ids = [f"019e19b4-eb48-746a-aa6b-8dfcfa3795{n:02x}" for n in range(40)]
    form = short_ids(ids)
    assert form.suffix and form.length == 8
    assert len({form(i) for i in ids}) == len(ids)
    agents = [
        "a6214a01-0396-4893-b5ef-eac084cb9ff6-agent-a0294d5",
        "a6214a01-0396-4893-b5ef-eac084cb9ff6-agent-a7c3dfb",
    ]
    assert not any(short_ids(agents)(i).startswith("-") for i in agents)
    assert short_ids(["abc12345", "def67890"])(None) == "-"


def test_stats_labels_are_words(tmp_path: Path) -> None:
    url, sids = v7_store(tmp_path)
    done = sessiontree("--store", url, "stats", sids[0], env=fresh_env(tmp_path, **TERMINAL_80))
    assert done.returncode == 0, done.stderr
    labels = [line[:20].strip() for line in done.stdout.splitlines()]
    assert "messages by role" in labels and "cost (USD)" in labels
    assert not [x for x in labels if re.search(r"[a-z][A-Z]", x)]  # no camelCase JSON keys


@pytest.mark.parametrize("command", ["list", "search", "show", "stats", "context", "import"])
def test_store_is_accepted_after_the_command_too(tmp_path: Path, command: str) -> None:
    store = f"sqlite:///{tmp_path / 's.db'}"
    build(store, {"sess-1": [user("hello there")]})
    args = {
        "list": ["--json"],
        "search": ["hello", "--json"],
        "show": ["sess-1", "--json"],
        "stats": ["sess-1", "--json"],
        "context": ["sess-1", "--json"],
        "import": [str(PI_SMALL)],
    }[command]
    env = {"SESSIONTREE_URL": None, "COLUMNS": "200"}
    result = CliRunner().invoke(cli, [command, *args, "--store", store], env=env)
    assert result.exit_code == 0, result.output
    if command != "import":
        assert "sess-1" in result.stdout
    # after the command it wins over the global one and over $SESSIONTREE_URL
    other = f"sqlite:///{tmp_path / 'other.db'}"
    result = CliRunner().invoke(
        cli,
        ["--store", other, command, *args, "--store", store],
        env={**env, "SESSIONTREE_URL": other},
    )
    assert result.exit_code == 0, result.output
    assert not (tmp_path / "other.db").exists()
    empty = CliRunner().invoke(cli, [command, *args, "--store", " "], env=env)
    assert empty.exit_code == 2 and "the store URL is empty" in empty.stderr


# ---------------------------------------------------------------- 9. progress and help


async def test_import_progress_advances_by_bytes_before_the_file_ends(tmp_path: Path) -> None:
    size = PI_LARGE.stat().st_size
    assert size > 1024 * 1024
    async with open_repo(f"sqlite:///{tmp_path / 's.db'}") as repo:
        calls: list[int] = []
        session, _ = await import_session(PI_LARGE, repo, progress=calls.append)
        await session.close()
    assert calls[-1] == size
    partial = [c for c in calls if c < size]
    assert len(partial) >= 4  # the bar moves while the file is read, not only at its end
    assert partial == sorted(partial) and partial[0] > 0


@pytest.mark.parametrize(
    "fmt_file",
    ["swe-agent-traj/function_calling_simple.traj", "aider/mozgoslav.aider.chat.history.md"],
)
async def test_import_progress_ends_at_the_size_for_every_format(
    tmp_path: Path, fmt_file: str
) -> None:
    path = VENDORED / fmt_file
    calls: list[int] = []
    async with open_repo(f"sqlite:///{tmp_path / 's.db'}") as repo:
        session, _ = await import_session(path, repo, progress=calls.append)
        await session.close()
    assert calls and calls[-1] == path.stat().st_size


def test_the_import_bar_moves_with_the_bytes_read() -> None:
    with Progress(transient=True, disable=True) as bar:
        task = bar.add_task("import", total=3000, name="")
        advance = _bar_advancer(bar, task, 1000, 2000, "big.jsonl")
        advance(500)
        assert bar.tasks[0].completed == 1500
        advance(2000)
        assert bar.tasks[0].completed == 3000 and bar.tasks[0].fields["name"] == "storing big.jsonl"


def test_context_in_a_terminal_prints_every_message_whole(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 's.db'}"
    long_text = "word " * 60 + "END"
    messages = [user(f"q{i} {long_text}") if i % 2 == 0 else assistant(f"a{i}") for i in range(400)]
    messages.append(user("evil \x1b[31mred\x1b[0m \x07bell"))
    build(url, {"big": messages})
    env = fresh_env(tmp_path, **TERMINAL_80)
    done = subprocess.run(
        [sys.executable, "-m", "sessiontree", "--store", url, "context", "big"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    plain = ANSI.sub("", done.stdout)
    lines = plain.splitlines()
    for i in range(400):
        header = lines.index(f"[{i}] {'user' if i % 2 == 0 else 'assistant'}")
        body = lines[header + 1]
        assert body == (f"q{i} {long_text}".strip() if i % 2 == 0 else f"a{i}")
    assert lines[-1] == "evil [31mred[0m bell"  # ESC and BEL of stored text dropped
    assert "\x1b[31m" not in done.stdout and "\x07" not in done.stdout
    as_json = sessiontree("--store", url, "context", "big", "--json", env=env)
    assert len(orjson.loads(as_json.stdout)["messages"]) == 401


STRAY = re.compile(r"``|docs/|:func:|:class:|:data:|:mod:")


def test_help_texts_have_no_doc_references_or_rst_markup() -> None:
    commands = ["", *cli.list_commands(None)]  # type: ignore[arg-type]
    for name in commands:
        result = CliRunner().invoke(
            cli, [name, "--help"] if name else ["--help"], env={"COLUMNS": "100"}
        )
        assert result.exit_code == 0, (name, result.output)
        assert not STRAY.search(result.output), (name, STRAY.findall(result.output))
    top = " ".join(CliRunner().invoke(cli, ["--help"]).output.split())
    for fmt in ("pi", "Claude Code", "Codex", "SWE-agent", "Aider", "Cline"):
        assert fmt in top
