"""``residuals.png``: a figure like the paper's Waving Tree figure, for a run.

Top: the residual of every frame against the background subspace (what the paper plots).
Bottom: the score the events come from, with the thresholds. Events are shaded in both;
the moments the detector absorbed a lasting change and the blank, frozen or corrupt frames
are marked, the warm-up (the model learning the background) hatched; the time in seconds
runs along the top.
Drawn from ``scores.csv`` and the event list, so it can be redrawn without the video.
"""

from __future__ import annotations

import os

import numpy as np
# A bare Figure on an Agg canvas, never pyplot: pyplot would need a backend, and switching
# matplotlib's backend on import (as this module once did) hid a notebook's own figures after
# detect(). Headless rendering is a property of these files, not of the process.
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import FixedLocator, MaxNLocator

from ..status import BLANK, CORRUPT, FROZEN, WARMUP
from ..atomic import write_atomically

EVENT_COLOUR = "#d62728"
PADDING_COLOUR = "#ff9896"
WARMUP_COLOUR = "#7f7f7f"
PROBLEM_COLOURS = {BLANK: "#7f7f7f", FROZEN: "#1f77b4", CORRUPT: "#9467bd"}
# At most this many seconds labelled along the top (the frames along the bottom get about
# as many).
CLOCK_TICKS = 10


def residual_axis_top(residual: np.ndarray, status: np.ndarray) -> float:
    """Top of a residual axis: the scored frames decide it, not the warm-up's first frames
    (scored against a model of one or two frames, their residual is near 1)."""
    scored = residual[status != WARMUP]
    values = scored if scored.size else residual
    return max(1e-3, float(values.max(initial=0.0)) * 1.15)


def residual_figure(scores: dict[str, np.ndarray], events: list[dict], *, threshold: float,
                    threshold_low: float | None = None, title: str = "") -> Figure:
    """A matplotlib figure of residual and score per frame with the events shaded.

    Not registered with pyplot: it renders on its own Agg canvas, whatever backend the caller
    (a notebook, say) uses, and is freed when the last reference goes.
    """
    frames = scores["frame"]
    figure = Figure(figsize=(10, 5.5))
    FigureCanvasAgg(figure)
    top, bottom = figure.subplots(2, 1, sharex=True, gridspec_kw={"height_ratios": [1, 1]})
    top.plot(frames, scores["residual"], color="black", linewidth=0.9)
    top.set_ylabel("residual")
    top.set_ylim(0, residual_axis_top(scores["residual"], scores["status"]))
    bottom.plot(frames, scores["score"], color="#333333", linewidth=0.9, label="score")
    bottom.axhline(threshold, color=EVENT_COLOUR, linestyle="--", linewidth=1,
                   label=f"threshold {threshold:g}")
    if threshold_low is not None and threshold_low != threshold:
        bottom.axhline(threshold_low, color=EVENT_COLOUR, linestyle=":", linewidth=1,
                       label=f"continue above {threshold_low:g}")
    bottom.set_ylabel("score (robust z)")
    bottom.set_xlabel("frame")
    for axis in (top, bottom):
        for event in events:
            axis.axvspan(event["start_frame"] - 0.5, event["end_frame"] + 0.5,
                         color=PADDING_COLOUR, alpha=0.25, linewidth=0)
            axis.axvspan(event["core_start_frame"] - 0.5, event["core_end_frame"] + 0.5,
                         color=EVENT_COLOUR, alpha=0.3, linewidth=0)
        for frame in frames[scores["absorbed"]]:
            axis.axvline(frame, color="#2ca02c", linestyle="-.", linewidth=1.2)
    # The event numbers inside the plot, under its top edge: above it they ran into the title.
    for event in events:
        top.annotate(f"{event['number']}", (event["peak_frame"], 0.97),
                     xycoords=("data", "axes fraction"), ha="center", va="top", fontsize=8,
                     color=EVENT_COLOUR, fontweight="bold")
    status = scores["status"]
    # Blank, frozen or corrupt frames in the warm-up (a still scene) do not interrupt it.
    warmup = _runs(frames, status == WARMUP, np.isin(status, list(PROBLEM_COLOURS)))
    for axis in (top, bottom):
        for first, last in warmup:
            axis.axvspan(first - 0.5, last + 0.5, color=WARMUP_COLOUR, alpha=0.35, linewidth=0,
                         hatch="//", fill=False)
    if warmup:
        bottom.fill_between([], [], color=WARMUP_COLOUR, alpha=0.35, hatch="//",
                            label="warm-up, model learning")
    for name, colour in PROBLEM_COLOURS.items():
        marked = frames[status == name]
        if marked.size:
            bottom.plot(marked, np.zeros(marked.size), "|", color=colour, markersize=10,
                        label=f"{name} frames")
    if scores["absorbed"].any():
        bottom.plot([], [], color="#2ca02c", linestyle="-.", label="lasting change absorbed")
    # Beside the plot, not on it: inside, it hid the first event.
    bottom.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0, fontsize=8)
    if frames.size:
        top.set_xlim(frames[0] - 0.5, frames[-1] + 0.5)
    if frames.size > 1 and "time_s" in scores:  # scores of a caller's own may have no times
        times = scores["time_s"]
        clock = top.secondary_xaxis("top", functions=(
            lambda f: np.interp(f, frames, times), lambda t: np.interp(t, times, frames)))
        clock.xaxis.set_major_locator(FixedLocator(clock_ticks(frames, times)))
        clock.set_xlabel("time (s)")
    if title:
        top.set_title(title)
    figure.tight_layout()
    return figure


def clock_ticks(frames: np.ndarray, times: np.ndarray, most: int = CLOCK_TICKS) -> list[float]:
    """The seconds labelled along the top: round numbers inside the times recorded (one past
    the last was drawn at the last frame, on the one before: a 64-s watch ended `60 70`),
    none nearer the one before it than the axis's width over ``most`` (a camera lost for a
    while puts many seconds at one frame)."""
    first, last = float(times[0]), float(times[-1])
    # The axis runs half a frame past the first and the last frame.
    margin = (last - first) / max(1, len(times) - 1) / 2
    least_apart = (frames[-1] - frames[0]) / most
    kept: list[float] = []
    placed = -np.inf
    for tick in MaxNLocator(most, steps=[1, 2, 2.5, 5, 10]).tick_values(first, last):
        at = float(np.interp(tick, times, frames))
        if first - margin <= tick <= last + margin and at - placed >= least_apart:
            kept.append(float(tick))
            placed = at
    return kept


def _runs(frames: np.ndarray, mask: np.ndarray, bridged: np.ndarray
          ) -> list[tuple[int, int]]:
    """(first, last) frame of each run of rows where ``mask`` holds; ``bridged`` rows
    between two such rows do not end the run."""
    runs: list[tuple[int, int]] = []
    open_run = False
    for frame, on, bridge in zip(frames.tolist(), mask.tolist(), bridged.tolist()):
        if on and open_run:
            runs[-1] = (runs[-1][0], frame)
        elif on:
            runs.append((frame, frame))
            open_run = True
        elif not bridge:
            open_run = False
    return runs


def write_residual_plot(path: str | os.PathLike, scores: dict[str, np.ndarray],
                        events: list[dict], **kwargs) -> None:
    figure = residual_figure(scores, events, **kwargs)
    write_atomically(path, lambda temporary: figure.savefig(temporary, dpi=110, format="png"))
