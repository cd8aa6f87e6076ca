"""The viewer's session list, search and usage pages over HTTP (Starlette's client): the
columns, the filters, the highlighted search hits, and usage numbers equal to
``sessiontree usage --json``. The browser side (keys, charts drawn, phone width) is
tests/test_web_list_browser.py."""

from __future__ import annotations

import asyncio
import json
import re
from html import unescape
from importlib.resources import files
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from backends import REQUIRE_ALL

if not REQUIRE_ALL:  # with SESSIONTREE_REQUIRE_ALL=1 a missing web extra fails the import
    pytest.importorskip("starlette", reason="needs the web extra")

from click.testing import CliRunner
from starlette.testclient import TestClient

from session_files import VENDORED
from sessiontree import Session, open_repo
from sessiontree.cli import cli
from sessiontree.repos.base import SessionRepo
from sessiontree.testing.builders import assistant, user
from sessiontree.usage import GROUPS, UsageCall, collect_usage, usage_report
from sessiontree.web.app import create_app
from sessiontree.web.listing import SummaryCache, highlight
from web_support import HOSTILE, check_page, hostile_session, import_repo_sessions

BASE = "http://127.0.0.1"


def client(repo: SessionRepo) -> TestClient:
    return TestClient(create_app(repo, close_repo=False), base_url=BASE)


def _usage(model: str, *, cost: float | None = None, tokens: int = 100) -> dict[str, Any]:
    usage: dict[str, Any] = {
        "input": tokens,
        "output": tokens // 2,
        "cacheRead": 0,
        "cacheWrite": 0,
        "totalTokens": tokens + tokens // 2,
    }
    if cost is not None:
        usage["cost"] = {
            "input": 0,
            "output": 0,
            "cacheRead": 0,
            "cacheWrite": 0,
            "total": cost,
        }
    return usage


async def made_sessions(repo: SessionRepo) -> tuple[Session, Session]:
    """Two sessions of sessiontree's own: ``alpha`` (model m-alpha, 2 turns, $0.5, label
    ``important step``) and ``beta`` (model m-beta, 1 turn, $0.25)."""
    a = await repo.create(metadata={"cwd": "/work/alpha"})
    first = await a.append_message(user("alpha question"))
    await a.append_message(assistant("one", model="m-alpha", usage=_usage("m-alpha", cost=0.2)))
    await a.append_message(user("alpha again"))
    await a.append_message(assistant("two", model="m-alpha", usage=_usage("m-alpha", cost=0.3)))
    await a.append_label(first, "important step")
    b = await repo.create(metadata={"cwd": "/work/beta"})
    await b.append_message(user("beta question"))
    await b.append_message(assistant("three", model="m-beta", usage=_usage("m-beta", cost=0.25)))
    return a, b


def _rows(html: str, table: str = "sessions") -> list[str]:
    """The rows of a list page's table ``table`` (``sessions`` or ``hits``)."""
    if f'id="{table}"' not in html:
        return []
    body = html.split(f'id="{table}"')[1].split("</table>")[0]
    return body.split("<tr data-href=")[1:]


def _cell(row: str, name: str) -> str:
    found = re.search(rf'<td data-label="{name}"[^>]*>(.*?)</td>', row, re.S)
    assert found, name
    return unescape(re.sub(r"<[^>]+>", "", found.group(1))).strip()


async def test_list_shows_agent_project_model_turns_tokens_and_cost() -> None:
    repo = open_repo("memory://")
    a, b = await made_sessions(repo)
    with client(repo) as c:
        html = c.get("/").text
    check_page(html)
    rows = {r.split('data-session="')[1].split('"')[0]: r for r in _rows(html)}
    assert set(rows) == {a.id, b.id}
    alpha = rows[a.id]
    assert _cell(alpha, "agent") == "sessiontree"
    assert _cell(alpha, "project") == "alpha" and 'title="/work/alpha"' in alpha
    assert _cell(alpha, "model") == "m-alpha"
    assert _cell(alpha, "turns") == "2"
    assert _cell(alpha, "tokens") == "300"  # 2 calls of 100 input + 50 output
    assert _cell(alpha, "cost") == "$0.50"
    assert "important step" in alpha and "alpha question" in alpha
    assert _cell(rows[b.id], "cost") == "$0.25" and _cell(rows[b.id], "model") == "m-beta"


