"""The transcript page (sessiontree.web.transcript and transcript_routes) over HTTP: real
sessions of Claude Code (sub-agents), Codex (a compaction) and pi (a fork), tool calls by
kind, paging a 100,000-entry session, comparing branches and sessions, and the live update
by server-sent events while a real writer process appends to a SQLite and a JSONL store."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from backends import REQUIRE_ALL, unavailable

if not REQUIRE_ALL:  # with SESSIONTREE_REQUIRE_ALL=1 a missing web extra fails the import
    pytest.importorskip("starlette", reason="needs the web extra")

from starlette.testclient import TestClient

from session_files import ROOT, VENDORED
from sessiontree import Session
from sessiontree.backends.memory.repo import MemoryRepo
from sessiontree.entries import Entry, MessageEntry
from sessiontree.interop import import_session
from sessiontree.messages import TextContent, ToolCall, UserMessage
from sessiontree.testing.builders import assistant, tool_call, tool_result, user
from sessiontree.web.app import create_app
from sessiontree.web.transcript import (
    PAGE_MAX,
    SessionIndex,
    call_kind,
    edit_diff,
    transcript_page,
)
from web_support import HOSTILE, CountingRepo, check_page, hostile_session

BASE = "http://127.0.0.1"
CLAUDE = VENDORED / "claude-code" / "5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl"
"""A real Claude Code session whose main conversation started two sub-agents (sidechains)."""
PI = VENDORED / "pi" / "pi-mono_large-session.v1.jsonl"
CODEX_SAMPLE = VENDORED / "codex" / "sample_codex_session_simonw.jsonl"
EXTRA = ROOT.parent / "shared" / "data" / "sessions-extra"
CODEX_COMPACTED = EXTRA / "set3" / "codex" / "planetfall_b3-05aa54b583-9_full.jsonl"
"""A real Codex Desktop rollout with one ``compacted`` line (GPL-3.0: read in place, not
vendored)."""
PI_FORKED = EXTRA / "set2" / "pi" / "00957d43-44a5-4c46-a7ef-29e8bafe0642.jsonl"
"""A real pi v3 file (written by OpenClaw) with two fork points on its leaf's branch (no
licence: read in place, not vendored)."""
SRC = str(Path(__file__).resolve().parents[1] / "src")


def client(repo: object) -> TestClient:
    return TestClient(create_app(repo), base_url=BASE)  # type: ignore[arg-type]


def codex_rollout_with_compaction(path: Path) -> Path:
    """A Codex rollout written as Codex Desktop writes one (``session_meta``, user and
    assistant ``message`` items, ``function_call``/``function_call_output``, an
    ``apply_patch`` ``custom_tool_call``, a ``compacted`` line holding the replacement
    history, then a new turn), small enough to build in a test."""

    def line(ts: int, kind: str, payload: dict[str, Any]) -> str:
        stamp = f"2026-06-17T18:{ts // 60:02d}:{ts % 60:02d}.000Z"
        return json.dumps({"timestamp": stamp, "type": kind, "payload": payload})

    def msg(role: str, text: str) -> dict[str, Any]:
        kind = "input_text" if role == "user" else "output_text"
        return {"type": "message", "role": role, "content": [{"type": kind, "text": text}]}

    rows = [
        line(0, "session_meta", {"id": "019ed6ed-0000-7000-8000-00000000c0de", "cwd": "/w",
             "originator": "Codex Desktop", "cli_version": "0.140.0", "model_provider": "openai"}),
        line(1, "response_item", msg("user", "look at level 2")),
        line(2, "response_item", msg("assistant", "Reading the level files first.")),
        line(3, "response_item", {"type": "function_call", "name": "exec_command",
             "arguments": json.dumps({"cmd": "ls src/levels", "workdir": "/w"}),
             "call_id": "call_ls"}),
        line(4, "response_item", {"type": "function_call_output", "call_id": "call_ls",
             "output": "level1.js\nlevel2.js\n"}),
        line(5, "response_item", {"type": "custom_tool_call", "status": "completed",
             "call_id": "call_patch", "name": "apply_patch",
             "input": "*** Begin Patch\n*** Update File: /w/src/levels/level2.js\n@@\n-const BEATS = 1;\n+const BEATS = 2;\n*** End Patch\n"}),
        line(6, "response_item", {"type": "custom_tool_call_output", "call_id": "call_patch",
             "output": "Success. Updated the following files:\nM /w/src/levels/level2.js"}),
        line(7, "response_item", msg("assistant", "Level 2 now has two beats.")),
        line(8, "compacted", {"message": "", "replacement_history": [
            msg("user", "look at level 2"),
            msg("assistant", "Level 2 now has two beats."),
        ]}),
        line(9, "response_item", msg("user", "now the briefing")),
        line(10, "response_item", msg("assistant", "The briefing is in level2.js.")),
    ]  # fmt: skip
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


async def _import(repo: MemoryRepo, path: Path) -> Session:
    imported = await import_session(path, repo, lenient=True)
    session: Session = imported[0]
    return session


# --------------------------------------------------------------------------- pure parts


def test_call_kinds_follow_the_tool_and_its_arguments() -> None:
    def kind(name: str, **args: Any) -> str:
        return call_kind(ToolCall(id="c", name=name, arguments=args))

    assert kind("Edit", file_path="a", old_string="x", new_string="y") == "edit"
    assert kind("MultiEdit", file_path="a", edits=[]) == "edit"
    assert kind("edit", path="a", oldText="x", newText="y") == "edit"  # pi
    assert kind("apply_patch", input="*** Begin Patch") == "edit"  # Codex
    assert kind("Write", file_path="a", content="x") == "write"
    assert kind("Bash", command="ls") == "shell"
    assert kind("exec_command", cmd="ls") == "shell"
    assert kind("shell", command=["bash", "-lc", "ls"]) == "shell"
    assert kind("Read", file_path="a") == "read"
    assert kind("Task", prompt="go", subagent_type="general-purpose") == "agent"
    assert kind("Task") == "other"  # no prompt: not a sub-agent call
    assert kind("Glob", pattern="*") == "other"


def test_edit_diff_is_a_unified_diff_without_the_file_header() -> None:
    lines = edit_diff("a\nb\nc\n", "a\nB\nc\n")
    assert [(line.kind, line.text) for line in lines] == [
        ("hunk", "@@ -1,3 +1,3 @@"),
        ("ctx", " a"),
        ("del", "-b"),
        ("add", "+B"),
        ("ctx", " c"),
    ]
    assert edit_diff("same", "same") == []


# --------------------------------------------------------------------------- pages


async def test_tool_calls_are_rendered_by_kind() -> None:
    repo = MemoryRepo()
    s = await repo.create()
    await s.append_message(user("fix the greeting"))
    await s.append_message(
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "the greeting says helo"},
                {"type": "text", "text": "Fixing it."},
                tool_call("r1", "Read", file_path="/w/hello.py"),
                tool_call("e1", "Edit", file_path="/w/hello.py", old_string="helo", new_string="hello"),
                tool_call("w1", "Write", file_path="/w/new.txt", content="fresh\n"),
                tool_call("b1", "Bash", command="python hello.py"),
            ],
            "provider": "p",
            "model": "m",
            "stopReason": "toolUse",
            "timestamp": 2,
        }
    )  # fmt: skip
    await s.append_message(tool_result("r1", "print HELO_BODY", name="Read"))
    await s.append_message(tool_result("e1", "edited", name="Edit"))
    await s.append_message(tool_result("w1", "written", name="Write"))
    await s.append_message(
        {
            "role": "toolResult",
            "toolCallId": "b1",
            "toolName": "Bash",
            "content": [
                {"type": "text", "text": "hello\nline 2\nline 3"},
                {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"},
            ],
            "isError": False,
            "timestamp": 3,
        }
    )
    await s.append_message(assistant("Done."))
    with client(repo) as c:
        html = c.get(f"/s/{s.id}").text
    check_page(html)
    assert re.search(r'<details class="thinking"><summary>thinking', html), "thinking is folded"
    edit = html.split('data-kind="edit"', 1)[1].split('data-kind="write"', 1)[0]
    assert '<span class="del">-helo</span>' in edit and '<span class="add">+hello</span>' in edit
    assert "/w/hello.py" in edit and '<details class="tool" open>' in edit
    write = html.split('data-kind="write"', 1)[1].split('data-kind="shell"', 1)[0]
    assert '<span class="add">+fresh</span>' in write and "written whole" in write
    shell = html.split('data-kind="shell"', 1)[1].split("Done.", 1)[0]
    assert '<details class="tool shell">' in shell, "shell output starts folded"
    assert "python hello.py" in shell and "3 lines of output" in shell
    assert 'src="data:image/png;base64,iVBORw0KGgo="' in shell, "an image result is shown"
    read = html.split('data-kind="read"', 1)[1].split('data-kind="edit"', 1)[0]
    assert '<details class="tool read"><summary>' in read and "/w/hello.py" in read
    # each result is shown with its call, not again as a message of its own
    assert html.count("HELO_BODY") == 1


async def test_claude_code_sub_agents_are_nested_under_the_calls_that_started_them() -> None:
    repo = MemoryRepo()
    s = await _import(repo, CLAUDE)
    index = SessionIndex()
    await index.refresh(s)
    page = transcript_page(index, await s.get_leaf_id(), await s.get_leaf_id())
    agents = [c for t in page.turns for i in t.items for c in i.calls if c.kind == "agent"]
    nested = [c for c in agents if c.sidechain is not None]
    assert page.sidechains == 2 and len(nested) == 2
    for call in nested:
        assert call.sidechain is not None
        first = call.sidechain.items[0]
        assert first.message is not None and first.role == "user"
        # the sidechain begins with the prompt the call gave the sub-agent
        assert call.call.arguments["prompt"].strip()[:40] in first.message.blocks[0].text
        assert call.sidechain.label.startswith("general-purpose: ")
    labels = sorted(call.sidechain.label for call in nested if call.sidechain)
    assert labels == [
        "general-purpose: Analyze current project structure",
        "general-purpose: Check package configuration",
    ]
    with client(repo) as c:
        html = c.get(f"/s/{s.id}").text
    check_page(html)
    assert html.count('<details class="sidechain" open') == 2
    # the sub-agent's own lines are inside the call, not turns of the main transcript
    main_part = re.sub(r'<details class="sidechain".*?</details>\s*</div>', "", html, flags=re.S)
    assert "Examine the package.json file(s)" not in main_part.split("prompt</summary>")[0]


async def test_a_codex_compaction_is_shown_where_it_happened_with_what_it_replaced(
    tmp_path: Path,
) -> None:
    repo = MemoryRepo()
    s = await _import(repo, codex_rollout_with_compaction(tmp_path / "rollout.jsonl"))
    with client(repo) as c:
        html = c.get(f"/s/{s.id}").text
        check_page(html)
        assert 'class="summary-box compaction"' in html
        assert "the history the model kept: 2 messages" in html  # Codex's replacement history
        found = re.search(
            r'<a class="replaced" href="([^"]+)">the (\d+) messages it replaced', html
        )
        assert found, "the compaction links to what it replaced"
        href, count = found.groups()
        # it replaced every message of the branch before it: the user's, three replies
        # (text + exec_command, apply_patch, text) and two tool results
        assert int(count) == 6
        assert href.startswith("#e-")
        first = href[3:]
        assert f'id="e-{first}"' in html
        first_entry = await s.get_entry(first)
        assert isinstance(first_entry, MessageEntry) and first_entry.message.role == "user"
        # Codex's apply_patch is drawn as a diff and exec_command as a shell command
        assert '<span class="add">+const BEATS = 2;</span>' in html
        assert '<code class="cmd">ls src/levels</code>' in html


async def test_the_real_codex_compaction_links_to_an_earlier_page() -> None:
    if not CODEX_COMPACTED.exists():
        unavailable(f"{CODEX_COMPACTED} is not beside the checkout")
    repo = MemoryRepo()
    s = await _import(repo, CODEX_COMPACTED)
    comp = (await s.get_entries(types={"compaction"}))[0]
    with client(repo) as c:
        html = c.get(f"/s/{s.id}", params={"at": comp.id}).text
        check_page(html)
        found = re.search(r'<a class="replaced" href="([^"]+)">the ([\d,]+) messages', html)
        assert found and int(found.group(2).replace(",", "")) > 100
        target = found.group(1).replace("&amp;", "&")
        assert target.startswith("?at="), "the replaced messages are on an earlier page"
        first = target.split("#e-", 1)[1]
        earlier = c.get(f"/s/{s.id}{target.split('#')[0]}").text
        assert f'id="e-{first}"' in earlier


async def _pi_with_fork(repo: MemoryRepo) -> tuple[Session, str, str, str]:
    """The real pi session, then a fork made as pi's ``/tree`` makes one: the leaf moved
    back to an earlier user message's reply and a new message appended there."""
    s = await _import(repo, PI)
    path = await s.get_branch()
    users = [e for e in path if isinstance(e, MessageEntry) and e.message.role == "user"]
    fork_at = users[len(users) // 2]
    old_leaf = await s.get_leaf_id()
    assert old_leaf is not None
    await s.set_leaf_id(fork_at.id)
    new_leaf = await s.append_message(user("try the other approach instead"))
    return s, fork_at.id, old_leaf, new_leaf


async def test_a_pi_fork_has_a_switcher_and_the_branches_compare() -> None:
    repo = MemoryRepo()
    s, fork_at, old_leaf, _ = await _pi_with_fork(repo)
    with client(repo) as c:
        html = c.get(f"/s/{s.id}", params={"at": fork_at}).text
        check_page(html)
        switcher = html.split(f'data-fork="{fork_at}"', 1)[1].split("</div>", 1)[0]
        assert "2 branches here" in switcher
        found = re.search(r'class="switch" href="([^"]+)"', switcher)
        assert found and f"leaf={old_leaf}" in found.group(1)
        other = c.get(found.group(1).replace("&amp;", "&")).text
        assert "another branch" in other and "◀ leaf" not in other
        assert "try the other approach instead" not in other
        cmp_link = re.search(r'class="cmp" href="([^"]+)"', switcher)
        assert cmp_link
        page = c.get(cmp_link.group(1).replace("&amp;", "&")).text
        check_page(page)
        assert 'id="compare"' in page
        head = re.search(r'id="compare-head">([\d,]+) shared message', page)
        shared = len([e for e in await s.get_branch(fork_at) if e.type == "message"])
        assert head and int(head.group(1).replace(",", "")) == shared
        assert "try the other approach instead" in page
        assert 'class="crow differ"' in page


async def test_two_sessions_compare_from_where_they_part() -> None:
    repo = MemoryRepo()
    s, fork_at, _, _ = await _pi_with_fork(repo)
    forked = await s.fork(fork_at)
    await forked.append_message(assistant("a reply only the fork has"))
    with client(repo) as c:
        page = c.get(f"/s/{s.id}/compare", params={"other": forked.id}).text
    check_page(page)
    head = re.search(r'id="compare-head">([\d,]+) shared message', page)
    shared = len([e for e in await s.get_branch(fork_at) if e.type == "message"])
    assert head and int(head.group(1).replace(",", "")) == shared
    assert "a reply only the fork has" in page and "try the other approach instead" in page


async def test_the_real_pi_forks_have_switchers() -> None:
    if not PI_FORKED.exists():
        unavailable(f"{PI_FORKED} is not beside the checkout")
    repo = MemoryRepo()
    s = await _import(repo, PI_FORKED)
    index = SessionIndex()
    await index.refresh(s)
    leaf = await s.get_leaf_id()
    path = index.branch(leaf)
    forks = [e.id for e in path if len(index.children.get(e.id, [])) > 1]
    assert len(forks) == 2
    with client(repo) as c:
        for at in forks:
            html = c.get(f"/s/{s.id}", params={"at": at}).text
            assert f'data-fork="{at}"' in html


async def test_hostile_text_stays_text_in_the_transcript_and_compare() -> None:
    repo = MemoryRepo()
    s = await hostile_session(repo)
    entries = await s.get_entries()
    with client(repo) as c:
        for path in (f"/s/{s.id}", f"/s/{s.id}/turns", f"/s/{s.id}/compare?b={entries[-1].id}"):
            r = c.get(path)
            assert r.status_code == 200, path
            assert HOSTILE in check_page(r.text).visible, path


async def test_bad_arguments_are_refused_naming_the_entry() -> None:
    repo = MemoryRepo()
    s = await repo.create()
    await s.append_message(user("one"))
    with client(repo) as c:
        r = c.get(f"/s/{s.id}", params={"before": "nope"})
        assert r.status_code == 400 and "nope" in r.text
        r = c.get(f"/s/{s.id}", params={"leaf": "zzzz"})
        assert r.status_code == 400 and "zzzz" in r.text
        assert c.get("/s/no-such-session").status_code == 404


def _linear(n: int) -> list[Entry]:
    out: list[Entry] = []
    for i in range(n):
        if i % 3 == 0:
            msg: Any = UserMessage(content=[TextContent(text=f"question {i}")])
        else:
            msg = assistant(f"answer {i}")
        out.append(
            MessageEntry.model_validate(
                {"id": f"e{i}", "parentId": f"e{i - 1}" if i else None, "message": msg}
            )
        )
    return out


@pytest.mark.slow
async def test_a_100k_entry_transcript_opens_at_the_leaf_and_pages_back() -> None:
    repo = CountingRepo()
    s = await repo.inner.create()
    await s.storage.append_entries(_linear(100_000))
    with client(repo) as c:
        first = c.get(f"/s/{s.id}").text
        assert 'id="e-e99999"' in first and "◀ leaf" in first
        assert len(re.findall(r'class="item message', first)) <= PAGE_MAX
        found = re.search(r'id="earlier" href="\?before=([^"]+)"', first)
        assert found
        counted = repo.storages[s.id]
        read_once = counted.read
        assert read_once == 100_000
        part = c.get(f"/s/{s.id}/turns", params={"before": found.group(1)})
        assert part.status_code == 200 and part.headers["X-Has-Before"] == "1"
        earlier_first = part.headers["X-First-Id"]
        assert int(earlier_first[1:]) < int(found.group(1)[1:])
        assert f'id="e-{found.group(1)}"' not in part.text
        middle = c.get(f"/s/{s.id}", params={"at": "e50001"}).text
        assert 'id="e-e50001"' in middle and 'id="e-e99999"' not in middle
        # the later pages read only what was appended since the first: nothing
        assert counted.read == read_once


@settings(max_examples=40, deadline=None)
@given(
    roles=st.lists(st.sampled_from(["user", "assistant", "assistant"]), min_size=1, max_size=900),
    probe=st.integers(min_value=0),
)
def test_pages_walked_back_cover_the_branch_once_in_order(roles: list[str], probe: int) -> None:
    entries = [
        MessageEntry.model_validate(
            {
                "id": f"e{i}",
                "parentId": f"e{i - 1}" if i else None,
                "message": user(f"q{i}") if role == "user" else assistant(f"a{i}"),
            }
        )
        for i, role in enumerate(roles)
    ]
    index = SessionIndex()
    index.add(entries)
    leaf = entries[-1].id
    position = {e.id: i for i, e in enumerate(entries)}
    spans: list[tuple[int, int]] = []
    page = transcript_page(index, leaf, leaf)
    while True:
        assert page.first_id is not None and page.last_id is not None
        lo, hi = position[page.first_id], position[page.last_id]
        assert hi - lo + 1 <= PAGE_MAX
        spans.append((lo, hi))
        if not page.has_before:
            break
        page = transcript_page(index, leaf, leaf, before=page.first_id)
    spans.reverse()
    assert spans[0][0] == 0 and spans[-1][1] == len(entries) - 1
    assert all(a[1] + 1 == b[0] for a, b in itertools.pairwise(spans))
    # a page begins at a turn (a user message) unless one turn alone fills it
    for lo, hi in spans[1:]:
        assert roles[lo] == "user" or hi - lo + 1 == PAGE_MAX
    at = entries[probe % len(entries)].id
    around = transcript_page(index, leaf, leaf, at=at)
    assert around.first_id is not None and around.last_id is not None
    assert position[around.first_id] <= position[at] <= position[around.last_id]
    # a branch that grew at its leaf while pages were shown lays out as one read at once
    grown = SessionIndex()
    cut = probe % len(entries)
    grown.add(entries[: cut + 1])
    transcript_page(grown, entries[cut].id, entries[cut].id)
    grown.add(entries[cut + 1 :])
    again, fresh = transcript_page(grown, leaf, leaf), transcript_page(index, leaf, leaf)
    assert (again.first_id, again.turn_count, again.path_length, again.chart) == (
        fresh.first_id,
        fresh.turn_count,
        fresh.path_length,
        fresh.chart,
    )


# --------------------------------------------------------------------------- live

WRITER = """
import asyncio, sys, time
from sessiontree.repos import open_repo

async def main() -> None:
    repo = open_repo(sys.argv[1])
    session = await repo.open(sys.argv[2])
    print("ready", flush=True)
    for line in sys.stdin:
        text = line.strip()
        await session.append_message(
            {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": 1}
        )
        print(f"{time.time():.6f}", flush=True)
    await session.close()
    await repo.close()

asyncio.run(main())
"""


def _start_writer(url: str, sid: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}
    proc = subprocess.Popen(
        [sys.executable, "-c", WRITER, url, sid],
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    return proc


def make_store(kind: str, tmp_path: Path) -> tuple[str, str]:
    """A store of ``kind`` (sqlite or jsonl) holding one short session: (url, session id)."""
    from sessiontree.repos import open_repo

    url = (
        f"sqlite:///{tmp_path / 'live.db'}" if kind == "sqlite" else f"jsonl://{tmp_path / 'live'}"
    )

    async def make() -> str:
        repo = open_repo(url)
        try:
            s = await repo.create()
            await s.append_message(user("start"))
            await s.append_message(assistant("ready for more"))
            return s.id
        finally:
            await repo.close()

    return url, asyncio.run(make())


@pytest.mark.parametrize("kind", ["sqlite", "jsonl"])
def test_the_event_stream_tells_of_an_append_by_another_process_within_a_second(
    kind: str, tmp_path: Path
) -> None:
    import httpx

    from sessiontree.repos import open_repo
    from sessiontree.web.server import serve_in_thread

    url, sid = make_store(kind, tmp_path)
    writer = _start_writer(url, sid)
    try:
        with serve_in_thread(create_app(open_repo(url))) as base:
            with httpx.stream("GET", f"{base}/s/{sid}/events", timeout=10) as events:
                lines = events.iter_lines()
                assert next(lines) == "retry: 500"
                for n in range(3):
                    assert writer.stdin is not None and writer.stdout is not None
                    writer.stdin.write(f"appended {n}\n")
                    writer.stdin.flush()
                    written = float(writer.stdout.readline())
                    line = next(lines)
                    while not line.startswith("event:"):
                        line = next(lines)
                    seen = time.time()
                    assert line == "event: change"
                    data = json.loads(next(lines).removeprefix("data: "))
                    assert seen - written < 1.0, f"{kind}: told {seen - written:.2f} s later"
                    assert data["leaf"] == data["last"]
            page = httpx.get(f"{base}/s/{sid}/turns", timeout=10).text
            assert "appended 2" in page
    finally:
        for pipe in (writer.stdin, writer.stdout):
            if pipe is not None:
                pipe.close()
        writer.wait(20)


def test_a_server_with_an_open_event_stream_stops_within_seconds(tmp_path: Path) -> None:
    import threading

    import httpx

    from sessiontree.repos import open_repo
    from sessiontree.web.server import GRACEFUL_SECONDS, serve_in_thread
    from sessiontree.web.transcript_routes import STREAM_SECONDS

    url, sid = make_store("sqlite", tmp_path)
    opened = threading.Event()

    def listen(base: str) -> None:
        with (
            contextlib.suppress(httpx.HTTPError),
            httpx.stream("GET", f"{base}/s/{sid}/events", timeout=30) as events,
        ):
            for _ in events.iter_lines():
                opened.set()

    with serve_in_thread(create_app(open_repo(url))) as base:
        listener = threading.Thread(target=listen, args=(base,), daemon=True)
        listener.start()
        assert opened.wait(20)
        stopping = time.monotonic()
    took = time.monotonic() - stopping
    assert took < GRACEFUL_SECONDS + 3 < STREAM_SECONDS, f"stopping took {took:.1f} s"
    listener.join(10)
    assert not listener.is_alive()


async def test_a_sub_agent_with_a_session_of_its_own_is_linked_from_its_call() -> None:
    """Claude Code 2.x writes a sub-agent to ``agent-<id>.jsonl``, imported as the session
    ``<parent session id>-agent-<id>``; the Task result's ``toolUseResult`` names the agent."""
    repo = MemoryRepo()
    s = await repo.create(metadata={"claudeCode": {"sessionId": "p1"}})
    await s.append_message(user("go"))
    for n, agent in enumerate(("a1", "missing")):
        call = tool_call(f"t{n}", "Task", prompt=f"look {n}", description=f"Look {n}")
        await s.append_message(assistant("", call))
        await s.append_message(
            {
                "role": "toolResult",
                "toolCallId": f"t{n}",
                "toolName": "Task",
                "content": [{"type": "text", "text": f"found {n}"}],
                "details": {"agentId": agent, "status": "completed"},
                "timestamp": 5,
            }
        )
    sub = await repo.create("p1-agent-a1")
    await sub.append_message(user("look 0"))
    with client(repo) as c:
        html = c.get(f"/s/{s.id}").text
    check_page(html)
    links = re.findall(r'class="agent-link" href="([^"]+)"', html)
    assert links == ["/s/p1-agent-a1"], "only the sub-agent whose session is in the store"
