"""Benchmark of ``videvent run`` (run by hand; prints ratios measured side by side in one run).

    python benchmarks/bench_run.py [--seconds 30] [--dvr-scan PATH] [--long-minutes 10]

1. Speed on a 1280x720 H.264 clip: frames per second and CPU seconds of `videvent run`
   against decoding alone (`ffmpeg -i CLIP -f null -`, videvent's own grey decoding, and PyAV's
   bare decode), against itself without the plot and report (`--no-plot`) and with
   `--export-video`, and against DVR-Scan (`dvr-scan -i CLIP -so`, installed in its own
   environment: give its path with --dvr-scan); all with every thread they take. Each command
   runs twice, interleaved; the best time counts. Issue 30's goals are printed beside them. Then, in this process, the detector's pass alone (seeding included) over the
   clip's frames decoded and preprocessed beforehand: what a run costs beyond decoding.
2. Cost per frame of the detector's rolling Gram update + eigen-decomposition against a fresh
   thin SVD of the window, on the same frames.
3. Peak memory (max RSS of the process) of `videvent run` on a 1-minute and a 10-minute clip.
4. Frame-level F1 on the Wallflower WavingTrees sequence with default settings (and DVR-Scan's
   at its defaults, on a lossless encode of the same frames), if ../shared has it.

The clips are synthetic (the bundled garden scene, upscaled, with sensor noise at full size),
made once into --work and reused.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import subprocess
import sys
import time
from pathlib import Path

import av
import cv2
import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from videvent import synthetic  # noqa: E402
from videvent.detectors import SubspaceWindowDetector  # noqa: E402
from videvent.engine import Engine, working_frames  # noqa: E402
from videvent.passes import detector_parameters, prepare  # noqa: E402
from videvent.preprocess import Preprocessor, working_size  # noqa: E402
from videvent.settings import Settings  # noqa: E402
from videvent.sources import Frame, open_source  # noqa: E402

WAVING_TREES = ROOT.parent / "shared" / "datasets" / "waving_trees"
FPS = 30


def make_clip(path: Path, seconds: int) -> None:
    """A 1280x720 30 fps H.264 clip of the garden scene (the walker crosses every 20 s)."""
    if path.exists():
        return
    scene = synthetic.walker_scene()
    rng = np.random.default_rng(0)
    noise = [rng.normal(0, 2.0, (720, 1280, 3)).astype(np.float32) for _ in range(7)]
    temporary = path.with_suffix(".tmp.mp4")
    with av.open(str(temporary), "w") as container:
        stream = container.add_stream("libx264", rate=FPS,
                                      options={"crf": "23", "preset": "veryfast"})
        stream.width, stream.height, stream.pix_fmt = 1280, 720, "yuv420p"
        for index in range(seconds * FPS):
            small = scene.frame((index // 2) % scene.frame_count)
            big = cv2.resize(small, (1280, 720), interpolation=cv2.INTER_CUBIC).astype(np.float32)
            big = np.clip(big + noise[index % 7], 0, 255).astype(np.uint8)
            frame = av.VideoFrame.from_ndarray(big, format="bgr24")
            container.mux(stream.encode(frame))
        container.mux(stream.encode())
    os.replace(temporary, path)


def loop_clip(source: Path, path: Path, times: int) -> None:
    """``source`` played ``times`` times in a row, by copying packets (no re-encoding).

    FFmpeg's ``-stream_loop`` keeps the frame rate constant across the joins (copying the
    packets with offsets of our own left a gap of two frames at each join, where B-frames
    delay decoding: a pass started by seeking then numbered its frames one off).
    """
    if path.exists():
        return
    temporary = path.with_suffix(".tmp.mp4")
    subprocess.run(["ffmpeg", "-v", "error", "-y", "-stream_loop", str(times - 1), "-i",
                    str(source), "-map", "0:v:0", "-c", "copy", str(temporary)], check=True)
    os.replace(temporary, path)


def loop_clip_to(source: Path, path: Path, minutes: float) -> None:
    """``source`` played over and over until ``minutes`` are reached (``loop_clip``)."""
    with open_source(str(source)) as clip:
        seconds = clip.frame_count / clip.fps
    loop_clip(source, path, max(1, int(np.ceil(minutes * 60 / seconds))))


def timed(command: list[str]) -> tuple[float, bytes]:
    """Wall seconds and standard output of a child process."""
    elapsed, _, output = timed_cpu(command)
    return elapsed, output


def timed_cpu(command: list[str]) -> tuple[float, float, bytes]:
    """Wall seconds, CPU seconds (user + system, its threads included) and standard output of
    a child process."""
    start = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    output, errors = process.communicate()
    elapsed = time.perf_counter() - start
    # communicate() reaped it: its CPU is in this process's children's usage, by difference.
    if process.returncode != 0:
        raise SystemExit(f"failed: {' '.join(command)}\n{errors.decode()[-2000:]}")
    return elapsed, _children_cpu(), output


_children_seen = [0.0]


def _children_cpu() -> float:
    """CPU seconds of the children reaped since the last call."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    total = usage.ru_utime + usage.ru_stime
    spent, _children_seen[0] = total - _children_seen[0], total
    return spent


