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
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import orjson

from sessiontree.repos.jsonl import JSONLRepo
from sessiontree.session import Session
from sessiontree.storage.jsonl import JSONLStorage

REAL = (
    Path(__file__).resolve().parents[1].parent
    / "shared/data/sessions/pi/pi-mono_before-compaction.v1.jsonl"
)
SHIPPED = Path(__file__).resolve().parents[1] / "examples" / "sessions"


def find_source() -> Path:
    """The 2.4 MB real pi v1 session (beside the checkout, or shipped in the repo)."""
    if REAL.exists():
        return REAL
    for p in SHIPPED.rglob("pi-mono_before-compaction*.jsonl") if SHIPPED.exists() else []:
        return p
    raise SystemExit(f"cannot find the real pi session {REAL.name}")


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


async def bench_open(path: Path, repeat: int) -> None:
    size = os.stat(path).st_size

    def raw_parse() -> None:
        data = path.read_bytes()
        loads = orjson.loads
        for line in data.split(b"\n"):
            if line:
                loads(line)

    raw = best(raw_parse, repeat)
    n_messages = 0

    async def open_and_build() -> None:
        nonlocal n_messages
        storage = JSONLStorage(path, durability="none")
        ctx = await Session(storage).build_context()
        n_messages = len(ctx.messages)
        await storage.close()

    ours = await best_async(open_and_build, repeat)

    async def open_only() -> None:
        storage = JSONLStorage(path, durability="none")
        await storage.close()

    opened = await best_async(open_only, repeat)
    print(f"open + build_context of {path.name} ({size / 1e6:.2f} MB, {n_messages} messages)")
    print(f"  raw orjson parse of the same bytes : {raw * 1e3:8.1f} ms")
    print(f"  JSONLStorage open (index only)     : {opened * 1e3:8.1f} ms  ({opened / raw:.2f}x)")
    print(f"  open + build_context               : {ours * 1e3:8.1f} ms  ({ours / raw:.2f}x)")
    verdict = "OK" if ours / raw <= 3.0 else "OVER"
    print(f"  goal <= 3.00x raw parsing          : {verdict}")


async def bench_list(workdir: Path, sessions: int, repeat: int) -> None:
    root = workdir / "many"
    repo = JSONLRepo(root, durability="none")
    start = time.perf_counter()
    for i in range(sessions):
        s = await repo.create(metadata={"cwd": "/w"})
        await s.storage.append_entries(
            [
                {
                    "type": "message",
                    "message": {"role": "user", "content": f"question {i}", "timestamp": 1},
                },
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
            with open(root / d / "session.jsonl", "rb") as f:
                orjson.loads(f.readline())

    raw = best(raw_headers, repeat)

    async def list_all() -> None:
        infos = await JSONLRepo(root).list()
        assert len(infos) == sessions

    async def list_page() -> None:
        infos = await JSONLRepo(root).list(limit=50)
        assert len(infos) == 50

    full = await best_async(list_all, repeat)
    page = await best_async(list_page, repeat)
    print(f"list {sessions} sessions ({total / 1e6:.1f} MB of logs; created in {made:.1f} s)")
    print(f"  raw: open + orjson-parse every header : {raw * 1e3:8.1f} ms")
    print(f"  JSONLRepo.list() (all)                : {full * 1e3:8.1f} ms  ({full / raw:.2f}x)")
    print(f"  JSONLRepo.list(limit=50)              : {page * 1e3:8.1f} ms  ({page / raw:.2f}x)")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-jsonl-") as tmp:
        workdir = Path(tmp)
        path = await make_v3(find_source(), workdir)
        await bench_open(path, args.repeat)
        await bench_list(workdir, args.sessions, max(3, args.repeat // 2))
    _ = statistics  # keep the import for ad-hoc medians


if __name__ == "__main__":
    asyncio.run(main())
