"""Cut the README's demo clip, ``sample_videos/person_visit.mp4``, from real footage.

The source is Intel's ``one-by-one-person-detection.mp4`` (intel-iot-devkit/sample-videos,
CC BY 4.0), as kept in the development set (``../shared/datasets/devset``, whose
``clips.json`` has its labels and origin). The cut is its first 22 seconds: the empty room,
one whole visit (a person walks in, stands at the table, walks out), the empty room again.
It is scaled to 384x216 and re-encoded with single-threaded libx264 (reproducible bytes),
with its ground truth (the dev set's labels, shifted to the cut) in ``person_visit.json``
and its attribution in ``person_visit.NOTICE.md``.

Usage: python scripts/make_demo_clip.py [--devset DIR] [--out DIR]   (needs ffmpeg)
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CLIP = "intel_one_by_one_person"
NAME = "person_visit"
FIRST, COUNT = 0, 220          # frames 0-219 of the source: empty room, visit 60-202, empty
WIDTH, HEIGHT = 384, 216

NOTICE = """\
# person_visit.mp4: notice and attribution

`person_visit.mp4` is a cut of **one-by-one-person-detection.mp4** from
[intel-iot-devkit/sample-videos](https://github.com/intel-iot-devkit/sample-videos)
(commit {commit}), by Intel Corporation, licensed under the
[Creative Commons Attribution 4.0 International licence (CC BY 4.0)](https://creativecommons.org/licenses/by/4.0/).

Changes made: frames {first}-{last} of the original only ({seconds:g} s at {fps} fps),
scaled from {source_width}x{source_height} to {width}x{height}, re-encoded as H.264 (libx264,
CRF 26, yuv420p), no audio. Made by `scripts/make_demo_clip.py`.

This clip is under CC BY 4.0, not under videvent's licence; you may share and adapt it if
you give the attribution above, link to the licence and say what you changed.

`person_visit.json` is the ground truth: the frames in which the person is in view (the
development set's labels, shifted to the cut), with `uncertain` frames at the entry and exit
that are hard to call either way.
"""


def shifted(ranges: list[list[int]]) -> list[list[int]]:
    """The source's inclusive frame ranges that fall in the cut, in the cut's numbering."""
    last = FIRST + COUNT - 1
    return [[max(a, FIRST) - FIRST, min(b, last) - FIRST] for a, b in ranges
            if b >= FIRST and a <= last]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--devset", type=Path,
                        default=ROOT.parent / "shared" / "datasets" / "devset")
    parser.add_argument("--out", type=Path, default=ROOT / "sample_videos")
    args = parser.parse_args(argv)
    info = json.loads((args.devset / "clips.json").read_text())[CLIP]
    source = args.devset / info["folder"] / info["source"]
    target = args.out / f"{NAME}.mp4"
    subprocess.run(["ffmpeg", "-v", "error", "-y", "-i", str(source), "-map", "0:v:0",
                    "-vf", f"select='between(n,{FIRST},{FIRST + COUNT - 1})',"
                           f"scale={WIDTH}:{HEIGHT}",
                    "-frames:v", str(COUNT), "-fps_mode", "passthrough", "-c:v", "libx264",
                    "-preset", "slow", "-crf", "26", "-pix_fmt", "yuv420p", "-threads", "1",
                    "-movflags", "+faststart", "-an", "-map_metadata", "-1", "-bitexact",
                    str(target)], check=True)
    fps = info["fps"]
    truth = {
        "format_version": 1,
        "name": NAME,
        "description": "Real footage (Intel sample video, CC BY 4.0): an empty room, one "
                       "person walks in, stands at the table, walks out; the room empty again.",
        "seed": None,
        "fps": fps,
        "width": WIDTH,
        "height": HEIGHT,
        "frame_count": COUNT,
        "event_frames": shifted(info["event_frames"]),
        "uncertain": shifted(info["uncertain"]),
        "blank_frames": [],
        "frozen_frames": [],
        "change_frame": None,
        "lasting_change": False,
        "lights_off_frame": None,
    }
    lines = [f"  {json.dumps(key)}: {json.dumps(value)}" for key, value in truth.items()]
    (args.out / f"{NAME}.json").write_text("{\n" + ",\n".join(lines) + "\n}\n")
    source_width, source_height = info["resolution"]
    (args.out / f"{NAME}.NOTICE.md").write_text(NOTICE.format(
        commit=info["origin"]["commit"], first=FIRST, last=FIRST + COUNT - 1,
        seconds=COUNT / fps, fps=fps, source_width=source_width, source_height=source_height,
        width=WIDTH, height=HEIGHT))
    print(f"wrote {target} ({target.stat().st_size} bytes), {NAME}.json, {NAME}.NOTICE.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