# A child's peak RSS counts the memory of the process it was started from (the kernel carries
# the high-water mark over exec), so a child of this benchmark, large by then, would report
# the benchmark's size. A small Python starts the command and reports its peak instead.
REPORT_PEAK = ("import os, subprocess, sys; child = subprocess.Popen(sys.argv[1:], "
               "stdout=subprocess.DEVNULL); _, status, usage = os.wait4(child.pid, 0); "
               "print(usage.ru_maxrss); sys.exit(os.waitstatus_to_exitcode(status))")


def timed_peak(command: list[str]) -> tuple[float, int]:
    """Wall seconds and peak RSS (KiB) of a command, started from a small launcher."""
    elapsed, output = timed([sys.executable, "-c", REPORT_PEAK, *command])
    return elapsed, int(output.split()[-1])


def decode_only(clip: Path) -> None:
    """videvent's grey decoding as a run asks for it (the working picture), nothing else."""
    with open_source(clip) as source:
        for _ in source.frames(size=working_size(source.width, source.height)):
            pass


def bare_decode(clip: Path) -> None:
    with av.open(str(clip)) as container:
        stream = container.streams.video[0]
        stream.thread_type = "AUTO"
        for _ in container.decode(stream):
            pass


def in_process(function_name: str, clip: Path) -> list[str]:
    return [sys.executable, "-c",
            f"import sys; sys.path.insert(0, {str(ROOT / 'benchmarks')!r}); "
            f"import bench_run; bench_run.{function_name}(__import__('pathlib').Path({str(clip)!r}))"]


def speed(clip: Path, frames: int, dvr_scan: str | None) -> dict[str, tuple[float, float]]:
    """Per command: the best of two rounds (interleaved) of wall seconds and CPU seconds."""
    commands = {
        "ffmpeg -f null (decode alone)": ["ffmpeg", "-v", "error", "-i", str(clip), "-f",
                                           "null", "-"],
        "decode (PyAV, bare)": in_process("bare_decode", clip),
        "decode (videvent, working picture)": in_process("decode_only", clip),
        "videvent run": [sys.executable, "-m", "videvent", "run", str(clip), "-q",
                         "-d", str(clip.with_suffix(".videvent"))],
        "videvent run --no-plot": [sys.executable, "-m", "videvent", "run", str(clip), "-q",
                                   "--no-plot", "-d", str(clip.with_suffix(".videvent"))],
        "videvent run --export-video": [sys.executable, "-m", "videvent", "run", str(clip),
                                        "-q", "--export-video",
                                        "-d", str(clip.with_suffix(".videvent"))],
    }
    if dvr_scan:
        commands["DVR-Scan -so"] = [dvr_scan, "-i", str(clip), "-so", "-q"]
    best = {name: (float("inf"), float("inf")) for name in commands}
    _children_cpu()
    for _ in range(2):
        for name, command in commands.items():
            wall, cpu, _ = timed_cpu(command)
            best[name] = (min(best[name][0], wall), min(best[name][1], cpu))
    return best


def scoring_alone(clip: Path) -> float:
    """Frames per second of the detector's pass (``Engine.run``, seeding included) over the
    clip's working vectors, decoded and preprocessed beforehand."""
    with open_source(clip) as source:
        run, _ = prepare(source, Settings())
        decoded = decoded_beforehand(run)
        start = time.perf_counter()
        Engine(run).run(Discard(), decoded=decoded)
        return len(decoded) / (time.perf_counter() - start)


