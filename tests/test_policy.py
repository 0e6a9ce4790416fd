"""The detector's policy objects, each alone: what becomes background, when darkness is the
scene, the light switch, a frozen picture and the start's second judge decide as their
docstrings say."""

from collections import deque

import numpy as np
import pytest

from videvent.detectors.base import FrameScore
from videvent.detectors.policy import (GHOST_MARGIN, MIN_SAMPLES, SETTLED_MOTION, DarkScene,
                                       FrozenPicture, LightSwitch, StartReference, StaticRegions,
                                       outline_margin)
from videvent.preprocess import FROZEN

SHAPE = (40, 40)
GRID = (4, 4)                                   # 16 blocks of 10 x 10 pixels
HOT = 4.5


# A scene has texture: on a flat block a uniform change cannot be told from the light's.
TEXTURE = np.random.default_rng(99).uniform(-30, 30, SHAPE).astype(np.float32)


def picture(rng, noise=1.0, level=80.0, gain=1.0):
    return (gain * (level + TEXTURE) + rng.normal(0, noise, SHAPE)).astype(np.float32)


def regions_fed(frames, z_of, static_after=10):
    """StaticRegions fed ``frames`` with the model's block z-scores ``z_of(t)``; the patched
    residual scores 0 everywhere (the absorbed picture explains the block)."""
    regions = StaticRegions(SHAPE, GRID, static_after=static_after, hot=HOT)
    history = []
    for t, frame in enumerate(frames):
        z, _ = regions.update(frame.ravel(), z_of(t), np.zeros(frame.size, np.float32),
                              lambda image: np.zeros(16))
        history.append((z.copy(), regions.absorbed_.copy()))
    return regions, history


def test_the_outline_margin_tells_a_thing_in_view_from_a_ghost():
    """A square in the frame that the model's picture lacks has its outline in the frame: a
    negative margin. The same square in the model's picture, gone from the frame (a ghost),
    has it in the model's: the margin is as large the other way. Noise alone has no outline,
    nor has a difference away from the pixels asked about: NaN."""
    rng = np.random.default_rng(1)
    empty = picture(rng)
    with_square = empty.copy()
    with_square[12:28, 12:28] += 60
    everywhere = np.ones(SHAPE, bool)
    in_view = outline_margin(with_square, with_square - empty, everywhere)
    ghost = outline_margin(empty, empty - with_square, everywhere)
    assert in_view < -GHOST_MARGIN and ghost >= GHOST_MARGIN
    assert ghost == pytest.approx(-in_view)
    assert np.isnan(outline_margin(empty, picture(rng) - picture(rng), everywhere))
    elsewhere = np.zeros(SHAPE, bool)
    elsewhere[:, 32:] = True
    assert np.isnan(outline_margin(with_square, with_square - empty, elsewhere))


def test_a_block_unusual_and_unchanging_is_absorbed_after_static_after_and_scores_anew():
    rng = np.random.default_rng(0)
    frames = [picture(rng) for _ in range(30)]
    z = np.zeros(16)
    z[5] = 9.0                                        # one block unusual from frame 0, still
    regions, history = regions_fed(frames, lambda t: z)
    absorbed_at = next(t for t, (_, absorbed) in enumerate(history) if absorbed[5])
    assert absorbed_at == 10                         # static_after frames still, then absorbed
    assert history[absorbed_at][0][5] == 0.0          # scored against its own picture since
    assert not history[-1][1][np.arange(16) != 5].any()
    # The model explains the block again (the object left, or the window learned it): it
    # goes back to the model.
    regions.update(frames[0].ravel(), np.zeros(16), np.zeros(frames[0].size, np.float32),
                   lambda image: np.zeros(16))
    assert not regions.absorbed_.any()


