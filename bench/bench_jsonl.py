"""JSONL backend benchmark (issue 4): open a real 2.4 MB pi session and build its context,
and list 1,000 sessions. Prints each figure and its ratio to the raw cost of parsing the same
bytes with orjson, measured in the same run.

Run: ``.venv/bin/python bench/bench_jsonl.py [--sessions 1000] [--repeat 7]``

Goal (issue 4): open + build_context within 3x of raw orjson parsing.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import orjson

from sessiontree.backends.jsonl.repo import JSONLRepo
from sessiontree.backends.jsonl.storage import JSONLStorage
from sessiontree.session import Session

REAL_NAME = "pi/pi-mono_before-compaction.v1.jsonl"
"""The real pi session read, relative to a session collection."""
ROOT = Path(__file__).resolve().parents[1]
PLACES = (ROOT / "data" / "sessions", ROOT.parent / "shared" / "data" / "sessions")
"""Where it is: shipped in the repository, else the team's collection beside the checkout."""


def find_source() -> Path:
    """The 2.4 MB real pi v1 session (shipped in ``data/sessions``, else beside the checkout)."""
    for place in PLACES:
        if (place / REAL_NAME).is_file():
            return place / REAL_NAME
    raise SystemExit(
        f"cannot find the real pi session {REAL_NAME} in {' or '.join(map(str, PLACES))}"
    )


def convert_v1_to_v3(source: Path, target: Path) -> None:
    """A minimal pi v1 → v3 conversion: ids = line index, parent = the previous entry."""
    lines = source.read_bytes().splitlines()
    header = orjson.loads(lines[0])
    header["version"] = 3
    out = [orjson.dumps(header)]
    prev: str | None = None
    for i, raw in enumerate(lines[1:], start=1):
        if not raw.strip():
            continue
        obj: dict[str, Any] = orjson.loads(raw)
        obj["id"] = f"e{i}"
        obj["parentId"] = prev
        if obj.get("type") == "compaction" and "firstKeptEntryIndex" in obj:
            obj["firstKeptEntryId"] = f"e{obj.pop('firstKeptEntryIndex')}"
        msg = obj.get("message")
        if isinstance(msg, dict) and msg.get("role") == "hookMessage":
            msg["role"] = "custom"
        out.append(orjson.dumps(obj))
        prev = obj["id"]
    target.write_bytes(b"\n".join(out) + b"\n")


async def make_v3(source: Path, workdir: Path) -> Path:
    """The real session as a v3 file written by our own backend (importer if present)."""
    try:
        from sessiontree.interop import import_session
    except ImportError:
        import_session = None  # type: ignore[assignment]
    if import_session is not None:
        repo = JSONLRepo(workdir / "imported")
        try:
            session, _report = await import_session(source, repo)
            await repo.close()
            return repo.root / session.id / "session.jsonl"
        except Exception as exc:  # the importer is another module; fall back
            print(f"  (importer failed: {exc!r}; using the in-bench conversion)")
    target = workdir / "converted.v3.jsonl"
    convert_v1_to_v3(source, target)
    return target


