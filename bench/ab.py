"""A/B of ``bench/side_by_side.py`` between two checkouts of sessiontree, in one run.

Run: ``.venv/bin/python bench/ab.py --base /path/to/old/.venv/bin/python [--rounds 3]
[-- --quick --n 1000]``. The same benchmark script (this directory's) runs under each
interpreter in turn — base, new, base, new, … — so machine load hits both alike; each
interpreter imports the sessiontree installed in its own environment (for an old commit:
``git worktree add --detach ../old COMMIT``, then a venv there with
``pip install -e . --group dev --group bench``). Every row (``label durability figure µs``)
gets the median of its rounds on each side and the ratio new/base; a sessiontree row over
``--limit`` (default 1.10) is marked. Peer and raw rows are printed too: their ratios show
how far the machine's noise alone moves a figure. Reads and forks alone (sections 2-3, a
few minutes a run): ``-- --first 2 --upto 3``.
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROW = re.compile(r"^  (?P<label>.{46}) (?P<durability>.{14}) +(?P<us>[0-9.]+) µs")
"""A row as ``side_by_side.row`` prints it."""
HERE = Path(__file__).resolve().parent


def run_once(python: str, bench: Path, args: list[str]) -> dict[tuple[str, str], float]:
    """The rows of one run of ``bench/side_by_side.py`` under ``python``: (label, durability)
    → µs.

    Raises:
        SystemExit: the benchmark failed (its error output is printed).
    """
    done = subprocess.run(
        [python, str(bench / "side_by_side.py"), *args], capture_output=True, text=True
    )
    if done.returncode != 0:
        print(done.stderr[-3000:], file=sys.stderr)
        raise SystemExit(f"{python} {bench}/side_by_side.py failed ({done.returncode})")
    out = done.stdout
    rows: dict[tuple[str, str], float] = {}
    for line in out.splitlines():
        m = ROW.match(line)
        if m:
            rows[(m["label"].strip(), m["durability"].strip())] = float(m["us"])
    return rows


def table(samples: dict[str, list[dict[tuple[str, str], float]]], limit: float) -> None:
    """Print each row's median on each side and the ratio new/base (``over``: a sessiontree
    row whose ratio is above ``limit``)."""
    order = list(dict.fromkeys(k for run in samples["new"] for k in run))
    print(f"{'row':52} {'durability':14} {'base µs':>11} {'new µs':>11} {'new/base':>8}")
    for key in order:
        base = [r[key] for r in samples["base"] if key in r]
        new = [r[key] for r in samples["new"] if key in r]
        if not new:
            continue
        b = statistics.median(base) if base else None
        n = statistics.median(new)
        ratio = "" if b is None or b == 0 else f"{n / b:8.2f}"
        over = " over" if b and key[0].startswith("sessiontree") and n / b > limit else ""
        shown = "-" if b is None else f"{b:11.1f}"
        print(f"{key[0]:52} {key[1]:14} {shown:>11} {n:11.1f} {ratio}{over}", flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--base", required=True, help="the old checkout's Python")
    ap.add_argument("--new", default=sys.executable, help="the new checkout's Python")
    ap.add_argument(
        "--base-bench",
        type=Path,
        default=HERE,
        help="the bench directory run under --base (default this one; an old checkout's own "
        "when this one imports modules the old code does not have)",
    )
    ap.add_argument("--rounds", type=int, default=3, help="runs of each side, alternated")
    ap.add_argument("--limit", type=float, default=1.10, help="new/base ratio marked over")
    ap.add_argument("bench_args", nargs="*", help="arguments for side_by_side.py (after --)")
    args = ap.parse_args()
    sides = {"base": (args.base, args.base_bench), "new": (args.new, HERE)}
    samples: dict[str, list[dict[tuple[str, str], float]]] = {"base": [], "new": []}
    for i in range(args.rounds):
        for side, (python, bench) in sides.items():
            t0 = time.perf_counter()
            samples[side].append(run_once(python, bench, args.bench_args))
            took = time.perf_counter() - t0
            print(f"round {i + 1}/{args.rounds} {side}: {took:.0f} s", file=sys.stderr, flush=True)
        print(f"\nafter {i + 1} round(s) of each:")
        table(samples, args.limit)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
