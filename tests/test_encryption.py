"""Encryption at rest on SQLite and PostgreSQL (docs/storage.md "Encryption at rest"): what is
read equals what was written, nothing distinctive is stored in clear, a store opened without
its keys (or with wrong ones) says so and reads nothing, and rekey moves every sealed value to
the current key, even when killed at random moments and run again."""

from __future__ import annotations

import asyncio
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from backends import pg_exec
from sessiontree import open_repo
from sessiontree.backends.sql.repo import SQLRepo
from sessiontree.entries import MessageEntry, SessionInfoEntry
from sessiontree.errors import EncryptionKeyError, InvalidArgumentError, StorageError
from sessiontree.messages import message_text
from sessiontree.repos import as_trash_repo
from sessiontree.storage.encryption import Codec, KeyRing, new_key
from sessiontree.testing.builders import assistant, user
from sessiontree.testing.conformance import ConformanceSuite
from sessiontree.testing.conformance import Reopen as ReopenStore
from sessiontree.web.reading import own_repo

SECRET = "zebra-quartz-7781 the launch code is tangerine"
"""A message no stored byte may show in clear."""
K1, K2 = new_key(), new_key()


def ring(*ids: str) -> KeyRing:
    keys = {"k1": K1, "k2": K2, "bad": new_key()}
    return KeyRing([(i if i != "bad" else "k1", keys[i]) for i in ids])


def _raw_sqlite(url: str) -> bytes:
    path = Path(url.removeprefix("sqlite:///"))
    return b"".join(p.read_bytes() for p in path.parent.glob(path.name + "*"))


def _raw(url: str) -> str:
    """Every stored byte of the store that could hold an entry (the SQLite files with their
    WAL; every row of every PostgreSQL table, as text)."""
    if url.startswith("sqlite"):
        return _raw_sqlite(url).decode("latin-1")
    tables = [
        r[0]
        for r in pg_exec(url, "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()")
    ]
    return "\n".join(str(pg_exec(url, f"SELECT t::text FROM {t} AS t")) for t in tables)


def _bodies(url: str) -> list[str]:
    sql = "SELECT body::text FROM entries" if url.startswith("postgres") else None
    if sql is None:
        path = url.removeprefix("sqlite:///")
        with sqlite3.connect(path) as conn:
            return [r[0] for r in conn.execute("SELECT body FROM entries")]
    return [r[0] for r in pg_exec(url, sql)]


async def _draft(s: Any) -> str:
    """The draft slot's text of session ``s``."""
    return ((await s.storage.get_draft()) or b"").decode()


def _meta(url: str) -> str:
    sql = "SELECT value FROM store_meta WHERE key = 'encryption'"
    if url.startswith("postgres"):
        return str(pg_exec(url, sql)[0][0])
    with sqlite3.connect(url.removeprefix("sqlite:///")) as conn:
        return str(conn.execute(sql).fetchone()[0])


async def _fill(repo: Any, n: int = 3) -> dict[str, list[Any]]:
    """Sessions with messages, a name, a label, a fork and a draft; their entries by id."""
    out: dict[str, list[Any]] = {}
    for i in range(n):
        s = await repo.create(metadata={"cwd": f"/p{i}"})
        first = await s.append_message(user(f"{SECRET} #{i}"))
        await s.append_message(assistant(f"reply {i} about {SECRET}"))
        await s.append_session_name(f"named {i}")
        await s.append_label(first, f"label {i}")
        out[s.id] = await s.get_entries()
        fork = await s.fork(first)
        await fork.append_message(user(f"forked {SECRET}"))
        out[fork.id] = await fork.get_entries()
        await s.storage.put_draft(f'{{"draft": "{SECRET}"}}'.encode())
    return out


async def test_round_trip_equals_what_was_written_and_nothing_is_in_clear(store_url: str) -> None:
    async with open_repo(store_url, keys=ring("k1")) as repo:
        written = await _fill(repo)
        for sid, entries in written.items():
            s = await repo.open(sid)
            assert await s.get_entries() == entries
            branch = await s.get_branch()
            assert branch and all(e in entries for e in branch)
            names = [e.name for e in entries if isinstance(e, SessionInfoEntry)]
            assert await s.storage.get_name() == (names[-1] if names else None)
        infos = {i.id: i for i in await repo.list()}
        assert all(SECRET in (infos[sid].first_message or "") for sid in written)
        s = await repo.open(next(iter(written)))
        assert SECRET in await _draft(s)
        first = (await s.get_entries())[0]
        assert await s.storage.get_label(first.id) == "label 0"
        assert await repo.search("tangerine") == []  # nothing indexed by default
        trashed = await as_trash_repo(repo).trash(s.id)
        assert SECRET not in _raw(store_url)
        back = await as_trash_repo(repo).restore(trashed.id)
        assert await back.get_entries() == written[s.id]
    raw = _raw(store_url)
    assert SECRET not in raw and "tangerine" not in raw
    assert "named 0" in raw  # names stay in clear, as documented
    assert all(b.startswith('"stk1:k1:') for b in _bodies(store_url))


