"""Storage: the :class:`~sessiontree.storage.base.SessionStorage` protocol every backend
implements, and the design of the three backends behind it (docs/storage.md).

This package holds what all backends share: the protocol and the fork algorithm
(:mod:`~sessiontree.storage.base`), the search semantics (:mod:`~sessiontree.storage.search`),
the size limit per session (:mod:`~sessiontree.storage.growth`) and private file modes
(:mod:`~sessiontree.storage.private_files`). Each backend is one
package under :mod:`sessiontree.backends` holding its storage, its repository, and its
listing and index code. Importing this package imports nothing else.

What each backend stores
------------------------

* **memory** (:mod:`sessiontree.backends.memory`): per session a
  :class:`~sessiontree.tree.TreeIndex` (the entry models in append order, by id, and their
  fold: leaf, labels, name, listing counts) and its metadata; the repository is a dict of
  them. Nothing outlives the process.
* **jsonl** (:mod:`sessiontree.backends.jsonl`): per session a directory
  ``<root>/<id>/`` holding ``session.jsonl`` (a pi v3 file: a header line, then one entry per
  line, append-only), its lock file ``session.jsonl.lock`` and the listing sidecar
  ``stats.json`` and, while a reply streams, the draft sidecar ``session.jsonl.draft``;
  ``<root>/.index/listing.jsonl`` is the repository's listing index. The leaf
  is not stored: it is the newest entry, or what the newest ``leaf`` entry names.
* **sql** (:mod:`sessiontree.backends.sql`, SQLite and PostgreSQL): tables ``sessions`` (one
  row per session: metadata, times, leaf, name and the counts listing shows), ``entries``
  (one row per entry: its columns and its camelCase JSON ``body``), ``session_meta`` (the
  top-level metadata values ``list(where=...)`` looks up), ``drafts`` (the reply streaming
  in a session, :mod:`sessiontree.drafts`), ``schema_version``, and the search
  index (SQLite: FTS5 ``entries_fts`` behind the ``search_index_state`` watermark;
  PostgreSQL: ``entries.search_text`` under a ``pg_trgm`` index, plus ``search_pending``).
  :mod:`sessiontree.backends.sql.schema` draws the columns and the migrations.

What a fork copies
------------------

Every backend forks by one plan (:func:`~sessiontree.storage.base.fork_plan`): the entries
root → target with their ids, a reference to an entry left behind set to ``null``, and a
label entry for each copy whose label the copies would not give it; the new session's
metadata names its parent session and entry. It appears whole or not at all. Memory copies
the entry models (they are immutable, so shared); JSONL writes a new log whose unchanged
lines are the source's bytes (:mod:`sessiontree.backends.jsonl.fork`), linked into place
whole; SQL copies the unchanged rows inside the database in one transaction (``INSERT …
SELECT``, :mod:`sessiontree.backends.sql.fork`), and only rows the plan changed are written
from JSON. No cache is copied: the fork's storage reads its own.

What each cache trusts, and when it is dropped
----------------------------------------------

Entries are immutable and a session is append-only, so a parsed entry stays true as long as
the session it came from exists under the same identity.

* **JSONL line index** (:mod:`sessiontree.backends.jsonl.line_index`): one record per line
  read (id, parent, type, targets), validated into an entry only when returned and kept on
  its record. It trusts the byte offset it has read up to: every read and append first
  ``stat`` s the log and reads what others appended after that offset. The index is never
  dropped: a log deleted or replaced under its path (another inode) raises
  ``SessionNotFoundError`` (open the session again), one shorter than the offset
  ``CorruptSessionError``.
* **JSONL listing sidecar** (``stats.json``, :mod:`sessiontree.backends.jsonl.stats`): the
  counts of the log's first ``covered`` bytes. Trusted only for the same inode and while
  ``covered`` is within the file; listing reads the bytes after it. Written on create, every
  :data:`~sessiontree.backends.jsonl.stats.REFRESH_BYTES` appended and on close.
* **JSONL listing index** (:mod:`sessiontree.backends.jsonl.listing_index`): per session the
  inode, size and mtime of its log with the header and counts true of them. The directory
  listing is the truth of which sessions exist; an entry is trusted while its log's
  ``stat`` matches, and is ``stat``-ed when shown, when a live writer announced it, and for
  every session once the last full check is older than
  :data:`~sessiontree.backends.jsonl.listing_index.VERIFY_AFTER_S`. A broken index is rebuilt.
* **SQL entry cache** (per storage, :class:`~sessiontree.backends.sql.storage.SQLStorage`):
  the entries it parsed, by id, bounded by count and stored bytes (when full it keeps what it
  holds). Dropped whole when the session row's ``created_us`` differs from the one it read
  (the session was deleted and made again under its id).
* **SQL context reuse** (same storage): the last context branch read, under its leaf's id
  and stored JSON. The next context's walk from the leaf stops at that leaf; reaching the same
  row (same JSON, so same parent) with no compaction after it, the context is that one plus
  the rows walked. A compaction in between or a leaf moved elsewhere reads the context anew;
  memory and JSONL walk their in-memory index from the leaf instead.
* **SQL parse cache** (opt-in, per repository,
  :class:`~sessiontree.backends.sql.parse_cache.ParseCache`): entries shared by every session
  the repository opens, under (session id, entry id) with the hash of the JSON they came
  from; reused only when the text fetched now hashes the same. Bounded, least recently used
  dropped first; emptied when the repository closes.
"""