def test_a_block_that_turns_unusual_gradually_follows_its_picture_until_something_moves_in_it():
    """Light drifting over a block (a fraction of a grey level a frame) makes it unusual to
    the model without anything moving there: the block follows its picture and scores 0. A
    person arriving in it changes it by far more than its noise in one frame: it goes back to
    the model at once. A block that turns unusual abruptly never follows."""
    rng = np.random.default_rng(2)
    frames = [picture(rng) for _ in range(70)]
    for t, frame in enumerate(frames):
        frame[10:20, 10:20] += 0.4 * max(0, t - 10)          # block 5: light drifting in
        if t >= 30:
            frame[10:20, 20:30] += 40                        # block 6: something arrived
        if t >= 60:
            frame[12:18, 12:18] += 60                        # block 5: someone arrives
    regions = StaticRegions(SHAPE, GRID, static_after=20, hot=HOT, settled_after=5)
    z_model = np.zeros(16)
    history = []
    for t, frame in enumerate(frames):
        z_model[5] = 9.0 if t >= 25 else 0.0                 # the drift outgrew the model
        z_model[6] = 9.0 if t >= 30 else 0.0
        z, _ = regions.update(frame.ravel(), z_model.copy(), np.zeros(frame.size, np.float32),
                              lambda image: np.zeros(16),
                              previous=frames[t - 1].ravel() if t else None)
        history.append((z.copy(), regions.following_.copy()))
    assert all(following[5] and z[5] == 0.0 for z, following in history[25:60])
    # Block 6 stays unusual until it has stood still for static_after (then it is absorbed,
    # and may follow the light from there).
    assert not any(following[6] for _, following in history[:50])
    assert all(z[6] == 9.0 for z, _ in history[30:50])
    assert not history[60][1][5] and history[60][0][5] == 9.0
    assert not regions.absorbed_[5]


@pytest.mark.parametrize("noise", [1.0, 10.0])
def test_stillness_is_measured_against_the_blocks_own_noise(noise):
    """On a clean and on a noisy sensor alike, a still unusual block is absorbed; one where
    something moves by more than the noise is not."""
    rng = np.random.default_rng(1)
    usual = [picture(rng, noise) for _ in range(60)]             # the noise is learned here
    still = [picture(rng, noise) for _ in range(30)]
    moving = [picture(rng, noise) for _ in range(30)]
    for t, frame in enumerate(moving):                           # a bright square moving
        frame[10:15, 10 + 5 * (t % 2):15 + 5 * (t % 2)] += 120
    z_unusual = np.zeros(16)
    z_unusual[5] = 9.0
    z_of = (lambda t: np.zeros(16) if t < 60 else z_unusual)
    _, history = regions_fed(usual + still, z_of)
    assert history[-1][1][5]
    _, history = regions_fed(usual + moving, z_of)
    assert not any(absorbed[5] for _, absorbed in history)


def test_a_lasting_change_is_absorbed_while_the_light_dims_but_not_while_something_moves():
    """Stillness is up to the light's gain: a block that holds a new object while the camera's
    exposure falls one percent a frame (over static_after frames, far more than its noise
    from frame to frame) is absorbed; the same dimming with something moving in the block is
    not."""
    rng = np.random.default_rng(3)
    usual = [picture(rng) for _ in range(60)]
    dimming = [picture(rng, gain=0.99 ** t) for t in range(40)]
    moving = [picture(rng, gain=0.99 ** t) for t in range(40)]
    for t, frame in enumerate(moving):                           # a small square walking
        frame[11:15, 11 + t % 5:15 + t % 5] += 60
    z_unusual = np.zeros(16)
    z_unusual[5] = 9.0
    z_of = (lambda t: np.zeros(16) if t < 60 else z_unusual)
    _, history = regions_fed(usual + dimming, z_of)
    assert history[60 + 10][1][5]                                # static_after frames
    _, history = regions_fed(usual + moving, z_of)
    assert not any(absorbed[5] for _, absorbed in history)


