"""The policy as one chain: each rule one step of a frame's judgement, behind one interface.

A ``SceneJudge`` (``subspace_window.py``) runs its rules in order over every frame with a
picture: ``rule.see(frame, judge)`` reads what the rules before it found (``Frame``), adds its
own, and may end the chain with a verdict (darkness does). The state each rule keeps is a
mechanism of ``policy.py`` (tested alone) that the judge holds; the judge's model is what the
rules score with, rebuild and teach. A mechanism is turned off (``--without NAME``) by leaving
its rule out of the list (``chain``).
"""

from __future__ import annotations

from dataclasses import dataclass

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
    learned: bool = False
    held: np.ndarray | None = None         # blocks absorbed as lasting changes before it
    verdict: FrameScore | None = None      # set: the chain ends

    def explained(self, score: float) -> bool:
        """Whether the verdict carries its residual image and block scores."""
        return self.explain is True or (self.explain is not False and score >= self.explain)


class Darkness:
    """``darkness`` (``DarkScene``): a picture that came out of a lasting darkness and stood
    still rebuilds the model; until then it is judged against the darkness, which ends the
    chain, unless the model knows it (the light came back on the scene it knew)."""

    def see(self, frame: Frame, judge) -> None:
        dark = judge.dark
        if dark.lit(frame.x):
            judge.rebuild(judge.last_frames(judge.warmup, frame.x))
            frame.rebuilt = True
        elif dark.active_:
            if judge.explains([frame.x]):
                dark.leave()
            else:
                frame.verdict = self._against_darkness(frame, judge)

    @staticmethod
    def _against_darkness(frame: Frame, judge) -> FrameScore:
        """As unusual as the picture is bright (or as its brightness stepped against the
        recent frames), and not learned until it settles."""
        brightness = brightness_of(frame.x)
        score = max(abs(brightness - judge.dark.dark_brightness_) / judge.light.scale,
                    judge.light.score(brightness, judge.recent.brightness))
        judge.recent.add(frame.x, brightness)
        explanation = {}
        if frame.explained(score):
            # Against darkness, the whole picture is what is unusual.
            explanation = {"residual_image": frame.x.reshape(judge.frame_shape).astype(np.float32),
                           "block_scores": np.full(judge.model.grid[::-1], score)}
        return FrameScore(frame.index, frame.time_s, 1.0, score, OK, False, **explanation,
                          evidence="darkness")


class ModelLook:
    """The model's view of the frame, and whether the model is still warming up."""

    def see(self, frame: Frame, judge) -> None:
        # The blocks absorbed as lasting changes before this frame (``Verdict``'s ``lasting``).
        frame.held = judge.regions.absorbed_ & ~judge.regions.following_
        frame.look = judge.look(frame.x)
        frame.unusual_z = frame.look.z
        frame.warming_up = not judge.model.ready or judge.schedule.warming_up


class BrightnessStep:
    """``brightness_step`` (``LightSwitch``): the step of the frame's brightness, which unit
    length hides from the model. Scored before the settled light is read (``SettledLight``):
    scoring the step counts the light's time."""

    def see(self, frame: Frame, judge) -> None:
        frame.brightness_score = judge.light.score(frame.look.assessment.brightness,
                                                   judge.recent.brightness)


class SettledLight:
    """``scene_rebuild``, after the warm-up: a switched light settled just now and the model
    does not explain it, so the new light is the scene, and the model is rebuilt from the
    frames since it settled (as from those that came out of darkness)."""

    def see(self, frame: Frame, judge) -> None:
        if (frame.warming_up or judge.light.settled_for_ != judge.settle_frames
                or not self._light_changed_scene(frame.look.z, judge)):
            return
        since = judge.last_frames(judge.settle_frames, frame.x)
        if len(since) > judge.model.rank + 1:
            judge.rebuild(since)
            frame.look = judge.look(frame.x, norm=frame.look.assessment.norm)
            frame.unusual_z = frame.look.z
            frame.rebuilt = True

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

    def see(self, frame: Frame, judge) -> None:
        if frame.warming_up:
            return
        look, x, recent = frame.look, frame.x, judge.recent.frames
        norm = max(look.assessment.norm, 1e-12)
        z, residual_image = judge.regions.update(
            x, look.z, look.residual_image,
            lambda image: judge.block_z(judge.model.block_energies(image, norm, x)),
            previous=recent[-1] if recent else None)
        # Blocks that follow a gradual change are light to the events, but still unusual to
        # the model: what it learns there while they follow (a person whose arrival moved the
        # exposure) must count against the presence share, not as background.
        frame.unusual_z = np.where(judge.regions.following_, look.z, z)
        frame.look = Look(look.assessment, z, residual_image)


