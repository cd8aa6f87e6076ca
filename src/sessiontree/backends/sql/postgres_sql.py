"""The PostgreSQL engine's statements (:mod:`~sessiontree.backends.sql.postgres`).

The compare-and-set append inserts its rows and updates the session row in one statement,
only while the session row is still the one the plan read; rows travel as binary arrays.
"""

from __future__ import annotations

from sessiontree.backends.sql.fork import FIRST_MESSAGES, PARSED_TYPES, WINDOW_ROWS

__all__ = [
    "CAS_ONE_SQL",
    "CAS_SQL",
    "CHAIN_SQL",
    "CHAIN_UNTIL_SQL",
    "FORK_CHAIN_SQL",
    "FORK_WINDOW_META_SQL",
    "FORK_WINDOW_SQL",
    "fork_sql",
    "INSERT_SQL",
    "LOOKUP_SQL",
    "UPDATE_SET",
    "UPDATE_SQL",
]

LOOKUP_SQL = """
SELECT s.leaf_id, s.entry_count, s.message_count, s.first_message IS NOT NULL,
       (SELECT json_object_agg(e.id, e.type) FROM entries AS e
         WHERE e.session_id = s.id AND e.id = ANY(array_append(%(ids)s::text[], s.leaf_id)))
  FROM sessions AS s WHERE s.id = %(sid)s
"""

# arrays go in binary (``%b``): the text format escapes every quote of the JSON bodies in Python
ROWS = (
    "FROM unnest(%(seq)b::bigint[], %(id)b::text[], %(parent)b::text[], %(type)b::text[],"
    " %(ts)b::text[], %(target)b::text[], %(body)b::text[], %(text)b::text[])"
    " AS r (seq, id, parent_id, type, ts, target_id, body, text)"
)
INSERT_COLUMNS = (
    "INSERT INTO entries (session_id, seq, id, parent_id, type, timestamp, target_id, body,"
    " search_text)"
)
ROW_VALUES = "r.seq, r.id, r.parent_id, r.type, r.ts, r.target_id, r.body::json, r.text"
UPDATE_SET = (
    "UPDATE sessions SET leaf_id = %(leaf)s, entry_count = %(count)s, message_count = %(msgs)s,"
    " modified_us = %(now)s, first_message = COALESCE(first_message, %(first)s),"
    " name = COALESCE(%(name)s, name)"
)
# the session row as the plan read it: same count AND same leaf. The count alone would pass
# when another process deleted the session and made it again with as many entries, and the
# entry would go under a parent that no longer exists
UNCHANGED = (
    "id = %(sid)s AND entry_count = %(old)s AND leaf_id IS NOT DISTINCT FROM %(old_leaf)s::text"
)
CAS_SQL = (
    f"WITH upd AS ({UPDATE_SET} WHERE {UNCHANGED} RETURNING id)"
    f" {INSERT_COLUMNS} SELECT upd.id, {ROW_VALUES} FROM upd, ({'SELECT * ' + ROWS}) AS r"
)
# one row (every append an agent loop makes): scalar parameters; psycopg's per-element array
# dumping was a fifth of the append's time for a one-element array
CAS_ONE_SQL = (
    f"WITH upd AS ({UPDATE_SET} WHERE {UNCHANGED} RETURNING id)"
    f" {INSERT_COLUMNS} SELECT upd.id, %(seq)s::bigint, %(id)s::text, %(parent)s::text,"
    " %(type)s::text, %(ts)s::text, %(target)s::text, %(body)s::json, %(text)s::text FROM upd"
)
INSERT_SQL = f"{INSERT_COLUMNS} SELECT %(sid)s, {ROW_VALUES} {ROWS}"
UPDATE_SQL = f"{UPDATE_SET} WHERE id = %(sid)s"

