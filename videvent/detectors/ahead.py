"""Frames scored in blocks: what the detector works out for many frames of a file at once.

The model's basis and statistics change only at a refit, so a frame's look (its residual's
block energies, its own noise, its block z-scores) can be worked out for all the frames up to
the next refit in a few numpy calls instead of a few hundred each; and the change of each
frame from the one before (the motion's, the lasting changes') needs no model at all. Every
number is the one the frame scored alone gets: a row's arithmetic does not depend on the other
rows (``SubspaceBackground.score_many``), so the verdicts are the same in any blocking. A file
is scored a block at a time; a live picture, a block of one (its latency does not change).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence

import numpy as np

from .background import grey_block_means


class FrameBlock:
    """Consecutive frames' working vectors (``rows``, one a row; zeros for a frame without
    one) and what has been worked out for them: each judge's looks (``SceneJudge``) and the
    model-free quantities (``shared``)."""

    def __init__(self, vectors: Sequence[np.ndarray | None]):
        present = [vector for vector in vectors if vector is not None]
        if len(present) == len(vectors):
            self.rows = np.stack(vectors)
        else:
            self.rows = np.zeros((len(vectors), *present[0].shape) if present
                                 else (len(vectors), 0),
                                 present[0].dtype if present else np.float32)
            for row, vector in enumerate(vectors):
                if vector is not None:
                    self.rows[row] = vector
        # A frame's tag (``tag``) names this block; a copy of a detector (pickled, across
        # processes) holds tags that name no block of its own.
        self.token = object()
        self.looks: dict = {}      # judge -> (its model, the model's version, first row, looks)
        self._shared: dict = {}

    def __len__(self) -> int:
        return len(self.rows)

    def tag(self, row: int) -> tuple[object, int]:
        """What names the frame of ``row``: a mechanism that remembers the frame it saw last
        knows so whether the block's row before the next one is that frame."""
        return self.token, row

    def follows(self, tag, row: int) -> bool:
        """Whether the frame ``tag`` names is this block's row before ``row``."""
        return row > 0 and tag is not None and tag[0] is self.token and tag[1] == row - 1

    def shared(self, name: Hashable, compute: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
        """``compute(rows)`` (a model-free quantity of every row), worked out once a block."""
        if name not in self._shared:
            self._shared[name] = compute(self.rows)
        return self._shared[name]

    def squares(self, shape: tuple[int, ...], grid: tuple[int, int]) -> np.ndarray:
        """Each row's picture (of ``shape``) squared, its block means (channels averaged)."""
        def compute(rows):
            pictures = rows.reshape(len(rows), *shape)
            return grey_block_means(pictures * pictures, grid)
        return self.shared(("squares", shape, grid), compute)

    def products(self, shape: tuple[int, ...], grid: tuple[int, int]) -> np.ndarray:
        """Each row's picture times the row's before, its block means (row 0: zeros)."""
        def compute(rows):
            pictures = rows.reshape(len(rows), *shape)
            means = np.zeros((len(rows), grid[0] * grid[1]), rows.dtype)
            if len(rows) > 1:
                means[1:] = grey_block_means(pictures[1:] * pictures[:-1], grid)
            return means
        return self.shared(("products", shape, grid), compute)

    def changes(self, shape: tuple[int, ...], grid: tuple[int, int]) -> np.ndarray:
        """Each row's picture less the row's before, squared, its block means (row 0:
        zeros)."""
        def compute(rows):
            pictures = rows.reshape(len(rows), *shape)
            means = np.zeros((len(rows), grid[0] * grid[1]), rows.dtype)
            if len(rows) > 1:
                difference = pictures[1:] - pictures[:-1]
                means[1:] = grey_block_means(difference * difference, grid)
            return means
        return self.shared(("changes", shape, grid), compute)
