"""The web viewer: a Starlette app over one store (``sessiontree serve``).

Pages (all ``GET``, server-rendered, no JavaScript): the session list (``/``, filter and
message search), and per session the tree (``/s/{id}``, paged), the context
(``/s/{id}/context``), a diff of two branches (``/s/{id}/diff``), stats (``/s/{id}/stats``)
and an entry's stored JSON (``/s/{id}/entry/{entry}``).

Pages whose work grows with the session (context, diff, stats) read the session on the
server's event loop and do the rest — building, counting, rendering — in a worker thread
(:func:`sessiontree.web.views.off_loop`), so a small page asked for meanwhile is served at
once instead of after them.

Writes (``POST`` checkout, label, name, fork) exist only when the app is made with
``write=True``; each needs the per-process token embedded in the page's forms, and a request
whose ``Origin`` is another site is refused, so another page open in the browser cannot
make them. ``Host`` must be one of the served names (no DNS rebinding). Every response
carries a Content-Security-Policy that allows no script and no resource from anywhere but
the page itself and ``data:`` images.
"""

from __future__ import annotations

import contextlib
import secrets
from collections import OrderedDict
from collections.abc import AsyncIterator, Sequence
from typing import Any
from urllib.parse import urlsplit

from jinja2 import pass_context
from starlette.applications import Starlette
from starlette.datastructures import FormData
from starlette.middleware import Middleware
from starlette.middleware.base import BaseHTTPMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.templating import Jinja2Templates

from sessiontree.errors import InvalidArgumentError, SessionNotFoundError, SessionTreeError
from sessiontree.lookup import resolve_entry, where_conditions
from sessiontree.redact import redact_url
from sessiontree.repos.base import SessionRepo
from sessiontree.session import Session
from sessiontree.web import tree as tree_views
from sessiontree.web import views
from sessiontree.web.render import environment
from sessiontree.web.transcript_routes import Transcripts

__all__ = ["CSP", "LIST_LIMIT", "create_app"]

CSP = (
    "default-src 'none'; style-src 'self' 'unsafe-inline'; script-src 'self'; "
    "connect-src 'self'; img-src data:; form-action 'self'; frame-ancestors 'none'; "
    "base-uri 'none'"
)
"""The Content-Security-Policy of every page: scripts only from this server's own files
(``/static/``, no inline script), inline style and this server's style sheets, requests
(``fetch``, server-sent events) only to this server, ``data:`` images, nothing else."""
LIST_LIMIT = 50
"""Sessions per page of the list."""
OPEN_SESSIONS = 8
"""Sessions kept open between requests (most recently used), so paging a big JSONL session
does not re-read its file each time."""


class _Sessions:
    """An LRU of open sessions; closed when evicted and when the app stops."""

    def __init__(self, repo: SessionRepo, size: int = OPEN_SESSIONS) -> None:
        self.repo = repo
        self.size = size
        self.open: OrderedDict[str, Session] = OrderedDict()

    async def get(self, sid: str) -> Session:
        found = self.open.get(sid)
        if found is not None:
            self.open.move_to_end(sid)
            return found
        session = await self.repo.open(sid)
        self.open[sid] = session
        while len(self.open) > self.size:
            _, old = self.open.popitem(last=False)
            await old.close()
        return session

    async def drop(self, sid: str) -> None:
        old = self.open.pop(sid, None)
        if old is not None:
            await old.close()

    async def close(self) -> None:
        while self.open:
            _, old = self.open.popitem()
            with contextlib.suppress(Exception):
                await old.close()


