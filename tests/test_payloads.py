"""Large payloads stored once on SQLite and PostgreSQL (docs/storage.md "Large payloads").

Images and tool outputs over the threshold are stored by SHA-256 in ``payloads`` and referred
to from the entries' stored JSON; reads give back entries equal to those appended, exports
write them inline, and a payload goes only when no session (live or trashed) refers to it.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from backends import pg_exec, throwaway_pg_database
from sessiontree import Entry, SessionRepo, StorageError, open_repo
from sessiontree.backends.jsonl.repo import JSONLRepo
from sessiontree.backends.sql.payloads import HEAD, PAYLOAD_THRESHOLD, expand, split_body
from sessiontree.backends.sql.repo import SQLRepo
from sessiontree.cli import cli
from sessiontree.entries import dump_entry_json
from sessiontree.interop.pi import export_pi_session
from sessiontree.repos import store_usage
from sessiontree.testing.builders import assistant, tool_call, tool_result, user


def as_json(entry: Entry) -> Any:
    """The entry as the JSON object it is written as."""
    return orjson.loads(dump_entry_json(entry))


def raw(url: str, sql: str) -> list[Any]:
    """The rows of ``sql`` run straight on the store at ``url``."""
    if url.startswith("sqlite:"):
        path = url.removeprefix("sqlite:///")
        with sqlite3.connect(path) as conn:
            return conn.execute(sql).fetchall()
    return pg_exec(url, sql)


def screenshot(seed: int, size: int = 64 * 1024) -> str:
    """Base64 of ``size`` pseudo-random bytes: a stand-in for a PNG screenshot."""
    chunk = hashlib.sha256(str(seed).encode()).digest()
    data = (chunk * (size // len(chunk) + 1))[:size]
    return base64.b64encode(data).decode()


def image_message(text: str, seed: int) -> dict[str, Any]:
    msg = user(text)
    msg["content"].append({"type": "image", "data": screenshot(seed), "mimeType": "image/png"})
    return msg


def big_output(seed: int, lines: int = 2000) -> str:
    return "\n".join(f'line {i} of output {seed}: ünïcödé "quoted" \\ tab\t' for i in range(lines))


async def turn(session: Any, n: int, image_seed: int, output_seed: int) -> None:
    """One agent turn: a user message with a screenshot, a tool call and its big output."""
    await session.append_message(image_message(f"look at this {n}", image_seed))
    await session.append_message(assistant("reading", tool_call(f"c{n}", path="/x")))
    await session.append_message(tool_result(f"c{n}", big_output(output_seed)))
    await session.append_message(assistant(f"done {n}"))


async def usage(repo: SQLRepo) -> tuple[int, int, int]:
    u = await repo.payload_usage(10)
    return u.payloads, u.unique_bytes, u.references


async def test_entries_read_back_equal_to_what_was_appended(store_url: str) -> None:
    async with SQLRepo(store_url) as repo:
        s = await repo.create(id="a")
        await turn(s, 1, image_seed=1, output_seed=1)
        await turn(s, 2, image_seed=1, output_seed=2)
        appended = await s.get_entries()
        branch = await s.get_branch()
    async with SQLRepo(store_url) as repo:  # nothing cached: every body read from the store
        s = await repo.open("a")
        assert await s.get_entries() == appended
        assert await s.get_branch() == branch
        assert [await s.get_entry(e.id) for e in appended] == appended
        # the stored rows hold references, not the screenshots
        body = "body" if store_url.startswith("sqlite") else "body::text"
        biggest = raw(store_url, f"SELECT max(length({body})) FROM entries")[0][0]
        assert biggest < PAYLOAD_THRESHOLD
        # one screenshot (sent twice) and two tool outputs
        assert (await usage(repo))[0] == 3


async def test_same_payload_in_two_sessions_is_stored_once_and_freed_with_the_last(
    store_url: str,
) -> None:
    async with SQLRepo(store_url) as repo:
        a = await repo.create(id="a")
        await turn(a, 1, image_seed=7, output_seed=7)
        one = await usage(repo)
        b = await repo.create(id="b")
        await turn(b, 1, image_seed=7, output_seed=7)
        count, size, refs = await usage(repo)
        assert (count, size) == one[:2]  # nothing new stored
        assert refs == 2 * one[2]
        b_entries = await b.get_entries()
        await repo.delete("a")
        assert (await usage(repo))[:2] == one[:2]  # b still refers to them
    async with SQLRepo(store_url) as repo:
        assert await (await repo.open("b")).get_entries() == b_entries
        await repo.delete("b")
        assert await usage(repo) == (0, 0, 0)
        assert raw(store_url, "SELECT count(*) FROM payloads")[0][0] == 0


async def test_a_fork_shares_the_payloads_and_outlives_its_source(store_url: str) -> None:
    async with SQLRepo(store_url) as repo:
        s = await repo.create(id="src")
        await turn(s, 1, image_seed=3, output_seed=3)
        first, mid = (await s.get_entries())[0].id, (await s.get_entries())[-1].id
        # a long label: the fork parses the source's labels and writes its own from JSON
        await s.append_label(first, "L" * 5000)
        await turn(s, 2, image_seed=4, output_seed=4)
        before = await usage(repo)
        fork = await s.fork(mid)
        body = "body" if store_url.startswith("sqlite") else "body::text"
        labels = raw(
            store_url,
            f"SELECT {body} FROM entries WHERE type = 'label' AND session_id = '{fork.id}'",
        )
        assert labels and all(b.startswith(HEAD) for (b,) in labels)  # written split
        await repo.delete("src")
        assert (await usage(repo))[1] > 0
        forked = await fork.get_entries()
    async with SQLRepo(store_url) as repo:
        f = await repo.open(fork.id)
        assert await f.get_entries() == forked
        assert as_json(forked[0])["message"]["content"][1]["data"] == screenshot(3)
        assert await f.get_label(first) == "L" * 5000
        assert before[0] >= (await usage(repo))[0] > 0
        await repo.delete(fork.id)
        assert await usage(repo) == (0, 0, 0)


async def test_trash_keeps_the_payloads_restore_gives_them_back_purge_frees_them(
    store_url: str,
) -> None:
    async with SQLRepo(store_url) as repo:
        s = await repo.create(id="t")
        await turn(s, 1, image_seed=5, output_seed=5)
        entries = await s.get_entries()
        stored = await usage(repo)
        size = (await repo.session_sizes())["t"]
        assert size > 64 * 1024  # its screenshot counts
        trashed = await repo.trash("t")
        assert trashed.size_bytes == size
        assert (await usage(repo))[:2] == stored[:2]
        restored = await repo.restore("t")
        assert await restored.get_entries() == entries
        assert await usage(repo) == stored
        await repo.trash("t")
        await repo.purge("t")
        assert await usage(repo) == (0, 0, 0)


async def test_export_writes_the_payloads_inline(store_url: str, tmp_path: Path) -> None:
    async with SQLRepo(store_url) as repo:
        s = await repo.create(id="x")
        await turn(s, 1, image_seed=9, output_seed=9)
        out = tmp_path / "x.jsonl"
        await export_pi_session(s, out)
    text = out.read_text()
    assert screenshot(9) in text
    assert HEAD not in text and "sessiontree:payloads" not in text
    # and a JSONL store made from the entries holds them whole, as pi writes them
    async with SQLRepo(store_url) as repo, JSONLRepo(tmp_path / "j") as jrepo:
        entries = await (await repo.open("x")).get_entries()
        copy = await jrepo.create(id="x", entries=entries)
        assert await copy.get_entries() == entries
        assert (
            screenshot(9) in (tmp_path / "j").joinpath(*[]).rglob("*.jsonl").__next__().read_text()
        )


async def test_search_finds_text_inside_a_large_tool_output(store_url: str) -> None:
    async with SQLRepo(store_url) as repo:
        s = await repo.create(id="s")
        await s.append_message(user("run it"))
        await s.append_message(tool_result("c1", big_output(1) + "\nNEEDLE-in-the-output"))
        hits = await repo.search("needle-in-the")
        assert [h.session_id for h in hits] == ["s"]
        assert "needle-in-the-output" in hits[0].snippet.lower()
        fork = await s.fork((await s.get_entries())[-1].id)
        hits = await repo.search("needle-in-the")
        assert sorted(h.session_id for h in hits) == sorted(["s", fork.id])


async def test_threshold_off_stores_whole_and_still_reads_references(store_url: str) -> None:
    async with SQLRepo(store_url) as repo:
        s = await repo.create(id="r")
        await turn(s, 1, image_seed=2, output_seed=2)
        entries = await s.get_entries()
    async with SQLRepo(store_url, payload_threshold=None) as repo:
        s = await repo.open("r")
        assert await s.get_entries() == entries
        w = await repo.create(id="w")
        await turn(w, 1, image_seed=2, output_seed=2)
        assert raw(store_url, "SELECT count(*) FROM payload_refs WHERE session_id = 'w'")[0][0] == 0
        assert await (await repo.open("w")).get_entries() == await w.get_entries()


async def test_du_reports_the_payload_store(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'store.db'}"
    async with SQLRepo(url) as repo:
        for sid in ("a", "b"):
            s = await repo.create(id=sid)
            await turn(s, 1, image_seed=11, output_seed=11)
        report = await store_usage(repo)
    assert report.payloads is not None
    assert report.payloads.payloads == 2 and report.payloads.references == 4
    assert report.payloads.largest[0].references == 2
    assert report.payloads.largest[0].size_bytes >= report.payloads.largest[1].size_bytes
    env = {"COLUMNS": "100", "SESSIONTREE_URL": None}
    result = await asyncio.to_thread(CliRunner().invoke, cli, ["--store", url, "du"], env=env)
    assert result.exit_code == 0, result.output
    assert report.payloads.largest[0].hash[:12] in result.stdout
    assert "2 payloads" in result.stdout and "4 references" in result.stdout
    result = await asyncio.to_thread(
        CliRunner().invoke, cli, ["--store", url, "du", "--json"], env=env
    )
    data = orjson.loads(result.stdout)["payloads"]
    assert (data["payloads"], data["references"]) == (2, 4)
    assert data["uniqueBytes"] == report.payloads.unique_bytes


# ---------------------------------------------------------------- the stored form itself


def test_a_body_that_starts_like_a_head_reads_back_verbatim() -> None:
    body = '{"sessiontree:payloads":[1,"x"],"type":"custom","big":"' + "z" * 5000 + '"}'
    s = split_body(body, 4096)
    assert len(s.payloads) == 1
    texts = {h: d.decode() for h, d in s.payloads.items()}
    assert expand(s.body, texts) == body
    small = '{"sessiontree:payloads":[],"type":"custom"}'
    assert expand(split_body(small, 4096).body, {}) == small
    assert expand(split_body(small, None).body, {}) == small


_text = st.text(st.characters(codec="utf-8", exclude_characters="\x00"), max_size=40)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    sizes=st.lists(st.integers(0, 3 * 256), min_size=1, max_size=6),
    filler=_text,
    threshold=st.sampled_from([64, 100, 256]),
)
def test_split_then_expand_is_the_identity(sizes: list[int], filler: str, threshold: int) -> None:
    value: dict[str, Any] = {
        f"k{i}": (filler * (n // max(len(filler), 1) + 1))[:n] for i, n in enumerate(sizes)
    }
    value["list"] = list(value.values())
    body = orjson.dumps({"type": "custom", **value}).decode()
    s = split_body(body, threshold)
    assert all(len(d) >= threshold for d in s.payloads.values())
    texts = {h: d.decode("utf-8", "surrogatepass") for h, d in s.payloads.items()}
    assert expand(s.body, texts) == body
    orjson.loads(s.body)  # the stored form is JSON too (PostgreSQL keeps it in a json column)


@pytest.mark.parametrize("dialect", ["sqlite", "postgres"])
@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(sizes=st.lists(st.integers(0, 700), min_size=1, max_size=5), text=_text)
def test_round_trip_of_random_sizes_around_the_threshold(
    dialect: str, tmp_path_factory: pytest.TempPathFactory, sizes: list[int], text: str
) -> None:
    async def run(url: str) -> None:
        async with SQLRepo(url, payload_threshold=256) as repo:
            s = await repo.create()
            for n in sizes:
                content = ((text or "x") * (n // max(len(text), 1) + 1))[:n]
                await s.append_message(tool_result("c", content))
                await s.append_message(image_message(content[:20], n) | {})
            appended = await s.get_entries()
        async with SQLRepo(url, payload_threshold=256) as repo:
            assert await (await repo.open(s.id)).get_entries() == appended

    if dialect == "sqlite":
        path = tmp_path_factory.mktemp("h") / "store.db"
        asyncio.run(run(f"sqlite:///{path}"))
    else:
        with throwaway_pg_database() as url:
            asyncio.run(run(url))


# ---------------------------------------------------------------- kill -9 during appends

CHILD = r"""
import asyncio, sys
sys.path.insert(0, sys.argv[3])
from test_payloads import turn
from sessiontree.backends.sql.repo import SQLRepo

