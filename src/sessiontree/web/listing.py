"""The session list's rows, filters and search highlighting (the viewer's ``/`` and ``/usage``).

A store's listing (:meth:`SessionRepo.list`) already gives, without reading entries, the id,
name, times, counts, first message and metadata; the agent (the import format in the
metadata) and the project (``cwd``) come from it. The columns a listing does not hold — the
models used, the user turns, the tokens, the cost and the labels — are read from the session's
entries once and kept in a :class:`SummaryCache` until the session changes (its
``modified_at`` or ``entry_count`` moves), so a list page reads only the sessions it shows that
it has not seen, and a filter on a model or a label reads each session once per server.

Tokens and cost are :mod:`sessiontree.usage`'s: the session's calls
(:func:`~sessiontree.usage.session_calls`) priced by
:func:`~sessiontree.usage.usage_report`, the same numbers ``sessiontree usage --by session``
prints.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime

from markupsafe import Markup, escape

from sessiontree.entries import Entry, LabelEntry, MessageEntry
from sessiontree.errors import InvalidArgumentError, SessionNotFoundError
from sessiontree.messages import AssistantMessage, UserMessage
from sessiontree.metadata import SessionInfo, project_name
from sessiontree.repos.base import SessionRepo
from sessiontree.tree import labels_of
from sessiontree.usage import (
    PricedCall,
    UsageCall,
    agent_of,
    price_calls,
    session_calls,
    usage_report,
)
from sessiontree.web.views import off_loop

__all__ = [
    "READ_BATCH",
    "ListFilter",
    "SessionSummary",
    "SummaryCache",
    "highlight",
    "project_name",
    "short_tokens",
    "summarize",
    "usd",
]


@dataclass(frozen=True)
class SessionSummary:
    """What the list shows of a session beyond its listing row, read from its entries."""

    id: str
    """The session id."""
    agent: str
    """The agent that wrote it (:func:`sessiontree.usage.agent_of`)."""
    project: str | None
    """Its working directory (``cwd``); ``None`` when not recorded."""
    models: tuple[str, ...]
    """The models of its assistant messages, most messages first."""
    turns: int
    """User messages (every branch)."""
    tokens: int
    """Tokens of its model calls: input, output, cache reads and writes added up."""
    cost_usd: float
    """US dollars of its model calls (recorded or priced, as ``sessiontree usage``)."""
    unpriced_calls: int
    """Calls with no recorded cost and no known price (their tokens count, no cost)."""
    labels: tuple[str, ...]
    """The labels its entries carry now, in entry order."""
    calls: tuple[PricedCall, ...] = field(repr=False)
    """Its model calls in entry order, priced once (for the usage page)."""


def summarize(info: SessionInfo, entries: Iterable[Entry]) -> SessionSummary:
    """The :class:`SessionSummary` of a session from its listing row and every entry. Pure."""
    items = list(entries)
    calls = price_calls(session_calls(info, items))
    report = usage_report(calls, by="session")
    models = Counter(
        e.message.model
        for e in items
        if isinstance(e, MessageEntry)
        and isinstance(e.message, AssistantMessage)
        and e.message.model
    )
    turns = sum(
        1 for e in items if isinstance(e, MessageEntry) and isinstance(e.message, UserMessage)
    )
    labels = labels_of(e for e in items if isinstance(e, LabelEntry))
    return SessionSummary(
        id=info.id,
        agent=agent_of(info),
        project=info.metadata.cwd,
        models=tuple(m for m, _ in models.most_common()),
        turns=turns,
        tokens=report.totals.total_tokens,
        cost_usd=report.totals.cost_usd,
        unpriced_calls=report.totals.unpriced_calls,
        labels=tuple(v for v in labels.values() if v),
        calls=tuple(calls),
    )


def _stamp(info: SessionInfo) -> tuple[datetime, int]:
    return (info.modified_at, info.entry_count)


READ_BATCH = 32
"""Sessions read before their summaries are made together in a worker thread."""


class SummaryCache:
    """Session id → :class:`SessionSummary`, each read once until the session changes.

    Holds every summary it made (a few hundred bytes and the session's calls each). The
    viewer's reader threads share one cache: it is changed and read only by single dict
    operations (each whole under the interpreter lock), so two readers missing the same
    session both read it and the later summary stays.
    """

    def __init__(self, repo: SessionRepo) -> None:
        self.repo = repo
        self._held: dict[str, tuple[tuple[datetime, int], SessionSummary]] = {}
        self.reads = 0
        """Sessions read so far (a summary made or remade)."""

    async def get(
        self, infos: Sequence[SessionInfo], repo: SessionRepo | None = None
    ) -> dict[str, SessionSummary]:
        """The summaries of ``infos`` (listing rows), reading the sessions not seen yet or
        changed since through ``repo`` (default the cache's: the viewer's readers each give
        their own connection to the same store); a session deleted since it was listed has
        none.

        Raises:
            StorageError: a session cannot be read.
        """
        missing = [
            i for i in infos if (held := self._held.get(i.id)) is None or held[0] != _stamp(i)
        ]
        for start in range(0, len(missing), READ_BATCH):
            batch = []
            for info in missing[start : start + READ_BATCH]:
                try:
                    session = await (repo or self.repo).open(info.id)
                except SessionNotFoundError:  # deleted since it was listed
                    self._held.pop(info.id, None)
                    continue
                try:
                    batch.append((info, await session.get_entries()))
                finally:
                    await session.close()
            # pricing and counting run in a worker thread: the server serves other pages
            made = await off_loop(lambda b=batch: [summarize(i, e) for i, e in b])
            self.reads += len(made)
            for (info, _), summary in zip(batch, made, strict=True):
                self._held[info.id] = (_stamp(info), summary)
        found = {i.id: self._held.get(i.id) for i in infos}
        return {sid: held[1] for sid, held in found.items() if held is not None}

    def known_models(self) -> list[str]:
        """Every model the summaries made so far name, sorted (the model filter's choices)."""
        return sorted({m for _, s in list(self._held.values()) for m in s.models})


def _day(value: str, name: str) -> date | None:
    if not value:
        return None
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise InvalidArgumentError(f"{name}: {value!r} is not a date (YYYY-MM-DD)") from None


@dataclass(frozen=True)
class ListFilter:
    """The list's and the usage page's filters; an empty field keeps everything.

    Dates are UTC days: a session is kept when the span from its creation to its last append
    touches ``since``..``until``; a model call (usage page) when it was made in it.
    """

    q: str = ""
    """Text the session's id, name or first message holds (any case)."""
    agent: str = ""
    """The agent (:data:`sessiontree.usage.AGENTS` value, or ``sessiontree``)."""
    project: str = ""
    """The working directory, exactly."""
    model: str = ""
    """A model the session used (its id, exactly)."""
    label: str = ""
    """Text one of the session's labels holds (any case)."""
    since: date | None = None
    """First UTC day kept."""
    until: date | None = None
    """Last UTC day kept."""

    @classmethod
    def from_query(cls, params: Mapping[str, str]) -> ListFilter:
        """The filter of a page's query string (``q``, ``agent``, ``project``, ``model``,
        ``label``, ``since``, ``until``).

        Raises:
            InvalidArgumentError: ``since``/``until`` is not a ``YYYY-MM-DD`` date, or
                ``since`` is after ``until``.
        """

        def get(key: str) -> str:
            return params.get(key, "").strip()

        since, until = _day(get("since"), "since"), _day(get("until"), "until")
        if since is not None and until is not None and since > until:
            raise InvalidArgumentError(f"the date range starts ({since}) after it ends ({until})")
        return cls(
            q=get("q"),
            agent=get("agent"),
            project=get("project"),
            model=get("model"),
            label=get("label"),
            since=since,
            until=until,
        )

    @property
    def active(self) -> bool:
        """Whether any field is set."""
        return any((self.q, self.agent, self.project, self.model, self.label)) or bool(
            self.since or self.until
        )

    @property
    def needs_entries(self) -> bool:
        """Whether keeping a session needs its summary (a model or label filter)."""
        return bool(self.model or self.label)

    def query(self, **change: str) -> dict[str, str]:
        """The non-empty fields as query parameters, with ``change`` applied."""
        params = {
            "q": self.q,
            "agent": self.agent,
            "project": self.project,
            "model": self.model,
            "label": self.label,
            "since": self.since.isoformat() if self.since else "",
            "until": self.until.isoformat() if self.until else "",
        }
        params.update(change)
        return {k: v for k, v in params.items() if v}

    def keeps_info(self, info: SessionInfo) -> bool:
        """Whether the listing row passes the filters that need no entries."""
        if self.agent and agent_of(info) != self.agent:
            return False
        if self.project and info.metadata.cwd != self.project:
            return False
        if self.since and info.modified_at.date() < self.since:
            return False
        if self.until and info.created_at.date() > self.until:
            return False
        if self.q:
            needle = self.q.lower()
            return any(
                needle in (t or "").lower() for t in (info.id, info.name, info.first_message)
            )
        return True

    def keeps_summary(self, summary: SessionSummary) -> bool:
        """Whether the session passes the model and label filters."""
        if self.model and self.model not in summary.models:
            return False
        if self.label:
            needle = self.label.lower()
            return any(needle in label.lower() for label in summary.labels)
        return True

    def keeps_call(self, call: UsageCall) -> bool:
        """Whether a model call passes the agent, project and model filters (the usage page;
        its dates go to :func:`~sessiontree.usage.usage_report`)."""
        return (
            (not self.agent or call.agent == self.agent)
            and (not self.project or call.project == self.project)
            and (not self.model or call.model == self.model)
        )


def highlight(text: str, query: str) -> Markup:
    """``text`` as safe HTML with every case-insensitive occurrence of ``query`` in
    ``<mark>``: the text is escaped piece by piece and only the marks are markup, so nothing
    in ``text`` or ``query`` becomes markup. A blank ``query`` marks nothing."""
    if not query.strip():
        return Markup(escape(text))
    parts = re.split(f"({re.escape(query)})", text, flags=re.IGNORECASE)
    out = [
        Markup("<mark>{}</mark>").format(part) if i % 2 else escape(part)
        for i, part in enumerate(parts)
        if part
    ]
    return Markup("").join(out)


def short_tokens(n: int) -> str:
    """A token count in at most four figures: ``812``, ``12.5k``, ``3.4M``, ``1.2B``."""
    for size, unit in ((1_000_000_000, "B"), (1_000_000, "M"), (1_000, "k")):
        if n >= size:
            value = n / size
            return f"{value:.1f}{unit}" if value < 100 else f"{value:,.0f}{unit}"
    return str(n)


def usd(dollars: float) -> str:
    """US dollars for a column: ``$0.0042`` below a cent, else ``$12.35`` (``$0`` for none)."""
    if dollars == 0:
        return "$0"
    return f"${dollars:.4f}" if dollars < 0.01 else f"${dollars:,.2f}"
