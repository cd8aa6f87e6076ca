"""The web viewer: a Starlette app over one store (``sessiontree serve``).

Pages (all ``GET``, server-rendered): the session list (``/``: agent, project, model, turns,
tokens and cost columns, filters, message search with the query marked; the keys j/k, enter
and / from ``static/list.js``), the usage page (``/usage``: tokens and cost over time stacked
by model, agent or project, by project and per session, drawn by the vendored uPlot; its
rows as ``sessiontree usage --json`` prints them at ``/usage.json``), and per session the tree
(``/s/{id}``, paged), the context (``/s/{id}/context``), a diff of two branches
(``/s/{id}/diff``), stats (``/s/{id}/stats``) and an entry's stored JSON
(``/s/{id}/entry/{entry}``). Scripts and the chart library are files under ``/static/``
(package data): a page works offline and runs no inline script.

Every page is read and built on one of the app's readers (:mod:`sessiontree.web.reading`):
threads with their own event loop and their own connection to the store, each holding its own
open sessions and transcript indexes. The server's event loop only hands requests over and
sends the answers, so a heavy page (a 100,000-entry transcript, a model filter or the usage
page reading every session, a search) never holds up the others. The list's columns that a
listing does not hold are read once per session and kept until it changes
(:class:`sessiontree.web.listing.SummaryCache`, shared by the readers).

Writes (``POST`` checkout, label, name, fork) exist only when the app is made with
``write=True``; each needs the per-process token embedded in the page's forms, and a request
whose ``Origin`` is another site is refused, so another page open in the browser cannot
make them. ``Host`` must be one of the served names (no DNS rebinding). Every response
carries a Content-Security-Policy (:data:`CSP`) that allows scripts, styles and images from
this server only (and ``data:`` images, inline style).
"""

from __future__ import annotations

import contextlib
import secrets
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import urlsplit

from jinja2 import pass_context
from starlette.applications import Starlette
from starlette.datastructures import FormData
from starlette.middleware import Middleware
from starlette.middleware.base import BaseHTTPMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.templating import Jinja2Templates

from sessiontree._args import check_count
from sessiontree.errors import InvalidArgumentError, SessionNotFoundError, SessionTreeError
from sessiontree.lookup import resolve_entry, where_conditions
from sessiontree.metadata import SearchHit, SessionInfo
from sessiontree.redact import redact_url
from sessiontree.repos.base import SessionRepo
from sessiontree.session import Session
from sessiontree.usage import PricedCall, agent_of, usage_report
from sessiontree.web import charts, views
from sessiontree.web import tree as tree_views
from sessiontree.web.listing import (
    ListFilter,
    SummaryCache,
    highlight,
    project_name,
    short_tokens,
    usd,
)
from sessiontree.web.reading import Readers
from sessiontree.web.render import environment
from sessiontree.web.transcript_routes import Transcripts, event_stream

__all__ = ["CSP", "LIST_LIMIT", "SEARCH_LIMIT", "create_app"]

CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; connect-src 'self'; form-action 'self'; "
    "frame-ancestors 'none'; base-uri 'none'"
)
"""The Content-Security-Policy of every page: scripts only from this server's files (no inline
script, so no text a page shows can run), style from its files and inline, images from it and
``data:``, requests (server-sent events) only to it; nothing from anywhere else."""
LIST_LIMIT = 50
"""Sessions per page of the list."""
SEARCH_LIMIT = 50
"""Search hits shown (those of sessions the filters keep)."""
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


@dataclass(frozen=True)
class _Store:
    """What one reader reads through: its repository, open sessions and transcript indexes."""

    repo: SessionRepo
    sessions: _Sessions
    transcripts: Transcripts


def _store(repo: SessionRepo) -> _Store:
    sessions = _Sessions(repo)
    return _Store(repo, sessions, Transcripts(repo, sessions.get))


async def _close_store(store: _Store) -> None:
    await store.sessions.close()


