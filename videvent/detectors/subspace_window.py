"""Streaming detector: a robust background subspace (``background.py``) run by a policy
(``rules.py``, one chain of rules over ``policy.py``'s mechanisms), with motion evidence
(``motion.py``) beside it.

Every frame is scored as it arrives against the background model; the score is the largest
z-score that two neighbouring blocks of its residual reach, or that two neighbouring blocks'
motion reaches against how they have moved lately, or the brightness-step score, whichever is
larger. What the model learns is the policy's: frames spread over all the time seen (densely at
first, then one in every ``stride``) whatever their score, so the window spans a minute and the
robust steps of the model (a per-block vote and SNCP), not a gate, decide which of its frames
span the background (the frames it learned while finding them unusual hold at most a third of
the window, below the vote's breakdown point).

A ``SceneJudge`` is one model and the policy that runs it: a loop over its rules (darkness,
the light switch, static regions, the learning schedule, ...), which hold their state in the
mechanisms it keeps. The detector holds one, the motion evidence and the verdict a frozen
picture keeps (``FrozenPicture``); on a file its judge holds a ``StartReference``: a second
judge seeded from frames spread over the whole file (``seed_reference``), which judges the
warm-up alongside the model (until a rebuild: a new scene) and takes over if the model learned
a presence whose leaving it would score as a ghost.
``seed`` instead builds the model itself from such frames first (the paper's batch setting).

Every time is in frames here (``passes.detector_parameters`` derives them from the settings'
seconds and the frame rate).
"""

from __future__ import annotations

import copy
import statistics

import cv2
import numpy as np

from ..preprocess import frame_health
from ..status import BLANK, CORRUPT, OK, WARMUP
from .background import METHODS, SubspaceBackground, UPPER_QUANTILE, brightness_of, neighbour_max
from .base import FrameScore
from .motion import MotionEvidence
from .policy import (BRIGHTNESS_SCALE, GHOST_MARGIN, LIGHT_INVARIANT_BRIGHTNESS_SCALE,
                     MAX_AGE_IN_WINDOWS, MIN_SAMPLES, UNUSUAL_SHARE, DarkScene, Forgetting,
                     FrozenPicture, Ghosts, LearningSchedule, LightSwitch, RecentFrames,
                     StartReference, StaticRegions, block_change_up_to_gain, outline_margin)
from .rules import ANY_PHASE, Frame, Look, Revealed, chain

__all__ = ["METHODS", "SubspaceWindowDetector"]


