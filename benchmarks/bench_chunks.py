"""How closely a pass started part-way through a long video, after a look-back, agrees with the
sequential run from there on: the question a chunked scan (issue 31) stands on.

Run by hand (not a test):

    python benchmarks/bench_chunks.py [--at 0.5,0.8] [--lookback 60,300,360] [--minutes 15]
                                      [--work DIR]

Four clips of the development set (``../shared/datasets/devset``), each looped by copying
packets into a video of at least ``--minutes`` (and at least three loops), made once into
``--work``: six visits (10 fps), walking by with exposure drift, the bottles (a lasting
change), the night IR gate (insects). It prints first the detector's ``look_back`` at the
default settings: how far back its window's memory reaches (five windows' spans and the
warm-up). Each clip is scanned once from its start, then from T - L for every place T (a
fraction of its length, ``--at``) and look-back L (seconds, ``--lookback``), with ``videvent
run --start-time``. From T on, it prints how many frames' flags differ from the sequential
run's, how many of the sequential run's events that start after T are found by the part-way
pass with both ends within 1 s (issue 31's tolerance), and how many events the part-way pass
alone has; then how many flags differ in the last 30 s before T (within the look-back), and
whether the two passes' detectors, compared at T, hold the same background
(``holds_background_of``). Both passes seed the start's reference from the same frames of
the whole file. Skips cleanly when the shared development set is absent.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import pickle
import subprocess
import sys
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_run import Discard, loop_clip  # noqa: E402
from videvent.detectors import SubspaceWindowDetector  # noqa: E402
from videvent.engine import Engine  # noqa: E402
from videvent.passes import detector_for, open_for, prepare  # noqa: E402
from videvent.settings import Settings  # noqa: E402

DEVSET = ROOT.parent / "shared" / "datasets" / "devset"
CLIPS = ("intel_one_by_one_person", "beweging_walking_by", "intel_bottle_detection",
         "night_ir_gate")
TOLERANCE_S = 1.0
CHECKED_S = 30.0


def fractions(text: str) -> list[float]:
    return [float(part) for part in text.split(",")]


def scan(video: Path, start_s: float, out: Path) -> tuple[float, dict[int, bool], list]:
    """The frame rate, each frame's flag and the events of ``videvent run`` from ``start_s``."""
    command = ["videvent", "run", str(video), "--out", str(out), "-q", "--no-plot"]
    if start_s > 0:
        command += ["--start-time", f"{start_s:.3f}s"]
    subprocess.run(command, check=True, capture_output=True)
    flags = {int(row["frame"]): row["flagged"] == "1"
             for row in csv.DictReader((out / "scores.csv").open())}
    document = json.loads((out / "events.json").read_text())
    events = [(event["start_time_s"], event["end_time_s"]) for event in document["events"]]
    return document["source"]["fps"], flags, events


def scan_in_process(video: Path | str, start_s: float, end_s: float | None, consumer,
                    detector: SubspaceWindowDetector | None = None) -> SubspaceWindowDetector:
    """A pass over ``video`` from ``start_s`` to ``end_s`` (None: its end), scored as ``videvent
    run`` scores it into ``consumer`` (``Engine.run``'s); going on from ``detector`` if one is
    given (then without the start's reference: it is mid-pass). Returns the pass's detector."""
    settings = Settings(start_time=f"{start_s:.3f}s" if start_s > 0 else None,
                        end_time=None if end_s is None else f"{end_s:.3f}s",
                        start_reference=detector is None)
    with open_for(video, settings) as source:
        run, _ = prepare(source, settings)
        if detector is not None:
            run.detector = detector
        Engine(run).run(consumer)
    return run.detector


def detector_at(video: Path, start_s: float, end_s: float) -> bytes:
    """The detector (pickled) of a pass over ``video`` from ``start_s`` to ``end_s``."""
    return pickle.dumps(scan_in_process(video, start_s, end_s, Discard()))


def matched(events: list, others: list) -> tuple[int, int]:
    """How many of ``events`` (start, end in seconds) ``others`` has with both ends within
    ``TOLERANCE_S``, and how many of ``others`` match none of ``events``."""
    def near(a, b):
        return abs(a[0] - b[0]) <= TOLERANCE_S and abs(a[1] - b[1]) <= TOLERANCE_S

    return (sum(any(near(event, other) for other in others) for event in events),
            sum(not any(near(other, event) for event in events) for other in others))


