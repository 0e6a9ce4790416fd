"""Detection quality on real footage: videvent's defaults, ``--method pca`` and DVR-Scan, side by side.

Run by hand (not a test): it scores the development set in ``../shared/datasets/devset`` with the
shared scorer (``../shared/tools/score_clips.py``: AUC, precision, recall, F1, events hit, false
events per clip), once per configuration, and prints one table with a column group each.

    python benchmarks/bench_quality.py                          # videvent: defaults and --method pca
    python benchmarks/bench_quality.py --dvr-scan-python /tmp/dvrvenv/bin/python
    python benchmarks/bench_quality.py --also=--no-seed --also=--method=ancp

``--dvr-scan-python`` names a Python that has ``dvr_scan`` installed (its own venv: DVR-Scan is
never a dependency of videvent). ``videvent`` must be on PATH (this venv's). Skips cleanly, with
a message, when the shared data set is absent.

``--started-mid-event`` scores, instead, each clip re-encoded to start in the middle of its
longest event (its frames from there to the end, then from the start: a stand-in for footage
the set does not have, where something is in view when the recording starts). The labels move
with the frames; the second around the cut, where the scene jumps, is not scored.

``--heavily-compressed`` scores, instead, each clip re-encoded at x264's CRF 36 (its default is
23): blocky, with still areas coded as exact repeats, as a camera streams at a low bit rate.

``--low-frame-rate`` scores, instead, every third frame of each clip at a third of its rate
(10 fps to 3.3, 25 to 8.3), as a recorder that keeps a few frames a second; the labels keep
the frames that are kept.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SCORER = HERE.parent.parent / "shared" / "tools" / "score_clips.py"
DEVSET = HERE.parent.parent / "shared" / "datasets" / "devset" / "clips.json"
sys.path.insert(0, str(HERE.parent))
from videvent.output.video import VideoWriter  # noqa: E402
from videvent.sources import open_source  # noqa: E402
from videvent.sources.base import DEFAULT_FPS  # noqa: E402

# x264's constant rate factor for --heavily-compressed: a low-bit-rate camera stream's look.
HEAVY_CRF = 36
# ... and for the mid-event and low-frame-rate clips: close to the source, so the cut (or the
# rate) is what differs.
FAITHFUL_CRF = 10
# --low-frame-rate keeps one frame in this many.
LOW_RATE_STEP = 3

ROW = re.compile(r"^(\S+)\s+(\d+)\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)\s+(\d+/\d+)\s+(\d+)\s*$")


def score(python: str, who: str, options: list[str], clips_json: Path | None = None
          ) -> dict[str, dict]:
    """Per-clip metrics from one run of the shared scorer (on ``clips_json``'s clips if given)."""
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    if clips_json is not None:
        env.update(CLIPS_JSON=str(clips_json), CLIPS_DIR=str(clips_json.parent))
    process = subprocess.run([python, str(SCORER), who, *options], capture_output=True,
                             text=True, env=env, timeout=3600)
    rows = {}
    for line in process.stdout.splitlines():
        match = ROW.match(line)
        if match:
            clip, _, auc, _, _, f1, hit, false = match.groups()
            rows[clip] = {"auc": auc, "f1": float(f1), "hit": hit, "false": int(false)}
        elif "could not be scored" in line:
            rows[line.split()[0]] = {"auc": "-", "f1": float("nan"), "hit": "-", "false": -1}
    if not rows:
        raise SystemExit(f"{who} {' '.join(options)}: the scorer printed no rows:\n"
                         f"{process.stdout}{process.stderr}")
    return rows


def started_mid_event(work: Path) -> Path:
    """The development set, each clip re-encoded in ``work`` to start in the middle of its
    longest event; returns the clips file (the scorer's format) describing them."""
    clips = json.loads(DEVSET.read_text())
    described = {}
    for name, clip in clips.items():
        frames = clip["frames"]
        first, last = max(clip["event_frames"], key=lambda event: event[1] - event[0])
        cut = (first + last) // 2
        path = reencoded(work, name, clip, cut, FAITHFUL_CRF)
        second = round(clip["fps"] or DEFAULT_FPS)
        joint = frames - cut                       # where the clip's first frame lands
        described[name] = {
            **{key: clip[key] for key in ("fps", "what") if key in clip},
            "folder": name, "source": path.name, "frames": frames,
            "event_frames": moved(clip["event_frames"], cut, frames),
            "uncertain": moved(clip.get("uncertain", []), cut, frames)
            + [[max(0, joint - second), min(frames - 1, joint + second)]],
        }
    return write_clips(work, described)


def moved(ranges: list[list[int]], cut: int, frames: int) -> list[list[int]]:
    """Inclusive frame ranges renumbered for a clip that starts at frame ``cut`` and goes on
    from frame 0 after its last frame; a range that spans the cut comes out as two."""
    out = []
    for first, last in ranges:
        pieces = [[first, last]] if last < cut or first >= cut else [[first, cut - 1], [cut, last]]
        out += [[(a - cut) % frames, (b - cut) % frames] for a, b in pieces]
    return sorted(out)


def heavily_compressed(work: Path) -> Path:
    """The development set, each clip re-encoded in ``work`` at ``HEAVY_CRF``, labels as they
    are; returns the clips file (the scorer's format) describing them."""
    clips = json.loads(DEVSET.read_text())
    return write_clips(work, {
        name: {**clip, "folder": name, "source": reencoded(work, name, clip, 0, HEAVY_CRF).name}
        for name, clip in clips.items()})


def low_frame_rate(work: Path) -> Path:
    """The development set, every ``LOW_RATE_STEP``-th frame of each clip re-encoded in ``work``
    at that fraction of its rate; returns the clips file (the scorer's format) describing
    them."""
    clips = json.loads(DEVSET.read_text())
    described = {}
    for name, clip in clips.items():
        frames = -(-clip["frames"] // LOW_RATE_STEP)
        path = reencoded(work, name, clip, 0, FAITHFUL_CRF, step=LOW_RATE_STEP)
        described[name] = {
            **{key: clip[key] for key in ("what",) if key in clip},
            "folder": name, "source": path.name, "frames": frames,
            "fps": clip["fps"] / LOW_RATE_STEP if clip.get("fps") else None,
            "event_frames": thinned(clip["event_frames"], LOW_RATE_STEP, frames),
            "uncertain": thinned(clip.get("uncertain", []), LOW_RATE_STEP, frames, widen=True),
        }
    return write_clips(work, described)


def thinned(ranges: list[list[int]], step: int, frames: int, widen: bool = False
            ) -> list[list[int]]:
    """Inclusive frame ranges renumbered for a clip that keeps every ``step``-th frame: the
    frames kept within each range (``widen``: and any frame kept next to it, for don't-care
    ranges); a range that keeps no frame is dropped."""
    out = []
    for first, last in ranges:
        start, end = -(-first // step), last // step          # kept frames inside
        if widen:
            start, end = first // step, -(-last // step)      # ... or beside it
        if start <= end:
            out.append([start, min(end, frames - 1)])
    return out


def write_clips(work: Path, described: dict) -> Path:
    """The clips file (the scorer's format) for the clips re-encoded in ``work``."""
    clips_json = work / "clips.json"
    clips_json.write_text(json.dumps(described, indent=1))
    return clips_json


def reencoded(work: Path, name: str, clip: dict, cut: int, crf: int, step: int = 1) -> Path:
    """The dev clip ``name`` re-encoded in ``work`` (once: a file already there is reused)."""
    path = work / name / f"{name}.mp4"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        reencode(DEVSET.parent / clip["folder"] / clip["source"], path, clip["frames"], cut, crf,
                 step)
    return path


def reencode(source: Path, path: Path, frames: int, cut: int, crf: int, step: int = 1) -> None:
    """``source``'s first ``frames`` frames, from ``cut`` on and then from 0, re-encoded at
    ``crf`` in ``path`` (decoded twice, so no more than a frame is held); ``step``: only every
    ``step``-th frame (counted from the first), at ``1 / step`` of the rate."""
    with open_source(source, colour=True) as video:
        writer = VideoWriter(path, video.width, video.height, video.fps / step, crf=crf)
        picture = None
        for start, end in ((cut, frames), (0, cut)):
            for frame in video.frames(start, end):
                # a frame that would not decode keeps its place, as the labels count it
                picture = picture if frame.image is None else frame.image
                if frame.index % step == 0:
                    writer.write(picture)
        writer.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dvr-scan-python", help="a Python with dvr_scan installed")
    stand_ins = parser.add_mutually_exclusive_group()
    stand_ins.add_argument("--started-mid-event", metavar="WORK", type=Path,
                           help="score the clips re-encoded into WORK to start mid-event")
    stand_ins.add_argument("--heavily-compressed", metavar="WORK", type=Path,
                           help=f"score the clips re-encoded into WORK at CRF {HEAVY_CRF}")
    stand_ins.add_argument("--low-frame-rate", metavar="WORK", type=Path,
                           help=f"score one frame in {LOW_RATE_STEP} of the clips, re-encoded "
                                "into WORK at that fraction of their rate")
    parser.add_argument("--also", action="append", default=[],
                        help="another videvent configuration: its run options, each as one "
                             "word (--also=--method=ancp)")
    args = parser.parse_args()
    if not SCORER.exists():
        print(f"skipped: {SCORER} is absent (the shared development set is not here)")
        return
    clips_json = None
    if args.started_mid_event is not None:
        clips_json = started_mid_event(args.started_mid_event)
    elif args.heavily_compressed is not None:
        clips_json = heavily_compressed(args.heavily_compressed)
    elif args.low_frame_rate is not None:
        clips_json = low_frame_rate(args.low_frame_rate)
    # Options with values as one word (--method=pca): the scorer takes bare words for clips.
    configurations = [("defaults", "videvent", []), ("--method=pca", "videvent",
                                                     ["--method=pca"])]
    configurations += [(extra, "videvent", extra.split()) for extra in args.also]
    if args.dvr_scan_python:
        configurations.append(("DVR-Scan", "dvrscan", []))
    results = {}
    for name, who, options in configurations:
        started = time.perf_counter()
        python = args.dvr_scan_python if who == "dvrscan" else sys.executable
        results[name] = score(python, who, options, clips_json)
        print(f"scored {name} in {time.perf_counter() - started:.0f} s", file=sys.stderr)
    clips = list(next(iter(results.values())))
    header = f"{'clip':34}" + "".join(f" | {name[:22]:>22} F1   AUC   hit false"
                                      for name in results)
    print(header)
    for clip in clips:
        cells = []
        for name in results:
            r = results[name].get(clip, {"auc": "-", "f1": float("nan"), "hit": "-", "false": -1})
            cells.append(f" | {'':>22} {r['f1']:4.2f} {r['auc']:>5} {r['hit']:>5} {r['false']:5d}")
        print(f"{clip[:34]:34}" + "".join(cells))
    means = []
    for name in results:
        f1s = [r["f1"] for r in results[name].values() if r["f1"] == r["f1"]]
        means.append(f" | {'mean F1':>22} {sum(f1s) / max(len(f1s), 1):4.2f} {'':17}")
    print(f"{'':34}" + "".join(means))


if __name__ == "__main__":
    main()
