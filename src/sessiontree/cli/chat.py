"""``sessiontree chat``: continue a stored session with a model, streaming the reply.

Any session works — one made here, or an imported Claude Code, Codex or pi session: the
context is built from its leaf as for any other, and the replies are appended under it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import Iterator
from typing import Any

import click

from sessiontree.cli._common import EXIT_ERROR, App, repo_command
from sessiontree.errors import AgentHarnessError, ModelError
from sessiontree.messages import AssistantMessage

__all__ = ["chat_cmd"]

MODEL_ENV = "SESSIONTREE_MODEL"
"""The environment variable naming the model when ``--model`` is not given."""


def _model_name(given: str | None, recorded: Any) -> str:
    if given:
        return given
    if os.environ.get(MODEL_ENV):
        return os.environ[MODEL_ENV]
    if recorded is not None and recorded.provider in ("openai", "anthropic"):
        return f"{recorded.provider}/{recorded.model_id}"
    hint = f" (the session last used {recorded.provider}/{recorded.model_id})" if recorded else ""
    raise click.UsageError(
        f"which model? Give --model provider/model (e.g. openai/gpt-4.1 or "
        f"anthropic/claude-sonnet-4-5) or set ${MODEL_ENV}{hint}"
    )


class _Printer:
    """Prints the streamed reply: text as it arrives, thinking dimmed, errors on stderr."""

    def __init__(self, app: App) -> None:
        self.app = app
        self.open = False

    def __call__(self, event: Any) -> None:
        out = self.app.out
        if event.type == "message_update":
            text = getattr(event.delta, "text", None)
            thinking = getattr(event.delta, "thinking", None)
            if text:
                out.print(text, end="", markup=False, highlight=False)
                self.open = True
            elif thinking:
                out.print(thinking, end="", style="dim italic", markup=False, highlight=False)
                self.open = True
        elif event.type == "message_end" and isinstance(event.message, AssistantMessage):
            if self.open:
                out.print()
                self.open = False
            message = event.message
            if message.stop_reason == "error":
                self.app.err.print(f"error: {message.error_message}", markup=False)
            elif message.stop_reason == "aborted":
                self.app.err.print("(aborted)", style="dim")
        elif event.type == "compaction_start":
            self.app.err.print("(compacting the context…)", style="dim")
        elif event.type == "retry_scheduled":
            self.app.err.print(
                f"(retrying in {event.data['delay_s']:.1f} s: {event.data['error']})",
                style="dim",
                markup=False,
            )


@contextlib.contextmanager
def _ctrl_c_aborts(harness: Any) -> Iterator[None]:
    """While the block runs, Ctrl-C (SIGINT) aborts the harness's current reply instead of
    ending the process; :meth:`AgentHarness.abort` persists the partial reply.

    Where the loop cannot take the signal (not the main thread, or no signal support) Ctrl-C
    keeps its default behaviour.
    """
    loop = asyncio.get_running_loop()
    aborts: set[asyncio.Task[Any]] = set()  # held so a running abort is not collected

    def on_sigint() -> None:
        task = loop.create_task(harness.abort())
        aborts.add(task)
        task.add_done_callback(aborts.discard)

    previous = signal.getsignal(signal.SIGINT)
    try:
        loop.add_signal_handler(signal.SIGINT, on_sigint)
    except (NotImplementedError, RuntimeError, ValueError):
        yield
        return
    try:
        yield
    finally:
        loop.remove_signal_handler(signal.SIGINT)
        if previous is not None:  # asyncio.run's own handler, which cancels the command
            signal.signal(signal.SIGINT, previous)


def _read_line(app: App) -> str | None:
    """The next line typed at the prompt; ``None`` when the user ends the chat (EOF, or
    Ctrl-C at the prompt)."""
    try:
        previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    except ValueError:  # not the main thread: Ctrl-C is not ours to handle
        previous = None
    try:
        return app.out.input("[bold]> [/bold]")
    except (EOFError, KeyboardInterrupt):
        app.out.print()
        return None
    finally:
        if previous is not None:
            signal.signal(signal.SIGINT, previous)


@click.command("chat")
@click.argument("session", required=False)
@click.option(
    "--model",
    "model_name",
    metavar="PROVIDER/MODEL",
    default=None,
    help=f"openai/<model> (any OpenAI-compatible server with --base-url) or anthropic/<model>. "
    f"Default: ${MODEL_ENV}, else the model the session last used.",
)
@click.option(
    "--base-url",
    default=None,
    metavar="URL",
    help="The API root, e.g. http://localhost:11434/v1 for Ollama. Keys come from "
    "OPENAI_API_KEY / ANTHROPIC_API_KEY.",
)
@click.option(
    "-m",
    "--message",
    "messages",
    multiple=True,
    metavar="TEXT",
    help="Send TEXT and exit (repeat for several turns); without it, an interactive prompt.",
)
@click.option("--system", "system_prompt", default=None, help="A system prompt for this chat.")
@repo_command
async def chat_cmd(
    app: App,
    session: str | None,
    model_name: str | None,
    base_url: str | None,
    messages: tuple[str, ...],
    system_prompt: str | None,
) -> int | None:
    """Continue SESSION (an id prefix or name; a new session when left out) with a model.

    The reply streams as it is written; every message is stored in the session as it
    completes, so a chat can be resumed, forked or shown later. In an interactive chat
    Ctrl-C during a reply stops that reply (what was written so far is kept, marked
    aborted) and the prompt comes back; Ctrl-C or Ctrl-D at the prompt, or /exit, ends it.
    """
    from sessiontree.harness import AgentHarness
    from sessiontree.models import resolve_model

    # Nothing is written (no session created, nothing appended) until the model is known to
    # work as far as can be told without a model call: a missing or rejected key, an
    # unusable base URL or an unknown model ends the command here.
    target = await app.session(session) if session is not None else None
    recorded = (await target.build_context()).model if target is not None else None
    name = _model_name(model_name, recorded)
    options: dict[str, Any] = {"base_url": base_url} if base_url else {}
    try:
        model: Any = resolve_model(name, **options)
    except ModelError as exc:
        raise _model_failure(exc, name) from exc
    created = False
    try:
        check = getattr(model, "check", None)
        if check is not None:
            try:
                await check()
            except ModelError as exc:
                raise _model_failure(exc, name) from exc
        if target is None:
            target = await app.repo.create()
            app.sessions.append(target)
            created = True
        harness = AgentHarness(target, model=model, system_prompt=system_prompt)
        if recorded is None or (recorded.provider, recorded.model_id) != (
            model.provider,
            model.model_id,
        ):
            await harness.set_model(model)
        harness.subscribe(_Printer(app))
        app.err.print(f"session {target.id} · {name}", style="dim", markup=False)
        last: AssistantMessage | None = None
        try:
            if messages:
                for text in messages:
                    last = await harness.prompt(text)
            else:
                while (line := _read_line(app)) is not None:
                    if line.strip() in ("/exit", "/quit"):
                        break
                    if line.strip():
                        with _ctrl_c_aborts(harness):
                            last = await harness.prompt(line)
        except AgentHarnessError as exc:
            if exc.code != "auth":
                raise
            if created and last is None:
                # the server refused the key at the first call: the session this command
                # made holds nothing but that attempt
                await app.repo.delete(target.id)
            cause = exc.__cause__
            if isinstance(cause, ModelError):
                raise _model_failure(cause, name) from exc
            raise click.ClickException(f"{exc} — {_KEY_HINT}") from exc
    finally:
        await model.aclose()
    return EXIT_ERROR if last is not None and last.stop_reason == "error" else None


_KEY_HINT = "set OPENAI_API_KEY / ANTHROPIC_API_KEY or check --base-url"


def _model_failure(exc: ModelError, name: str) -> click.ClickException:
    """The one-line CLI error for a model that cannot work: ``[auth]``/``[config]``/... and
    what to do about it."""
    provider = name.partition("/")[0]
    if exc.kind == "auth":
        env = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}.get(provider)
        if env is None:
            hint = _KEY_HINT
        elif env in exc.detail:
            hint = "check --base-url"
        else:
            hint = f"set {env} or check --base-url"
    elif exc.kind == "config":
        hint = "check --model and --base-url"
    else:
        return click.ClickException(f"[{exc.kind}] {exc}")
    return click.ClickException(f"[{exc.kind}] {exc} — {hint}")