async def test_list_filters_by_agent_project_model_label_and_dates() -> None:
    repo = open_repo("memory://")
    a, b = await made_sessions(repo)
    imported = {s.id for s in await import_repo_sessions(repo)}
    with client(repo) as c:

        def ids(**params: str) -> set[str]:
            r = c.get("/", params=params)
            assert r.status_code == 200, r.text
            return {row.split('data-session="')[1].split('"')[0] for row in _rows(r.text)}

        everything = ids()
        assert everything == {a.id, b.id} | imported
        pi = ids(agent="pi")
        assert (
            pi
            and pi <= imported
            and all(_cell(r, "agent") == "pi" for r in _rows(c.get("/?agent=pi").text))
        )
        assert ids(agent="sessiontree") == {a.id, b.id}
        assert ids(project="/work/beta") == {b.id}
        assert ids(model="m-alpha") == {a.id}
        assert ids(label="IMPORTANT") == {a.id}
        assert ids(label="no such label") == set()
        assert ids(model="m-beta", project="/work/alpha") == set()
        # made now vs imported with their sources' (older) times; a trajectory that records
        # no time is imported now
        infos = {i.id: i for i in await repo.list()}
        today = infos[a.id].modified_at.date()
        old = {k for k, i in infos.items() if i.modified_at.date() < today}
        assert len(old) >= 5 and old <= imported
        assert ids(since=today.isoformat()) == everything - old
        assert ids(until="2026-06-30") == old
        spring = ids(since="2026-04-01", until="2026-04-30")
        assert spring and spring < old
        assert all(
            infos[k].created_at.date().isoformat() <= "2026-04-30"
            and infos[k].modified_at.date().isoformat() >= "2026-04-01"
            for k in spring
        )
        bad = c.get("/", params={"since": "yesterday"})
        assert bad.status_code == 400 and "since" in bad.text and "yesterday" in bad.text
        backwards = c.get("/", params={"since": "2026-02-01", "until": "2026-01-01"})
        assert backwards.status_code == 400
        # the filters' choices come from the store
        page = c.get("/").text
        assert '<option value="/work/alpha">' in page and "<option>pi</option>" in page
        assert "<option>m-alpha</option>" in page
        # paging keeps the filters
        paged = c.get("/", params={"agent": "sessiontree", "limit": "1"}).text
        assert len(_rows(paged)) == 1 and "agent=sessiontree" in paged.split('id="older"')[0][-200:]


async def test_search_marks_the_query_in_escaped_text_and_keeps_the_filters() -> None:
    repo = open_repo("memory://")
    hostile = await hostile_session(repo)
    a, _ = await made_sessions(repo)
    with client(repo) as c:
        html = c.get("/", params={"search": "<script>"}).text
        page = check_page(html)
        hits = _rows(html, "hits")
        assert hits and all(hostile.id in h for h in hits)
        assert "<mark>&lt;script&gt;</mark>window.__pwned" in html
        assert HOSTILE in page.visible
        cased = c.get("/", params={"search": "ALPHA"}).text
        assert "<mark>alpha</mark> question" in cased
        assert _rows(c.get("/", params={"search": "question", "model": "m-alpha"}).text, "hits")
        only_beta = c.get("/", params={"search": "alpha", "project": "/work/beta"}).text
        assert _rows(only_beta, "hits") == [] and "in the sessions the filters keep" in only_beta
        assert a.id not in only_beta.split("<h2>Sessions")[0].split('id="filter"')[1]


@given(st.text(max_size=60), st.text(min_size=1, max_size=6))
def test_highlight_escapes_everything_and_marks_only_the_query(text: str, query: str) -> None:
    html = str(highlight(text, query))
    assert "<" not in html.replace("<mark>", "").replace("</mark>", "")
    assert unescape(html.replace("<mark>", "").replace("</mark>", "")) == text
    marked = re.findall(r"<mark>(.*?)</mark>", html, re.S)
    assert all(unescape(m).lower() == query.lower() or query.strip() == "" for m in marked)
    if query.strip() and query.lower() in text.lower() and query.lower() == query.upper():
        assert marked  # a query without letters is found as is


async def test_summaries_are_read_once_until_the_session_changes() -> None:
    repo = open_repo("memory://")
    a, b = await made_sessions(repo)
    cache = SummaryCache(repo)
    infos = await repo.list()
    first = await cache.get(infos)
    assert cache.reads == 2 and first[a.id].turns == 2
    await cache.get(infos)
    assert cache.reads == 2
    await b.append_message(user("beta again"))
    changed = await cache.get(await repo.list())
    assert cache.reads == 3 and changed[b.id].turns == 2 and changed[a.id] is first[a.id]
    await repo.delete(a.id)
    fresh = SummaryCache(repo)
    assert set(await fresh.get(infos)) == {b.id}  # listed before the delete: skipped


