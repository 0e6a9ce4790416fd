"""Streaming detector: a robust background subspace (``background.py``) run by a policy
(``policy.py``), with motion evidence (``motion.py``) beside it.

Every frame is scored as it arrives against the background model; the score is the largest
z-score that two neighbouring blocks of its residual reach, or that two neighbouring blocks'
motion reaches against how they have moved lately, or the brightness-step score, whichever is
larger. What the model learns is the policy's: frames spread over all the time seen (densely at
first, then one in every ``stride``) whatever their score, so the window spans a minute and the
robust steps of the model (a per-block vote and SNCP), not a gate, decide which of its frames
span the background (the frames it learned while finding them unusual hold at most a third of
the window, below the vote's breakdown point).

A ``SceneJudge`` is one model and the policy that runs it: darkness, the light switch, static
regions, the learning schedule. The detector holds one, the motion evidence, the verdict a
frozen picture keeps (``FrozenPicture``), and on a file a ``StartReference``: a second judge
seeded from frames spread over the whole file (``seed_reference``), which judges the warm-up
alongside the model and takes over if the model learned a presence whose leaving it would
score as a ghost. ``seed`` instead builds the model itself from such frames first (the
paper's batch setting).

Every time is in frames here; ``from_settings`` is the one place they are derived from the
settings' seconds and the frame rate.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

from ..preprocess import frame_health
from ..status import BLANK, CORRUPT, FROZEN, OK, WARMUP
from .background import (MAX_AGE_IN_WINDOWS, METHODS, Assessment, SubspaceBackground,
                         brightness_of, neighbour_max)
from .base import FrameScore
from .motion import MotionEvidence
from .policy import (BRIGHTNESS_SCALE, LIGHT_INVARIANT_BRIGHTNESS_SCALE, MIN_RECENT,
                     SCENE_CHANGE_SHARE, DarkScene, LearningSchedule, LightSwitch, RecentFrames,
                     FrozenPicture, StartReference, StaticRegions)

if TYPE_CHECKING:
    from ..settings import Settings

__all__ = ["METHODS", "SubspaceWindowDetector", "frame_parameters"]
# The model learns every frame of its first three seconds (unseeded: a live source), then one
# frame in every stride; fewer give statistics that the next gust of wind overturns.
WARMUP_SECONDS = 3.0
# A switched light has settled when the brightness held for this long (``SETTLED_MOTION``).
SETTLE_SECONDS = 0.5


def frame_parameters(settings: "Settings", fps: float, method: str | None = None) -> dict:
    """The detector's parameters from ``settings`` at ``fps``: every time in frames."""
    span = max(settings.window, settings.frames("background_span", fps))
    return dict(
        method=method or settings.method, rank=settings.rank, window=settings.window,
        projection_dim=settings.projection_dim, inlier_fraction=settings.inlier_fraction,
        stride=round(span / settings.window), warmup=max(1, round(fps * WARMUP_SECONDS)),
        static_after=_at_least_one(settings.frames("absorb_after", fps)),
        hot=settings.threshold_low,
        refit_every=settings.refit_every, blocks=settings.blocks,
        light_invariant=settings.light_invariant, settle_frames=round(fps * SETTLE_SECONDS),
        without=settings.mechanisms_off())


def _at_least_one(frames: int | None) -> int | None:
    """A time shorter than a frame at this rate (0.01 s at 25 fps) is one frame."""
    return None if frames is None else max(1, frames)


@dataclass
class _Look:
    """The model's view of a frame: its assessment, and the block z-scores and residual image
    the verdict uses (the assessment's, or patched by the policy)."""

    assessment: Assessment
    z: np.ndarray
    residual_image: np.ndarray