async def test_large_payloads_stay_inline_and_sealed(store_url: str) -> None:
    # a plain store keeps strings of 4 KB or more once, in clear, by SHA-256; an encrypted
    # one must not: each stays in its sealed entry
    big = f"{SECRET} " + "tool output line\n" * 2000
    async with open_repo(store_url, keys=ring("k1")) as repo:
        s = await repo.create()
        for _ in range(2):
            await s.append_message(user(big))
        assert [message_text(e.message) for e in await s.get_entries()] == [big, big]  # type: ignore[union-attr]
    count = "SELECT count(*) FROM payloads"
    if store_url.startswith("sqlite"):
        with sqlite3.connect(store_url.removeprefix("sqlite:///")) as conn:
            assert conn.execute(count).fetchone()[0] == 0
    else:
        assert pg_exec(store_url, count)[0][0] == 0
    assert "tool output line" not in _raw(store_url)


async def test_the_same_reads_as_a_plain_store(store_url: str, tmp_path: Path) -> None:
    """Context building, branches and leaves: the encrypted store answers as a plain one."""
    plain_url = f"sqlite:///{tmp_path / 'plain.db'}"
    results = []
    messages = [user(SECRET), assistant("b"), user("c")]
    for url, keys in ((store_url, ring("k1")), (plain_url, None)):
        async with SQLRepo(url, keys=keys) as repo:
            s = await repo.create(id="same")
            a = await s.append_message(messages[0], entry_id="a")
            await s.append_message(messages[1], entry_id="b")
            await s.set_leaf_id(a)
            await s.append_message(messages[2], entry_id="c")
            ctx = await s.build_context()
            results.append(
                (
                    [m.model_dump() for m in ctx.messages],
                    [e.id for e in await s.get_branch()],
                    await s.get_leaf_id(),
                )
            )
    assert results[0] == results[1]


async def test_opened_without_its_keys_it_says_so_and_reads_nothing(store_url: str) -> None:
    async with open_repo(store_url, keys=ring("k1")) as repo:
        await _fill(repo, 1)
    for keys, key_id in ((None, "k1"), (ring("k2"), "k1"), (ring("bad"), "k1")):
        async with SQLRepo(store_url, keys=keys) as repo:
            with pytest.raises(EncryptionKeyError) as caught:
                await repo.list()
            assert caught.value.key_id == key_id
            assert caught.value.store in str(caught.value)
            with pytest.raises(EncryptionKeyError):
                await repo.open("anything")
    async with SQLRepo(store_url, keys=ring("k2")) as repo:
        with pytest.raises(EncryptionKeyError, match="lacks"):
            await repo.list()
    # the refused opens wrote nothing: the store still lists k1 alone
    async with SQLRepo(store_url, keys=ring("k1")) as repo:
        assert len(await repo.list()) == 2
    assert "k2" not in _meta(store_url)


async def test_two_keys_then_rekey_leaves_everything_under_the_new_key(store_url: str) -> None:
    async with open_repo(store_url, keys=ring("k1")) as repo:
        written = await _fill(repo, 2)
    async with SQLRepo(store_url, keys=ring("k2", "k1")) as repo:
        s = await repo.create()
        await s.append_message(user(SECRET))
        written[s.id] = await s.get_entries()
        for sid, entries in written.items():  # both keys read
            assert await (await repo.open(sid)).get_entries() == entries
        heads = {b[:9] for b in _bodies(store_url)}
        assert heads == {'"stk1:k1:', '"stk1:k2:'}
        seen: list[tuple[str, int, int]] = []
        changed = await repo.rekey(batch=3, progress=lambda t, d, n: seen.append((t, d, n)))
        assert changed > 0 and seen[-1][0] == "trash"
        assert ("entries", 3, seen[0][2]) in seen  # progress batch by batch
        assert await repo.rekey() == 0  # nothing left
    assert {b[:9] for b in _bodies(store_url)} == {'"stk1:k2:'}
    async with open_repo(store_url, keys=ring("k2")) as repo:  # the old key may go now
        for sid, entries in written.items():
            assert await (await repo.open(sid)).get_entries() == entries
        assert SECRET in await _draft(await repo.open(next(iter(written))))