def _cli(store: str, *args: str) -> dict[str, Any]:
    result = CliRunner().invoke(cli, ["--store", store, "usage", "--json", *args])
    assert result.exit_code == 0, result.output
    data: dict[str, Any] = json.loads(result.stdout)
    return data


def test_usage_numbers_equal_sessiontree_usage_json(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 's.db'}"
    imported = CliRunner().invoke(cli, ["--store", store, "import", str(VENDORED)])
    assert imported.exit_code == 0, imported.output

    async def fill() -> list[UsageCall]:
        repo = open_repo(store)
        try:
            await made_sessions(repo)
            await hostile_session(repo)
            return await collect_usage(repo)
        finally:
            await repo.close()

    every_call = asyncio.run(fill())
    with TestClient(create_app(open_repo(store)), base_url=BASE) as c:
        for by in GROUPS:
            web = c.get("/usage.json", params={"by": by}).json()
            assert web == _cli(store, "--by", by, "--timezone", "UTC"), by
        ranged = {"since": "2025-09-01", "until": "2025-12-31"}
        web = c.get("/usage.json", params={"by": "model", **ranged}).json()
        cli_ranged = _cli(store, "--by", "model", "--timezone", "UTC", "--since",
                          ranged["since"], "--until", ranged["until"])  # fmt: skip
        assert web == cli_ranged and web["totals"]["calls"] > 0

        by_day = _cli(store, "--by", "day", "--timezone", "UTC")
        by_model = _cli(store, "--by", "model", "--timezone", "UTC")
        html = c.get("/usage", params={"period": "day", "stack": "model"}).text
        check_page(html)
        total = html.split('class="total"')[1].split("</tr>")[0]
        cells = [unescape(re.sub(r"<[^>]+>", "", x)) for x in total.split("<td")[1:]]
        t = by_day["totals"]
        assert cells[5].endswith(f">{t['total_tokens']:,}")
        assert cells[6].endswith(f">{t['cost_usd']:.6f}")
        chart = json.loads(unescape(html.split("data-chart='")[1].split("'")[0]))
        assert chart["steps"] == [r["key"] for r in by_day["rows"]]
        series = {s["label"]: s for s in chart["series"]}
        models = {r["key"]: r for r in by_model["rows"]}
        biggest = sorted(models, key=lambda k: (-models[k]["total_tokens"], k))
        assert len(models) > 8  # so the smallest are added up as "other"
        assert [s["label"] for s in chart["series"]] == [*biggest[:7], "other"]
        for key in biggest[:7]:
            assert sum(series[key]["tokens"]) == models[key]["total_tokens"], key
            assert sum(series[key]["cost"]) == pytest.approx(models[key]["cost_usd"], abs=1e-5)
        rest = sum(models[k]["total_tokens"] for k in biggest[7:])
        assert sum(series["other"]["tokens"]) == rest
        for i, day in enumerate(by_day["rows"]):
            assert sum(s["tokens"][i] for s in chart["series"]) == day["total_tokens"]

        # filters: the calls of one agent, as usage_report counts them
        calls = [x for x in every_call if x.agent == "claude-code"]
        expect = usage_report(calls, by="model").to_dict()
        got = c.get("/usage.json", params={"by": "model", "agent": "claude-code"}).json()
        assert got == expect and got["totals"]["calls"] > 0
        page = c.get("/usage", params={"agent": "sessiontree", "stack": "project"}).text
        assert "by-project" in page and "/work/alpha" in page and "/work/beta" in page
        assert "$0.75" in page.split('id="totals"')[1].split("</p>")[0]
        bad = c.get("/usage", params={"stack": "colour"})
        assert bad.status_code == 400 and "colour" in bad.text


def test_the_vendored_chart_library_is_served_from_the_package() -> None:
    vendor = files("sessiontree.web").joinpath("static/vendor/uplot")
    assert "MIT License" in vendor.joinpath("LICENSE").read_text("utf-8")
    repo = open_repo("memory://")
    with client(repo) as c:
        js = c.get("/static/vendor/uplot/uPlot.iife.min.js")
        assert js.status_code == 200 and "javascript" in js.headers["content-type"]
        assert js.text == vendor.joinpath("uPlot.iife.min.js").read_text("utf-8")
        assert c.get("/static/list.js").status_code == 200
        assert c.get("/static/../app.py").status_code == 404
        assert "script-src 'self';" in js.headers["content-security-policy"]
