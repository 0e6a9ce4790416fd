"""Streaming detector: a robust background subspace (``background.py``) run by a policy
(``policy.py``).

Every frame is scored as it arrives against the background model; the score is the largest
z-score that two neighbouring blocks of its residual reach, or that two neighbouring blocks'
motion reaches against how they have moved lately (``motion.py``), or the brightness-step
score, whichever is larger. What the model learns is the policy's: frames spread over all the
time seen (densely at first, then one in every ``stride``) whatever their score, so the window
spans a minute and the robust steps of the model (a per-block vote and SNCP), not a gate,
decide which of its frames span the background (the frames it learned while finding them
unusual hold at most a third of the window, below the vote's breakdown point). On a
file, ``seed`` can build the model first from frames spread over the whole video (the paper's
batch setting), or ``seed_reference`` can have such a seeded twin judge the warm-up's frames
(and an event in view since, to its end) alongside the model, which is learning them, and take
over from the model if it learned a presence whose leaving it would score as a ghost. Blocks
whose change has lasted and stopped moving become background on their own; a change of the
whole scene (a light) rebuilds the model from the recent frames. After a lasting darkness
(blank frames), darkness is the background: a picture is an event until it stands still,
unless the model knows it (the light came back on the scene it had). A switched light stays
an event until the camera's exposure has settled after it.
"""

from __future__ import annotations

import copy
import statistics
from dataclasses import replace

import numpy as np

from ..preprocess import BLANK, CORRUPT, FROZEN, OK, REPEAT, frame_health
from .background import METHODS, Assessment, SubspaceBackground, brightness_of, neighbour_max
from .base import FrameScore
from .motion import MotionEvidence
from .policy import SCENE_CHANGE_SHARE, DarkScene, LearningSchedule, RecentFrames, StaticRegions

WARMUP = "warmup"
__all__ = ["METHODS", "SubspaceWindowDetector", "WARMUP"]
# Sudden global brightness change: the log of the mean pixel against the median of the recent
# frames', in units of this scale (a 10% step scores 1; the lights going off score 10 or more).
# Against recent frames, not the model's: slow drift never scores, a switched light scores
# until it is the recent frames' median (half of ``static_after``).
BRIGHTNESS_SCALE = 0.1
# With light-invariant blocks the brightness step is the only sign of a light switched, so it
# is more sensitive (a 7% step of the overall light scores 1).
LIGHT_INVARIANT_BRIGHTNESS_SCALE = 0.07
MIN_RECENT = 5
# After a light switched (a brightness step, or darkness), the camera's exposure swings for a
# second or so; the switch lasts until the brightness moves by less than this (log: 2%) over
# ``settle_frames``. Until then a frame scores at least the low threshold (more as the motion
# grows, as a brightness step does), so the one event goes on while the light settles: a switch
# is one event through the exposure's overshoot, not two.
SETTLED_MOTION = 0.02


