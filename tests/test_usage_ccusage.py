"""``sessiontree usage`` agrees with ccusage on the same Claude Code files (docs/usage.md).

ccusage (the npm package pinned in ``tests/ccusage/package.json``; ``.ci/run`` installs it)
reads a Claude Code config directory laid out as Claude Code writes it; sessiontree imports
the same files and reports from its store. Tokens must agree within 1% and cost within 5%,
in total and per session (ccusage names a session by its file, sessiontree by the session id
the file carries). The files: the vendored Claude Code sessions, and the collection's newer
ones (fast mode, 1-hour cache writes, models from 2026) when ``../shared`` is beside the
checkout.
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
EXTRA = SHARED.parent / "sessions-extra" / "set3" / "claude-code"


def _files() -> list[Path]:
    files = sorted((VENDORED / "claude-code").glob("*.jsonl"))
    if EXTRA.is_dir():
        files += sorted(EXTRA.glob("*.jsonl"))
    return files


def _ccusage(config_dir: Path) -> dict[str, Any]:
    if shutil.which("node") is None or not CCUSAGE.exists():
        unavailable(f"ccusage is not installed ({CCUSAGE}): npm install --prefix tests/ccusage")
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(config_dir.parent),
        "CLAUDE_CONFIG_DIR": str(config_dir),
        "NO_COLOR": "1",
    }
    done = subprocess.run(
        [str(CCUSAGE), "claude", "session", "--json", "--offline", "--timezone", "UTC"],
        env=env,
        capture_output=True,
        timeout=120,
        check=True,
    )
    data: dict[str, Any] = json.loads(done.stdout)
    return data


def _close(ours: float, theirs: float, share: float) -> bool:
    return abs(ours - theirs) <= share * max(abs(theirs), 1.0)


def test_usage_agrees_with_ccusage_on_claude_code_files(tmp_path: Path) -> None:
    project = tmp_path / "claude" / "projects" / "-work-project"
    project.mkdir(parents=True)
    for path in _files():
        shutil.copy(path, project / path.name)
    theirs = _ccusage(tmp_path / "claude")

    store = f"sqlite:///{tmp_path / 'store.db'}"
    runner = CliRunner()
    imported = runner.invoke(cli, ["--store", store, "import", str(project)])
    assert imported.exit_code == 0, imported.output
    report = runner.invoke(
        cli, ["--store", store, "usage", "--by", "session", "--json", "--timezone", "UTC"]
    )
    assert report.exit_code == 0, report.output
    ours = json.loads(report.stdout)

    pairs = {
        "input_tokens": "inputTokens",
        "output_tokens": "outputTokens",
        "cache_read_tokens": "cacheReadTokens",
        "cache_write_tokens": "cacheCreationTokens",
    }
    totals = {k: sum(s[v] for s in theirs["sessions"]) for k, v in pairs.items()}
    for key, value in totals.items():
        assert _close(ours["totals"][key], value, 0.01), (key, ours["totals"][key], value)
    cost = sum(s["totalCost"] for s in theirs["sessions"])
    assert cost > 0
    assert _close(ours["totals"]["cost_usd"], cost, 0.05), (ours["totals"]["cost_usd"], cost)

    # per session: ccusage's key is the file name, ours the session id in the file
    by_id = {row["key"]: row for row in ours["rows"]}
    matched = 0
    for session in theirs["sessions"]:
        file_id = session["sessionId"]
        row = by_id.get(file_id) or next(
            (r for k, r in by_id.items() if k.endswith(file_id) or file_id.endswith(k)), None
        )
        if row is None:
            continue
        matched += 1
        assert row["output_tokens"] == session["outputTokens"], file_id
        assert _close(row["cost_usd"], session["totalCost"], 0.05), file_id
    assert matched >= 2


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
