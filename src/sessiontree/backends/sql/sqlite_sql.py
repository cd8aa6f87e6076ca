"""The SQLite engine's statements (:mod:`~sessiontree.backends.sql.sqlite`): the chain walks,
the fork's range read and copy, the entry insert and the session row's read and update."""

from __future__ import annotations

from sessiontree.backends.sql.fork import FIRST_MESSAGES, PARSED_TYPES, WINDOW_ROWS

__all__ = [
    "CHAIN_SQL",
    "CHAIN_UNTIL_SQL",
    "COPY_ROWS",
    "COPY_RUNS",
    "FORK_CHAIN_SQL",
    "FORK_WINDOW_SQL",
    "INSERT_ENTRY",
    "SESSION_ROW",
    "UPDATE_SESSION",
]

CHAIN_TEMPLATE = """
WITH RECURSIVE chain (id, parent_id, type, body, depth) AS (
    SELECT id, parent_id, type, body, 0 FROM entries
     WHERE session_id = :sid
       AND id = COALESCE(:leaf, (SELECT leaf_id FROM sessions WHERE id = :sid))
    UNION ALL
    SELECT e.id, e.parent_id, e.type, e.body, c.depth + 1
      FROM chain AS c JOIN entries AS e ON e.session_id = :sid AND e.id = c.parent_id
     WHERE c.depth < (SELECT entry_count FROM sessions WHERE id = :sid)
{until})
SELECT id, parent_id, type, body, depth{columns} FROM chain
"""
# the walk, then the session row as (NULL, leaf_id, NULL, NULL, -1): one statement, so
# one snapshot of the leaf and the rows it names (no row at all: no such session)
CHAIN_SQL = (
    CHAIN_TEMPLATE.format(until="", columns="").rstrip()
    + "\n UNION ALL SELECT NULL, leaf_id, NULL, NULL, -1 FROM sessions WHERE id = :sid\n"
)
# the walk a fork plans from (fork.plan_fork), root first: no JSON carried along, only that
# of the fork.PARSED_TYPES rows and of the FIRST_MESSAGES root-most messages
FORK_CHAIN_SQL = f"""
WITH RECURSIVE chain (id, parent_id, type, seq, depth) AS (
    SELECT id, parent_id, type, seq, 0 FROM entries WHERE session_id = :sid AND id = :leaf
    UNION ALL
    SELECT e.id, e.parent_id, e.type, e.seq, c.depth + 1
      FROM chain AS c JOIN entries AS e ON e.session_id = :sid AND e.id = c.parent_id
     WHERE c.depth < (SELECT entry_count FROM sessions WHERE id = :sid)
), ranked AS (
    SELECT id, parent_id, type, seq, depth,
           row_number() OVER (PARTITION BY type = 'message' ORDER BY depth DESC) AS nth
      FROM chain
)
SELECT r.id, r.parent_id, r.type,
       CASE WHEN r.type IN ({", ".join(repr(t) for t in PARSED_TYPES)})
                 OR (r.type = 'message' AND r.nth <= {FIRST_MESSAGES})
            THEN (SELECT body FROM entries WHERE session_id = :sid AND id = r.id) END,
       r.seq
  FROM ranked AS r ORDER BY r.depth DESC
"""
# the rows up to the fork's target when it is among the first fork.WINDOW_ROWS (none when it
# is not, or is unknown), in no order (fork.chain_in_window walks them): JSON only for the
# fork.PARSED_TYPES rows and the message rows among the session's first fork.FIRST_MESSAGES
# rows (the root-most messages of a chain that starts with messages; the planner fetches the
# ones it lacks)
FORK_WINDOW_SQL = f"""
SELECT id, parent_id, type,
       CASE WHEN type IN ({", ".join(repr(t) for t in PARSED_TYPES)})
                 OR (type = 'message' AND seq < {FIRST_MESSAGES}) THEN body END,
       seq
  FROM entries
 WHERE session_id = :sid
   AND seq <= (SELECT seq FROM entries
                WHERE session_id = :sid AND id = :leaf AND seq < {WINDOW_ROWS})
"""
# the same walk, also ending after a row of type stype or with id stop (either may be
# NULL: no such end); each row also carries the session row's created_us, which tells the
# session read before from one deleted and made again under the same id since
CHAIN_UNTIL_SQL = CHAIN_TEMPLATE.format(
    until="       AND (:stype IS NULL OR c.type <> :stype) AND (:stop IS NULL OR c.id <> :stop)\n",
    columns=", (SELECT created_us FROM sessions WHERE id = :sid)",
)


# a fork's copied rows, in the fork's order: json_each over [[id, seq], ...]
COPY_ROWS = """
INSERT INTO entries (session_id, seq, id, parent_id, type, timestamp, target_id, body)
SELECT ?1, json_extract(j.value, '$[1]'), e.id, e.parent_id, e.type, e.timestamp, e.target_id,
       e.body
  FROM json_each(?3) AS j CROSS JOIN entries AS e
    ON e.session_id = ?2 AND e.id = json_extract(j.value, '$[0]')
"""
# the same by place: json_each over runs [[first, last, shift], ...] (fork.copy_runs), one
# index range each; the caller checks the ids the fork then holds are the planned ones
COPY_RUNS = """
INSERT INTO entries (session_id, seq, id, parent_id, type, timestamp, target_id, body)
SELECT ?1, e.seq + json_extract(j.value, '$[2]'), e.id, e.parent_id, e.type, e.timestamp,
       e.target_id, e.body
  FROM json_each(?3) AS j CROSS JOIN entries AS e
    ON e.session_id = ?2
   AND e.seq BETWEEN json_extract(j.value, '$[0]') AND json_extract(j.value, '$[1]')
"""

INSERT_ENTRY = (
    "INSERT INTO entries (session_id, seq, id, parent_id, type, timestamp, target_id, body)"
    " VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
)
SESSION_ROW = (
    "SELECT leaf_id, entry_count, message_count, first_message IS NOT NULL,"
    " (SELECT indexed_upto FROM search_index_state), (SELECT max(rowid) FROM entries)"
    " FROM sessions WHERE id = ?"
)
UPDATE_SESSION = (
    "UPDATE sessions SET leaf_id = ?, entry_count = ?, message_count = ?, modified_us = ?,"
    " first_message = COALESCE(first_message, ?), name = COALESCE(?, name) WHERE id = ?"
)
