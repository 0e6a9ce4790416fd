"""Build the bundled sample videos in ``sample_videos/`` from ``videvent.synthetic``.

For every scene in ``SAMPLE_SCENES`` this writes ``NAME.mp4`` (H.264, yuv420p,
single-threaded libx264 so the bytes are reproducible) and ``NAME.json`` (the
clip's ground truth), each atomically through a temporary file.  Each video is
then decoded with both OpenCV and PyAV and checked against its clip, and the
folder is checked to stay under the size budget.

Usage: python scripts/make_sample_videos.py [--out DIR] [NAME ...]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import av
import cv2
import numpy as np

from videvent.synthetic import SAMPLE_SCENES, SyntheticClip

DEFAULT_OUT = Path(__file__).resolve().parent.parent / "sample_videos"
SIZE_BUDGET_BYTES = 5_000_000
# Highest mean abs difference allowed between a decoded first frame and the synthesized one.
MAX_FIRST_FRAME_ERROR = 3.0

X264_OPTIONS = {
    "crf": "20",
    "preset": "medium",
    # One keyframe every 4 s keeps seeking cheap; no scene-cut keyframes, so
    # the GOP layout does not depend on content.
    "x264-params": "keyint=60:min-keyint=60:scenecut=0",
}


def bgr_to_yuv420p(image: np.ndarray) -> np.ndarray:
    """BT.601 limited-range I420 planes, stacked as PyAV's yuv420p ndarray wants.

    Done here rather than by libswscale, whose fast path truncates instead of
    rounding (one level low in Y, Cb and Cr); chroma is the mean of each 2x2 block.
    """
    blue, green, red = (image[..., channel].astype(np.float32) for channel in range(3))
    luma = 16 + (65.481 * red + 128.553 * green + 24.966 * blue) / 255
    chroma_blue = 128 + (-37.797 * red - 74.203 * green + 112.0 * blue) / 255
    chroma_red = 128 + (112.0 * red - 93.786 * green - 18.214 * blue) / 255
    height, width = luma.shape
    planes = [luma] + [cv2.resize(plane, (width // 2, height // 2), interpolation=cv2.INTER_AREA)
                       for plane in (chroma_blue, chroma_red)]
    stacked = np.concatenate([np.clip(np.rint(plane), 0, 255).astype(np.uint8).ravel() for plane in planes])
    return stacked.reshape(height * 3 // 2, width)


def encode(clip: SyntheticClip, path: Path) -> None:
    """Write the clip as H.264 mp4 at ``path``, atomically."""
    temporary = path.with_name(f".{path.stem}.tmp{path.suffix}")
    try:
        with av.open(str(temporary), mode="w", format="mp4") as container:
            stream = container.add_stream("libx264", rate=clip.fps, options=X264_OPTIONS)
            stream.width, stream.height = clip.size
            stream.pix_fmt = "yuv420p"
            stream.codec_context.thread_count = 1  # multi-threaded x264 output can vary run to run
            for image in clip.frames():
                frame = av.VideoFrame.from_ndarray(bgr_to_yuv420p(image), format="yuv420p")
                container.mux(stream.encode(frame))
            container.mux(stream.encode())  # flush delayed frames
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)  # only left behind when encoding failed


def write_json(data: dict, path: Path) -> None:
    """One key per line, each value compact, so frame ranges stay readable; atomic."""
    lines = [f"  {json.dumps(key)}: {json.dumps(value)}" for key, value in data.items()]
    temporary = path.with_name(f".{path.stem}.tmp{path.suffix}")
    temporary.write_text("{\n" + ",\n".join(lines) + "\n}\n")
    os.replace(temporary, path)


def verify(clip: SyntheticClip, path: Path) -> tuple[list[str], dict[str, float]]:
    """Decode with OpenCV and PyAV; return the problems found and each decoder's first-frame error."""
    problems, errors = [], {}
    reference = clip.frame(0).astype(np.float32)

    capture = cv2.VideoCapture(str(path))
    ok, first = capture.read()
    cv2_count = int(ok)
    while capture.grab():
        cv2_count += 1
    capture.release()

    with av.open(str(path)) as container:
        decoded = container.decode(video=0)
        av_first = next(decoded).to_ndarray(format="bgr24")
        av_count = 1 + sum(1 for _ in decoded)

    for decoder, count in (("cv2", cv2_count), ("PyAV", av_count)):
        if count != clip.frame_count:
            problems.append(f"{decoder} decodes {count} frames, expected {clip.frame_count}")
    for decoder, image in (("cv2", first if ok else None), ("PyAV", av_first)):
        if image is None:
            problems.append(f"{decoder} could not read the first frame")
            continue
        errors[decoder] = float(np.abs(image.astype(np.float32) - reference).mean())
        if errors[decoder] >= MAX_FIRST_FRAME_ERROR:
            problems.append(f"{decoder} first frame differs by {errors[decoder]:.2f} on average")
    return problems, errors


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output folder")
    parser.add_argument("names", nargs="*", metavar="NAME",
                        help=f"scenes to build (default all: {', '.join(SAMPLE_SCENES)})")
    args = parser.parse_args(argv)
    unknown = sorted(set(args.names) - set(SAMPLE_SCENES))
    if unknown:
        parser.error(f"unknown scene(s): {', '.join(unknown)}")
    args.out.mkdir(parents=True, exist_ok=True)

    failed = False
    for name in args.names or SAMPLE_SCENES:
        clip = SAMPLE_SCENES[name]()
        video = args.out / f"{name}.mp4"
        encode(clip, video)
        write_json(clip.ground_truth(), args.out / f"{name}.json")
        problems, errors = verify(clip, video)
        failed |= bool(problems)
        status = "ok" if not problems else "; ".join(problems)
        first_frame = ", ".join(f"{decoder} {error:.2f}" for decoder, error in errors.items())
        print(f"{name}: {clip.frame_count} frames, events {clip.event_frames}, "
              f"{video.stat().st_size / 1024:.0f} KiB, first-frame mean abs error {first_frame}: {status}")

    total = sum(path.stat().st_size for path in args.out.iterdir() if path.is_file())
    print(f"{args.out}: {total / 1e6:.2f} MB in all (budget {SIZE_BUDGET_BYTES / 1e6:.0f} MB)")
    if total >= SIZE_BUDGET_BYTES:
        print("over the size budget", file=sys.stderr)
        failed = True
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