async def main(url):
    async with SQLRepo(url) as repo:
        s = await repo.create(id="k")
        i = 0
        while True:
            # a new screenshot every turn, and one every turn shares
            await turn(s, i, image_seed=i, output_seed=i % 3)
            print(i, flush=True)
            i += 1

asyncio.run(main(sys.argv[1]))
"""


def check_no_dangling(url: str) -> None:
    """Every reference names a stored payload, every stored body's payloads are referred to
    by its session, and every entry reads back whole."""
    assert (
        raw(
            url,
            "SELECT count(*) FROM payload_refs AS r"
            " WHERE NOT EXISTS (SELECT 1 FROM payloads AS p WHERE p.hash = r.hash)",
        )[0][0]
        == 0
    )
    body = "body" if url.startswith("sqlite") else "body::text"
    refs = {(r[0], r[1]) for r in raw(url, "SELECT session_id, hash FROM payload_refs")}
    for session_id, stored in raw(url, f"SELECT session_id, {body} FROM entries"):
        if stored.startswith(HEAD):
            for h in orjson.loads(stored)["sessiontree:payloads"][1::2]:
                assert (session_id, h) in refs


@pytest.mark.parametrize("dialect", ["sqlite", "postgres"])
@pytest.mark.parametrize("after_s", [0.05, 0.3])
def test_kill_9_during_appends_leaves_whole_entries_and_no_dangling_reference(
    dialect: str, after_s: float, tmp_path: Path
) -> None:
    def run(url: str) -> None:
        child = subprocess.Popen(
            [sys.executable, "-c", CHILD, url, "", str(Path(__file__).parent)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        assert child.stdout is not None
        try:
            first = child.stdout.readline()
            assert first.strip(), child.stderr.read().decode() if child.stderr else ""
            time.sleep(after_s)
        finally:
            child.send_signal(signal.SIGKILL)
            child.communicate(timeout=60)
        check_no_dangling(url)

        async def read() -> list[Entry]:
            async with SQLRepo(url) as repo:
                return await (await repo.open("k")).get_entries()

        entries = asyncio.run(read())
        assert len(entries) >= 4
        for e in entries:  # each entry whole: its payloads are the ones the child sent
            msg = as_json(e).get("message")
            if msg is not None and msg.get("role") == "user":
                n = int(msg["content"][0]["text"].rsplit(" ", 1)[1])
                assert msg["content"][1]["data"] == screenshot(n)
            if msg is not None and msg.get("role") == "toolResult":
                assert msg["content"][0]["text"].startswith("line 0 of output")

    if dialect == "sqlite":
        run(f"sqlite:///{tmp_path / 'store.db'}")
    else:
        with throwaway_pg_database() as url:
            run(url)


async def test_payloads_survive_a_session_recreated_in_the_trashed_ones_name(
    sql_repo: SQLRepo,
) -> None:
    repo: SessionRepo = sql_repo
    s = await repo.create(id="same")
    await turn(s, 1, image_seed=21, output_seed=21)
    entries = await s.get_entries()
    await sql_repo.trash("same")
    t = await repo.create(id="same")
    await turn(t, 1, image_seed=22, output_seed=22)
    await repo.delete("same")  # the live one: the trashed one keeps its payloads
    restored = await sql_repo.restore("same")
    assert await restored.get_entries() == entries


async def test_deletes_racing_appends_of_the_same_payload_leave_no_dangling_reference(
    store_url: str,
) -> None:
    # one repository keeps appending a screenshot while another makes and deletes sessions
    # holding the same one: a delete must never free it under the appender's reference
    async with SQLRepo(store_url) as churner, SQLRepo(store_url) as writer:
        keep = await writer.create(id="keep")

        async def churn() -> None:
            for i in range(12):
                s = await churner.create(id=f"c{i}")
                await s.append_message(image_message("same", 1))
                await churner.delete(f"c{i}")

        async def write() -> None:
            for i in range(12):
                await keep.append_message(image_message(f"keep {i}", 1))

        await asyncio.gather(churn(), write())
        appended = await keep.get_entries()
    check_no_dangling(store_url)
    async with SQLRepo(store_url) as repo:
        assert await (await repo.open("keep")).get_entries() == appended
        await repo.delete("keep")
        assert await usage(repo) == (0, 0, 0)


async def test_a_release_waits_for_a_reference_written_in_a_transaction_still_open() -> None:
    # PostgreSQL: a transaction refers to a stored payload and has not committed; another
    # deletes the last committed reference and would free the payload. The advisory lock
    # makes the release wait and then see the new reference (without it the payload goes
    # and the first transaction commits a dangling reference)
    from sessiontree.backends.sql.postgres_payloads import release_payloads, store_payloads

    with throwaway_pg_database() as url:
        import psycopg

        async with SQLRepo(url) as repo:  # the schema
            await repo.list()
        data = b'"' + b"x" * 5000 + b'"'
        digest = hashlib.sha256(data).hexdigest()
        async with (
            await psycopg.AsyncConnection.connect(url, autocommit=True) as setup,
            setup.transaction(),
        ):
            await store_payloads(setup, "gone", {digest: data})
        async with (
            await psycopg.AsyncConnection.connect(url) as writer,
            await psycopg.AsyncConnection.connect(url) as deleter,
        ):
            await store_payloads(writer, "kept", {digest: data})  # its transaction stays open

            async def release() -> None:
                await release_payloads(deleter, "gone")
                await deleter.commit()

            task = asyncio.create_task(release())
            await asyncio.sleep(0.5)  # the release reaches its statements first
            await writer.commit()
            await task
        rows = pg_exec(url, "SELECT session_id FROM payload_refs")
        assert rows == [("kept",)]
        assert pg_exec(url, "SELECT count(*) FROM payloads")[0][0] == 1


async def test_open_repo_takes_the_threshold_for_sql_stores_only(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'store.db'}"
    async with open_repo(url, payload_threshold=None) as repo:
        s = await repo.create(id="w")
        await turn(s, 1, image_seed=1, output_seed=1)
    assert raw(url, "SELECT count(*) FROM payloads")[0][0] == 0  # stored whole
    async with open_repo(url, payload_threshold=1024) as repo:
        s = await repo.open("w")
        await s.append_message(tool_result("c", "y" * 2000))
    assert raw(url, "SELECT count(*) FROM payloads")[0][0] == 1
    with pytest.raises(StorageError, match="payload_threshold"):
        open_repo(f"jsonl://{tmp_path / 'j'}", payload_threshold=1024)
    with pytest.raises(StorageError, match="payload_threshold"):
        open_repo(url, payload_threshold=10)