_FORK_PARTS = {
    "by_id": "WITH src AS (SELECT c.seq, e.id, e.parent_id, e.type, e.timestamp, e.target_id,"
    " e.body FROM unnest(%(copy_id)b::text[], %(copy_seq)b::bigint[]) AS c (id, seq)"
    " JOIN entries AS e ON e.session_id = %(src)s AND e.id = c.id),",
    "by_id_check": "(SELECT count(*) FROM src) = %(copies)s",
    "by_run": "WITH src AS MATERIALIZED (SELECT e.seq + r.shift AS seq, e.id, e.parent_id,"
    " e.type, e.timestamp, e.target_id, e.body"
    " FROM unnest(%(run_first)b::bigint[], %(run_last)b::bigint[], %(run_shift)b::bigint[])"
    " AS r (first, last, shift)"
    " JOIN entries AS e ON e.session_id = %(src)s AND e.seq BETWEEN r.first AND r.last),",
    # the rows found are the planned ones, in the fork's order (so as many, too)
    "by_run_check": "(SELECT jsonb_agg(id ORDER BY seq) FROM src) = %(copy_ids)s::jsonb",
    "session": " s AS (INSERT INTO sessions (id, metadata, created_us, modified_us,"
    " parent_session_id, leaf_id, entry_count, message_count, first_message, name)"
    " SELECT %(sid)s, %(meta)s::json, %(now)s, %(now)s, %(parent_session)s, %(leaf)s,"
    " %(count)s, %(msgs)s, %(first)s, %(name)s WHERE {check} RETURNING id)",
    "meta": ", m AS (INSERT INTO session_meta (key, value, session_id) SELECT k.key, k.value,"
    " s.id FROM s, unnest(%(meta_key)b::text[], %(meta_value)b::text[]) AS k (key, value))",
    "copy": f", cp AS ({INSERT_COLUMNS} SELECT s.id, src.seq, src.id, src.parent_id, src.type,"
    " src.timestamp, src.target_id, src.body, NULL FROM s, src),"
    " p AS (INSERT INTO search_pending (session_id, source_id) SELECT s.id, %(src)s FROM s)",
    "written": f", w AS ({INSERT_COLUMNS} SELECT s.id, {ROW_VALUES} FROM s,"
    f" ({'SELECT * ' + ROWS}) AS r)",
}


def fork_sql(*, copies: bool, meta: bool, written: bool, runs: bool = False) -> str:
    """The statement of a whole fork (one statement, so one implicit transaction: all of it or
    nothing), with only the parts it needs: the new session row with its final counters, its
    metadata rows (``meta``), the copied rows (``copies``) and the rows written from JSON
    (``written``).

    The copies are looked up by id (``copy_id``, ``copy_seq``: the fork's seq of each), or
    with ``runs`` by their place (``run_first``, ``run_last``, ``run_shift``: see
    :func:`~sessiontree.backends.sql.fork.copy_runs`; ``copy_ids``: the JSON array of the ids
    expected, in the fork's order), one index range per run instead of a join.

    Every insert reads the session row the first one returned, which is only inserted when
    every row to copy is still in the source (by place: the very rows planned): a source
    deleted meanwhile leaves nothing at all (the statement then returns 0). The copies get
    no search text (each would put its every trigram in the GIN index again) but a
    ``search_pending`` row, which the next search resolves
    (:func:`~sessiontree.backends.sql.postgres_search.catch_up`).
    """
    if not copies:
        head, check = "WITH src AS (SELECT 1 WHERE false),", "%(copies)s = 0"
    elif runs:
        head, check = _FORK_PARTS["by_run"], _FORK_PARTS["by_run_check"]
    else:
        head, check = _FORK_PARTS["by_id"], _FORK_PARTS["by_id_check"]
    return (
        head
        + _FORK_PARTS["session"].format(check=check)
        + (_FORK_PARTS["meta"] if meta else "")
        + (_FORK_PARTS["copy"] if copies else "")
        + (_FORK_PARTS["written"] if written else "")
        + " SELECT count(*) FROM s"
    )


