"""Large payloads stored once on the SQL backends (docs/storage.md "Large payloads").

Every JSON string in an entry's stored JSON whose literal (quotes and escapes included) is
:data:`PAYLOAD_THRESHOLD` bytes or more (UTF-8) is cut out of the ``entries.body`` and kept
in the ``payloads`` table under the SHA-256 of those bytes: the same image or tool output
appended again, in this session or any other (a fork, a compaction, an import), is stored
once. What the body keeps in its place is an empty string ``""``, and a head naming where::

    {"sessiontree:payloads":[<offset>,"<sha256>",...],<the rest of the entry's JSON>}

``offset`` is the character position of the ``""`` in the JSON *without* the head (``{``
followed by the rest). :func:`expand` puts each literal back, so the JSON read back is the
JSON appended (and parses to an equal entry). The head is the first key, and no entry JSON
this library writes starts with it; one that does (an odd import) gets an empty head, so a
head is always ours.

``payload_refs (session_id, hash)`` names the payloads each session's entries (and trashed
sessions, as ``trash:<id>``) refer to; written in the transaction of the rows that refer, so
a crash leaves either both or neither. Deleting a session deletes its refs and then the
payloads nothing else refers to (:data:`RELEASE_SQL`), in the delete's transaction. On
PostgreSQL, the writers of refs hold a shared transaction-level advisory lock and the
releases an exclusive one (:data:`PG_LOCK_KEY`): a release never misses a ref written by a
transaction still in flight.

Reads expand where the stored JSON is parsed (:class:`~sessiontree.backends.sql.SQLStorage`,
search, the search index, the trash), so nothing above the storage sees a reference.
"""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, TypeVar

from sessiontree.errors import CorruptSessionError, StorageError

__all__ = [
    "HEAD",
    "PAYLOAD_THRESHOLD",
    "PG_LOCK_KEY",
    "RELEASE_SQL",
    "TRASH_OWNER",
    "Split",
    "check_threshold",
    "expand",
    "expand_all",
    "expand_all_async",
    "expanded_bytes",
    "largest_entries",
    "may_split",
    "payload_hashes",
    "split_body",
    "split_rows",
]

PAYLOAD_THRESHOLD = 4096
"""The default size (bytes of a JSON string literal, UTF-8) from which a string is stored as a
payload. A store setting (``payload_threshold``); ``None`` turns it off (new entries are stored
whole; those already stored as references still read back whole)."""

HEAD = '{"sessiontree:payloads":['
"""How a stored body with payload references starts."""

TRASH_OWNER = "trash:"
"""``payload_refs.session_id`` of a trashed session: this, then its id (session ids hold no
``:``, so the two never meet)."""

PG_LOCK_KEY = 0x5E55_7AEE_0000_0001
"""The PostgreSQL advisory lock (transaction level): shared by a transaction writing refs,
exclusive for one releasing payloads."""

# the refs of the session (first parameter) go, then each payload they named that no other
# row of payload_refs names (the second statement runs first: it reads the refs still there)
RELEASE_SQL = (
    "DELETE FROM payloads WHERE hash IN (SELECT hash FROM payload_refs WHERE session_id = {p})"
    " AND NOT EXISTS (SELECT 1 FROM payload_refs AS r WHERE r.hash = payloads.hash"
    " AND r.session_id <> {p})",
    "DELETE FROM payload_refs WHERE session_id = {p}",
)
"""Free a session's payloads (``{p}``: the dialect's placeholder; parameters: the owner twice,
then once)."""


def _literals(body: str) -> Iterator[tuple[int, int]]:
    """``(start, end)`` of every string literal of the JSON text ``body``, quotes included.

    Outside its strings, JSON holds no ``"``: the next quote after a literal opens the next
    one. ``str.find`` jumps over each literal's run (a regular expression walks it character
    by character: ~20 ms for a 1 MB screenshot, against ~0.1 ms).
    """
    find = body.find
    pos = 0
    while (start := find('"', pos)) >= 0:
        end = find('"', start + 1)
        while end > 0 and body[end - 1] == "\\":
            back = end - 1
            while body[back - 1] == "\\":
                back -= 1
            if (end - back) % 2 == 0:  # an even run of backslashes: the quote closes
                break
            end = find('"', end + 1)
        if end < 0:  # not JSON (never from the serialiser): nothing more to cut
            return
        yield start, end + 1
        pos = end + 1


