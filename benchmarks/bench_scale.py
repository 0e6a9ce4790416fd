"""CPU per frame of ``videvent run`` against FFmpeg's decoding, from 320x240 to 4K (run by hand).

    python benchmarks/bench_scale.py [--clip CLIP] [--seconds 20] [--work DIR]

One clip (by default ``bench_run.py``'s 720p garden scene) is coded again with FFmpeg's
``scale`` at 320x240, 1280x720, 1920x1080 and 3840x2160 (H.264, CRF 18, the same frames), once
into --work and reused. For each size, two commands run twice, interleaved, the best counting:
``ffmpeg -i CLIP -f null -`` (decoding alone) and ``videvent run CLIP --no-plot -q``. Printed:
CPU milliseconds a frame of each, their ratio, and what the run adds to FFmpeg's decoding a
frame. The detector works on a picture of the same working size at every resolution, so what
it adds should not grow with the resolution; what grows is decoding and scaling down.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

from bench_run import make_clip, timed_cpu

SIZES = {"320x240": "320:240", "720p": "1280:720", "1080p": "1920:1080", "4K": "3840:2160"}


def scaled(clip: Path, work: Path, name: str, scale: str, seconds: int) -> Path:
    """``clip``'s first ``seconds`` coded again at ``scale`` (made once)."""
    path = work / f"scale-{name}-{seconds}s.mp4"
    if not path.exists():
        subprocess.run(["ffmpeg", "-loglevel", "error", "-y", "-i", str(clip), "-t", str(seconds),
                        "-vf", f"scale={scale}", "-c:v", "libx264", "-crf", "18", "-an",
                        str(path)], check=True)
    return path


def frame_count(path: Path) -> int:
    probe = subprocess.run(["ffprobe", "-v", "error", "-count_frames", "-select_streams", "v:0",
                            "-show_entries", "stream=nb_read_frames", "-of", "csv=p=0",
                            str(path)], capture_output=True, text=True, check=True)
    return int(probe.stdout.strip())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clip", type=Path, default=None, help="the clip to scale "
                        "(default: bench_run.py's 1-minute 720p garden clip, made in --work)")
    parser.add_argument("--seconds", type=int, default=20, help="how much of it")
    parser.add_argument("--work", type=Path, default=Path("bench-work"))
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    clip = args.clip
    if clip is None:
        clip = args.work / "garden-60s.mp4"
        make_clip(clip, 60)
    clips = {name: scaled(clip, args.work, name, scale, args.seconds)
             for name, scale in SIZES.items()}
    frames = {name: frame_count(path) for name, path in clips.items()}
    best: dict[tuple[str, str], float] = {}
    for _ in range(2):
        for name, path in clips.items():
            for tool, command in (
                    ("ffmpeg", ["ffmpeg", "-loglevel", "error", "-i", str(path), "-f", "null",
                                "-"]),
                    ("videvent", [sys.executable, "-m", "videvent", "run", str(path), "-q",
                                  "--no-plot", "-d", str(path.with_suffix(".videvent"))])):
                _, cpu, _ = timed_cpu(command)
                best[name, tool] = min(best.get((name, tool), float("inf")), cpu)
    print("| size | frames | FFmpeg decoding, CPU ms a frame | `videvent run --no-plot`, CPU ms a "
          "frame | against FFmpeg | added to FFmpeg's decoding, ms a frame |")
    print("|---|---|---|---|---|---|")
    for name in clips:
        decode = best[name, "ffmpeg"] / frames[name] * 1000
        run = best[name, "videvent"] / frames[name] * 1000
        print(f"| {name} | {frames[name]} | {decode:.2f} | {run:.2f} | {run / decode:.2f}x | "
              f"{run - decode:.2f} |")


if __name__ == "__main__":
    main()
