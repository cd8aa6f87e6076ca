"""``sessiontree usage`` and :mod:`sessiontree.usage`: every model call counted once, grouped,
priced from what the agent recorded, the user's prices or genai-prices (docs/usage.md)."""

from __future__ import annotations

import json
from datetime import UTC, date, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import genai_prices
import pytest
from click.testing import CliRunner

from session_files import VENDORED
from sessiontree import MemoryRepo, import_session, open_repo
from sessiontree.cli import cli
from sessiontree.errors import InvalidArgumentError
from sessiontree.usage import GROUPS, ModelPrice, collect_usage, price_calls, usage_report

DAY1 = int(datetime(2026, 3, 1, 23, 30, tzinfo=UTC).timestamp() * 1000)
DAY2 = int(datetime(2026, 3, 2, 9, 0, tzinfo=UTC).timestamp() * 1000)


def reply(
    model: str, ms: int, *, provider: str = "anthropic", cost: float | None = None, **tokens: int
) -> dict[str, Any]:
    usage: dict[str, Any] = {
        "input": tokens.get("input", 0),
        "output": tokens.get("output", 0),
        "cacheRead": tokens.get("cache_read", 0),
        "cacheWrite": tokens.get("cache_write", 0),
    }
    if cost is not None:
        usage["cost"] = {"total": cost}
    return {
        "role": "assistant",
        "content": [{"type": "text", "text": "ok"}],
        "provider": provider,
        "model": model,
        "usage": usage,
        "timestamp": ms,
    }


async def _store() -> MemoryRepo:
    repo = MemoryRepo()
    s = await repo.create(metadata={"cwd": "/work/app"})
    ask = await s.append_message({"role": "user", "content": "hi", "timestamp": DAY1})
    # a reply priced by genai-prices, then one the agent priced itself
    await s.append_message(reply("claude-sonnet-4-5", DAY1, input=1000, output=100, cache_read=800))
    await s.append_message(reply("claude-sonnet-4-5", DAY2, cost=0.5, input=10, output=10))
    # an abandoned branch: its call was made and paid for
    await s.navigate(ask)
    await s.append_message(reply("no-such-model-xyz", DAY2, provider="acme", input=7, output=3))
    # a summarising call recorded on a compaction
    await s.append_entry(
        {
            "type": "compaction",
            "parentId": await s.get_leaf_id(),
            "summary": "s",
            "tokensBefore": 10,
            "usage": {"input": 5, "output": 5},
            "timestamp": "2026-03-02T10:00:00.000Z",
        }
    )
    await s.close()
    return repo


def _genai(model: str, **tokens: int) -> float:
    price = genai_prices.calc_price(
        genai_prices.Usage(**tokens), model, provider_id="anthropic"
    ).total_price
    assert isinstance(price, Decimal)
    return float(price)


async def test_every_call_counts_once_with_its_cost() -> None:
    repo = await _store()
    calls = await collect_usage(repo)
    assert len(calls) == 4  # three replies, one on an abandoned branch, and a summary
    report = usage_report(calls, by="model", zone=UTC)
    rows = {r.key: r for r in report.rows}
    assert set(rows) == {"claude-sonnet-4-5", "no-such-model-xyz", "(unknown)"}
    sonnet = rows["claude-sonnet-4-5"]
    assert (sonnet.input_tokens, sonnet.output_tokens, sonnet.cache_read_tokens) == (1010, 110, 800)
    genai = _genai("claude-sonnet-4-5", input_tokens=1800, cache_read_tokens=800, output_tokens=100)
    assert sonnet.cost_usd == pytest.approx(genai + 0.5)
    assert rows["no-such-model-xyz"].unpriced_calls == 1
    assert rows["no-such-model-xyz"].cost_usd == 0
    assert report.totals.calls == 4 and report.totals.unpriced_calls == 2
    assert (
        report.totals.total_tokens
        == sum(r.total_tokens for r in report.rows)
        == 1010 + 110 + 800 + 10 + 10
    )
    assert report.sources == {"genai-prices": 1, "recorded": 1, "none": 2}
    assert "genai-prices" in report.price_source and genai_prices.__version__ in report.price_source