def check_threshold(value: object) -> int | None:
    """``value`` as a payload threshold: ``None`` (off) or an int of at least 64 bytes.

    Raises:
        StorageError: anything else (a threshold under 64 would cut out ids and keys).
    """
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 64:
        raise StorageError(f"payload_threshold must be None or an int >= 64 (bytes), not {value!r}")
    return value


@dataclass(frozen=True)
class Split:
    """A body as stored: ``body`` with its large strings cut out, and ``payloads`` (hash →
    the literal's UTF-8 bytes) it refers to."""

    body: str
    """The JSON stored in ``entries.body`` (the entry's own JSON when nothing was cut)."""
    payloads: dict[str, bytes]
    """SHA-256 hex → the JSON string literal's UTF-8 bytes, for every reference of ``body``."""


def split_body(body: str, threshold: int | None) -> Split:
    """Cut every JSON string literal of ``threshold`` UTF-8 bytes or more out of ``body``
    (an entry's JSON object); ``threshold`` ``None``: nothing is cut. See the module docstring.
    """
    marked = body.startswith(HEAD)
    if (threshold is None or len(body) < threshold) and not marked:
        return Split(body, {})
    parts: list[str] = []
    refs: list[str] = []
    payloads: dict[str, bytes] = {}
    pos = size = 0
    if threshold is not None:
        for start, end in _literals(body):
            if end - start < threshold // 4:  # UTF-8 is at most 4 bytes a character
                continue
            data = body[start:end].encode("utf-8", "surrogatepass")
            if len(data) < threshold:
                continue
            digest = hashlib.sha256(data).hexdigest()
            parts.append(body[pos:start])
            size += start - pos
            refs.append(f'{size},"{digest}"')
            parts.append('""')
            size += 2
            pos = end
            payloads[digest] = data
    if not refs and not marked:
        return Split(body, {})
    parts.append(body[pos:])
    rest = "".join(parts)
    tail = rest[1:]
    head = HEAD + ",".join(refs) + "]"
    return Split(head + tail if tail.startswith("}") else head + "," + tail, payloads)


def _head(stored: str) -> tuple[list[tuple[int, str]], str]:
    """The references ``(offset, hash)`` of a stored body with a head, and the JSON without it."""
    close = stored.index("]", len(HEAD))
    items = stored[len(HEAD) : close].split(",") if close > len(HEAD) else []
    refs = [(int(items[i]), items[i + 1].strip('"')) for i in range(0, len(items), 2)]
    after = close + 1
    if stored.startswith(",", after):
        after += 1
    return refs, "{" + stored[after:]


def payload_hashes(stored: str | bytes) -> list[str]:
    """The payload hashes a stored body refers to (none for a body without a head)."""
    text = stored if isinstance(stored, str) else bytes(stored).decode("utf-8", "surrogatepass")
    if not text.startswith(HEAD):
        return []
    return [h for _, h in _head(text)[0]]


def expand(stored: str, texts: Mapping[str, str], *, session_id: str | None = None) -> str:
    """The JSON appended, from a stored body and the payloads it refers to (hash → literal).

    Raises:
        CorruptSessionError: a payload it names is not in ``texts`` (a dangling reference).
    """
    if not stored.startswith(HEAD):
        return stored
    refs, rest = _head(stored)
    out: list[str] = []
    pos = 0
    for offset, digest in refs:
        text = texts.get(digest)
        if text is None:
            raise CorruptSessionError(
                f"stored entry refers to payload {digest}, which is not stored",
                session_id=session_id,
            )
        out.append(rest[pos:offset])
        out.append(text)
        pos = offset + 2
    out.append(rest[pos:])
    return "".join(out)


def _as_text(body: str | bytes) -> str:
    return body if isinstance(body, str) else bytes(body).decode("utf-8", "surrogatepass")


