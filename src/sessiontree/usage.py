"""Token use and cost across a store's sessions: ``sessiontree usage`` (docs/usage.md).

Every model call a session records counts once: each assistant message with ``usage`` (a
reply an importer merged from several source lines is one message, so it counts once) and the
``usage`` of compaction and branch-summary entries (the summarising calls). Entries on
abandoned branches count too: the calls were made and paid for.

A call's cost is the one the agent recorded itself (``usage.cost.total``, as pi writes it, ``0``
included: a free model, or a proxy the user does not pay per token) when there is one; otherwise it is priced with the prices given by the user (``prices``: model id →
US dollars per million tokens), else with the ``genai-prices`` package (its bundled price
data), from the model and provider on the message, the time of the call, the speed it ran at
(``usage`` key ``speed``, Claude Code's fast mode) and the 1-hour cache writes among the cache
writes (``cacheWrite1h``). A call no price is known for adds its tokens
and no cost, and is counted in ``unpriced_calls``.

Tokens: ``input`` is the uncached input, ``cache_read``/``cache_write`` the prompt-cache
reads and writes, ``output`` the output (reasoning included), ``total`` the sum of the four.
Rows are grouped by day, ISO week or month of the call's time in a time zone, or by session,
model, agent or project (the session's working directory).
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, tzinfo
from typing import Any, Literal

from sessiontree.entries import BranchSummaryEntry, CompactionEntry, Entry, MessageEntry
from sessiontree.errors import InvalidArgumentError
from sessiontree.messages import AssistantMessage, Usage
from sessiontree.metadata import AGENTS, SessionInfo, agent_of, project_of
from sessiontree.repos.base import SessionRepo

__all__ = [
    "AGENTS",
    "GROUPS",
    "ModelPrice",
    "PricedCall",
    "UsageCall",
    "UsageReport",
    "UsageRow",
    "agent_of",
    "call_key",
    "collect_usage",
    "price_calls",
    "session_calls",
    "usage_report",
]

Group = Literal["day", "week", "month", "session", "model", "agent", "project"]
GROUPS: tuple[Group, ...] = ("day", "week", "month", "session", "model", "agent", "project")
"""What ``usage`` rows can be grouped by."""


@dataclass(frozen=True)
class ModelPrice:
    """A user's price for one model, in US dollars per million tokens."""

    input: float
    """Uncached input tokens."""
    output: float
    """Output tokens."""
    cache_read: float = 0.0
    """Input tokens read from a prompt cache."""
    cache_write: float = 0.0
    """Input tokens written to a prompt cache."""


@dataclass(frozen=True)
class UsageCall:
    """One model call a session recorded."""

    session_id: str
    """The session holding it."""
    entry_id: str
    """The entry that recorded it (an assistant message, a compaction, a branch summary)."""
    agent: str
    """The agent that wrote the session (:data:`AGENTS`, or ``sessiontree``)."""
    project: str | None
    """The session's project (:func:`~sessiontree.metadata.project_of`: its ``project``, else
    its working directory); ``None`` when not recorded."""
    provider: str | None
    """The provider of the model (e.g. ``anthropic``); ``None`` when unknown."""
    model: str | None
    """The model id; ``None`` when unknown (summaries record none)."""
    at: datetime
    """When the call was made: the message's time (aware, UTC)."""
    usage: Usage
    """The tokens, and the cost when the agent recorded one."""


@dataclass
class UsageRow:
    """Token and cost sums of one group of calls."""

    key: str
    """The group: a date, ``YYYY-Www``, ``YYYY-MM``, a session id, a model, an agent or a
    project; ``(unknown)`` when the calls do not say."""
    input_tokens: int = 0
    """Uncached input tokens."""
    output_tokens: int = 0
    """Output tokens."""
    cache_read_tokens: int = 0
    """Input tokens read from a prompt cache."""
    cache_write_tokens: int = 0
    """Input tokens written to a prompt cache."""
    cost_usd: float = 0.0
    """US dollars: recorded costs plus the priced ones."""
    calls: int = 0
    """Model calls."""
    unpriced_calls: int = 0
    """Calls with no recorded cost and no known price (their tokens are in, no cost)."""
    parts: dict[str, UsageRow] = field(default_factory=dict)
    """The row split by :func:`usage_report`'s ``stack`` group (key → sums); empty without
    one. Not in :meth:`to_dict`."""

    @property
    def total_tokens(self) -> int:
        """The four token counts added up."""
        return (
            self.input_tokens
            + self.output_tokens
            + self.cache_read_tokens
            + self.cache_write_tokens
        )

    def add(self, usage: Usage, cost: float | None) -> None:
        """Add one call's tokens and cost (``None``: no price known)."""
        self.input_tokens += usage.input
        self.output_tokens += usage.output
        self.cache_read_tokens += usage.cache_read
        self.cache_write_tokens += usage.cache_write
        self.calls += 1
        if cost is None:
            self.unpriced_calls += 1
        else:
            self.cost_usd += cost

    def to_dict(self) -> dict[str, Any]:
        """The row as ``usage --json`` prints it."""
        return {
            "key": self.key,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cache_read_tokens": self.cache_read_tokens,
            "cache_write_tokens": self.cache_write_tokens,
            "total_tokens": self.total_tokens,
            "cost_usd": round(self.cost_usd, 6),
            "calls": self.calls,
            "unpriced_calls": self.unpriced_calls,
        }


