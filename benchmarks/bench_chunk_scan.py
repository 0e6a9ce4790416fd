"""Benchmark: does ``batch --chunk-minutes`` find the events of ``videvent run``? (issue 31;
run by hand, needs ../shared's dev set)

    python benchmarks/bench_chunk_scan.py [--times 3] [--chunk-minutes 2,3,5] [--workers 2]

The dev set's clips are joined into one long video (each scaled and padded to 320x240 at
25 fps, in the order of clips.json, the whole set ``--times`` over), which ``videvent run``
scans once. Then ``videvent batch`` scans it in chunks of each ``--chunk-minutes`` on a local
cluster. For each: the chunks scored again, the run's events the chunked scan found with both
ends within 1 s (``TOLERANCE_S``) and the events of its own; and, for every boundary between
two chunks, what the video holds there: inside one of the run's events, inside a clip's
labelled event, or after a clip's lasting change was placed (its tags say whether the clip has
a light switch or a lasting change).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_chunks import matched  # noqa: E402
from videvent.batch import Video, chunk_ranges, run_batch  # noqa: E402
from videvent.pipeline import detect  # noqa: E402
from videvent.settings import Settings  # noqa: E402

DEVSET = ROOT.parent / "shared" / "datasets" / "devset"
FPS = 25
SIZE = (320, 240)


def join_clips(clips: dict, times: int, path: Path,
               size: tuple[int, int] = SIZE) -> list[tuple[str, float, float]]:
    """The clips joined into ``path`` (made once), each scaled and padded to ``size``; (name,
    start s, end s) of each piece."""
    pieces, at = [], 0.0
    for _ in range(times):
        for name, clip in clips.items():
            seconds = clip["frames"] / (clip.get("fps") or FPS)
            pieces.append((name, at, at + seconds))
            at += seconds
    if path.exists():
        return pieces
    inputs = [str(DEVSET / clip["folder"] / clip["source"]) for clip in clips.values()] * times
    width, height = size
    filters = "".join(
        f"[{k}:v]fps={FPS},scale={width}:{height}:force_original_aspect_ratio=decrease,"
        f"pad={width}:{height}:(ow-iw)/2:(oh-ih)/2,format=yuv420p,setsar=1[v{k}];"
        for k in range(len(inputs)))
    filters += "".join(f"[v{k}]" for k in range(len(inputs))) + \
        f"concat=n={len(inputs)}:v=1:a=0[out]"
    temporary = path.with_suffix(".tmp.mp4")
    subprocess.run(["ffmpeg", "-v", "error", "-y", *[a for i in inputs for a in ("-i", i)],
                    "-filter_complex", filters, "-map", "[out]", "-c:v", "libx264", "-crf",
                    "18", "-preset", "veryfast", str(temporary)], check=True)
    temporary.rename(path)
    return pieces


def what_is_at(time_s: float, pieces, clips: dict, events: list) -> str:
    """What the joined video holds at ``time_s``."""
    name, start, _ = next(p for p in pieces if p[1] <= time_s < p[2])
    clip = clips[name]
    frame = (time_s - start) * (clip.get("fps") or FPS)
    said = [name]
    if any(a <= frame <= b for a, b in clip["event_frames"]):
        said.append("mid-event")
    change = clip.get("lasting_change", {}).get("placed_around")
    if change and frame >= change[0]:
        said.append("after its lasting change")
    if "light_switch" in clip["tags"]:
        said.append("a light-switch clip")
    if any(a <= time_s <= b for a, b in events):
        said.append("inside a run's event")
    return ", ".join(said)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--times", type=int, default=3)
    parser.add_argument("--chunk-minutes", default="2,3,5")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--work", type=Path, default=Path("/tmp/videvent-chunk-scan"))
    args = parser.parse_args()
    if not DEVSET.is_dir():
        raise SystemExit(f"no dev set at {DEVSET}")
    clips = {name: clip for name, clip in json.loads((DEVSET / "clips.json").read_text()).items()
             if clip.get("scored", True)}
    args.work.mkdir(parents=True, exist_ok=True)
    video = args.work / f"devset_x{args.times}.mp4"
    pieces = join_clips(clips, args.times, video)
    sequential = detect(str(video), Settings(), out_dir=args.work / "sequential.videvent",
                        plot=False)
    theirs = [(e.start_time_s, e.end_time_s) for e in sequential.events]
    print(f"{video.name}: {pieces[-1][2] / 60:.1f} min, the dev set {args.times} times; "
          f"videvent run: {len(theirs)} events")
    for minutes in (float(m) for m in args.chunk_minutes.split(",")):
        out = args.work / f"chunks_{minutes:g}"
        shutil.rmtree(out, ignore_errors=True)   # a batch skips what an earlier one finished
        summary = run_batch([Video(str(video), "joined")], out, Settings(),
                            workers=args.workers, plot=False, chunk_seconds=minutes * 60)
        (outcome,) = summary.outcomes
        if outcome.error:
            raise SystemExit(f"the batch failed: {outcome.error}")
        found, own = matched(theirs, [(e["start_time_s"], e["end_time_s"])
                                      for e in outcome.events])
        print(f"chunks of {minutes:g} min: {outcome.chunks} chunks, {outcome.rescored} scored "
              f"again; the run's events found {found} of {len(theirs)}, {own} of its own; "
              f"{summary.seconds:.0f} s")
        for start, _ in chunk_ranges(Video(str(video), "joined"), Settings(),
                                     minutes * 60)[1:]:
            print(f"  boundary at {start / FPS:.1f} s: "
                  f"{what_is_at(start / FPS, pieces, clips, theirs)}")


if __name__ == "__main__":
    main()
