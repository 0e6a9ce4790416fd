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
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SCORER = HERE.parent.parent / "shared" / "tools" / "score_clips.py"
ROW = re.compile(r"^(\S+)\s+(\d+)\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)\s+(\d+/\d+)\s+(\d+)\s*$")


def score(python: str, who: str, options: list[str]) -> dict[str, dict]:
    """Per-clip metrics from one run of the shared scorer."""
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dvr-scan-python", help="a Python with dvr_scan installed")
    parser.add_argument("--also", action="append", default=[],
                        help="another videvent configuration: its run options, each as one "
                             "word (--also=--method=ancp)")
    args = parser.parse_args()
    if not SCORER.exists():
        print(f"skipped: {SCORER} is absent (the shared development set is not here)")
        return
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
        results[name] = score(python, who, options)
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
