"""Record the verdicts on the bundled sample clips, with the dependencies' versions they came
from, in ``tests/data/pinned_verdicts.json``; ``tests/test_pinned_verdicts.py`` checks every
install against them, so a new version of a dependency that changes what videvent finds
(OpenCV's or FFmpeg's scaling, a decoder, NumPy's or OpenBLAS's arithmetic) fails a test
instead of surprising a user.

Run it again only after reading what changed and deciding it is right (the test's failure
says which clip, which frames and which versions); the file's diff is then the record.

Usage: python scripts/pin_verdicts.py
"""

from __future__ import annotations

import json
import tempfile
from datetime import date
from pathlib import Path

from videvent import detect
from videvent.output import read_scores

ROOT = Path(__file__).resolve().parent.parent
PINNED = ROOT / "tests" / "data" / "pinned_verdicts.json"
CLIPS = ("person_visit", "walker", "lighting", "long_event", "scene_change", "blank_frames")
DEPENDENCIES = ("numpy", "scipy", "opencv-python", "av", "threadpoolctl")
DECIMALS = 4


def verdicts(name: str) -> dict:
    """A sample clip's events (first and last frame) and every frame's score, at defaults."""
    with tempfile.TemporaryDirectory() as scratch:
        result = detect(ROOT / "sample_videos" / f"{name}.mp4", out_dir=Path(scratch) / "r",
                        plot=False)
        scores = read_scores(Path(scratch) / "r" / "scores.csv")["score"]
    return {"events": [[e.start_frame, e.end_frame] for e in result.events],
            "scores": [round(float(s), DECIMALS) for s in scores]}


def versions() -> dict[str, str]:
    from importlib.metadata import version
    return {name: version(name) for name in DEPENDENCIES}


def main() -> None:
    document = {"recorded": date.today().isoformat(), "versions": versions(),
                "clips": {name: verdicts(name) for name in CLIPS}}
    temporary = PINNED.with_suffix(".json.partial")
    temporary.write_text(json.dumps(document, indent=1) + "\n")
    temporary.replace(PINNED)
    print(f"wrote {PINNED.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
