"""Motion evidence (``detectors/motion.py``) alone, then in the detector: what moves against
how each block has moved lately."""

import numpy as np

from videvent.detectors import SubspaceWindowDetector
from videvent.detectors.background import neighbour_max
from videvent.detectors.background import MIN_SAMPLES
from videvent.detectors.motion import MotionEvidence

SHAPE = (48, 64)
GRID = (6, 5)                        # (columns, rows): blocks of about 10 x 10 pixels


def still_scene(rng, n, noise=2.0):
    picture = rng.uniform(30, 200, SHAPE).astype(np.float32)
    return picture + rng.normal(0, noise, (n, *SHAPE)).astype(np.float32)


def scores(motion, frames):
    out = []
    for x in frames:
        z = motion.score_one(x.ravel())
        out.append(np.nan if z is None else neighbour_max(z.reshape(GRID[::-1])))
        motion.learn_one(x.ravel())
    return np.array(out)


def test_nothing_is_scored_until_the_history_says_something():
    motion = MotionEvidence(SHAPE, GRID, history=50, refresh=5)
    result = scores(motion, still_scene(np.random.default_rng(0), MIN_SAMPLES + 3))
    assert np.isnan(result[:MIN_SAMPLES + 1]).all() and np.isfinite(result[MIN_SAMPLES + 1:]).all()


def test_something_moving_into_a_still_place_scores_and_a_still_scene_does_not():
    rng = np.random.default_rng(1)
    frames = still_scene(rng, 120)
    for t in range(80, 100):                          # a bright object crossing, 3 px a frame
        frames[t, 10:30, 3 * (t - 80):3 * (t - 80) + 8] += 80
    result = scores(MotionEvidence(SHAPE, GRID, history=50, refresh=5), frames)
    assert np.nanmax(result[:80]) < 4.5
    assert (result[81:99] > 7).all()


def test_a_place_that_always_moves_does_not_score_and_nor_does_a_change_of_the_whole_frame():
    """Stripes running all the time (an escalator) are how that place moves; the whole frame
    getting 30% brighter at once (a light, the exposure) is not motion."""
    rng = np.random.default_rng(2)
    frames = still_scene(rng, 150)
    x = np.arange(30)
    for t in range(150):
        frames[t, 10:40, 20:50] += 40 * np.sin(2 * np.pi * (x - 2 * t) / 9)
    frames[100:] *= 1.3
    result = scores(MotionEvidence(SHAPE, GRID, history=50, refresh=5), frames)
    assert np.nanmax(result) < 4.5


def test_a_frame_without_a_picture_leaves_nothing_to_move_from():
    rng = np.random.default_rng(3)
    frames = still_scene(rng, 40)
    motion = MotionEvidence(SHAPE, GRID, history=50, refresh=5)
    scores(motion, frames[:30])
    motion.forget_picture()
    assert motion.score_one(frames[30].ravel()) is None       # nothing before it
    motion.learn_one(frames[30].ravel())
    assert motion.score_one(frames[31].ravel()) is not None


def test_a_lane_busy_most_of_the_time_is_still_flagged_where_the_background_learns_it():
    """Traffic in most frames: what is in view most of the time is the scene's usual look to
    the background subspace, so it alone goes quiet; the cars still move against how the road
    moves when empty, and the detector flags them (``--without motion``: it does not)."""
    rng = np.random.default_rng(4)
    frames = still_scene(rng, 600, noise=1.0)
    busy = rng.random(600) < 0.7                      # a car in 70% of the frames, anywhere
    for t in np.flatnonzero(busy):                    # along the lane
        start = rng.integers(0, 56)
        frames[t, 12:24, start:start + 8] += 90
    def flagged_share(without):
        detector = SubspaceWindowDetector(
            SHAPE, method="sncp", rank=3, window=60, projection_dim=50, inlier_fraction=0.3,
            refit_every=1, blocks=6, light_invariant=True, stride=5, warmup=30,
            static_after=125, hot=4.5, settle_frames=12, without=without)
        verdicts = [detector.process_frame(i, i / 10, x.ravel()) for i, x in enumerate(frames)]
        return np.mean([v.score > 7 for v in verdicts[300:] if busy[v.index]])
    assert flagged_share(frozenset()) > 0.6
    assert flagged_share(frozenset({"motion"})) < 0.1