class SubspaceWindowDetector:
    """Score frames against the robust subspace of a long window of frames.

    Parameters
    ----------
    frame_shape : (height, width) or (height, width, channels) of the frames, whose vectors
        (C order) are what the detector is fed
    method : 'sncp', 'ancp', 'cop' (inlier scores that pick the window's background frames)
        or 'pca' (plain PCA of the window, the non-robust baseline)
    rank : dimension of the background subspace (3 in the paper's video experiment)
    window : number of frames the model holds
    projection_dim : the window is projected onto its top ``projection_dim`` left singular
        vectors before scoring (50 in the paper)
    inlier_fraction : share of the window, by inlier score, that spans the subspace
    stride : once ``window * stride`` frames have passed, one frame in this many is learned
        (before, as many as ``window * sqrt(frames seen / (window * stride))``: see
        ``policy.LearningSchedule``)
    warmup : frames at the start (unseeded) or after a rebuild during which the model is
        warming up (status 'warmup': it learns what is in view then)
    static_after : frames a block must stay unusual and unchanging before its picture becomes
        background (None: never)
    hot : block z-score from which a block counts as unusual (the segmenter's lower threshold)
    refit_every : frames learned between two refits of the subspace
    blocks : the residual image is scored in a grid this many blocks across its long side
    watched : which features of the frame vector are watched (``Preprocessor.watched``: the
        region and masks zero the rest); a block with no watched pixel never scores above 0
    light_invariant : a block's residual along its own picture (its light scaled: shadows,
        clouds, exposure) does not count (``background.py``)
    settle_frames : frames over which the brightness must hold (``SETTLED_MOTION``) for a
        switched light to have settled
    """

    def __init__(self, frame_shape: tuple[int, ...], *, method: str = "sncp", rank: int = 3,
                 window: int = 100, projection_dim: int = 50, inlier_fraction: float = 0.3,
                 stride: int = 10, warmup: int = 25, static_after: int | None = 125,
                 hot: float = 4.5, refit_every: int = 1, blocks: int = 16,
                 watched: np.ndarray | None = None, light_invariant: bool = True,
                 settle_frames: int = 12, without: frozenset[str] = frozenset()):
        if static_after is not None and static_after < 1:
            raise ValueError(f"static_after must be at least 1 frame, got {static_after}")
        self.model = SubspaceBackground(
            frame_shape, method=method, rank=rank, window=window, projection_dim=projection_dim,
            inlier_fraction=inlier_fraction, refit_every=refit_every, blocks=blocks,
            light_invariant=light_invariant, region_vote="region_vote" not in without,
            without=without)
        self.without = frozenset(without)
        self.brightness_scale = (LIGHT_INVARIANT_BRIGHTNESS_SCALE if light_invariant
                                 else BRIGHTNESS_SCALE)
        self.frame_shape = self.model.frame_shape
        self.hot = float(hot)
        # Blocks with a watched pixel. The zeros outside a region are explained exactly, but the
        # noise floor scales with the frame's light, so a dimmed frame could still score there.
        self.watched_blocks = None                     # None: every block is watched
        if watched is not None:
            watched_pixels = np.asarray(watched, bool).reshape(self.frame_shape)
            if watched_pixels.ndim == 3:
                watched_pixels = watched_pixels.any(axis=2)
            self.watched_blocks = np.bincount(self.model.pixel_block_[watched_pixels].ravel(),
                                              minlength=self.model.n_blocks) > 0
        self.static_after = static_after
        self.warmup = max(1, int(warmup))
        self.schedule = LearningSchedule(stride, self.warmup, window)
        self.regions = StaticRegions(self.frame_shape, self.model.grid,
                                     static_after=static_after or 1, hot=hot)
        self.settle_frames = max(1, int(settle_frames))
        # The recent frames are what a rebuild starts from, and their brightness tells how
        # fast it still moves (``settle_frames`` back).
        self.recent = RecentFrames(max(min(window, max(static_after or 0, MIN_RECENT)),
                                       self.settle_frames))
        # A picture coming out of a lasting darkness settles over a warm-up's length.
        self.dark = None if static_after is None or "darkness" in without else DarkScene(
            self.frame_shape, self.model.grid, static_after=static_after, settle_after=self.warmup)
        # What moves against how each block has moved over the last ``static_after`` frames
        # (``motion.py``), its statistics refreshed every ``settle_frames``.
        self.motion = None if "motion" in self.without else MotionEvidence(
            self.frame_shape, self.model.grid, history=static_after or self.warmup,
            refresh=self.settle_frames)
        self.seeded_ = 0                                  # frames the model was seeded with
        self.start_reference_: SubspaceWindowDetector | None = None  # see ``seed_reference``
        self.start_reference_frames_ = 0                  # frames that twin was seeded with
        self.start_reference_adopted_: int | None = None  # frame the twin took over at
        self._alone_unusual_for = 0      # frames in a row only the model, not the twin, flagged
        self._settling = False                          # a switched light has not settled yet
        self._previous_verdict: FrameScore | None = None   # what a repeat of it is given

    # -- for the pipeline --------------------------------------------------------------------
    def seed(self, frames) -> int:
        """Build the model from frames spread over the video before the first is scored.

        The inlier scores pick the background among them, so an event in view from the first
        frame does not become the background. They stay in the window for good (half of it at
        most), so the model never forgets the video's usual look. If most of them are blank,
        darkness is that look instead. Returns how many were used.
        """
        by_health = {OK: [], BLANK: []}
        for x in frames:
            by_health.setdefault(frame_health(x, None), []).append(x)
        frames, dark = by_health[OK], by_health[BLANK]
        if self.dark is not None and len(dark) > len(frames):
            # Darkness is the video's usual look (a room lit only while someone is in it): a
            # picture is an event until it stands still, as after a lasting darkness, and the
            # model knows no lit scene to end the darkness at once.
            self.dark.darken(statistics.median(brightness_of(x) for x in dark))
            self.seeded_ = len(dark)
            return len(dark)
        if len(frames) <= self.model.rank:
            return 0
        frames = frames[:self.model.window]
        self.model.reset(np.stack(frames), pinned=min(len(frames), self.model.window // 2))
        self.schedule.restart(len(frames))
        self.seeded_ = len(frames)
        return len(frames)

    def seed_reference(self, frames) -> int:
        """Have the warm-up's frames judged against frames spread over the whole video too.

        The model learns its warm-up's frames densely, so on its own it cannot tell what is in
        view then (a person there from the first frame) from the scene. A twin of this
        detector, seeded from ``frames`` (``seed``: the inlier scores pick the background among
        them), scores those frames too, and each scores the larger of the two verdicts. The
        twin judges what moves: a difference from the file's look that stands still from the
        start (a door left open, a parked car) becomes its background in ``settle_frames``.
        After the warm-up, ``_hand_over`` decides when the twin goes. Call this before the
        first frame. Returns how many frames seeded the twin.
        """
        if self.schedule.elapsed_ or self.seeded_:
            raise ValueError("seed_reference goes before the first frame, on an unseeded model")
        self.start_reference_ = None           # a twin is of this detector alone, no twin's
        twin = copy.deepcopy(self)
        twin.motion = None                     # what moves is judged once, by this detector
        twin.regions.static_after = self.settle_frames
        used = twin.seed(frames)
        self.start_reference_ = twin if used else None
        self.start_reference_frames_ = used
        return used

    def process_frame(self, index: int, time_s: float, x: np.ndarray | None,
                      health: str = OK, *, explain: bool | float = False) -> FrameScore:
        """Score one frame, then let the policy decide whether the model learns it.

        ``explain``: True, or a score above which to do it, adds the residual image and the
        block z-scores to the verdict (for heat maps and boxes; no extra model is involved).
        """
        if health in (BLANK, CORRUPT):
            if health == BLANK:
                # The light went out (or the camera glitched): the next picture may be a new
                # light, which settles.
                self._settling = True
                if self.dark is not None:
                    self.dark.blank(brightness_of(x))
            if self.motion is not None:
                self.motion.forget_picture()
            # No picture to score: reported through the status, never as NaN or an event.
            return FrameScore(index, time_s, 0.0, 0.0, health, False)
        if health in (REPEAT, FROZEN) and self._previous_verdict is not None:
            # The picture of the frame before, again (a stalled source, or a still scene coded
            # as a repeat): its verdict, and nothing to learn, since a column repeated in the
            # window splits its leverage and looks more inlier-like than it is.
            return replace(self._previous_verdict, index=index, time_s=time_s,
                           admitted=False, absorbed=False,
                           status=FROZEN if health == FROZEN else self._previous_verdict.status)
        model = self.model
        rebuilt = False
        motion_z = None
        if self.motion is not None:
            motion_z = self.motion.score_one(x)
            self.motion.learn_one(x)
            if motion_z is not None:
                motion_z = self._only_watched(motion_z)
        if self.dark is not None:
            if self.dark.lit(x):
                # The picture that came out of the dark has stood still: it is the background.
                recent = list(self.recent.frames)
                settled = recent[max(0, len(recent) + 1 - self.warmup):]
                self._rebuild(settled + [x])
                rebuilt = True
            elif self.dark.active_ and not self._known_scene(x):
                return self._score_against_darkness(index, time_s, x, explain)
        assessment = model.score_one(x)
        warming_up = not model.ready or self.schedule.warming_up
        z = self._block_z(assessment.block_energies)
        residual_image = assessment.residual_image
        brightness_score = (0.0 if "brightness_step" in self.without
                            else self._brightness_step(assessment.brightness))
        if not warming_up and self.static_after is not None:
            z, residual_image, absorbed = self._absorb_static(x, z, assessment)
            rebuilt |= absorbed
            if absorbed:
                assessment = model.score_one(x, norm=assessment.norm)
                z = self._block_z(assessment.block_energies)
                residual_image = assessment.residual_image
        self.recent.add(x, assessment.brightness)
        score = model_score = 0.0
        if model.ready:
            model_score = max(neighbour_max(z.reshape(model.grid[::-1])), brightness_score)
            score = model_score
            if motion_z is not None:
                score = max(score, neighbour_max(motion_z.reshape(model.grid[::-1])))
            if warming_up and "warmup_damping" not in self.without:
                # Scored from the first frames, so that someone in view from the start is found;
                # but statistics of a second's frames have not seen a tree's gusts yet, so the
                # scores count for the share of the warm-up seen.
                score *= self.schedule.elapsed_ / self.warmup
        learned = self.schedule.should_learn()
        if learned:
            # Unusual to the model itself (what its window holds is its business, not what
            # moves: a busy lane is usual there, and its cars still flagged by their motion).
            model.learn_one(x, energies=None if warming_up else assessment.block_energies,
                            norm=assessment.norm,
                            unusual=not warming_up and model_score >= self.hot)
        residual = assessment.residual
        explanation = {}
        if model.ready and (explain is True or (explain is not False and score >= explain)):
            blocks = z if motion_z is None else np.maximum(z, motion_z)
            explanation = {"residual_image": residual_image.reshape(self.frame_shape),
                           "block_scores": blocks.reshape(model.grid[::-1])}
        if self.start_reference_ is not None:
            judged = self.start_reference_.process_frame(index, time_s, x, health,
                                                         explain=explain)
            if judged.score > score:
                residual, score = judged.residual, judged.score
                explanation = {} if judged.block_scores is None else {
                    "residual_image": judged.residual_image, "block_scores": judged.block_scores}
            if not warming_up:
                self._hand_over(index, judged.score, z)
        self._previous_verdict = FrameScore(index, time_s, residual, score,
                                            WARMUP if warming_up else OK, learned, rebuilt,
                                            **explanation)
        return self._previous_verdict

    # -- the policy's decisions --------------------------------------------------------------
    def _brightness_step(self, brightness: float) -> float:
        """How far the frame's brightness stepped from the recent frames', or, while a
        switched light settles, how fast it still moves (see ``SETTLED_MOTION``)."""
        recent = self.recent.brightness
        if len(recent) < MIN_RECENT:
            return 0.0
        # statistics.median: a tenth of np.median's time on a hundred floats, every frame.
        step = abs(brightness - statistics.median(recent)) / self.brightness_scale
        self._settling |= step >= self.hot
        if (self._settling and "light_settling" not in self.without
                and len(recent) >= self.settle_frames):
            motion = abs(brightness - recent[-self.settle_frames])
            if motion < SETTLED_MOTION:
                self._settling = False
            else:
                # The low threshold where the light counts as settled, rising above it as
                # a brightness step does.
                step = max(step, self.hot + (motion - SETTLED_MOTION) / self.brightness_scale)
        return step

    def _absorb_static(self, x: np.ndarray, z: np.ndarray, assessment: Assessment):
        model = self.model
        norm = max(assessment.norm, 1e-12)
        z, residual_image = self.regions.update(
            x, z, assessment.residual_image,
            lambda image: self._block_z(model.block_energies(image, norm, x)))
        # Unusual blocks not absorbed: something in the scene still moves.
        moving = np.where(self.regions.absorbed_, 0.0, z).reshape(model.grid[::-1])
        if (self.regions.absorbed_share >= SCENE_CHANGE_SHARE
                and neighbour_max(moving) < self.hot
                and "scene_rebuild" not in self.without):
            # The whole scene changed and stayed so (a light switched and left on, most blocks
            # static at once), and nothing in it moves: rebuild from the recent frames, which
            # would otherwise hold whoever is still moving about as part of the new scene.
            self._rebuild(list(self.recent.frames))
            return z, residual_image, True
        return z, residual_image, False

    def _block_z(self, energies: np.ndarray) -> np.ndarray:
        """The model's block z-scores, never above 0 in a block nobody watches."""
        return self._only_watched(self.model.block_z(energies))

    def _only_watched(self, z: np.ndarray) -> np.ndarray:
        """Block z-scores never above 0 in a block nobody watches."""
        if self.watched_blocks is None:
            return z
        return np.where(self.watched_blocks, z, np.minimum(z, 0.0))

    def _hand_over(self, index: int, twin_score: float, z: np.ndarray) -> None:
        """After the warm-up: the start's twin stays while it sees an event (one in view since
        the warm-up, which the model learned and would not see end); it takes over when the
        model alone finds the frame unusual, where the picture has stood still for
        ``settle_frames`` (the empty scene where the warm-up learned someone: a ghost), or, in
        a scene that never stands still (a curtain, an escalator), once the model alone has
        found every frame unusual for ``static_after``, the time a lasting change takes to be
        background anyway; it goes when both find the frame usual, and at the latest once the
        window's span has passed since the warm-up (the window has turned over)."""
        twin = self.start_reference_
        if self.schedule.elapsed_ >= self.warmup + self.schedule.span:
            self.start_reference_ = None
            return
        if twin_score >= self.hot:
            self._alone_unusual_for = 0
            return
        unusual = z >= self.hot
        if not unusual.any():
            self.start_reference_ = None
            return
        self._alone_unusual_for += 1
        if ((self.regions.still_for_[unusual] >= self.settle_frames).all()
                or (self.static_after is not None
                    and self._alone_unusual_for >= self.static_after)):
            # Become the twin (a copy of this detector, state and all): its window of frames
            # from the whole file, unpinned, and those it learned since replaces the model's.
            kept = (self.seeded_, self.start_reference_frames_, self.motion)
            vars(self).update(vars(twin))
            self.seeded_, self.start_reference_frames_, self.motion = kept
            self.start_reference_adopted_ = index
            self.model.unpin()
            self.regions.static_after = self.static_after or 1
            self.start_reference_ = None

    def _rebuild(self, frames: list[np.ndarray]) -> None:
        """The model starts again from ``frames`` alone: a new scene."""
        self.model.reset(np.stack(frames))
        self.start_reference_ = None           # a new scene: the file's look says nothing of it
        self.regions.clear()
        self.schedule.restart(len(frames))

    def _known_scene(self, x: np.ndarray) -> bool:
        """Whether the model explains the picture that came out of the dark (the light came
        back on the scene it knew), which ends the darkness at once."""
        if not self.model.ready:
            return False
        z = self._block_z(self.model.score_one(x).block_energies)
        if neighbour_max(z.reshape(self.model.grid[::-1])) >= self.hot:
            return False
        self.dark.leave()
        return True

    def _score_against_darkness(self, index: int, time_s: float, x: np.ndarray,
                                explain: bool | float) -> FrameScore:
        """A picture while darkness is the background: as unusual as it is bright (or as its
        brightness stepped against the recent frames), and not learned until it settles."""
        brightness = brightness_of(x)
        score = max(abs(brightness - self.dark.dark_brightness_) / self.brightness_scale,
                    self._brightness_step(brightness))
        self.recent.add(x, brightness)
        explanation = {}
        if explain is True or (explain is not False and score >= explain):
            # Against darkness, the whole picture is what is unusual.
            explanation = {"residual_image": x.reshape(self.frame_shape).astype(np.float32),
                           "block_scores": np.full(self.model.grid[::-1], score)}
        self._previous_verdict = FrameScore(index, time_s, 1.0, score, OK, False, **explanation)
        return self._previous_verdict

    @property
    def absorbed_blocks(self) -> np.ndarray:
        """Which blocks (rows x cols) score against their own absorbed picture now."""
        return self.regions.absorbed_.reshape(self.model.grid[::-1])
