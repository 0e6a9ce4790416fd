"""Benchmark: ``videvent run`` with and without ``--export-video`` (run by hand).

    python benchmarks/bench_export.py [--clip PATH]

Times both on the same 720p clip, twice each, interleaved, and prints the ratio. The default
clip is the 1-minute one ``bench_run.py`` makes in /tmp/videvent-bench (run that first).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path


def seconds(command: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clip", type=Path,
                        default=Path("/tmp/videvent-bench/garden_720p_1min.mp4"))
    args = parser.parse_args()
    if not args.clip.is_file():
        raise SystemExit(f"no clip at {args.clip}: run benchmarks/bench_run.py first")
    base = [sys.executable, "-m", "videvent", "run", str(args.clip), "-q", "-d",
            str(args.clip.with_suffix(".export-bench"))]
    best = {"run": float("inf"), "run --export-video": float("inf")}
    for _ in range(2):
        best["run"] = min(best["run"], seconds(base))
        best["run --export-video"] = min(best["run --export-video"],
                                         seconds(base + ["--export-video"]))
    for name, value in best.items():
        print(f"{name:22s} {value:7.1f} s")
    print(f"with export / without: {best['run --export-video'] / best['run']:.2f}x the time")


if __name__ == "__main__":
    main()
