"""Parsed entries shared by every session one SQL repository opens (opt-in, bounded)."""

from __future__ import annotations

from collections import OrderedDict

from sessiontree.entries import Entry

__all__ = ["ParseCache"]


class ParseCache:
    """Parsed entries shared by every session a repository opens, checked against the stored text.

    Opt-in (``SQLRepo(url, parse_cache_mb=64)``). A server that opens the session anew for
    each request (``repo.open(id)`` then ``build_context()``) parses the whole branch every
    time, and validating an entry costs several times fetching it (bench/README.md). This
    cache keeps each parsed entry under ``(session id, entry id)`` with the hash of the JSON
    text it came from; a later read reuses it only when the text fetched now hashes the same
    (hashing is far cheaper than validating), so a session deleted and written again under
    the same ids is never served stale. Bounded by the stored JSON it stands for
    (``max_bytes``; the parsed objects take more), least recently used dropped first.

    Not the default: the entries are shared objects, so a caller that changes a returned
    entry's lists or dicts in place (the models are frozen, their containers are not) changes
    what every later ``open`` sees; and a long-lived server with large tool outputs holds
    hundreds of MB. Treat entries from such a repository as read-only.
    """

    def __init__(self, max_bytes: int = 0) -> None:
        self._max_bytes = max_bytes
        self._bytes = 0
        self._entries: OrderedDict[tuple[str, str], tuple[int, int, Entry]] = OrderedDict()

    def get(self, session_id: str, entry_id: str, body: str | bytes) -> Entry | None:
        """The entry parsed from this same text before, else ``None``."""
        key = (session_id, entry_id)
        hit = self._entries.get(key)
        if hit is not None and hit[0] == hash(body):
            self._entries.move_to_end(key)  # least recently used goes first
            return hit[2]
        return None

    def put(
        self,
        session_id: str,
        entry_id: str,
        body: str | bytes,
        entry: Entry,
        size: int | None = None,
    ) -> None:
        """Remember ``entry`` as parsed from ``body`` (nothing when the cache is off);
        ``size``: the bytes it counts for, when not ``len(body)`` (a body whose payloads
        were stored apart counts for the JSON it expands to)."""
        size = len(body) if size is None else size
        if size > self._max_bytes:
            return
        entries = self._entries
        old = entries.pop((session_id, entry_id), None)
        if old is not None:
            self._bytes -= old[1]
        while entries and self._bytes + size > self._max_bytes:
            self._bytes -= entries.popitem(last=False)[1][1]
        entries[(session_id, entry_id)] = (hash(body), size, entry)
        self._bytes += size

    def clear(self) -> None:
        """Forget every entry (the next read of each parses it again)."""
        self._entries.clear()
        self._bytes = 0
