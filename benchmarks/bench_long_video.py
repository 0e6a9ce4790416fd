"""Benchmark: one long video scored in chunks over worker processes (issue 31), run by hand.

    python benchmarks/bench_long_video.py [--video garden|devset|motorway] [--minutes 60]
                                          [--chunk-minutes 15] [--work DIR]

The video is ``bench_run.py``'s 720p garden clip (30 s, the walker crossing every 20 s), the
dev set's fifteen real clips joined at 1280x720 and 25 fps (``bench_chunk_scan.py``'s join,
10 min), or the dev set's 720p motorway clip (23 s of dense traffic), looped to ``--minutes``
without re-encoding (the last two need ../shared). Every figure is one core's: this process, the
``videvent run`` it times and each Dask worker are pinned to one core each (a cluster's
machines, one core each), so the decoder and BLAS have one thread.

1. One chunk's cost: the second chunk scored from its own start and from the detector's
   look-back before it, in CPU seconds per minute of video: the look-back's overhead.
2. The sequential part: the background check at one boundary, and the join (the chunk's
   verdicts through the session into a result folder), per minute of video, against one
   worker's work per minute.
3. Wall time of ``videvent run`` and of ``videvent batch --chunk-minutes`` on 1 and 2 worker
   processes, their ratios, the chunks scored again, and the run's events the chunked scan
   found with both ends within 1 s (and its own); each worker's peak memory and run's.
4. What those figures give on N machines (the chunks spread over them: a chunk of the video's
   length over N each, each with its look-back), for this video and for a day of footage.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_chunk_scan import DEVSET, join_clips  # noqa: E402
from bench_chunks import matched  # noqa: E402
from bench_run import loop_clip_to, make_clip, timed_peak  # noqa: E402
from videvent.batch import Video, run_batch  # noqa: E402
from videvent.chunked import JoinedChunks, holds_same_background, score_chunk  # noqa: E402
from videvent.engine import seed_sample  # noqa: E402
from videvent.passes import open_for, prepare_pass  # noqa: E402
from videvent.pipeline import write_results  # noqa: E402
from videvent.settings import Settings  # noqa: E402

CLIP_SECONDS = 30


def pin(core: int) -> None:
    """Every thread of this process (and those it starts) on one core."""
    for thread in os.listdir("/proc/self/task"):
        os.sched_setaffinity(int(thread), {core})


def peak_memory_mb() -> float:
    """This process's peak resident memory (VmHWM)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def cpu_seconds() -> float:
    times = os.times()
    return times.user + times.system


def chunk_costs(video: Path, fps: float, chunk_frames: int, out: Path) -> dict:
    """Step 1 and 2 in this process, pinned to one core."""
    settings = Settings()
    with open_for(str(video), settings) as source:
        run = prepare_pass(source, settings)
        sample, look_back = seed_sample(run), run.detector.look_back
    start, end = chunk_frames, 2 * chunk_frames
    began = cpu_seconds()
    alone = score_chunk(str(video), settings, start, start, end, seed_sample=sample)
    alone_s = cpu_seconds() - began
    began = cpu_seconds()
    warmed = score_chunk(str(video), settings, max(0, start - look_back), start, end,
                         seed_sample=sample)
    warmed_s = cpu_seconds() - began
    began = time.process_time()
    holds_same_background(alone.at_end, warmed.at_end)
    check_s = time.process_time() - began
    began = time.process_time()
    with open_for(str(video), settings) as source:
        write_results(source, settings, out, plot=False,
                      scored=JoinedChunks([warmed], lambda *_: None))
    join_s = time.process_time() - began
    minutes = chunk_frames / fps / 60
    return {"look_back_s": look_back / fps, "per_minute_s": alone_s / minutes,
            "look_back_cpu_s": warmed_s - alone_s, "check_s": check_s,
            "join_per_minute_s": join_s / minutes}


def timed_run(video: Path, out: Path) -> tuple[float, float]:
    """Wall seconds and peak memory (MB) of ``videvent run`` (on this process's core)."""
    seconds, peak_kib = timed_peak([sys.executable, "-m", "videvent", "run", str(video), "-d",
                                    str(out), "-q", "--no-plot"])
    return seconds, peak_kib / 1024


def timed_batch(video: Path, out: Path, workers: int, chunk_s: float):
    """Wall time, outcome and each worker's peak memory of a chunked batch on ``workers``
    worker processes, each pinned to a core of its own."""
    from distributed import Client, LocalCluster

    shutil.rmtree(out, ignore_errors=True)   # a batch skips what an earlier one finished
    with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                      dashboard_address="127.0.0.1:0", worker_dashboard_address="127.0.0.1:0",
                      scheduler_kwargs={"dashboard": False}) as cluster, \
            Client(cluster) as client:
        for core, address in enumerate(sorted(client.scheduler_info()["workers"])):
            client.run(pin, core, workers=[address])
        began = time.perf_counter()
        summary = run_batch([Video(str(video), video.stem)], out, Settings(),
                            scheduler=cluster.scheduler_address, plot=False,
                            chunk_seconds=chunk_s)
        seconds = time.perf_counter() - began
        memory = sorted(client.run(peak_memory_mb).values())
    (outcome,) = summary.outcomes
    if outcome.error:
        raise SystemExit(f"the batch failed: {outcome.error}")
    return seconds, outcome, memory