class SceneJudge:
    """One background model and the policy that runs it: what it learns (``LearningSchedule``),
    which lasting changes become background (``StaticRegions``, a rebuild when the whole scene
    changed), darkness as the background (``DarkScene``) and the light switch
    (``LightSwitch``). Parameters as ``SubspaceWindowDetector``'s."""

    def __init__(self, frame_shape: tuple[int, ...], *, method: str, rank: int, window: int,
                 projection_dim: int, inlier_fraction: float, stride: int, warmup: int,
                 static_after: int | None, hot: float, refit_every: int, blocks: int,
                 light_invariant: bool, settle_frames: int,
                 watched: np.ndarray | None = None, without: frozenset[str] = frozenset()):
        if static_after is not None and static_after < 1:
            raise ValueError(f"static_after must be at least 1 frame, got {static_after}")
        self.without = frozenset(without)
        self.model = SubspaceBackground(
            frame_shape, method=method, rank=rank, window=window, projection_dim=projection_dim,
            inlier_fraction=inlier_fraction, refit_every=refit_every, blocks=blocks,
            light_invariant=light_invariant, region_vote="region_vote" not in self.without,
            without=self.without)
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
        settle_frames = self.settle_frames = max(1, int(settle_frames))
        self.regions = StaticRegions(self.frame_shape, self.model.grid,
                                     static_after=static_after or 1, hot=hot,
                                     settled_after=settle_frames,
                                     follow_gradual="gradual_change" not in self.without)
        # The recent frames are what a rebuild starts from, and their brightness tells how
        # fast it still moves (``settle_frames`` back).
        self.recent = RecentFrames(max(min(window, max(static_after or 0, MIN_RECENT)),
                                       settle_frames))
        # A picture coming out of a lasting darkness settles over a warm-up's length.
        self.dark = None if static_after is None or "darkness" in self.without else DarkScene(
            self.frame_shape, self.model.grid, static_after=static_after, settle_after=self.warmup)
        self.light = LightSwitch(
            scale=LIGHT_INVARIANT_BRIGHTNESS_SCALE if light_invariant else BRIGHTNESS_SCALE,
            hot=hot, settle_frames=settle_frames, settling="light_settling" not in self.without)

    # -- frames ------------------------------------------------------------------------------
    def no_picture(self, health: str, x: np.ndarray | None) -> None:
        """A frame without a picture: a blank one may be the light going out (or a camera's
        glitch), so the next picture may be a new light, which settles."""
        if health == BLANK:
            self.light.switched()
            if self.dark is not None:
                self.dark.blank(brightness_of(x))

    def judge(self, index: int, time_s: float, x: np.ndarray, motion_z: np.ndarray | None,
              explain: bool | float) -> tuple[FrameScore, np.ndarray | None]:
        """The verdict on a frame with a picture, and the model's block z-scores of it (None
        when darkness judged it). The model learns it if the schedule says so.

        In order: darkness, the model's look at the frame, then (past the warm-up) a settled
        light that changed the scene and the lasting changes, which may patch that look or
        rebuild the model; the frame's score; what the model learns."""
        rebuilt = self._out_of_darkness(x)
        if rebuilt is None:
            return replace(self._against_darkness(index, time_s, x, explain),
                           evidence="darkness"), None
        # The blocks absorbed as lasting changes before this frame (``lasting``, below).
        held = self.regions.absorbed_ & ~self.regions.following_
        look = self._look(x)
        warming_up = not self.model.ready or self.schedule.warming_up
        # Before the settled light is read below: scoring the step counts the light's time.
        brightness_score = (0.0 if "brightness_step" in self.without
                            else self.light.score(look.assessment.brightness,
                                                  self.recent.brightness))
        unusual_to_model = None           # block z-scores that say whether the frame is unusual
        if not warming_up and self.static_after is not None:
            if self._settled_light_changed_scene(x, look.z):
                look = self._look(x, norm=look.assessment.norm)
                rebuilt = True
            look, unusual_to_model, changed = self._lasting_changes(x, look)
            rebuilt |= changed
        self.recent.add(x, look.assessment.brightness)
        score, model_score = self._scores(look.z, brightness_score, unusual_to_model, motion_z,
                                          warming_up)
        learned = self.schedule.should_learn()
        if learned:
            # Unusual to the model itself (what its window holds is its business, not what
            # moves: a busy lane is usual there, and its cars still flagged by their motion).
            self.model.learn_one(
                x, energies=None if warming_up else look.assessment.block_energies,
                norm=look.assessment.norm, unusual=not warming_up and model_score >= self.hot)
        explanation = {}
        if self.model.ready and (explain is True or (explain is not False and score >= explain)):
            blocks = look.z if motion_z is None else np.maximum(look.z, motion_z)
            explanation = {"residual_image": look.residual_image.reshape(self.frame_shape),
                           "block_scores": blocks.reshape(self.model.grid[::-1])}
        verdict = FrameScore(index, time_s, look.assessment.residual, score,
                             WARMUP if warming_up else OK, learned, rebuilt, **explanation,
                             evidence=self._evidence(look.z, brightness_score, motion_z),
                             lasting=bool((self.regions.absorbed_ & ~self.regions.following_
                                           & ~held).any()))
        return verdict, look.z

    def _evidence(self, z: np.ndarray, brightness_score: float,
                  motion_z: np.ndarray | None) -> str:
        """Which evidence gave the frame's score (``_scores``' largest), for its event's kind
        (``FrameScore.evidence``); '' before the model scores anything. A brightness step that
        alone makes the frame unusual is the evidence, whatever the blocks score: a switched
        light changes them too (colour casts, shadows), and on the 15 dev clips it reached
        ``hot`` on light switches only, never while a person or a vehicle was the event."""
        if not self.model.ready:
            return ""
        if brightness_score >= self.hot:
            return "brightness"
        grid = self.model.grid[::-1]
        found = [("residual", neighbour_max(z.reshape(grid))), ("brightness", brightness_score)]
        if motion_z is not None:
            found.append(("motion", neighbour_max(motion_z.reshape(grid))))
        return max(found, key=lambda pair: pair[1])[0]

    def _out_of_darkness(self, x: np.ndarray) -> bool | None:
        """Whether the picture that came out of a lasting darkness has stood still, so the
        model was rebuilt from it (True), or not (False); None: darkness judges the frame."""
        if self.dark is None:
            return False
        if self.dark.lit(x):
            # The picture that came out of the dark has stood still: it is the background.
            self.rebuild(self._last_frames(self.warmup, x))
            return True
        if self.dark.active_ and not self._known_scene(x):
            return None
        return False

    def _last_frames(self, count: int, x: np.ndarray) -> list[np.ndarray]:
        """The last ``count`` frames with a picture (fewer if fewer were seen), ``x`` the last
        of them: what a rebuild starts from."""
        recent = list(self.recent.frames)
        return recent[max(0, len(recent) + 1 - count):] + [x]

    def _look(self, x: np.ndarray, norm: float | None = None) -> _Look:
        """The model's assessment of ``x`` and its block z-scores."""
        assessment = self.model.score_one(x, norm=norm)
        return _Look(assessment, self.block_z(assessment.block_energies),
                     assessment.residual_image)

    def _settled_light_changed_scene(self, x: np.ndarray, z: np.ndarray) -> bool:
        """A switched light settled just now and the model does not explain it: the new light
        is the scene, and the model is rebuilt from the frames since it settled, as from those
        that came out of darkness. Returns whether it was."""
        if (self.light.settled_for_ != self.settle_frames or "scene_rebuild" in self.without
                or not self._light_changed_scene(z)):
            return False
        since = self._last_frames(self.settle_frames, x)
        if len(since) <= self.model.rank + 1:
            return False
        self.rebuild(since)
        return True

    def _lasting_changes(self, x: np.ndarray, look: _Look
                         ) -> tuple[_Look, np.ndarray | None, bool]:
        """The look with absorbed blocks scored against their own pictures
        (``StaticRegions``), the block z-scores that say whether the frame is unusual to the
        model (None: the look's), and whether the whole scene changed, so the model was
        rebuilt from the recent frames."""
        model = self.model
        raw_z = look.z
        recent = self.recent.frames
        norm = max(look.assessment.norm, 1e-12)
        z, residual_image = self.regions.update(
            x, look.z, look.residual_image,
            lambda image: self.block_z(model.block_energies(image, norm, x)),
            previous=recent[-1] if recent else None)
        look = _Look(look.assessment, z, residual_image)
        # Blocks that follow a gradual change are light to the events, but still unusual
        # to the model: what it learns there while they follow (a person whose arrival
        # moved the exposure) must count against the presence share, not as background.
        unusual_to_model = (np.where(self.regions.following_, raw_z, z)
                            if self.regions.following_.any() else None)
        if not self._scene_changed(z):
            return look, unusual_to_model, False
        # The whole scene changed and stayed so (a light switched and left on, most blocks
        # static at once), and nothing in it moves: rebuild from the recent frames, which
        # would otherwise hold whoever still moves about as the scene.
        self.rebuild(list(self.recent.frames))
        return self._look(x, norm=look.assessment.norm), None, True

    def _scores(self, z: np.ndarray, brightness_score: float,
                unusual_to_model: np.ndarray | None, motion_z: np.ndarray | None,
                warming_up: bool) -> tuple[float, float]:
        """The frame's score and the score that says whether it is unusual to the model."""
        if not self.model.ready:
            return 0.0, 0.0
        grid = self.model.grid[::-1]
        model_score = score = max(neighbour_max(z.reshape(grid)), brightness_score)
        if unusual_to_model is not None:
            model_score = max(model_score, neighbour_max(unusual_to_model.reshape(grid)))
        if motion_z is not None:
            score = max(score, neighbour_max(motion_z.reshape(grid)))
        if warming_up and "warmup_damping" not in self.without:
            # Scored from the first frames, so that someone in view from the start is found;
            # but statistics of a second's frames have not seen a tree's gusts yet, so the
            # scores count for the share of the warm-up seen.
            score *= self.schedule.elapsed_ / self.warmup
        return score, model_score

    # -- the model's state -------------------------------------------------------------------
    def seed(self, frames: list[np.ndarray], pinned: bool) -> int:
        """Build the model from ``frames`` (spread over a video); ``pinned``: half the window
        at most keeps them for good. If most are blank, darkness is the video's usual look
        instead. Returns how many frames were used (0: too few)."""
        by_health = {OK: [], BLANK: []}
        for x in frames:
            by_health.setdefault(frame_health(x, None), []).append(x)
        frames, dark = by_health[OK], by_health[BLANK]
        if self.dark is not None and len(dark) > len(frames):
            # A room lit only while someone is in it: a picture is an event until it stands
            # still, as after a lasting darkness, and the model knows no lit scene to end the
            # darkness at once.
            self.dark.darken(statistics.median(brightness_of(x) for x in dark))
            return len(dark)
        if len(frames) <= self.model.rank:
            return 0
        frames = frames[:self.model.window]
        self.model.reset(np.stack(frames),
                         pinned=min(len(frames), self.model.window // 2) if pinned else 0)
        self.schedule.restart(len(frames))
        return len(frames)

    def rebuild(self, frames: list[np.ndarray]) -> None:
        """The model starts again from ``frames`` alone: a new scene."""
        self.model.reset(np.stack(frames))
        self.regions.clear()
        self.schedule.restart(len(frames))

    def block_z(self, energies: np.ndarray) -> np.ndarray:
        """The model's block z-scores, never above 0 in a block nobody watches."""
        return self.only_watched(self.model.block_z(energies))

    def only_watched(self, z: np.ndarray) -> np.ndarray:
        """Block z-scores never above 0 in a block nobody watches."""
        if self.watched_blocks is None:
            return z
        return np.where(self.watched_blocks, z, np.minimum(z, 0.0))

    def _light_changed_scene(self, z: np.ndarray) -> bool:
        """Called once a switched light has settled: the light changed the scene if the model
        finds the frame unusual (two neighbouring blocks, as an event) and no two neighbouring
        unusual blocks changed on the frame before (else someone moves about in the new light,
        whom a rebuild would learn). However few blocks the new light changed: the brightness
        step is the evidence of a switch, and counting blocks made a lamp that changes half of
        them a knife-edge."""
        if neighbour_max(z.reshape(self.model.grid[::-1])) < self.hot:
            return False                # the model explains the settled light: nothing new
        unusual = z >= self.hot
        moving = unusual & ~self.regions.absorbed_ & (self.regions.still_for_ == 0)
        return neighbour_max(np.where(moving, z, 0.0).reshape(self.model.grid[::-1])) < self.hot

    def _scene_changed(self, z: np.ndarray) -> bool:
        """Most blocks became static at once and no unusual block that is not absorbed (so
        something in the scene still moves) remains."""
        if "scene_rebuild" in self.without or self.regions.absorbed_share < SCENE_CHANGE_SHARE:
            return False
        moving = np.where(self.regions.absorbed_, 0.0, z).reshape(self.model.grid[::-1])
        return neighbour_max(moving) < self.hot

    def unusualness(self, x: np.ndarray) -> float:
        """How unusual the model finds ``x`` on its own (no motion, light or lasting changes):
        its block z-scores' worst pair of neighbouring blocks; ``hot`` and up is unusual."""
        z = self.block_z(self.model.score_one(x).block_energies)
        return neighbour_max(z.reshape(self.model.grid[::-1]))

    def explains(self, frames: np.ndarray) -> bool:
        """Whether the model finds every one of ``frames`` (one a row) usual."""
        return self.model.ready and all(self.unusualness(x) < self.hot for x in frames)

    def _known_scene(self, x: np.ndarray) -> bool:
        """Whether the model explains the picture that came out of the dark (the light came
        back on the scene it knew), which ends the darkness at once."""
        if not self.explains([x]):
            return False
        self.dark.leave()
        return True

    def _against_darkness(self, index: int, time_s: float, x: np.ndarray,
                          explain: bool | float) -> FrameScore:
        """A picture while darkness is the background: as unusual as it is bright (or as its
        brightness stepped against the recent frames), and not learned until it settles."""
        brightness = brightness_of(x)
        score = max(abs(brightness - self.dark.dark_brightness_) / self.light.scale,
                    self.light.score(brightness, self.recent.brightness))
        self.recent.add(x, brightness)
        explanation = {}
        if explain is True or (explain is not False and score >= explain):
            # Against darkness, the whole picture is what is unusual.
            explanation = {"residual_image": x.reshape(self.frame_shape).astype(np.float32),
                           "block_scores": np.full(self.model.grid[::-1], score)}
        return FrameScore(index, time_s, 1.0, score, OK, False, **explanation)


class SubspaceWindowDetector:
    """Score frames against the robust subspace of a long window of frames.

    Build it with ``from_settings``, or with every parameter (in frames):

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
        background (None: never); also the motion evidence's history
    hot : block z-score from which a block counts as unusual (the segmenter's lower threshold)
    refit_every : frames learned between two refits of the subspace
    blocks : the residual image is scored in a grid this many blocks across its long side
    light_invariant : a block's residual along its own picture (its light scaled: shadows,
        clouds, exposure) does not count (``background.py``)
    settle_frames : frames over which the brightness must hold (``SETTLED_MOTION``) for a
        switched light to have settled
    watched : which features of the frame vector are watched (``Preprocessor.watched``: the
        region and masks zero the rest); a block with no watched pixel never scores above 0
    without : mechanisms turned off (``settings.MECHANISMS``), to measure what each is worth
    """

    def __init__(self, frame_shape: tuple[int, ...], *, method: str, rank: int, window: int,
                 projection_dim: int, inlier_fraction: float, stride: int, warmup: int,
                 static_after: int | None, hot: float, refit_every: int, blocks: int,
                 light_invariant: bool, settle_frames: int,
                 watched: np.ndarray | None = None, without: frozenset[str] = frozenset()):
        self._parameters = dict(
            method=method, rank=rank, window=window, projection_dim=projection_dim,
            inlier_fraction=inlier_fraction, stride=stride, warmup=warmup,
            static_after=static_after, hot=hot, refit_every=refit_every, blocks=blocks,
            light_invariant=light_invariant, settle_frames=settle_frames, watched=watched,
            without=frozenset(without))
        self.judge = SceneJudge(frame_shape, **self._parameters)
        self.frame_shape = self.judge.frame_shape
        self.static_after = static_after
        self.settle_frames = max(1, int(settle_frames))
        # What moves against how each block has moved over the last ``static_after`` frames
        # (``motion.py``), its statistics refreshed every ``settle_frames``.
        self.motion = None if "motion" in self.judge.without else MotionEvidence(
            self.frame_shape, self.model.grid, history=static_after or self.judge.warmup,
            refresh=self.settle_frames)
        self.frozen = FrozenPicture()
        self.seeded_ = 0                                  # frames the model was seeded with
        self.start_reference_: StartReference | None = None  # see ``seed_reference``
        self.start_reference_frames_ = 0                  # frames that twin was seeded with
        self.start_reference_adopted_: int | None = None  # frame the twin took over at

    @classmethod
    def from_settings(cls, settings: "Settings", frame_shape: tuple[int, ...], fps: float, *,
                      method: str | None = None, watched: np.ndarray | None = None
                      ) -> "SubspaceWindowDetector":
        """The detector of a run with ``settings`` on frames of ``frame_shape`` at ``fps``
        (``method``: another than the settings', as ``--compare`` runs)."""
        return cls(frame_shape, **frame_parameters(settings, fps, method), watched=watched)

    @property
    def model(self) -> SubspaceBackground:
        return self.judge.model

    @property
    def look_back(self) -> int:
        """How far back the window's memory reaches, in frames: no frame learned longer ago
        stays in it (``MAX_AGE_IN_WINDOWS`` windows of learning, a window's span each once the
        schedule is steady; a fresh start learns as many in that time), and a start's warm-up
        is over by then. Not a bound on everything a pass keeps: where two backgrounds each
        hold themselves (a scene occupied most of the time, see ``UNUSUAL_SHARE``), which one
        the window holds depends on where the pass started."""
        return MAX_AGE_IN_WINDOWS * self.judge.schedule.span + self.judge.warmup

    def holds_background_of(self, other: "SubspaceWindowDetector") -> bool:
        """Whether this detector's model and ``other``'s hold the same background: each finds
        usual every frame that spans the other's. Two passes over one video that started at
        different places, compared at the same frame: where one learned someone as the scene
        and the other the empty scene (see ``look_back``), they do not, however alike their
        recent verdicts were. Where they do, they went on alike on the dev clips but for
        events at the threshold (docs/batch.md, the chunked scan)."""
        return (self.judge.explains(other.model.background_frames())
                and other.judge.explains(self.model.background_frames()))

    @property
    def absorbed_blocks(self) -> np.ndarray:
        """Which blocks (rows x cols) score against their own absorbed picture now."""
        return self.judge.regions.absorbed_.reshape(self.model.grid[::-1])

    # -- for the pipeline --------------------------------------------------------------------
    def seed(self, frames) -> int:
        """Build the model from frames spread over the video before the first is scored.

        The inlier scores pick the background among them, so an event in view from the first
        frame does not become the background. They stay in the window for good (half of it at
        most), so the model never forgets the video's usual look. If most of them are blank,
        darkness is that look instead. Returns how many were used.
        """
        self.seeded_ = self.judge.seed(list(frames), pinned=True)
        return self.seeded_

    def seed_reference(self, frames) -> int:
        """Have the warm-up's frames judged against frames spread over the whole video too.

        The model learns its warm-up's frames densely, so on its own it cannot tell what is in
        view then (a person there from the first frame) from the scene. A second judge, seeded
        from ``frames`` (the inlier scores pick the background among them), scores those
        frames too (``StartReference``). It judges what moves: a difference from the file's
        look that stands still from the start (a door left open, a parked car) becomes its
        background in ``settle_frames``. Call this before the first frame. Returns how many
        frames seeded it.
        """
        if self.judge.schedule.elapsed_ or self.seeded_:
            raise ValueError("seed_reference goes before the first frame, on an unseeded model")
        self.start_reference_ = None
        twin = SceneJudge(self.frame_shape, **self._parameters)
        twin.regions.static_after = self.settle_frames
        used = twin.seed(list(frames), pinned=True)
        if used:
            self.start_reference_ = StartReference(
                twin, hot=self.judge.hot, settle_frames=self.settle_frames,
                static_after=self.static_after,
                until=self.judge.warmup + self.judge.schedule.span)
        self.start_reference_frames_ = used
        return used

    def process_frame(self, index: int, time_s: float, x: np.ndarray | None,
                      health: str = OK, *, explain: bool | float = False) -> FrameScore:
        """Score one frame, then let the policy decide whether the model learns it.

        ``explain``: True, or a score above which to do it, adds the residual image and the
        block z-scores to the verdict (for heat maps and boxes; no extra model is involved).
        """
        if health in (BLANK, CORRUPT):
            self.judge.no_picture(health, x)
            if self.start_reference_ is not None and health == BLANK:
                self.start_reference_.twin.light.switched()     # the light went out for it too
            if self.motion is not None:
                self.motion.forget_picture()
            # No picture to score: reported through the status, never as NaN or an event.
            return FrameScore(index, time_s, 0.0, 0.0, health, False)
        if health == FROZEN:
            held = self.frozen.verdict(index, time_s)
            if held is not None:
                return held
        motion_z = None
        if self.motion is not None:
            motion_z = self.motion.score_one(x)
            self.motion.learn_one(x)
            if motion_z is not None:
                motion_z = self.judge.only_watched(motion_z)
        verdict, z = self.judge.judge(index, time_s, x, motion_z, explain)
        if verdict.absorbed:
            self.start_reference_ = None       # a new scene: the file's look says nothing of it
        if self.start_reference_ is not None and z is not None:
            verdict = self._with_start_reference(verdict, z, x, explain)
        return self.frozen.remember(verdict)

    def _with_start_reference(self, verdict: FrameScore, z: np.ndarray, x: np.ndarray,
                              explain: bool | float) -> FrameScore:
        """The larger of the model's and the twin's verdicts; after the warm-up, the twin
        stays, goes or takes over (``StartReference.decide``)."""
        reference = self.start_reference_
        judged, _ = reference.twin.judge(verdict.index, verdict.time_s, x, None, explain)
        if verdict.admitted:
            reference.saw_learned(self.model.n_learned_ - 1, judged.score)
        if judged.score > verdict.score:
            verdict = replace(verdict, residual=judged.residual, score=judged.score,
                              residual_image=judged.residual_image,
                              block_scores=judged.block_scores, evidence=judged.evidence)
        if verdict.status == WARMUP:
            return verdict
        decision = reference.decide(self.judge.schedule.elapsed_, judged.score, z,
                                    self.judge.regions.still_for_,
                                    self.model.spans_any(reference.seen_learned_))
        if decision == StartReference.GO:
            self.start_reference_ = None
        elif decision == StartReference.TAKE_OVER:
            # The twin's window of frames from the whole file, unpinned, and those it learned
            # since replace the model's.
            self.judge = reference.twin
            self.judge.model.unpin()
            self.judge.regions.static_after = self.static_after or 1
            self.start_reference_ = None
            self.start_reference_adopted_ = verdict.index
        return verdict
