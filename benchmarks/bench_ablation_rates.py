"""The Wallflower WavingTrees sequence as images at five assumed frame rates, with each
mechanism that the development set alone does not justify turned off in turn.

Run by hand: ``python benchmarks/bench_ablation_rates.py`` (needs ``../shared``). Prints one
Markdown row per configuration: the frame-level F1 against the sequence's labels (frames
242-259, the person at all) at 10, 15, 20, 25 and 30 fps. The schedule is in seconds, so an
assumed rate changes how many frames the warm-up, the window and the settling span: a
mechanism that only holds at one rate shows here.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

WAVING_TREES = Path(__file__).resolve().parents[2] / "shared" / "datasets" / "waving_trees"
RATES = (10, 15, 20, 25, 30)
CONFIGURATIONS = ([], ["--without=warmup_damping"], ["--without=neighbour_spread"],
                  ["--without=out_of_sample"], ["--without=upper_quantile"],
                  ["--without=frame_noise"], ["--without=revealed"], ["--no-light-invariant"])


def f1(flagged: np.ndarray, truth: np.ndarray) -> float:
    hits = int((flagged & truth).sum())
    return 2 * hits / (int(flagged.sum()) + int(truth.sum())) if hits else 0.0


def main() -> None:
    if not WAVING_TREES.is_dir():
        sys.exit(f"no WavingTrees at {WAVING_TREES}")
    labels = json.loads((WAVING_TREES / "events.json").read_text())
    truth = np.zeros(labels["frames"], bool)
    for first, last in labels["event_frames"]:
        truth[first:last + 1] = True
    print("| turned off | " + " / ".join(f"{rate}" for rate in RATES) + " fps |")
    print("|---|---|")
    with tempfile.TemporaryDirectory() as work:
        for options in CONFIGURATIONS:
            row = []
            for rate in RATES:
                out = Path(work) / f"{len(row)}-{'-'.join(options) or 'defaults'}"
                subprocess.run([sys.executable, "-m", "videvent", "run",
                                str(WAVING_TREES / labels["pattern"]), "--fps", str(rate),
                                "-q", "--no-plot", "-d", str(out), *options], check=True)
                flagged = np.loadtxt(out / "scores.csv", delimiter=",", skiprows=1,
                                     usecols=5, dtype=int).astype(bool)
                row.append(f"{f1(flagged, truth):.2f}")
            name = " ".join(options).replace("--without=", "") or "nothing (the defaults)"
            print(f"| {name} | " + " / ".join(row) + " |", flush=True)


if __name__ == "__main__":
    main()
