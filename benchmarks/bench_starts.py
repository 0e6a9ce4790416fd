"""Benchmark: how far a pass's background depends on where it started (issue 26's bounded
memory, issue 31's check), run by hand.

    python benchmarks/bench_starts.py VIDEO --at FRAME --from 0,3000,... [--loop-minutes M]

Passes over VIDEO (looped to ``--loop-minutes`` first, without re-encoding, if given) start at
each frame of ``--from`` (seeded as a chunk's pass is, from the same sample of the whole file)
and are compared at frame ``--at``, as the chunked scan's check compares them: each cell is how
many of the column pass's background frames the row pass finds unusual (of how many). A pair
passes the check when both cells are 0. ``(look-back)`` marks the pass that starts where a
chunk starting at ``--at`` would.
"""

from __future__ import annotations

import argparse
import pickle
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_run import loop_clip_to  # noqa: E402
from videvent.chunked import score_chunk  # noqa: E402
from videvent.engine import seed_sample  # noqa: E402
from videvent.passes import open_for, prepare_pass  # noqa: E402
from videvent.settings import Settings  # noqa: E402


def state_at(video: str, sample: list[np.ndarray], first: int, at: int) -> bytes:
    """The pass from ``first`` (seeded from ``sample``) at frame ``at`` (pickled)."""
    return score_chunk(video, Settings(), first, at, at + 1, seed_sample=sample).at_start


def unusual_count(judging, judged) -> tuple[int, int]:
    """How many of ``judged``'s background frames ``judging``'s model finds unusual."""
    judge, frames = judging.judge, judged.model.background_frames()
    return sum(judge.unusualness(x) >= judge.hot for x in frames), len(frames)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("video", type=Path)
    parser.add_argument("--at", type=int, required=True)
    parser.add_argument("--from", dest="starts", required=True,
                        help="comma-separated first frames")
    parser.add_argument("--loop-minutes", type=float)
    parser.add_argument("--work", type=Path, default=Path("/tmp/videvent-bench"))
    args = parser.parse_args()
    video = args.video
    if args.loop_minutes:
        args.work.mkdir(parents=True, exist_ok=True)
        looped = args.work / f"{video.stem}_{args.loop_minutes:g}min_looped.mp4"
        loop_clip_to(video, looped, args.loop_minutes)
        video = looped
    starts = [int(first) for first in args.starts.split(",")]
    with open_for(str(video), Settings()) as source:
        run = prepare_pass(source, Settings())
        look_back, sample = run.detector.look_back, seed_sample(run)  # decoded once for all
    with ProcessPoolExecutor(2) as pool:
        detectors = [pickle.loads(state)[0] for state in
                     pool.map(state_at, [str(video)] * len(starts), [sample] * len(starts),
                              starts, [args.at] * len(starts))]
    names = [f"{first}{' (look-back)' if first == args.at - look_back else ''}"
             for first in starts]
    print(f"{video.name} at frame {args.at}; look-back {look_back} frames. Row: the judging "
          "pass, column: the pass whose background frames it judges, by first frame.")
    print("| from | " + " | ".join(names) + " |")
    print("|---" * (len(starts) + 1) + "|")
    for name, judging in zip(names, detectors):
        cells = ("" if judged is judging else "%d of %d" % unusual_count(judging, judged)
                 for judged in detectors)
        print(f"| {name} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
