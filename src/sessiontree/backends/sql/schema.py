"""The one SQL schema for SQLite and PostgreSQL, and its ordered list of migrations (docs/storage.md "sql").

Tables (the same columns on both databases; only the column types and the full-text index
differ)::

    schema_version  app ('sessiontree'), version, applied_at_ms   -- one row per migration
    sessions        id, metadata (JSON), created_us, modified_us (Unix microseconds),
                    leaf_id, name, entry_count, message_count, first_message,
                    parent_session_id                -- everything list() shows: no entry is read
    entries         session_id, seq (per-session append order from 0), id, parent_id, type,
                    timestamp, target_id (label/leaf targets), body (the camelCase entry JSON)
                    PRIMARY KEY (session_id, seq), UNIQUE (session_id, id)
    search_index_state  indexed_upto  (SQLite only, one row: the search index watermark)
    search_pending  session_id, source_id  (PostgreSQL only, version 5: forks whose copies
                    have no search text yet)
    (version 6: PostgreSQL ``entries`` lose their foreign key to ``sessions``; SQLite never
    enforced it. Deleting a session deletes its entries itself on both)
    (version 7: PostgreSQL ``session_meta`` keys and values over 1000 bytes stored whole by
    older code become their SHA-256, as they are written and looked up since)
    session_meta    key, value (JSON text), session_id  -- filterable metadata (version 3)
                    PRIMARY KEY (key, value, session_id)
    sync_positions  session_id PRIMARY KEY, position (JSON text)  -- the newest sync position
                    of a synced session, written in its append's transaction (version 8)
    drafts          session_id PRIMARY KEY, body (the draft JSON), updated_ms  -- the reply
                    streaming in the session, overwritten as it arrives (version 9,
                    :mod:`sessiontree.drafts`); deleted with the session
    (version 11: ``session_meta`` gains a ``project`` row for each session with a ``cwd`` and
    no project of its own: the scope of :mod:`sessiontree.repos.scoped`)
    trash           session_id (PRIMARY KEY), trashed_us, metadata, created_us, modified_us,
                    name, entry_count, size_bytes, bodies  -- sessions moved to the trash
                    (version 10): ``bodies`` holds the entries' stored JSON, one per line, in
                    append order, so a restore writes back exactly what was stored
    store_meta      key PRIMARY KEY, value (text)  -- settings of the whole store (version
                    11); the row ``encryption`` says the store is encrypted and under which
                    key ids (:mod:`sessiontree.storage.encryption`)
    payloads        hash (SHA-256 hex) PRIMARY KEY, data (the JSON string literal's UTF-8
                    bytes), size  -- large strings of entry JSON, stored once (version 12,
                    :mod:`sessiontree.backends.sql.payloads`)
    payload_refs    session_id (or ``trash:<id>``), hash  PRIMARY KEY (session_id, hash)
                    -- which payloads each session refers to (version 12)
    leases          session_id PRIMARY KEY, owner, fence, expires_ms  -- (version 13) the lease of
                    a session an agent runs in (:mod:`sessiontree.storage.lease`): checked in
                    the transaction of every write made under it; deleted with the session

Indexes: ``sessions(modified_us DESC, id DESC)`` for listing; ``entries(session_id, id)`` (the
unique constraint) for the recursive branch query and the validation lookup;
``entries(session_id, target_id, seq) WHERE type = 'label'`` for labels;
``entries(session_id, seq) WHERE type = 'session_info'`` for names. Search (a case-insensitive
substring, :mod:`sessiontree.storage.search`; version 4): an FTS5 table ``entries_fts`` with the
``trigram`` tokenizer (rowid = the entry row's rowid) on SQLite; a ``search_text`` column with
a ``pg_trgm`` GIN index on PostgreSQL. Both hold the lower-cased text of ``message`` entries
(:func:`sessiontree.messages.message_text`, cut by :func:`plan.index_text`). Versions 1-3 had
word-prefix indexes (FTS5 ``unicode61``, a ``tsvector`` column ``entries.fts``).

On SQLite the FTS5 table is written *after* the append, not in its transaction (version 2):
an FTS5 insert makes every ``COMMIT`` flush a new index segment, which more than doubled the
cost of an append (bench/README.md). The one-row
table ``search_index_state (indexed_upto)`` is the watermark: every ``entries`` row whose
rowid is ``<= indexed_upto`` is in ``entries_fts``, none above it is. Rows above it are indexed
in one transaction ("catch-up") by the next search, or by the append that brings the backlog
to :data:`sessiontree.backends.sql.sqlite_append.INDEX_BACKLOG` rows. Deleting a session lowers the
watermark to the highest remaining rowid, since SQLite hands the rowids of deleted newest rows
out again. PostgreSQL writes its search text in the entry's own ``INSERT``; its version-2 step
only stamps the version. The version-4 step empties the SQLite index (the next search indexes
every row again) and fills ``search_text`` on PostgreSQL, which needs the ``pg_trgm``
extension (``CREATE EXTENSION pg_trgm``; refused with a clear :class:`StorageError` when the
role may not create it).

Migrations: :data:`MIGRATIONS` is ordered; position ``i`` creates version ``i + 1``. Every
schema that shipped upgrades (tests/test_old_schemas.py): a store stamped 3 without
``session_meta`` was written while version 3 was the trigram search step, and is read as
version 2 (:data:`SQLITE_VERSION_SQL`). A database
stamped with a higher version than this code knows is refused (:class:`StorageError`) instead of
guessed at; a database that holds tables but no ``schema_version`` table of ours is refused
(:class:`CorruptSessionError`) before anything is written to it.
"""

