"""The transcript routes of the viewer: the session page, its parts, its live updates and
the comparison of two branches.

* ``GET /s/{id}`` — the transcript of the leaf's branch (``?leaf=`` another branch,
  ``?before=`` earlier turns, ``?at=`` the page holding an entry);
* ``GET /s/{id}/turns`` — the same turns as an HTML fragment, which the page's script
  inserts (earlier turns on demand, the newest turn redrawn by a live update); the response
  headers ``X-First-Id`` / ``X-Has-Before`` say where the next earlier part starts;
* ``GET /s/{id}/events`` — server-sent events: ``change`` (data: the leaf and newest entry
  ids, JSON) within :data:`POLL_SECONDS` of an entry appended or the leaf moved by any
  writer, a comment line every :data:`KEEPALIVE_SECONDS`; each stream ends after
  :data:`STREAM_SECONDS` and the browser reconnects, so a stopping server never waits long;
* ``GET /s/{id}/compare`` — two branches side by side from their fork point (``a``/``b``
  leaves, ``other``: the second session).

Each session's entries are held in a :class:`~sessiontree.web.transcript.SessionIndex` that
reads only what was appended since it last looked. A :class:`Transcripts` belongs to one of the
viewer's readers (:mod:`sessiontree.web.reading`): its handlers run on that reader's loop,
never the server's, so a big session's page never holds up the others; an event stream
runs on the server's loop and looks for changes on the reader that holds the session's index.
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from starlette.requests import Request
from starlette.responses import HTMLResponse, Response, StreamingResponse
from starlette.templating import Jinja2Templates

from sessiontree import _json
from sessiontree.errors import SessionNotFoundError
from sessiontree.lookup import resolve_entry
from sessiontree.repos.base import SessionRepo
from sessiontree.session import Session
from sessiontree.web.transcript import (
    SessionIndex,
    TranscriptPage,
    compare_view,
    transcript_page,
)
from sessiontree.web.views import off_loop

__all__ = [
    "KEEPALIVE_SECONDS",
    "POLL_SECONDS",
    "STREAM_SECONDS",
    "Seen",
    "Transcripts",
    "event_stream",
]

POLL_SECONDS = 0.25
"""How often an event stream looks for new entries (a change shows within about this)."""
KEEPALIVE_SECONDS = 15.0
"""Seconds between keep-alive comments on a quiet event stream."""
STREAM_SECONDS = 60.0
"""How long one event stream lasts before the browser reconnects (``retry``: 500 ms)."""
INDEXES = 8
"""Session indexes kept in memory (most recently used)."""

SessionPage = Callable[..., Awaitable[Response]]


class _Held:
    """A session index and the lock its readers and refreshes take."""

    def __init__(self) -> None:
        self.index = SessionIndex()
        self.lock = asyncio.Lock()


@dataclass(frozen=True)
class Seen:
    """Where a session stood when an event stream last looked."""

    last: str | None
    """Its newest entry's id."""
    leaf: str | None
    """Its leaf's id."""


