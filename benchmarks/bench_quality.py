"""Detection quality on real footage: videvent's defaults, ``--method pca`` and DVR-Scan, side by side.

Run by hand (not a test): it scores the development set in ``../shared/datasets/devset`` with the
shared scorer (``../shared/tools/score_clips.py``: AUC, precision, recall, F1, events hit, false
events per clip), once per configuration, and prints one table with a column group each.

    python benchmarks/bench_quality.py                          # videvent: defaults and --method pca
    python benchmarks/bench_quality.py --dvr-scan-python /tmp/dvrvenv/bin/python
    python benchmarks/bench_quality.py --also=--no-seed --also=--method=ancp

``--defaults-only`` leaves ``--method pca`` out: half the time, for judging a change to the
detector's defaults on the whole set and its perturbations.

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

``--perturb WORK`` scores, instead, the clips as they are and each of these perturbations of
them, in turn for each configuration, with the Wallflower WavingTrees sequence
(``../shared/datasets/waving_trees``) as one more clip, ``waving_trees``, in every set. Each set
is built once in ``WORK/<name>/`` (a clips file in the scorer's format and the re-encoded
files; a file already there is reused); everything but ``crf36`` is re-encoded at CRF 10, close
to the source, so the perturbation is what differs:

- ``native``: the files in place (WavingTrees, an image sequence videvent would take for
  25 fps, encoded at its 15 fps);
- ``half_rate``, ``double_rate``: the same frames with the rate the file declares halved or
  doubled (time-based settings then span twice or half the frames);
- ``every_other``: every second frame at half the rate, as ``--low-frame-rate`` does;
- ``crf36``: as ``--heavily-compressed``;
- ``half_size``: width and height halved (kept even);
- ``mid_clip``: as ``--started-mid-event``;
- ``noise``: Gaussian sensor noise, sigma 4 grey levels, on every pixel (a fixed seed a clip);
- ``gamma_0.7``, ``gamma_1.4``: each level v to 255 (v / 255) ** gamma (brighter, darker);
- ``mjpeg``: an AVI of Motion JPEG at FFmpeg's default rate control (its quantiser changes from
  frame to frame, about 280 kbit/s at 384x216), as cheap cameras and DVRs record.

It prints one row per clip and perturbation with each configuration's F1 and its difference
from the same configuration's native F1 on that clip; then each perturbation's mean F1 and how
many clips fall more than 0.05 below native; and writes it all to ``WORK/results-<time>.json``.
``--only native,double_rate`` builds and scores only those sets.

    python benchmarks/bench_quality.py --perturb /tmp/perturb --only native,every_other
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
import zlib
from pathlib import Path

import cv2
import numpy as np

HERE = Path(__file__).resolve().parent
SCORER = HERE.parent.parent / "shared" / "tools" / "score_clips.py"
DEVSET = HERE.parent.parent / "shared" / "datasets" / "devset" / "clips.json"
WAVING_TREES = HERE.parent.parent / "shared" / "datasets" / "waving_trees"
sys.path.insert(0, str(HERE.parent))
from videvent.output.video import VideoWriter  # noqa: E402
from videvent.sources import open_source  # noqa: E402
from videvent.sources.base import DEFAULT_FPS  # noqa: E402
from videvent.sources.images import is_printf_pattern  # noqa: E402

# x264's constant rate factor for --heavily-compressed: a low-bit-rate camera stream's look.
HEAVY_CRF = 36
# ... and for the mid-event and low-frame-rate clips: close to the source, so the cut (or the
# rate) is what differs.
FAITHFUL_CRF = 10
# --low-frame-rate keeps one frame in this many.
LOW_RATE_STEP = 3
# --perturb noise: the standard deviation, in grey levels, of the noise added to each pixel.
NOISE_SIGMA = 4.0
# --perturb counts a clip's F1 as lost when it is this far below the same configuration's native.
LOST_F1 = 0.05

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


def started_mid_event(work: Path, clips: dict) -> Path:
    """``clips``, each re-encoded in ``work`` to start in the middle of its longest event;
    returns the clips file (the scorer's format) describing them."""
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


def same_labels(work: Path, clips: dict, crf: int, rate: float = 1, scale: float = 1,
                transform_for=None) -> Path:
    """``clips``, each re-encoded in ``work`` at ``crf`` (``rate``, ``scale``: as ``reencode``
    takes them; ``transform_for``: given a clip's name, the function ``reencode`` applies to its
    pictures), labels as they are; returns the clips file (the scorer's format) describing
    them."""
    return write_clips(work, {
        name: {**clip, "folder": name,
               "fps": clip["fps"] * rate if clip.get("fps") else None,
               "source": reencoded(work, name, clip, 0, crf, rate=rate, scale=scale,
                                   transform=transform_for and transform_for(name)).name}
        for name, clip in clips.items()})


def low_frame_rate(work: Path, clips: dict, step: int = LOW_RATE_STEP) -> Path:
    """Every ``step``-th frame of each of ``clips`` re-encoded in ``work`` at that fraction of its
    rate; returns the clips file (the scorer's format) describing them."""
    described = {}
    for name, clip in clips.items():
        frames = -(-clip["frames"] // step)
        path = reencoded(work, name, clip, 0, FAITHFUL_CRF, step=step)
        described[name] = {
            **{key: clip[key] for key in ("what",) if key in clip},
            "folder": name, "source": path.name, "frames": frames,
            "fps": clip["fps"] / step if clip.get("fps") else None,
            "event_frames": thinned(clip["event_frames"], step, frames),
            "uncertain": thinned(clip.get("uncertain", []), step, frames, widen=True),
        }
    return write_clips(work, described)


def motion_jpeg(work: Path, clips: dict) -> Path:
    """``clips``, each encoded in ``work`` as an AVI of Motion JPEG with FFmpeg's defaults
    (``ffmpeg -i clip -c:v mjpeg clip.avi``), from its decoded pictures so that every frame
    keeps its place; labels as they are. Returns the clips file describing them."""
    described = {}
    for name, clip in clips.items():
        path = work / name / f"{name}.avi"
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            source = DEVSET.parent / clip["folder"] / clip["source"]
            with open_source(source, colour=True, fps=clip.get("fps")) as video:
                partial = path.with_suffix(".partial.avi")
                encoder = subprocess.Popen(
                    ["ffmpeg", "-v", "error", "-y", "-f", "rawvideo", "-pix_fmt", "bgr24",
                     "-s", f"{video.width}x{video.height}", "-r", f"{video.fps}", "-i", "-",
                     "-c:v", "mjpeg", str(partial)], stdin=subprocess.PIPE)
                picture = None
                for frame in video.frames(0, clip["frames"]):
                    picture = picture if frame.image is None else frame.image
                    encoder.stdin.write(np.ascontiguousarray(picture).tobytes())
                encoder.stdin.close()
                if encoder.wait() != 0:
                    raise SystemExit(f"ffmpeg could not encode {name} as Motion JPEG")
            partial.replace(path)
        described[name] = {**clip, "folder": name, "source": path.name}
    return write_clips(work, described)


def native(work: Path, clips: dict) -> Path:
    """``clips`` as they are: each file where it is (the scorer joins a folder to the set's own,
    so an absolute one stands), but an image sequence, which videvent would take for
    ``DEFAULT_FPS``, encoded in ``work`` at its own rate; returns the clips file (the scorer's
    format) describing them."""
    return write_clips(work, {
        name: {**clip, "folder": name,
               "source": reencoded(work, name, clip, 0, FAITHFUL_CRF).name}
        if is_printf_pattern(clip["source"]) else
        {**clip, "folder": str(DEVSET.parent / clip["folder"])}
        for name, clip in clips.items()})


def sensor_noise(name: str):
    """For the clip ``name``: a picture with Gaussian noise of ``NOISE_SIGMA`` grey levels added
    to each pixel (one draw a pixel, on all three channels, so the grey level moves by that
    much), drawn from a generator seeded by the name, so a clip is noised the same every time."""
    generator = np.random.default_rng(zlib.crc32(name.encode()))

    def noisy(picture: np.ndarray) -> np.ndarray:
        noise = generator.standard_normal(picture.shape[:2], dtype=np.float32) * NOISE_SIGMA
        return np.clip(np.rint(picture + noise[..., None]), 0, 255).astype(np.uint8)
    return noisy


def gamma_curve(gamma: float):
    """A picture with each level v taken to 255 (v / 255) ** ``gamma``."""
    levels = np.rint(255 * (np.arange(256) / 255) ** gamma).astype(np.uint8)
    return lambda picture: levels[picture]


# --perturb's sets, by name, in the order they are scored and shown: each builds, in its folder,
# the clips it is given and returns their clips file.
PERTURBATIONS = {
    "native": native,
    "half_rate": lambda work, clips: same_labels(work, clips, FAITHFUL_CRF, rate=0.5),
    "double_rate": lambda work, clips: same_labels(work, clips, FAITHFUL_CRF, rate=2),
    "every_other": lambda work, clips: low_frame_rate(work, clips, step=2),
    "crf36": lambda work, clips: same_labels(work, clips, HEAVY_CRF),
    "half_size": lambda work, clips: same_labels(work, clips, FAITHFUL_CRF, scale=0.5),
    "mid_clip": started_mid_event,
    "noise": lambda work, clips: same_labels(work, clips, FAITHFUL_CRF,
                                             transform_for=sensor_noise),
    "gamma_0.7": lambda work, clips: same_labels(work, clips, FAITHFUL_CRF,
                                                 transform_for=lambda name: gamma_curve(0.7)),
    "gamma_1.4": lambda work, clips: same_labels(work, clips, FAITHFUL_CRF,
                                                 transform_for=lambda name: gamma_curve(1.4)),
    "mjpeg": motion_jpeg,
}


def perturbed_sets(work: Path, names: list[str]) -> dict[str, Path]:
    """The sets ``names`` of ``PERTURBATIONS``, each built in ``work / name`` (once: files
    already there are reused) from the development set and WavingTrees; their clips files."""
    clips = json.loads(DEVSET.read_text())
    if (WAVING_TREES / "events.json").exists():
        clips["waving_trees"] = waving_trees()
    else:
        print(f"note: {WAVING_TREES} is absent: the sets are the development set alone",
              file=sys.stderr)
    sets = {}
    for name in names:
        started = time.perf_counter()
        (work / name).mkdir(parents=True, exist_ok=True)
        sets[name] = PERTURBATIONS[name](work / name, clips)
        print(f"built {name} in {time.perf_counter() - started:.0f} s", file=sys.stderr)
    return sets


def waving_trees() -> dict:
    """The Wallflower WavingTrees sequence as one more clip (the scorer's format; its folder
    absolute, so ``reencoded`` finds it as it finds the development set's)."""
    events = json.loads((WAVING_TREES / "events.json").read_text())
    return {"folder": str(WAVING_TREES), "source": events["pattern"], "frames": events["frames"],
            "event_frames": events["event_frames"], "uncertain": [], "fps": events["fps"]}


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


def reencoded(work: Path, name: str, clip: dict, cut: int, crf: int, step: int = 1,
              **changes) -> Path:
    """The dev clip ``name`` re-encoded in ``work`` (once: a file already there is reused);
    ``changes``: ``reencode``'s ``rate``, ``scale`` and ``transform``."""
    path = work / name / f"{name}.mp4"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        # an image sequence has no rate of its own: the clip's (a video's own rate comes first)
        reencode(DEVSET.parent / clip["folder"] / clip["source"], path, clip["frames"], cut, crf,
                 step, fps=clip.get("fps"), **changes)
    return path


def reencode(source: Path, path: Path, frames: int, cut: int, crf: int, step: int = 1, *,
             fps: float | None = None, rate: float = 1, scale: float = 1,
             transform=None) -> None:
    """``source``'s first ``frames`` frames, from ``cut`` on and then from 0, re-encoded at
    ``crf`` in ``path`` (decoded twice, so no more than a frame is held); ``step``: only every
    ``step``-th frame (counted from the first), at ``1 / step`` of the rate. ``fps``: the
    source's rate if it has none (an image sequence); ``rate``: the file's rate as a multiple of
    the source's; ``scale``: width and height times this (kept even); ``transform``: applied to
    each (scaled) BGR picture before it is written."""
    with open_source(source, colour=True, fps=fps) as video:
        size = (video.width, video.height)
        if scale != 1:
            # even sides, as H.264's 2x2 colour blocks want (else one line would be repeated)
            size = tuple(2 * int(side * scale / 2) for side in size)
        writer = VideoWriter(path, *size, video.fps * rate / step, crf=crf)
        picture = None
        for start, end in ((cut, frames), (0, cut)):
            for frame in video.frames(start, end):
                # a frame that would not decode keeps its place, as the labels count it
                picture = picture if frame.image is None else frame.image
                if frame.index % step == 0:
                    written = picture
                    if scale != 1:
                        written = cv2.resize(written, size, interpolation=cv2.INTER_AREA)
                    writer.write(written if transform is None else transform(written))
        writer.close()


def score_all(configurations: list[tuple[str, str, list[str]]], dvr_scan_python: str | None,
              clips_json: Path | None = None) -> dict[str, dict[str, dict]]:
    """Per-clip metrics of each configuration (name, scorer's who, options), by its name."""
    results = {}
    for name, who, options in configurations:
        started = time.perf_counter()
        python = dvr_scan_python if who == "dvrscan" else sys.executable
        results[name] = score(python, who, options, clips_json)
        print(f"scored {name}{f' on {clips_json.parent.name}' if clips_json else ''} in "
              f"{time.perf_counter() - started:.0f} s", file=sys.stderr)
    return results


def compare_perturbations(work: Path, names: list[str], configurations: list,
                          dvr_scan_python: str | None) -> None:
    """Score each configuration on each set of ``names`` (built first), print how far each
    clip's F1 moves from native, and write it all to ``work/results-<time>.json``."""
    sets = perturbed_sets(work, names)
    by_set = {}                                   # set -> configuration -> clip -> metrics
    for configuration in configurations:
        for name, clips_json in sets.items():
            by_set.setdefault(name, {}).update(score_all([configuration], dvr_scan_python,
                                                         clips_json))
    labels = [name for name, _, _ in configurations]
    clips = list(dict.fromkeys(clip for results in by_set.values() for rows in results.values()
                               for clip in rows))

    def f1(name: str, label: str, clip: str) -> float:
        return by_set.get(name, {}).get(label, {}).get(clip, {}).get("f1", float("nan"))

    cells = []
    for clip in clips:
        for name in names:
            for label in labels:
                r = by_set[name][label].get(clip, {"auc": "-", "hit": "-", "false": -1})
                # nan (no native, or a clip that could not be scored either way) stays nan
                move = f1(name, label, clip) - f1("native", label, clip)
                cells.append({"clip": clip, "perturbation": name, "configuration": label,
                              "f1": f1(name, label, clip), "vs_native": round(move, 2),
                              "auc": r["auc"], "hit": r["hit"], "false": r["false"]})
    cell = {(c["clip"], c["perturbation"], c["configuration"]): c for c in cells}

    print(f"{'clip':34} {'perturbation':12}" + "".join(f" | {label[:22]:>22}   F1  diff"
                                                         for label in labels))
    for clip in clips:
        for name in names:
            row = [cell[clip, name, label] for label in labels]
            print(f"{clip[:34]:34} {name:12}" + "".join(
                f" | {'':>22} {c['f1']:4.2f} {shown(c['vs_native'], name)}"
                for c in row))
    print()
    print(f"{'mean over clips':47}" + "".join(f" | {label[:22]:>22}   F1  diff lost"
                                              for label in labels))
    means, lost = {}, {}
    for name in names:
        row = []
        for label in labels:
            mine = [cell[clip, name, label] for clip in clips]
            f1s = [c["f1"] for c in mine if c["f1"] == c["f1"]]
            moves = [c["vs_native"] for c in mine if c["vs_native"] == c["vs_native"]]
            means.setdefault(label, {})[name] = mean(f1s)
            lost.setdefault(label, {})[name] = sum(move < -LOST_F1 for move in moves)
            row.append(f" | {'':>22} {mean(f1s):4.2f} {shown(mean(moves), name)} "
                       f"{'' if name == 'native' or not moves else lost[label][name]:>4}")
        print(f"{name:47}" + "".join(row))
    print(f"{f'lost: clips more than {LOST_F1} below native':47}" + "".join(
        f" | {'':>22} {sum(lost[label].values()):>14}" for label in labels))
    if "native" not in names:
        print("(native was not scored: no differences; add it to --only)")

    path = work / f"results-{time.strftime('%Y%m%d-%H%M%S')}.json"
    path.write_text(json.dumps(plain({
        "configurations": {name: [who, *options] for name, who, options in configurations},
        "perturbations": names, "sets": {name: str(clips_json) for name, clips_json in
                                         sets.items()},
        "cells": cells, "mean_f1": means, "lost": lost, "lost_means": f"F1 below native by "
                                                                      f"more than {LOST_F1}"}),
        indent=1))
    print(f"written {path}", file=sys.stderr)


def mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else float("nan")


def shown(difference: float, name: str) -> str:
    """A difference from native as the table shows it: signed, blank for native itself and
    when there is none."""
    return f"{difference:+5.2f}" if difference == difference and name != "native" else " " * 5


def plain(value):
    """``value`` with nan as None, so the results file is strict JSON."""
    if isinstance(value, float) and value != value:
        return None
    if isinstance(value, dict):
        return {key: plain(item) for key, item in value.items()}
    if isinstance(value, list):
        return [plain(item) for item in value]
    return value


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
    stand_ins.add_argument("--perturb", metavar="WORK", type=Path,
                           help="score the clips (and WavingTrees) as they are and perturbed, "
                                "each set built into WORK/<perturbation>")
    parser.add_argument("--only", metavar="NAME[,NAME]", type=lambda text: text.split(","),
                        help=f"with --perturb, only these sets: {', '.join(PERTURBATIONS)}")
    parser.add_argument("--defaults-only", action="store_true",
                        help="score videvent's defaults without --method pca beside them")
    parser.add_argument("--also", action="append", default=[],
                        help="another videvent configuration: its run options, each as one "
                             "word (--also=--method=ancp)")
    args = parser.parse_args()
    if args.only and args.perturb is None:
        parser.error("--only goes with --perturb")
    unknown = [name for name in args.only or [] if name not in PERTURBATIONS]
    if unknown:
        parser.error(f"no perturbation {', '.join(unknown)}: choose from "
                     f"{', '.join(PERTURBATIONS)}")
    if not SCORER.exists():
        print(f"skipped: {SCORER} is absent (the shared development set is not here)")
        return
    # Options with values as one word (--method=pca): the scorer takes bare words for clips.
    configurations = [("defaults", "videvent", [])]
    if not args.defaults_only:
        configurations.append(("--method=pca", "videvent", ["--method=pca"]))
    configurations += [(extra, "videvent", extra.split()) for extra in args.also]
    if args.dvr_scan_python:
        configurations.append(("DVR-Scan", "dvrscan", []))
    if args.perturb is not None:
        # in PERTURBATIONS' order, whatever --only's, so native comes first
        names = [name for name in PERTURBATIONS if name in (args.only or PERTURBATIONS)]
        compare_perturbations(args.perturb, names, configurations, args.dvr_scan_python)
        return
    clips_json = None
    clips = json.loads(DEVSET.read_text())
    if args.started_mid_event is not None:
        clips_json = started_mid_event(args.started_mid_event, clips)
    elif args.heavily_compressed is not None:
        clips_json = same_labels(args.heavily_compressed, clips, HEAVY_CRF)
    elif args.low_frame_rate is not None:
        clips_json = low_frame_rate(args.low_frame_rate, clips)
    results = score_all(configurations, args.dvr_scan_python, clips_json)
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
