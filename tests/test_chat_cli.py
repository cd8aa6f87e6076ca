"""``sessiontree chat`` end to end: the CLI, the official SDKs, a local model server, a store."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from _agent_support import check_all
from llm_servers import Fail, FakeLLMServer, Say
from session_files import VENDORED
from sessiontree import open_repo
from sessiontree.cli import cli
from sessiontree.entries import Entry, MessageEntry, ModelChangeEntry
from sessiontree.messages import AssistantMessage

PI_SESSION = VENDORED / "pi" / "agent-sessions_pi-small.v3.jsonl"
CLAUDE_SESSION = VENDORED / "claude-code" / "5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl"


def run(store: str, *args: str, code: int = 0, input: str | None = None) -> Result:
    result = CliRunner().invoke(
        cli,
        ["--store", store, *args],
        input=input,
        env={"COLUMNS": "200", "SESSIONTREE_URL": None, "SESSIONTREE_MODEL": None},
    )
    assert result.exit_code == code, f"{result.stdout}\n{result.stderr}\n{result.exception!r}"
    return result


def messages(store: str) -> list[list[Entry]]:
    async def read() -> list[list[Entry]]:
        repo = open_repo(store)
        try:
            out: list[list[Entry]] = []
            for info in await repo.list():
                session = await repo.open(info.id)
                out.append([e for e in await session.get_branch()])
            return out
        finally:
            await repo.close()

    return asyncio.run(read())


def test_chat_streams_a_reply_and_a_second_chat_continues_the_session(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'st.db'}"
    with FakeLLMServer(
        Say(text="Hello there, how can I help?", chunk=5), Say(text="Sure: 42.")
    ) as server:
        first = run(
            store,
            "chat",
            "--model",
            "openai/fake-model",
            "--base-url",
            f"{server.url}/v1",
            "-m",
            "hi",
        )
        assert first.stdout.strip() == "Hello there, how can I help?"
        [branch] = messages(store)
        assert isinstance(branch[0], ModelChangeEntry) and branch[0].model_id == "fake-model"
        session_id = first.stderr.split()[1]
        # the model comes from the session now; the whole history is sent
        second = run(
            store, "chat", session_id[:8], "--base-url", f"{server.url}/v1", "-m", "answer?"
        )
        assert second.stdout.strip() == "Sure: 42."
        sent = server.requests[1].body["messages"]
        assert [m["role"] for m in sent] == ["user", "assistant", "user"]
        assert sent[1]["content"] == "Hello there, how can I help?"
        check_all("openai", server)
    [branch] = messages(store)
    assert [e.message.role for e in branch if isinstance(e, MessageEntry)] == [
        "user",
        "assistant",
        "user",
        "assistant",
    ]


def test_interactive_chat_with_anthropic(tmp_path: Path) -> None:
    store = f"jsonl://{tmp_path / 'js'}"
    with FakeLLMServer(Say(thinking="pondering", text="one"), Say(text="two")) as server:
        result = run(
            store,
            "chat",
            "--model",
            "anthropic/fake-claude",
            "--base-url",
            server.url,
            input="first\n\nsecond\n/exit\n",
        )
        assert "one" in result.stdout and "two" in result.stdout and "pondering" in result.stdout
        assert len(server.requests) == 2
        check_all("anthropic", server)


@pytest.mark.parametrize("path", [PI_SESSION, CLAUDE_SESSION], ids=["pi", "claude-code"])
def test_chat_continues_an_imported_session(tmp_path: Path, path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'st.db'}"
    run(store, "import", str(path))
    [branch] = messages(store)
    before = len(branch)
    api, model, base = ("anthropic", "anthropic/fake-claude", None)
    with FakeLLMServer(Say(text="continuing where we left off")) as server:
        base = server.url
        session_id = asyncio.run(_first_id(store))
        result = run(store, "chat", session_id, "--model", model, "--base-url", base, "-m", "go on")
        assert "continuing where we left off" in result.stdout
        check_all(api, server)
        assert "go on" in str(server.requests[0].body["messages"][-1])
    [branch] = messages(store)
    assert len(branch) == before + 3  # model change, user, assistant


async def _first_id(store: str) -> str:
    repo = open_repo(store)
    try:
        return (await repo.list())[0].id
    finally:
        await repo.close()


def test_chat_without_a_model_says_how_to_name_one(tmp_path: Path) -> None:
    result = run(f"sqlite:///{tmp_path / 'st.db'}", "chat", "-m", "hi", code=2)
    assert "--model provider/model" in result.stderr


def test_chat_reports_a_failed_reply_and_exits_1(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'st.db'}"
    with FakeLLMServer(Fail(400, "model 'nope' does not exist")) as server:
        result = run(
            store,
            "chat",
            "--model",
            "openai/nope",
            "--base-url",
            f"{server.url}/v1",
            "-m",
            "hi",
            code=1,
        )
        assert "does not exist" in result.stderr


def test_chat_auth_failure_is_one_line(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'st.db'}"
    with FakeLLMServer(Fail(401, "invalid api key")) as server:
        result = run(
            store,
            "chat",
            "--model",
            "openai/m",
            "--base-url",
            f"{server.url}/v1",
            "-m",
            "hi",
            code=1,
        )
        assert result.stderr.strip().splitlines()[-1].startswith("error: [auth]")


def test_chat_runs_as_a_command(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'st.db'}"
    with FakeLLMServer(Say(text="streamed through a real process")) as server:
        env = {**os.environ, "SESSIONTREE_URL": store, "SESSIONTREE_MODEL": "openai/fake-model"}
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "sessiontree",
                "chat",
                "--base-url",
                f"{server.url}/v1",
                "-m",
                "hi",
            ],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() == "streamed through a real process"


class _Output:
    """Everything a process writes to one pipe, read by a thread so the test can wait on it."""

    def __init__(self, pipe: Any) -> None:
        self.text = ""
        self._changed = threading.Condition()
        self._thread = threading.Thread(target=self._read, args=(pipe,), daemon=True)
        self._thread.start()

    def _read(self, pipe: Any) -> None:
        while chunk := pipe.read1(4096):
            with self._changed:
                self.text += chunk.decode("utf-8", "replace")
                self._changed.notify_all()

    def join(self) -> None:
        """Wait until the pipe is closed (the process ended) and read to its end."""
        self._thread.join(timeout=30)

    def wait_for(self, needle: str, *, after: int = 0, timeout: float = 30) -> int:
        """Wait until ``needle`` appears at or after offset ``after``; returns where it ends."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while (at := self.text.find(needle, after)) < 0:
                left = deadline - time.monotonic()
                assert left > 0, f"{needle!r} never came; got {self.text!r}"
                self._changed.wait(left)
            return at + len(needle)


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT to a child is POSIX")
def test_ctrl_c_aborts_only_the_streaming_reply_and_ctrl_c_at_the_prompt_ends_the_chat(
    tmp_path: Path,
) -> None:
    store = f"sqlite:///{tmp_path / 'st.db'}"
    with FakeLLMServer(
        Say(text="partial words that never finish", chunk=4, hang_after=3),
        Say(text="the second reply"),
    ) as server:
        env = {
            **os.environ,
            "SESSIONTREE_URL": store,
            "SESSIONTREE_MODEL": "openai/fake-model",
            "PYTHONUNBUFFERED": "1",
            "COLUMNS": "200",
        }
        with subprocess.Popen(
            [sys.executable, "-m", "sessiontree", "chat", "--base-url", f"{server.url}/v1"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
        ) as chat:
            try:
                assert chat.stdin is not None
                out, err = _Output(chat.stdout), _Output(chat.stderr)
                at = out.wait_for("> ")
                chat.stdin.write(b"first\n")
                chat.stdin.flush()
                at = out.wait_for("part", after=at)  # the reply is streaming, then hangs
                chat.send_signal(signal.SIGINT)
                err.wait_for("(aborted)")
                at = out.wait_for("> ", after=at)  # the prompt is back; the process runs on
                assert chat.poll() is None
                chat.stdin.write(b"second\n")
                chat.stdin.flush()
                at = out.wait_for("the second reply", after=at)
                out.wait_for("> ", after=at)
                chat.send_signal(signal.SIGINT)  # at the empty prompt: the chat ends
                assert chat.wait(timeout=30) == 0, err.text
                out.join()
                err.join()
            except BaseException:  # leave no chat process behind a failed check
                chat.kill()
                raise
        assert len(server.requests) == 2
        check_all("openai", server)
        assert server.requests[1].body["messages"][-1]["content"] == "second"
    [branch] = messages(store)
    stored = [e.message for e in branch if isinstance(e, MessageEntry)]
    assert [m.role for m in stored] == ["user", "assistant", "user", "assistant"]
    aborted, finished = stored[1], stored[3]
    assert isinstance(aborted, AssistantMessage) and aborted.stop_reason == "aborted"
    partial = "".join(getattr(b, "text", "") for b in aborted.content)
    assert partial.startswith("part") and "partial words that never finish".startswith(partial)
    assert isinstance(finished, AssistantMessage) and finished.stop_reason == "stop"


def test_eof_at_the_prompt_ends_an_interactive_chat(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'st.db'}"
    with FakeLLMServer(Say(text="only reply")) as server:
        result = run(
            store, "chat", "--model", "openai/m", "--base-url", f"{server.url}/v1", input="hi\n"
        )
        assert "only reply" in result.stdout and len(server.requests) == 1