@dataclass
class UsageReport:
    """:func:`usage_report`: one row per group, sorted by key, and their totals."""

    by: Group
    """What the rows are grouped by."""
    rows: list[UsageRow]
    """The groups, sorted by key."""
    totals: UsageRow
    """Every call added up (``key`` ``total``)."""
    price_source: str
    """Where the costs come from: recorded by the agents, the user's prices, ``genai-prices``
    (its version)."""
    time_zone: str
    """The time zone of day, week and month keys."""
    sources: dict[str, int] = field(default_factory=dict)
    """How many calls were costed by each source (``recorded``, ``user``, ``genai-prices``,
    ``none``)."""

    def to_dict(self) -> dict[str, Any]:
        """The report as ``usage --json`` prints it."""
        return {
            "by": self.by,
            "rows": [r.to_dict() for r in self.rows],
            "totals": self.totals.to_dict(),
            "price_source": self.price_source,
            "time_zone": self.time_zone,
            "cost_sources": self.sources,
        }


def _when(entry: Entry, ms: Any) -> datetime:
    if isinstance(ms, int | float) and not isinstance(ms, bool) and ms > 0:
        return datetime.fromtimestamp(ms / 1000, UTC)
    return datetime.fromisoformat(entry.timestamp.replace("Z", "+00:00"))


def session_calls(info: SessionInfo, entries: Iterable[Entry]) -> list[UsageCall]:
    """The model calls recorded in one session's entries (any order), in their order."""
    agent = agent_of(info)
    out: list[UsageCall] = []
    for entry in entries:
        usage: Usage | None = None
        provider = model = None
        ms: Any = None
        if isinstance(entry, MessageEntry) and isinstance(entry.message, AssistantMessage):
            usage = entry.message.usage
            provider, model, ms = (
                entry.message.provider,
                entry.message.model,
                entry.message.timestamp,
            )
        elif isinstance(entry, CompactionEntry | BranchSummaryEntry):
            usage = entry.usage
        if usage is None:
            continue
        out.append(
            UsageCall(
                session_id=info.id,
                entry_id=entry.id,
                agent=agent,
                project=project_of(info.metadata),
                provider=provider,
                model=model,
                at=_when(entry, ms),
                usage=usage,
            )
        )
    return out


async def collect_usage(repo: SessionRepo, *, page: int = 500) -> list[UsageCall]:
    """Every model call recorded in ``repo``: reads every session's entries (not their files).

    Raises:
        StorageError: the store cannot be read.
    """
    calls: list[UsageCall] = []
    offset = 0
    while True:
        infos = await repo.list(limit=page, offset=offset)
        for info in infos:
            session = await repo.open(info.id)
            try:
                calls.extend(session_calls(info, await session.get_entries()))
            finally:
                await session.close()
        if len(infos) < page:
            return calls
        offset += page


class _Pricer:
    """Costs calls: recorded cost, else the user's price, else genai-prices, else none."""

    def __init__(self, prices: Mapping[str, ModelPrice]) -> None:
        self.prices = dict(prices)
        self.sources: dict[str, int] = {}
        self._genai: Any = None
        self._genai_loaded = False
        self.last = "none"
        """The source of the newest cost."""

    def _genai_prices(self) -> Any:
        if not self._genai_loaded:
            self._genai_loaded = True
            try:
                self._genai = importlib.import_module("genai_prices")
            except ImportError:  # pragma: no cover - a base dependency
                self._genai = None
        return self._genai

    def version(self) -> str | None:
        genai = self._genai_prices()
        return None if genai is None else str(getattr(genai, "__version__", "?"))

    def cost(self, call: UsageCall) -> float | None:
        usage = call.usage
        if usage.cost is not None:  # what the agent recorded, a free or unpriced call's 0 too
            return self._count("recorded", usage.cost.total)
        price = self.prices.get(call.model or "")
        if price is not None:
            dollars = (
                usage.input * price.input
                + usage.output * price.output
                + usage.cache_read * price.cache_read
                + usage.cache_write * price.cache_write
            ) / 1_000_000
            return self._count("user", dollars)
        genai = self._genai_prices()
        if genai is not None and call.model:
            extra = usage.model_extra or {}
            one_hour = extra.get("cacheWrite1h")
            tokens = genai.Usage(
                # genai-prices counts cached tokens inside input_tokens, and the 1-hour cache
                # writes inside the cache writes
                input_tokens=usage.input + usage.cache_read + usage.cache_write,
                cache_read_tokens=usage.cache_read,
                cache_write_tokens=usage.cache_write,
                cache_write_1h_tokens=one_hour if isinstance(one_hour, int) else 0,
                output_tokens=usage.output,
            )
            speed = extra.get("speed")
            context = {"speed": speed} if isinstance(speed, str) else None
            # the recorded provider first; a proxy or gateway name it does not know: any
            for provider in dict.fromkeys((call.provider or None, None)):
                try:
                    priced = genai.calc_price(
                        tokens,
                        call.model,
                        provider_id=provider,
                        genai_request_timestamp=call.at,
                        price_context=context,
                    )
                except (LookupError, ValueError, TypeError):
                    continue
                return self._count("genai-prices", float(priced.total_price))
        self.sources["none"] = self.sources.get("none", 0) + 1
        self.last = "none"
        return None

    def _count(self, source: str, dollars: float) -> float:
        self.sources[source] = self.sources.get(source, 0) + 1
        self.last = source
        return dollars


