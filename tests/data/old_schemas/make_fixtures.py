"""Build the old-schema store fixtures of tests/test_old_schemas.py with the old code itself.

For each commit in :data:`COMMITS` (one per schema that shipped on main), the commit's
``src/`` is taken with ``git archive``, and :data:`BUILDER` runs on it (that commit's own
SQLRepo) to write a small store on SQLite and on PostgreSQL; each store is then dumped as SQL:

* ``<name>.sqlite.sql``: every table's and index's DDL as SQLite holds it, then its rows as
  ``INSERT`` statements (the FTS5 table's rows by rowid; its shadow tables are left to FTS5);
* ``<name>.postgres.sql``: ``pg_dump --inserts`` of the store's schema, the schema's name
  replaced by ``@SCHEMA@``; its settings, comments, ``CREATE SCHEMA`` and psql ``\\`` lines
  dropped (the test makes the schema, and ``pg_trgm`` in ``public`` as the old code did).

Run once from a clone with history and PostgreSQL on 127.0.0.1:5432 (trust auth)::

    python tests/data/old_schemas/make_fixtures.py [NAME ...]

The fixtures are committed; the tests read them without git history or the old code.
"""

from __future__ import annotations

import re
import sqlite3
import subprocess
import sys
import tarfile
import tempfile
import uuid
from io import BytesIO
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
PG = "postgresql://postgres@127.0.0.1:5432/test"

COMMITS = {
    # fixture name: the commit whose code writes it (what its newest schema version is)
    "v1-6edf31c": "6edf31c",  # sessions, entries, unicode61 FTS5 / tsvector search
    "v2-e0a754a": "e0a754a",  # SQLite search index watermark
    "v3meta-64e17cc": "64e17cc",  # v3 = session_meta (long values stored as they are)
    "v3trigram-c261190": "c261190",  # v3 = trigram search, no session_meta
    "v3meta-471fcfe": "471fcfe",  # the same, long values as their SHA-256
    "v4-f0451e9": "f0451e9",  # v3 session_meta, v4 trigram search
    "v4-3ffaac1": "3ffaac1",  # the same, long session_meta values as their SHA-256
    "v5-828b4cf": "828b4cf",  # PostgreSQL search_pending
    "v6-15c331d": "15c331d",  # PostgreSQL entries without a foreign key
}

BUILDER = r"""
import asyncio, sys
from sessiontree.repos.sql import SQLRepo

async def main(url):
    async with SQLRepo(url) as repo:
        a = await repo.create(id="old-a", metadata={"systemPrompt": "be brief", "team": "blue",
                                                     "rank": 3, "cwd": "/work"})
        u1 = await a.append_message({"role": "user", "content": "Find the Zebra crossing"})
        a1 = await a.append_message({"role": "assistant", "content": [
            {"type": "text", "text": "The zebra crossing is on Elm Street"}]})
        u2 = await a.append_message({"role": "user", "content": "and the bakery?"})
        await a.append_label(a1, "answer")
        await a.append_session_name("zebra hunt")
        await a.set_leaf_id(a1)
        await a.append_message({"role": "user", "content": "Other branch: the museum"})
        b = await repo.create(id="old-b", metadata={"team": "red", "note": "a long note " * 125})
        await b.append_message({"role": "user", "content": "hello b"})
        await b.set_leaf_id(None)
        await repo.create(id="old-empty")
        await repo.fork("old-a", u2)

asyncio.run(main(sys.argv[1]))
"""


def export(commit: str, into: Path) -> Path:
    """``src/`` of ``commit`` (``git archive``) under ``into``."""
    data = subprocess.run(
        ["git", "-C", str(REPO), "archive", commit, "src"], check=True, capture_output=True
    ).stdout
    with tarfile.open(fileobj=BytesIO(data)) as tar:
        tar.extractall(into, filter="data")
    return into / "src"


def build(src: Path, url: str) -> None:
    subprocess.run(
        [sys.executable, "-c", BUILDER, url], check=True, env={"PYTHONPATH": str(src), "PATH": ""}
    )


def quote(value: object) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, int | float):
        return repr(value)
    return "'" + str(value).replace("'", "''") + "'"


def dump_sqlite(path: Path) -> str:
    conn = sqlite3.connect(path)
    objects = conn.execute(
        "SELECT type, name, sql FROM sqlite_master WHERE sql IS NOT NULL ORDER BY rowid"
    ).fetchall()
    virtual = [
        n for t, n, sql in objects if t == "table" and sql.upper().startswith("CREATE VIRTUAL")
    ]
    lines = []
    for kind, name, sql in objects:
        if any(name.startswith(v + "_") for v in virtual):
            continue  # an FTS5 shadow table: FTS5 makes it
        lines.append(sql + ";")
        if kind != "table":
            continue
        columns = "rowid, *" if name in virtual else "*"
        cur = conn.execute(f'SELECT {columns} FROM "{name}"')
        names = [d[0] for d in cur.description]
        for row in cur:
            lines.append(
                f'INSERT INTO "{name}" ({", ".join(names)}) VALUES'
                f" ({', '.join(quote(v) for v in row)});"
            )
    conn.close()
    return "\n".join(lines) + "\n"


def dump_postgres(url: str, schema: str) -> str:
    text = subprocess.run(
        [
            "pg_dump",
            "--inserts",
            "--no-owner",
            "--no-privileges",
            "--no-comments",
            f"--schema={schema}",
            url,
        ],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    kept = []
    for line in text.splitlines():
        if not line.strip() or line.startswith(
            ("SET ", "SELECT pg_catalog.set_config", "--", "\\", "CREATE SCHEMA ")
        ):
            continue
        kept.append(line.replace(schema, "@SCHEMA@"))
    return "\n".join(kept) + "\n"


def main(names: list[str]) -> None:
    """Write the fixtures of ``names`` (every one in :data:`COMMITS` when empty)."""
    import psycopg

    for name, commit in COMMITS.items():
        if names and name not in names:
            continue
        with tempfile.TemporaryDirectory() as tmp:
            src = export(commit, Path(tmp))
            db = Path(tmp) / "store.db"
            build(src, f"sqlite:///{db}")
            (HERE / f"{name}.sqlite.sql").write_text(dump_sqlite(db))
            schema = f"old_{uuid.uuid4().hex[:8]}"
            with psycopg.connect(PG, autocommit=True) as conn:
                conn.execute(f'CREATE SCHEMA "{schema}"')
            try:
                build(src, f"{PG}?options=-csearch_path%3D{schema}")
                out = dump_postgres(PG, schema)
                assert not re.search(r"old_[0-9a-f]{8}", out)
                (HERE / f"{name}.postgres.sql").write_text(out)
            finally:
                with psycopg.connect(PG, autocommit=True) as conn:
                    conn.execute(f'DROP SCHEMA "{schema}" CASCADE')
        print(name, "done")


if __name__ == "__main__":
    main(sys.argv[1:])