CHAIN_TEMPLATE = """
WITH RECURSIVE chain (id, parent_id, type, body, depth) AS (
    SELECT id, parent_id, type, body, 0 FROM entries
     WHERE session_id = %(sid)s
       AND id = COALESCE(%(leaf)s::text, (SELECT leaf_id FROM sessions WHERE id = %(sid)s))
    UNION ALL
    SELECT e.id, e.parent_id, e.type, e.body, c.depth + 1
      FROM chain AS c JOIN entries AS e ON e.session_id = %(sid)s AND e.id = c.parent_id
     WHERE c.depth < (SELECT entry_count FROM sessions WHERE id = %(sid)s)
{until})
SELECT id, parent_id, type, body::text, depth{columns} FROM chain
"""
# the walk, then the session row as (NULL, leaf_id, NULL, NULL, -1): one statement, so
# one snapshot of the leaf and the rows it names (no row at all: no such session)
CHAIN_SQL = (
    CHAIN_TEMPLATE.format(until="", columns="").rstrip()
    + "\n UNION ALL SELECT NULL, leaf_id, NULL, NULL, -1 FROM sessions WHERE id = %(sid)s\n"
)
# the walk a fork plans from (fork.plan_fork), root first: no JSON carried along, only that
# of the fork.PARSED_TYPES rows and of the fork.FIRST_MESSAGES root-most messages
FORK_CHAIN_SQL = f"""
WITH RECURSIVE chain (id, parent_id, type, seq, depth) AS (
    SELECT id, parent_id, type, seq, 0 FROM entries WHERE session_id = %(sid)s AND id = %(leaf)s
    UNION ALL
    SELECT e.id, e.parent_id, e.type, e.seq, c.depth + 1
      FROM chain AS c JOIN entries AS e ON e.session_id = %(sid)s AND e.id = c.parent_id
     WHERE c.depth < (SELECT entry_count FROM sessions WHERE id = %(sid)s)
), ranked AS (
    SELECT id, parent_id, type, seq, depth,
           row_number() OVER (PARTITION BY type = 'message' ORDER BY depth DESC) AS nth
      FROM chain
)
SELECT r.id, r.parent_id, r.type,
       CASE WHEN r.type IN ({", ".join(repr(t) for t in PARSED_TYPES)})
                 OR (r.type = 'message' AND r.nth <= {FIRST_MESSAGES})
            THEN (SELECT body::text FROM entries WHERE session_id = %(sid)s AND id = r.id) END,
       r.seq
  FROM ranked AS r ORDER BY r.depth DESC
"""
# the rows up to the fork's target when it is among the first fork.WINDOW_ROWS (none when it
# is not, or is unknown), and every label row, in no order (fork.chain_in_window walks them;
# any row it reaches is the row with that id, as in the recursive walk): JSON only for the
# fork.PARSED_TYPES rows and the message rows among the session's first fork.FIRST_MESSAGES
# rows (the root-most messages of a chain that starts with messages; the planner fetches the
# ones it lacks)
FORK_WINDOW_SQL = f"""
SELECT id, parent_id, type,
       CASE WHEN type IN ({", ".join(repr(t) for t in PARSED_TYPES)})
                 OR (type = 'message' AND seq < {FIRST_MESSAGES}) THEN body::text END,
       seq
  FROM entries
 WHERE session_id = %(sid)s
   AND (seq <= (SELECT seq FROM entries
                 WHERE session_id = %(sid)s AND id = %(leaf)s AND seq < {WINDOW_ROWS})
        OR type = 'label')
"""
# and the session's metadata, as a row whose id is NULL (no entry's is)
FORK_WINDOW_META_SQL = (
    FORK_WINDOW_SQL + "UNION ALL SELECT NULL, NULL, '', metadata::text, -1 FROM sessions"
    " WHERE id = %(sid)s"
)
# the same walk, also ending after a row of type stype or with id stop (either may be
# NULL: no such end); each row also carries the session row's created_us, which tells the
# session read before from one deleted and made again under the same id since
CHAIN_UNTIL_SQL = CHAIN_TEMPLATE.format(
    until="       AND (%(stype)s::text IS NULL OR c.type <> %(stype)s::text)\n"
    "       AND (%(stop)s::text IS NULL OR c.id <> %(stop)s::text)\n",
    columns=", (SELECT created_us FROM sessions WHERE id = %(sid)s)",
)
