"""Benchmark of ``videvent watch`` on a live stream served on 127.0.0.1 (run by hand).

    python benchmarks/bench_watch.py [--clip PATH] [--seconds 30]

1. Capture-to-score latency (median, 99th percentile) and dropped frames at 720p 30 fps,
   the clip played at its real pace by ffmpeg over HTTP; then the same with the machine loaded
   (one busy process per core).
2. Memory over a long stream played 4x faster than real time: the peak RSS of the watch
   process sampled every second, first minute against the last.
The clips are the ones ``bench_run.py`` makes in /tmp/videvent-bench (run that first).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

WORK = Path("/tmp/videvent-bench")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def serve(clip: Path, port: int, rate: float | None) -> subprocess.Popen:
    pace = ["-re"] if rate is None else ["-readrate", str(rate)]
    return subprocess.Popen(["ffmpeg", "-loglevel", "error", *pace, "-i", str(clip), "-c", "copy",
                             "-f", "mpegts", "-listen", "1", f"http://127.0.0.1:{port}"])


def rss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def watch(clip: Path, seconds: float, rate: float | None = None,
          sample_memory: bool = False) -> tuple[dict, list[float]]:
    port = free_port()
    server = serve(clip, port, rate)
    time.sleep(0.5)
    out = Path(tempfile.mkdtemp(prefix="videvent-watch-bench-"))
    process = subprocess.Popen([sys.executable, "-m", "videvent", "watch",
                                f"http://127.0.0.1:{port}", "-d", str(out), "-q", "--no-clips",
                                "--max-reconnects", "0", "-dt", f"{seconds}s"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    memory = []
    while process.poll() is None:
        if sample_memory:
            memory.append(rss_mib(process.pid))
        time.sleep(1.0)
    server.kill()
    session = json.loads((out / "events.json").read_text())
    shutil.rmtree(out, ignore_errors=True)
    return session, memory


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clip", type=Path, default=WORK / "garden_720p_1min.mp4")
    parser.add_argument("--long-clip", type=Path, default=WORK / "garden_720p_10min.mp4")
    parser.add_argument("--seconds", type=float, default=30)
    args = parser.parse_args()
    if not args.clip.is_file() or not shutil.which("ffmpeg"):
        raise SystemExit("needs ffmpeg and the clips of benchmarks/bench_run.py")

    print(f"1. latency at 720p, {args.clip.name} at its real pace, {args.seconds:g} s")
    for label in ("idle machine", "loaded machine"):
        hogs = []
        if label == "loaded machine":
            hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
                    for _ in range(os.cpu_count() or 1)]
        try:
            session, _ = watch(args.clip, args.seconds)
        finally:
            for hog in hogs:
                hog.kill()
        stats = session["session"]
        print(f"   {label:15s} frames {session['frames_read']:5d}  latency median "
              f"{stats['latency_ms_median']:6.1f} ms  p99 {stats['latency_ms_p99']:7.1f} ms  "
              f"dropped {stats['dropped_frames']}")

    if args.long_clip.is_file():
        print(f"\n2. memory, {args.long_clip.name} at 4x real time")
        session, memory = watch(args.long_clip, 600, rate=4.0, sample_memory=True)
        # Second tenth against ninth tenth: the first holds start-up, the last the final plot
        # and report (matplotlib), neither of which grows with the stream.
        tenth = max(1, len(memory) // 10)
        early, late = memory[tenth:2 * tenth], memory[-2 * tenth:-tenth]
        print(f"   frames {session['frames_read']}, RSS in the second tenth of the session "
              f"{max(early):.0f} MiB, in the ninth tenth {max(late):.0f} MiB, at the end "
              f"{max(memory[-tenth:]):.0f} MiB; dropped {session['session']['dropped_frames']}")


if __name__ == "__main__":
    main()