def same_background(video: Path, place_s: float, starts: list[float]) -> list[bool]:
    """Whether each pass started at one of ``starts`` holds, at ``place_s``, the background of
    the pass from the video's start (``SubspaceWindowDetector.holds_background_of``)."""
    with ProcessPoolExecutor(2) as pool:
        sequential, *others = [pickle.loads(state) for state in pool.map(
            detector_at, [video] * (1 + len(starts)), [0.0, *starts],
            [place_s] * (1 + len(starts)))]
    return [sequential.holds_background_of(other) for other in others]


def look_back_seconds(fps: float = 25.0) -> float:
    """``SubspaceWindowDetector.look_back`` at the default settings, in seconds."""
    detector = detector_for(Settings(), (90, 160), fps)
    return detector.look_back / fps


def agreement(sequential, partway, place_s: float) -> tuple[int, int, int, int, int, int]:
    """Frames from ``place_s`` on, frames whose flags differ, the sequential run's events that
    start after it (a second after: the part-way pass may cut one in two), those the part-way
    pass finds within the tolerance, the part-way pass's own; and the frames whose flags differ
    in the look-back's last ``CHECKED_S`` (what a check of a chunk against the one before it
    could see)."""
    fps, flags, events = sequential
    _, their_flags, their_events = partway
    first = round(place_s * fps)
    frames = [frame for frame in flags if frame >= first and frame in their_flags]
    differ = sum(flags[frame] != their_flags[frame] for frame in frames)
    checked = [frame for frame in their_flags
               if first - CHECKED_S * fps <= frame < first and frame in flags]
    differ_before = sum(flags[frame] != their_flags[frame] for frame in checked)
    ours = [event for event in events if event[0] >= place_s + TOLERANCE_S]
    theirs = [event for event in their_events if event[0] >= place_s + TOLERANCE_S]
    found, own = matched(ours, theirs)
    return len(frames), differ, len(ours), found, own, differ_before


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--at", type=fractions, default=[0.5, 0.8],
                        help="places to start part-way, as fractions of the video's length")
    parser.add_argument("--lookback", type=fractions, default=[60, 300, 360],
                        help="seconds scanned before each place")
    parser.add_argument("--minutes", type=float, default=15.0,
                        help="shortest length of a looped clip")
    parser.add_argument("--work", type=Path, default=Path("/tmp/videvent-chunks"))
    args = parser.parse_args()
    index = DEVSET / "clips.json"
    if not index.is_file():
        print(f"skipped: {index} is absent (the shared development set is not here)")
        return
    clips = json.loads(index.read_text())
    args.work.mkdir(parents=True, exist_ok=True)
    jobs = []
    for name in CLIPS:
        length_s = clips[name]["frames"] / clips[name]["fps"]
        times = max(3, math.ceil(args.minutes * 60 / length_s))
        video = args.work / f"{name}_x{times}.mp4"
        loop_clip(DEVSET / clips[name]["folder"] / clips[name]["source"], video, times)
        jobs.append((name, video, 0.0, None, None))
    with ThreadPoolExecutor(2) as pool:
        sequential = dict(zip(CLIPS, pool.map(
            lambda job: scan(job[1], 0.0, args.work / f"{job[0]}_sequential"), jobs)))
        for name, video, *_ in list(jobs):
            fps, flags, _ = sequential[name]
            length_s = (max(flags) + 1) / fps
            for at in args.at:
                for lookback in args.lookback:
                    place = round(at * length_s, 2)
                    jobs.append((name, video, max(0.0, place - lookback), place, lookback))
        partway = jobs[len(CLIPS):]
        results = list(pool.map(lambda job: scan(job[1], job[2], args.work / (
            f"{job[0]}_at{job[3]}_back{job[4]:g}")), partway))
    # Each pass's detector at its place against the sequential pass's, two processes at a time.
    held = {}
    for name, video, _, place, _ in partway:
        if (name, place) not in held:
            starts = [job[2] for job in partway if job[0] == name and job[3] == place]
            held[name, place] = iter(same_background(video, place, starts))
    print(f"the window's memory at the default settings: {look_back_seconds():.0f} s")
    print(f"{'clip':26} {'from s':>7} {'look-back':>9} {'frames':>6} {'flags differ':>13} "
          f"{'events after':>12} {'found':>5} {'own':>4} {'differ 30 s before':>18} "
          f"{'same background':>15}")
    for (name, _, _, place, lookback), result in zip(partway, results):
        frames, differ, events, found, own, before = agreement(sequential[name], result, place)
        same = next(held[name, place])
        print(f"{name[:26]:26} {place:7.1f} {lookback:8g}s {frames:6d} "
              f"{differ:6d} {differ / max(frames, 1):6.1%} {events:12d} {found:5d} {own:4d} "
              f"{before:18d} {'yes' if same else 'no':>15}", flush=True)


if __name__ == "__main__":
    main()