from __future__ import annotations

from dataclasses import dataclass

from sessiontree.errors import CorruptSessionError, StorageError

__all__ = [
    "APP",
    "META_VERSION",
    "MIGRATIONS",
    "POSTGRES_VERSION_SQL",
    "SCHEMA_VERSION",
    "SEARCH_VERSION",
    "SQLITE_TOKENIZER",
    "SQLITE_VERSION_SQL",
    "Migration",
    "check_version",
    "foreign_database",
]

APP = "sessiontree"
"""The marker written in ``schema_version.app``: a database is ours only if it carries it."""


@dataclass(frozen=True)
class Migration:
    """One schema step: the statements for each dialect, applied in one transaction."""

    description: str
    sqlite: tuple[str, ...]
    postgres: tuple[str, ...]
    postgres_after: tuple[str, ...] = ()
    """Run after the engine's own Python step for this version (a data backfill), if any."""


SQLITE_TOKENIZER = "trigram case_sensitive 1"
"""The FTS5 tokenizer of ``entries_fts`` (and of the private table searches use while the
index lags): trigrams of the stored, already lower-cased text."""

_V1_SQLITE = (
    """CREATE TABLE schema_version (
        app TEXT NOT NULL,
        version INTEGER NOT NULL,
        applied_at_ms INTEGER NOT NULL
    )""",
    """CREATE TABLE sessions (
        id TEXT PRIMARY KEY,
        metadata TEXT NOT NULL,
        created_us INTEGER NOT NULL,
        modified_us INTEGER NOT NULL,
        leaf_id TEXT,
        name TEXT,
        entry_count INTEGER NOT NULL DEFAULT 0,
        message_count INTEGER NOT NULL DEFAULT 0,
        first_message TEXT,
        parent_session_id TEXT
    )""",
    "CREATE INDEX sessions_by_modified ON sessions (modified_us DESC, id DESC)",
    """CREATE TABLE entries (
        session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
        seq INTEGER NOT NULL,
        id TEXT NOT NULL,
        parent_id TEXT,
        type TEXT NOT NULL,
        timestamp TEXT NOT NULL,
        target_id TEXT,
        body TEXT NOT NULL,
        PRIMARY KEY (session_id, seq),
        UNIQUE (session_id, id)
    )""",
    "CREATE INDEX entries_labels ON entries (session_id, target_id, seq) WHERE type = 'label'",
    "CREATE INDEX entries_names ON entries (session_id, seq) WHERE type = 'session_info'",
    "CREATE VIRTUAL TABLE entries_fts USING fts5 (text, tokenize = 'unicode61 remove_diacritics 2')",
)  # version 4 replaces this table

