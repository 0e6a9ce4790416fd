"""Benchmark: do the verdicts depend on where a pass starts? Run by hand.

    python benchmarks/bench_start_invariance.py [--at 25,50,75] [CLIP ...]

Each clip of the development set (``../shared/datasets/devset``), and the bundled demo clip, is
scanned by ``videvent run`` from its first frame and again from each ``--at`` percentage of it
(``--start-time``: a file's pass is still seeded from frames spread over the whole file). On
the frames both passes scored, the row counts the frames one flags and the other does not,
and how many of those are in a labelled event (a late start missing part of an event that
began before it is expected; flagging the empty scene is not). A detector whose background is
decided by principle, not by where it started, scores 0 in the last columns (issue 52).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from videvent.output import read_scores  # noqa: E402

DEVSET = HERE.parent.parent / "shared" / "datasets" / "devset"
DEMO = HERE.parent / "sample_videos" / "person_visit"


def clips(names: list[str]) -> dict[str, tuple[Path, int, list[list[int]]]]:
    """(file, frames, labelled events) of each clip to scan: the dev set's, then the demo's."""
    found = {}
    if (DEVSET / "clips.json").is_file():
        for name, clip in json.loads((DEVSET / "clips.json").read_text()).items():
            found[name] = (DEVSET / clip["folder"] / clip["source"], clip["frames"],
                           clip["event_frames"])
    demo = json.loads(DEMO.with_suffix(".json").read_text())
    found["demo"] = (DEMO.with_suffix(".mp4"), demo["frame_count"], demo["event_frames"])
    return {name: found[name] for name in names} if names else found


def flags_from(video: Path, start: int, folder: Path) -> dict[int, bool]:
    """Frame number -> flagged, of ``videvent run`` from frame ``start``."""
    subprocess.run([sys.executable, "-m", "videvent", "run", str(video), "-d", str(folder), "-q",
                    "--no-plot", "--start-time", str(start)], check=True, capture_output=True)
    scores = read_scores(folder / "scores.csv")
    return dict(zip(scores["frame"].tolist(), scores["flagged"].astype(bool).tolist()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("clips", nargs="*", help="clip names (default: all, and the demo)")
    parser.add_argument("--at", default="25,50,75", help="start points, in %% of each clip")
    args = parser.parse_args()
    starts = [float(at) for at in args.at.split(",")]
    print(f"{'clip':34} {'from':>6} {'compared':>8} {'differ':>7} {'in event':>8} "
          f"{'outside':>7}")
    outside_total = 0
    with tempfile.TemporaryDirectory() as scratch:
        for name, (video, frames, events) in clips(args.clips).items():
            labelled = np.zeros(frames, bool)
            for first, last in events:
                labelled[first:last + 1] = True
            whole = flags_from(video, 0, Path(scratch) / f"{name}-0")
            for at in starts:
                start = int(frames * at / 100)
                later = flags_from(video, start, Path(scratch) / f"{name}-{start}")
                shared = [i for i in later if i in whole and i < frames]
                differ = [i for i in shared if later[i] != whole[i]]
                inside = sum(labelled[i] for i in differ)
                outside_total += len(differ) - inside
                print(f"{name:34} {start:>6} {len(shared):>8} {len(differ):>7} {inside:>8} "
                      f"{len(differ) - inside:>7}")
    print(f"frames flagged differently outside any labelled event, in all: {outside_total}")


if __name__ == "__main__":
    main()