def _wanted(bodies: Iterable[str | bytes]) -> list[str]:
    hashes: dict[str, None] = {}
    for b in bodies:
        for h in payload_hashes(b):
            hashes[h] = None
    return list(hashes)


T = TypeVar("T")


def expand_all(
    bodies: Sequence[str | bytes], fetch: Callable[[list[str]], Mapping[str, str]]
) -> list[str]:
    """Every body of ``bodies`` expanded, the payloads read by one ``fetch(hashes)``."""
    wanted = _wanted(bodies)
    texts = fetch(wanted) if wanted else {}
    return [expand(_as_text(b), texts) for b in bodies]


async def expand_all_async(
    bodies: Sequence[str | bytes], fetch: Callable[[list[str]], Awaitable[Mapping[str, str]]]
) -> list[str]:
    """:func:`expand_all` with an async ``fetch``."""
    wanted = _wanted(bodies)
    texts = await fetch(wanted) if wanted else {}
    return [expand(_as_text(b), texts) for b in bodies]


def may_split(bodies: Sequence[bytes] | None, threshold: int | None) -> bool:
    """Whether :func:`split_body` may cut anything out of ``bodies`` (``None``: not known)."""
    if bodies is None:
        return True
    head = HEAD.encode()
    return any(
        (threshold is not None and len(b) >= threshold) or b[: len(head)] == head for b in bodies
    )


def split_rows(rows: Sequence[T], threshold: int | None) -> tuple[list[T], dict[str, bytes]]:
    """``rows`` (:class:`~sessiontree.backends.sql.plan.EntryRow`) with their bodies as
    stored, and every payload they refer to (hash → bytes)."""
    out: list[T] = []
    payloads: dict[str, bytes] = {}
    for r in rows:
        s = split_body(r.body, threshold)  # type: ignore[attr-defined]
        if s.body is r.body:  # type: ignore[attr-defined]
            out.append(r)
            continue
        payloads.update(s.payloads)
        out.append(replace(r, body=s.body))  # type: ignore[type-var]
    return out, payloads


INSERT_PAYLOAD_SQL = (
    "INSERT INTO payloads (hash, data, size) VALUES ({p}, {p}, {p}) ON CONFLICT (hash) DO NOTHING"
)
"""Store one payload unless stored (``hash``, ``data``, ``size``)."""
INSERT_REF_SQL = (
    "INSERT INTO payload_refs (session_id, hash) VALUES ({p}, {p}) ON CONFLICT DO NOTHING"
)
"""One session's reference to a payload (``session_id``, ``hash``)."""
COPY_REFS_SQL = (
    "INSERT INTO payload_refs (session_id, hash) SELECT {p}, hash FROM payload_refs"
    " WHERE session_id = {p} ON CONFLICT DO NOTHING"
)
"""A fork refers to every payload its source refers to (new session, source): a superset of
what the copied rows name, so no copy ever names a payload that may go."""
MOVE_REFS_SQL = "UPDATE payload_refs SET session_id = {p} WHERE session_id = {p}"
"""The refs of a session handed to another owner (new owner, old owner): the trash."""
FETCH_SQL_SQLITE = "SELECT hash, data FROM payloads WHERE hash IN (SELECT value FROM json_each(?))"
"""The payloads of a JSON list of hashes (SQLite)."""
EXISTING_SQL_SQLITE = "SELECT hash FROM payloads WHERE hash IN (SELECT value FROM json_each(?))"
"""Which of a JSON list of hashes are stored (SQLite)."""
EXISTING_SQL_POSTGRES = "SELECT hash FROM payloads WHERE hash = ANY(%s::text[])"
"""Which of a list of hashes are stored (PostgreSQL)."""
FETCH_SQL_POSTGRES = "SELECT hash, data FROM payloads WHERE hash = ANY(%s::text[])"
"""The payloads of a list of hashes (PostgreSQL)."""
USAGE_SQL = (
    "SELECT count(*), coalesce(sum(size), 0), (SELECT count(*) FROM payload_refs) FROM payloads"
)
"""``(payloads, their bytes, references)`` of the whole store."""
LARGEST_SQL = (
    "SELECT p.hash, p.size, count(r.hash) FROM payloads AS p"
    " LEFT JOIN payload_refs AS r ON r.hash = p.hash"
    " GROUP BY p.hash, p.size ORDER BY p.size DESC, p.hash LIMIT {p}"
)
"""The largest payloads: ``(hash, size, references)``."""


