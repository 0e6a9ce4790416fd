"""Streaming detector: the robust subspace (ANCP/SNCP) of a sliding window of normal frames.

Every frame is scored as it arrives against the background subspace learned from a window of
recent frames that the detector itself judged normal, so a long event is never learned as
background. The window's Gram matrix ``X X^T`` is kept up to date one row at a time (the new
frame's inner products with the window); its small eigen-decomposition gives the top-k
projection of the window that the paper scores, so no pixel-sized SVD is ever computed.

The score of a frame is not the global residual alone. The residual image (the frame minus its
reconstruction from the background subspace) is cut into a grid of blocks, and each block's
log residual energy is z-scored against that block's own history over the normal frames. A
waving tree leaves a large residual where the tree is, every frame; a person walking over the
lawn leaves one where the residual is usually tiny. A second term catches what normalising
frames to unit length hides: a sudden change of the overall brightness (lights switched off).

Slow change (light drifting, the camera's gain) is followed because normal frames keep
joining the window. A lasting change of the scene (an object moved, a light switched on)
keeps frames out of it; after ``absorb_after`` consecutive rejected frames the window is
rebuilt from the most recent of them and the statistics start afresh, so the new scene
becomes the background.
"""

from __future__ import annotations

import math
from collections import deque

import cv2
import numpy as np

from ..preprocess import BLANK, CORRUPT, FROZEN, OK
from ..rpca.scores import (ancp_from_singular_vectors, coherence_values, demote_unexplained,
                           right_singular_vectors, sncp_from_singular_vectors)
from .base import FrameScore

WARMUP = "warmup"
METHODS = ("sncp", "ancp", "cop", "pca")

# Block energies are scored as logs, so the z-score reads relative changes whatever the
# scene's brightness. Their floor is 1% of a unit-length frame's mean pixel (a grey level or
# two): below that, residual is sensor and compression noise.
ENERGY_FLOOR = 0.01
# The spread of a block's log energy is the larger of the MAD-based sigma and the
# 95th-percentile distance from the median / 1.6449 (equal for normal data). The second
# keeps rare but recurring residual peaks of the background (a gust every few seconds) from
# looking like events; a floor of 15% keeps perfectly still blocks from turning noise into
# events.
MAD_TO_SIGMA = 1.4826
UPPER_QUANTILE, UPPER_QUANTILE_Z = 0.95, 1.6449
LOG_SPREAD_FLOOR = 0.15
# Sudden global brightness change: the log of the mean pixel against the normal frames',
# in units of this scale (a 10% step scores 1; the lights going off score 10 or more).
BRIGHTNESS_SCALE = 0.1
# Residuals needed before z-scores mean anything.
MIN_HISTORY = 5
# Eigenvalues of the Gram matrix below this share of the largest are numerical noise.
EIGENVALUE_RTOL = 1e-12
# A basis vector whose squared length, nominally 1, comes out below this has collapsed:
# float32 frames leave round-off of about 1e-7 there.
COLLAPSED_DIRECTION = 1e-4