async def test_a_plain_store_opened_with_keys_is_sealed_by_rekey(store_url: str) -> None:
    async with open_repo(store_url) as repo:
        written = await _fill(repo, 1)
    assert SECRET in _raw(store_url)
    async with SQLRepo(store_url, keys=ring("k1")) as repo:
        for sid, entries in written.items():
            assert await (await repo.open(sid)).get_entries() == entries
        await repo.rekey()
        for sid, entries in written.items():
            assert await (await repo.open(sid)).get_entries() == entries
    assert SECRET not in _raw(store_url)
    async with open_repo(store_url) as repo:
        with pytest.raises(EncryptionKeyError):
            await repo.list()


async def test_search_indexes_plaintext_only_when_opted_in(store_url: str) -> None:
    async with open_repo(store_url, keys=ring("k1"), index_plaintext=True) as repo:
        s = await repo.create()
        entry = await s.append_message(user(SECRET))
        hits = await repo.search("TANGERINE")
        assert [(h.session_id, h.entry_id) for h in hits] == [(s.id, entry)]
        assert "tangerine" in hits[0].snippet.lower()
    async with open_repo(store_url, keys=ring("k1")) as repo:  # the store keeps the setting
        assert len(await repo.search("tangerine")) == 1
    async with open_repo(store_url, keys=ring("k1"), index_plaintext=False) as repo:
        s = await repo.create()
        await s.append_message(user("marmalade " + SECRET))
        assert await repo.search("marmalade") == []


async def test_the_web_viewers_readers_open_the_store_with_its_keys(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 's.db'}"
    keys = ring("k1")
    async with SQLRepo(url, keys=keys) as repo:
        await _fill(repo, 1)
        reader, opened = own_repo(repo)
        assert opened
        try:
            assert len(await reader.list()) == 2
        finally:
            await reader.close()


async def test_rekey_refused_without_keys_and_jsonl_refuses_keys(tmp_path: Path) -> None:
    async with SQLRepo(f"sqlite:///{tmp_path / 'p.db'}") as repo:
        with pytest.raises(StorageError, match="keys"):
            await repo.rekey()
    with pytest.raises(StorageError, match="JSONL"):
        open_repo(f"jsonl://{tmp_path / 'j'}", keys=ring("k1"))


def test_key_rings_parse_and_refuse_what_is_malformed(tmp_path: Path) -> None:
    r = KeyRing.parse(f"new:{K2}, old:{K1}\n# comment\n")
    assert r.current_id == "new" and r.ids == ["new", "old"] and K1 not in repr(r)
    for bad in ("", "x", f"a b:{K1}", "a:short", f"a:{K1},a:{K2}", "a:@@@@"):
        with pytest.raises(InvalidArgumentError):
            KeyRing.parse(bad)
    f = tmp_path / "keys"
    f.write_text(f"k2:{K2}\nk1:{K1}\n")
    assert KeyRing.from_file(f).ids == ["k2", "k1"]
    assert KeyRing.from_env({"SESSIONTREE_KEY_FILE": str(f)}).ids == ["k2", "k1"]  # type: ignore[union-attr]
    assert KeyRing.from_env({"SESSIONTREE_KEYS": f"z:{K1}"}).ids == ["z"]  # type: ignore[union-attr]
    assert KeyRing.from_env({}) is None
    with pytest.raises(InvalidArgumentError, match="missing"):
        KeyRing.from_file(tmp_path / "missing")


@given(st.binary(max_size=2000))
def test_the_codec_opens_what_it_sealed_and_refuses_alterations(data: bytes) -> None:
    codec = Codec(ring("k2", "k1"))
    sealed = codec.seal(data)
    assert codec.open(sealed) == data and Codec.key_id_of(sealed) == "k2"
    assert data not in sealed[9:] or len(data) < 4
    text = codec.seal_text(data.decode("latin-1"))
    assert codec.open_text(text) == data.decode("latin-1")
    flipped = bytearray(sealed)
    flipped[-1] ^= 1
    with pytest.raises(EncryptionKeyError):
        codec.open(bytes(flipped))
    with pytest.raises(EncryptionKeyError, match=r"lacks|does not hold"):
        Codec(ring("k1")).open(sealed)


