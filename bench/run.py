"""Run every benchmark in one go: ``.venv/bin/python bench/run.py [--quick]``.

Each benchmark prints its own table with ratios against the raw work measured in the same
run (raw driver inserts/selects, orjson parsing) and against peer libraries where installed
(``pip install -e . --group bench``). ``bench/side_by_side.py`` runs last and ends with the table of
the performance goals, each PASS or FAIL with its ratio. ``--quick``: fewer messages and
repetitions everywhere (a few minutes); ``--goals``: only the side-by-side goals.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
BENCHES = [
    "bench_backends.py",
    "bench_jsonl.py",
    "bench_adapters.py",
    "bench_harness.py",
    "bench_sync.py",
    "bench_encryption.py",
    "bench_payloads.py",
    "side_by_side.py",
]
QUICK = {
    "bench_backends.py": ["--quick"],
    "bench_sync.py": ["--quick"],
    "bench_encryption.py": ["--quick"],
    "bench_payloads.py": ["--quick"],
    "side_by_side.py": ["--quick"],
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--quick", action="store_true", help="fewer messages and repetitions (a few minutes)"
    )
    parser.add_argument(
        "--goals", action="store_true", help="only bench/side_by_side.py and its goals table"
    )
    args = parser.parse_args(argv)
    quick = args.quick
    benches = ["side_by_side.py"] if args.goals else BENCHES
    failed = 0
    for name in benches:
        path = HERE / name
        if not path.exists():
            print(f"== {name}: missing", flush=True)
            failed += 1
            continue
        print(f"\n== {name}", flush=True)
        started = time.perf_counter()
        extra = QUICK.get(name, []) if quick else []
        rc = subprocess.call([sys.executable, str(path), *extra], cwd=HERE.parent)
        print(f"== {name}: exit {rc} in {time.perf_counter() - started:.1f} s", flush=True)
        failed += rc != 0
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