@dataclass(frozen=True)
class PricedCall:
    """A model call with its cost worked out once (:func:`price_calls`), so reports over the
    same calls (another grouping, another date range) need not price them again."""

    call: UsageCall
    """The call."""
    cost_usd: float | None
    """US dollars; ``None`` when no price is known."""
    source: str
    """Where the cost comes from: ``recorded``, ``user``, ``genai-prices`` or ``none``."""


def price_calls(
    calls: Iterable[UsageCall], *, prices: Mapping[str, ModelPrice] | None = None
) -> list[PricedCall]:
    """Each call with its cost, priced as :func:`usage_report` prices it. Pure."""
    pricer = _Pricer(prices or {})
    return [PricedCall(c, pricer.cost(c), pricer.last) for c in calls]


def call_key(call: UsageCall, by: Group, zone: tzinfo = UTC) -> str:
    """The row a call counts in when grouped ``by``: its date (``YYYY-MM-DD``), ISO week
    (``YYYY-Www``) or month (``YYYY-MM``) in ``zone``, or its session id, model, agent or
    project, ``(unknown)`` when the call does not say."""
    if by in ("day", "week", "month"):
        local: date = call.at.astimezone(zone).date()
        if by == "day":
            return local.isoformat()
        if by == "month":
            return f"{local.year:04d}-{local.month:02d}"
        year, week, _ = local.isocalendar()
        return f"{year:04d}-W{week:02d}"
    value = {
        "session": call.session_id,
        "model": call.model,
        "agent": call.agent,
        "project": call.project,
    }[by]
    return value or "(unknown)"


def usage_report(
    calls: Sequence[UsageCall | PricedCall],
    *,
    by: Group = "day",
    since: date | None = None,
    until: date | None = None,
    zone: tzinfo = UTC,
    prices: Mapping[str, ModelPrice] | None = None,
    stack: Group | None = None,
) -> UsageReport:
    """Group ``calls`` into rows and add them up. Pure (prices from ``genai-prices`` data).

    Args:
        calls: from :func:`collect_usage` or :func:`session_calls`; calls already priced
            (:func:`price_calls`) keep their cost.
        by: one of :data:`GROUPS`.
        since / until: keep calls made on or after / on or before these dates, in ``zone``.
        zone: the time zone of dates (the day a call was made in).
        prices: model id → the user's :class:`ModelPrice`, before ``genai-prices``.
        stack: also split each row by this group into :attr:`UsageRow.parts` (e.g. days
            by model, for a stacked chart); each call is priced once either way.

    Raises:
        InvalidArgumentError: ``by`` or ``stack`` is not one of :data:`GROUPS`, or ``since``
            is after ``until``.
    """
    for group in (by, stack or by):
        if group not in GROUPS:
            raise InvalidArgumentError(
                f"usage rows are grouped by one of {', '.join(GROUPS)}, not {group!r}"
            )
    if since is not None and until is not None and since > until:
        raise InvalidArgumentError(f"--since {since} is after --until {until}")
    pricer = _Pricer(prices or {})
    rows: dict[str, UsageRow] = {}
    totals = UsageRow("total")
    for item in calls:
        call = item.call if isinstance(item, PricedCall) else item
        day = call.at.astimezone(zone).date()
        if (since is not None and day < since) or (until is not None and day > until):
            continue
        if isinstance(item, PricedCall):
            cost = item.cost_usd
            pricer.sources[item.source] = pricer.sources.get(item.source, 0) + 1
        else:
            cost = pricer.cost(call)
        key = call_key(call, by, zone)
        row = rows.get(key)
        if row is None:
            row = rows[key] = UsageRow(key)
        row.add(call.usage, cost)
        if stack is not None:
            part = call_key(call, stack, zone)
            split = row.parts.get(part)
            if split is None:
                split = row.parts[part] = UsageRow(part)
            split.add(call.usage, cost)
        totals.add(call.usage, cost)
    version = pricer.version()
    named = ["costs the agents recorded"]
    if prices:
        named.append("your prices")
    named.append(f"genai-prices {version} (its bundled price data)" if version else "no price data")
    return UsageReport(
        by=by,
        rows=[rows[k] for k in sorted(rows)],
        totals=totals,
        price_source=", then ".join(named),
        time_zone=str(zone),
        sources=pricer.sources,
    )
