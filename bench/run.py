"""Run every benchmark in one go: ``.venv/bin/python bench/run.py``.

Each benchmark prints its own table with ratios against the raw work measured in the same
run (raw driver inserts/selects, orjson parsing) and against peer libraries where installed.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
BENCHES = [
    "bench_backends.py",
    "bench_jsonl.py",
    "bench_harness.py",
    "peers.py",
    "bench_adapters.py",
]


def main() -> int:
    failed = 0
    for name in BENCHES:
        path = HERE / name
        if not path.exists():
            print(f"== {name}: missing", flush=True)
            failed += 1
            continue
        print(f"\n== {name}", flush=True)
        started = time.perf_counter()
        rc = subprocess.call([sys.executable, str(path)], cwd=HERE.parent)
        print(f"== {name}: exit {rc} in {time.perf_counter() - started:.1f} s", flush=True)
        failed += rc != 0
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
