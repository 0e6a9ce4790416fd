"""The policy as one chain: each rule one step of a frame's judgement, behind one interface.

A ``SceneJudge`` (``subspace_window.py``) runs its rules in order over every frame with a
picture: ``rule.see(frame, judge)`` reads what the rules before it found (``Frame``), adds its
own, and may end the chain with a verdict (darkness does). A rule may hold to one phase of the
model (``phase``: only while it warms up, or only after); the judge's loop skips it in the
other. The state each rule keeps is a
mechanism of ``policy.py`` (tested alone) that the judge holds; the judge's model is what the
rules score with, rebuild and teach. A mechanism is turned off (``--without NAME``) by leaving
its rule out of the list (``chain``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ..status import OK, WARMUP
from .background import Assessment, brightness_of, neighbour_max
from .base import FrameScore
from .policy import SCENE_CHANGE_SHARE


@dataclass
class Look:
    """The model's view of a frame: its assessment, and the block z-scores and residual image
    the verdict uses (the assessment's, or patched by the lasting changes)."""

    assessment: Assessment
    z: np.ndarray
    residual_image: np.ndarray


@dataclass
class Frame:
    """A frame with a picture, and what the rules found of it so far."""

    index: int
    time_s: float
    x: np.ndarray
    explain: bool | float                  # as ``SubspaceWindowDetector.process_frame``'s
    motion_z: np.ndarray | None = None     # the motion evidence's block z-scores
    look: Look | None = None               # None: darkness judged the frame
    warming_up: bool = False
    rebuilt: bool = False                  # the model was rebuilt at this frame
    brightness_score: float = 0.0
    unusual_z: np.ndarray | None = None    # the z-scores that say whether the model finds it
                                           # unusual (the look's, unless blocks follow a light)
    score: float = 0.0
    model_score: float = 0.0               # the score that says whether the model finds it unusual
    evidence: str = ""                     # which evidence gave the score (``Scoring``)
    blocks: np.ndarray | None = None       # the block scores a verdict shows (None: no model yet)
    unusual: bool = False                  # after the warm-up, the model finds it unusual
    energies: np.ndarray | None = None     # after the warm-up, its block energies (``Learning``)
    learned: bool = False
    held: np.ndarray | None = None         # blocks absorbed as lasting changes before it
    left: bool = False                     # something the model held left (``Revealed``)
    verdict: FrameScore | None = None      # set: the chain ends

    def give(self, verdict: FrameScore, residual_image: np.ndarray,
             block_scores: np.ndarray | None) -> None:
        """End the chain with ``verdict``, carrying the residual image and block scores if
        ``explain`` asks for them at its score (and there are block scores)."""
        if block_scores is not None and (self.explain is True or (
                self.explain is not False and verdict.score >= self.explain)):
            verdict = replace(verdict, residual_image=residual_image, block_scores=block_scores)
        self.verdict = verdict


# A rule's ``phase``: it runs whatever the model's phase, only while the model warms up, or only
# after (``Frame.warming_up``, the value it is compared with).
ANY_PHASE, WARMING_UP, WARM = None, True, False


class Darkness:
    """``darkness`` (``DarkScene``): a picture that came out of a lasting darkness and stood
    still rebuilds the model; until then it is judged against the darkness, which ends the
    chain, unless the model knows it (the light came back on the scene it knew)."""

    phase = ANY_PHASE

    def see(self, frame: Frame, judge) -> None:
        dark = judge.dark
        if dark.lit(frame.x):
            judge.rebuild(judge.last_frames(dark.settle_after, frame.x), frame)
        elif dark.active_:
            if judge.model.ready and judge.unusualness(frame.x) < judge.hot:
                dark.leave()
                return
            # Against darkness: as unusual as the picture is bright (or as its brightness
            # stepped against the recent frames), the whole picture what is unusual, and not
            # learned until it settles.
            brightness = brightness_of(frame.x)
            score = max(abs(brightness - dark.dark_brightness_) / judge.light.scale,
                        judge.light.score(brightness, judge.recent.brightness))
            judge.recent.add(frame.x, brightness)
            frame.give(FrameScore(frame.index, frame.time_s, 1.0, score, OK, False,
                                  evidence="darkness"),
                       frame.x.reshape(judge.frame_shape).astype(np.float32),
                       np.full(judge.model.grid[::-1], score))


class ModelLook:
    """The model's view of the frame, and whether the model is still warming up."""

    phase = ANY_PHASE

    def see(self, frame: Frame, judge) -> None:
        # The blocks absorbed as lasting changes before this frame (``Verdict``'s ``lasting``).
        frame.held = judge.regions.absorbed_ & ~judge.regions.following_
        judge.look(frame)
        frame.warming_up = not judge.model.ready or judge.schedule.warming_up


class BrightnessStep:
    """``brightness_step`` (``LightSwitch``): the step of the frame's brightness, which unit
    length hides from the model. Scored before the settled light is read (``SettledLight``):
    scoring the step counts the light's time."""

    phase = ANY_PHASE

    def see(self, frame: Frame, judge) -> None:
        frame.brightness_score = judge.light.score(frame.look.assessment.brightness,
                                                   judge.recent.brightness)


class SettledLight:
    """``scene_rebuild``, after the warm-up: a switched light settled just now and the model
    does not explain it, so the new light is the scene, and the model is rebuilt from the
    frames since it settled (as from those that came out of darkness)."""

    phase = WARM

    def see(self, frame: Frame, judge) -> None:
        if (judge.light.settled_for_ == judge.settle_frames
                and self._light_changed_scene(frame.look.z, judge)):
            since = judge.last_frames(judge.settle_frames, frame.x)
            if len(since) >= judge.rebuild_min:
                judge.relook(frame, since)

    @staticmethod
    def _light_changed_scene(z: np.ndarray, judge) -> bool:
        """The light changed the scene if the model finds the frame unusual (two neighbouring
        blocks, as an event) and no two neighbouring unusual blocks changed on the frame
        before (else someone moves about in the new light, whom a rebuild would learn).
        However few blocks the new light changed: the brightness step is the evidence of a
        switch, and counting blocks made a lamp that changes half of them a knife-edge."""
        grid, regions = judge.model.grid[::-1], judge.regions
        moving = (z >= judge.hot) & ~regions.absorbed_ & (regions.still_for_ == 0)
        return (neighbour_max(z.reshape(grid)) >= judge.hot
                and neighbour_max(np.where(moving, z, 0.0).reshape(grid)) < judge.hot)


class LastingChanges:
    """After the warm-up, the look with absorbed blocks scored against their own pictures
    (``StaticRegions``: a lasting change becomes background where it stays)."""

    phase = WARM

    def see(self, frame: Frame, judge) -> None:
        look, x, recent = frame.look, frame.x, judge.recent.frames
        norm = max(look.assessment.norm, 1e-12)
        z, residual_image = judge.regions.update(
            x, look.z, look.residual_image,
            lambda image: judge.block_z(judge.model.less_noise(
                judge.model.block_energies(image, norm, x), look.assessment.noise)),
            previous=recent[-1] if recent else None)
        # Blocks that follow a gradual change are light to the events, but still unusual to
        # the model: what it learns there while they follow (a person whose arrival moved the
        # exposure) must count against the presence share, not as background.
        frame.unusual_z = np.where(judge.regions.following_, look.z, z)
        frame.look = Look(look.assessment, z, residual_image)


class Revealed:
    """``revealed``, after the warm-up: a region the model finds unusual has stood still for
    ``settle_frames`` with the outline of the difference in the model's picture, not in the
    frame, for as long again (a ghost: something the model holds has left), so the model is
    rebuilt without the frames that show it there (``SceneJudge.reveal``; the seed's rule).
    A pass whose start a reference judges leaves it out (``seed_reference``)."""

    phase = WARM

    def see(self, frame: Frame, judge) -> None:
        look = frame.look
        blocks = judge.ghosts.update(frame.x, look.assessment.residual_image, look.z,
                                     judge.regions.still_for_, judge.regions.absorbed_,
                                     judge._grey, judge._near)
        if blocks is not None and judge.reveal(frame.x, look.assessment.residual_image, blocks):
            frame.look = judge.view(frame.x, norm=look.assessment.norm)
            frame.unusual_z = frame.look.z
            frame.left = True


class SceneChange:
    """``scene_rebuild``, after the warm-up: most blocks became static at once (a light
    switched and left on) and nothing unusual that is not absorbed still moves, so the whole
    scene changed: the model is rebuilt from the recent frames, which would otherwise hold
    whoever still moves about as the scene."""

    phase = WARM

    def see(self, frame: Frame, judge) -> None:
        regions = judge.regions
        moving = np.where(regions.absorbed_, 0.0, frame.look.z)
        if (regions.absorbed_share >= SCENE_CHANGE_SHARE
                and neighbour_max(moving.reshape(judge.model.grid[::-1])) < judge.hot):
            judge.relook(frame, list(judge.recent.frames))


class Remember:
    """The recent frames (``RecentFrames``): what a rebuild starts from, and the brightness
    the next frame's step is read against."""

    phase = ANY_PHASE

    def see(self, frame: Frame, judge) -> None:
        judge.recent.add(frame.x, frame.look.assessment.brightness)


class Scoring:
    """The frame's score: the largest z-score two neighbouring blocks reach in the residual or
    the motion, or the brightness step; the score that says whether the model finds it unusual
    (its own blocks, not the motion's); the block scores a verdict shows (the residual's or the
    motion's, the larger); and which evidence gave the score, for its event's kind
    (``FrameScore.evidence``). Nothing before the model is ready.

    A brightness step that alone makes the frame unusual is the evidence, whatever the blocks
    score: a switched light changes them too (colour casts, shadows), and on the 15 dev clips it
    reached ``hot`` on light switches only, never while a person or a vehicle was the event."""

    phase = ANY_PHASE

    def see(self, frame: Frame, judge) -> None:
        if not judge.model.ready:
            return
        grid = judge.model.grid[::-1]
        found = {"residual": neighbour_max(frame.look.z.reshape(grid)),
                 "brightness": frame.brightness_score}
        frame.model_score = max(*found.values(), neighbour_max(frame.unusual_z.reshape(grid)))
        frame.blocks = frame.look.z.reshape(grid)
        if frame.motion_z is not None:
            found["motion"] = neighbour_max(frame.motion_z.reshape(grid))
            frame.blocks = np.maximum(frame.look.z, frame.motion_z).reshape(grid)
        frame.score = max(found.values())
        frame.evidence = ("brightness" if frame.brightness_score >= judge.hot
                          else max(found, key=found.get))


class WarmupDamping:
    """``warmup_damping``: scored from the first frames, so that someone in view from the start
    is found; but statistics of a second's frames have not seen a tree's gusts yet, so the
    scores count for the share of the warm-up seen."""

    phase = WARMING_UP

    def see(self, frame: Frame, judge) -> None:
        frame.score *= judge.schedule.elapsed_ / judge.warmup


class WarmLook:
    """After the warm-up, what ``Learning`` reads of the model's view: whether the model itself
    finds the frame unusual (``model_score``: what its window holds is its business, not what
    moves; a busy lane is usual there, and its cars still flagged by their motion), and the
    frame's block energies, which the model's statistics keep if it learns the frame. While it
    warms up it learns what is in view, none of it unusual, and its statistics read such a
    frame's residual against the subspace it helps span."""

    phase = WARM

    def see(self, frame: Frame, judge) -> None:
        frame.unusual = frame.model_score >= judge.hot
        frame.energies = frame.look.assessment.block_energies


class Learning:
    """What the model learns (``LearningSchedule``), in the slot whose frame it forgets
    (``Forgetting``), told whether the model found it unusual (``WarmLook``)."""

    phase = ANY_PHASE

    def see(self, frame: Frame, judge) -> None:
        frame.learned = judge.schedule.should_learn()
        if frame.learned:
            judge.model.learn_one(frame.x, judge.forgetting.slot(judge.model, frame.unusual),
                                  norm=frame.look.assessment.norm, energies=frame.energies)


class Verdict:
    """The verdict, which ends the chain: with which evidence gave its score, and whether blocks
    of a lasting change became background at it (what its event's kind is read from)."""

    phase = ANY_PHASE

    def see(self, frame: Frame, judge) -> None:
        look, regions = frame.look, judge.regions
        lasting = bool((regions.absorbed_ & ~regions.following_ & ~frame.held).any())
        frame.give(FrameScore(frame.index, frame.time_s, look.assessment.residual, frame.score,
                              WARMUP if frame.warming_up else OK, frame.learned, frame.rebuilt,
                              evidence=frame.evidence, lasting=lasting,
                              left=frame.left),
                   look.residual_image.reshape(judge.frame_shape), frame.blocks)


# The rules in order, each with the name (``settings.MECHANISMS``) that leaves it out; those
# named ``lasting`` need lasting changes (``static_after``), as darkness does.
RULES = (("darkness", Darkness), ("", ModelLook), ("brightness_step", BrightnessStep),
         ("scene_rebuild", SettledLight), ("lasting", LastingChanges),
         ("revealed", Revealed), ("scene_rebuild", SceneChange), ("", Remember), ("", Scoring),
         ("warmup_damping", WarmupDamping), ("", WarmLook), ("", Learning), ("", Verdict))


def chain(off: frozenset[str]) -> list:
    """The rules, in order, but those ``off`` names."""
    return [rule() for name, rule in RULES if name not in off]