_V1_POSTGRES = (
    """CREATE TABLE schema_version (
        app TEXT NOT NULL,
        version INTEGER NOT NULL,
        applied_at_ms BIGINT NOT NULL
    )""",
    """CREATE TABLE sessions (
        id TEXT PRIMARY KEY,
        metadata JSON NOT NULL,
        created_us BIGINT NOT NULL,
        modified_us BIGINT NOT NULL,
        leaf_id TEXT,
        name TEXT,
        entry_count BIGINT NOT NULL DEFAULT 0,
        message_count BIGINT NOT NULL DEFAULT 0,
        first_message TEXT,
        parent_session_id TEXT
    )""",
    "CREATE INDEX sessions_by_modified ON sessions (modified_us DESC, id DESC)",
    """CREATE TABLE entries (
        session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
        seq BIGINT NOT NULL,
        id TEXT NOT NULL,
        parent_id TEXT,
        type TEXT NOT NULL,
        timestamp TEXT NOT NULL,
        target_id TEXT,
        body JSON NOT NULL,
        fts TSVECTOR,
        PRIMARY KEY (session_id, seq),
        UNIQUE (session_id, id)
    )""",
    "CREATE INDEX entries_labels ON entries (session_id, target_id, seq) WHERE type = 'label'",
    "CREATE INDEX entries_names ON entries (session_id, seq) WHERE type = 'session_info'",
    "CREATE INDEX entries_fts ON entries USING GIN (fts) WHERE fts IS NOT NULL",
)

_V2_SQLITE = (
    "CREATE TABLE search_index_state (indexed_upto INTEGER NOT NULL)",
    # a version-1 database indexed every row as it was appended: all of it is up to date
    "INSERT INTO search_index_state (indexed_upto) SELECT coalesce(max(rowid), 0) FROM entries",
)

# session_meta: the filterable metadata of each session (metadata_pairs: top-level keys whose
# value is a string, integer, boolean or null, as JSON text), one row per key, written with the
# session row (metadata never changes afterwards); list(where=...) reads it through its primary
# key. Existing sessions are filled from their stored metadata JSON.
_V3_SQLITE = (
    """CREATE TABLE session_meta (
        key TEXT NOT NULL,
        value TEXT NOT NULL,
        session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
        PRIMARY KEY (key, value, session_id)
    ) WITHOUT ROWID""",
    "CREATE INDEX session_meta_by_session ON session_meta (session_id)",
    """INSERT INTO session_meta (key, value, session_id)
        SELECT j.key, CASE j.type WHEN 'true' THEN 'true' WHEN 'false' THEN 'false'
            WHEN 'null' THEN 'null' ELSE json_quote(j.value) END, s.id
        FROM sessions AS s, json_each(s.metadata) AS j
        WHERE j.type IN ('text', 'integer', 'true', 'false', 'null')""",
)

_V3_POSTGRES = (
    """CREATE TABLE session_meta (
        key TEXT NOT NULL,
        value TEXT NOT NULL,
        session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
        PRIMARY KEY (key, value, session_id)
    )""",
    "CREATE INDEX session_meta_by_session ON session_meta (session_id)",
    # keys and values over 1000 bytes as their SHA-256 (postgres.META_MAX_BYTES, _meta_text)
    """INSERT INTO session_meta (key, value, session_id)
        SELECT CASE WHEN octet_length(j.key) > 1000
                THEN 'sha256:' || encode(sha256(convert_to(j.key, 'UTF8')), 'hex')
                ELSE j.key END,
            CASE WHEN octet_length(j.value::text) > 1000
                THEN 'sha256:' || encode(sha256(convert_to(j.value::text, 'UTF8')), 'hex')
                ELSE j.value::text END,
            s.id
        FROM sessions AS s, json_each(s.metadata) AS j
        WHERE json_typeof(j.value) IN ('string', 'boolean', 'null')
            OR (json_typeof(j.value) = 'number' AND j.value::text ~ '^-?[0-9]+$')""",
)

