"""Motion evidence: how much each block of the frame moves now, against how it has moved lately.

The background subspace says how far a frame is from the scene's usual look; it cannot tell a
lane of cars that pass all day from the road, because what is in view most of the time is the
usual look. Motion can: a block's change from the frame before, in log grey levels, is z-scored
against that block's own recent changes (their median and spread over ``history`` frames), so
a waving tree, a curtain or an escalator, which move all the time, score nothing, and a car in
a lane that was still a moment ago scores as a person on a lawn does. A change of the whole
frame at once (a light, the camera's exposure, the codec's keyframe) is not motion: the
frame's median block z is taken off every block.

river's shape: ``score_one(x)`` gives the block z-scores of ``x``'s change from the last
picture learned (None until the history says anything), ``learn_one(x)`` records it.
"""

from __future__ import annotations

from collections import deque

import cv2
import numpy as np

from .background import MIN_SAMPLES, NOISE_FLOOR, robust_statistics

# The spread of a block's log change is at least this: a change twice the block's usual is
# never more than two sigmas of evidence. A gust through a tree, rare but recurring, doubles
# its blocks' change and more; a car on an empty road multiplies it tenfold.
SPREAD_FLOOR = 0.5 * np.log(2.0)


class MotionEvidence:
    """Per-block z-scores of the frame-to-frame change against each block's recent changes.

    ``history``: frames of changes kept; ``refresh``: frames between two recomputations of
    their median and spread (a rolling median every frame would cost more than the model).
    """

    def __init__(self, frame_shape: tuple[int, ...], grid: tuple[int, int], *, history: int,
                 refresh: int):
        self.frame_shape = tuple(frame_shape)
        self.grid = grid                                   # (columns, rows)
        self.refresh = max(1, int(refresh))
        self.changes_ = deque(maxlen=max(MIN_SAMPLES, int(history)))
        self.previous_: np.ndarray | None = None
        self._stats: tuple[np.ndarray, np.ndarray] | None = None
        self._since_refresh = 0
        self._scored: tuple[np.ndarray, np.ndarray | None] | None = None  # (x, its change)

    def _log_change(self, x: np.ndarray) -> np.ndarray | None:
        if self.previous_ is None:
            return None
        difference = x.reshape(self.frame_shape) - self.previous_
        squared = difference * difference
        if squared.ndim == 3:
            squared = squared.mean(axis=2)
        means = cv2.resize(squared, self.grid, interpolation=cv2.INTER_AREA).ravel()
        # Below the model's noise floor a change is sensor noise, however still the block.
        return 0.5 * np.log(np.maximum(means, NOISE_FLOOR ** 2))

    def score_one(self, x: np.ndarray) -> np.ndarray | None:
        """Block z-scores of the change from the last picture learned (None before
        ``MIN_SAMPLES`` changes have been learned)."""
        change = self._log_change(x)
        self._scored = (x, change)          # learn_one of the same frame needs it again
        if change is None or len(self.changes_) < MIN_SAMPLES:
            return None
        if self._stats is None:
            self._stats = robust_statistics(np.array(self.changes_), floor=SPREAD_FLOOR)
        median, spread = self._stats
        z = (change - median) / spread
        return z - _median(z)

    def learn_one(self, x: np.ndarray) -> None:
        """Record ``x``'s change from the picture before it; ``x`` is the next one's before."""
        scored, self._scored = self._scored, None
        change = scored[1] if scored is not None and scored[0] is x else self._log_change(x)
        if change is not None:
            self.changes_.append(change)
            self._since_refresh += 1
            if self._since_refresh >= self.refresh or len(self.changes_) <= MIN_SAMPLES:
                self._stats = None
                self._since_refresh = 0
        picture = x.reshape(self.frame_shape)
        if self.previous_ is None:
            self.previous_ = picture.astype(np.float32, copy=True)
        else:                                # no new array a frame
            np.copyto(self.previous_, picture)

    def score_and_learn(self, x: np.ndarray) -> np.ndarray | None:
        """``score_one`` then ``learn_one`` of ``x``: the detector's step, every picture."""
        z = self.score_one(x)
        self.learn_one(x)
        return z

    def forget_picture(self) -> None:
        """No picture came (a blank or corrupt frame): the next one has nothing to move from."""
        self.previous_ = None
        self._scored = None


def _median(values: np.ndarray) -> np.floating:
    """``np.median`` of a 1-d array of finite values, the same number without its wrappers,
    which cost six times the partition itself on a frame's blocks, every frame."""
    half = len(values) // 2
    if len(values) % 2:
        return np.partition(values, half)[half]
    low, high = np.partition(values, (half - 1, half))[half - 1:half + 1]
    return (low + high) / 2