def create_app(
    repo: SessionRepo,
    *,
    write: bool = False,
    hosts: Sequence[str] = ("127.0.0.1", "localhost", "::1"),
    close_repo: bool = True,
) -> Starlette:
    """The viewer over ``repo``: read-only unless ``write``.

    Args:
        repo: the store; closed when the app shuts down if ``close_repo``.
        write: offer checkout, label, name and fork (``POST`` with the page's token).
        hosts: the host names a request's ``Host`` header may give (any port); ``"*"``
            accepts every name.
        close_repo: close ``repo`` at shutdown.
    """
    env = environment()

    @pass_context
    def url_for(context: dict[str, Any], name: str, /, **params: Any) -> str:
        """The path of a route (relative to this server, so pages name no host)."""
        return str(context["request"].app.url_path_for(name, **params))

    env.globals["url_for"] = url_for
    templates = Jinja2Templates(env=env)
    sessions = _Sessions(repo)
    transcripts = Transcripts(repo, sessions.get)
    token = secrets.token_urlsafe(32)
    allowed_hosts = frozenset(h.lower() for h in hosts)

    def page(request: Request, template: str, status: int = 200, **context: Any) -> Response:
        context.update(write=write, csrf=token if write else "", store=redact_url(repo.url))
        return templates.TemplateResponse(request, template, context, status_code=status)

    async def session_page(
        request: Request,
        session: Session,
        view: str,
        status: int = 200,
        *,
        heavy: bool = False,
        **context: Any,
    ) -> Response:
        """A page of one session; ``heavy``: one whose size grows with the session (a whole
        context, a diff, stats), rendered in a worker thread so other pages are not held up."""
        context.setdefault("error", None)
        context.setdefault("page", None)
        context.setdefault("path_known", True)
        context.setdefault("id_len", 12)
        context.update(
            sid=session.id,
            view=view,
            name=await session.get_name(),
            leaf_id=await session.get_leaf_id(),
            meta=await session.get_metadata(),
        )
        if heavy:
            return await views.off_loop(page, request, "session.html", status, **context)
        return page(request, "session.html", status, **context)

    async def open_session(request: Request) -> Session:
        return await sessions.get(request.path_params["sid"])

    async def list_sessions(request: Request) -> Response:
        q = request.query_params.get("q", "").strip()
        meta = request.query_params.get("where", "").strip()
        search = request.query_params.get("search", "").strip()
        offset = _int(request.query_params.get("offset"), 0)
        limit = _int(request.query_params.get("limit"), LIST_LIMIT) or LIST_LIMIT
        where = _where(meta) if meta else None
        if q:
            needle = q.lower()
            matching = [
                i
                for i in await repo.list(where=where)
                if needle in i.id.lower()
                or needle in (i.name or "").lower()
                or needle in (i.first_message or "").lower()
            ]
            infos = matching[offset : offset + limit]
            more = len(matching) > offset + limit
            note = f"{len(matching):,} sessions match"
        else:
            infos = await repo.list(limit=limit + 1, offset=offset, where=where)
            more = len(infos) > limit
            infos = infos[:limit]
            note = f"sessions {offset + 1:,}–{offset + len(infos):,}" if infos else ""
        hits = await repo.search(search, limit=50) if search else []
        return page(
            request,
            "list.html",
            infos=infos,
            q=q,
            where=meta,
            search=search,
            hits=hits,
            offset=offset,
            limit=limit,
            more=more,
            total_note=note,
        )

    async def tree(request: Request) -> Response:
        s = await open_session(request)
        p = request.query_params
        result = await tree_views.tree_page(
            s,
            after=p.get("after") or None,
            before=p.get("before") or None,
            start=p.get("start") or None,
            last=p.get("last") == "1",
        )
        return await session_page(
            request, s, "tree", page=result, path_known=result.path_known, id_len=result.id_len
        )

    async def context(request: Request) -> Response:
        s = await open_session(request)
        leaf = request.query_params.get("leaf") or None
        ctx = await views.context_view(s, leaf, show_all=request.query_params.get("all") == "1")
        return await session_page(request, s, "context", heavy=True, ctx=ctx)

    async def diff(request: Request) -> Response:
        s = await open_session(request)
        a = request.query_params.get("a", "").strip() or None
        b = request.query_params.get("b", "").strip() or await s.get_leaf_id()
        if a is not None:
            a = (await resolve_entry(s, a)).id  # a unique id prefix is enough
        if b is not None:
            b = (await resolve_entry(s, b)).id
        result = await views.diff_view(s, a, b) if a and b else None
        return await session_page(request, s, "diff", heavy=True, diff=result, a=a, b=b)

    async def stats(request: Request) -> Response:
        s = await open_session(request)
        stats = await views.stats_view(s)
        return await session_page(request, s, "stats", heavy=True, stats=stats)

    async def entry(request: Request) -> Response:
        s = await open_session(request)
        found = await s.get_entry(request.path_params["eid"])
        if found is None:
            return await session_page(
                request, s, "entry", 404, error="no such entry", entry_row=None
            )
        row = tree_views.make_row(
            found,
            label=await s.get_label(found.id),
            leaf_id=await s.get_leaf_id(),
            path_ids=set(),
        )
        return await session_page(
            request, s, "entry", entry_row=row, entry_json=views.entry_json(found)
        )

    async def checked_form(request: Request) -> FormData:
        """The form of a write request; raises :class:`_Refused` unless writes are on, the
        token matches and the request comes from this site."""
        if not write:
            raise _Refused(403, "this server is read-only (start it with --write)")
        origin = request.headers.get("origin")
        if origin is not None and urlsplit(origin).netloc != request.headers.get("host"):
            raise _Refused(403, "cross-site request refused")
        form = await request.form()
        sent = form.get("csrf")
        if not isinstance(sent, str) or not secrets.compare_digest(sent, token):
            raise _Refused(403, "missing or wrong form token (reload the page)")
        return form

    def field(form: FormData, key: str) -> str:
        value = form.get(key)
        return value if isinstance(value, str) else ""

    async def checkout(request: Request) -> Response:
        form = await checked_form(request)
        s = await open_session(request)
        target = field(form, "entry")
        await s.set_leaf_id(target)
        return _back(request, "tree", s.id, f"?start={target}#e-{target}")

    async def label(request: Request) -> Response:
        form = await checked_form(request)
        s = await open_session(request)
        target = field(form, "entry")
        await s.append_label(target, field(form, "label").strip() or None)
        return _back(request, "tree", s.id, f"?start={target}#e-{target}")

    async def rename(request: Request) -> Response:
        form = await checked_form(request)
        s = await open_session(request)
        await s.append_session_name(field(form, "name").strip())
        return _back(request, "session", s.id)

    async def fork(request: Request) -> Response:
        form = await checked_form(request)
        s = await open_session(request)
        new = await s.fork(field(form, "entry"))
        await new.close()
        return _back(request, "session", new.id)

    async def on_error(request: Request, exc: Exception) -> Response:
        status = 404 if isinstance(exc, SessionNotFoundError) else 400
        if isinstance(exc, _Refused):
            status = exc.status
        return HTMLResponse(
            templates.get_template("error.html").render(
                message=str(exc), status=status, css=templates.env.globals["css"]
            ),
            status_code=status,
        )

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        try:
            yield
        finally:
            await sessions.close()
            if close_repo:
                await repo.close()

    async def guard(request: Request, call_next: Any) -> Response:
        """Refuse unknown ``Host`` names (DNS rebinding); add the security headers."""
        if "*" not in allowed_hosts:
            host = urlsplit("//" + request.headers.get("host", "")).hostname
            if host is None or host.lower() not in allowed_hosts:
                return Response("unknown host name", status_code=400, media_type="text/plain")
        response: Response = await call_next(request)
        response.headers["Content-Security-Policy"] = CSP
        response.headers["X-Content-Type-Options"] = "nosniff"
        # same-origin, not no-referrer: under no-referrer browsers send "Origin: null" with
        # the page's own form posts, which the origin check must refuse
        response.headers["Referrer-Policy"] = "same-origin"
        return response

    routes = [
        Route("/", list_sessions, name="sessions"),
        # the transcript pages (sessiontree.web.transcript_routes)
        Route("/s/{sid}", transcripts.page(session_page), name="session"),
        Route("/s/{sid}/turns", transcripts.part(templates), name="turns"),
        Route("/s/{sid}/events", transcripts.events, name="events"),
        Route("/s/{sid}/compare", transcripts.compare(session_page), name="compare"),
        Mount("/static", StaticFiles(packages=[("sessiontree.web", "static")]), name="static"),
        # the other session pages
        Route("/s/{sid}/tree", tree, name="tree"),
        Route("/s/{sid}/context", context, name="context"),
        Route("/s/{sid}/diff", diff, name="diff"),
        Route("/s/{sid}/stats", stats, name="stats"),
        Route("/s/{sid}/entry/{eid:path}", entry, name="entry"),
        Route("/s/{sid}/checkout", checkout, methods=["POST"], name="checkout"),
        Route("/s/{sid}/label", label, methods=["POST"], name="label"),
        Route("/s/{sid}/name", rename, methods=["POST"], name="name"),
        Route("/s/{sid}/fork", fork, methods=["POST"], name="fork"),
    ]
    return Starlette(
        routes=routes,
        middleware=[
            Middleware(BaseHTTPMiddleware, dispatch=guard),
        ],
        exception_handlers={SessionTreeError: on_error, _Refused: on_error},
        lifespan=lifespan,
    )


class _Refused(Exception):
    """A write request refused (read-only server, bad token, another site)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def _where(text: str) -> dict[str, Any]:
    """``KEY=VALUE`` conditions (separated by spaces or commas; ``KEY:=JSON`` for a number,
    boolean or null) as the ``where`` of :meth:`SessionRepo.list`, as ``sessiontree list
    --where`` reads them.

    Raises:
        _Refused: a condition that does not parse (a 400 page saying which).
    """
    try:
        return where_conditions(text.replace(",", " ").split())
    except InvalidArgumentError as exc:
        raise _Refused(400, f"metadata filter: {exc}")


def _int(value: str | None, default: int) -> int:
    try:
        return max(0, int(value)) if value is not None else default
    except ValueError:
        return default


def _back(request: Request, route: str, sid: str, suffix: str = "") -> Response:
    return RedirectResponse(str(request.app.url_path_for(route, sid=sid)) + suffix, status_code=303)