_V4_SQLITE = (
    # word-prefix search (unicode61) missed words inside CJK runs and split file names; the
    # trigram index finds any substring of three characters or more, and holds lower-cased
    # text (search.text_for_search), so the index is case-sensitive over folded text
    "DROP TABLE IF EXISTS entries_fts",
    f"CREATE VIRTUAL TABLE entries_fts USING fts5 (text, tokenize = '{SQLITE_TOKENIZER}')",
    # every row is indexed again by the next search (the lazy catch-up)
    "UPDATE search_index_state SET indexed_upto = 0",
)

# (written to find its own work done: a step may run again over a store whose stamp was lost)
_V4_POSTGRES = (
    "ALTER TABLE entries ADD COLUMN IF NOT EXISTS search_text TEXT",
    # filled from each message's text by the engine (PostgreSQL cannot read message_text
    # out of the JSON), then indexed; see PostgresConnection._migrate_search
)

_V4_POSTGRES_AFTER = (
    "DROP INDEX IF EXISTS entries_fts",
    "ALTER TABLE entries DROP COLUMN IF EXISTS fts",
)

# a fork's copies leave search_text NULL (copying it made PostgreSQL insert every trigram of
# every copied message into the GIN index again: two thirds of the fork's time); a row here
# says the session holds such copies of source_id's rows, filled by the next search
_V5_POSTGRES = (
    """CREATE TABLE IF NOT EXISTS search_pending (
        session_id TEXT PRIMARY KEY REFERENCES sessions (id) ON DELETE CASCADE,
        source_id TEXT NOT NULL
    )""",
)

# the entries -> sessions foreign key checked every inserted row with a query of its own (much
# of a fork's copy time, bench/README.md); every insert into entries already reads the
# session row in its own transaction (the compare-and-set UPDATE, SELECT … FOR UPDATE, or the
# session row it inserts), and delete_session deletes the entries itself, as on SQLite
_V6_POSTGRES = ("ALTER TABLE entries DROP CONSTRAINT IF EXISTS entries_session_id_fkey",)

# the version-3 step and the session writes of the commits before 471fcfe stored every
# session_meta key and value whole on PostgreSQL; since then those over 1000 bytes are their
# SHA-256 (postgres._meta_text), which is what list(where=...) looks up: the whole ones over
# 1000 bytes become their hash (none is found otherwise). A hash is 71 bytes: the step finds
# its own work done
_META_HASHED = (
    "CASE WHEN octet_length({c}) > 1000"
    " THEN 'sha256:' || encode(sha256(convert_to({c}, 'UTF8')), 'hex') ELSE {c} END"
)
_V7_POSTGRES = (
    f"UPDATE session_meta SET key = {_META_HASHED.format(c='key')},"
    f" value = {_META_HASHED.format(c='value')}"
    " WHERE octet_length(key) > 1000 OR octet_length(value) > 1000",
)

# the newest sync position of each synced session (sessiontree.storage.sync_index), written in
# the transaction of the append that stores it, so a re-sync reads this table instead of
# every session's leaf entries; a session synced before this step is not in it (its entries
# are read, as before)
_SYNC_POSITIONS = (
    """CREATE TABLE IF NOT EXISTS sync_positions (
        session_id TEXT PRIMARY KEY,
        position TEXT NOT NULL
    )""",
)

# one row per session with a reply streaming (or left by a process that died while it
# streamed): upserted every save, deleted when the reply is stored; not an entry
_V9_SQLITE = (
    """CREATE TABLE IF NOT EXISTS drafts (
        session_id TEXT PRIMARY KEY,
        body TEXT NOT NULL,
        updated_ms INTEGER NOT NULL
    )""",
)
_V9_POSTGRES = (
    """CREATE TABLE IF NOT EXISTS drafts (
        session_id TEXT PRIMARY KEY,
        body TEXT NOT NULL,
        updated_ms BIGINT NOT NULL
    )""",
)

