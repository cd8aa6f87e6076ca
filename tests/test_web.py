"""The web viewer's pages and write actions over HTTP (Starlette's client), and the exports."""

from __future__ import annotations

import re
from html import unescape
from pathlib import Path

import pytest

from backends import REQUIRE_ALL

if not REQUIRE_ALL:  # with SESSIONTREE_REQUIRE_ALL=1 a missing web extra fails the import
    pytest.importorskip("starlette", reason="needs the web extra")

from click.testing import CliRunner
from starlette.testclient import TestClient

from session_files import COLLECTION, VENDORED, session_file
from sessiontree import Session
from sessiontree.cli import CliState, cli
from sessiontree.cli.serve import is_loopback
from sessiontree.entries import Entry, MessageEntry
from sessiontree.interop import import_session
from sessiontree.messages import TextContent, UserMessage
from sessiontree.repos import MemoryRepo
from sessiontree.web.app import create_app
from sessiontree.web.export import export_html, export_markdown
from sessiontree.web.tree import PAGE_SIZE, tree_page
from web_support import (
    HOSTILE,
    CountingRepo,
    check_page,
    hostile_session,
    import_repo_sessions,
)

BASE = "http://127.0.0.1"


def client(repo: object, *, write: bool = False) -> TestClient:
    return TestClient(create_app(repo, write=write), base_url=BASE)  # type: ignore[arg-type]


@pytest.fixture
async def hostile() -> tuple[MemoryRepo, Session]:
    repo = MemoryRepo()
    return repo, await hostile_session(repo)


def _token(html: str) -> str:
    found = re.search(r'name="csrf" value="([^"]+)"', html)
    assert found, "no form token on the page"
    return found.group(1)


async def test_every_page_of_a_hostile_session_shows_its_text_as_text(
    hostile: tuple[MemoryRepo, Session],
) -> None:
    repo, s = hostile
    leaf = await s.get_leaf_id()
    with client(repo) as c:
        for path in ("/", "/?q=name", "/?search=hello", f"/s/{s.id}", f"/s/{s.id}/tree",
                     f"/s/{s.id}/turns", f"/s/{s.id}/compare", f"/s/{s.id}/context",
                     f"/s/{s.id}/stats", f"/s/{s.id}/diff?a={(await s.get_entries())[0].id}",
                     f"/s/{s.id}/entry/{leaf}"):  # fmt: skip
            r = c.get(path)
            assert r.status_code == 200, path
            csp = r.headers["content-security-policy"]
            assert "script-src 'self';" in csp and "unsafe-eval" not in csp
            assert "'unsafe-inline'" not in csp.split("script-src", 1)[1].split(";", 1)[0]
            assert "default-src 'none'" in r.headers["content-security-policy"]
            page = check_page(r.text)
            if path.startswith("/s/"):
                assert HOSTILE in page.visible, path


async def test_tree_marks_leaf_labels_branches_and_folds_bookkeeping(
    hostile: tuple[MemoryRepo, Session],
) -> None:
    repo, s = hostile
    page = await tree_page(s)
    assert page.whole and page.path_known
    heads = [run.head for run in page.runs]
    assert heads == ["root", "branch 1/2 from", "branch 2/2 from"]
    current = [run for run in page.runs if run.current]
    off = [run for run in page.runs if not run.current]
    assert len(off) == 1 and not off[0].open and all(run.open for run in current)
    with client(repo) as c:
        html = c.get(f"/s/{s.id}/tree").text
    assert html.count("◀ leaf") == 1
    assert f"label {HOSTILE}" in check_page(html).visible
    assert "bookkeeping entries (1 label, 1 session_info, 1 leaf)" in html


async def test_context_page_shows_tokens_thinking_folded_and_calls_beside_results(
    hostile: tuple[MemoryRepo, Session],
) -> None:
    repo, s = hostile
    with client(repo) as c:
        html = c.get(f"/s/{s.id}/context").text
    assert "tokens</b> (estimate)" in html
    assert '<details class="thinking">' in html
    call = re.search(r'<div class="call">.*?</div></div>', html, re.S)
    assert call and "read&lt;x&gt; result" in call.group(0)
    assert 'src="data:image/png;base64,iVBORw0KGgo="' in html
    assert "image/svg+xml" in html and "data:image/svg" not in html


async def test_compaction_cut_is_shown_where_a_compaction_would_cut() -> None:
    repo = MemoryRepo()
    s = await repo.create()
    for i in range(30):
        await s.append_message(UserMessage(content="q" * 4000 + str(i)))
        await s.append_message(
            {"role": "assistant", "content": [{"type": "text", "text": "a" * 4000}]}
        )
    with client(repo) as c:
        html = c.get(f"/s/{s.id}/context").text
    assert html.count('id="cut"') == 1
    assert "a compaction now would summarise" in html
    kept = int(re.search(r"and keep ([\d,]+)", html).group(1).replace(",", ""))  # type: ignore[union-attr]
    assert 0 < kept < 60
    after_cut = html.split('id="cut"')[1]
    assert after_cut.count('<div class="msg ') == kept


