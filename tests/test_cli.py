"""The ``sessiontree`` CLI on real session files, against real stores (SQLite and JSONL).

Every test passes an explicit ``--store`` in a tmp dir, so the user's data dir is never used.
Facts are checked against the source files themselves (ids, counts) and against the store
through the Python API after the command ran.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner, Result

from session_files import VENDORED, file_times
from sessiontree import open_repo
from sessiontree.cli import cli

SESSIONS = VENDORED
PI_SMALL = SESSIONS / "pi" / "agent-sessions_pi-small.v3.jsonl"
PI_SMALL_ID = "019e19b4-eb48-746a-aa6b-8dfcfa37954b"
CLAUDE_DANGLING = SESSIONS / "claude-code" / "agent-a7c3dfb.jsonl"
CLAUDE_LONG = SESSIONS / "claude-code" / "agent-a0294d5.jsonl"


def file_lines(path: Path) -> list[dict[str, Any]]:
    """The JSON objects of a JSONL file, header included."""
    return [orjson.loads(line) for line in path.read_bytes().splitlines() if line.strip()]


class Cli:
    """Runs the CLI in-process against one store, with a wide terminal."""

    def __init__(self, store: str) -> None:
        self.store = store
        self.runner = CliRunner()

    def __call__(self, *args: str, code: int = 0, input: str | None = None) -> Result:
        result = self.runner.invoke(
            cli,
            ["--store", self.store, *args],
            input=input,
            env={"COLUMNS": "200", "SESSIONTREE_URL": None},
        )
        if result.exit_code != code:
            raise AssertionError(
                f"sessiontree {' '.join(args)} exited {result.exit_code}, expected {code}\n"
                f"stdout: {result.stdout}\nstderr: {result.stderr}\n{result.exception!r}"
            )
        return result

    def json(self, *args: str) -> Any:
        return orjson.loads(self(*args, "--json").stdout)

    def ids(self) -> set[str]:
        """The session ids in the store; none when the store does not exist yet (``list``
        refuses a store that does not exist)."""
        result = self.runner.invoke(
            cli, ["--store", self.store, "list", "--json"], env={"SESSIONTREE_URL": None}
        )
        if result.exit_code and "no store here" in result.stderr:
            return set()
        assert result.exit_code == 0, result.stderr
        return {r["id"] for r in orjson.loads(result.stdout)}

    def import_one(self, path: Path, *options: str) -> str:
        """Import one file; return the id of the session it created."""
        before = self.ids()
        result = self("import", *options, str(path))
        (new,) = self.ids() - before
        assert isinstance(new, str) and new in result.stdout.replace("\n", "")
        return new


@pytest.fixture(params=["sqlite", "jsonl"])
def run(request: pytest.FixtureRequest, tmp_path: Path) -> Cli:
    """A CLI bound to a fresh store of each file-backed kind."""
    if request.param == "sqlite":
        return Cli(f"sqlite:///{tmp_path / 'store.db'}")
    return Cli(f"jsonl://{tmp_path / 'jsonl-store'}")


@pytest.fixture
def sqlite_run(tmp_path: Path) -> Cli:
    """A CLI bound to a fresh SQLite store (the default store's kind)."""
    return Cli(f"sqlite:///{tmp_path / 'store.db'}")


def entries_of(store: str, session_id: str) -> list[Any]:
    """The stored entries, read back through the library (not the CLI)."""

    async def read() -> list[Any]:
        async with open_repo(store) as repo:
            session = await repo.open(session_id)
            try:
                return list(await session.get_entries())
            finally:
                await session.close()

    return asyncio.run(read())


# ---------------------------------------------------------------- import, list


def test_import_real_pi_file_then_list(run: Cli) -> None:
    lines = file_lines(PI_SMALL)
    result = run("import", str(PI_SMALL))
    assert PI_SMALL_ID in result.stdout
    assert "(pi): 8 entries" in result.stdout
    assert "1 imported (8 entries), 0 already present, 0 failed" in result.stderr
    rows = run.json("list")
    assert [r["id"] for r in rows] == [PI_SMALL_ID]
    assert rows[0]["entryCount"] == len(lines) - 1  # every line but the header
    users = [ln for ln in lines if ln.get("message", {}).get("role") == "user"]
    assert rows[0]["messageCount"] == sum(1 for ln in lines if ln["type"] == "message")
    assert rows[0]["firstMessage"] == users[0]["message"]["content"][0]["text"]
    table = run("list").stdout
    assert PI_SMALL_ID in table and "Read hello.py" in table


def test_list_shows_the_imported_files_own_dates(run: Cli) -> None:
    # imported newest file first: the listing's order and dates are the files', not the import's
    files = [PI_SMALL, CLAUDE_DANGLING, SESSIONS / "pi" / "pi-mono_large-session.v1.jsonl"]
    times = {run.import_one(path): file_times(path) for path in files}
    rows = run.json("list")
    assert [r["id"] for r in rows] == sorted(times, key=lambda sid: times[sid][1], reverse=True)
    for r in rows:
        first, newest = times[r["id"]]
        assert datetime.fromisoformat(r["createdAt"]) == first
        assert datetime.fromisoformat(r["modifiedAt"]) == newest
    table = run("list").stdout
    shown = [newest.strftime("%Y-%m-%d %H:%M") for _, newest in times.values()]
    assert all(when in table for when in shown), (shown, table)
    assert [table.index(when) for when in sorted(shown, reverse=True)] == sorted(
        table.index(when) for when in shown
    )


def test_import_directory_reports_dangling_parent_and_custom_lines(
    sqlite_run: Cli, tmp_path: Path
) -> None:
    src = tmp_path / "in" / "nested"
    src.mkdir(parents=True)
    (src / CLAUDE_DANGLING.name).write_bytes(CLAUDE_DANGLING.read_bytes())
    (src / "README.md").write_text("not a session")  # not picked up from a directory
    result = sqlite_run("import", str(tmp_path / "in"))
    (sid,) = [r["id"] for r in sqlite_run.json("list")]
    assert f"{sid} (claude-code)" in result.stdout
    assert "1 entry with a missing parent" in result.stdout
    # the line and ids the importer reports, checked against the file itself
    raw = CLAUDE_DANGLING.read_bytes().splitlines()
    uuids = {orjson.loads(line).get("uuid") for line in raw if line.strip()}
    missing = [
        (n, orjson.loads(line))
        for n, line in enumerate(raw, 1)
        if line.strip()
        and orjson.loads(line).get("parentUuid")
        and orjson.loads(line)["parentUuid"] not in uuids
    ]
    assert missing, "the fixture file has a parentUuid that names no line"
    line_no, obj = missing[0]
    assert f"line {line_no}: entry {obj['uuid']}" in result.stdout
    assert "re-attached to " in result.stdout  # to the record before it, not a root
    assert "imported as a root" not in result.stdout
    assert "1 imported" in result.stderr


def test_import_failure_is_one_line_and_other_files_still_import(
    sqlite_run: Cli, tmp_path: Path
) -> None:
    bad = tmp_path / "log.jsonl"
    bad.write_text("this is somebody's log file\n")
    result = sqlite_run("import", str(bad), str(PI_SMALL), code=1)
    assert f"✗ {bad}" in result.stdout
    assert "✓" in result.stdout and PI_SMALL_ID in result.stdout
    assert "1 imported (8 entries), 0 already present, 1 failed" in result.stderr
    assert bad.read_text() == "this is somebody's log file\n"  # never rewritten
    assert [r["id"] for r in sqlite_run.json("list")] == [PI_SMALL_ID]


def test_import_lenient_lists_unreadable_line(sqlite_run: Cli, tmp_path: Path) -> None:
    lines = PI_SMALL.read_bytes().splitlines(keepends=True)
    broken = tmp_path / "broken.jsonl"
    broken.write_bytes(b"".join([*lines[:4], b"{not json\n", *lines[4:]]))
    strict = sqlite_run("import", str(broken), code=1)
    assert "5" in strict.stdout and "✗" in strict.stdout  # names line 5
    assert sqlite_run.ids() == set()  # a failed import leaves nothing behind
    lenient = sqlite_run("import", "--lenient", str(broken))
    assert "1 unreadable line" in lenient.stdout and "1 unreadable lines" not in lenient.stdout
    assert "unreadable line 5:" in lenient.stdout


def test_import_show_prints_the_tree(sqlite_run: Cli) -> None:
    result = sqlite_run("import", "--show", str(PI_SMALL))
    assert f"session {PI_SMALL_ID}" in result.stdout
    assert "◀ leaf" in result.stdout


# ---------------------------------------------------------------- show, context


def test_show_tree_marks_leaf_compactions_and_moves_with_checkout(run: Cli) -> None:
    run("import", str(PI_SMALL))
    lines = file_lines(PI_SMALL)[1:]
    out = run("show", PI_SMALL_ID[:6]).stdout
    last = lines[-1]["id"]
    assert f"{last} ◀ leaf compaction" in out
    assert out.count("compaction:") == 2
    assert "thinking_level_change: off" in out
    tree = run.json("show", PI_SMALL_ID)
    assert tree["leafId"] == last
    assert [n["id"] for n in tree["nodes"]] == [ln["id"] for ln in lines]
    assert [n for n in tree["nodes"] if n["isLeaf"]] == [tree["nodes"][-1]]

    # checkout by unique entry prefix: the leaf marker moves, nothing is deleted
    target = lines[3]["id"]  # the first assistant message
    moved = run("checkout", PI_SMALL_ID[:8], target[:5])
    assert f"leaf moved: {last} → {target}" in moved.stdout
    out = run("show", PI_SMALL_ID).stdout
    assert f"{target} ◀ leaf assistant" in out
    assert f"{last} ◀ leaf" not in out
    stored = entries_of(run.store, PI_SMALL_ID)
    assert len(stored) == len(lines) + 1 and stored[-1].type == "leaf"
    assert stored[-1].target_id == target


def test_show_collapses_long_runs_unless_full(sqlite_run: Cli) -> None:
    sid = sqlite_run.import_one(CLAUDE_LONG)
    total = len(sqlite_run.json("show", sid)["nodes"])
    short = sqlite_run("show", sid).stdout
    full = sqlite_run("show", sid, "--full").stdout
    assert "entries …" in short and "entries …" not in full
    assert len(full.splitlines()) > total  # one line per entry plus the title
    assert len(short.splitlines()) < 20


def test_context_json_is_wire_messages_and_llm_form(run: Cli) -> None:
    run("import", str(PI_SMALL))
    lines = file_lines(PI_SMALL)[1:]
    ctx = run.json("context", PI_SMALL_ID)
    assert ctx["leafId"] == lines[-1]["id"]
    assert ctx["model"] == {"provider": "pi-fixture", "modelId": "pi-fixture-model"}
    assert ctx["thinkingLevel"] == "off"
    roles = [m["role"] for m in ctx["messages"]]
    assert roles[0] == "compactionSummary"  # the newest compaction's summary comes first
    assert ctx["messages"][0]["summary"] == lines[-1]["summary"]
    llm = orjson.loads(run("context", PI_SMALL_ID, "--json", "--llm").stdout)
    assert {m["role"] for m in llm["messages"]} <= {"user", "assistant", "tool"}
    assert "compacted" in llm["messages"][0]["content"]
    # --leaf: the context as seen from the first user message
    first_user = lines[2]["id"]
    early = run.json("context", PI_SMALL_ID, "--leaf", first_user[:6])
    assert early["leafId"] == first_user
    assert [m["role"] for m in early["messages"]] == ["user"]
    human = run("context", PI_SMALL_ID).stdout
    assert "model pi-fixture/pi-fixture-model" in human
    assert "compactionSummary" in human


# ---------------------------------------------------------------- fork, label, name, rm


def test_fork_label_name_and_rm(run: Cli) -> None:
    run("import", str(PI_SMALL))
    lines = file_lines(PI_SMALL)[1:]
    target = lines[3]["id"]
    fork = run("fork", PI_SMALL_ID[:8], target)
    child = fork.stdout.strip()
    assert child and child != PI_SMALL_ID
    assert "4 entries copied" in fork.stderr
    assert [e.id for e in entries_of(run.store, child)] == [ln["id"] for ln in lines[:4]]
    before = run("fork", PI_SMALL_ID[:8], target, "--before").stdout.strip()
    assert [e.id for e in entries_of(run.store, before)] == [ln["id"] for ln in lines[:3]]

    run("label", PI_SMALL_ID, target[:6], "checkpoint one")
    assert "[checkpoint one] assistant" in run("show", PI_SMALL_ID).stdout
    node = next(n for n in run.json("show", PI_SMALL_ID)["nodes"] if n["id"] == target)
    assert node["label"] == "checkpoint one"
    run("label", PI_SMALL_ID, target[:6], "--clear")
    assert "[checkpoint one]" not in run("show", PI_SMALL_ID).stdout
    run("label", PI_SMALL_ID, target, code=2)  # neither TEXT nor --clear

    run("name", PI_SMALL_ID, "fixture session")
    rows = {r["id"]: r for r in run.json("list")}
    assert rows[PI_SMALL_ID]["name"] == "fixture session"
    assert rows[child]["parentSessionId"] == PI_SMALL_ID
    # a session can be named by its name
    assert run.json("stats", "fixture session")["sessionId"] == PI_SMALL_ID

    refused = run("rm", child, input="n\n", code=1)
    assert "aborted" in refused.stderr
    assert child in {r["id"] for r in run.json("list")}
    run("rm", child, "--yes")
    assert child not in {r["id"] for r in run.json("list")}
    gone = run("show", child, code=1)
    assert gone.stderr.count("\n") == 1 and gone.stderr.startswith("error: ")


def test_export_round_trips_through_import(run: Cli, tmp_path: Path) -> None:
    run("import", str(PI_SMALL))
    out = tmp_path / "exported.jsonl"
    result = run("export", PI_SMALL_ID[:8], str(out))
    assert "8 entries" in result.stdout
    exported = file_lines(out)
    assert exported[0]["type"] == "session" and exported[0]["version"] == 3
    original = file_lines(PI_SMALL)[1:]
    assert [e["id"] for e in exported[1:]] == [e["id"] for e in original]
    again = run("export", PI_SMALL_ID[:8], str(out), code=1)
    assert "exists" in again.stderr and "--force" in again.stderr  # not overwrite=True
    run("export", PI_SMALL_ID[:8], str(out), "--force")
    # importing it again is refused (same session id) and changes nothing
    again_in = run("import", str(out))
    assert f"already in the store as session {PI_SMALL_ID}" in again_in.stdout
    assert "0 imported (0 entries), 1 already present, 0 failed" in again_in.stderr
    # after rm, the exported file gives back the same entries
    run("rm", PI_SMALL_ID, "--yes")
    assert "(pi): 8 entries" in run("import", str(out)).stdout
    assert [e.id for e in entries_of(run.store, PI_SMALL_ID)] == [e["id"] for e in original]


# ---------------------------------------------------------------- search, stats


def test_search_and_stats_against_the_file(run: Cli) -> None:
    run("import", str(PI_SMALL))
    lines = file_lines(PI_SMALL)[1:]
    hits = run.json("search", "follow-up")
    follow_up = next(ln for ln in lines if "follow-up" in str(ln.get("message", "")))
    assert {"sessionId": PI_SMALL_ID, "entryId": follow_up["id"]}.items() <= hits[0].items()
    assert "follow-up" in hits[0]["snippet"]
    assert "no message matches" in run("search", "zzzz-not-there").stderr

    stats = run.json("stats", PI_SMALL_ID)
    roles: dict[str, int] = {}
    for ln in lines:
        if ln["type"] == "message":
            roles[ln["message"]["role"]] = roles.get(ln["message"]["role"], 0) + 1
    assert stats["messagesByRole"] == roles
    assert stats["compactions"] == sum(1 for ln in lines if ln["type"] == "compaction")
    assert stats["entryCount"] == len(lines)
    assert stats["roots"] == 1
    usage = [ln["message"]["usage"] for ln in lines if ln.get("message", {}).get("usage")]
    assert stats["inputTokens"] == sum(u["input"] for u in usage)
    assert "messages by role" in run("stats", PI_SMALL_ID).stdout


# ---------------------------------------------------------------- verify, compact


def test_verify_real_sessions(run: Cli) -> None:
    run.import_one(PI_SMALL)
    sid = run.import_one(CLAUDE_DANGLING)
    clean = run("verify", PI_SMALL_ID)
    assert clean.stdout.startswith(f"OK {PI_SMALL_ID}: 0 problems, 0 warnings")
    report = run.json("verify", PI_SMALL_ID)
    assert report["ok"] is True and report["problems"] == [] and report["warnings"] == []
    # the Claude Code sub-agent file: Claude Code wrote its parallel tool results in the order
    # they finished; the import stores them in call order, so even --strict finds nothing
    strict = run("verify", sid, "--strict")
    assert strict.stdout.startswith(f"OK {sid}: 0 problems, 0 warnings")


def test_verify_finds_torn_final_line_in_jsonl_store(tmp_path: Path) -> None:
    run = Cli(f"jsonl://{tmp_path / 'store'}")
    run("import", str(PI_SMALL))
    log = tmp_path / "store" / PI_SMALL_ID / "session.jsonl"
    assert log.is_file()
    lines = log.read_bytes().count(b"\n")
    with log.open("ab") as fh:
        fh.write(b'{"type":"message","id":"torn1","parentId":')
    result = run("verify", PI_SMALL_ID, code=1)
    assert f"session.jsonl:{lines + 1}: torn final line" in result.stdout
    assert "FAILED" in result.stdout
    report = orjson.loads(run("verify", PI_SMALL_ID, "--json", code=1).stdout)
    assert report["ok"] is False and len(report["problems"]) == 1
    # a bad line in the middle: the session cannot be opened; verify names file and line,
    # every other command fails with one line
    data = log.read_bytes().splitlines(keepends=True)
    log.write_bytes(b"".join([*data[:3], b"garbage\n", *data[3:]]))
    broken = run("verify", PI_SMALL_ID, code=1)
    assert f"problem: {log}:4:" in broken.stdout
    shown = run("show", PI_SMALL_ID, code=1)
    assert shown.stderr.startswith("error: ") and shown.stderr.count("\n") == 1
    assert f"{log}:4" in shown.stderr


def test_verify_reports_unpaired_tool_calls_as_warnings_strict_fails(sqlite_run: Cli) -> None:
    async def build() -> str:
        async with open_repo(sqlite_run.store) as repo:
            s = await repo.create()
            await s.append_message({"role": "user", "content": "list files"})
            await s.append_message(
                {
                    "role": "assistant",
                    "content": [
                        {"type": "toolCall", "id": "call-1", "name": "bash", "arguments": {}}
                    ],
                }
            )
            await s.append_message({"role": "user", "content": "never mind"})
            await s.append_message(
                {"role": "assistant", "content": [{"type": "text", "text": "ok"}]}
            )
            await s.close()
            return s.id

    sid = asyncio.run(build())
    ok = sqlite_run("verify", sid)
    assert "warning: unpaired tool call/result in the stored branch" in ok.stdout
    assert "call-1" in ok.stdout
    assert "OK" in ok.stdout
    strict = sqlite_run("verify", sid, "--strict", code=1)
    assert "FAILED" in strict.stdout


def test_compact_prints_tokens_before_and_after(run: Cli) -> None:
    sid = run.import_one(CLAUDE_LONG)
    before = run.json("context", sid)
    result = run("compact", sid, "--keep-tokens", "4000")
    assert f"(pointer): {before['contextTokens']:,} → " in result.stdout
    after = run.json("context", sid)
    assert after["contextTokens"] < before["contextTokens"]
    assert f"→ {after['contextTokens']:,} tokens" in result.stdout
    assert after["messages"][0]["role"] == "compactionSummary"
    assert "## Goal" in after["messages"][0]["summary"]
    tree = run.json("show", sid)
    assert tree["nodes"][-1]["type"] == "compaction" and tree["nodes"][-1]["isLeaf"]
    tail = run("compact", sid, "--mode", "retained_tail", "--keep-tokens", "500")
    final = run.json("context", sid)
    assert f"(retained_tail): {after['contextTokens']:,} → {final['contextTokens']:,}" in (
        tail.stdout
    )
    assert final["contextTokens"] < after["contextTokens"]
    assert run("verify", sid).stdout.startswith("OK")
    # nothing left to summarise: one line, exit 1, nothing appended
    count = len(entries_of(run.store, sid))
    nothing = run("compact", sid, "--mode", "retained_tail", "--keep-tokens", "500", code=1)
    assert nothing.stderr.startswith("error: [nothing_to_compact]")
    assert nothing.stderr.count("\n") == 1
    assert len(entries_of(run.store, sid)) == count


def test_compact_and_checkout_summarize_with_extractive(sqlite_run: Cli) -> None:
    sqlite_run("import", str(PI_SMALL))
    lines = file_lines(PI_SMALL)[1:]
    first_user = lines[2]["id"]
    result = sqlite_run("checkout", PI_SMALL_ID, first_user, "--summarize")
    assert "branch_summary" in result.stdout
    stored = entries_of(sqlite_run.store, PI_SMALL_ID)
    summary = stored[-1]
    assert summary.type == "branch_summary"
    assert summary.parent_id == first_user and summary.from_id == lines[-1]["id"]
    out = sqlite_run("show", PI_SMALL_ID).stdout
    assert f"{summary.id[:8]}" in out and "◀ leaf branch_summary" in out
    bad = sqlite_run(
        "checkout", PI_SMALL_ID, first_user, "--summarize", "--summarizer", "openai", code=2
    )
    assert "--model" in bad.stderr


# ---------------------------------------------------------------- the real console script


def test_console_script_and_python_m(tmp_path: Path) -> None:
    env = {**os.environ, "SESSIONTREE_URL": f"sqlite:///{tmp_path / 'store.db'}", "COLUMNS": "200"}
    exe = Path(sys.executable).with_name("sessiontree")
    imported = subprocess.run(
        [str(exe), "import", str(PI_SMALL)], env=env, capture_output=True, text=True, timeout=120
    )
    assert imported.returncode == 0, imported.stderr
    shown = subprocess.run(
        [sys.executable, "-m", "sessiontree", "show", PI_SMALL_ID[:4]],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert shown.returncode == 0, shown.stderr
    assert "◀ leaf" in shown.stdout
    missing = subprocess.run(
        [str(exe), "show", "nope"], env=env, capture_output=True, text=True, timeout=120
    )
    assert missing.returncode == 1
    assert missing.stderr.count("\n") == 1 and "Traceback" not in missing.stderr


# ---------------------------------------------------------------- LLM summarisers, PostgreSQL


def test_checkout_summarize_with_openai_over_local_http(sqlite_run: Cli) -> None:
    from llm_servers import Reply, fake_server, openai_completion, openai_error

    sqlite_run("import", str(PI_SMALL))
    lines = file_lines(PI_SMALL)[1:]
    first_user = lines[2]["id"]
    text = "## Goal\n- greet from hello.py (summary by the local fake model)"
    with fake_server(Reply(openai_completion(text, prompt_tokens=321))) as server:
        result = sqlite_run(
            "checkout",
            PI_SMALL_ID,
            first_user[:6],
            "--summarize",
            "--summarizer",
            "openai",
            "--model",
            "fake-model",
            "--base-url",
            f"{server.url}/v1",
        )
        assert server.requests and server.requests[0].path == "/v1/chat/completions"
        assert server.requests[0].body["model"] == "fake-model"
    assert "branch_summary" in result.stdout
    summary = entries_of(sqlite_run.store, PI_SMALL_ID)[-1]
    assert summary.type == "branch_summary" and summary.summary == text
    assert summary.usage is not None and summary.usage.input > 0

    # a failing model: one line, exit 1, nothing appended
    count = len(entries_of(sqlite_run.store, PI_SMALL_ID))
    failing = Reply(openai_error("model exploded"), status=500, headers={"retry-after-ms": "1"})
    with fake_server(failing) as server:
        bad = sqlite_run(
            "checkout",
            PI_SMALL_ID,
            lines[-1]["id"],
            "--summarize",
            "--summarizer",
            "openai",
            "--model",
            "fake-model",
            "--base-url",
            f"{server.url}/v1",
            code=1,
        )
    assert bad.stderr.startswith("error: ") and bad.stderr.count("\n") == 1
    assert "Traceback" not in bad.stderr
    assert len(entries_of(sqlite_run.store, PI_SMALL_ID)) == count


def test_compact_with_anthropic_over_local_http(sqlite_run: Cli) -> None:
    from llm_servers import Reply, anthropic_message, fake_server

    sid = sqlite_run.import_one(CLAUDE_LONG)
    text = "## Goal\n- evaluate the bootstrap simulation (fake Claude summary)"
    with fake_server(Reply(anthropic_message(text))) as server:
        result = sqlite_run(
            "compact",
            sid,
            "--keep-tokens",
            "4000",
            "--summarizer",
            "anthropic",
            "--model",
            "fake-claude",
            "--base-url",
            server.url,
        )
        assert server.requests[0].path == "/v1/messages"
    assert "(pointer)" in result.stdout
    ctx = sqlite_run.json("context", sid)
    assert ctx["messages"][0]["role"] == "compactionSummary"
    assert text in ctx["messages"][0]["summary"]


def test_import_progress_bar_forced(sqlite_run: Cli) -> None:
    result = sqlite_run("import", "--progress", str(PI_SMALL), str(CLAUDE_DANGLING))
    assert result.stdout.count("✓") == 2
    assert "2 imported" in result.stderr


@pytest.mark.postgres
def test_cli_on_postgresql() -> None:
    from backends import throwaway_pg_database

    with throwaway_pg_database() as url:
        run = Cli(url)
        run("import", str(PI_SMALL))
        out = run("show", PI_SMALL_ID[:6]).stdout
        assert f"{file_lines(PI_SMALL)[-1]['id']} ◀ leaf" in out
        assert run.json("stats", PI_SMALL_ID)["entryCount"] == 8
        assert run("verify", PI_SMALL_ID).stdout.startswith("OK")
        hits = run.json("search", "follow-up")
        assert hits and hits[0]["sessionId"] == PI_SMALL_ID


def test_import_a_directory_finds_every_format(sqlite_run: Cli, tmp_path: Path) -> None:
    import shutil

    src = tmp_path / "sessions"
    shutil.copytree(VENDORED, src)
    project = src / "project"
    project.mkdir()
    aider = VENDORED / "aider" / "mozgoslav.aider.chat.history.md"
    # another history: its first header (what its session id is made from) differs too
    other = aider.read_bytes().replace(b"hi", b"hey").replace(b"22:40:12", b"22:40:13")
    (project / ".aider.chat.history.md").write_bytes(other)
    task = src / "tasks" / "1769053680585"
    task.mkdir(parents=True)
    history = [
        {"role": "user", "content": [{"type": "text", "text": "<task>hello</task>"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "Hello."}]},
    ]
    (task / "api_conversation_history.json").write_text(orjson.dumps(history).decode())
    (task / "ui_messages.json").write_text('[{"ts": 1769053680628, "type": "say", "say": "text"}]')

    result = sqlite_run("import", str(src))
    vendored = [p for p in VENDORED.rglob("*") if p.is_file() and p.name != "SOURCES.md"]
    # a Copilot CLI legacy state is a plain *.json file: imported when named, not searched for
    legacy = [p for p in vendored if p.parent.name == "copilot-cli" and p.suffix == ".json"]
    assert len(legacy) == 1
    found = len(vendored) - len(legacy) + 2
    assert f"{found} imported" in result.stderr and "0 failed" in result.stderr
    ids = {r["id"] for r in sqlite_run.json("list")}
    assert "cline-1769053680585" in ids
    assert sum(i.startswith("aider-") for i in ids) == 2
    assert f"{task / 'ui_messages.json'}" not in result.stdout  # read with its task only
