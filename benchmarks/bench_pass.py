"""The detector's pass alone, in blocks against one frame at a time, and where its time goes
(run by hand).

    python benchmarks/bench_pass.py [--rounds 2] [--work DIR] [CLIP ...]

For each clip (by default ``bench_run.py``'s 1-minute 720p garden clip and, where
``../shared`` has them, the development set's fifteen): every frame decoded and preprocessed
beforehand, and the seeding's sample too, so that only the detector is timed; then its pass
(``Engine.run`` over those frames, seeding from the sample included) with the file's blocks
(``engine.BLOCK`` frames) and one frame at a time, interleaved, ``--rounds`` times each, the
best counting (CPU time of this process, one BLAS thread). The two passes' verdicts are
compared field by field. Then one more pass in blocks under cProfile, whose shares say where
the time goes: the model's refits, the looks (residuals, block energies, noise, z-scores),
the lasting changes, the motion, the health check, the rest of the rules, and the part of them
the start's reference judge (the twin) takes.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import pstats
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench_run import Discard, loop_clip, make_clip  # noqa: E402
from videvent import engine  # noqa: E402
from videvent.engine import Engine, seed_sample, seeds  # noqa: E402
from videvent.passes import prepare  # noqa: E402
from videvent.settings import Settings  # noqa: E402
from videvent.sources import Frame, open_source  # noqa: E402

DEVSET = ROOT.parent / "shared" / "datasets" / "devset"

# Where the time goes: a profile's inclusive time of each of these functions (file, name).
PARTS = {
    "refits": ("background.py", "refit"),
    "looks": ("subspace_window.py", "views"),
    "lasting changes": ("policy.py", "update"),
    "motion": ("motion.py", "score_and_learn"),
    "health check": ("preprocess.py", "__call__"),
    "seeding": ("engine.py", "seed_detector"),
    "of which the twin": ("subspace_window.py", "_with_start_reference"),
}


class Verdicts:
    """The engine's consumer that keeps every verdict's numbers."""

    def __init__(self):
        self.rows = []

    def add(self, frame, vector, verdict) -> None:
        self.rows.append((verdict.index, verdict.residual, verdict.score, verdict.status,
                          verdict.admitted, verdict.absorbed, verdict.evidence,
                          verdict.lasting, verdict.left))

    def status(self, *news) -> None:
        pass


def decoded_pass(clip: Path):
    """A fresh pass over ``clip`` and its frames' working vectors, decoded beforehand."""
    source = open_source(clip)
    run, _ = prepare(source, Settings())
    frames = [(Frame(frame.index, frame.time_s, None),
               None if frame.image is None else run.preprocess(frame.image))
              for frame in source.frames(run.start, run.end, size=run.decode_size)]
    sample = seed_sample(run) if seeds(run) else None
    return source, frames, sample


def timed(source, frames, sample, block: int, consumer=None, profile=None) -> float:
    """CPU seconds of one pass over ``frames`` in blocks of ``block``."""
    run, _ = prepare(source, Settings())
    run.seed_sample = sample
    engine.BLOCK = block
    start = time.process_time()
    if profile is not None:
        profile.enable()
    Engine(run).run(consumer or Discard(), decoded=frames)
    if profile is not None:
        profile.disable()
    return time.process_time() - start


def shares(profile: cProfile.Profile) -> dict[str, float]:
    """Each part's share of the profiled pass."""
    stats = pstats.Stats(profile).stats
    def inclusive(file, name):
        return sum(value[3] for (path, _, function), value in stats.items()
                   if path.endswith(file) and function == name)
    total = inclusive("engine.py", "_score")
    return {part: inclusive(*where) / total for part, where in PARTS.items()}


def measure(clip: Path, rounds: int) -> dict:
    source, frames, sample = decoded_pass(clip)
    blocked_default = engine.BLOCK
    best = {"blocks": float("inf"), "one at a time": float("inf")}
    for _ in range(rounds):
        best["blocks"] = min(best["blocks"], timed(source, frames, sample, blocked_default))
        best["one at a time"] = min(best["one at a time"], timed(source, frames, sample, 1))
    together, alone = Verdicts(), Verdicts()
    timed(source, frames, sample, blocked_default, together)
    timed(source, frames, sample, 1, alone)
    profile = cProfile.Profile()
    timed(source, frames, sample, blocked_default, profile=profile)
    engine.BLOCK = blocked_default
    source.close()
    return {"frames": len(frames), "size": f"{source.width}x{source.height}",
            "ms_blocks": best["blocks"] / len(frames) * 1000,
            "ms_one_at_a_time": best["one at a time"] / len(frames) * 1000,
            "same_verdicts": together.rows == alone.rows, "shares": shares(profile)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("clips", nargs="*", type=Path)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--work", type=Path, default=Path("/tmp/videvent-bench"))
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args()
    clips = args.clips
    if not clips:
        args.work.mkdir(parents=True, exist_ok=True)
        garden = args.work / "garden_720p_30s.mp4"
        make_clip(garden, 30)
        minute = args.work / "garden_720p_1min.mp4"
        loop_clip(garden, minute, 2)
        clips = [minute]
        if DEVSET.is_dir():
            clips += sorted(path for folder in sorted(DEVSET.iterdir()) if folder.is_dir()
                            for path in folder.iterdir() if path.suffix != ".json")
    print(f"the detector's pass alone, CPU ms a frame (best of {args.rounds}); blocks of "
          f"{engine.BLOCK} against one frame at a time; shares of the pass in blocks")
    header = ["clip", "frames", "blocks", "one at a time", "ratio", "same"] + list(PARTS)
    print(" | ".join(header))
    results = {}
    for clip in clips:
        result = results[clip.stem] = measure(clip, args.rounds)
        print(" | ".join([clip.stem, str(result["frames"]), f"{result['ms_blocks']:.3f}",
                          f"{result['ms_one_at_a_time']:.3f}",
                          f"{result['ms_one_at_a_time'] / result['ms_blocks']:.2f}x",
                          "yes" if result["same_verdicts"] else "NO"]
                         + [f"{share:.0%}" for share in result["shares"].values()]),
              flush=True)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