async def test_diff_shows_both_branches_after_the_common_ancestor(
    hostile: tuple[MemoryRepo, Session],
) -> None:
    repo, s = hostile
    entries = await s.get_entries()
    other = next(
        e for e in entries if isinstance(e, MessageEntry) and "other branch" in str(e.message)
    )
    with client(repo) as c:
        html = c.get(f"/s/{s.id}/diff", params={"a": other.id}).text
    assert "1 shared entries, common ancestor" in html
    left, right = html.split('<div class="cols" id="diff">')[1].split("<h3>")[1:3]
    assert "other branch" in left and "other branch" not in right
    assert "secret plan" in right
    with client(repo) as c:
        by_prefix = c.get(f"/s/{s.id}/diff", params={"a": other.id[:-3]}).text
        assert by_prefix.count('class="msg ') == html.count('class="msg ')
        missing = c.get(f"/s/{s.id}/diff", params={"a": "zzz"})
        assert missing.status_code == 400 and "zzz" in missing.text


def _rows(html: str) -> int:
    """Session rows of a list page."""
    return html.count("<tr data-href=") - _hit_rows(html)


def _hit_rows(html: str) -> int:
    """Search hit rows of a list page."""
    return (
        html.split('id="hits"')[1].split("</table>")[0].count("<tr ") if 'id="hits"' in html else 0
    )


async def test_list_filters_pages_and_searches() -> None:
    repo = MemoryRepo()
    n = len(await import_repo_sessions(repo))
    assert n >= 3
    with client(repo) as c:
        assert _rows(c.get("/").text) == n  # one row each
        assert _rows(c.get("/?q=hello.py").text) == 1
        first = c.get("/?limit=2")
        assert _rows(first.text) == 2 and "older →" in first.text
        assert _rows(c.get(f"/?limit=2&offset={n - 1}").text) == 1
        tagged = await repo.create(metadata={"userId": "u1", "tier": 2})
        only = c.get("/", params={"where": "userId=u1, tier:=2"}).text
        assert _rows(only) == 1 and tagged.id[:8] in only
        assert _rows(c.get("/", params={"where": "userId=u2"}).text) == 0
        bad = c.get("/", params={"where": "tier:=nope"})
        assert bad.status_code == 400 and "not JSON" in bad.text
        hits = c.get("/?search=hello.py").text
        assert 'id="hits"' in hits and _hit_rows(hits) > 1


async def test_read_only_server_refuses_every_write(hostile: tuple[MemoryRepo, Session]) -> None:
    repo, s = hostile
    leaf = await s.get_leaf_id()
    count = len(await s.get_entries())
    with client(repo) as c:
        page = c.get(f"/s/{s.id}/entry/{leaf}").text
        assert "<form" not in page.split("<nav")[0] + page.split("</nav>")[1]
        for action in ("checkout", "label", "name", "fork"):
            r = c.post(f"/s/{s.id}/{action}", data={"entry": leaf, "name": "x", "csrf": "x"})
            assert r.status_code == 403 and "read-only" in r.text
    assert len(await s.get_entries()) == count


async def test_writes_need_the_page_token_and_this_origin() -> None:
    repo = MemoryRepo()
    s = await repo.create()
    first = await s.append_message(UserMessage(content="one"))
    await s.append_message(UserMessage(content="two"))
    with client(repo, write=True) as c:
        token = _token(c.get(f"/s/{s.id}/entry/{first}").text)
        assert c.post(f"/s/{s.id}/checkout", data={"entry": first}).status_code == 403
        bad = c.post(f"/s/{s.id}/checkout", data={"entry": first, "csrf": token + "x"})
        assert bad.status_code == 403
        cross = c.post(
            f"/s/{s.id}/checkout",
            data={"entry": first, "csrf": token},
            headers={"origin": "http://evil.example"},
        )
        assert cross.status_code == 403
        assert await s.get_leaf_id() != first
        ok = c.post(
            f"/s/{s.id}/checkout",
            data={"entry": first, "csrf": token},
            headers={"origin": BASE},
            follow_redirects=False,
        )
        assert ok.status_code == 303
        assert await s.get_leaf_id() == first
        c.post(f"/s/{s.id}/label", data={"entry": first, "label": "start", "csrf": token})
        assert await s.get_label(first) == "start"
        c.post(f"/s/{s.id}/name", data={"name": "renamed", "csrf": token})
        assert await s.get_name() == "renamed"
        forked = c.post(
            f"/s/{s.id}/fork", data={"entry": first, "csrf": token}, follow_redirects=False
        )
        new_id = forked.headers["location"].rsplit("/", 1)[1]
        assert new_id != s.id
        fork = await repo.open(new_id)
        assert [e.id for e in await fork.get_branch()] == [first]
        missing = c.post(f"/s/{s.id}/checkout", data={"entry": "nope", "csrf": token})
        assert missing.status_code == 400 and "nope" in missing.text