SESSION_SIZES_SQL = (
    "SELECT e.session_id, e.n + coalesce(p.n, 0) FROM"
    " (SELECT session_id, sum({length}) AS n FROM entries{where} GROUP BY session_id) AS e"
    " LEFT JOIN (SELECT r.session_id, sum(p.size) AS n FROM payload_refs AS r"
    " JOIN payloads AS p ON p.hash = r.hash{where_refs} GROUP BY r.session_id) AS p"
    " ON p.session_id = e.session_id"
)
"""``(session_id, bytes)``: its stored JSON (``{length}``: the dialect's byte length of
``body``) plus each payload it refers to, once. ``{where}``/``{where_refs}``: empty, or one
session's condition on ``entries`` / ``payload_refs`` (``r.``)."""

ENTRIES_WITH_PAYLOADS_SQL = (
    "SELECT session_id, id, type, {length}, {body} FROM entries WHERE {prefix} = {p}"
)
"""``(session_id, id, type, stored bytes, stored JSON)`` of every entry with payload
references (``{prefix}``: the first ``len(HEAD)`` characters of ``body``; parameter:
:data:`HEAD`)."""


def expanded_bytes(stored: str, stored_bytes: int, sizes: Mapping[str, int]) -> int:
    """The UTF-8 bytes of the JSON a stored body (``stored_bytes`` long) expands to, from the
    sizes of its payloads (hash → bytes; one missing counts 0)."""
    if not stored.startswith(HEAD):
        return stored_bytes
    refs, rest = _head(stored)
    head_chars = len(stored) - len(rest) + 1  # the head is ASCII: characters are bytes
    return stored_bytes - head_chars + 1 + sum(sizes.get(h, 0) - 2 for _, h in refs)


def largest_entries(
    top: Sequence[Sequence[Any]],
    with_payloads: Sequence[Sequence[Any]],
    sizes: Mapping[str, int],
    limit: int,
) -> list[tuple[Any, ...]]:
    """The ``limit`` largest entries as ``(session_id, id, type, bytes)``, their payloads
    counted: ``top`` (the largest by stored JSON, same shape) merged with ``with_payloads``
    (:data:`ENTRIES_WITH_PAYLOADS_SQL` rows) sized by :func:`expanded_bytes`."""
    found: dict[tuple[str, str], tuple[Any, ...]] = {(r[0], r[1]): tuple(r) for r in top}
    for sid, eid, kind, n, body in with_payloads:
        found[(sid, eid)] = (sid, eid, kind, expanded_bytes(body, int(n), sizes))
    return sorted(found.values(), key=lambda r: (-int(r[3]), r[0], r[1]))[:limit]


REFERRED_BYTES_SQL = (
    "SELECT coalesce(sum(p.size), 0) FROM payload_refs AS r JOIN payloads AS p"
    " ON p.hash = r.hash WHERE r.session_id = {p}"
)
"""The bytes of the payloads one session refers to, each once (parameter: the session)."""


def payload_rows(payloads: Mapping[str, bytes]) -> list[tuple[str, bytes, int]]:
    """``(hash, data, size)`` parameters of :data:`INSERT_PAYLOAD_SQL`."""
    return [(h, payloads[h], len(payloads[h])) for h in sorted(payloads)]


def texts_of(rows: Iterable[tuple[str, bytes | memoryview]]) -> dict[str, str]:
    """hash → literal text, from ``(hash, data)`` rows of the payloads table."""
    return {h: bytes(d).decode("utf-8", "surrogatepass") for h, d in rows}


def owner_in_trash(session_id: str) -> str:
    """``payload_refs.session_id`` of the trashed session ``session_id``."""
    return TRASH_OWNER + session_id