def speed_up(machines: int, minutes: float, costs: dict) -> float:
    """One core's time for the whole video over the chunked scan's on ``machines`` cores, no
    chunk scored again: the video in as many chunks, all but the first with a look-back (the
    first longer by one: all as much work), then the join and the checks."""
    work = minutes * costs["per_minute_s"]
    parallel = (work + (machines - 1) * costs["look_back_cpu_s"]) / machines
    sequential = minutes * costs["join_per_minute_s"] + machines * costs["check_s"]
    return work / (parallel + sequential)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--video", choices=("garden", "devset", "motorway"), default="garden")
    parser.add_argument("--minutes", type=int, default=60)
    parser.add_argument("--chunk-minutes", type=float, default=15.0)
    parser.add_argument("--work", type=Path, default=Path("/tmp/videvent-bench"))
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    if args.video == "garden":
        clip = args.work / f"garden_720p_{CLIP_SECONDS}s.mp4"
        make_clip(clip, CLIP_SECONDS)
    elif args.video == "motorway":
        clip = DEVSET / "dvrscan_motorway" / "traffic_camera.mp4"
    else:
        clips = {name: clip for name, clip in
                 json.loads((DEVSET / "clips.json").read_text()).items()
                 if clip.get("scored", True)}
        clip = args.work / "devset_720p.mp4"
        join_clips(clips, 1, clip, size=(1280, 720))
    video = args.work / f"{args.video}_720p_{args.minutes}min_looped.mp4"
    loop_clip_to(clip, video, args.minutes)
    with open_for(str(video), Settings()) as source:
        fps = source.fps
    pin(0)
    costs = chunk_costs(video, fps, round(args.chunk_minutes * 60 * fps),
                        args.work / "join.videvent")
    print(f"{video.name}: {args.minutes} min of 1280x720 at {fps:g} fps, chunks of "
          f"{args.chunk_minutes:g} min; look-back {costs['look_back_s']:.0f} s")
    print(f"one chunk, from its start: {costs['per_minute_s']:.1f} CPU s a minute of video; "
          f"its look-back adds {costs['look_back_cpu_s']:.0f} CPU s "
          f"({costs['look_back_cpu_s'] / (costs['per_minute_s'] * args.chunk_minutes):.0%} "
          f"of the chunk)")
    share = costs["join_per_minute_s"] / costs["per_minute_s"]
    print(f"sequential part: the join {costs['join_per_minute_s']:.2f} s a minute of video "
          f"({share:.1%} of a worker's work a minute; goal <= 5%), the check "
          f"{costs['check_s']:.2f} s a boundary")

    run_out = args.work / "long_run.videvent"
    run_s, run_mb = timed_run(video, run_out)
    theirs = [(e["start_time_s"], e["end_time_s"])
              for e in json.loads((run_out / "events.json").read_text())["events"]]
    rows = [("videvent run, 1 core", run_s, None, [run_mb])]
    for workers in (1, 2):
        seconds, outcome, memory = timed_batch(video, args.work / f"long_batch{workers}",
                                               workers, args.chunk_minutes * 60)
        rows.append((f"batch, {workers} worker{'s' if workers > 1 else ''}", seconds, outcome,
                     memory))
    one_worker = rows[1][1]
    print("| | wall s | x run | x 1 worker | chunks (again) | run's events found | own | "
          "peak MB a process |")
    print("|---|---|---|---|---|---|---|---|")
    for name, seconds, outcome, memory in rows:
        if outcome is None:
            print(f"| {name} | {seconds:.0f} | 1.00 | | | {len(theirs)} | | {memory[0]:.0f} |")
            continue
        found, own = matched(theirs, [(e["start_time_s"], e["end_time_s"])
                                      for e in outcome.events])
        print(f"| {name} | {seconds:.0f} | {run_s / seconds:.2f} | {one_worker / seconds:.2f} "
              f"| {outcome.chunks} ({outcome.rescored}) | {found} of {len(theirs)} | {own} | "
              f"{', '.join(f'{m:.0f}' for m in memory)} |")
    print("speed-up on N machines (one core each), from the figures above:")
    print("| machines | " + " | ".join(str(n) for n in (4, 8, 16, 32, 64)) + " |")
    print("|---|---|---|---|---|---|")
    for minutes, name in ((args.minutes, f"{args.minutes} min"), (24 * 60, "24 h")):
        print(f"| {name} | " + " | ".join(f"{speed_up(n, minutes, costs):.1f}x"
                                        for n in (4, 8, 16, 32, 64)) + " |")


if __name__ == "__main__":
    main()
