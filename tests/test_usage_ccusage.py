"""``sessiontree usage`` agrees with ccusage on the same Claude Code, Codex and pi files
(docs/usage.md).

ccusage (the npm package pinned in ``tests/ccusage/package.json``; ``.ci/run`` installs it)
reads the files laid out as each agent keeps them; sessiontree imports the same files and
reports from its store. Tokens must agree within 1% and cost within 5%. The files: the
vendored sessions, and the collection's (fast mode, 1-hour cache writes, models from 2026,
Codex's cached input, pi's recorded costs) when ``../shared`` is beside the checkout.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from backends import unavailable
from session_files import SHARED, VENDORED
from sessiontree.cli import cli

CCUSAGE = Path(__file__).resolve().parent / "ccusage" / "node_modules" / ".bin" / "ccusage"
EXTRA = SHARED.parent / "sessions-extra"


def _files(agent: str) -> list[Path]:
    """The agent's real files: the vendored ones, and the collection's when it is there."""
    folders = [VENDORED / agent, SHARED / agent] + [
        EXTRA / s / agent for s in ("set1", "set2", "set3")
    ]
    found = {p.name: p for d in folders if d.is_dir() for p in sorted(d.glob("*.jsonl"))}
    return [found[n] for n in sorted(found)]


def _layout(agent: str, home: Path, files: list[Path]) -> list[str]:
    """Lay ``files`` out as ``agent`` keeps them under ``home``; the ccusage arguments."""
    if agent == "claude-code":
        where = home / "claude" / "projects" / "-work-project"
        args = ["claude"]
    elif agent == "codex":
        where = home / "codex" / "sessions" / "2026" / "06" / "17"
        args = ["codex"]
    else:
        where = home / "pi" / "sessions" / "--work-project--"
        args = ["pi", "--pi-path", str(home / "pi" / "sessions")]
    where.mkdir(parents=True)
    for k, path in enumerate(files):
        name = (
            path.name
            if agent != "codex"
            else f"rollout-2026-06-17T00-00-{k:02d}-{path.stem[-12:]}.jsonl"
        )
        shutil.copy(path, where / name)
    return args


def _ccusage(args: list[str], home: Path) -> dict[str, Any]:
    if shutil.which("node") is None or not CCUSAGE.exists():
        unavailable(f"ccusage is not installed ({CCUSAGE}): npm install --prefix tests/ccusage")
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(home),
        "CLAUDE_CONFIG_DIR": str(home / "claude"),
        "CODEX_HOME": str(home / "codex"),
        "NO_COLOR": "1",
    }
    done = subprocess.run(
        [str(CCUSAGE), *args[:1], "session", "--json", "--offline", "--timezone", "UTC", *args[1:]],
        env=env,
        capture_output=True,
        timeout=120,
        check=True,
    )
    data: dict[str, Any] = json.loads(done.stdout)
    return data


def _close(ours: float, theirs: float, share: float) -> bool:
    return abs(ours - theirs) <= share * max(abs(theirs), 1.0)


def _cost(session: dict[str, Any]) -> float:
    return float(session.get("totalCost", session.get("costUSD", 0.0)))


@pytest.mark.parametrize("agent", ["claude-code", "codex", "pi"])
def test_usage_agrees_with_ccusage_on_real_files(agent: str, tmp_path: Path) -> None:
    files = _files(agent)
    assert files, agent
    home = tmp_path / "home"
    theirs = _ccusage(_layout(agent, home, files), home)

    store = f"sqlite:///{tmp_path / 'store.db'}"
    runner = CliRunner()
    for path in files:
        imported = runner.invoke(cli, ["--store", store, "import", "--format", agent, str(path)])
        assert imported.exit_code == 0, imported.output
    report = runner.invoke(
        cli, ["--store", store, "usage", "--by", "session", "--json", "--timezone", "UTC"]
    )
    assert report.exit_code == 0, report.output
    ours = json.loads(report.stdout)["totals"]

    pairs = {
        "input_tokens": "inputTokens",
        "output_tokens": "outputTokens",
        "cache_read_tokens": "cacheReadTokens",
        "cache_write_tokens": "cacheCreationTokens",
    }
    for key, field in pairs.items():
        value = sum(s.get(field, 0) for s in theirs["sessions"])
        assert _close(ours[key], value, 0.01), (key, ours[key], value)
    cost = sum(_cost(s) for s in theirs["sessions"])
    assert _close(ours["cost_usd"], cost, 0.05), (ours["cost_usd"], cost)


@pytest.mark.parametrize("speed", ["fast", None])
def test_fast_mode_and_one_hour_cache_writes_are_priced(speed: str | None, tmp_path: Path) -> None:
    """The usage Claude Code records for fast mode and 1-hour cache writes changes the price
    as the provider's price list says (genai-prices), not only the counts."""
    from datetime import UTC, datetime

    import genai_prices

    from sessiontree.messages import Usage
    from sessiontree.usage import UsageCall, usage_report

    extra: dict[str, Any] = {"cacheWrite1h": 1_000}
    if speed is not None:
        extra["speed"] = speed
    usage = Usage(input=1_000, output=1_000, cache_write=2_000, **extra)
    call = UsageCall(
        "s",
        "e",
        "claude-code",
        None,
        "anthropic",
        "claude-opus-4-8",
        datetime(2026, 6, 1, tzinfo=UTC),
        usage,
    )
    got = usage_report([call], by="model").totals.cost_usd
    expected = genai_prices.calc_price(
        genai_prices.Usage(
            input_tokens=3_000,
            cache_write_tokens=2_000,
            cache_write_1h_tokens=1_000,
            output_tokens=1_000,
        ),
        "claude-opus-4-8",
        provider_id="anthropic",
        genai_request_timestamp=call.at,
        price_context={"speed": speed} if speed else None,
    ).total_price
    assert got == pytest.approx(float(expected))
    plain = genai_prices.calc_price(
        genai_prices.Usage(input_tokens=3_000, cache_write_tokens=2_000, output_tokens=1_000),
        "claude-opus-4-8",
        provider_id="anthropic",
        genai_request_timestamp=call.at,
    ).total_price
    assert got > float(plain)  # the 1-hour writes (and fast mode) cost more
