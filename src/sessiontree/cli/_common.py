"""What every ``sessiontree`` command shares: the store, id prefixes, errors, output.

* :class:`CliState` — the global options (``--store``, ``--debug``) carried in ``ctx.obj``;
* :func:`repo_command` — turns an ``async def body(app, **options)`` into a click command that
  opens the store, runs the body in one event loop and closes the store;
* :func:`resolve_session` / :func:`resolve_entry` — ids abbreviated to a unique prefix
  (``git``-style), with a one-line error listing the candidates otherwise;
* :func:`error_line` — the one line printed for an error (no traceback unless ``--debug``);
* :func:`echo_json` — JSON output through orjson.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import itertools
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

import click

from sessiontree import _json as exact_json
from sessiontree.errors import InvalidEntryError, SessionNotFoundError, SessionTreeError

if TYPE_CHECKING:
    from rich.console import Console

    from sessiontree.entries import Entry
    from sessiontree.repos.base import SessionRepo
    from sessiontree.session import Session
    from sessiontree.summarizers.base import Summarizer

__all__ = [
    "EXIT_ERROR",
    "EXIT_USAGE",
    "App",
    "CliState",
    "PrefixError",
    "echo_json",
    "error_line",
    "open_summarizer",
    "repo_command",
    "resolve_entry",
    "resolve_session",
    "short_id_length",
    "summarizer_options",
]

EXIT_ERROR = 1
"""Exit status of a failed command (a sessiontree error, or problems found by ``verify``)."""
EXIT_USAGE = 2
"""Exit status of a command line click could not parse (click's own convention)."""

MIN_SHORT_ID = 8
"""Shortest id prefix shown by ``list`` and ``show``."""

T = TypeVar("T")


@dataclass
class CliState:
    """The global options, shared through ``click.Context.obj``.

    Attributes:
        store: the store URL from ``--store`` / ``SESSIONTREE_URL``; ``None`` = the default store.
        debug: print tracebacks instead of one-line errors.
        repo_factory: opens the repository; tests may replace it (default :func:`open_repo`).
    """

    store: str | None = None
    debug: bool = False
    repo_factory: Callable[[str | None], SessionRepo] | None = None


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


class PrefixError(SessionTreeError, LookupError):
    """A session or entry prefix matched nothing or more than one id."""


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


def open_store(state: CliState) -> SessionRepo:
    """Open the repository named by ``--store`` (or the default store).

    Raises:
        StorageError: an unknown URL scheme. MissingExtraError: a driver is not installed.
    """
    if state.repo_factory is not None:
        return state.repo_factory(state.store)
    from sessiontree.repos import open_repo

    return open_repo(state.store)


def repo_command(
    body: Callable[..., Awaitable[int | None]],
) -> Callable[..., None]:
    """Wrap ``async def body(app, **options) -> exit code | None`` as a click callback.

    The store is opened before and closed after the body, in one ``asyncio.run``; a non-zero
    return value becomes the exit status.
    """

    @functools.wraps(body)
    def callback(**options: Any) -> None:
        state = click.get_current_context().find_object(CliState) or CliState()

        async def run() -> int | None:
            app = App(open_store(state), state, _console(False), _console(True))
            try:
                return await body(app, **options)
            finally:
                await app.close()

        code = asyncio.run(run())
        if code:
            raise click.exceptions.Exit(code)

    return callback


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


def _candidates(ids: Sequence[str], limit: int = 8) -> str:
    shown = ", ".join(ids[:limit])
    return shown + (f", … ({len(ids) - limit} more)" if len(ids) > limit else "")


async def resolve_session(repo: SessionRepo, ref: str) -> Session:
    """Open the session whose id is ``ref``, starts with ``ref``, or (failing both) is named ``ref``.

    Cost: one ``open``; on a miss one ``list`` of every session (headers only).

    Raises:
        SessionNotFoundError: nothing matches.
        PrefixError: the prefix (or the name) is ambiguous; the message lists candidates.
    """
    if not ref:
        raise SessionNotFoundError(ref, "an empty session id")
    try:
        return await repo.open(ref)
    except (SessionNotFoundError, InvalidEntryError):
        pass
    infos = await repo.list()
    matches = sorted(i.id for i in infos if i.id.startswith(ref))
    if not matches:
        matches = sorted(i.id for i in infos if i.name == ref)
    if len(matches) == 1:
        return await repo.open(matches[0])
    if not matches:
        raise SessionNotFoundError(
            ref, "no session id starts with this prefix (see `sessiontree list`)"
        )
    raise PrefixError(
        f"session prefix {ref!r} is ambiguous: {len(matches)} sessions match: {_candidates(matches)}"
    )


def match_prefix(ids: Iterable[str], ref: str) -> list[str]:
    """The ids that start with ``ref`` (all of them when ``ref`` is an exact id: that one)."""
    found = [i for i in ids if i.startswith(ref)]
    if ref in found:
        return [ref]
    return sorted(found)


async def resolve_entry(session: Session, ref: str) -> Entry:
    """The entry whose id is ``ref`` or starts with ``ref``.

    Cost: one ``get_entry``; on a miss every entry of the session is read.

    Raises:
        EntryNotFoundError: nothing matches. PrefixError: ambiguous (candidates listed).
    """
    from sessiontree.errors import EntryNotFoundError

    if ref:
        exact = await session.get_entry(ref)
        if exact is not None:
            return exact
    entries = await session.get_entries()
    matches = match_prefix((e.id for e in entries), ref) if ref else []
    if len(matches) == 1:
        return next(e for e in entries if e.id == matches[0])
    if not matches:
        raise EntryNotFoundError(
            "no entry id starts with this prefix (see `sessiontree show`)",
            session_id=session.id,
            entry_id=ref,
        )
    raise PrefixError(
        f"entry prefix {ref!r} is ambiguous in session {session.id!r}: "
        f"{len(matches)} entries match: {_candidates(matches)}"
    )


def short_id_length(ids: Iterable[str], minimum: int = MIN_SHORT_ID) -> int:
    """The shortest prefix length (at least ``minimum``) at which every id is unique.

    Linear after a sort: the length needed is one more than the longest common prefix of
    two neighbours in sorted order.
    """
    ordered = sorted(set(ids))
    need = minimum
    for a, b in itertools.pairwise(ordered):
        n = 0
        for x, y in zip(a, b, strict=False):
            if x != y:
                break
            n += 1
        need = max(need, n + 1)
    return need


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