class SceneChange:
    """``scene_rebuild``, after the warm-up: most blocks became static at once (a light
    switched and left on) and nothing unusual that is not absorbed still moves, so the whole
    scene changed: the model is rebuilt from the recent frames, which would otherwise hold
    whoever still moves about as the scene."""

    def see(self, frame: Frame, judge) -> None:
        regions = judge.regions
        if frame.warming_up or regions.absorbed_share < SCENE_CHANGE_SHARE:
            return
        moving = np.where(regions.absorbed_, 0.0, frame.look.z)
        if neighbour_max(moving.reshape(judge.model.grid[::-1])) < judge.hot:
            judge.rebuild(list(judge.recent.frames))
            frame.look = judge.look(frame.x, norm=frame.look.assessment.norm)
            frame.unusual_z = frame.look.z
            frame.rebuilt = True


class Remember:
    """The recent frames (``RecentFrames``): what a rebuild starts from, and the brightness
    the next frame's step is read against."""

    def see(self, frame: Frame, judge) -> None:
        judge.recent.add(frame.x, frame.look.assessment.brightness)


class Scoring:
    """The frame's score: the largest z-score two neighbouring blocks reach in the residual or
    the motion, or the brightness step; and the score that says whether the model finds it
    unusual (its own blocks, not the motion's). Nothing before the model is ready."""

    def see(self, frame: Frame, judge) -> None:
        if not judge.model.ready:
            return
        grid = judge.model.grid[::-1]
        frame.score = max(neighbour_max(frame.look.z.reshape(grid)), frame.brightness_score)
        frame.model_score = max(frame.score, neighbour_max(frame.unusual_z.reshape(grid)))
        if frame.motion_z is not None:
            frame.score = max(frame.score, neighbour_max(frame.motion_z.reshape(grid)))


class WarmupDamping:
    """``warmup_damping``: scored from the first frames, so that someone in view from the start
    is found; but statistics of a second's frames have not seen a tree's gusts yet, so the
    scores count for the share of the warm-up seen."""

    def see(self, frame: Frame, judge) -> None:
        if frame.warming_up:
            frame.score *= judge.schedule.elapsed_ / judge.warmup


class Learning:
    """What the model learns (``LearningSchedule``), in the slot whose frame it forgets
    (``Forgetting``). Unusual to the model itself: what its window holds is its business, not
    what moves (a busy lane is usual there, and its cars still flagged by their motion)."""

    def see(self, frame: Frame, judge) -> None:
        frame.learned = judge.schedule.should_learn()
        if frame.learned:
            look = frame.look
            unusual = not frame.warming_up and frame.model_score >= judge.hot
            judge.model.learn_one(
                frame.x, judge.forgetting.slot(judge.model, unusual), norm=look.assessment.norm,
                energies=None if frame.warming_up else look.assessment.block_energies)


class Verdict:
    """The verdict, which ends the chain: with which evidence gave its score, and whether blocks
    of a lasting change became background at it (what its event's kind is read from)."""

    def see(self, frame: Frame, judge) -> None:
        look, explanation = frame.look, {}
        if judge.model.ready and frame.explained(frame.score):
            blocks = look.z if frame.motion_z is None else np.maximum(look.z, frame.motion_z)
            explanation = {"residual_image": look.residual_image.reshape(judge.frame_shape),
                           "block_scores": blocks.reshape(judge.model.grid[::-1])}
        regions = judge.regions
        lasting = bool((regions.absorbed_ & ~regions.following_ & ~frame.held).any())
        frame.verdict = FrameScore(frame.index, frame.time_s, look.assessment.residual,
                                   frame.score, WARMUP if frame.warming_up else OK,
                                   frame.learned, frame.rebuilt, **explanation,
                                   evidence=self._evidence(frame, judge), lasting=lasting)

    @staticmethod
    def _evidence(frame: Frame, judge) -> str:
        """Which evidence gave the frame's score (``Scoring``'s largest), for its event's kind
        (``FrameScore.evidence``); '' before the model scores anything. A brightness step that
        alone makes the frame unusual is the evidence, whatever the blocks score: a switched
        light changes them too (colour casts, shadows), and on the 15 dev clips it reached
        ``hot`` on light switches only, never while a person or a vehicle was the event."""
        if not judge.model.ready:
            return ""
        if frame.brightness_score >= judge.hot:
            return "brightness"
        grid = judge.model.grid[::-1]
        found = [("residual", neighbour_max(frame.look.z.reshape(grid))),
                 ("brightness", frame.brightness_score)]
        if frame.motion_z is not None:
            found.append(("motion", neighbour_max(frame.motion_z.reshape(grid))))
        return max(found, key=lambda pair: pair[1])[0]


# The rules in order, each with the name (``settings.MECHANISMS``) that leaves it out; those
# named ``lasting`` need lasting changes (``static_after``), as darkness does.
RULES = (("darkness", Darkness), ("", ModelLook), ("brightness_step", BrightnessStep),
         ("scene_rebuild", SettledLight), ("lasting", LastingChanges),
         ("scene_rebuild", SceneChange), ("", Remember), ("", Scoring),
         ("warmup_damping", WarmupDamping), ("", Learning), ("", Verdict))


def chain(off: frozenset[str]) -> list:
    """The rules, in order, but those ``off`` names."""
    return [rule() for name, rule in RULES if name not in off]
