"""Benchmark of ``videvent watch`` on live streams served on 127.0.0.1 (run by hand).

    python benchmarks/bench_watch.py [--clip PATH] [--seconds 20] [--rounds 2]
                                     [--max-cameras 6] [--memory]

1. The dashboard's cost: the same 720p 30 fps stream watched with ``--serve`` and one headless
   Chromium showing the page, and without a dashboard, interleaved in each round (the machine
   is shared: its load moves between rounds, not within one): capture-to-score latency
   (median, 99th percentile) and dropped frames, and the ratios, dashboard / none.
2. How many 720p 30 fps cameras one ``watch`` scores in real time with no dropped frame:
   1, 2, 3... streams of the clip (one ffmpeg each), until one drops frames.
3. ``--memory``: memory over a long stream played 4x faster than real time, the peak RSS of
   the watch process sampled every second, first minute against the last.
The clips are the ones ``bench_run.py`` makes in /tmp/videvent-bench (run that first).
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

WORK = Path("/tmp/videvent-bench")
CHROMIUM = "/usr/bin/chromium"
REAL_TIME_P99_MS = 1000.0   # an event reported within a second of its start
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--no-first-run"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def serve(clip: Path, port: int, rate: float | None, loop: bool = False) -> subprocess.Popen:
    """ffmpeg serving ``clip`` to one client on ``port`` (at its pace, or ``rate`` times it;
    ``loop``: again and again)."""
    pace = ["-re"] if rate is None else ["-readrate", str(rate)]
    return subprocess.Popen(["ffmpeg", "-loglevel", "error", *pace,
                             *(["-stream_loop", "-1"] if loop else []), "-i", str(clip), "-c",
                             "copy", "-f", "mpegts", "-listen", "1", f"http://127.0.0.1:{port}"],
                            stderr=subprocess.DEVNULL)   # a client that leaves is no error


def rss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def watch(clip: Path, seconds: float, rate: float | None = None, cameras: int = 1,
          sample_memory: bool = False, browser=None) -> tuple[list[dict], list[float], float]:
    """Watch ``cameras`` streams of ``clip`` for ``seconds``; each camera's events.json, the
    RSS samples and the seconds the watch took. ``browser``: serve the dashboard and show it
    in this browser."""
    ports = [free_port() for _ in range(cameras)]
    servers = [serve(clip, port, rate) for port in ports]
    time.sleep(0.5)
    out = Path(tempfile.mkdtemp(prefix="videvent-watch-bench-"))
    started = time.monotonic()
    process = subprocess.Popen([sys.executable, "-m", "videvent", "watch",
                                *(f"http://127.0.0.1:{port}" for port in ports),
                                "-d", str(out), "-q", "--no-clips", "--max-reconnects", "0",
                                "-dt", f"{seconds}s",
                                *(["--serve", "127.0.0.1:0"] if browser else [])],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    page = None
    if browser is not None:
        line = process.stderr.readline()
        url = re.match(r"dashboard: (\S+)", line).group(1)
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        page.goto(url)
    memory = []
    while process.poll() is None:
        if sample_memory:
            memory.append(rss_mib(process.pid))
        time.sleep(0.2 if not sample_memory else 1.0)
    took = time.monotonic() - started
    if page is not None:
        page.close()
    for server in servers:
        server.kill()
    folders = [out] if cameras == 1 else sorted(path for path in out.iterdir() if path.is_dir())
    sessions = [json.loads((folder / "events.json").read_text()) for folder in folders]
    shutil.rmtree(out, ignore_errors=True)
    return sessions, memory, took


def dashboard_cost(clip: Path, seconds: float, rounds: int) -> None:
    from playwright.sync_api import sync_playwright

    print(f"1. the dashboard's cost, {clip.name} (720p 30 fps) at its real pace, {seconds:g} s, "
          f"{rounds} interleaved rounds")
    results: dict[str, list[dict]] = {"no dashboard": [], "dashboard + 1 browser": []}
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        for round_ in range(rounds):
            for label in results:
                [session], _, _ = watch(clip, seconds, browser=browser if "browser" in label
                                     else None)
                stats = session["session"]
                results[label].append(stats)
                print(f"   round {round_ + 1} {label:22s} frames {session['frames_read']:5d}  "
                      f"latency median {stats['latency_ms_median']:6.1f} ms  p99 "
                      f"{stats['latency_ms_p99']:7.1f} ms  dropped {stats['dropped_frames']}")
        browser.close()
    median = {label: {key: statistics.median(stats[key] for stats in runs)
                      for key in ("latency_ms_median", "latency_ms_p99", "dropped_frames")}
              for label, runs in results.items()}
    plain, served = median["no dashboard"], median["dashboard + 1 browser"]
    print(f"   dashboard / none (medians of the rounds): latency median "
          f"{served['latency_ms_median'] / plain['latency_ms_median']:.2f}x, p99 "
          f"{served['latency_ms_p99'] / plain['latency_ms_p99']:.2f}x; dropped "
          f"{served['dropped_frames']:g} vs {plain['dropped_frames']:g}")


def camera_capacity(clip: Path, seconds: float, most: int) -> None:
    print(f"\n2. 720p 30 fps cameras scored in real time, {clip.name}, {seconds:g} s each")
    real_time = 0
    for cameras in range(1, most + 1):
        sessions, _, took = watch(clip, seconds, cameras=cameras)
        dropped = [session["session"]["dropped_frames"] for session in sessions]
        p99 = max(session["session"]["latency_ms_p99"] for session in sessions)
        frames = [session["frames_read"] for session in sessions]
        print(f"   {cameras} camera(s): frames {frames}  dropped {dropped}  worst latency p99 "
              f"{p99:.0f} ms  took {took:.1f} s")
        # Real time: nothing dropped, and no camera more than a second behind its stream (a
        # capture that cannot keep up slows ffmpeg's sending instead of dropping frames).
        if len(sessions) < cameras or any(dropped) or p99 > REAL_TIME_P99_MS:
            break
        real_time = cameras
    print(f"   in real time (no drop, latency p99 under {REAL_TIME_P99_MS / 1000:g} s): "
          f"{real_time} camera(s) at 720p 30 fps")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clip", type=Path, default=WORK / "garden_720p_1min.mp4")
    parser.add_argument("--long-clip", type=Path, default=WORK / "garden_720p_10min.mp4")
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--max-cameras", type=int, default=6)
    parser.add_argument("--cameras-only", action="store_true", help="skip the dashboard's cost")
    parser.add_argument("--memory", action="store_true",
                        help="also the memory over a long stream (10 minutes at 4x)")
    args = parser.parse_args()
    if not args.clip.is_file() or not shutil.which("ffmpeg"):
        raise SystemExit("needs ffmpeg and the clips of benchmarks/bench_run.py")

    if not args.cameras_only:
        dashboard_cost(args.clip, args.seconds, args.rounds)
    camera_capacity(args.clip, args.seconds, args.max_cameras)

    if args.memory and args.long_clip.is_file():
        print(f"\n3. memory, {args.long_clip.name} at 4x real time")
        [session], memory, _ = watch(args.long_clip, 600, rate=4.0, sample_memory=True)
        # Second tenth against ninth tenth: the first holds start-up, the last the final plot
        # and report (matplotlib), neither of which grows with the stream.
        tenth = max(1, len(memory) // 10)
        early, late = memory[tenth:2 * tenth], memory[-2 * tenth:-tenth]
        print(f"   frames {session['frames_read']}, RSS in the second tenth of the session "
              f"{max(early):.0f} MiB, in the ninth tenth {max(late):.0f} MiB, at the end "
              f"{max(memory[-tenth:]):.0f} MiB; dropped {session['session']['dropped_frames']}")


if __name__ == "__main__":
    main()