def test_requests_for_another_host_name_are_refused() -> None:
    with client(MemoryRepo()) as c:
        assert c.get("/", headers={"host": "evil.example"}).status_code == 400
        assert c.get("/", headers={"host": "localhost:8765"}).status_code == 200
        assert c.get("/", headers={"host": "[::1]:8765"}).status_code == 200
        assert c.get("/", headers={"host": "127.0.0.1.evil.example"}).status_code == 400
        assert c.get("/", headers={"host": ""}).status_code == 400


def test_unknown_session_is_a_404_page() -> None:
    with client(MemoryRepo()) as c:
        r = c.get("/s/nope")
        assert r.status_code == 404 and "nope" in r.text


def _linear(n: int) -> list[Entry]:
    return [
        MessageEntry(id=f"e{i}", parent_id=f"e{i - 1}" if i else None,
                     message=UserMessage(content=[TextContent(text=f"m{i}")]))
        for i in range(n)
    ]  # fmt: skip


@pytest.mark.slow
async def test_a_100k_entry_session_page_reads_only_what_it_shows() -> None:
    repo = CountingRepo()
    s = await repo.inner.create()
    await s.storage.append_entries(_linear(100_000))
    with client(repo) as c:
        html = c.get(f"/s/{s.id}/tree").text
        storage = repo.storages[s.id]
        assert html.count('<details class="row') == PAGE_SIZE
        assert storage.read <= PAGE_SIZE + 1
        storage.read = 0
        later = c.get(f"/s/{s.id}/tree", params={"after": f"e{PAGE_SIZE - 1}"}).text
        assert f'id="e-e{PAGE_SIZE}"' in later and storage.read <= PAGE_SIZE + 1
        storage.read = 0
        last = c.get(f"/s/{s.id}/tree", params={"last": "1"}).text
        assert 'id="e-e99999"' in last and "◀ leaf" in last and storage.read <= PAGE_SIZE + 1
        storage.read = 0
        middle = c.get(f"/s/{s.id}/tree", params={"start": "e50000"}).text
        assert 'id="e-e50000"' in middle and 'id="e-e49999"' not in middle
        assert storage.read <= PAGE_SIZE + 3


async def test_paged_tree_visits_every_entry_once() -> None:
    repo = MemoryRepo()
    s = await repo.create()
    await s.storage.append_entries(_linear(2 * PAGE_SIZE + 7))
    seen: list[str] = []
    after = None
    while True:
        page = await tree_page(s, after=after)
        seen += [r.id for run in page.runs for r in run.items]  # type: ignore[union-attr]
        if not page.has_after:
            break
        after = page.last_id
    assert seen == [f"e{i}" for i in range(2 * PAGE_SIZE + 7)]
    back = await tree_page(s, before=f"e{PAGE_SIZE}")
    assert back.first_id == "e0" and back.last_id == f"e{PAGE_SIZE - 1}" and not back.has_before


async def test_html_export_is_self_contained_and_escapes_every_text(
    hostile: tuple[MemoryRepo, Session],
) -> None:
    _, s = hostile
    html = await export_html(s)
    page = check_page(html)
    assert HOSTILE in page.visible and "other branch" in page.visible
    assert "default-src 'none'" in unescape(html) and "<link" not in html
    redacted = check_page(await export_html(s, redact_tool_output=True)).visible
    assert "file body" not in redacted and "[tool output redacted:" in redacted


async def test_markdown_export_escapes_markup_and_fences_tool_output(
    hostile: tuple[MemoryRepo, Session],
) -> None:
    _, s = hostile
    md = await export_markdown(s)
    # a Markdown viewer that lets raw HTML through still shows every text as text
    from markdown_it import MarkdownIt

    shown = check_page(MarkdownIt("commonmark", {"html": True}).render(md)).visible
    assert HOSTILE in shown and "&lt;script&gt;" in md
    assert "```json" in md and "◀ leaf" in md
    assert "[tool output redacted:" in await export_markdown(s, redact_tool_output=True)