def test_darkness_becomes_the_background_and_a_still_picture_settles_out_of_it():
    rng = np.random.default_rng(2)
    dark = DarkScene(SHAPE, GRID, static_after=5, settle_after=4)
    for _ in range(4):
        dark.blank(0.1)
    assert not dark.active_
    dark.blank(0.1)
    assert dark.active_ and dark.dark_brightness_ == 0.1
    lit = picture(rng)
    # A picture that keeps moving never settles; one that stands still does, once. (A change
    # of its overall gain is not movement: the exposure settles slowly after a light.)
    for t in range(6):
        moving = lit.copy()
        moving[10 * (t % 3):10 * (t % 3) + 10, :10] += 100
        assert not dark.lit(moving.ravel())
    settled = [dark.lit((lit * gain + rng.normal(0, 0.5, SHAPE)).astype(np.float32).ravel())
               for gain in (1.0, 0.9, 0.8, 0.8, 0.8, 0.8)]
    assert settled.index(True) == 4 and settled.count(True) == 1 and not dark.active_


def test_a_brightness_step_scores_and_a_switched_light_lasts_until_it_settles():
    light = LightSwitch(scale=0.1, hot=HOT, settle_frames=3)
    recent = deque([0.0] * (MIN_SAMPLES - 1), maxlen=20)
    assert light.score(0.0, recent) == 0.0            # too few recent frames to say
    recent.append(0.0)
    assert light.score(0.2, recent) == pytest.approx(2.0)          # a 20% step, not a switch
    assert not light.settling_
    # A light switched on: the step scores until the recent frames' median is the new light;
    # the exposure still moving after that keeps it at least hot until it has settled.
    def scores_of(light):
        recent = deque([0.0] * 5, maxlen=5)
        scores = []
        for brightness in (0.7, 0.75, 0.78, 0.78, 0.78, 0.78):
            scores.append(light.score(brightness, recent))
            recent.append(brightness)
        return scores
    settling = scores_of(LightSwitch(scale=0.1, hot=HOT, settle_frames=3))
    step_alone = scores_of(LightSwitch(scale=0.1, hot=HOT, settle_frames=3, settling=False))
    assert all(score >= HOT for score in settling[:5]) and settling[5] < HOT
    assert step_alone[:3] == pytest.approx([7.0, 7.5, 7.8]) and max(step_alone[3:]) < HOT
    assert 0.78 - 0.75 > SETTLED_MOTION           # frame 4 still moved over 3 frames
    # A blank frame (the light went out) makes the next picture settle first.
    after_blank = LightSwitch(scale=0.1, hot=HOT, settle_frames=3)
    assert after_blank.score(0.0, deque([0.0] * 5)) == 0.0     # a light that held
    after_blank.switched()
    recent = deque([0.0, 0.0, 0.0, 0.3, 0.3])          # a 30% step: not a switch by itself
    assert after_blank.score(0.3, recent) >= HOT
    assert LightSwitch(scale=0.1, hot=HOT, settle_frames=3).score(0.3, recent) < HOT


def test_a_switched_light_that_settled_is_the_new_normal_at_once():
    """Once the exposure holds, the step is read against the frames since it settled, not
    against a median of the recent frames that is still the old light's for seconds (here 25
    frames); a later switch from the new light scores as the first did."""
    def scores_of(light, recent):
        scores = []
        for brightness in [0.7, 0.75, 0.78] + [0.78] * 30:
            scores.append(light.score(brightness, recent))
            recent.append(brightness)
        return scores
    recent = deque([0.0] * 50, maxlen=50)
    light = LightSwitch(scale=0.1, hot=HOT, settle_frames=3)
    scores = scores_of(light, recent)
    settled = next(i for i, score in enumerate(scores) if score < HOT)
    assert settled <= 6 and max(scores[settled:]) < 1.0
    assert light.score(0.3, recent) >= HOT                    # the light going off again
    step_alone = scores_of(LightSwitch(scale=0.1, hot=HOT, settle_frames=3, settling=False),
                           deque([0.0] * 50, maxlen=50))
    assert min(step_alone[:25]) >= HOT                        # until the median is the new light


