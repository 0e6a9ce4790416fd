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

MOVED, APPEARED, LEFT, LIGHT, SCENE, DARKNESS = (
    "moved", "appeared", "left", "light", "scene", "darkness")
KINDS = (MOVED, APPEARED, LEFT, LIGHT, SCENE, DARKNESS)


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
