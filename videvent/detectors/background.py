"""The background model: the robust subspace (SNCP) of a window of frames, and how far a frame
lies from it, block by block.

The model holds a window of frames and knows nothing about which frames it should hold: that is
the policy's business (``policy.py``). Whatever the window holds, the background subspace is
spanned by the frames the robust inlier scores pick (SNCP by default), so frames of an event
that sit in the window are outvoted, as in the paper's batch setting. The window's Gram matrix
``X X^T`` is kept up to date one row at a time; its small eigen-decomposition gives the top-k
projection of the window that the paper scores, so no pixel-sized SVD is ever computed.

A frame is scored block by block: the residual image (the frame minus its reconstruction from
the subspace) is cut into a grid, and each block's log residual energy is z-scored against that
block's robust statistics over the frames the model learned. With ``light_invariant``, the
part of a block's residual that is the block's own picture scaled (a shadow, a cloud, the
camera's exposure moving in one part of the frame) is left out of its energy: it changes the
light, not what is there. A waving tree leaves a large
residual where the tree is, every frame; a person on the lawn leaves one where it is usually
tiny. The overall brightness is scored apart, since normalising frames to unit length hides it.

A frame also carries its own noise, which the block's past does not know: a codec whose quantiser
changes from frame to frame (FFmpeg's MJPEG rate control, an I-frame among P-frames) raises the
residual of every block it codes coarser, the still ones as much as any. With ``frame_noise``,
the blocks whose coarse picture the window's majority agrees with (nothing new is in them) tell
how much: if they are at least half the frame, their median excess over their usual energy,
once it reaches the floor of any block's spread, is the frame's noise, and that much power
comes off every block (noise adds power: a block with a person in it keeps nearly all of its
energy). A light switched or a scene changed alters the coarse picture of most blocks, so it
is never taken for noise; someone close to the camera leaves the other half to tell the
frame's noise by.
"""

from __future__ import annotations

import math
from statistics import NormalDist
from dataclasses import dataclass

import cv2
import numpy as np

from ..choices import METHODS
from ..rpca.scores import (ancp_from_singular_vectors, coherence_values, demote_unexplained,
                           right_singular_vectors, sncp_from_singular_vectors)


# Block energies are scored as logs, so the z-score reads relative changes whatever the
# scene's brightness. Their floor is 1% of a unit-length frame's mean pixel (a grey level or
# two): below that, residual is sensor and compression noise.
ENERGY_FLOOR = 0.01
# ... and never below this, in grey levels (root-mean-square over a block): residual that small
# is sensor and compression noise whatever the light.
NOISE_FLOOR = 1.5
# The spread of a block's log energy is the larger of the MAD-based sigma and the 95th
# percentile's distance from the median / 1.645 (equal for normal data). The second keeps a
# waving tree's gusts, rare but recurring, from looking like events, which a spread read off
# the middle of the distribution would call them; the frames it reads are the window's
# background frames, so events do not widen it. A floor of 15% keeps perfectly still blocks
# from turning noise into events.
MAD_TO_SIGMA = 1.4826
UPPER_QUANTILE = 0.95
# Coarse pictures (block means of the unit-length frame) differ by sensor noise alone by less
# than this: 0.5% of the mean pixel.
CELL_SPREAD_FLOOR = 0.005
# A window frame with two neighbouring blocks this far (z) from the window's per-block median
# is outvoted in those blocks, and kept out of the subspace.
VOTE_Z = 3.0
LOG_SPREAD_FLOOR = 0.15
# Samples (frames learned, changes, brightnesses) before a median and a spread read off them
# mean anything: the model's z-scores, the motion's, the brightness step's.
MIN_SAMPLES = 5
# Eigenvalues of the Gram matrix below this share of the largest are numerical noise.
EIGENVALUE_RTOL = 1e-12
# A basis vector whose squared length, nominally 1, comes out below this has collapsed:
# float32 frames leave round-off of about 1e-7 there.
COLLAPSED_DIRECTION = 1e-4


@dataclass
class Assessment:
    """How one frame compares with the background model.

    residual: distance of the unit-length frame from the subspace (0..1, the paper's quantity)
    residual_image: the frame minus its reconstruction (grey levels, same length as the frame)
    block_energies: log root-mean-square residual of each block of the unit-length frame,
        less the frame's own noise
    brightness: log of the frame's mean pixel
    norm: the frame's length (worked out once a frame, see ``score_one``)
    noise: the frame's own noise (``frame_noise``): the log energy its blocks carry over their
        usual, taken off ``block_energies`` as power (``SubspaceBackground.less_noise``)
    """

    residual: float
    residual_image: np.ndarray
    block_energies: np.ndarray
    brightness: float
    norm: float
    noise: float = 0.0