def decoded_beforehand(run) -> list[tuple[Frame, np.ndarray | None]]:
    """The pass's frames and working vectors, made as its reader makes them
    (``engine.working_frames``), for ``Engine.run(decoded=...)``; pictures dropped (memory:
    a frame holds the decoder's picture to show)."""
    frames = run.source.frames(run.start, run.end, size=run.decode_size)
    return [(Frame(item.frame.index, item.frame.time_s, None), item.vector)
            for item in working_frames(run, frames)]


class Discard:
    """The engine's consumer that keeps nothing: the detector's pass alone is timed."""

    def add(self, *_scored) -> None:
        pass

    def status(self, *_news) -> None:
        pass


def update_against_svd(clip: Path, steps: int = 200) -> tuple[float, float]:
    """ms per frame: scoring, rolling Gram update and refit of every frame, against a fresh SVD
    of the same window."""
    from threadpoolctl import threadpool_limits
    with open_source(clip) as source:
        width, height = 160, 90
        preprocess = Preprocessor(width, height)
        frames = [preprocess(f.image) for f, _ in zip(source.frames(), range(100 + steps))]
    with threadpool_limits(1, "blas"):
        # Learning every frame (stride 1) refits at every frame: the detector's worst case.
        parameters = {**detector_parameters(Settings(), FPS), "stride": 1, "warmup": 1,
                      "static_after": None, "refit_every": 1}
        detector = SubspaceWindowDetector((height, width), **parameters)
        for slot, x in enumerate(frames[:100]):          # the window filling, slot by slot
            detector.model.learn_one(x, slot)
        start = time.perf_counter()
        for x in frames[100:]:
            detector.process_frame(0, 0.0, x)
        rolling = (time.perf_counter() - start) / steps * 1000
        window = np.array(frames[:100])
        start = time.perf_counter()
        for step, x in enumerate(frames[100:]):
            window[step % 100] = x
            np.linalg.svd(window.T, full_matrices=False)
        fresh = (time.perf_counter() - start) / steps * 1000
    return rolling, fresh


def frame_f1(flagged: np.ndarray, truth: np.ndarray) -> float:
    hits = (flagged & truth).sum()
    return 2 * hits / max(1, flagged.sum() + truth.sum())


def _frames_in(ranges: list[list[int]], length: int) -> np.ndarray:
    """A mask of ``length`` frames, True in the inclusive [first, last] ``ranges``."""
    mask = np.zeros(length, bool)
    for first, last in ranges:
        mask[first:last + 1] = True
    return mask


def waving_trees_f1(work: Path, dvr_scan: str | None) -> dict[str, tuple[float, float]]:
    """Each detector's F1 against the labels (242..259: the person at all, a head or a strip
    of jacket at the edges included) and against the frames with the person clearly in view
    (243..258)."""
    events = json.loads((WAVING_TREES / "events.json").read_text())
    labels, clear = (_frames_in(events[key], events["frames"])
                     for key in ("event_frames", "event_frames_clear"))

    def both(flagged):
        return frame_f1(flagged, labels), frame_f1(flagged, clear)
    out = work / "wavingtrees.videvent"
    subprocess.run([sys.executable, "-m", "videvent", "run",
                    str(WAVING_TREES / "frames" / "b%05d.bmp"), "--fps", "15", "-q", "-d",
                    str(out)], check=True)
    flagged = np.loadtxt(out / "scores.csv", delimiter=",", skiprows=1, usecols=5,
                         dtype=int).astype(bool)
    scores = {"videvent (defaults)": both(flagged)}
    if dvr_scan:
        clip = work / "wavingtrees_lossless.mp4"
        if not clip.exists():
            with av.open(str(clip), "w") as container:
                stream = container.add_stream("libx264rgb", rate=15, options={"crf": "0"})
                stream.width, stream.height, stream.pix_fmt = 160, 120, "rgb24"
                for index in range(events["frames"]):
                    image = cv2.imread(str(WAVING_TREES / "frames" / f"b{index:05d}.bmp"))
                    frame = av.VideoFrame.from_ndarray(image[..., ::-1].copy(), format="rgb24")
                    container.mux(stream.encode(frame))
                container.mux(stream.encode())
        output = subprocess.run([dvr_scan, "-i", str(clip), "-so"], capture_output=True,
                                text=True).stdout
        flagged = np.zeros(events["frames"], bool)
        # DVR-Scan ends its report with start,end,start,end,... timecodes on one line.
        listing = re.search(r"Comma-separated timecode values:\s*\n([0-9:.,]+)", output)
        stamps = listing.group(1).split(",") if listing else []
        for start, end in zip(stamps[::2], stamps[1::2]):
            flagged[round(_seconds(start) * 15):round(_seconds(end) * 15)] = True
        scores["DVR-Scan (defaults)"] = both(flagged)
    return scores