class SceneJudge:
    """One background model and the policy that runs it: a chain of rules (``rules.py``) and
    the mechanisms that hold their state: what it learns (``LearningSchedule``) and forgets
    (``Forgetting``), which lasting changes become background (``StaticRegions``, a rebuild
    when the whole scene changed), darkness as the background (``DarkScene``) and the light
    switch (``LightSwitch``). Parameters as ``SubspaceWindowDetector``'s."""

    def __init__(self, frame_shape: tuple[int, ...], *, method: str, rank: int, window: int,
                 projection_dim: int, inlier_fraction: float, stride: int, warmup: int,
                 static_after: int | None, hot: float, refit_every: int, blocks: int,
                 light_invariant: bool, settle_frames: int,
                 watched: np.ndarray | None = None, without: frozenset[str] = frozenset()):
        if static_after is not None and static_after < 1:
            raise ValueError(f"static_after must be at least 1 frame, got {static_after}")
        # The one place the names turned off are read: rules left out of the chain, and the
        # model's and the mechanisms' options.
        off = frozenset(without) | (frozenset({"lasting", "scene_rebuild", "darkness"})
                                    if static_after is None else frozenset())
        self.rules = chain(off)
        # The seed's background is chosen by the outline test, not by majority alone.
        self.reveal_at_seed = "revealed" not in off
        self.model = SubspaceBackground(
            frame_shape, method=method, rank=rank, window=window, projection_dim=projection_dim,
            inlier_fraction=inlier_fraction, refit_every=refit_every, blocks=blocks,
            light_invariant=light_invariant, region_vote="region_vote" not in off,
            upper_quantile=None if "upper_quantile" in off else UPPER_QUANTILE,
            neighbour_spread="neighbour_spread" not in off,
            out_of_sample="out_of_sample" not in off, frame_noise="frame_noise" not in off)
        self.forgetting = Forgetting(
            window, max_age=None if "max_age" in off else MAX_AGE_IN_WINDOWS * window,
            presence_share=None if "presence_share" in off else UNUSUAL_SHARE)
        self.frame_shape = self.model.frame_shape
        self.hot = float(hot)
        # Blocks with a watched pixel (all, with no region). The zeros outside a region are
        # explained exactly, but the noise floor scales with the frame's light, so a dimmed
        # frame could still score there.
        self.watched_blocks = np.ones(self.model.n_blocks, bool)
        if watched is not None:
            watched_pixels = np.asarray(watched, bool).reshape(self.frame_shape)
            if watched_pixels.ndim == 3:
                watched_pixels = watched_pixels.any(axis=2)
            self.watched_blocks = np.bincount(self.model.pixel_block_[watched_pixels].ravel(),
                                              minlength=self.model.n_blocks) > 0
        # The most each block may score: no limit where watched, 0 elsewhere (one minimum a
        # frame, the same numbers as choosing between z and min(z, 0)).
        self._ceiling = np.where(self.watched_blocks, np.inf, 0.0)
        self.static_after = static_after
        self.warmup = max(1, int(warmup))
        self.schedule = LearningSchedule(stride, self.warmup, window)
        settle_frames = self.settle_frames = max(1, int(settle_frames))
        self.regions = StaticRegions(self.frame_shape, self.model.grid,
                                     static_after=static_after or 1, hot=hot,
                                     settled_after=settle_frames,
                                     follow_gradual="gradual_change" not in off)
        # The recent frames are what a rebuild starts from, and their brightness tells how
        # fast it still moves (``settle_frames`` back).
        self.recent = RecentFrames(max(min(window, max(static_after or 0, MIN_SAMPLES)),
                                       settle_frames))
        # The fewest frames a rebuild starts from: more than span the subspace.
        self.rebuild_min = self.model.rank + 2
        # A picture coming out of a lasting darkness settles as a switched light does, and its
        # still frames (enough to rebuild from) are what the model is rebuilt from.
        self.dark = None if "darkness" in off else DarkScene(
            self.frame_shape, self.model.grid, static_after=static_after,
            settle_after=max(settle_frames, self.rebuild_min))
        self.ghosts = Ghosts(self.model.grid, hot=hot, settle_frames=settle_frames)
        self.light = LightSwitch(
            scale=LIGHT_INVARIANT_BRIGHTNESS_SCALE if light_invariant else BRIGHTNESS_SCALE,
            hot=hot, settle_frames=settle_frames, settling="light_settling" not in off)
        # A twin judging the start alongside (``SubspaceWindowDetector.seed_reference``).
        self.reference: StartReference | None = None

    # -- frames ------------------------------------------------------------------------------
    def no_picture(self, health: str, x: np.ndarray | None) -> None:
        """A frame without a picture: a blank one may be the light going out (or a camera's
        glitch), so the next picture may be a new light, which settles."""
        if health == BLANK:
            self.light.switched()
            if self.dark is not None:
                self.dark.blank(brightness_of(x))

    def judge(self, frame: Frame) -> FrameScore:
        """The verdict on a frame with a picture: each rule in turn, until one gives it; a
        rule of one phase (``rules.WARMING_UP``, ``rules.WARM``) only in that phase."""
        for rule in self.rules:
            if rule.phase in (ANY_PHASE, frame.warming_up):
                rule.see(frame, self)
            if frame.verdict is not None:
                return frame.verdict

    def last_frames(self, count: int, x: np.ndarray) -> list[np.ndarray]:
        """The last ``count`` frames with a picture (fewer if fewer were seen), ``x`` the last
        of them: what a rebuild starts from."""
        recent = list(self.recent.frames)
        return recent[max(0, len(recent) + 1 - count):] + [x]

    def view(self, x: np.ndarray, norm: float | None = None) -> Look:
        """The model's view of the frame vector ``x``: its assessment and block z-scores."""
        assessment = self.model.score_one(x, norm=norm)
        return Look(assessment, self.block_z(assessment.block_energies),
                    assessment.residual_image)

    def look(self, frame: Frame, norm: float | None = None) -> None:
        """The model's view of ``frame`` (``Frame.look``), whose z-scores are also those that
        say whether the model finds it unusual, so far."""
        frame.look = self.view(frame.x, norm)
        frame.unusual_z = frame.look.z

    def relook(self, frame: Frame, frames: list[np.ndarray]) -> None:
        """Rebuild the model from ``frames`` at ``frame`` and look at it again, with the first
        look's length of it."""
        self.rebuild(frames, frame)
        self.look(frame, norm=frame.look.assessment.norm)

    def unusualness(self, x: np.ndarray) -> float:
        """How unusual the model finds ``x`` on its own (no motion, light or lasting changes):
        its block z-scores' worst pair of neighbouring blocks; ``hot`` and up is unusual."""
        return neighbour_max(self.view(x).z.reshape(self.model.grid[::-1]))

    def explains(self, frames: np.ndarray) -> bool:
        """Whether the model finds every one of ``frames`` (one a row) usual."""
        return self.model.ready and all(self.unusualness(x) < self.hot for x in frames)

    # -- the model's state -------------------------------------------------------------------
    def seed(self, frames: list[np.ndarray], pinned: bool) -> int:
        """Build the model from ``frames`` (spread over a video), but those that show a
        presence which left (``_without_what_left``); ``pinned``: half the window at most keeps
        them for good. If most are blank, darkness is the video's usual look instead. Returns
        how many frames were used (0: too few)."""
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
        self._reset(frames, pinned)
        if self.reveal_at_seed:
            background = self._without_what_left(frames, pinned)
            if background is not None:
                frames = background
        self.forgetting.clear()
        self.schedule.restart(len(frames))
        return len(frames)

    def _without_what_left(self, frames: list[np.ndarray],
                           pinned: bool) -> list[np.ndarray] | None:
        """Re-seed the model from the seed's frames without those that show a presence the
        majority made background, and return the frames kept; None (the model left as seeded
        from all of them) if there is no such presence.

        Principle: the background is what lies under every frame, so from its view each frame
        shows it with things added, never with something of it missing (a ghost).

        The inlier scores pick what most of the frames show; where someone stood through most
        of a video, that is them. The frames that show the place without them are unusual to
        such a model, and the difference's outline is in the model's picture, not in theirs
        (``outline_margin``). The one most plainly so reveals the background there; the frames
        nearer the model's picture than the revealed one in those blocks go, and the model is
        re-seeded from the others. The same test then runs the other way: from the re-seeded
        model's view the frames that went must hold the thing (its outline in them). If one of
        them shows a ghost instead, the re-seeded picture holds something that frame lacks: not
        a presence that left but a place whose look changes for good, again and again (bottles
        taken and put back, each of their states background), and the reveal is undone."""
        best, best_margin = None, GHOST_MARGIN
        for x in frames:
            margin, look, unusual = self._ghost_margin(x)
            if margin >= best_margin:
                best, best_margin = (x, look.residual_image, unusual), margin
        if best is None:
            return None
        return self._split_at(frames, *best, pinned)

    def _split_at(self, frames: list[np.ndarray], revealed: np.ndarray, residual: np.ndarray,
                  blocks: np.ndarray, pinned: bool) -> list[np.ndarray] | None:
        """The model re-seeded from those of ``frames`` nearer, in ``blocks``, the ``revealed``
        picture than the model's picture of it (``revealed - residual``), and those frames; or
        None, the model as seeded from all of them, if one that went shows a ghost from the
        re-seeded view, or too few are kept."""
        shape = self.frame_shape
        ghost = (revealed - residual).reshape(shape)
        revealed = revealed.reshape(shape)
        kept, gone = [], []
        for x in frames:
            picture = x.reshape(shape)
            nearer_revealed = (block_change_up_to_gain(picture, revealed, self.model.grid)[blocks]
                               < block_change_up_to_gain(picture, ghost, self.model.grid)[blocks])
            (kept if nearer_revealed.mean() > 0.5 else gone).append(x)
        if len(kept) < self.rebuild_min:
            return None
        self._reset(kept, pinned)
        if any(self._ghost_margin(x)[0] >= GHOST_MARGIN for x in gone):
            self._reset(frames, pinned)
            return None
        return kept

    def reveal(self, x: np.ndarray, residual: np.ndarray, blocks: np.ndarray) -> bool:
        """Something the model holds has left ``blocks`` (``rules.Revealed``): the model is
        rebuilt from its window's frames and the recent ones that show the place as ``x`` does
        there, as a seed is (``_split_at``). Returns whether it was."""
        model = copy.deepcopy(self.model)
        still = int(self.regions.still_for_[blocks].min())
        frames = list(model.frames_[:model.n_filled_].copy()) + self.last_frames(still, x)
        kept = self._split_at(frames, x, residual, blocks, pinned=False)
        if kept is None:
            self.model = model              # as it was: a rare event, so a copy is cheap
            return False
        self.forgetting.clear()
        self.regions.clear()
        self.schedule.restart(len(kept))
        return True

    def _reset(self, frames: list[np.ndarray], pinned: bool) -> None:
        """The model built from ``frames`` alone; ``pinned``: half the window at most keeps
        them for good."""
        self.model.reset(np.stack(frames),
                         pinned=min(len(frames), self.model.window // 2) if pinned else 0)

    def _ghost_margin(self, x: np.ndarray) -> tuple[float, Look, np.ndarray]:
        """``x``'s outline margin (``outline_margin``) near the blocks the model finds unusual
        (NaN if it finds none, two neighbouring ones, unusual), its look and those blocks."""
        look = self.view(x)
        unusual = look.z >= self.hot
        # Two neighbouring blocks reach ``hot`` exactly where the worst pair's lower does.
        if neighbour_max(look.z.reshape(self.model.grid[::-1])) < self.hot:
            return float("nan"), look, unusual
        return (outline_margin(*self._grey(x, look.residual_image), self._near(unusual)),
                look, unusual)

    def _grey(self, x: np.ndarray, residual: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """A frame vector and its residual as grey pictures (channels averaged)."""
        shape = self.frame_shape
        if len(shape) == 3:
            return (x.reshape(shape).mean(axis=2).astype(np.float32),
                    residual.reshape(shape).mean(axis=2).astype(np.float32))
        return x.reshape(shape).astype(np.float32), residual.reshape(shape).astype(np.float32)

    def _near(self, blocks: np.ndarray) -> np.ndarray:
        """The pixels of ``blocks`` and of the blocks around them."""
        grid = blocks.reshape(self.model.grid[::-1]).astype(np.uint8)
        around = cv2.dilate(grid, np.ones((3, 3), np.uint8)).ravel() > 0
        return around[self.model.pixel_block_]

    def rebuild(self, frames: list[np.ndarray], frame: Frame) -> None:
        """The model starts again from ``frames`` alone, at ``frame``: a new scene, of which
        the file's look says nothing, so a twin judging the start goes."""
        self.model.reset(np.stack(frames))
        self.reference = None
        self.forgetting.clear()
        self.regions.clear()
        self.schedule.restart(len(frames))
        frame.rebuilt = True

    def block_z(self, energies: np.ndarray) -> np.ndarray:
        """The model's block z-scores, never above 0 in a block nobody watches."""
        return self.only_watched(self.model.block_z(energies))

    def only_watched(self, z: np.ndarray | None) -> np.ndarray | None:
        """Block z-scores never above 0 in a block nobody watches (None: none)."""
        return None if z is None else np.minimum(z, self._ceiling)


class SubspaceWindowDetector:
    """Score frames against the robust subspace of a long window of frames.

    Built from plain numbers, every time in frames (``passes.detector_for`` builds a run's
    from its settings):

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
    without : mechanisms turned off (``settings.MECHANISMS``), to measure what each is worth:
        their rules left out of the chain, or the model's or a mechanism's option off
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
        self.motion = None if "motion" in without else MotionEvidence(
            self.frame_shape, self.model.grid, history=static_after or self.judge.warmup,
            refresh=self.settle_frames)
        self.frozen = FrozenPicture()
        self.seeded_ = 0                                  # frames the model was seeded with
        self.start_reference_frames_ = 0                  # frames that twin was seeded with
        self.start_reference_adopted_: int | None = None  # frame the twin took over at

    @property
    def model(self) -> SubspaceBackground:
        return self.judge.model

    @property
    def start_reference_(self) -> StartReference | None:
        """The twin judging the start (``seed_reference``); None before, and once it went."""
        return self.judge.reference

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

        A start judged so needs no live reveal (``rules.Revealed``): what the warm-up learned of
        someone in view is the twin's to tell (its seed chose the background by the outline
        test), so both judges' chains leave that rule out.
        """
        if self.judge.schedule.elapsed_ or self.seeded_:
            raise ValueError("seed_reference goes before the first frame, on an unseeded model")
        self.judge.reference = None
        twin = SceneJudge(self.frame_shape, **self._parameters)
        twin.regions.static_after = self.settle_frames
        used = twin.seed(list(frames), pinned=True)
        if used:
            for judge in (self.judge, twin):
                judge.rules = [rule for rule in judge.rules if not isinstance(rule, Revealed)]
            self.judge.reference = StartReference(
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
            return self._no_picture(index, time_s, x, health)
        held = self.frozen.verdict(health, index, time_s)
        if held is not None:
            return held
        frame = Frame(index, time_s, x, explain)
        if self.motion is not None:
            frame.motion_z = self.judge.only_watched(self.motion.score_and_learn(x))
        verdict = self.judge.judge(frame)
        if self.judge.reference is not None and frame.look is not None:
            verdict = self._with_start_reference(verdict, frame)
        return self.frozen.remember(verdict)

    def _no_picture(self, index: int, time_s: float, x: np.ndarray | None,
                    health: str) -> FrameScore:
        """A blank or corrupt frame: no picture to score, reported through the status, never
        as NaN or an event."""
        self.judge.no_picture(health, x)
        if self.judge.reference is not None and health == BLANK:
            self.judge.reference.twin.light.switched()     # the light went out for it too
        if self.motion is not None:
            self.motion.forget_picture()
        return FrameScore(index, time_s, 0.0, 0.0, health, False)

    def _with_start_reference(self, verdict: FrameScore, frame: Frame) -> FrameScore:
        """The larger of the model's and the twin's verdicts; after the warm-up, the twin
        stays, goes or takes over (``StartReference.decide``). A rebuild is a new scene, of
        which the file's look says nothing: the twin goes (``SceneJudge.rebuild``), before it
        would judge the frame."""
        reference = self.judge.reference
        judged = reference.twin.judge(Frame(frame.index, frame.time_s, frame.x, frame.explain))
        reference.saw_learned(verdict.admitted, self.model.n_learned_ - 1, judged.score)
        verdict = reference.larger(verdict, judged)
        if verdict.status == WARMUP:
            return verdict
        decision = reference.decide(self.judge.schedule.elapsed_, judged.score, frame.look.z,
                                    self.judge.regions.still_for_,
                                    self.model.spans_any(reference.seen_learned_))
        if decision != StartReference.STAY:
            self.judge.reference = None
        if decision == StartReference.TAKE_OVER:
            # The twin's window of frames from the whole file, unpinned, and those it learned
            # since replace the model's.
            reference.twin.regions.static_after = self.judge.regions.static_after
            self.judge = reference.twin
            self.judge.model.unpin()
            self.start_reference_adopted_ = verdict.index
        return verdict