async def test_calls_priced_once_report_as_when_priced_in_the_report() -> None:
    repo = await _store()
    calls = await collect_usage(repo)
    priced = price_calls(calls)
    assert [p.source for p in priced].count("none") == 2
    for by in GROUPS:
        for stack in (None, "model", "day"):
            once = usage_report(priced, by=by, zone=UTC, stack=stack)
            each = usage_report(calls, by=by, zone=UTC, stack=stack)
            assert once.to_dict() == each.to_dict(), (by, stack)
            assert [r.parts for r in once.rows] == [r.parts for r in each.rows]
    ranged = usage_report(priced, by="day", since=date(2026, 3, 2), zone=UTC)
    assert ranged.to_dict() == usage_report(calls, by="day", since=date(2026, 3, 2)).to_dict()
    split = usage_report(priced, by="day", stack="model", zone=UTC)
    for row in split.rows:  # the parts of a row add up to it
        assert sum(p.total_tokens for p in row.parts.values()) == row.total_tokens
        assert sum(p.cost_usd for p in row.parts.values()) == pytest.approx(row.cost_usd)
    with pytest.raises(InvalidArgumentError, match="colour"):
        usage_report(calls, stack="colour")  # type: ignore[arg-type]


async def test_rows_by_day_follow_the_time_zone_and_the_date_range() -> None:
    calls = await collect_usage(await _store())
    utc = usage_report(calls, by="day", zone=UTC)
    assert [r.key for r in utc.rows] == ["2026-03-01", "2026-03-02"]
    from zoneinfo import ZoneInfo

    tokyo = usage_report(calls, by="day", zone=ZoneInfo("Asia/Tokyo"))  # 23:30 UTC is the 2nd
    assert [r.key for r in tokyo.rows] == ["2026-03-02"]
    only = usage_report(calls, by="month", since=date(2026, 3, 2), zone=UTC)
    assert only.totals.calls == 3 and [r.key for r in only.rows] == ["2026-03"]
    assert usage_report(calls, by="week", zone=UTC).rows[0].key == "2026-W09"
    with pytest.raises(InvalidArgumentError):
        usage_report(calls, since=date(2026, 3, 3), until=date(2026, 3, 1))


async def test_the_users_prices_come_before_the_bundled_ones() -> None:
    calls = await collect_usage(await _store())
    prices = {"no-such-model-xyz": ModelPrice(input=1_000_000, output=2_000_000)}
    report = usage_report(calls, by="model", zone=UTC, prices=prices)
    row = next(r for r in report.rows if r.key == "no-such-model-xyz")
    assert row.cost_usd == pytest.approx(7 + 6) and row.unpriced_calls == 0
    assert "your prices" in report.price_source


def test_the_cli_prints_the_json_shape_with_agents_named(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 's.db'}"
    runner = CliRunner()
    imported = runner.invoke(cli, ["--store", store, "import", str(VENDORED)])
    assert imported.exit_code == 0, imported.output
    result = runner.invoke(
        cli, ["--store", store, "usage", "--by", "agent", "--json", "--timezone", "UTC"]
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    keys = {
        "key",
        "input_tokens",
        "output_tokens",
        "cache_read_tokens",
        "cache_write_tokens",
        "total_tokens",
        "cost_usd",
    }
    assert all(keys <= set(row) for row in [*data["rows"], data["totals"]])
    agents = {row["key"] for row in data["rows"]}
    assert {"claude-code", "pi", "gemini-cli"} <= agents  # the codex sample records no usage
    for field in ("input_tokens", "output_tokens", "total_tokens", "cost_usd"):
        assert data["totals"][field] == pytest.approx(sum(r[field] for r in data["rows"]))
    assert data["price_source"] and data["time_zone"] == "UTC"

    table = runner.invoke(
        cli,
        ["--store", store, "usage", "--by", "model", "--timezone", "UTC"],
        env={"COLUMNS": "80"},
    )
    assert table.exit_code == 0, table.output
    assert "total" in table.stdout and all(len(line) <= 80 for line in table.stdout.splitlines())


async def test_a_claude_code_reply_over_several_lines_counts_once(tmp_path: Path) -> None:
    # Claude Code writes the usage of a reply on each line of it: counted once per message.id
    path = VENDORED / "claude-code" / "5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl"
    seen: dict[str, dict[str, int]] = {}
    for raw in path.read_bytes().splitlines():
        line = json.loads(raw)
        message = line.get("message") or {}
        if line.get("type") == "assistant" and isinstance(message.get("usage"), dict):
            seen[message["id"]] = message["usage"]  # the last line's copy
    output = sum(u.get("output_tokens", 0) for u in seen.values())
    cache_read = sum(u.get("cache_read_input_tokens", 0) for u in seen.values())
    async with open_repo(f"sqlite:///{tmp_path / 's.db'}") as repo:
        await import_session(path, repo)
        report = usage_report(await collect_usage(repo), by="session", zone=UTC)
    assert report.totals.calls == len(seen)
    assert (report.totals.output_tokens, report.totals.cache_read_tokens) == (output, cache_read)