# the writer lease of a session (sessiontree.storage.lease): owner "" is a released lease,
# kept so the next holder's fence is higher still
_LEASES = """CREATE TABLE IF NOT EXISTS leases (
        session_id TEXT PRIMARY KEY,
        owner TEXT NOT NULL,
        fence {int} NOT NULL,
        expires_ms {int} NOT NULL
    )"""

# the trash: a session moved here leaves sessions/entries/session_meta (and the search
# index) in the same transaction, and comes back whole through create_session
_V10_TRASH = """CREATE TABLE IF NOT EXISTS trash (
        session_id TEXT PRIMARY KEY,
        trashed_us {int} NOT NULL,
        metadata TEXT NOT NULL,
        created_us {int} NOT NULL,
        modified_us {int} NOT NULL,
        name TEXT,
        entry_count {int} NOT NULL,
        size_bytes {int} NOT NULL,
        bodies TEXT NOT NULL
    )"""

# settings of the whole store, read when it is opened: an ``encryption`` row makes an open
# without the store's keys fail before anything is read
_STORE_META = (
    """CREATE TABLE IF NOT EXISTS store_meta (
        key TEXT PRIMARY KEY,
        value TEXT NOT NULL
    )""",
)

# large strings of entry JSON stored once, by SHA-256 (sessiontree.backends.sql.payloads);
# payload_refs names those each session (or trashed session) refers to, written with the rows
_PAYLOADS = """CREATE TABLE IF NOT EXISTS payloads (
        hash TEXT PRIMARY KEY,
        data {blob} NOT NULL,
        size {int} NOT NULL
    )"""
_PAYLOAD_REFS = (
    """CREATE TABLE IF NOT EXISTS payload_refs (
        session_id TEXT NOT NULL,
        hash TEXT NOT NULL,
        PRIMARY KEY (session_id, hash)
    )""",
    "CREATE INDEX IF NOT EXISTS payload_refs_by_hash ON payload_refs (hash)",
)

# scoping (repos.scoped): a session's project is its metadata "project", else its cwd
# (metadata.project_of), and session_meta holds it under the key "project" so that
# list(where={"project": ...}) is one primary-key lookup; sessions written before hold only
# their cwd row (and a "project": null row when created with an explicit null project).
# Values are copied as stored, so a PostgreSQL cwd over 1000 bytes keeps its SHA-256 form.
_SCOPE_PROJECT = (
    """DELETE FROM session_meta WHERE key = 'project' AND value = 'null'
        AND session_id IN (SELECT session_id FROM session_meta
            WHERE key = 'cwd' AND value <> 'null')""",
    """INSERT INTO session_meta (key, value, session_id)
        SELECT 'project', c.value, c.session_id FROM session_meta AS c
        WHERE c.key = 'cwd' AND c.value <> 'null' AND NOT EXISTS (SELECT 1 FROM session_meta
            AS p WHERE p.key = 'project' AND p.session_id = c.session_id)""",
)

