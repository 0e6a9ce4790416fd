"""Benchmark: ``videvent run`` with and without ``--export-video`` (run by hand).

    python benchmarks/bench_export.py [--clip PATH] [--against CHECKOUT] [--repeats N]

Times both on the same 720p clip, interleaved, the best of ``--repeats`` each, and prints the
ratio. The default clip is the 1-minute one ``bench_run.py`` makes in /tmp/videvent-bench (run
that first). ``--against /work/main`` also times another checkout of videvent in the same
rounds (on a shared machine the load moves between rounds; interleaving keeps the comparison
fair), e.g. before and after ``run --export-video`` became one pass.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path


def seconds(command: list[str], checkout: Path | None) -> float:
    environment = dict(os.environ)
    if checkout is not None:
        environment["PYTHONPATH"] = str(checkout)
    start = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, env=environment)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clip", type=Path,
                        default=Path("/tmp/videvent-bench/garden_720p_1min.mp4"))
    parser.add_argument("--against", type=Path, default=None,
                        help="another checkout of videvent to time in the same rounds")
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    if not args.clip.is_file():
        raise SystemExit(f"no clip at {args.clip}: run benchmarks/bench_run.py first")
    base = [sys.executable, "-m", "videvent", "run", str(args.clip), "-q", "-d",
            str(args.clip.with_suffix(".export-bench"))]
    checkouts = {"this": None}
    if args.against is not None:
        checkouts[str(args.against)] = args.against.resolve()
    best = {(name, kind): float("inf") for name in checkouts
            for kind in ("run", "run --export-video")}
    for _ in range(args.repeats):
        for name, checkout in checkouts.items():
            best[name, "run"] = min(best[name, "run"], seconds(base, checkout))
            best[name, "run --export-video"] = min(best[name, "run --export-video"],
                                                   seconds(base + ["--export-video"], checkout))
    for name in checkouts:
        plain, exported = best[name, "run"], best[name, "run --export-video"]
        print(f"{name:12s} run {plain:6.1f} s   run --export-video {exported:6.1f} s   "
              f"with export / without: {exported / plain:.2f}x the time")
    if args.against is not None:
        print(f"run --export-video, this / {args.against}: "
              f"{best['this', 'run --export-video'] / best[str(args.against), 'run --export-video']:.2f}")


if __name__ == "__main__":
    main()