def test_a_cameras_first_light_is_no_switch_until_it_has_held():
    """A camera starting: its exposure ramps from the first frame (a blank one before it), and
    no step of it is a switch; once the light has held for settle_frames, a step is. Darkness
    that has held is a light too: the picture after it settles as a switched light does."""
    light = LightSwitch(scale=0.1, hot=HOT, settle_frames=3)
    light.switched()                                          # frame 0 black: not a switch
    recent = deque(maxlen=20)
    scores = []
    for brightness in [0.0, 0.3, 0.6, 0.8, 0.9, 0.95, 0.98, 1.0, 1.0, 1.0, 1.0, 1.0]:
        scores.append(light.score(brightness, recent))
        recent.append(brightness)
    assert max(scores) < HOT and light.held_ and not light.settling_
    assert light.score(1.6, recent) >= HOT                    # a switch from the held light
    after_darkness = LightSwitch(scale=0.1, hot=HOT, settle_frames=3)
    for _ in range(3):
        after_darkness.switched()
    recent = deque([0.5, 0.55, 0.6, 0.62, 0.63], maxlen=20)  # the light coming on, settling
    assert after_darkness.score(0.64, recent) >= HOT


def test_a_frozen_picture_gets_the_verdict_before_it_and_is_never_learned():
    frozen = FrozenPicture()
    assert frozen.verdict(FROZEN, 0, 0.0) is None
    frozen.remember(FrameScore(7, 0.7, 0.2, 9.0, "ok", True, True))
    again = frozen.verdict(FROZEN, 8, 0.8)
    assert (again.index, again.time_s, again.residual, again.score) == (8, 0.8, 0.2, 9.0)
    assert again.status == FROZEN and not again.admitted and not again.absorbed
    assert frozen.verdict("ok", 9, 0.9) is None                  # a picture is judged anew


def test_the_start_reference_stays_goes_or_takes_over():
    reference = StartReference(object(), hot=HOT, settle_frames=3, static_after=5, until=100)
    unusual = np.array([9.0, 9.0, 0.0])
    still, moving = np.array([3, 3, 0]), np.array([3, 0, 0])
    assert reference.decide(100, 0.0, unusual, still) == StartReference.GO   # window over
    assert reference.decide(50, 9.0, unusual, moving) == StartReference.STAY  # twin sees it
    assert reference.decide(50, 0.0, np.zeros(3), moving) == StartReference.GO  # both quiet
    # The model alone flags a picture that stands still: a ghost of the warm-up.
    assert reference.decide(50, 0.0, unusual, still) == StartReference.TAKE_OVER
    # ... or one that never stands still, once for static_after frames in a row.
    fresh = StartReference(object(), hot=HOT, settle_frames=3, static_after=5, until=100)
    decisions = [fresh.decide(50 + t, 0.0, unusual, moving) for t in range(5)]
    assert decisions == [StartReference.STAY] * 4 + [StartReference.TAKE_OVER]
    # ... but not if the model learned no presence (it spans nothing the twin found unusual):
    # what it alone flags then and moves is new, not a ghost.
    new = StartReference(object(), hot=HOT, settle_frames=3, static_after=5, until=100)
    decisions = [new.decide(50 + t, 0.0, unusual, moving, False) for t in range(8)]
    assert decisions == [StartReference.STAY] * 8
    assert new.decide(58, 0.0, unusual, still, False) == StartReference.TAKE_OVER
    reference.saw_learned(True, 7, 9.0)
    reference.saw_learned(True, 8, 1.0)
    reference.saw_learned(False, 9, 9.0)                 # scored, but the model did not learn it
    assert reference.seen_learned_ == {7}
    # Each frame scores the larger of the two verdicts.
    model, twin = FrameScore(5, 0.5, 0.1, 3.0, "ok", True), FrameScore(5, 0.5, 0.4, 8.0, "ok", False)
    assert reference.larger(model, twin) == FrameScore(5, 0.5, 0.4, 8.0, "ok", True)
    assert reference.larger(twin, model) is twin
