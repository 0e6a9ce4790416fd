"""The detector's pass alone, and where its time goes (run by hand).

    python benchmarks/bench_pass.py [--rounds 2] [--work DIR] [--json FILE] [CLIP ...]

For each clip (by default ``bench_run.py``'s 1-minute 720p garden clip and, where
``../shared`` has them, the development set's fifteen): every frame decoded and preprocessed
beforehand, and the seeding's sample too, so that only the detector is timed; then its pass
(``Engine.run`` over those frames, seeding from the sample included), ``--rounds`` times, the
best counting (CPU time of this process, one BLAS thread). Then one more pass under cProfile,
whose shares say where the time goes: the model's refits, its looks at the frames (residuals,
block energies, the frame's noise, z-scores), the lasting changes, the motion, the health
check, the seeding, and the part of them the start's reference judge (the twin) takes, which
overlaps the others.
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

from bench_run import Discard, decoded_beforehand, loop_clip, make_clip  # noqa: E402
from videvent.detectors import SubspaceWindowDetector  # noqa: E402
from videvent.detectors.background import SubspaceBackground  # noqa: E402
from videvent.detectors.motion import MotionEvidence  # noqa: E402
from videvent.detectors.policy import StaticRegions  # noqa: E402
from videvent.detectors.subspace_window import SceneJudge  # noqa: E402
from videvent.engine import Engine, seed_detector, seed_sample, seeds  # noqa: E402
from videvent.preprocess import HealthCheck  # noqa: E402
from videvent.passes import prepare  # noqa: E402
from videvent.settings import Settings  # noqa: E402
from videvent.sources import open_source  # noqa: E402

DEVSET = ROOT.parent / "shared" / "datasets" / "devset"

# Where the time goes: a profile's inclusive time of each of these functions.
PARTS = {
    "refits": SubspaceBackground.refit,
    "looks": SceneJudge.view,
    "lasting changes": StaticRegions.update,
    "motion": MotionEvidence.score_and_learn,
    "health check": HealthCheck.__call__,
    "seeding": seed_detector,
    "of which the twin": SubspaceWindowDetector._with_start_reference,
}


def decoded_pass(clip: Path):
    """A fresh pass over ``clip`` and its frames' working vectors, decoded beforehand."""
    source = open_source(clip)
    run, _ = prepare(source, Settings())
    sample = seed_sample(run) if seeds(run) else None
    return source, decoded_beforehand(run), sample


def timed(source, frames, sample, profile=None) -> float:
    """CPU seconds of one pass over ``frames``."""
    run, _ = prepare(source, Settings())
    run.seed_sample = sample
    start = time.process_time()
    if profile is not None:
        profile.enable()
    Engine(run).run(Discard(), decoded=frames)
    if profile is not None:
        profile.disable()
    return time.process_time() - start


def shares(profile: cProfile.Profile) -> dict[str, float]:
    """Each part's share of the profiled pass."""
    stats = pstats.Stats(profile).stats

    def inclusive(function) -> float:
        code = function.__code__
        return stats.get((code.co_filename, code.co_firstlineno, code.co_name),
                         (0, 0, 0, 0.0))[3]
    total = inclusive(Engine._score)
    return {part: inclusive(function) / total for part, function in PARTS.items()}


def measure(clip: Path, rounds: int) -> dict:
    source, frames, sample = decoded_pass(clip)
    best = min(timed(source, frames, sample) for _ in range(rounds))
    profile = cProfile.Profile()
    timed(source, frames, sample, profile)
    source.close()
    return {"frames": len(frames), "size": f"{source.width}x{source.height}",
            "ms_a_frame": best / len(frames) * 1000, "shares": shares(profile)}


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
    print(f"the detector's pass alone, CPU ms a frame (best of {args.rounds}), and the "
          "shares of a profiled pass")
    print(" | ".join(["clip", "frames", "ms a frame"] + list(PARTS)))
    results = {}
    for clip in clips:
        name = clip.parent.name if clip.resolve().parent.parent == DEVSET.resolve() else clip.stem
        result = results[name] = measure(clip, args.rounds)
        print(" | ".join([name, str(result["frames"]), f"{result['ms_a_frame']:.3f}"]
                         + [f"{share:.0%}" for share in result["shares"].values()]),
              flush=True)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