def brightness_of(x: np.ndarray) -> float:
    """The log of a frame's mean pixel: its overall brightness, which unit length hides."""
    return math.log(max(float(x.mean()), 1e-3))


# Window frames whose residuals are worked out together at a refit: a multiple of four (the
# block means average four frames in one pass), small enough for the core's cache.
ENERGY_CHUNK = 8


class SubspaceBackground:
    """A window of frames, its robust background subspace, and per-block residual statistics.

    river-style: ``score_one`` compares a frame with the model, ``learn_one`` puts a frame in
    the window, in the slot the policy chose (``policy.Forgetting``), and its features in the
    statistics. State is bounded: the window (``window`` frames) and ``window`` feature rows.

    ``region_vote``: the refit's per-block vote (``refit``); ``upper_quantile``: a block's
    spread is at least this quantile's distance from its median (None: the MAD's alone);
    ``neighbour_spread``: at least its neighbours' median spread; ``out_of_sample``: the
    spread reads the residuals frames had when scored as well as the in-sample ones;
    ``frame_noise``: a frame's own noise is taken off its energies (see the module's text).
    """

    def __init__(self, frame_shape: tuple[int, ...], *, method: str, rank: int, window: int,
                 projection_dim: int, inlier_fraction: float, refit_every: int, blocks: int,
                 light_invariant: bool, region_vote: bool = True,
                 upper_quantile: float | None = UPPER_QUANTILE, neighbour_spread: bool = True,
                 out_of_sample: bool = True, frame_noise: bool = True):
        if method not in METHODS:
            raise ValueError(f"unknown method {method!r}: choose one of {', '.join(METHODS)}")
        if rank < 1 or window < rank + 1:
            raise ValueError(f"need rank >= 1 and a window longer than rank, got rank={rank}, "
                             f"window={window}")
        if projection_dim < rank:
            raise ValueError(f"projection dimension {projection_dim} is below rank {rank}")
        if not 0.0 < inlier_fraction <= 1.0:
            raise ValueError(f"inlier fraction must be in (0, 1], got {inlier_fraction}")
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
        self.n_blocks = self.grid[0] * self.grid[1]
        self.pixel_block_ = pixel_blocks(self.frame_shape, self.grid)
        self.method = method
        self.rank = int(rank)
        self.window = int(window)
        self.projection_dim = int(projection_dim)
        self.inlier_fraction = float(inlier_fraction)
        self.refit_every = max(1, int(refit_every))
        self.region_vote = bool(region_vote)
        self.light_invariant = bool(light_invariant)
        self.upper_quantile = upper_quantile
        self.neighbour_spread = bool(neighbour_spread)
        self.out_of_sample = bool(out_of_sample)
        self.frame_noise = bool(frame_noise)

        # Frames in float32 halve the memory traffic of the per-frame products; the small
        # matrices (Gram, eigenvectors) stay float64.
        self.frames_ = np.zeros((self.window, self.n_features), np.float32)  # one frame a row
        # The window's residuals and their products are worked out in here at every refit, a
        # chunk of frames at a time (``_window_energies``).
        self._residuals = np.zeros((min(self.window, ENERGY_CHUNK), self.n_features), np.float32)
        self._products = np.zeros_like(self._residuals)
        self.cells_ = np.zeros((self.window, self.n_blocks))   # coarse picture of each frame
        self.norms_ = np.ones(self.window)                     # length of each frame
        # Each frame's mean square per block (light_invariant: the scale its light is read on).
        self.power_ = np.zeros((self.window, self.n_blocks) if light_invariant else (0, 0),
                               np.float32)
        # Out-of-sample block energies: seed frames' against the other half of the seed, stream
        # frames' against the model that scored them. In-sample residuals of a rank-3 fit
        # understate how much a moving texture varies (they are part of what was fitted); the
        # statistics take both (see ``_statistics``).
        self.scored_energies_ = np.zeros((self.window, self.n_blocks))
        self.scored_ = np.zeros(self.window, bool)
        self.gram_ = np.zeros((self.window, self.window))
        self.n_filled_ = 0
        self.joined_ = np.zeros(self.window, np.int64)   # when each slot's frame was learned
        self.n_learned_ = 0
        self.n_pinned_ = 0                                        # slots learn_one keeps
        self.basis_ = np.zeros((self.n_features, 0), np.float32)  # pixel-space, orthonormal
        self.inliers_ = np.zeros(0, int)                          # window rows spanning it
        self.inlier_order_ = np.zeros(0, int)                     # rows, most inlier-like first
        self.background_ = np.zeros(0, bool)      # window rows no block outvoted at the refit
        # Residual statistics of the frames spanning the subspace, refreshed at each refit.
        self.block_history_ = np.zeros((0, self.n_blocks))
        self.in_sample_history_ = np.zeros((0, self.n_blocks))
        self.added_since_refit_ = 0
        self.n_refits_ = 0
        self._stats = None                                        # cached medians and scales
        self._cell_statistics = None   # the window's coarse pictures' median, and how far off
                                       # a block's still agrees with it
        self._unit_pixel = 1.0 / math.sqrt(self.n_features)
        self._channels = self.frame_shape[2] if len(self.frame_shape) == 3 else 1

    @property
    def ready(self) -> bool:
        """The model has a subspace and enough history for its z-scores to mean anything."""
        return self.basis_.shape[1] > 0 and len(self.block_history_) >= MIN_SAMPLES

    # -- river-style API ---------------------------------------------------------------------
    def score_one(self, x: np.ndarray, norm: float | None = None) -> Assessment:
        """Compare ``x`` with the model; ``norm``: the length of ``x`` when an earlier
        assessment of it has it."""
        outside = x - self.basis_ @ (self.basis_.T @ x)
        if norm is None:
            norm = float(np.linalg.norm(x))
        if norm == 0.0:
            return Assessment(0.0, outside, np.zeros(self.n_blocks), 0.0, 0.0)
        energies = self.block_energies(outside, norm, x)
        noise = self.noise_of(x, energies)
        return Assessment(min(1.0, float(np.linalg.norm(outside)) / norm), outside,
                          self.less_noise(energies, noise), brightness_of(x), norm, noise)

    def less_noise(self, energies: np.ndarray, noise: float | np.ndarray,
                   level: np.ndarray | None = None) -> np.ndarray:
        """Block ``energies`` (a frame's, or one frame a row) without their frame's own
        ``noise`` (``noise_of``; one a row): noise adds power, so what comes off a block is
        the noise's excess over the block's usual power (``level``, by default the model's),
        and a block with much more than noise in it keeps nearly all of its energy (never less
        than all of it scaled down by the noise, as a block of noise alone is)."""
        noise = np.asarray(noise, float)
        if not noise.any():
            return energies
        if noise.ndim:
            noise = noise[:, None]
        if level is None:
            level = self._statistics()[0]
        excess = np.expm1(2 * noise) * np.exp(2 * level)
        less = 0.5 * np.log(np.maximum(np.exp(2 * energies) - excess, 1e-300))
        return np.maximum(less, energies - noise)

    def noise_of(self, x: np.ndarray, energies: np.ndarray) -> float:
        """The frame ``x``'s own noise, from its block ``energies``: 0 without
        ``frame_noise`` or before the model is ready."""
        if not (self.frame_noise and self.ready):
            return 0.0
        # ``_frames_noise``'s rule, for one frame in a third of its numpy calls (a frame's
        # path); that one takes a window's rows at once, at a refit.
        excess = energies - self._statistics()[0]
        median, reach = self._cell_statistics
        agree = np.abs(self.coarse_picture(x) - median) < reach
        count = int(np.count_nonzero(agree))
        if count * 2 < self.n_blocks:
            return 0.0
        excess = np.sort(excess[agree])
        middle = 0.5 * (excess[(count - 1) // 2] + excess[count // 2])
        return float(middle) if middle >= LOG_SPREAD_FLOOR else 0.0

    def learn_one(self, x: np.ndarray, slot: int, *, refit: bool = True,
                  energies: np.ndarray | None = None, norm: float | None = None) -> None:
        """``x`` joins the window in ``slot`` (the next free one, ``n_filled_``, or one whose
        frame the policy forgets: ``policy.Forgetting``); the subspace is refitted when
        ``refit_every`` frames have joined (never with ``refit=False``, but for the first
        frame). ``energies``: its block energies against the model that scored it, for the
        statistics (without them, its residual against the subspace it helps span)."""
        if not 0 <= slot <= min(self.n_filled_, self.window - 1):
            raise ValueError(f"slot {slot} is outside the window's {self.n_filled_} frames")
        self.joined_[slot] = self.n_learned_
        self.n_learned_ += 1
        self.frames_[slot] = x
        self.scored_[slot] = energies is not None
        if energies is not None:
            self.scored_energies_[slot] = energies
        self.cells_[slot] = self.coarse_picture(x)
        self.norms_[slot] = max(float(np.linalg.norm(x)) if norm is None else norm, 1e-12)
        if self.light_invariant:
            self.power_[slot] = self._block_means(x[None] * x[None])[0]
        n = max(self.n_filled_, slot + 1)
        inner = self.frames_[:n] @ x.astype(np.float32, copy=False)
        self.gram_[slot, :n] = inner
        self.gram_[:n, slot] = inner
        self.n_filled_ = n
        self.added_since_refit_ += 1
        if (refit and self.added_since_refit_ >= self.refit_every) or self.basis_.shape[1] == 0:
            self.refit()

    def spans_any(self, learned: set[int]) -> bool:
        """Whether a frame learned as one of ``learned`` (its ``n_learned_`` then) is in the
        window among those that span the background: no block outvoted it at the last refit,
        or it joined since (the next refit may keep it)."""
        since_refit, background = self._rows_since_refit_and_background()
        joined = self.joined_[:self.n_filled_]
        return bool(((since_refit | background) & np.isin(joined, list(learned))).any())

    def background_frames(self) -> np.ndarray:
        """The window's frames that span its background: those no block outvoted at the last
        refit (not those learned since), one a row."""
        since_refit, background = self._rows_since_refit_and_background()
        return self.frames_[:self.n_filled_][background & ~since_refit]

    def _rows_since_refit_and_background(self) -> tuple[np.ndarray, np.ndarray]:
        """Which window rows joined since the last refit, and which that refit found
        background (no block outvoted them; its verdict, whatever the row holds now)."""
        n = self.n_filled_
        since_refit = self.joined_[:n] >= self.n_learned_ - self.added_since_refit_
        kept = min(n, len(self.background_))
        background = np.zeros(n, bool)
        background[:kept] = self.background_[:kept]
        return since_refit, background

    def unpin(self) -> None:
        """Let the pinned (seed) frames be replaced as any other: the model streams now."""
        self.n_pinned_ = 0

    def reset(self, frames: np.ndarray, *, pinned: int = 0) -> None:
        """Rebuild the model from ``frames`` alone (one a row): a seed, or a new scene.

        ``pinned``: how many of them stay in the window for good (frames spread over a whole
        video keep the model anchored to it); the others are replaced first.

        Their statistics are their residuals against the subspace they span; the inlier
        scores keep the outlying ones out of that subspace, and the statistics are medians,
        so a minority of event frames among them moves neither.
        """
        frames = np.asarray(frames, np.float32)[-self.window:]
        m = len(frames)
        self.frames_[:m] = frames
        self.cells_[:m] = [self.coarse_picture(x) for x in frames]
        self.norms_[:m] = np.maximum(np.linalg.norm(frames, axis=1), 1e-12)
        if self.light_invariant:
            self.power_[:m] = self._block_means(frames * frames)
        self.gram_[:m, :m] = frames.astype(np.float64) @ frames.T.astype(np.float64)
        self.n_filled_ = m
        self.joined_[:m] = np.arange(m)
        self.n_learned_ = m
        self.n_pinned_ = min(int(pinned), m, self.window - 1)
        self.scored_[:] = False
        self.refit()
        self._score_out_of_sample(m)

    def _score_out_of_sample(self, m: int) -> None:
        """Energies of the first ``m`` window frames, each half against the subspace of the
        other half's background frames (which a rebuild has no earlier model to score with)."""
        background = np.zeros(m, bool)
        background[self.inliers_[self.inliers_ < m]] = True
        halves = np.arange(m) % 2 == 0
        for scored in (halves, ~halves):
            fit = np.flatnonzero(background & ~scored)
            if len(fit) <= self.rank:
                return
            rows = self.frames_[fit].astype(np.float64)
            values, vectors = np.linalg.eigh(rows @ rows.T)
            top = vectors[:, ::-1][:, :self.rank] / np.sqrt(np.maximum(values[::-1][:self.rank],
                                                                          1e-30))
            basis = _orthonormal_rows((top.T @ rows).astype(np.float32)).T
            for slot in np.flatnonzero(scored):
                x = self.frames_[slot]
                outside = x - basis @ (basis.T @ x)
                energies = self.block_energies(outside, np.linalg.norm(x), x)
                self.scored_energies_[slot] = self.less_noise(energies, self.noise_of(x, energies))
                self.scored_[slot] = True
        self._refresh_statistics()

    def coarse_picture(self, x: np.ndarray) -> np.ndarray:
        """Block means of the unit-length frame, in the mean pixel's units."""
        picture = x.reshape(self.frame_shape).astype(np.float32, copy=False)
        if picture.ndim == 3:
            picture = picture.mean(axis=2)
        means = cv2.resize(picture, self.grid, interpolation=cv2.INTER_AREA).ravel()
        return means / max(float(means.mean()), 1e-6)

    # -- scores ------------------------------------------------------------------------------
    def block_energies(self, outside: np.ndarray, norm: float, x: np.ndarray) -> np.ndarray:
        """Log of the root-mean-square of each block of ``outside / norm``: the residual of
        the frame ``x``, of length ``norm``, as a share of the unit-length frame (with
        ``light_invariant``, less its part along the block of ``x``)."""
        outside, x = outside[None], x[None]
        squared = self._block_means(outside * outside)
        if self.light_invariant:
            squared = self._without_light(squared, self._block_means(outside * x),
                                          self._block_means(x * x))
        return self._log_energies(squared, np.array([max(float(norm), 1e-12)]))[0]

    @staticmethod
    def _without_light(squared: np.ndarray, along: np.ndarray, power: np.ndarray) -> np.ndarray:
        """Block mean squares less the least-squares part along each block's own picture
        (``along``: the blocks' mean of residual x picture; ``power``: of picture squared)."""
        return np.maximum(squared - along * along / np.maximum(power, 1e-12), 0.0)

    def _frames_noise(self, energies: np.ndarray, cells: np.ndarray,
                      level: np.ndarray) -> np.ndarray:
        """Each frame's own noise, in log energy (one a row of ``energies``, whose coarse
        pictures are ``cells``): the median excess over ``level`` of the blocks whose coarse
        picture the window's majority agrees with, if they are at least half of them and it
        reaches LOG_SPREAD_FLOOR (else 0)."""
        median, reach = self._cell_statistics
        agree = np.abs(cells - median) < reach
        count = np.count_nonzero(agree, axis=1)
        # The median of each row's agreeing blocks: the others sorted past them as +inf.
        excess = np.sort(np.where(agree, energies - level, np.inf), axis=1)
        rows = np.arange(len(excess))
        middle = 0.5 * (excess[rows, np.maximum(count - 1, 0) // 2] + excess[rows, count // 2])
        # A shift below the floor of any block's spread is within what the statistics already
        # call noise (and half the frames of a clean video show one by chance).
        return np.where((count * 2 >= self.n_blocks) & (middle >= LOG_SPREAD_FLOOR), middle, 0.0)

    def block_z(self, energies: np.ndarray) -> np.ndarray:
        """z-score of every block's log energy (zeros before the model is ready)."""
        if not self.ready:
            return np.zeros(self.n_blocks)
        median, scale = self._statistics()
        return (energies - median) / scale

    def _statistics(self):
        """Per-block median and spread of the background frames' log residual energy."""
        if self._stats is None:
            # The lower of the two levels and the wider of the two spreads: residuals taken as
            # frames were scored carry the model's lag behind a slow drift (a light) in their
            # level, and how much a moving texture really varies in their spread.
            quantile = self.upper_quantile
            level_in, spread_in = robust_statistics(self.in_sample_history_, quantile)
            level_out, spread_out = robust_statistics(self.block_history_, quantile)
            if not self.out_of_sample:
                level_out, spread_out = level_in, spread_in
            spread = np.maximum(spread_in, spread_out)
            # At least the median spread of the block and its eight neighbours: a block's
            # spread is read off fifty-odd frames, and whether a few of them caught a tree's
            # rare gusts is luck; what moves in a block moves in its neighbours too.
            if self.neighbour_spread:
                neighbourhood = cv2.medianBlur(
                    spread.reshape(self.grid[::-1]).astype(np.float32), 3)
                spread = np.maximum(spread, neighbourhood.ravel())
            self._stats = (np.minimum(level_in, level_out), spread)
        return self._stats

    # -- the subspace ------------------------------------------------------------------------
    def refit(self) -> None:
        """Recompute the background subspace and its statistics from the window.

        1. Frames whose coarse picture the window's majority disagrees with in two neighbouring
           blocks cannot be inliers: a cluster of event frames (someone standing still) looks
           like inliers to SNCP, but in their own blocks they are still a minority.
        2. SNCP (or ANCP, CoP) ranks the other frames; the most inlier-like
           ``inlier_fraction`` of the window span a first subspace.
        3. Every window frame is scored against it, block by block; the frames that no two
           neighbouring blocks outvote span the final subspace, all of them (so it covers the
           background's range, light over the minute, not one stretch of it).
        The statistics come from the frames no block outvotes against the final subspace.
        ``method='pca'`` and ``region_vote=False`` skip steps 1 and 3.
        """
        self.added_since_refit_ = 0
        n = self.n_filled_
        if n == 0:
            return
        eigenvalues, eigenvectors = np.linalg.eigh(self.gram_[:n, :n])
        eigenvalues, eigenvectors = eigenvalues[::-1], eigenvectors[:, ::-1]
        if eigenvalues[0] <= 0.0:
            return
        k = int(np.count_nonzero(eigenvalues > eigenvalues[0] * EIGENVALUE_RTOL))
        k = min(k, self.projection_dim)
        top_values, top_vectors = eigenvalues[:k], eigenvectors[:, :k]
        # Coordinates of the window's frames in its top-k left singular basis (k x n).
        projected = np.sqrt(top_values)[:, None] * top_vectors.T
        normalised = projected / np.maximum(np.linalg.norm(projected, axis=0), 1e-300)
        vote = self.region_vote and self.method != "pca"
        candidates = np.arange(n)
        cell_statistics = robust_statistics(self.cells_[:n], floor=CELL_SPREAD_FLOOR)
        # A block's coarse picture agrees with the window's within VOTE_Z of its spread.
        self._cell_statistics = (cell_statistics[0], VOTE_Z * cell_statistics[1])
        if vote:
            agree = self._majority_agrees(self.cells_[:n], cell_statistics, both_ways=True)
            if agree.sum() > self.rank + 1:
                candidates = np.flatnonzero(agree)
        self.inliers_ = candidates[self._inlier_columns(normalised[:, candidates])]
        self._span(normalised[:, self.inliers_], top_values, top_vectors)
        energies = self._window_energies_less_noise()
        agree = self._majority_agrees(energies)
        if vote and not agree.all() and agree.sum() > self.rank + 1:
            self.inliers_ = np.flatnonzero(agree)
            self._span(normalised[:, self.inliers_], top_values, top_vectors)
            energies = self._window_energies_less_noise()
            agree = self._majority_agrees(energies)
        # The statistics come from the frames that no two neighbouring blocks outvote against
        # the final subspace (with every method: the yardstick is robust even where the
        # subspace, with 'pca', is not).
        self.background_ = agree if agree.sum() > self.rank + 1 else np.ones(n, bool)
        self.n_refits_ += 1
        self._in_sample_energies = energies
        self._refresh_statistics()

    def _span(self, chosen: np.ndarray, top_values: np.ndarray, top_vectors: np.ndarray) -> None:
        """The pixel basis of the top ``rank`` left singular vectors of the chosen columns."""
        k = chosen.shape[0]
        # Top left singular vectors of the chosen columns, from their k x k Gram matrix.
        _, left = np.linalg.eigh(chosen @ chosen.T)
        basis_in_projection = left[:, ::-1][:, :min(self.rank, k, chosen.shape[1])]
        # Back to pixels without forming the k pixel-sized singular vectors:
        # u = X^T w / sqrt(lambda) for each eigenpair (w, lambda) of X X^T.
        coefficients = (top_vectors / np.sqrt(top_values)) @ basis_in_projection
        # One matrix-vector product per basis vector: BLAS reads the window once for each,
        # where one (pixels x n) @ (n x rank) product runs two to three times slower.
        rows = [column @ self.frames_[:self.n_filled_]
                for column in coefficients.T.astype(np.float32)]
        self.basis_ = _orthonormal_rows(np.stack(rows)).T

    def _majority_agrees(self, features: np.ndarray, statistics=None, *,
                         both_ways: bool = False) -> np.ndarray:
        """Which rows no two neighbouring blocks' majority disagrees with: z below VOTE_Z
        against ``statistics`` (the rows' own median and spread if None; ``both_ways``: |z|,
        for pictures; residual energies only disagree upwards)."""
        median, scale = robust_statistics(features) if statistics is None else statistics
        z = (features - median) / scale
        if both_ways:
            z = np.abs(z)
        return neighbour_max(z.reshape(len(z), *self.grid[::-1])) < VOTE_Z

    def _refresh_statistics(self) -> None:
        """Statistics of the background frames (seed frames: cross-fitted)."""
        energies = np.where(self.scored_[:self.n_filled_, None],
                            self.scored_energies_[:self.n_filled_], self._in_sample_energies)
        self.block_history_ = energies[self.background_]
        self.in_sample_history_ = self._in_sample_energies[self.background_]
        self._stats = None

    def _window_energies_less_noise(self) -> np.ndarray:
        """The window's block energies, each frame's own noise taken off (``frame_noise``;
        its blocks' usual energy: their median over the window)."""
        energies = self._window_energies()
        if self.frame_noise:
            n = self.n_filled_
            level = np.median(energies, axis=0)
            energies = self.less_noise(
                energies, self._frames_noise(energies, self.cells_[:n], level), level)
        return energies

    def _window_energies(self) -> np.ndarray:
        """Block log energies of every frame of the window against the current subspace."""
        n = self.n_filled_
        coordinates = self.frames_[:n] @ self.basis_
        squared = np.empty((n, self.n_blocks), np.float32)
        along = np.empty_like(squared) if self.light_invariant else None
        # A chunk of frames at a time: its residuals and their products stay in the core's
        # cache through the five passes over them.
        for first in range(0, n, ENERGY_CHUNK):
            rows = slice(first, min(n, first + ENERGY_CHUNK))
            frames = self.frames_[rows]
            outside = self._residuals[:len(frames)]
            np.matmul(coordinates[rows], self.basis_.T, out=outside)
            np.subtract(frames, outside, out=outside)
            if self.light_invariant:
                along[rows] = self._block_means(
                    np.multiply(outside, frames, out=self._products[:len(frames)]))
            np.multiply(outside, outside, out=outside)
            squared[rows] = self._block_means(outside)
        if self.light_invariant:
            squared = self._without_light(squared, along, self.power_[:n])
        return self._log_energies(squared, self.norms_[:n])

    def _log_energies(self, squared_means: np.ndarray, norms: np.ndarray) -> np.ndarray:
        """Block energies from the blocks' mean squared residual of frames of length
        ``norms``."""
        means = squared_means / (norms[:, None] ** 2)
        # The floor is in grey levels as well as relative: sensor noise does not dim with the
        # light, so a relative floor alone would score a dimmer frame's noise as a change. It
        # holds for each channel: a pixel's squares are summed over its channels.
        floor = np.maximum(ENERGY_FLOOR * self._unit_pixel, NOISE_FLOOR / norms) ** 2
        return 0.5 * np.log(np.maximum(means, self._channels * floor[:, None]))

    def _block_means(self, values: np.ndarray) -> np.ndarray:
        """The mean of every block of every row (a frame's pixels; channels summed)."""
        values = values.reshape(len(values), *self.frame_shape)
        if values.ndim == 4:
            values = values.sum(axis=3)
        count, height, width = values.shape
        columns, rows = self.grid
        if height % rows == 0 and width % columns == 0:
            # Whole-pixel blocks: the frames stacked as one tall picture keep every block
            # inside its frame, and OpenCV's integer-ratio area resize is three to five times
            # its general one (same numbers).
            return cv2.resize(values.reshape(count * height, width), (columns, count * rows),
                              interpolation=cv2.INTER_AREA).reshape(count, -1)
        # Otherwise four frames as the channels of one picture: the most the general area
        # resize averages in one pass, a quarter of the calls of one a frame.
        means = []
        for first in range(0, count, 4):
            stack = np.ascontiguousarray(np.moveaxis(values[first:first + 4], 0, -1))
            block = cv2.resize(stack, self.grid, interpolation=cv2.INTER_AREA)
            means.append(block.reshape(-1, stack.shape[-1]).T)  # (one channel: 2-d, same)
        return np.concatenate(means)

    def _inlier_columns(self, normalised: np.ndarray) -> np.ndarray:
        n = normalised.shape[1]
        if self.method == "pca" or n <= self.rank:
            self.inlier_order_ = np.arange(n)
            return self.inlier_order_
        if self.method == "cop":
            scores = coherence_values(normalised)
        else:
            V, singular_values = right_singular_vectors(normalised, with_values=True)
            scores = demote_unexplained(sncp_from_singular_vectors(V) if self.method == "sncp"
                                        else ancp_from_singular_vectors(V), V, singular_values)
        self.inlier_order_ = np.argsort(-scores, kind="stable")
        n_inliers = max(self.rank + 1, math.ceil(self.inlier_fraction * n))
        return np.sort(self.inlier_order_[:n_inliers])


def pixel_blocks(frame_shape: tuple[int, ...], grid: tuple[int, int]) -> np.ndarray:
    """The block of every pixel (a height x width array of block numbers, row-major over the
    grid of ``grid`` = (columns, rows)), as the grid cuts the frame."""
    numbers = np.arange(grid[0] * grid[1], dtype=np.float32).reshape(grid[1], grid[0])
    return cv2.resize(numbers, (frame_shape[1], frame_shape[0]),
                      interpolation=cv2.INTER_NEAREST).astype(np.int32)


def robust_statistics(energies: np.ndarray, upper_quantile: float | None = None,
                      floor: float | None = None):
    """Per-column median and spread: the MAD's sigma, or with ``upper_quantile`` the larger of
    it and the quantile's distance from the median in sigmas (at least ``floor``, by default
    LOG_SPREAD_FLOOR)."""
    median = np.median(energies, axis=0)
    scale = MAD_TO_SIGMA * np.median(np.abs(energies - median), axis=0)
    if upper_quantile is not None:
        z = float(NormalDist().inv_cdf(upper_quantile))
        scale = np.maximum(scale, (np.quantile(energies, upper_quantile, axis=0) - median) / z)
    return median, np.maximum(scale, LOG_SPREAD_FLOOR if floor is None else floor)


def neighbour_max(z: np.ndarray):
    """The largest z-score that two neighbouring blocks (side by side or one above the other)
    both reach: anything worth an event covers two blocks, where a swaying branch or a ripple
    lights up one (by as much as a person does: z of 15 and more, every few seconds).

    ``z``: a (rows, columns) grid, or a stack of them (one value per grid, as an array).
    """
    if z.ndim == 2:
        return _neighbour_max_of_one(z)
    grids = z.reshape(-1, *z.shape[-2:])
    best = np.full(len(grids), -np.inf)
    if grids.shape[2] > 1:
        best = np.maximum(best, np.minimum(grids[:, :, :-1], grids[:, :, 1:]).max(axis=(1, 2)))
    if grids.shape[1] > 1:
        best = np.maximum(best, np.minimum(grids[:, :-1], grids[:, 1:]).max(axis=(1, 2)))
    # A grid of one block has no neighbours: its block alone.
    best = np.where(np.isfinite(best), best, grids.max(axis=(1, 2)))
    return best


def _neighbour_max_of_one(grid: np.ndarray) -> float:
    """``neighbour_max`` of one grid: the same number without the stacked path's arrays (a
    frame's score takes it three times)."""
    best = -np.inf
    if grid.shape[1] > 1:
        best = np.maximum(best, np.minimum(grid[:, :-1], grid[:, 1:]).max())
    if grid.shape[0] > 1:
        best = np.maximum(best, np.minimum(grid[:-1], grid[1:]).max())
    return float(best if np.isfinite(best) else grid.max())


def _orthonormal_rows(rows: np.ndarray) -> np.ndarray:
    """Orthonormal rows spanning what ``rows`` span, from their small Gram matrix.

    The basis vectors come out of the eigenpairs nominally orthonormal; round-off in the small
    eigenvalues leaves them slightly skew, and a window spanning fewer dimensions than the rank
    gives directions that collapse to (numerically) nothing. Those are dropped, not blown up.
    """
    values, vectors = np.linalg.eigh((rows @ rows.T).astype(np.float64))
    kept = values > COLLAPSED_DIRECTION * max(float(values.max(initial=0.0)), 1e-30)
    return (vectors[:, kept] / np.sqrt(values[kept])).T.astype(np.float32) @ rows
