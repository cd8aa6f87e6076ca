"""``sessiontree usage``: tokens and cost of every model call in the store, grouped (docs/usage.md)."""

from __future__ import annotations

from datetime import UTC, date, datetime
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import click
import orjson
from rich.table import Table

from sessiontree.cli._common import App, echo_json, read_command, scope_options
from sessiontree.usage import GROUPS, ModelPrice, collect_usage, usage_report

__all__ = ["usage_cmd"]


def _day(value: str | None, option: str) -> date | None:
    if value is None:
        return None
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise click.BadParameter(f"{value!r} is not a date (YYYY-MM-DD)", param_hint=option)


def _zone(name: str | None) -> ZoneInfo | None:
    if name is None:
        return None
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise click.BadParameter(
            f"{name!r} is not a time zone (e.g. UTC, Europe/Paris)", param_hint="--timezone"
        )


def _prices(path: Path | None) -> dict[str, ModelPrice]:
    """The ``--prices`` file: ``{"model id": {"input": $/MTok, "output": …, "cache_read": …,
    "cache_write": …}}``."""
    if path is None:
        return {}
    try:
        raw = orjson.loads(path.read_bytes())
        return {
            str(model): ModelPrice(**{k: float(v) for k, v in price.items()})
            for model, price in raw.items()
        }
    except (OSError, orjson.JSONDecodeError, AttributeError, TypeError, ValueError) as exc:
        raise click.BadParameter(
            f"{path}: not a prices file ({exc}); expected "
            '{"model": {"input": 3.0, "output": 15.0, "cache_read": 0.3, "cache_write": 3.75}}',
            param_hint="--prices",
        )


def _tokens(n: int) -> str:
    if n >= 10_000_000:
        return f"{n / 1_000_000:,.0f}M"
    if n >= 100_000:
        return f"{n / 1_000:,.0f}k"
    return f"{n:,}"


@click.command("usage")
@click.option(
    "--by",
    type=click.Choice(GROUPS),
    default="day",
    show_default=True,
    help="Group the rows by the day, week or month of each call, or by session, model, agent "
    "or project.",
)
@click.option("--since", help="Only calls made on or after this date (YYYY-MM-DD).")
@click.option("--until", help="Only calls made on or before this date (YYYY-MM-DD).")
@click.option(
    "--timezone",
    "timezone_name",
    help="The time zone of dates (default: this machine's).",
)
@click.option(
    "--prices",
    type=click.Path(path_type=Path, dir_okay=False),
    help="A JSON file of model prices in US dollars per million tokens, used before the "
    "bundled prices.",
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
@read_command
@scope_options()
async def usage_cmd(
    app: App,
    by: str,
    since: str | None,
    until: str | None,
    timezone_name: str | None,
    prices: Path | None,
    as_json: bool,
) -> None:
    """Show the tokens and cost of every model call in the store.

    Each call counts once: the replies of every session (abandoned branches too) and the
    summaries compaction made. The cost is the one the agent recorded, else the price of the
    model (--prices, then the prices bundled with genai-prices); a call with no known price
    adds its tokens only. Tokens: input (uncached), output, cache read, cache write.
    """
    first, last = _day(since, "--since"), _day(until, "--until")
    zone = _zone(timezone_name)
    calls = await collect_usage(app.repo)
    tz = zone or datetime.now().astimezone().tzinfo or UTC
    report = usage_report(
        calls,
        by=by,  # type: ignore[arg-type]  # a click.Choice of GROUPS
        since=first,
        until=last,
        zone=tz,
        prices=_prices(prices),
    )
    if as_json:
        echo_json(report.to_dict())
        return
    table = Table(show_edge=False, pad_edge=False, box=None, header_style="bold")
    table.add_column(by, overflow="fold", max_width=36)
    for name in ("input", "output", "cache rd", "cache wr", "total"):
        table.add_column(name, justify="right", no_wrap=True)
    table.add_column("cost $", justify="right", no_wrap=True)
    for row in [*report.rows, report.totals]:
        table.add_row(
            row.key,
            _tokens(row.input_tokens),
            _tokens(row.output_tokens),
            _tokens(row.cache_read_tokens),
            _tokens(row.cache_write_tokens),
            _tokens(row.total_tokens),
            f"{row.cost_usd:,.2f}" + ("*" if row.unpriced_calls else ""),
            style="bold" if row is report.totals else None,
        )
    app.out.print(table)
    notes = [f"prices: {report.price_source}", f"dates in {report.time_zone}"]
    if report.totals.unpriced_calls:
        notes.append(f"* {report.totals.unpriced_calls} calls with no known price (tokens only)")
    app.err.print("; ".join(notes), highlight=False)