def test_import_sessiontree_loads_no_cryptography() -> None:
    code = "import sys, sessiontree; print('cryptography' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_cli_rekey_with_a_key_file_shows_progress(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 's.db'}"

    async def fill() -> None:
        async with open_repo(url, keys=ring("k1")) as repo:
            await _fill(repo, 2)

    asyncio.run(fill())
    keys = tmp_path / "keys"
    keys.write_text(f"k2:{K2}\nk1:{K1}\n")
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    env.pop("SESSIONTREE_KEYS", None)
    cmd = [sys.executable, "-m", "sessiontree", "--key-file", str(keys), "rekey", "--store", url]
    out = subprocess.run([*cmd, "--batch", "2"], capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr
    assert "rekey entries: 2/" in out.stderr and "sealed again" in out.stdout
    assert {b[:9] for b in _bodies(url)} == {'"stk1:k2:'}
    after = [sys.executable, "-m", "sessiontree", "rekey", "--store", url, "--key-file", str(keys)]
    again = subprocess.run(after, capture_output=True, text=True, env=env)
    assert again.returncode == 0 and "0 value(s)" in again.stdout, again.stderr
    plain = subprocess.run(
        [sys.executable, "-m", "sessiontree", "--store", url, "list"],
        capture_output=True,
        text=True,
        env=env,
    )
    assert plain.returncode == 1 and "encrypted" in plain.stderr and "k2" in plain.stderr


async def _fill_many(url: str, sessions: int, turns: int) -> None:
    async with open_repo(url, keys=ring("k1")) as repo:
        for _ in range(sessions):
            s = await repo.create()
            for t in range(turns):
                await s.append_message(user(f"{SECRET} {t}"))


async def _check_all_readable(url: str, count: int, keys: tuple[str, ...] = ("k2", "k1")) -> None:
    async with open_repo(url, keys=ring(*keys)) as repo:
        infos = await repo.list()
        assert len(infos) == count
        for info in infos:
            entries = await (await repo.open(info.id)).get_entries()
            assert len(entries) == 25
            assert all(
                isinstance(e, MessageEntry) and SECRET in message_text(e.message) for e in entries
            )


def test_kill_9_during_rekey_leaves_every_entry_readable(store_url: str) -> None:
    sessions, turns = 12, 25
    asyncio.run(_fill_many(store_url, sessions, turns))
    env = {**os.environ, "SESSIONTREE_KEYS": f"k2:{K2},k1:{K1}", "PYTHONUNBUFFERED": "1"}
    cmd = [sys.executable, "-m", "sessiontree", "--store", store_url, "rekey", "--batch", "3"]
    rng = random.Random(30)
    env_back = {**env, "SESSIONTREE_KEYS": f"k1:{K1},k2:{K2}"}
    heads_seen: set[frozenset[str]] = set()
    for _ in range(6):
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
        assert proc.stderr is not None
        # a random moment: after a random number of its batches (a progress line each),
        # and a random fraction of a millisecond more
        for _ in range(rng.randint(1, 30)):
            proc.stderr.readline()
        time.sleep(rng.uniform(0, 0.001))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        proc.stderr.close()
        heads = frozenset(b[:9] for b in _bodies(store_url))
        heads_seen.add(heads)
        asyncio.run(_check_all_readable(store_url, sessions))
        if heads == {'"stk1:k2:'}:  # it had finished: back under k1 for the next kill
            subprocess.run(cmd, capture_output=True, env=env_back, check=True)
    done = subprocess.run(cmd, capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    assert {b[:9] for b in _bodies(store_url)} == {'"stk1:k2:'}
    asyncio.run(_check_all_readable(store_url, sessions, ("k2",)))  # the old key is not needed now
    assert any(len(h) == 2 for h in heads_seen), "no kill landed mid-rekey"


class TestEncryptedConformance(ConformanceSuite):
    """The whole conformance suite on encrypted SQLite and PostgreSQL stores (search opted in,
    so the search capability is checked too): nothing above the engine tells them apart."""

    @pytest.fixture
    async def repo(self, store_url: str) -> Any:
        async with SQLRepo(store_url, keys=ring("k1"), index_plaintext=True) as r:
            yield r

    @pytest.fixture
    def reopen(self, repo: SQLRepo) -> ReopenStore:
        return lambda: SQLRepo(repo.url, keys=ring("k1"))