def test_export_command_writes_html_and_markdown(tmp_path: Path) -> None:
    runner = CliRunner()
    store = f"jsonl://{tmp_path / 'store'}"
    state = CliState()
    assert (
        runner.invoke(cli, ["--store", store, "import", str(REPO_SMALL)], obj=state).exit_code == 0
    )
    for fmt, name in (("html", "out.html"), ("markdown", "out.md")):
        out = tmp_path / name
        r = runner.invoke(cli, ["--store", store, "export", "019e19b4", str(out), "--format", fmt])
        assert r.exit_code == 0, r.output
        assert "Read hello.py" in out.read_text()
    html = (tmp_path / "out.html").read_text()
    check_page(html)
    again = runner.invoke(
        cli,
        ["--store", store, "export", "019e19b4", str(tmp_path / "out.html"), "--format", "html"],
    )
    assert again.exit_code == 1 and "exists" in again.output
    pi = runner.invoke(
        cli,
        ["--store", store, "export", "019e19b4", str(tmp_path / "x.jsonl"), "--redact-tool-output"],
    )
    assert pi.exit_code == 2


def test_loopback_addresses() -> None:
    assert is_loopback("127.0.0.1") and is_loopback("localhost") and is_loopback("::1")
    assert is_loopback("127.3.2.1")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.2") and not is_loopback("::")
    assert not is_loopback("example.com")


REPO_SMALL = VENDORED / "pi" / "agent-sessions_pi-small.v3.jsonl"


@pytest.mark.parametrize("relative", COLLECTION, ids=lambda r: r.split("/")[-1][:40])
async def test_every_real_file_renders_and_exports(relative: str) -> None:
    path = session_file(relative)
    repo = MemoryRepo()
    s, _ = await import_session(path, repo)
    with client(repo) as c:
        for view in ("", "?last=1", "/context", "/stats", "/diff"):
            r = c.get(f"/s/{s.id}{view}")
            assert r.status_code == 200, (path.name, view)
            check_page(r.text)
    check_page(await export_html(s))
    assert s.id in await export_markdown(s)


def test_serve_command_listens_on_the_loopback_address_by_default(tmp_path: Path) -> None:
    import subprocess
    import sys

    import httpx

    store = f"jsonl://{tmp_path / 'store'}"
    assert CliRunner().invoke(cli, ["--store", store, "import", str(REPO_SMALL)]).exit_code == 0
    proc = subprocess.Popen(
        [sys.executable, "-m", "sessiontree", "--store", store, "serve", "--port", "0"],
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        found = re.search(r"on (http://127\.0\.0\.1:\d+)/ \(read-only", line)
        assert found, line
        url = found.group(1)
        listing = httpx.get(url + "/", timeout=20)
        assert listing.status_code == 200 and "Read hello.py" in listing.text
        sid = re.search(r'href="/s/([^"]+)"', listing.text).group(1)  # type: ignore[union-attr]
        refused = httpx.post(f"{url}/s/{sid}/name", data={"name": "x"}, timeout=20)
        assert refused.status_code == 403
    finally:
        proc.terminate()
        proc.wait(20)
        if proc.stderr is not None:
            proc.stderr.close()


def test_the_cli_and_the_web_package_import_no_web_library_until_used() -> None:
    import subprocess
    import sys

    code = (
        "import sys, sessiontree, sessiontree.cli, sessiontree.web\n"
        "print(','.join(m for m in ('starlette', 'uvicorn', 'jinja2', 'markdown_it', 'selenium')"
        " if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_ids_sharing_a_long_prefix_show_head_and_tail() -> None:
    from sessiontree.web.render import short_id

    assert short_id("abcdef0123456789", 8) == "abcdef01"
    v7 = "01a2335a-2de0-77a7-8e65-05fb616e5be6"
    assert short_id(v7, 20) == "01a2335a…5be6"
    assert short_id("short", 20) == "short"


async def test_assistant_usage_is_labelled_as_the_calls_not_the_messages_size() -> None:
    repo = MemoryRepo()
    s = await repo.create()
    await s.append_message(UserMessage(content="hi"))
    await s.append_message(
        {
            "role": "assistant",
            "content": [{"type": "text", "text": "hello"}],
            "usage": {"input": 12345, "output": 67, "totalTokens": 12412,
                      "cost": {"total": 0.25}},
        }
    )  # fmt: skip
    with client(repo) as c:
        html = c.get(f"/s/{s.id}/context").text
    assert "call: 12,345 in · 67 out · $0.2500" in html
    assert "~12,412 tokens" not in html


async def test_tree_page_cuts_long_texts_and_the_entry_page_shows_them_whole() -> None:
    from sessiontree.web.tree import CLIP

    repo = MemoryRepo()
    s = await repo.create()
    long = "x" * (CLIP + 1234)
    entry = await s.append_message(UserMessage(content=long + "TAIL"))
    with client(repo) as c:
        tree = c.get(f"/s/{s.id}/tree").text
        whole = c.get(f"/s/{s.id}/entry/{entry}").text
    assert "… 1,238 more characters" in tree and "TAIL" not in tree
    assert "TAIL" in whole and "more characters" not in whole
    assert "TAIL" in await export_html(s)
