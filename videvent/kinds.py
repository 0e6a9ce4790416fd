"""What an event was and where: its kind, read from the detector's own evidence on its frames,
and its place (a box in source pixels, the named regions it touched).

The detector says, for every frame, which evidence gave its score (``FrameScore.evidence``:
``residual``, ``motion``, ``brightness`` or ``darkness``), whether blocks of a lasting change
became background there (``lasting``), whether something left (``left``) and whether the model
was rebuilt (``absorbed``, which also ends the event: ``Event.absorbed``). ``EventEvidence``
gathers that over an event's frames as they are decided, and ``event_kind`` (pure) names it:

- ``darkness``: most of the frames that made it an event were judged against a lasting darkness
  (a picture out of darkness);
- ``light``: most of them were made unusual by the brightness step (the light changed);
- ``scene``: it ended in a rebuild of the model that was not a light (the whole scene changed);
- ``left``: something left during it, revealing the background;
- ``appeared``: blocks it flagged became background as it ended, which ended it (appeared
  and stayed; the session looks from its last core frame to its padded end);
- ``moved``: anything else (something moved through).

The frames that count are the event's core frames scoring from the threshold up: those that
made it an event. Measured on the 15 dev clips (``benchmarks/bench_kinds.py``), the
brightness step made a frame unusual on light switches only, and there on most frames.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from .choices import KINDS, parse_kinds
from .regions import parse_region_names

MOVED, APPEARED, LEFT, LIGHT, SCENE, DARKNESS = KINDS


def event_kind(evidence: Counter, *, rebuilt: bool = False, lasting: bool = False,
               left: bool = False) -> str:
    """The kind of an event from ``evidence`` (how many of the frames that made it an event
    each evidence gave the score of), whether it ended in a rebuild of the model
    (``rebuilt``), whether blocks became background as it ended (``lasting``) and whether
    something left during it (``left``). Most frames: more than half."""
    counted = sum(evidence.values())
    if evidence.get(DARKNESS, 0) * 2 > counted > 0:
        return DARKNESS
    if evidence.get("brightness", 0) * 2 > counted > 0:
        return LIGHT
    if rebuilt:
        return SCENE
    if left:
        return LEFT
    if lasting:
        return APPEARED
    return MOVED


@dataclass
class EventEvidence:
    """What an event's core frames showed, gathered one frame at a time (bounded: a count per
    evidence and one grid of blocks)."""

    threshold: float            # the score that starts an event: frames from it up count
    low: float                  # the block z-score from which a block counts as unusual
    evidence: Counter = field(default_factory=Counter)
    blocks: np.ndarray | None = None   # blocks (rows x cols) unusual on any of its frames

    def add(self, score) -> None:
        """One of the event's core frames (a ``FrameScore``)."""
        if score.score >= self.threshold and score.evidence:
            self.evidence[score.evidence] += 1
        # Only frames the detector explained have block scores (from the low threshold up).
        if score.block_scores is not None:
            unusual = paired(score.block_scores >= self.low)
            if self.blocks is None or self.blocks.shape != unusual.shape:
                self.blocks = unusual.copy()
            else:
                self.blocks |= unusual


def paired(hot: np.ndarray) -> np.ndarray:
    """The blocks of ``hot`` (rows x cols) with a hot neighbour beside, above or below: as
    the score counts them (``neighbour_max``), so a lone block that a branch or a ripple
    lights up does not stretch the box."""
    out = np.zeros_like(hot)
    across, down = hot[:, :-1] & hot[:, 1:], hot[:-1] & hot[1:]
    out[:, :-1] |= across
    out[:, 1:] |= across
    out[:-1] |= down
    out[1:] |= down
    return out


def block_box(blocks: np.ndarray | None, width: int | None, height: int | None
              ) -> list[int] | None:
    """The box ``[x, y, width, height]``, in pixels of a ``width`` x ``height`` picture, that
    covers the True blocks of ``blocks`` (rows x cols, cut as the detector cuts its working
    picture: nearest neighbour); None when none is."""
    if blocks is None or not blocks.any() or not width or not height:
        return None
    rows, cols = blocks.shape
    # Pixel p of a side of n pixels lies in block p * blocks // n (OpenCV's nearest resize).
    col_of = np.arange(width) * cols // width
    row_of = np.arange(height) * rows // height
    xs = np.flatnonzero(blocks.any(axis=0)[col_of])
    ys = np.flatnonzero(blocks.any(axis=1)[row_of])
    return [int(xs[0]), int(ys[0]), int(xs[-1] - xs[0] + 1), int(ys[-1] - ys[0] + 1)]


