"""What every ``sessiontree`` command shares: the store, id prefixes, errors, output.

* :class:`CliState` — the global options (``--store``, ``--debug``) carried in ``ctx.obj``;
* :func:`repo_command` — turns an ``async def body(app, **options)`` into a click command that
  opens the store, runs the body in one event loop and closes the store;
* :func:`resolve_session` / :func:`resolve_entry` — ids abbreviated to a unique prefix
  (``git``-style) or a unique suffix (what :class:`ShortIds` prints), with a one-line error
  listing the candidates otherwise;
* :func:`error_line` — the one line printed for an error (no traceback unless ``--debug``);
* :func:`echo_json` — JSON output through orjson.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import os
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, TypeVar

import click

from sessiontree import _json as exact_json
from sessiontree.errors import (
    PrefixError,
    SessionTreeError,
)
from sessiontree.lookup import (
    ShortIds,
    plural,
    resolve_entry,
    resolve_session,
    short_id_length,
    short_ids,
)

if TYPE_CHECKING:
    from rich.console import Console

    from sessiontree.repos.base import SessionRepo
    from sessiontree.session import Session
    from sessiontree.summarizers.base import Summarizer

__all__ = [
    "EXIT_ERROR",
    "EXIT_USAGE",
    "App",
    "CliState",
    "PrefixError",
    "ShortIds",
    "check_store_url",
    "echo_json",
    "error_line",
    "open_summarizer",
    "plural",
    "read_command",
    "repo_command",
    "resolve_entry",
    "scope_options",
    "resolve_session",
    "short_id_length",
    "short_ids",
    "store_option",
    "key_file_option",
    "summarizer_options",
]

EXIT_ERROR = 1
"""Exit status of a failed command (a sessiontree error, or problems found by ``verify``)."""
EXIT_USAGE = 2
"""Exit status of a command line click could not parse (click's own convention)."""


T = TypeVar("T")


@dataclass
class CliState:
    """The global options, shared through ``click.Context.obj``.

    Attributes:
        store: the store URL from ``--store`` / ``SESSIONTREE_URL``; ``None`` = the default store.
        debug: print tracebacks instead of one-line errors.
        repo_factory: opens the repository; tests may replace it (default :func:`open_repo`).
        key_file: the key file of an encrypted store (``--key-file``); ``None``: the keys of
            ``$SESSIONTREE_KEYS`` / ``$SESSIONTREE_KEY_FILE``, if any.
    """

    store: str | None = None
    debug: bool = False
    repo_factory: Callable[[str | None], SessionRepo] | None = None
    key_file: str | None = None


@dataclass
class App:
    """What a command body receives: the open repository and the two consoles."""

    repo: SessionRepo
    state: CliState
    out: Console
    err: Console
    sessions: list[Session] = field(default_factory=list)

    async def session(self, ref: str) -> Session:
        """:func:`resolve_session` on this store; the session is closed when the command ends."""
        found = await resolve_session(self.repo, ref)
        self.sessions.append(found)
        return found

    async def close(self) -> None:
        """Close the sessions opened through :meth:`session`, then the store."""
        try:
            for s in self.sessions:
                await s.close()
        finally:
            await self.repo.close()


PIPE_WIDTH = 1000
"""Console width (characters) when the output is not a terminal: lines are not wrapped or cut,
so ids and paths stay whole for ``grep`` (``$COLUMNS`` is ignored then)."""


def _console(stderr: bool) -> Console:
    """A rich console on stdout/stderr: the terminal's width, or :data:`PIPE_WIDTH` on a pipe."""
    from rich.console import Console

    console = Console(stderr=stderr, highlight=False, soft_wrap=False)
    if not console.is_terminal:
        console.width = PIPE_WIDTH
    return console


def open_store(state: CliState, *, read_only: bool = False) -> SessionRepo:
    """Open the repository named by ``--store`` (or the default store).

    ``read_only``: for commands that only read; a store that does not exist is an error
    then, never created. The default store (no ``--store``, no ``SESSIONTREE_URL``) is the
    exception: before anything was stored in it, it reads as an empty store (nothing is
    created).

    Raises:
        StorageError: an unknown URL scheme. MissingExtraError: a driver is not installed.
    """
    if state.repo_factory is not None:
        return state.repo_factory(state.store)
    from sessiontree.repos import default_store_path, open_repo

    fresh = read_only and state.store is None and not os.environ.get("SESSIONTREE_URL")
    if fresh and not default_store_path().exists():
        # a fresh install: nothing was stored yet, so every read answers "nothing"
        from sessiontree.repos import MemoryRepo

        return MemoryRepo()
    keys = None
    if state.key_file is not None:
        from sessiontree.storage.encryption import KeyRing

        keys = KeyRing.from_file(state.key_file)
    return open_repo(state.store, read_only=read_only, keys=keys)


def repo_command(
    body: Callable[..., Awaitable[int | None]],
) -> Callable[..., None]:
    """Wrap ``async def body(app, **options) -> exit code | None`` as a click callback.

    The store is opened before and closed after the body, in one ``asyncio.run``; a non-zero
    return value becomes the exit status. For commands that write to the store (it is
    created when missing); commands that only read use :func:`read_command`.
    """
    return _command(body, read_only=False)


def read_command(
    body: Callable[..., Awaitable[int | None]],
) -> Callable[..., None]:
    """:func:`repo_command` for a command that only reads the store: it is opened read-only,
    so a store that does not exist (a mistyped path) is an error instead of a new, empty
    store, and a store on read-only media can be read."""
    return _command(body, read_only=True)


def check_store_url(store: str | None) -> str | None:
    """``store`` itself; an empty or blank URL is a usage error (``--store``)."""
    if store is not None and not store.strip():
        raise click.BadParameter(
            "the store URL is empty (give e.g. sqlite:///file.db, or leave --store out for "
            "the default store)",
            param_hint="--store",
        )
    return store


def key_file_option(fn: Callable[..., T]) -> Callable[..., T]:
    """Add ``--key-file FILE`` to a command or the group: the key ring of an encrypted store
    (``id:base64key`` lines, the first the current key; docs/storage.md "Encryption at
    rest"), kept in the :class:`CliState` before the store is opened."""

    def keep(ctx: click.Context, _param: click.Parameter, value: str | None) -> None:
        if value is not None:
            ctx.ensure_object(CliState).key_file = value

    return click.option(
        "--key-file",
        default=None,
        metavar="FILE",
        envvar="SESSIONTREE_KEY_FILE",
        expose_value=False,
        callback=keep,
        help="The key ring of an encrypted store (id:base64key lines, the first current). "
        "Default: $SESSIONTREE_KEY_FILE, or the pairs in $SESSIONTREE_KEYS.",
    )(fn)


def store_option(fn: Callable[..., T]) -> Callable[..., T]:
    """Add ``--store URL`` to a command: the same option as the group's, so it may come
    before or after the command name (after wins)."""
    return click.option(
        "--store",
        "store",
        default=None,
        metavar="URL",
        callback=lambda _ctx, _param, value: check_store_url(value),
        expose_value=True,
        help="The store (as the global --store; default: $SESSIONTREE_URL, else the default "
        "store).",
    )(fn)


def _command(body: Callable[..., Awaitable[int | None]], *, read_only: bool) -> Callable[..., None]:
    @functools.wraps(body)
    def callback(store: str | None = None, **options: Any) -> None:
        state = click.get_current_context().find_object(CliState) or CliState()
        if store is not None:
            state = replace(state, store=store)

        async def run() -> int | None:
            repo = open_store(state, read_only=read_only)
            app = App(repo, state, _console(False), _console(True))
            try:
                return await body(app, **options)
            finally:
                await app.close()

        code = asyncio.run(run())
        if code:
            raise click.exceptions.Exit(code)

    return store_option(callback)


def scope_options(*, project: bool = True) -> Callable[[Callable[..., T]], Callable[..., T]]:
    """Add ``--user``, ``--app`` (and with ``project``, ``--project``) to a command body:
    given any, the body's ``app.repo`` is the view of the store restricted to that scope
    (:func:`sessiontree.repos.scoped`), so the command sees no other scope's session.

    Put it directly above the ``async def`` body, under :func:`repo_command` or
    :func:`read_command` (they carry the options over to the command).
    """

    def decorate(body: Callable[..., T]) -> Callable[..., T]:
        @functools.wraps(body)
        def scoped_body(app: App, **options: Any) -> T:
            user = options.pop("scope_user")
            app_name = options.pop("scope_app")
            proj = options.pop("scope_project", None)
            if user is not None or app_name is not None or proj is not None:
                from sessiontree.repos.scoped import scoped

                # the same sessions list: the command's sessions are closed with the store
                view = scoped(app.repo, user_id=user, app=app_name, project=proj)
                app = dataclasses.replace(app, repo=view)
            return body(app, **options)

        wrapped: Callable[..., T] = scoped_body
        if project:
            wrapped = click.option(
                "--project",
                "scope_project",
                default=None,
                metavar="PROJECT",
                help="Only sessions of this project (its metadata project, else its working "
                "directory).",
            )(wrapped)
        wrapped = click.option(
            "--app",
            "scope_app",
            default=None,
            metavar="APP",
            help="Only sessions of this application (metadata app).",
        )(wrapped)
        return click.option(
            "--user",
            "scope_user",
            default=None,
            metavar="USER",
            help="Only sessions of this user (metadata userId).",
        )(wrapped)

    return decorate


def error_line(exc: BaseException) -> str:
    """The single line printed for ``exc``: ``error: <message>`` with newlines folded."""
    if isinstance(exc, click.ClickException):
        message = exc.format_message()
    else:
        message = str(exc) or type(exc).__name__
        if not isinstance(exc, SessionTreeError):
            message = f"{type(exc).__name__}: {message}"
    return "error: " + " ".join(message.split())


def echo_json(data: Any) -> None:
    """Print ``data`` as indented JSON (orjson; non-JSON values via ``str``) on stdout."""
    text = exact_json.dumps(data, indent=True, default=str).decode()
    click.echo(text)


SUMMARIZER_CHOICES = ("extractive", "openai", "anthropic")


def summarizer_options(fn: Callable[..., T]) -> Callable[..., T]:
    """Add ``--summarizer``, ``--model``, ``--base-url`` and ``--instructions`` to a command."""
    fn = click.option(
        "--instructions",
        default=None,
        help="Extra instructions handed to the summariser (e.g. what to keep).",
    )(fn)
    fn = click.option(
        "--base-url",
        default=None,
        metavar="URL",
        help="API endpoint for openai/anthropic (any OpenAI-compatible server works).",
    )(fn)
    fn = click.option(
        "--model", default=None, metavar="MODEL", help="Model id (needed for openai/anthropic)."
    )(fn)
    fn = click.option(
        "--summarizer",
        type=click.Choice(SUMMARIZER_CHOICES),
        default="extractive",
        show_default=True,
        help="Who writes the summary: offline extractive, or an LLM through the vendor SDK.",
    )(fn)
    return fn


@contextlib.asynccontextmanager
async def open_summarizer(
    kind: str, model: str | None, base_url: str | None
) -> AsyncIterator[Summarizer]:
    """The summariser named on the command line (docs/compaction.md), closed (HTTP client) on exit.

    API keys come from the SDKs' usual environment variables
    (``OPENAI_API_KEY``, ``ANTHROPIC_API_KEY``); a local ``--base-url`` needs none.

    Raises:
        click.UsageError: an LLM summariser without ``--model``, or ``--model``/``--base-url``
            with the extractive one.
        MissingExtraError: the vendor SDK is not installed.
    """
    if kind == "extractive":
        if model is not None or base_url is not None:
            raise click.UsageError("--model and --base-url need --summarizer openai|anthropic")
        from sessiontree.summarizers.extractive import ExtractiveSummarizer

        yield ExtractiveSummarizer()
        return
    if not model:
        raise click.UsageError(f"--summarizer {kind} needs --model")
    if kind == "openai":
        from sessiontree.summarizers.openai import OpenAISummarizer

        async with OpenAISummarizer(model, base_url=base_url) as llm:
            yield llm
        return
    from sessiontree.summarizers.anthropic import AnthropicSummarizer

    async with AnthropicSummarizer(model, base_url=base_url) as claude:
        yield claude


def stderr_is_terminal() -> bool:
    """Whether stderr is an interactive terminal (progress bars only then)."""
    return sys.stderr.isatty()
