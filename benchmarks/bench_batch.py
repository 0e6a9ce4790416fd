"""Benchmark: ``videvent batch`` frames per second with 1 and 2 local workers (run by hand).

    python benchmarks/bench_batch.py [--copies 4] [--width 1280 --height 720]

Builds an archive of ``--copies`` 720p clips (the bundled walker clip upscaled, made once into
--work), then scans it with a local Dask cluster of 1 worker and of 2 workers, each into a
fresh output folder (nothing skipped), and prints frames per second side by side with the
ratio. The time includes starting the cluster, as a user's batch does.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from pathlib import Path

import cv2

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from videvent.batch import find_videos, run_batch  # noqa: E402
from videvent.output.video import VideoWriter  # noqa: E402
from videvent.settings import Settings  # noqa: E402
from videvent.sources import open_source  # noqa: E402


def make_archive(work: Path, copies: int, width: int, height: int) -> Path:
    archive = work / f"archive_{width}x{height}_{copies}"
    if archive.is_dir() and len(list(archive.glob("*.mp4"))) == copies:
        return archive
    archive.mkdir(parents=True, exist_ok=True)
    first = archive / "clip00.mp4"
    with open_source(ROOT / "sample_videos" / "walker.mp4", colour=True) as source:
        writer = VideoWriter(first, width, height, source.fps)
        for frame in source.frames():
            writer.write(cv2.resize(frame.image, (width, height),
                                    interpolation=cv2.INTER_LINEAR))
        writer.close()
    for i in range(1, copies):
        shutil.copy(first, archive / f"clip{i:02d}.mp4")
    return archive


def frames_per_second(archive: Path, out: Path, workers: int) -> tuple[float, int, float]:
    shutil.rmtree(out, ignore_errors=True)
    start = time.perf_counter()
    summary = run_batch(find_videos([str(archive)]), out, Settings(), workers=workers,
                        plot=False)
    seconds = time.perf_counter() - start
    return summary.frames_scanned / seconds, summary.frames_scanned, seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, default=4)
    parser.add_argument("--width", type=int, default=1280)
    parser.add_argument("--height", type=int, default=720)
    parser.add_argument("--work", type=Path, default=Path("/tmp/videvent-bench"))
    args = parser.parse_args()
    archive = make_archive(args.work, args.copies, args.width, args.height)
    results = {workers: frames_per_second(archive, args.work / f"batch-out-{workers}", workers)
               for workers in (1, 2)}
    print(f"archive: {args.copies} clips of 300 frames at {args.width}x{args.height}")
    for workers, (fps, frames, seconds) in results.items():
        print(f"{workers} worker{'s' if workers > 1 else ' '}  {frames} frames in "
              f"{seconds:6.1f} s  = {fps:6.1f} frames/s")
    print(f"2 workers / 1 worker: {results[2][0] / results[1][0]:.2f}x the frames per second")


if __name__ == "__main__":
    main()