class Transcripts:
    """The transcript handlers of one reader over its ``repo``; ``open_session(id)`` gives an
    open session (the reader's cache of open sessions)."""

    def __init__(self, repo: SessionRepo, open_session: Callable[[str], Awaitable[Session]]):
        self.repo = repo
        self.open_session = open_session
        self.held: OrderedDict[str, _Held] = OrderedDict()

    def _held(self, sid: str) -> _Held:
        found = self.held.get(sid)
        if found is None:
            found = self.held[sid] = _Held()
            while len(self.held) > INDEXES:
                self.held.popitem(last=False)
        self.held.move_to_end(sid)
        return found

    async def _layout(self, request: Request, session: Session, **where: Any) -> TranscriptPage:
        held = self._held(session.id)
        current = await session.get_leaf_id()
        leaf = request.query_params.get("leaf") or None
        async with held.lock:
            await held.index.refresh(session)
            if leaf is not None and leaf not in held.index.entries:
                leaf = (await resolve_entry(session, leaf)).id
            page = await off_loop(transcript_page, held.index, leaf or current, current, **where)
        await self._link_agent_sessions(session, page)
        return page

    async def _link_agent_sessions(self, session: Session, page: TranscriptPage) -> None:
        """Point each sub-agent call whose sub-agent has a session of its own in the store
        (imported from Claude Code's ``agent-*.jsonl``) at it; drop the others."""
        base = (session.storage.metadata.model_extra or {}).get("claudeCode")
        parent = base.get("sessionId") if isinstance(base, dict) else None
        for turn in page.turns:
            for item in turn.items:
                for call in item.calls:
                    if call.agent_session is None:
                        continue
                    sid = f"{parent or session.id}-agent-{call.agent_session}"
                    call.agent_session = sid if await self._exists(sid) else None

    async def _exists(self, sid: str) -> bool:
        try:
            await self.open_session(sid)
        except SessionNotFoundError:
            return False
        return True

    @staticmethod
    def _where(request: Request) -> dict[str, Any]:
        p = request.query_params
        return {"before": p.get("before") or None, "at": p.get("at") or None}

    async def page(self, request: Request, session_page: SessionPage) -> Response:
        """``GET /s/{id}``: the transcript page."""
        s = await self.open_session(request.path_params["sid"])
        page = await self._layout(request, s, **self._where(request))
        live = "leaf" not in request.query_params and not page.has_after
        return await session_page(
            request,
            s,
            "transcript",
            heavy=True,
            tp=page,
            live=live,
            chart_json=_chart_json(page),
        )

    async def part(self, request: Request, templates: Jinja2Templates) -> Response:
        """``GET /s/{id}/turns``: an HTML fragment of turns."""
        s = await self.open_session(request.path_params["sid"])
        p = request.query_params
        where = self._where(request)
        if p.get("after_turn"):
            where = {"after_turn": p["after_turn"]}
        page = await self._layout(request, s, **where)
        template = templates.get_template("transcript_part.html")
        html = await off_loop(
            template.render, request=request, tp=page, sid=s.id, chart_json=_chart_json(page)
        )
        return HTMLResponse(
            html,
            headers={
                "X-First-Id": page.first_id or "",
                "X-Has-Before": "1" if page.has_before else "0",
                "X-Leaf-Id": page.leaf_id or "",
                "Cache-Control": "no-store",
            },
        )

    async def compare(self, request: Request, session_page: SessionPage) -> Response:
        """``GET /s/{id}/compare``: ``a`` (default the leaf) against ``b`` in this session
        or, with ``other``, in that session (default its leaf)."""
        s = await self.open_session(request.path_params["sid"])
        p = request.query_params
        other_id = (p.get("other") or "").strip() or None
        o = await self.open_session(other_id) if other_id else s
        result = None
        a = (p.get("a") or "").strip() or await s.get_leaf_id()
        b = (p.get("b") or "").strip() or (await o.get_leaf_id() if other_id else None)
        if a is not None:
            a = (await resolve_entry(s, a)).id
        if b is not None:
            b = (await resolve_entry(o, b)).id
        if a is not None and b is not None:
            left, right = self._held(s.id), self._held(o.id)
            async with left.lock:
                await left.index.refresh(s)
            if right is not left:
                async with right.lock:
                    await right.index.refresh(o)
            result = await off_loop(
                compare_view,
                (left.index, a, f"{s.id[:12]} · {a[:12]}"),
                (right.index, b, f"{o.id[:12]} · {b[:12]}"),
            )
        return await session_page(
            request,
            s,
            "compare",
            heavy=True,
            cmp=result,
            a=a,
            b=b,
            other=other_id or "",
        )

    async def look(self, sid: str, *, strict: bool = True) -> Seen:
        """Where session ``sid`` stands now (its index read up to date); with ``strict``
        false a read that fails gives what the index held (a live stream keeps going).

        Raises:
            SessionNotFoundError: no such session (``strict``).
        """
        s = await self.open_session(sid)
        held = self._held(s.id)
        async with held.lock:
            try:
                await held.index.refresh(s)
            except Exception:
                if strict:
                    raise
        return Seen(held.index.last_id, await s.get_leaf_id())


def event_stream(
    request: Request, seen: Seen, look: Callable[[], Awaitable[Seen]]
) -> StreamingResponse:
    """``GET /s/{id}/events`` (server-sent events) from where the session stood (``seen``):
    runs on the server's loop and asks ``look()`` (on the reader holding the session) every
    :data:`POLL_SECONDS` where it stands now."""

    async def stream() -> AsyncIterator[str]:
        nonlocal seen
        yield "retry: 500\n\n"
        start = quiet = time.monotonic()
        while time.monotonic() - start < STREAM_SECONDS:
            if await request.is_disconnected():
                return
            await asyncio.sleep(POLL_SECONDS)
            now = await look()
            if now != seen:
                seen = now
                quiet = time.monotonic()
                data = _json.dumps({"last": now.last, "leaf": now.leaf}).decode()
                yield f"event: change\ndata: {data}\n\n"
            elif time.monotonic() - quiet > KEEPALIVE_SECONDS:
                quiet = time.monotonic()
                yield ": keep-alive\n\n"

    return StreamingResponse(
        stream(),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
    )


def _chart_json(page: TranscriptPage) -> str:
    """The context chart's data for the page's script: call numbers, tokens, whether each
    was reported, and the compactions' call numbers."""
    return _json.dumps(
        {
            "x": [p.call for p in page.chart],
            "y": [p.tokens for p in page.chart],
            "reported": [p.reported for p in page.chart],
            "compactions": [m[0] for m in page.compactions],
        }
    ).decode()