def best(fn: Callable[[], Any], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


async def best_async(fn: Callable[[], Awaitable[Any]], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        await fn()
        times.append(time.perf_counter() - start)
    return min(times)


async def bench_open(path: Path, repeat: int) -> float:
    """Raw orjson parsing vs JSONLStorage open (+ build_context), interleaved run by run.

    Both sides keep what they built (the parsed dicts; the storage and the context) until
    the clock has stopped, so deallocation is timed for neither.

    Returns the open + build_context ratio (best wall time of each over ``repeat`` runs; the
    machine may be shared, so the best run is the least disturbed one). CPU-time ratios are
    printed too.
    """
    size = os.stat(path).st_size

    def raw_parse() -> Any:
        data = path.read_bytes()
        loads = orjson.loads
        return [loads(line) for line in data.split(b"\n") if line]

    n_messages = 0

    async def open_only() -> Any:
        return JSONLStorage(path, durability="none")

    async def open_and_build() -> Any:
        nonlocal n_messages
        storage = JSONLStorage(path, durability="none")
        ctx = await Session(storage).build_context()
        n_messages = len(ctx.messages)
        return storage, ctx

    wall: dict[str, list[float]] = {"raw": [], "open": [], "build": []}
    cpu: dict[str, list[float]] = {"raw": [], "open": [], "build": []}
    for _ in range(repeat):
        for name, step in (("raw", None), ("open", open_only), ("build", open_and_build)):
            w, c = time.perf_counter(), time.process_time()
            kept = raw_parse() if step is None else await step()
            wall[name].append(time.perf_counter() - w)
            cpu[name].append(time.process_time() - c)
            del kept  # freeing the objects is timed for neither side
    raw, opened, ours = (min(wall[k]) for k in ("raw", "open", "build"))
    craw, copen, cours = (min(cpu[k]) for k in ("raw", "open", "build"))
    print(f"open + build_context of {path.name} ({size / 1e6:.2f} MB, {n_messages} messages)")
    print(f"  best of {repeat} interleaved runs       wall              cpu")
    print(
        f"  raw orjson parse of the same bytes : {raw * 1e3:7.1f} ms          {craw * 1e3:7.1f} ms"
    )
    print(
        f"  JSONLStorage open (index only)     : {opened * 1e3:7.1f} ms {opened / raw:5.2f}x"
        f"  {copen * 1e3:7.1f} ms {copen / craw:5.2f}x"
    )
    print(
        f"  open + build_context               : {ours * 1e3:7.1f} ms {ours / raw:5.2f}x"
        f"  {cours * 1e3:7.1f} ms {cours / craw:5.2f}x"
    )
    verdict = "OK" if ours / raw <= 3.0 else "OVER"
    print(f"  goal: open + build_context <= 3.00x raw parsing (wall): {verdict}")
    return ours / raw


async def bench_list(workdir: Path, sessions: int, repeat: int, session_kb: int) -> None:
    root = workdir / "many"
    repo = JSONLRepo(root, durability="none")
    start = time.perf_counter()
    filler = "z" * 1000
    for i in range(sessions):
        s = await repo.create(metadata={"cwd": "/w"})
        await s.storage.append_entries(
            [
                {
                    "type": "message",
                    "message": {"role": "user", "content": f"question {i}", "timestamp": 1},
                },
                *(
                    {
                        "type": "message",
                        "message": {"role": "user", "content": filler, "timestamp": 1},
                    }
                    for _ in range(session_kb)
                ),
            ]
        )
        await s.append_session_name(f"session {i}")
        await s.append_message({"role": "user", "content": "more " * 20})
        await s.close()
    made = time.perf_counter() - start
    await repo.close()
    total = sum(p.stat().st_size for p in root.rglob("session.jsonl"))

    def raw_headers() -> None:
        for d in os.listdir(root):
            if d.startswith("."):  # the store's own files (.index), not sessions
                continue
            with open(root / d / "session.jsonl", "rb") as f:
                orjson.loads(f.readline())

    raw = best(raw_headers, repeat)

    async def list_all() -> None:
        infos = await JSONLRepo(root).list()
        assert len(infos) == sessions

    async def list_page() -> None:
        infos = await JSONLRepo(root).list(limit=50)
        assert len(infos) == min(50, sessions)

    full = await best_async(list_all, repeat)
    page = await best_async(list_page, repeat)
    print(f"list {sessions} sessions ({total / 1e6:.1f} MB of logs; created in {made:.1f} s)")
    print(f"  raw: open + orjson-parse every header : {raw * 1e3:8.1f} ms")
    print(f"  JSONLRepo.list() (all)                : {full * 1e3:8.1f} ms  ({full / raw:.2f}x)")
    print(f"  JSONLRepo.list(limit=50)              : {page * 1e3:8.1f} ms  ({page / raw:.2f}x)")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=21)
    parser.add_argument(
        "--session-kb", type=int, default=64, help="log size of each listed session"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-jsonl-") as tmp:
        workdir = Path(tmp)
        path = await make_v3(find_source(), workdir)
        await bench_open(path, args.repeat)
        await bench_list(workdir, args.sessions, max(3, args.repeat // 4), args.session_kb)


if __name__ == "__main__":
    asyncio.run(main())