class SubspaceWindowDetector:
    """Score frames against the robust subspace of a window of normal frames.

    Parameters
    ----------
    frame_shape : (height, width) or (height, width, channels) of the frames, whose vectors
        (C order) are what the detector is fed
    method : 'sncp', 'ancp', 'cop' (inlier scores that pick the window's normal frames) or
        'pca' (plain PCA of the window, the non-robust baseline)
    rank : dimension of the background subspace (3 in the paper's video experiment)
    window : number of frames the model holds
    projection_dim : the window is projected onto its top ``projection_dim`` left singular
        vectors before scoring (50 in the paper)
    inlier_fraction : share of the window, by score, that spans the subspace
    admit_threshold : frames whose score is below this are normal and join the window
    absorb_after : consecutive rejected frames after which the window is rebuilt from them
        (a lasting scene change); None never absorbs
    warmup : frames admitted unconditionally at the start and after an absorption
        (default: half the window, so the statistics see the background's slow cycles)
    refit_every : frames added to the window between two refits of the subspace
    blocks : the residual image is scored in a grid this many blocks across its long side
    """

    def __init__(self, frame_shape: tuple[int, ...], *, method: str = "sncp", rank: int = 3,
                 window: int = 100, projection_dim: int = 50, inlier_fraction: float = 0.5,
                 admit_threshold: float = 4.5, absorb_after: int | None = 150,
                 warmup: int | None = None, refit_every: int = 5, blocks: int = 6):
        if method not in METHODS:
            raise ValueError(f"unknown method {method!r}: choose one of {', '.join(METHODS)}")
        if rank < 1 or window < rank + 1:
            raise ValueError(f"need rank >= 1 and a window longer than rank, got rank={rank}, "
                             f"window={window}")
        if projection_dim < rank:
            raise ValueError(f"projection dimension {projection_dim} is below rank {rank}")
        if not 0.0 < inlier_fraction <= 1.0:
            raise ValueError(f"inlier fraction must be in (0, 1], got {inlier_fraction}")
        if absorb_after is not None and absorb_after < 1:
            raise ValueError(f"absorb_after must be at least 1 frame, got {absorb_after}")
        if len(frame_shape) not in (2, 3) or min(frame_shape) < 1:
            raise ValueError(f"frame shape must be (height, width[, channels]), got {frame_shape}")
        if blocks < 1:
            raise ValueError(f"blocks must be at least 1, got {blocks}")
        self.frame_shape = tuple(int(n) for n in frame_shape)
        self.n_features = int(np.prod(self.frame_shape))
        height, width = self.frame_shape[:2]
        scale = blocks / max(height, width)
        self.grid = (max(1, min(width, round(width * scale))),
                     max(1, min(height, round(height * scale))))
        self.method = method
        self.rank = int(rank)
        self.window = int(window)
        self.projection_dim = int(projection_dim)
        self.inlier_fraction = float(inlier_fraction)
        self.admit_threshold = float(admit_threshold)
        self.absorb_after = absorb_after
        self.warmup = max(rank + 1, window // 2) if warmup is None else min(int(warmup), window)
        self.refit_every = max(1, int(refit_every))

        # Frames in float32 halve the memory traffic of the per-frame products; the small
        # matrices (Gram, eigenvectors) stay float64.
        self.frames_ = np.zeros((self.window, self.n_features), np.float32)  # one frame a row
        self.gram_ = np.zeros((self.window, self.window))
        self.n_filled_ = 0
        self.next_slot_ = 0
        self.basis_ = np.zeros((self.n_features, 0), np.float32)  # pixel-space, orthonormal
        # Statistics of the frames judged normal: block log energies and log mean pixel.
        self.block_history_ = deque(maxlen=self.window)
        self.brightness_history_ = deque(maxlen=self.window)
        self._stats = None                                         # cached medians and scales
        self._unit_pixel = 1.0 / math.sqrt(self.n_features)
        self.rejected_ = deque(maxlen=self.window)                 # recent frames kept out
        self.rejected_run_ = 0
        self.warmup_left_ = self.warmup
        self.added_since_refit_ = 0
        self.n_refits_ = 0
        self.n_absorbed_ = 0
        self._absorbed_pending = False
        self._previous_verdict = (0.0, 0.0)

    # -- river-style streaming API ---------------------------------------------------------
    def score_one(self, x: np.ndarray) -> tuple[float, float, tuple[np.ndarray, float]]:
        """(residual, score, features) of frame vector ``x`` against the current model.

        residual: distance of the unit-length frame from the background subspace;
        score: the larger of the largest block z-score and the brightness-change score;
        features: (block log energies, log mean pixel), what ``learn_one`` records.
        """
        return self._evaluate(x)[:3]

    def _evaluate(self, x: np.ndarray):
        outside = self.residual_image(x)
        norm = float(np.linalg.norm(x))
        if norm == 0.0:
            return 0.0, 0.0, (np.zeros(self.grid[0] * self.grid[1]), 0.0), outside
        residual = min(1.0, float(np.linalg.norm(outside)) / norm)
        features = (self._block_energies(outside / norm), math.log(max(float(x.mean()), 1e-3)))
        return residual, self._score(*features), features, outside

    def learn_one(self, x: np.ndarray, features: tuple[np.ndarray, float]) -> None:
        """Take ``x`` as a normal frame: it joins the window and the statistics."""
        self.block_history_.append(features[0])
        self.brightness_history_.append(features[1])
        self._add_to_window(x)
        self.rejected_run_ = 0
        self.rejected_.clear()

    def process_frame(self, index: int, time_s: float, x: np.ndarray | None,
                      health: str = OK, *, explain: bool | float = False) -> FrameScore:
        """Score one frame, then let it into the model if it looks normal.

        ``explain``: True, or a score above which to do it, adds the residual image and the
        block z-scores to the verdict (for heat maps and boxes; no extra model is involved).
        """
        absorbed, self._absorbed_pending = self._absorbed_pending, False
        if health in (BLANK, CORRUPT):
            # No picture to score: reported through the status, never as NaN or an event.
            return FrameScore(index, time_s, 0.0, 0.0, health, False, absorbed)
        if health == FROZEN and self.warmup_left_ == 0:
            # A repeat carries no news: same verdict, and the window keeps its variety. While
            # warming up it is learned all the same, or a perfectly still scene (which a lossy
            # encoder turns into repeated frames) would never get a model.
            residual, score = self._previous_verdict
            return FrameScore(index, time_s, residual, score, health, False, absorbed)
        residual, score, features, outside = self._evaluate(x)
        explanation = {}
        if explain is True or (explain is not False and score >= explain):
            explanation = {"residual_image": outside.reshape(self.frame_shape),
                           "block_scores": self._block_scores(features[0])}
        warming_up = self.warmup_left_ > 0
        if warming_up:
            self.warmup_left_ -= 1
            score = 0.0
        self._previous_verdict = (residual, score)
        admitted = warming_up or score < self.admit_threshold
        if admitted:
            self.learn_one(x, features)
        else:
            self._reject(x)
        status = FROZEN if health == FROZEN else WARMUP if warming_up else OK
        return FrameScore(index, time_s, residual, score, status, admitted, absorbed,
                          **explanation)

    # -- the model ---------------------------------------------------------------------------
    def residual_image(self, x: np.ndarray) -> np.ndarray:
        """The frame minus its reconstruction from the background subspace (same length as x)."""
        return x - self.basis_ @ (self.basis_.T @ x)

    def refit(self) -> None:
        """Recompute the background subspace from the window's Gram matrix."""
        self.added_since_refit_ = 0
        n = self.n_filled_
        if n == 0:
            return
        eigenvalues, eigenvectors = np.linalg.eigh(self.gram_[:n, :n])
        eigenvalues, eigenvectors = eigenvalues[::-1], eigenvectors[:, ::-1]
        k = int(np.count_nonzero(eigenvalues > eigenvalues[0] * EIGENVALUE_RTOL))
        k = min(k, self.projection_dim)
        top_values, top_vectors = eigenvalues[:k], eigenvectors[:, :k]
        # Coordinates of the window's frames in its top-k left singular basis (k x n).
        projected = np.sqrt(top_values)[:, None] * top_vectors.T
        normalised = projected / np.linalg.norm(projected, axis=0)
        chosen = normalised[:, self._inlier_columns(normalised)]
        # Top left singular vectors of the chosen columns, from their k x k Gram matrix.
        _, left = np.linalg.eigh(chosen @ chosen.T)
        basis_in_projection = left[:, ::-1][:, :min(self.rank, k, chosen.shape[1])]
        # Back to pixels without forming the k pixel-sized singular vectors:
        # u = X^T w / sqrt(lambda) for each eigenpair (w, lambda) of X X^T.
        coefficients = (top_vectors / np.sqrt(top_values)) @ basis_in_projection
        # One matrix-vector product per basis vector: BLAS reads the window once for each,
        # where a single (pixels x n) @ (n x rank) product runs two to three times slower.
        rows = [column @ self.frames_[:n] for column in coefficients.T.astype(np.float32)]
        self.basis_ = _orthonormal_rows(np.stack(rows)).T
        self.n_refits_ += 1

    def _inlier_columns(self, normalised: np.ndarray) -> np.ndarray:
        n = normalised.shape[1]
        if self.method == "pca" or n <= self.rank:
            return np.arange(n)
        if self.method == "cop":
            scores = coherence_values(normalised)
        else:
            V, singular_values = right_singular_vectors(normalised, with_values=True)
            scores = demote_unexplained(sncp_from_singular_vectors(V) if self.method == "sncp"
                                        else ancp_from_singular_vectors(V), V, singular_values)
        n_inliers = max(self.rank + 1, math.ceil(self.inlier_fraction * n))
        return np.sort(np.argsort(-scores, kind="stable")[:n_inliers])

    def _add_to_window(self, x: np.ndarray) -> None:
        """Put ``x`` in the oldest slot and update that row and column of the Gram matrix."""
        slot = self.next_slot_
        self.frames_[slot] = x
        n = max(self.n_filled_, slot + 1)
        inner = self.frames_[:n] @ x.astype(np.float32, copy=False)
        self.gram_[slot, :n] = inner
        self.gram_[:n, slot] = inner
        self.n_filled_ = n
        self.next_slot_ = (slot + 1) % self.window
        self.added_since_refit_ += 1
        if self.added_since_refit_ >= self.refit_every or self.warmup_left_ > 0:
            self.refit()
            self._stats = None  # refreshed with the model, not at every frame

    def _block_energies(self, outside: np.ndarray) -> np.ndarray:
        """Log of the root-mean-square residual of each block of the grid."""
        squared = (outside * outside).reshape(self.frame_shape)
        if squared.ndim == 3:
            squared = squared.sum(axis=2)
        means = cv2.resize(squared, self.grid, interpolation=cv2.INTER_AREA)
        floor = (ENERGY_FLOOR * self._unit_pixel) ** 2
        return 0.5 * np.log(np.maximum(means, floor)).ravel()

    def _statistics(self):
        """Per-block median and spread of the normal frames, and their typical brightness."""
        if self._stats is None:
            history = np.array(self.block_history_)
            median = np.median(history, axis=0)
            spread = MAD_TO_SIGMA * np.median(np.abs(history - median), axis=0)
            upper = (np.quantile(history, UPPER_QUANTILE, axis=0) - median) / UPPER_QUANTILE_Z
            scale = np.maximum(np.maximum(spread, upper), LOG_SPREAD_FLOOR)
            self._stats = (median, scale, float(np.median(self.brightness_history_)))
        return self._stats

    def _block_scores(self, energies: np.ndarray) -> np.ndarray:
        """z-score of every block, as a (rows, cols) grid (zeros before statistics exist)."""
        if len(self.block_history_) < MIN_HISTORY:
            return np.zeros(self.grid[::-1])
        median, scale, _ = self._statistics()
        return ((energies - median) / scale).reshape(self.grid[::-1])

    def _score(self, energies: np.ndarray, brightness: float) -> float:
        if len(self.block_history_) < MIN_HISTORY:
            return 0.0
        median, scale, typical_brightness = self._statistics()
        block_score = float(np.max((energies - median) / scale))
        return max(block_score, abs(brightness - typical_brightness) / BRIGHTNESS_SCALE)

    def _reject(self, x: np.ndarray) -> None:
        self.rejected_.append(x)
        self.rejected_run_ += 1
        if self.absorb_after is not None and self.rejected_run_ >= self.absorb_after:
            self._absorb()

    def _absorb(self) -> None:
        """Make the recent rejected frames the new background (a lasting scene change)."""
        recent = np.array(self.rejected_)
        m = len(recent)
        self.frames_[:m] = recent
        self.gram_[:m, :m] = recent @ recent.T
        self.n_filled_ = m
        self.next_slot_ = m % self.window
        self.rejected_.clear()
        self.rejected_run_ = 0
        self.refit()
        # The old scene's statistics say nothing about the new one: learn them afresh.
        self.block_history_.clear()
        self.brightness_history_.clear()
        self._stats = None
        self.warmup_left_ = self.warmup
        self.n_absorbed_ += 1
        self._absorbed_pending = True


def _orthonormal_rows(rows: np.ndarray) -> np.ndarray:
    """Orthonormal rows spanning what ``rows`` span, from their small Gram matrix.

    The basis vectors come out of the eigenpairs nominally orthonormal; round-off in the small
    eigenvalues leaves them slightly skew, and a window spanning fewer dimensions than the rank
    gives directions that collapse to (numerically) nothing. Those are dropped, not blown up.
    """
    values, vectors = np.linalg.eigh((rows @ rows.T).astype(np.float64))
    kept = values > COLLAPSED_DIRECTION * max(float(values.max(initial=0.0)), 1e-30)
    return (vectors[:, kept] / np.sqrt(values[kept])).T.astype(np.float32) @ rows