class RegionBlocks:
    """Which blocks of the detector's grid each watch region covers, to name the regions an
    event touched. Regions are named as the messages about them name them: ``region 1``,
    ``region 2``... in the order given (``-a`` first, then the files of ``-R``)."""

    def __init__(self, regions, width: int, height: int):
        self.polygons = tuple(getattr(regions, "watch", ()) or ())
        self.size = (width, height)
        self._grids: dict[tuple[int, int], list[np.ndarray]] = {}

    def touched(self, blocks: np.ndarray | None) -> list[str]:
        """The names of the regions with a pixel in a True block of ``blocks``."""
        if blocks is None or not self.polygons or not blocks.any() or not all(self.size):
            return []
        grids = self._grids.get(blocks.shape)
        if grids is None:
            grids = self._grids[blocks.shape] = [self._covered(polygon, blocks.shape)
                                                 for polygon in self.polygons]
        return [f"region {number}" for number, covered in enumerate(grids, start=1)
                if (covered & blocks).any()]

    def _covered(self, polygon, shape: tuple[int, int]) -> np.ndarray:
        import cv2   # here, not on import, as regions.py does

        width, height = self.size
        filled = np.zeros((height, width), np.uint8)
        cv2.fillPoly(filled, [np.asarray(polygon, np.int32).reshape(-1, 1, 2)], 1)
        ys, xs = np.nonzero(filled)
        covered = np.zeros(shape, bool)
        covered[ys * shape[0] // height, xs * shape[1] // width] = True
        return covered


# -- which events are alerted ------------------------------------------------------------------
@dataclass(frozen=True)
class AlertFilter:
    """Which events are alerted: those of ``kinds`` (None: any kind) that touched one of
    ``regions`` (named as events name them, ``region 1``...; None: anywhere). Events are
    recorded whatever it says; only alerts are filtered."""

    kinds: frozenset[str] | None = None
    regions: frozenset[str] | None = None

    @classmethod
    def of(cls, kinds: str | None, regions: str | None,
           region_count: int | None = None) -> "AlertFilter":
        """From the options' texts (``--alert-on``, ``--alert-regions``); ValueError (one
        line, naming the option) for a kind or region that is none."""
        try:
            wanted_kinds = None if kinds is None else parse_kinds(kinds)
        except ValueError as error:
            raise ValueError(f"--alert-on: {error}") from None
        try:
            wanted_regions = None if regions is None else parse_region_names(regions,
                                                                             region_count)
        except ValueError as error:
            raise ValueError(f"--alert-regions: {error}") from None
        return cls(wanted_kinds, wanted_regions)

    def __bool__(self) -> bool:
        return self.kinds is not None or self.regions is not None

    def passes(self, event) -> bool:
        """Whether ``event`` (its kind and regions so far, while it is open) is one to alert."""
        return ((self.kinds is None or event.kind in self.kinds)
                and (self.regions is None or bool(self.regions & set(event.regions or ()))))


class AlertGate:
    """One alert channel's view of an ``AlertFilter`` over its events' lives. An event's kind
    and regions are known for sure only at its end; its alerts begin (``start``) as soon as
    what it is so far passes the filter, and once begun go on to its ``end``, whatever it
    turns out to be, so that every start has its end (a motion sensor turned on is always
    turned off). An event that passes only at its end (``appeared`` is read at the end) gets
    its start and its end then; one that never passes gets nothing."""

    def __init__(self, alert_filter: AlertFilter | None = None):
        self.filter = alert_filter or AlertFilter()
        self._begun: set[int] = set()    # the open events whose alerts have begun

    def open(self, event) -> str | None:
        """For an open event, as it stands: ``"start"`` when its alerts begin now,
        ``"update"`` when they began before, None while it does not pass."""
        if event.number in self._begun:
            return "update"
        if self.filter.passes(event):
            self._begun.add(event.number)
            return "start"
        return None

    def end(self, event) -> str | None:
        """For an event that ended: ``"end"`` when its alerts had begun, ``"start and end"``
        when it passes only now, None when it never passed."""
        if event.number in self._begun:
            self._begun.discard(event.number)
            return "end"
        return "start and end" if self.filter.passes(event) else None