MIGRATIONS: tuple[Migration, ...] = (
    Migration("sessions, entries, indexes, full-text search", _V1_SQLITE, _V1_POSTGRES),
    # PostgreSQL keeps writing its tsvector in the entry's own INSERT: nothing to change there
    Migration("SQLite: search index caught up after the append (watermark)", _V2_SQLITE, ()),
    Migration("session_meta: metadata keys for list(where=...)", _V3_SQLITE, _V3_POSTGRES),
    Migration(
        "search = case-insensitive substring: trigram indexes (FTS5 trigram, pg_trgm)",
        _V4_SQLITE,
        _V4_POSTGRES,
        _V4_POSTGRES_AFTER,
    ),
    # SQLite's copies are above the search-index watermark already: nothing to change there
    Migration("PostgreSQL: search text of fork copies filled by the next search", (), _V5_POSTGRES),
    # SQLite never enforced the key (no PRAGMA foreign_keys): nothing to change there
    Migration("PostgreSQL: entries without a foreign key to sessions", (), _V6_POSTGRES),
    # SQLite stores every key and value whole: nothing to change there
    Migration("PostgreSQL: long session_meta keys and values as their SHA-256", (), _V7_POSTGRES),
    Migration(
        "sync_positions: the newest sync position of each session", _SYNC_POSITIONS, _SYNC_POSITIONS
    ),
    Migration("drafts: the reply streaming in a session", _V9_SQLITE, _V9_POSTGRES),
    Migration(
        "trash: sessions moved aside by prune, restorable whole",
        (_V10_TRASH.format(int="INTEGER"),),
        (_V10_TRASH.format(int="BIGINT"),),
    ),
    Migration("store_meta: settings of the store (encryption)", _STORE_META, _STORE_META),
    Migration(
        "payloads: large strings of entry JSON stored once, and who refers to them",
        (_PAYLOADS.format(blob="BLOB", int="INTEGER"), *_PAYLOAD_REFS),
        (_PAYLOADS.format(blob="BYTEA", int="BIGINT"), *_PAYLOAD_REFS),
    ),
    Migration(
        "leases: one writer per running agent",
        (_LEASES.format(int="INTEGER"),),
        (_LEASES.format(int="BIGINT"),),
    ),
    Migration(
        "scoping: each session's project (else its cwd) in session_meta",
        _SCOPE_PROJECT,
        _SCOPE_PROJECT,
    ),
)
"""Ordered schema steps; ``MIGRATIONS[i]`` brings a database from version ``i`` to ``i + 1``."""

SEARCH_VERSION = 4
"""The version whose step makes search a substring; PostgreSQL fills ``search_text`` then."""

SCHEMA_VERSION = len(MIGRATIONS)
"""The schema version this code writes and reads."""

META_VERSION = 3
"""The version whose step makes ``session_meta``."""

# The version a store is at: its newest stamp, except for the stores written by the commits
# whose third step was the trigram search (c261190 until f0451e9 made that step version 4):
# stamped 3 but without session_meta, they are at version 2 of MIGRATIONS, and the steps
# from 3 on run (the trigram step again, which finds its own work done). Then the count of
# stamps, and of stamps that are ours (app = the parameter).
SQLITE_VERSION_SQL = (
    f"SELECT CASE WHEN max(version) = {META_VERSION} AND NOT EXISTS (SELECT 1 FROM"
    " sqlite_master WHERE type = 'table' AND name = 'session_meta')"
    f" THEN {META_VERSION - 1} ELSE max(version) END,"
    " count(*), sum(app = ?) FROM schema_version"
)
"""The stored version query on SQLite: ``(version, stamps, our stamps)``."""
POSTGRES_VERSION_SQL = (
    f"SELECT CASE WHEN max(version) = {META_VERSION} AND to_regclass(quote_ident("
    f"current_schema()) || '.session_meta') IS NULL THEN {META_VERSION - 1}"
    " ELSE max(version) END,"
    " count(*), count(*) FILTER (WHERE app = %s) FROM schema_version"
)
"""The stored version query on PostgreSQL: ``(version, stamps, our stamps)``."""


def check_version(found: int | None, where: str) -> None:
    """Refuse a database written by a newer sessiontree (docs/storage.md "sql").

    Args:
        found: the version stamped in the database, ``None`` for a new database.
        where: the database, for the message (a file path or a redacted URL).

    Raises:
        StorageError: ``found`` is higher than :data:`SCHEMA_VERSION`.
    """
    if found is not None and found > SCHEMA_VERSION:
        raise StorageError(
            f"{where}: written by a newer sessiontree (schema version {found}, this version "
            f"reads up to {SCHEMA_VERSION}); upgrade sessiontree to open it"
        )


def foreign_database(where: str, detail: str) -> CorruptSessionError:
    """The error for a database that is not a sessiontree store (nothing is written to it)."""
    return CorruptSessionError(
        f"not a sessiontree database ({detail}); refusing to touch it", path=where
    )
