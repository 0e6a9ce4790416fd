"""The same file gives the same verdicts whatever runs it: the machine's cores, a Dask
worker's thread settings, other passes in the same process (docs/guarantees.md)."""

from __future__ import annotations

import os
import subprocess
import sys

from threadpoolctl import threadpool_info, threadpool_limits

from conftest import sample
from videvent.engine import one_blas_thread


def blas_threads() -> set[int]:
    return {library["num_threads"] for library in threadpool_info()
            if library["user_api"] == "blas"}


def test_the_verdicts_do_not_depend_on_how_many_blas_threads_the_process_has(tmp_path):
    """A pass seeded from frames spread over the file: its seed's SVD ran with the process's
    BLAS threads (two on this kind of machine, one in a Dask worker) and gave other last bits,
    which a window of 30 frames turned into other scores."""
    scores = []
    for threads in (1, 2):
        out = tmp_path / f"threads{threads}"
        subprocess.run([sys.executable, "-m", "videvent", "run", sample("walker")[0], "-d", out,
                        "-q", "--no-plot", "--window", "30", "--background-span", "6s"],
                       env=dict(os.environ, OPENBLAS_NUM_THREADS=str(threads)), check=True,
                       capture_output=True, timeout=300)
        scores.append((out / "scores.csv").read_bytes())
    assert scores[0] == scores[1]


def test_one_blas_thread_holds_until_the_last_of_several_passes_ends():
    """Two cameras' passes overlapping in one process: the first to end leaves the other one
    thread; the last to end gives the process its own setting back."""
    with threadpool_limits(limits=2, user_api="blas"):
        first, second = one_blas_thread(), one_blas_thread()
        first.__enter__()
        second.__enter__()
        assert blas_threads() == {1}
        first.__exit__(None, None, None)
        assert blas_threads() == {1}
        second.__exit__(None, None, None)
        assert blas_threads() == {2}
