"""The usage page's numbers: tokens and cost over time stacked by model, agent or project, by
project and per session, from :func:`sessiontree.usage.usage_report` (the numbers
``sessiontree usage --timezone UTC`` prints).

:func:`usage_page` is pure (it prices with ``genai-prices`` data); the viewer runs it in a
worker thread. The charts over time are drawn in the browser by the vendored uPlot
(``static/usage.js`` reads :meth:`UsagePage.chart_data`); the project and session rankings
are bars of HTML.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import Any, Literal

from sessiontree.errors import InvalidArgumentError
from sessiontree.usage import PricedCall, UsageReport, UsageRow, usage_report
from sessiontree.web.listing import ListFilter

__all__ = ["MAX_SERIES", "PERIODS", "STACKS", "TOP", "UsagePage", "period_start", "usage_page"]

Period = Literal["day", "week", "month"]
Stack = Literal["model", "agent", "project"]
PERIODS: tuple[Period, ...] = ("day", "week", "month")
"""The time steps of the charts over time."""
STACKS: tuple[Stack, ...] = ("model", "agent", "project")
"""What the charts over time can be stacked by."""
MAX_SERIES = 8
"""Stacked series drawn; the rest are added up as ``other``."""
TOP = 20
"""Projects and sessions ranked on the page (most tokens first)."""
OTHER = "other"
"""The series of everything past the :data:`MAX_SERIES` biggest."""


def period_start(key: str, period: Period) -> datetime:
    """The UTC midnight a ``usage`` row key starts at: ``YYYY-MM-DD``, ``YYYY-Www`` (its
    Monday) or ``YYYY-MM`` (its first day).

    Raises:
        ValueError: ``key`` is not a key of ``period``.
    """
    if period == "day":
        day = date.fromisoformat(key)
    elif period == "week":
        year, week = key.split("-W")
        day = date.fromisocalendar(int(year), int(week), 1)
    else:
        year, month = key.split("-")
        day = date(int(year), int(month), 1)
    return datetime(day.year, day.month, day.day, tzinfo=UTC)


@dataclass
class Series:
    """One stacked series: its tokens and cost at each step of :attr:`UsagePage.steps`."""

    label: str
    """The model, agent or project (``other``: the rest added up)."""
    tokens: list[int]
    """Tokens (all four kinds) per step."""
    cost: list[float]
    """US dollars per step."""


@dataclass
class Ranked:
    """A bar of the project or session ranking."""

    key: str
    """The project, or the session id."""
    title: str
    """What the bar is labelled with (the session's name or first message)."""
    row: UsageRow
    """Its sums."""
    share: float
    """Its tokens over the biggest bar's, 0..1."""


@dataclass
class UsagePage:
    """Everything the usage page shows for one filter."""

    period: Period
    """The step of the charts over time."""
    stack: Stack
    """What they are stacked by."""
    report: UsageReport
    """The rows by ``period`` (each split by ``stack`` in its ``parts``), as ``usage --by
    period --json`` has them."""
    steps: list[str]
    """The row keys, oldest first."""
    series: list[Series]
    """The stacked series, most tokens first."""
    projects: list[Ranked]
    """The :data:`TOP` projects with most tokens."""
    sessions: list[Ranked]
    """The :data:`TOP` sessions with most tokens."""
    project_count: int
    """Projects with calls (ranked or not)."""
    session_count: int
    """Sessions with calls (ranked or not)."""

    def chart_data(self) -> dict[str, Any]:
        """The charts over time as ``usage.js`` draws them: ``x`` (each step's start, Unix
        seconds), ``steps`` (row keys), ``period``, ``stack`` and ``series`` (``label``,
        ``tokens``, ``cost``)."""
        return {
            "x": [int(period_start(k, self.period).timestamp()) for k in self.steps],
            "steps": self.steps,
            "period": self.period,
            "stack": self.stack,
            "series": [
                {"label": s.label, "tokens": s.tokens, "cost": [round(c, 6) for c in s.cost]}
                for s in self.series
            ],
        }


def _ranked(report: UsageReport, titles: Mapping[str, str]) -> list[Ranked]:
    rows = sorted(report.rows, key=lambda r: (-r.total_tokens, -r.cost_usd, r.key))[:TOP]
    biggest = max((r.total_tokens for r in rows), default=0) or 1
    return [Ranked(r.key, titles.get(r.key, r.key), r, r.total_tokens / biggest) for r in rows]


def usage_page(
    calls: Sequence[PricedCall],
    flt: ListFilter,
    *,
    period: Period = "day",
    stack: Stack = "model",
    titles: Mapping[str, str] | None = None,
) -> UsagePage:
    """The usage page of ``calls`` (in store order) kept by ``flt``; days in UTC.

    Args:
        calls: every call of the store (:func:`sessiontree.usage.collect_usage` order),
            priced (:func:`sessiontree.usage.price_calls`).
        flt: the agent, project, model and date filters (its ``q`` and ``label`` apply to
            sessions, so the caller drops those sessions' calls first).
        period: the step of the charts over time (:data:`PERIODS`).
        stack: what they are stacked by (:data:`STACKS`).
        titles: session id → the title of its bar (default: the id).

    Raises:
        InvalidArgumentError: ``period`` or ``stack`` is not one of the choices.
    """
    if period not in PERIODS or stack not in STACKS:
        raise InvalidArgumentError(
            f"usage charts step by one of {', '.join(PERIODS)} and stack by one of "
            f"{', '.join(STACKS)}, not {period!r} and {stack!r}"
        )
    kept = [c for c in calls if flt.keeps_call(c.call)]
    since, until = flt.since, flt.until
    report = usage_report(kept, by=period, stack=stack, since=since, until=until)
    steps = [r.key for r in report.rows]
    totals: dict[str, int] = {}
    for row in report.rows:
        for key, part in row.parts.items():
            totals[key] = totals.get(key, 0) + part.total_tokens
    order = sorted(totals, key=lambda k: (-totals[k], k))
    shown = order if len(order) <= MAX_SERIES else order[: MAX_SERIES - 1]
    series = [Series(k, [], []) for k in shown]
    rest = Series(OTHER, [], []) if len(shown) < len(order) else None
    for row in report.rows:
        for s in series:
            found = row.parts.get(s.label)
            s.tokens.append(found.total_tokens if found else 0)
            s.cost.append(found.cost_usd if found else 0.0)
        if rest is not None:
            others = [p for k, p in row.parts.items() if k not in shown]
            rest.tokens.append(sum(p.total_tokens for p in others))
            rest.cost.append(sum(p.cost_usd for p in others))
    if rest is not None:
        series.append(rest)
    by_project = usage_report(kept, by="project", since=since, until=until)
    by_session = usage_report(kept, by="session", since=since, until=until)
    return UsagePage(
        period=period,
        stack=stack,
        report=report,
        steps=steps,
        series=series,
        projects=_ranked(by_project, {}),
        sessions=_ranked(by_session, titles or {}),
        project_count=len(by_project.rows),
        session_count=len(by_session.rows),
    )