Handler = Callable[[Request, _Store], Awaitable[Response]]


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
    env.filters.update(
        highlight=highlight, tokens=short_tokens, usd=usd, project=project_name, agent=agent_of
    )
    templates = Jinja2Templates(env=env)
    readers: Readers[_Store] = Readers(repo, _store, _close_store)
    summary_cache = SummaryCache(repo)
    token = secrets.token_urlsafe(32)
    allowed_hosts = frozenset(h.lower() for h in hosts)

    def page(request: Request, template: str, status: int = 200, **context: Any) -> Response:
        context.update(write=write, csrf=token if write else "", store=redact_url(repo.url))
        context.setdefault("section", "sessions")  # the navigation bar's current page
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

    async def open_session(request: Request, st: _Store) -> Session:
        return await st.sessions.get(request.path_params["sid"])

    def on_reader(handler: Handler) -> Callable[[Request], Awaitable[Response]]:
        """The endpoint running ``handler`` on a reader (the one rule: every page reads there)."""

        async def endpoint(request: Request) -> Response:
            return await readers.run(
                lambda st: handler(request, st), key=request.path_params.get("sid")
            )

        return endpoint

    def writing(
        handler: Callable[[Request, _Store, FormData], Awaitable[Response]],
    ) -> Callable[[Request], Awaitable[Response]]:
        """The endpoint of a write: the form is checked and read here (a request's body is
        the server loop's), then ``handler`` runs on a reader."""

        async def endpoint(request: Request) -> Response:
            form = await checked_form(request)
            return await readers.run(
                lambda st: handler(request, st, form), key=request.path_params.get("sid")
            )

        return endpoint

    # -- the session list, search and usage pages (sessiontree.web.listing / .charts) --

    async def listed(flt: ListFilter, every: list[SessionInfo], st: _Store) -> list[SessionInfo]:
        """The listing rows of ``every`` that ``flt`` keeps (entries are read only for a model
        or label filter, once per session until it changes)."""
        kept = [i for i in every if flt.keeps_info(i)]
        if flt.needs_entries:
            summaries = await summary_cache.get(kept, st.repo)
            kept = [i for i in kept if i.id in summaries and flt.keeps_summary(summaries[i.id])]
        return kept

    async def list_sessions(request: Request, st: _Store) -> Response:
        params = request.query_params
        flt = ListFilter.from_query(params)
        meta = params.get("where", "").strip()
        search = params.get("search", "").strip()
        offset = _int(params.get("offset"), 0)
        limit = _int(params.get("limit"), LIST_LIMIT) or LIST_LIMIT
        check_count(limit, "limit")  # as SessionRepo.list checks its paging
        check_count(offset, "offset")
        where = _where(meta) if meta else None
        every = await st.repo.list(where=where)
        agents = sorted({agent_of(i) for i in every})
        projects = sorted({i.metadata.cwd for i in every if i.metadata.cwd})
        kept = await listed(flt, every, st)
        infos = kept[offset : offset + limit]
        summaries = await summary_cache.get(infos, st.repo)
        note = f"sessions {offset + 1:,}–{offset + len(infos):,} of {len(kept):,}" if infos else ""
        hits: list[tuple[SearchHit, SessionInfo]] = []
        if search:
            by_id = {i.id: i for i in kept}
            for hit in await st.repo.search(search, limit=SEARCH_LIMIT * 4):
                if hit.session_id in by_id and len(hits) < SEARCH_LIMIT:
                    hits.append((hit, by_id[hit.session_id]))
        return page(
            request,
            "list.html",
            section="sessions",
            infos=infos,
            summaries=summaries,
            flt=flt,
            q=flt.q,
            where=meta,
            search=search,
            hits=hits,
            agents=agents,
            projects=projects,
            models=summary_cache.known_models(),
            offset=offset,
            limit=limit,
            more=len(kept) > offset + limit,
            total_note=note,
            query=flt.query(where=meta, search=search),
        )

    async def usage_calls(
        flt: ListFilter, every: list[SessionInfo], st: _Store
    ) -> tuple[list[PricedCall], dict[str, str]]:
        """The calls of the sessions of ``every`` that ``flt``'s text and label filters keep,
        in store order (as ``sessiontree usage`` reads them), and each session's title."""
        infos = await listed(replace(flt, since=None, until=None), every, st)
        summaries = await summary_cache.get(infos, st.repo)
        calls = [c for i in infos if i.id in summaries for c in summaries[i.id].calls]
        titles = {i.id: i.name or (i.first_message or "")[:80] or i.id for i in infos}
        return calls, titles

    async def usage(request: Request, st: _Store) -> Response:
        params = request.query_params
        flt = ListFilter.from_query(params)
        period = params.get("period", "day")
        stack = params.get("stack", "model")
        every = await st.repo.list()
        calls, titles = await usage_calls(flt, every, st)
        result = await views.off_loop(
            charts.usage_page,
            calls,
            flt,
            period=period,  # checked by usage_page
            stack=stack,
            titles=titles,
        )
        return page(
            request,
            "usage.html",
            section="usage",
            usage=result,
            chart=result.chart_data(),
            flt=flt,
            agents=sorted({agent_of(i) for i in every}),
            projects=sorted({i.metadata.cwd for i in every if i.metadata.cwd}),
            models=summary_cache.known_models(),
            periods=charts.PERIODS,
            stacks=charts.STACKS,
            query=flt.query(period=period, stack=stack),
        )

    async def usage_json(request: Request, st: _Store) -> Response:
        params = request.query_params
        flt = ListFilter.from_query(params)
        by = params.get("by", "day")
        calls, _ = await usage_calls(flt, await st.repo.list(), st)
        kept = [c for c in calls if flt.keeps_call(c.call)]
        report = await views.off_loop(
            usage_report,
            kept,
            by=by,  # checked by usage_report
            since=flt.since,
            until=flt.until,
        )
        return JSONResponse(report.to_dict())

    async def tree(request: Request, st: _Store) -> Response:
        s = await open_session(request, st)
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

    async def context(request: Request, st: _Store) -> Response:
        s = await open_session(request, st)
        leaf = request.query_params.get("leaf") or None
        ctx = await views.context_view(s, leaf, show_all=request.query_params.get("all") == "1")
        return await session_page(request, s, "context", heavy=True, ctx=ctx)

    async def diff(request: Request, st: _Store) -> Response:
        s = await open_session(request, st)
        a = request.query_params.get("a", "").strip() or None
        b = request.query_params.get("b", "").strip() or await s.get_leaf_id()
        if a is not None:
            a = (await resolve_entry(s, a)).id  # a unique id prefix is enough
        if b is not None:
            b = (await resolve_entry(s, b)).id
        result = await views.diff_view(s, a, b) if a and b else None
        return await session_page(request, s, "diff", heavy=True, diff=result, a=a, b=b)

    async def stats(request: Request, st: _Store) -> Response:
        s = await open_session(request, st)
        stats = await views.stats_view(s)
        return await session_page(request, s, "stats", heavy=True, stats=stats)

    async def entry(request: Request, st: _Store) -> Response:
        s = await open_session(request, st)
        found = await s.find_entry(request.path_params["eid"])
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

    # -- the transcript pages (sessiontree.web.transcript_routes), on the readers --

    async def transcript(request: Request, st: _Store) -> Response:
        return await st.transcripts.page(request, session_page)

    async def turns(request: Request, st: _Store) -> Response:
        return await st.transcripts.part(request, templates)

    async def compare(request: Request, st: _Store) -> Response:
        return await st.transcripts.compare(request, session_page)

    async def events(request: Request) -> Response:
        """The live stream runs here, on the server's loop; each look at the session runs on
        the reader holding its index."""
        sid = request.path_params["sid"]
        seen = await readers.run(lambda st: st.transcripts.look(sid), key=sid)
        return event_stream(
            request,
            seen,
            lambda: readers.run(
                lambda st: st.transcripts.look(sid, strict=False), key=sid, sticky=True
            ),
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

    async def checkout(request: Request, st: _Store, form: FormData) -> Response:
        s = await open_session(request, st)
        target = field(form, "entry")
        await s.set_leaf_id(target)
        return _back(request, "tree", s.id, f"?start={target}#e-{target}")

    async def label(request: Request, st: _Store, form: FormData) -> Response:
        s = await open_session(request, st)
        target = field(form, "entry")
        await s.append_label(target, field(form, "label").strip() or None)
        return _back(request, "tree", s.id, f"?start={target}#e-{target}")

    async def rename(request: Request, st: _Store, form: FormData) -> Response:
        s = await open_session(request, st)
        await s.append_session_name(field(form, "name").strip())
        return _back(request, "session", s.id)

    async def fork(request: Request, st: _Store, form: FormData) -> Response:
        s = await open_session(request, st)
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
            await readers.close()
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
        Route("/", on_reader(list_sessions), name="sessions"),
        Route("/usage", on_reader(usage), name="usage"),
        Route("/usage.json", on_reader(usage_json), name="usage_json"),
        Mount("/static", StaticFiles(packages=[("sessiontree.web", "static")]), name="static"),
        # the transcript pages (sessiontree.web.transcript_routes)
        Route("/s/{sid}", on_reader(transcript), name="session"),
        Route("/s/{sid}/turns", on_reader(turns), name="turns"),
        Route("/s/{sid}/events", events, name="events"),
        Route("/s/{sid}/compare", on_reader(compare), name="compare"),
        # the other session pages
        Route("/s/{sid}/tree", on_reader(tree), name="tree"),
        Route("/s/{sid}/context", on_reader(context), name="context"),
        Route("/s/{sid}/diff", on_reader(diff), name="diff"),
        Route("/s/{sid}/stats", on_reader(stats), name="stats"),
        Route("/s/{sid}/entry/{eid:path}", on_reader(entry), name="entry"),
        Route("/s/{sid}/checkout", writing(checkout), methods=["POST"], name="checkout"),
        Route("/s/{sid}/label", writing(label), methods=["POST"], name="label"),
        Route("/s/{sid}/name", writing(rename), methods=["POST"], name="name"),
        Route("/s/{sid}/fork", writing(fork), methods=["POST"], name="fork"),
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
