"""Helpers of the web tests: hostile session content, an HTML safety check, a counting store."""

from __future__ import annotations

import contextlib
import re
import shutil
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

from backends import unavailable
from session_files import vendored_files
from sessiontree import Session, SessionRepo
from sessiontree.interop import import_session
from sessiontree.repos import MemoryRepo
from sessiontree.testing.builders import assistant, tool_call, tool_result, user

HOSTILE = "<script>window.__pwned = 1</script>"
"""Text that would run if any page inserted message text as markup."""
EXTERNAL = re.compile(r"^\s*(https?:)?//", re.I)
STYLE_URL = re.compile(r"url\(\s*['\"]?\s*(https?:)?//", re.I)


async def import_repo_sessions(repo: SessionRepo) -> list[Session]:
    """Import every real session file of data/sessions into ``repo``."""
    out = []
    for path in vendored_files():
        session, _ = await import_session(path, repo, lenient=True)
        out.append(session)
    return out


async def hostile_session(repo: SessionRepo) -> Session:
    """A session whose every text tries to inject markup, script or a remote resource,
    with a fork (two branches), a label, a name, a thinking block and an image."""
    s = await repo.create(metadata={"cwd": "/tmp/<b>cwd</b>"})
    first = await s.append_message(user(f"hello {HOSTILE} <img src=x onerror=alert(1)>"))
    await s.append_message(
        assistant(
            "See [a link](javascript:alert(1)) and ![pic](http://evil.example/p.png) "
            "and <iframe src='https://evil.example'></iframe>\n\n```python\nprint('<b>')\n```",
            tool_call("c1", "read", path="</pre><script>alert(2)</script>"),
        )
    )
    await s.append_message(tool_result("c1", f"file body {HOSTILE}", name="read<x>"))
    tip = await s.append_message(
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": f"secret plan {HOSTILE}"},
                {"type": "text", "text": "done"},
                {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"},
                {"type": "image", "data": "PHN2Zz4=", "mimeType": "image/svg+xml"},
            ],
            "provider": "p",
            "model": "m<script>",
            "stopReason": "stop",
            "timestamp": 1,
        }
    )
    await s.append_label(first, f"label {HOSTILE}")
    await s.append_session_name(f"name {HOSTILE}")
    await s.set_leaf_id(first)
    await s.append_message(assistant(f"other branch {HOSTILE}"))
    await s.set_leaf_id(tip)
    return s


class PageCheck(HTMLParser):
    """Collects what could run or load in a page: script elements, event-handler
    attributes, external URLs in attributes and style, and the visible text."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.scripts = 0
        """Script elements that are not a file of the viewer's own ``/static/`` (or that hold
        inline text)."""
        self.script_files: list[str] = []
        self._in_script = False
        self.handlers: list[str] = []
        self.external: list[str] = []
        self.text: list[str] = []
        self.tags: list[str] = []
        self._in_style = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        if tag == "script":
            src = dict(attrs).get("src") or ""
            if src.startswith("/static/") and ".." not in src:
                self.script_files.append(src)  # the viewer's own script files
            else:
                self.scripts += 1
            self._in_script = True
        if tag == "style":
            self._in_style = True
        for name, value in attrs:
            value = value or ""
            if name.startswith("on"):
                self.handlers.append(f"{tag}.{name}")
            if name in ("src", "href", "action", "srcset", "poster", "data") and (
                EXTERNAL.search(value) or value.lower().startswith("javascript:")
            ):
                self.external.append(f"{tag}.{name}={value}")
            if name == "style" and STYLE_URL.search(value):
                self.external.append(f"{tag}.style")

    def handle_endtag(self, tag: str) -> None:
        if tag == "style":
            self._in_style = False
        if tag == "script":
            self._in_script = False

    def handle_data(self, data: str) -> None:
        if self._in_script and data.strip():
            self.scripts += 1  # inline script text
            return
        if self._in_style:
            if STYLE_URL.search(data):
                self.external.append("<style> url()")
            return
        self.text.append(data)

    @property
    def visible(self) -> str:
        return "".join(self.text)


def check_page(html: str) -> PageCheck:
    """Parse ``html`` and assert nothing in it can run or load from elsewhere."""
    found = PageCheck()
    found.feed(html)
    found.close()
    assert found.scripts == 0, "a <script> element other than the viewer's own files"
    assert not found.handlers, found.handlers
    assert not found.external, found.external
    assert "iframe" not in found.tags and "object" not in found.tags
    return found


class CountingStorage:
    """A storage that counts the entries its reads return (all else passes through)."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self.read = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    @property
    def id(self) -> str:
        return str(self._inner.id)

    @property
    def metadata(self) -> Any:
        return self._inner.metadata

    async def get_entries(self, cursor: Any = None) -> list[Any]:
        found = await self._inner.get_entries(cursor)
        self.read += len(found)
        return list(found)

    async def get_branch(self, leaf_id: str | None = None, **kw: Any) -> list[Any]:
        found = await self._inner.get_branch(leaf_id, **kw)
        self.read += len(found)
        return list(found)

    async def get_entry(self, entry_id: str) -> Any:
        self.read += 1
        return await self._inner.get_entry(entry_id)


class CountingRepo:
    """A memory repository whose opened sessions count the entries they read."""

    def __init__(self) -> None:
        self.inner = MemoryRepo()
        self.url = self.inner.url
        self.storages: dict[str, CountingStorage] = {}

    async def open(self, sid: str) -> Session:
        storage = CountingStorage((await self.inner.open(sid)).storage)
        self.storages[sid] = storage
        return Session(storage)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


@contextlib.contextmanager
def chromium(profile: Path, **size: int) -> Iterator[Any]:
    """A headless Chromium driver with its profile in ``profile`` (removed afterwards).

    ``size`` is passed to :func:`sessiontree.testing.browser.headless_chromium` (``width``,
    ``height`` in CSS pixels). A missing browser skips the test with the reason, or fails it
    under ``SESSIONTREE_REQUIRE_ALL=1``.
    """
    from sessiontree.testing.browser import browser_missing, headless_chromium

    missing = browser_missing()
    if missing is not None:
        unavailable(missing)
    driver = headless_chromium(profile, **size)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)
