"""Run the real coding agents (Claude Code, Codex, pi) against a scripted local model.

The agents are the npm packages pinned in ``tests/node_agents/package.json``, installed by
``npm ci --prefix tests/node_agents`` (``.ci/run`` does it) into
``tests/node_agents/node_modules``.
Each run gets a throwaway home (``HOME`` and the agent's own config directory:
``CLAUDE_CONFIG_DIR``, ``CODEX_HOME``, ``PI_CODING_AGENT_DIR``), a working directory with one
file in it (:data:`NOTE_TEXT` in ``note.txt``), and a :class:`~llm_servers.FakeLLMServer` on
127.0.0.1 speaking the agent's wire protocol (Claude Code: Anthropic messages; Codex: the OpenAI
Responses API; pi: OpenAI chat completions through a ``models.json`` provider). Nothing leaves
the machine: the environment is built from scratch, without the caller's API keys, and the
agents' telemetry and update checks are switched off.

The scripted model (:func:`tool_then_answer`) answers each turn with reasoning and one tool
call, or several in one reply (Claude Code: ``Read`` of ``note.txt``; Codex: ``exec_command`` of
``cat note.txt``; pi: ``read`` of ``note.txt``), then, once the request carries the results,
with the text answer of the turn (``answer 1``, ``answer 2``, … per turn), each with fixed token
counts. :meth:`AgentSandbox.ccusage` reads the sandbox's sessions with the pinned ccusage.

Use::

    with AgentSandbox("pi", tmp_path) as box:
        first = box.run("read the note")
        second = box.resume("and again")
    first.session_file, second.requests, ...
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from llm_servers import FakeLLMServer, ReceivedRequest, Say

AGENTS_DIR = Path(__file__).resolve().parent / "node_agents"
"""``tests/node_agents``: the pinned npm packages (``package.json``, ``package-lock.json``)."""
BIN = AGENTS_DIR / "node_modules" / ".bin"
TIMEOUT_S = 120.0
"""The bound on one agent process, in seconds (it is killed with its process group after)."""

NOTE_TEXT = "the note says 42"
"""The content of ``note.txt`` in the working directory, which the tool call reads."""

THINKING = "I should read the note first"
"""The reasoning text every scripted answer starts with."""
CALL_INPUT_TOKENS, ANSWER_INPUT_TOKENS, CACHED_TOKENS, OUTPUT_TOKENS = 100, 120, 30, 7
"""The usage the scripted model reports (uncached input of a tool call / of an answer, cached
input, output), so imports and usage tools can be checked against it."""

AGENTS = ("claude-code", "codex", "pi")
MODELS = {"claude-code": "claude-opus-4-5", "codex": "fake-codex", "pi": "fake-pi"}
"""The model each agent is told to use (and the fake model reports back)."""


def pinned_versions() -> dict[str, str]:
    """The exact versions ``tests/node_agents/package.json`` pins: ``{package name: version}``."""
    manifest = json.loads((AGENTS_DIR / "package.json").read_text())
    return dict(manifest["dependencies"])


COMMANDS = {"claude-code": "claude", "codex": "codex", "pi": "pi"}
CCUSAGE = {"claude-code": "ccusage", "codex": "ccusage-codex", "pi": "ccusage-pi"}
"""The ccusage command that reads each agent's session files (``ccusage``, ``@ccusage/codex``,
``@ccusage/pi``)."""


def missing(agent: str, *, ccusage: bool = False) -> str | None:
    """Why ``agent`` (with ``ccusage``: also its ccusage reader) cannot run here (``None`` when
    it can): no node, or a package not installed."""
    if shutil.which("node") is None:
        return "node is not on PATH (the agents are npm packages)"
    commands = [COMMANDS[agent], *([CCUSAGE[agent]] if ccusage else [])]
    for command in commands:
        if not (BIN / command).exists():
            return f"{BIN / command} is missing: run `npm ci --prefix tests/node_agents`"
    return None


# --------------------------------------------------------------------------- the scripted model


def _last_input(request: ReceivedRequest) -> tuple[str, Any]:
    """The API a model request came through and the last item of its conversation."""
    body = request.body if isinstance(request.body, dict) else {}
    if "input" in body:  # OpenAI Responses
        items = body["input"] if isinstance(body["input"], list) else []
        return "responses", items[-1] if items else None
    messages = body.get("messages") or []
    api = "anthropic" if request.path.split("?")[0].endswith("/messages") else "openai"
    return api, messages[-1] if messages else None


def carries_tool_result(request: ReceivedRequest) -> bool:
    """Whether the conversation in ``request`` ends with a tool result (in any of the three
    wire formats)."""
    api, last = _last_input(request)
    if not isinstance(last, dict):
        return False
    if api == "responses":
        return last.get("type") == "function_call_output"
    if api == "openai":
        return last.get("role") == "tool"
    content = last.get("content")
    return isinstance(content, list) and any(
        isinstance(b, dict) and b.get("type") == "tool_result" for b in content
    )


@dataclass
class ToolThenAnswer:
    """A scripted model: each turn ``parallel`` tool calls in one reply, then a text answer
    once the results are back.

    Every answer starts with the thinking :attr:`thinking` and reports usage: ``input_tokens``
    uncached input (:data:`CALL_INPUT_TOKENS` for a tool call, :data:`ANSWER_INPUT_TOKENS` for
    an answer), :data:`CACHED_TOKENS` cached input, :data:`OUTPUT_TOKENS` output.

    Attributes:
        call: ``(name, arguments)`` of the tool call every turn starts with.
        model: the model name every answer reports.
        thinking: the reasoning text of every answer (none when empty).
        parallel: the number of (identical) tool calls of each turn's first reply.
        calls: the ids of the tool calls made so far (``call_1``, ``call_2``, …).
        answers: the text answers given so far (``answer 1``, ``answer 2``, …).
    """

    call: tuple[str, dict[str, Any]]
    model: str
    thinking: str = THINKING
    parallel: int = 1
    calls: list[str] = field(default_factory=list)
    answers: list[str] = field(default_factory=list)

    def __call__(self, request: ReceivedRequest) -> Say:
        calls: tuple[tuple[str, str, dict[str, Any]], ...]
        if carries_tool_result(request):
            self.answers.append(f"answer {len(self.answers) + 1}")
            text, calls, input_tokens = self.answers[-1], (), ANSWER_INPUT_TOKENS
        else:
            name, arguments = self.call
            ids = [f"call_{len(self.calls) + n}" for n in range(1, self.parallel + 1)]
            self.calls += ids
            calls = tuple((call_id, name, arguments) for call_id in ids)
            text, input_tokens = "let me look", CALL_INPUT_TOKENS
        return Say(
            text=text,
            thinking=self.thinking,
            tool_calls=calls,
            model=self.model,
            input_tokens=input_tokens,
            cached_tokens=CACHED_TOKENS,
            output_tokens=OUTPUT_TOKENS,
        )


def tool_then_answer(agent: str, workdir: Path, *, parallel: int = 1) -> ToolThenAnswer:
    """The script for ``agent``: read ``workdir/note.txt`` with its own tool (``parallel``
    times in one reply), then answer."""
    note = workdir / "note.txt"
    call = {
        "claude-code": ("Read", {"file_path": str(note)}),
        "codex": ("exec_command", {"cmd": "cat note.txt", "workdir": str(workdir)}),
        "pi": ("read", {"path": str(note)}),
    }[agent]
    return ToolThenAnswer(call=call, model=MODELS[agent], parallel=parallel)


# --------------------------------------------------------------------------- a run


@dataclass(frozen=True)
class TokenTotals:
    """Token counts summed over a session: ``input`` uncached input, ``cache_read`` and
    ``cache_write`` cached input read and written, ``output`` output."""

    input: int
    cache_read: int
    cache_write: int
    output: int


@dataclass(frozen=True)
class AgentRun:
    """One non-interactive turn of an agent.

    Attributes:
        agent: ``claude-code``, ``codex`` or ``pi``.
        argv: the command that ran.
        returncode / stdout / stderr: the process's.
        session_file: the session file the agent wrote (or appended to).
        requests: the HTTP requests the agent sent to the model server during this turn.
    """

    agent: str
    argv: list[str]
    returncode: int
    stdout: str
    stderr: str
    session_file: Path
    requests: list[ReceivedRequest]


class AgentError(AssertionError):
    """An agent process failed, timed out, or wrote no session file (its output included)."""


def _run(argv: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run ``argv`` bounded by :data:`TIMEOUT_S`; on timeout kill its whole process group."""
    process = subprocess.Popen(
        argv,
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        stdout, stderr = process.communicate(timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        stdout, stderr = process.communicate()
        raise AgentError(
            f"{argv[0]} did not finish in {TIMEOUT_S:.0f} s\nstdout:\n{stdout}\nstderr:\n{stderr}"
        ) from None
    return subprocess.CompletedProcess(argv, process.returncode, stdout, stderr)


class AgentSandbox:
    """A throwaway home, working directory and scripted model server for one agent.

    ``run(prompt)`` starts a new session; ``resume(prompt)`` appends a turn to the session of
    the last run; ``resume_session(prompt, session_id, path)`` to a session written into
    :attr:`home` by someone else (a handoff). Sandboxes given the same ``workdir`` share the
    project directory (and ``note.txt``). Use as a context manager (the model server stops on exit).

    Attributes:
        agent: ``claude-code``, ``codex`` or ``pi``.
        home: ``HOME`` of the agent process.
        workdir: its working directory (holds ``note.txt``).
        server: the fake model server (every request it received is in ``server.requests``).
        script: the scripted model answering the server's model requests.
    """

    def __init__(
        self,
        agent: str,
        root: Path,
        script: Callable[[ReceivedRequest], Say] | None = None,
        *,
        workdir: Path | None = None,
    ) -> None:
        if agent not in AGENTS:
            raise ValueError(f"unknown agent {agent!r}: expected one of {AGENTS}")
        self.agent = agent
        self.home = root / "home"
        self.workdir = workdir or root / "work"
        self.home.mkdir(parents=True)
        self.workdir.mkdir(parents=True, exist_ok=True)
        (self.workdir / "note.txt").write_text(NOTE_TEXT + "\n")
        self.script = script or tool_then_answer(agent, self.workdir)
        self.server = FakeLLMServer(self.script)
        self.session_id: str | None = None
        self._session_file: Path | None = None

    def __enter__(self) -> AgentSandbox:
        self.server.start()
        self._configure()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.stop()

    # ----------------------------------------------------------------------- per agent

    @property
    def config_dir(self) -> Path:
        """The agent's own directory: ``CLAUDE_CONFIG_DIR``, ``CODEX_HOME`` or
        ``PI_CODING_AGENT_DIR``, inside :attr:`home`."""
        return (
            self.home / {"claude-code": ".claude", "codex": ".codex", "pi": ".pi/agent"}[self.agent]
        )

    def _configure(self) -> None:
        self.config_dir.mkdir(parents=True, exist_ok=True)
        if self.agent == "codex":
            (self.config_dir / "config.toml").write_text(
                f'model = "{MODELS["codex"]}"\n'
                'model_provider = "fake"\n'
                "check_for_update_on_startup = false\n"
                f'chatgpt_base_url = "{self.server.url}/backend-api/"\n'
                "[model_providers.fake]\n"
                'name = "fake"\n'
                f'base_url = "{self.server.url}/v1"\n'
                'wire_api = "responses"\n'
                'env_key = "FAKE_API_KEY"\n'
                "request_max_retries = 0\n"
                "stream_max_retries = 0\n"
                # no lookups of plugins, apps, models or updates on the internet
                "[features]\n"
                "apps = false\n"
                "plugins = false\n"
                "remote_plugin = false\n"
                "plugin_sharing = false\n"
                "api_key_model_discovery = false\n"
                "in_app_updates = false\n"
                "skill_mcp_dependency_install = false\n"
                "[analytics]\n"
                "enabled = false\n"
            )
        elif self.agent == "pi":
            provider = {
                "baseUrl": f"{self.server.url}/v1",
                "api": "openai-completions",
                "apiKey": "test",
                "compat": {"supportsDeveloperRole": False, "supportsReasoningEffort": False},
                "models": [{"id": MODELS["pi"]}],
            }
            (self.config_dir / "models.json").write_text(
                json.dumps({"providers": {"fake": provider}})
            )

    def env(self) -> dict[str, str]:
        """The agent process's environment, built from scratch (no API keys of the caller)."""
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(self.home),
            "LANG": "C.UTF-8",
            "TERM": "dumb",
            "NO_COLOR": "1",
            "CI": "1",
        }
        if self.agent == "claude-code":
            env |= {
                "CLAUDE_CONFIG_DIR": str(self.config_dir),
                "ANTHROPIC_BASE_URL": self.server.url,
                "ANTHROPIC_API_KEY": "test",
                "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
                "DISABLE_TELEMETRY": "1",
                "DISABLE_AUTOUPDATER": "1",
                "DISABLE_ERROR_REPORTING": "1",
            }
        elif self.agent == "codex":
            env |= {"CODEX_HOME": str(self.config_dir), "FAKE_API_KEY": "test"}
        else:
            env |= {"PI_CODING_AGENT_DIR": str(self.config_dir), "PI_OFFLINE": "1"}
        return env

    def argv(self, prompt: str, *, resume: bool) -> list[str]:
        """The command line of one non-interactive turn (``resume``: of the last session)."""
        if self.agent == "claude-code":
            argv = [str(BIN / "claude"), "-p", prompt, "--model", MODELS["claude-code"]]
            argv += ["--output-format", "json"]
            if resume:
                return [*argv, "--resume", str(self.session_id)]
            self.session_id = str(uuid.uuid4())
            return [*argv, "--session-id", self.session_id]
        if self.agent == "codex":
            flags = ["--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox"]
            flags += ["--json"]
            if resume:
                return [str(BIN / "codex"), "exec", "resume", *flags, str(self.session_id), prompt]
            return [str(BIN / "codex"), "exec", *flags, prompt]
        argv = [str(BIN / "pi"), "--provider", "fake", "--model", MODELS["pi"], "-p", prompt]
        if resume:
            return [*argv, "--session", str(self._session_file)]
        return argv

    def _find_session_file(self) -> Path:
        if self.agent == "claude-code":
            found = sorted(self.config_dir.glob(f"projects/*/{self.session_id}.jsonl"))
        elif self.agent == "codex":
            found = sorted(self.config_dir.glob("sessions/**/rollout-*.jsonl"))
        else:
            found = sorted(self.config_dir.glob("sessions/**/*.jsonl"))
        if len(found) != 1:
            raise AgentError(f"{self.agent} wrote {len(found)} session files: {found}")
        return found[0]

    def _session_id_of(self, path: Path) -> str:
        if self.agent == "codex":  # the header line: {"type": "session_meta", "payload": {id}}
            header = json.loads(path.read_text().splitlines()[0])
            return str(header["payload"]["id"])
        return str(self.session_id)

    # ----------------------------------------------------------------------- turns

    def _turn(self, prompt: str, *, resume: bool) -> AgentRun:
        if resume and self._session_file is None:
            raise ValueError("resume() needs an earlier run() in this sandbox")
        argv = self.argv(prompt, resume=resume)
        before = len(self.server.requests)
        done = _run(argv, self.env(), self.workdir)
        requests = self.server.requests[before:]
        if done.returncode != 0:
            raise AgentError(
                f"{' '.join(argv)} exited {done.returncode}\n"
                f"stdout:\n{done.stdout}\nstderr:\n{done.stderr}"
            )
        path = self._find_session_file()
        self._session_file = path
        self.session_id = self._session_id_of(path)
        return AgentRun(self.agent, argv, done.returncode, done.stdout, done.stderr, path, requests)

    def run(self, prompt: str) -> AgentRun:
        """One non-interactive turn in a new session; raises :class:`AgentError` when the agent
        fails, times out, or leaves other than one session file."""
        return self._turn(prompt, resume=False)

    def ccusage(self) -> TokenTotals:
        """What ccusage (the pinned version, offline) counts for every session in the sandbox.

        Claude Code: ``ccusage session``; Codex: ``ccusage-codex session`` (its ``inputTokens``
        include the cached ones); pi: ``ccusage-pi session --piPath``. Raises
        :class:`AgentError` when the command fails.
        """
        argv = [str(BIN / CCUSAGE[self.agent]), "session", "--json"]
        if self.agent == "pi":
            argv += ["--piPath", str(self.config_dir / "sessions")]
        else:
            argv.append("--offline")
        done = _run(argv, self.env(), self.workdir)
        if done.returncode != 0:
            raise AgentError(f"{' '.join(argv)} exited {done.returncode}\n{done.stderr}")
        totals = json.loads(done.stdout)["totals"]
        if self.agent == "codex":
            cached = totals["cachedInputTokens"]
            return TokenTotals(totals["inputTokens"] - cached, cached, 0, totals["outputTokens"])
        return TokenTotals(
            totals["inputTokens"],
            totals["cacheReadTokens"],
            totals["cacheCreationTokens"],
            totals["outputTokens"],
        )

    def resume(self, prompt: str) -> AgentRun:
        """One more non-interactive turn appended to the session of the last :meth:`run`."""
        return self._turn(prompt, resume=True)

    def resume_session(self, prompt: str, session_id: str, path: Path) -> AgentRun:
        """One non-interactive turn appended to session ``session_id`` kept in ``path`` (a
        file in this sandbox's agent directory that this sandbox did not write, e.g. a
        handed-off session)."""
        self.session_id, self._session_file = session_id, path
        return self._turn(prompt, resume=True)
