"""Shared helpers: the bundled sample clips, the shared WavingTrees set and development set,
running the CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

# The detector's matrices are small: one BLAS thread, as every run of the pipeline uses, in
# the tests that drive the detector directly too (two threads fighting over them cost about
# three times the CPU on these machines). Child processes (the CLI) limit their own.
threadpool_limits(limits=1, user_api="blas")

# A config file of the user's own (~/.config/videvent/config.toml) would change every CLI run
# of the tests: they look for it in a folder that has none (their children inherit this).
os.environ["XDG_CONFIG_HOME"] = os.path.join(tempfile.gettempdir(), "videvent-tests-no-config")
# The CLI's child processes import videvent from this checkout: where the environment says not
# to write bytecode (PYTHONDONTWRITEBYTECODE), each of them compiled every module again from
# source. They keep it in a cache of the tests' own, apart from the checkout.
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
os.environ["PYTHONPYCACHEPREFIX"] = os.path.join(tempfile.gettempdir(),
                                                 f"videvent-tests-pycache-{os.getuid()}")

# A child process that dies of a signal (a crash inside FFmpeg or OpenCV, seen once in a watch
# waiting for a camera) prints every thread's Python stack on stderr, which its test shows.
os.environ["PYTHONFAULTHANDLER"] = "1"

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "sample_videos"
WAVING_TREES = ROOT.parent / "shared" / "datasets" / "waving_trees"
DEVSET = ROOT.parent / "shared" / "datasets" / "devset"


def pytest_report_header(config) -> str:
    """The versions this run tests against, first in its output: a failure that only a fresh
    machine shows is often a dependency's newer release (``tests/test_pinned_verdicts.py``)."""
    from importlib.metadata import PackageNotFoundError, version

    def installed(name: str) -> str:
        try:
            return f"{name} {version(name)}"
        except PackageNotFoundError:
            return f"{name} (not installed)"
    return "videvent tested with " + ", ".join(installed(name) for name in (
        "numpy", "scipy", "opencv-python", "av", "dask", "distributed", "aiohttp",
        "paho-mqtt", "matplotlib", "click", "threadpoolctl", "playwright"))


def pytest_xdist_auto_num_workers(config) -> int:
    """One worker per core and one more (--maxprocesses caps it): about a quarter of the
    suite's test time is spent waiting on streams played at their real pace (watch, dashboard,
    MQTT), and a worker waiting there leaves its core to the others."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return (cores or 1) + 1


def sample(name: str) -> tuple[Path, dict]:
    """A bundled sample clip and its ground truth."""
    return SAMPLES / f"{name}.mp4", json.loads((SAMPLES / f"{name}.json").read_text())


def run_cli(*args, cwd=None) -> subprocess.CompletedProcess:
    """Run ``videvent`` as a user would, in a child process."""
    return subprocess.run([sys.executable, "-m", "videvent", *map(str, args)], cwd=cwd,
                          capture_output=True, text=True, timeout=600)


def truth_mask(ranges, length: int) -> np.ndarray:
    mask = np.zeros(length, bool)
    for first, last in ranges:
        mask[first:last + 1] = True
    return mask


@pytest.fixture
def waving_trees() -> Path:
    frames = WAVING_TREES / "frames"
    if not frames.is_dir():
        pytest.skip("the shared WavingTrees sequence is not here (../shared/datasets/waving_trees)")
    return WAVING_TREES


def devset_clip(name: str) -> tuple[Path, dict]:
    """A clip of the shared development set and its labels (skips when the set is absent)."""
    index = DEVSET / "clips.json"
    if not index.is_file():
        pytest.skip("the shared development set is not here (../shared/datasets/devset)")
    clip = json.loads(index.read_text())[name]
    return DEVSET / clip["folder"] / clip["source"], clip


def mean_saturation(path: Path) -> float:
    """The mean HSV saturation (0..255) of a picture file: about 5 for a grey picture with a
    coloured outline drawn on it, 90 for the demo clip's room in its colours."""
    import cv2

    picture = cv2.imread(str(path), cv2.IMREAD_COLOR)
    assert picture is not None, path
    return float(cv2.cvtColor(picture, cv2.COLOR_BGR2HSV)[..., 1].mean())


class Kept:
    """The engine's consumer that keeps every (frame, score)."""

    def __init__(self):
        self.frames = []

    def add(self, frame, _vector, score) -> None:
        self.frames.append((frame, score))

    def status(self, _kind, _detail) -> None:
        pass


def wait_until(condition, timeout: float, what: str) -> None:
    """Poll ``condition`` until it holds; fail, saying ``what`` did not happen, after
    ``timeout`` seconds (a guard against a hang, never a measure of speed)."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"not {what} within {timeout} s")
        time.sleep(0.05)