def _seconds(timecode: str) -> float:
    hours, minutes, seconds = timecode.split(":")
    return int(hours) * 3600 + int(minutes) * 60 + float(seconds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=int, default=30)
    parser.add_argument("--long-minutes", type=int, default=10)
    parser.add_argument("--dvr-scan", default=None, help="path of the dvr-scan command")
    parser.add_argument("--work", type=Path, default=Path("/tmp/videvent-bench"))
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    clip = args.work / f"garden_720p_{args.seconds}s.mp4"
    make_clip(clip, args.seconds)
    frames = args.seconds * FPS
    print(f"clip: {clip.name}, 1280x720, {FPS} fps, {frames} frames; {os.cpu_count()} cores")

    # Speed on the 1-minute clip: a process's start-up (imports) then weighs little.
    one_minute = args.work / "garden_720p_1min.mp4"
    loop_clip(clip, one_minute, max(1, 60 // args.seconds))
    with open_source(one_minute) as source:
        minute_frames = source.frame_count
    costs = speed(one_minute, minute_frames, args.dvr_scan)
    run_wall, run_cpu = costs["videvent run"]
    print(f"\n1. {one_minute.name}, {minute_frames} frames, whole processes (best of 2, "
          "interleaved); speed and CPU against videvent run's")
    for name, (wall, cpu) in costs.items():
        print(f"   {name:34s} {minute_frames / wall:8.1f} fps {cpu:7.2f} CPU-s   "
              f"run's speed / this = {wall / run_wall:5.2f}x   this CPU / run's = "
              f"{cpu / run_cpu:5.2f}x")
    ffmpeg_wall, ffmpeg_cpu = costs["ffmpeg -f null (decode alone)"]
    print(f"   issue 30: run's speed {ffmpeg_wall / run_wall:.2f}x ffmpeg's (goal >= 0.8), "
          f"CPU {run_cpu / ffmpeg_cpu:.2f}x ffmpeg's (goal <= 1.5), --export-video "
          f"{costs['videvent run --export-video'][0] / run_wall:.2f}x run's time (goal <= 3.5)")
    print(f"   scoring alone (decoded beforehand) {scoring_alone(one_minute):8.1f} fps")

    rolling, fresh = update_against_svd(clip)
    print("\n2. per frame, window of 100 frames of 160x90, one BLAS thread")
    print(f"   rolling Gram update + eigh + refit  {rolling:7.2f} ms")
    print(f"   fresh thin SVD of the window        {fresh:7.2f} ms   ratio {fresh / rolling:5.1f}x")

    print("\n3. peak memory of videvent run")
    long_clip = args.work / f"garden_720p_{args.long_minutes}min.mp4"
    loop_clip(clip, long_clip, max(1, args.long_minutes * 60 // args.seconds))
    for path in (one_minute, long_clip):
        seconds, rss = timed_peak([sys.executable, "-m", "videvent", "run", str(path), "-q",
                                   "-d", str(path.with_suffix(".videvent"))])
        with open_source(path) as source:
            count = source.frame_count
        print(f"   {path.name:28s} {count:6d} frames  {rss / 1024:7.1f} MiB peak  "
              f"{count / seconds:6.1f} fps")

    if (WAVING_TREES / "frames").is_dir():
        print("\n4. frame-level F1 on WavingTrees (labels 242..259; person clearly in view "
              "243..258)")
        for name, (labels, clear) in waving_trees_f1(args.work, args.dvr_scan).items():
            print(f"   {name:24s} F1 = {labels:.3f} (clearly in view: {clear:.3f})")


if __name__ == "__main__":
    main()
