"""The chunked scan that issue 31 would build, simulated in one process: does it give the
sequential run's events, and how much of it is left sequential?

Run by hand (not a test), on a long video and the result folder of ``videvent run`` on it
(``bench_chunks.py`` makes both: ``--work``'s ``*_x*.mp4`` and ``*_sequential``):

    python benchmarks/bench_chunk_scan.py VIDEO SEQUENTIAL_DIR [--chunk 180] [--lookback 360]

The video is cut into chunks of ``--chunk`` seconds, each scored (two processes at a time)
from ``--lookback`` seconds before its start, as ``videvent run --start-time`` scores it; its
detector is kept (pickled) at its start and at its end. Then, in order, each chunk's detector
at its start is checked against the one the chunk before it ended with
(``SubspaceWindowDetector.holds_background_of``): where they hold the same background, the
chunk's verdicts stand; where not, the chunk is scored again from that detector (the
sequential part). The verdicts, joined, go through the segmenter; it prints the chunks scored
again, and the sequential run's events found with both ends within 1 s (issue 31's tolerance)
and the chunked scan's own.
"""

from __future__ import annotations

import argparse
import json
import math
import pickle
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_chunks import matched, scan_in_process  # noqa: E402
from videvent.passes import build_segmenter  # noqa: E402
from videvent.settings import Settings  # noqa: E402


class Verdicts:
    """The engine's consumer that keeps what the segmenter needs of each verdict."""

    def __init__(self):
        self.kept = []

    def add(self, frame, vector, verdict) -> None:
        self.kept.append((verdict.index, verdict.time_s, verdict.score, verdict.absorbed))

    def status(self, *_news) -> None:
        pass


def scan(video: str, start_s: float, end_s: float | None, detector=None):
    """The verdicts of a pass (``scan_in_process``) and its detector."""
    verdicts = Verdicts()
    detector = scan_in_process(video, start_s, end_s, verdicts, detector)
    return verdicts.kept, detector


def score_chunk(video: str, first_s: float, start_s: float, end_s: float | None):
    """A chunk scored from ``first_s``: its verdicts from ``start_s``, and its detector
    (pickled) at ``start_s`` (None without a look-back) and at its end."""
    if first_s >= start_s:
        verdicts, detector = scan(video, start_s, end_s)
        return verdicts, None, pickle.dumps(detector)
    _, detector = scan(video, first_s, start_s)
    at_start = pickle.dumps(detector)
    verdicts, detector = scan(video, start_s, end_s, detector)
    return verdicts, at_start, pickle.dumps(detector)


def events_of(verdicts: list, fps: float) -> list[tuple[float, float]]:
    segmenter = build_segmenter(Settings(), fps)
    for index, time_s, score, absorbed in verdicts:
        segmenter.update(index, time_s, score, absorbed=absorbed)
    segmenter.finish()
    return [(event.start_time_s, event.end_time_s) for event in segmenter.events]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("video")
    parser.add_argument("sequential", type=Path, help="the result folder of videvent run")
    parser.add_argument("--chunk", type=float, default=180.0, help="seconds a chunk")
    parser.add_argument("--lookback", type=float, default=360.0, help="seconds before each")
    args = parser.parse_args()
    sequential = json.loads((args.sequential / "events.json").read_text())
    fps = sequential["source"]["fps"]
    count = math.ceil(sequential["source"]["frame_count"] / fps / args.chunk)
    starts = [k * args.chunk for k in range(count)]
    ends = starts[1:] + [None]
    began = time.perf_counter()
    with ProcessPoolExecutor(2) as pool:
        chunks = list(pool.map(score_chunk, [args.video] * count,
                               [max(0.0, start - args.lookback) for start in starts],
                               starts, ends))
    parallel_s = time.perf_counter() - began
    verdicts, scored_again = list(chunks[0][0]), []
    before = pickle.loads(chunks[0][2])
    for k in range(1, count):
        mine, at_start, at_end = chunks[k]
        if at_start is None or before.holds_background_of(pickle.loads(at_start)):
            verdicts += mine
            before = pickle.loads(at_end)
        else:
            scored_again.append(k)
            again, before = scan(args.video, starts[k], ends[k], before)
            verdicts += again
    theirs = [(event["start_time_s"], event["end_time_s"]) for event in sequential["events"]]
    found, own = matched(theirs, events_of(verdicts, fps))
    print(f"{Path(args.video).name}: {count} chunks of {args.chunk:g} s, look-back "
          f"{args.lookback:g} s; scored again: {scored_again or 'none'}; the sequential run's "
          f"{len(theirs)} events, {found} found, {own} of its own; parallel part "
          f"{parallel_s:.0f} s, then {time.perf_counter() - began - parallel_s:.0f} s in order")


if __name__ == "__main__":
    main()
