"""The streaming detector: its rolling state equals the batch maths, and each behaviour users
need (issue 11) holds on a synthetic scene: seeded start, long presence, static regions, no
blind spell, lights, frozen sources, and the robust scores doing the work."""

import copy
import pickle

import numpy as np
import pytest

from videvent.detectors import SubspaceWindowDetector
from videvent.detectors import subspace_window
from videvent.detectors.background import SubspaceBackground, neighbour_max
from videvent.detectors.rules import Revealed
from videvent.detectors.policy import (MAX_AGE_IN_WINDOWS, UNUSUAL_SHARE, Forgetting,
                                       LearningSchedule)
from videvent.preprocess import BLANK, CORRUPT, FROZEN, OK, REPEAT
from videvent.rpca import recovery_error, sncp_scores
from videvent.rpca.subspace import principal_directions
from videvent.status import WARMUP

SHAPE = (48, 64)
PATCH = (slice(8, 22), slice(10, 26))         # the event's place (top left)
OTHER = (slice(28, 44), slice(40, 58))        # another place (bottom right)


def scene(rng, n_frames, *, rank=3):
    """Frames from a rank-3 background that drifts slowly, plus sensor noise."""
    components = rng.uniform(0, 1, size=(rank, *SHAPE)) * 60 + 15
    weights = 1 + 0.3 * np.sin(np.outer(np.arange(n_frames), [0.3, 0.7, 1.1]) / 600)
    frames = np.tensordot(weights, components, axes=1)
    frames += rng.normal(0, 1, frames.shape)
    return frames.astype(np.float32)


def add_patch(frames, first, last, where=PATCH, *, moving=True, level=90.0):
    """A bright object in ``where`` over frames first..last; ``moving`` makes it jitter."""
    for i in range(first, last + 1):
        rows, cols = where
        shift = (i % 3) - 1 if moving else 0
        frames[i, rows.start + shift:rows.stop + shift, cols] += level
    return frames


# The synthetic scene's parameters, in frames: 6 blocks across, each of 10 x 10 pixels, about
# the size of a block of the default grid at the default working size.
MODEL = dict(method="sncp", rank=3, window=100, projection_dim=50, inlier_fraction=0.3,
             refit_every=1, blocks=6, light_invariant=True)
POLICY = dict(stride=10, warmup=25, static_after=125, hot=4.5, settle_frames=12)


def Detector(**parameters):
    return SubspaceWindowDetector(SHAPE, **{**MODEL, **POLICY, **parameters})


def Model(**parameters):
    return SubspaceBackground(SHAPE, **{**MODEL, "light_invariant": False, **parameters})


def feed(detector, frames, start=0):
    return [detector.process_frame(start + i, (start + i) / 10, x.ravel())
            for i, x in enumerate(frames)]


def learn(model, x, **options):
    """``model`` learns ``x`` in the slot the policy's forgetting gives (frames learned
    usual)."""
    forgetting = Forgetting(model.window, max_age=MAX_AGE_IN_WINDOWS * model.window,
                            presence_share=UNUSUAL_SHARE)
    model.learn_one(x, forgetting.slot(model, False), **options)


def scores_of(results):
    return np.array([r.score for r in results])


def test_rolling_gram_matrix_equals_the_window_products():
    model = Model(window=20, blocks=16)
    for x in scene(np.random.default_rng(0), 53):
        learn(model, x.ravel())
    X = model.frames_.astype(np.float64)
    np.testing.assert_allclose(model.gram_, X @ X.T, rtol=1e-5)


@pytest.mark.parametrize("light_invariant", [True, False])
@pytest.mark.parametrize("shape", [SHAPE, (45, 64), (48, 64, 3)])
def test_a_refits_window_energies_are_each_frames_own_block_energies(shape, light_invariant):
    """The refit works the window's residuals out a few frames at a time; each frame's block
    energies are what scoring that frame alone against the same subspace gives, whatever the
    window's length, the grid (whole-pixel blocks or not) and the channels."""
    rng = np.random.default_rng(3)
    model = SubspaceBackground(shape, **{**MODEL, "window": 21, "refit_every": 5,
                                         "light_invariant": light_invariant})
    frames = rng.uniform(20, 200, size=(3, *shape)).astype(np.float32)
    for i in range(21):
        x = (frames[i % 3] * (1 + 0.01 * i) + rng.normal(0, 2, shape)).astype(np.float32)
        learn(model, x.ravel())
    alone = []
    for x in model.frames_:
        outside = x - model.basis_ @ (model.basis_.T @ x)
        alone.append(model.block_energies(outside, np.linalg.norm(x), x))
    np.testing.assert_allclose(model._window_energies(), np.array(alone), rtol=1e-4, atol=1e-4)


def test_neighbour_max_of_one_grid_is_that_of_a_stack_of_it():
    """Two neighbouring blocks must both reach a value for it to count, one grid or many."""
    rng = np.random.default_rng(4)
    grids = [rng.normal(size=shape) for shape in [(9, 16), (1, 16), (9, 1), (1, 1)]]
    lone_peak = np.zeros((3, 4))
    lone_peak[1, 1] = 20.0                               # one block alone: not an event
    pair = lone_peak.copy()
    pair[1, 2] = 8.0                                     # with a neighbour: the lower of them
    infinite = pair.copy()
    infinite[1, 1:3] = np.inf
    for grid in [*grids, lone_peak, pair, infinite]:
        assert neighbour_max(grid) == neighbour_max(np.stack([grid, grid]))[1]
    assert neighbour_max(lone_peak) == 0.0 and neighbour_max(pair) == 8.0
    assert neighbour_max(infinite) == np.inf and neighbour_max(np.full((1, 1), 3.0)) == 3.0


def test_refit_gives_the_papers_subspace_of_the_window():
    """Gram eigenpairs -> projection -> SNCP -> basis equals the same steps done with SVDs."""
    rng = np.random.default_rng(1)
    model = Model(window=40, projection_dim=10, rank=3, inlier_fraction=0.5, region_vote=False,
                  blocks=16)
    frames = scene(rng, 40).reshape(40, -1)
    frames[::7] += rng.uniform(0, 80, size=frames[::7].shape).astype(np.float32)  # outliers
    for x in frames:
        learn(model, x)
    D = model.frames_.T.astype(np.float64)
    projection = principal_directions(D, 10)
    Y = projection.T @ D
    Yn = Y / np.linalg.norm(Y, axis=0)
    chosen = np.argsort(-sncp_scores(Y))[:20]
    U = np.linalg.svd(Yn[:, chosen], full_matrices=False)[0][:, :3]
    assert recovery_error(projection @ U, model.basis_.astype(np.float64)) < 1e-3


def test_the_model_says_which_learned_frames_span_its_background():
    frames = add_patch(scene(np.random.default_rng(2), 40), 30, 34)   # learned as 30..34
    model = Model(window=40, refit_every=1)
    for x in frames[:39]:
        learn(model, x.ravel())
    assert model.spans_any({3, 20}) and not model.spans_any({30, 31, 34})   # 30..34 outvoted
    assert not model.spans_any(set()) and not model.spans_any({99})         # never learned
    learn(model, frames[39].ravel(), refit=False)        # no refit since: it may span yet
    assert model.spans_any({39})


def test_basis_stays_orthonormal_when_the_window_spans_fewer_dimensions_than_rank():
    picture = scene(np.random.default_rng(2), 1)[0].ravel()
    model = Model(window=30, rank=3, blocks=16)
    for scale in np.linspace(1, 2, 60):
        learn(model, (scale * picture).astype(np.float32))  # a rank-1 window
    basis = model.basis_.astype(np.float64)
    assert np.isfinite(basis).all() and 1 <= basis.shape[1] <= 3
    np.testing.assert_allclose(basis.T @ basis, np.eye(basis.shape[1]), atol=1e-4)
    x = 1.5 * picture.astype(np.float64)
    assert np.linalg.norm(x - basis @ (basis.T @ x)) < 1e-3 * np.linalg.norm(x)


def test_something_in_view_from_the_first_frame_is_found_when_seeded_and_leaves_no_ghost():
    rng = np.random.default_rng(3)
    frames = add_patch(scene(rng, 300), 0, 59)            # in view from frame 0, then gone
    seeded = Detector(window=60, stride=10)
    assert seeded.seed([frames[i].ravel() for i in range(0, 300, 5)]) == 60
    scores = scores_of(feed(seeded, frames))
    assert (scores[:60] > 7).all()
    assert (scores[62:] < 4.5).all()                       # no ghost when it has left
    # Unseeded (live), the same start is learned as background: what seeding is for.
    live = scores_of(feed(Detector(window=60, stride=10), frames))
    assert (live[:60] < 7).all()


def test_a_seed_whose_majority_shows_someone_standing_gets_the_empty_scene_as_background():
    """Someone stands (fidgeting) through two thirds of a video, then the place is empty. The
    inlier scores pick what most seed frames show, them; the empty frames show their ghost
    (the outline in the model's picture, not the frame's), so the seed keeps only the frames
    that show the place without them, and from the model re-seeded so every frame that went
    holds them (an addition, no ghost): the empty scene is the background. Without the
    outline test the majority's picture is."""
    rng = np.random.default_rng(3)
    empty = scene(rng, 300)
    frames = add_patch(empty.copy(), 0, 199)               # standing from frame 0 to 199
    seed = [frames[i].ravel() for i in range(0, 300, 5)]
    detector = Detector(window=60, stride=10)
    assert detector.seed(seed) == 20                        # the 20 empty frames of 60
    assert detector.judge.unusualness(empty[250].ravel()) < 4.5
    assert detector.judge.unusualness(frames[100].ravel()) > 7
    by_majority = Detector(window=60, stride=10, without=frozenset({"revealed"}))
    assert by_majority.seed(seed) == 60
    assert by_majority.judge.unusualness(empty[250].ravel()) > 7
    assert by_majority.judge.unusualness(frames[100].ravel()) < 4.5


def test_a_reference_seeded_from_the_whole_video_finds_what_is_in_view_from_the_start():
    rng = np.random.default_rng(3)
    frames = add_patch(scene(rng, 300), 0, 59)            # in view from frame 0, then gone
    detector = Detector(window=60, stride=10)
    seed = [frames[i].ravel() for i in range(0, 300, 5)]
    assert detector.seed_reference(seed) == 60
    assert detector.seed_reference(seed) == 60                 # again: replaces, never nests
    assert detector.start_reference_.twin.model.n_pinned_ == 30    # half the window
    results = feed(detector, frames)
    scores = scores_of(results)
    # Past the warm-up (25 frames), which learned the patch, the twin judges it to its end;
    # when it leaves, the model alone sees the empty scene, standing still (a ghost): the
    # twin takes over within settle_frames (12) and nothing is flagged after.
    assert [r.status for r in results].count("warmup") == 25
    assert (scores[:60] > 7).all()
    assert 60 < detector.start_reference_adopted_ <= 60 + 12 + 2
    assert (scores[detector.start_reference_adopted_ + 1:] < 4.5).all()
    assert detector.start_reference_ is None and detector.seeded_ == 0
    assert detector.judge.regions.static_after == detector.static_after
    assert detector.model.n_pinned_ == 0               # the seed frames stream on as any other
    with pytest.raises(ValueError, match="before the first frame"):
        detector.seed_reference([frames[0].ravel()] * 10)
    # The model alone (a live source) learned the patch and scores its leaving as an event,
    # until the place has stood still and been a ghost for settle_frames each (``revealed``).
    live = scores_of(feed(Detector(window=60, stride=10), frames))
    settle = POLICY["settle_frames"]
    assert (live[:60] < 7).all() and (live[60:60 + 2 * settle - 1] > 7).all()
    assert (live[60 + 2 * settle - 1:] < 4.5).all()
    # Nothing in view at the start: the twin goes with the warm-up.
    quiet = Detector(window=60, stride=10)
    quiet.seed_reference([frames[i].ravel() for i in range(60, 300, 4)])
    feed(quiet, frames[60:86])
    assert quiet.start_reference_ is None and quiet.start_reference_adopted_ is None
    nothing = Detector()
    assert nothing.seed_reference([]) == 0 and nothing.start_reference_ is None


def test_a_visitor_who_comes_as_the_warm_up_ends_is_found_where_visitors_fill_the_file():
    """Someone comes as the warm-up ends and fidgets; someone else later, elsewhere: a presence
    in two thirds of the file. The twin, seeded from frames of the whole file, half learned
    them and finds them usual; the model learned only the empty warm-up, so what it alone
    flags, moving, is no ghost, and the twin does not take over (it used to once the model
    had flagged the first visitor alone for ``static_after``, and then missed them)."""
    rng = np.random.default_rng(6)
    frames = add_patch(scene(rng, 300), 25, 120)
    add_patch(frames, 150, 260, OTHER)
    detector = Detector(window=60, stride=10, static_after=60)
    detector.seed_reference([frames[i].ravel() for i in range(0, 300, 5)])
    scores = scores_of(feed(detector, frames))
    assert detector.start_reference_adopted_ is None
    assert (scores[25:121] > 7).all() and (scores[150:261] > 7).all()
    assert (scores[:25] < 4.5).all() and (scores[122:150] < 4.5).all()
    assert (scores[262:] < 4.5).all()


def test_no_ghost_is_left_where_the_scene_never_stands_still():
    """Escalators or a curtain where the first seconds held people: when they leave, the empty
    place keeps moving. It is found while in view, and once it has left nothing is flagged
    (with the model learning frames spread over all the time seen, stripes that run a pixel a
    frame are never a still ghost; where one remains, the twin takes over, as below)."""
    rng = np.random.default_rng(3)
    frames = add_patch(scene(rng, 300), 0, 59)            # in view from frame 0, then gone
    rows, cols = PATCH                                     # a place that moves all along:
    x = np.arange(cols.stop - cols.start)                  # stripes running a pixel a frame
    for t in range(len(frames)):
        frames[t, rows, cols] += (20 * np.sin(2 * np.pi * (x - t) / 8)).astype(np.float32)
    detector = Detector(window=60, stride=10, static_after=60)
    detector.seed_reference([frames[i].ravel() for i in range(0, 300, 5)])
    scores = scores_of(feed(detector, frames))
    assert (scores[:60] > 7).all()
    assert (scores[66:] < 4.5).all()


def test_the_twin_stays_past_a_warm_up_that_filled_the_window_while_it_sees_the_event():
    """A high frame rate: the warm-up fills the whole window with frames of what is in view
    then (traffic). The twin, which knows the file's look, keeps judging it as long as it
    lasts, not only until the window is full; when it leaves, the twin takes over. At the
    latest, it goes once the model's window has turned over."""
    rng = np.random.default_rng(5)
    empty = scene(rng, 300)
    frames = add_patch(empty.copy(), 0, 99)               # moving from frame 0 to 99
    detector = Detector(window=25, stride=10)              # warm-up: 25 frames, the window
    detector.seed_reference([frames[i].ravel() for i in range(0, 300, 12)])
    scores = scores_of(feed(detector, frames))
    assert (scores[:100] > 7).all()
    assert 100 < detector.start_reference_adopted_ <= 100 + 12 + 2
    assert (scores[detector.start_reference_adopted_ + 1:] < 4.5).all()
    # The model alone learned the patch in its warm-up, the whole window.
    alone = scores_of(feed(Detector(window=25, stride=10), frames))
    assert (alone[25:100] < 4.5).all()
    # In view to the end (a file whose look, the seed, is the empty scene), the twin goes once
    # the model's window has turned over: 25 frames learned after the warm-up, one in ten, so
    # at frame 24 + 250.
    busy = Detector(window=25, stride=10)
    busy.seed_reference([empty[i].ravel() for i in range(0, 300, 12)])
    frames = add_patch(empty.copy(), 0, 299)
    feed(busy, frames[:274])
    assert busy.start_reference_ is not None
    feed(busy, frames[274:276], start=274)
    assert busy.start_reference_ is None and busy.start_reference_adopted_ is None


def test_a_presence_that_keeps_moving_is_flagged_as_long_as_it_lasts():
    rng = np.random.default_rng(4)
    # 200 frames: 2.5x the static time, 40% of the time the window spans (500 frames)
    frames = add_patch(scene(rng, 500), 150, 349)
    detector = Detector(window=50, stride=10, static_after=80)
    results = feed(detector, frames)
    scores = scores_of(results)
    assert (scores[150:350] > 7).all()
    assert (scores[100:148] < 4.5).all() and (scores[352:] < 7).all() and (scores[380:] < 4.5).all()
    assert not any(r.absorbed for r in results)


@pytest.mark.parametrize("window, stride, warmup, first", [(60, 3, 20, 30), (90, 2, 10, 20)])
def test_a_presence_never_becomes_the_windows_majority(window, stride, warmup, first):
    """A low frame rate: a short warm-up, then the window fills one frame in ``stride`` while
    someone moves in one place for 300 frames. The frames learned while found unusual hold at
    most a third of the frames in the window, full or not (with a warm-up of 10 frames, a
    third of the window's capacity would be a majority of the 40-odd frames it holds when the
    presence comes), so the per-block vote keeps the empty scene: the presence is flagged to
    its end and leaves no ghost."""
    rng = np.random.default_rng(7)
    last = first + 299
    frames = add_patch(scene(rng, 400), first, last)
    detector = Detector(window=window, stride=stride, warmup=warmup)
    scores = scores_of(feed(detector, frames))
    assert (scores[first:last + 1] > 7).all()
    assert (scores[last + 6:] < 4.5).all()
    held = detector.model.n_filled_
    assert detector.judge.forgetting.unusual_[:held].sum() <= held / 3


@pytest.mark.parametrize("noise", [1.0, 8.0])
def test_a_lasting_change_is_absorbed_on_a_clean_and_on_a_noisy_sensor(noise):
    """Stillness is measured against each block's own noise: a camera whose pixels move 8 grey
    levels from frame to frame (a cheap sensor, at night) absorbs an object left in view as
    a clean one does, within the absorb time and a few frames (with a fixed tolerance of a
    few grey levels, the noisy one never did)."""
    rng = np.random.default_rng(11)
    frames = scene(rng, 400)
    frames += rng.normal(0, noise, frames.shape).astype(np.float32)
    frames = add_patch(frames, 150, 399, moving=False)
    detector = Detector(window=50, stride=10, static_after=40)
    scores = scores_of(feed(detector, frames))
    assert (scores[150:180] > 7).all()                  # placed: an event
    assert (scores[150 + 40 + 10:] < 4.5).all()         # then background


def test_a_codec_that_codes_some_frames_coarser_is_noise_not_an_event():
    """A quantiser that changes from frame to frame (as FFmpeg's MJPEG rate control does)
    raises every block of the frames it codes coarser: that is the frame's own noise
    (``frame_noise``), taken off its blocks, so no frame of the still scene is an event and an
    object placed in it still is. Read as the scene's, the coarser frames were events. A lamp
    that lights two thirds of the scene changes their coarse picture: never the frame's noise."""
    rng = np.random.default_rng(5)
    frames = scene(rng, 320)
    coarser = (np.arange(320) >= 80) & (np.arange(320) // 3 % 2 == 1)
    frames[coarser] += rng.normal(0, 4, frames[coarser].shape).astype(np.float32)
    frames = add_patch(frames, 220, 260)
    detector = Detector()
    scores = scores_of(feed(detector, frames))
    assert scores[60:219].max() < POLICY["hot"] and (scores[222:258] > 10).all()
    noise_as_scene = scores_of(feed(Detector(without={"frame_noise"}), frames))
    assert (noise_as_scene[60:219] >= POLICY["hot"]).sum() > 20
    lamp = frames[100] * np.where(np.arange(SHAPE[1]) < 2 * SHAPE[1] // 3, 1.6, 1.0)
    model = detector.model
    x = lamp.ravel()
    energies = model.block_energies(x - model.basis_ @ (model.basis_.T @ x), np.linalg.norm(x), x)
    assert model.noise_of(x, energies) == 0.0

def test_the_place_someone_leaves_after_the_warm_up_learned_them_is_an_event_for_seconds_only():
    """Someone stands in view from the first frame (no seed, as a watch starts): the warm-up
    learns them. When they leave, the place is a ghost (the outline in the model's picture):
    once it has stood still for ``settle_frames`` and been a ghost for as long again, the model
    is rebuilt without the frames that show them (``revealed``), where it had stayed an event
    until absorbed as a lasting change. A later visit is an event either way."""
    rng = np.random.default_rng(7)
    frames = add_patch(scene(rng, 400), 0, 119, moving=False)
    frames = add_patch(frames, 300, 330)
    settle = POLICY["settle_frames"]
    for without, ghost_until in ((frozenset(), 120 + 2 * settle),
                                 (frozenset({"revealed"}), 120 + POLICY["static_after"])):
        hot = scores_of(feed(Detector(without=without), frames)) >= POLICY["hot"]
        assert hot[120:120 + settle].all() and hot[300:331].all()
        assert np.flatnonzero(hot[120:300]).max() + 120 in range(ghost_until - 3, ghost_until + 1)
    # A start judged against frames spread over the video leaves it to that judge.
    judged = Detector()
    assert judged.seed_reference(frames[::8].reshape(50, -1)) > 0
    assert not any(isinstance(rule, Revealed) for rule in judged.judge.rules)

def test_a_static_object_becomes_background_in_its_region_only_with_no_blind_spell():
    rng = np.random.default_rng(5)
    frames = add_patch(scene(rng, 400), 100, 399, moving=False)   # left, and it stays
    frames = add_patch(frames, 200, 230, OTHER)                   # later, someone elsewhere
    detector = Detector(window=50, stride=10, static_after=40)
    results = feed(detector, frames[:190])
    absorbed = detector.absorbed_blocks
    assert absorbed[:2, :3].any() and not absorbed[2:].any() and not absorbed[:, 3:].any()
    results += feed(detector, frames[190:], start=190)
    scores = scores_of(results)
    assert (scores[100:135] > 7).all()                  # placed: an event
    assert (scores[145:198] < 4.5).all()                # then background, in its own blocks
    assert (scores[200:231] > 7).all()                  # the rest of the frame still watched
    assert (scores[235:] < 4.5).all()
    assert not any(r.absorbed for r in results)         # no rebuild of the whole model


def test_lights_switched_are_a_short_event_then_the_new_light_is_background():
    rng = np.random.default_rng(6)
    frames = scene(rng, 400)
    frames[100:250] *= np.linspace(1.0, 1.25, 150, dtype=np.float32)[:, None, None]  # drift
    frames[250:] *= 0.4                                                              # off
    frames = add_patch(frames, 340, 370, OTHER, level=40.0)    # someone in the dim scene
    detector = Detector(window=50, stride=10, static_after=30)
    scores = scores_of(feed(detector, frames))
    assert (scores[60:250] < 4.5).all()                 # slow drift is never an event
    assert (scores[250:262] > 7).all()                  # the switch is
    assert (scores[290:338] < 4.5).all()                # a few seconds later: background
    assert (scores[342:370] > 7).all()                  # people in the dimmer scene: found


def test_a_lamp_that_changes_a_few_blocks_is_the_new_scene_once_its_light_settles():
    """A lamp switched on in a dim room: the frame brightens by half (a switch), and the
    lamp's own glow changes the picture of a corner only, a minority of the blocks. Once the
    light has settled, the lit room is the scene, however few blocks it changed; someone who
    comes in later is found in it."""
    rng = np.random.default_rng(14)
    frames = scene(rng, 400)
    rows, cols = np.mgrid[0:SHAPE[0], 0:SHAPE[1]]
    glow = 70 * np.exp(-(rows ** 2 + cols ** 2) / 300.0)              # the lamp, top left
    frames[200:] = frames[200:] * 1.5 + glow.astype(np.float32)
    frames = add_patch(frames, 330, 360, OTHER)                       # someone, later
    detector = Detector(window=50, stride=10, static_after=100)
    results = feed(detector, frames)
    scores = scores_of(results)
    assert (scores[200:206] > 7).all()                                # the switch
    assert any(r.absorbed for r in results[200:240])                  # the lit room: the scene
    assert (scores[240:328] < 4.5).all()
    assert (scores[332:360] > 7).all()


def test_the_scene_is_not_rebuilt_while_something_in_it_still_moves():
    """A lamp lights most of the scene (an added glow, which no block's own gain explains)
    while someone moves about: most blocks become static and new, but the model is rebuilt
    from the recent frames only once nothing unusual moves any more, so the person is not
    learned with the new light and leaves no ghost (here the place the person left is a ghost
    first: the model is rebuilt without them, ``revealed``, a few frames before the scene's
    rebuild would have come)."""
    rng = np.random.default_rng(12)
    frames = scene(rng, 420)
    rows, cols = np.mgrid[0:frames.shape[1], 0:frames.shape[2]]
    glow = 60 * np.exp(-((rows - 10) ** 2 + (cols - 60) ** 2) / 900.0) + 25
    frames[150:] += glow.astype(np.float32)
    frames = add_patch(frames, 140, 260, PATCH)                    # someone, moving
    detector = Detector(window=50, stride=10, static_after=30)
    results = feed(detector, frames)
    scores = scores_of(results)
    rebuilt = [r.index for r in results if r.absorbed or r.left]
    assert rebuilt and all(index > 260 for index in rebuilt)
    assert (scores[140:258] > 7).all()                            # the person, all along
    assert (scores[rebuilt[0] + 2:] < 4.5).all()                  # then nothing: no ghost


def test_the_robust_scores_keep_event_frames_in_the_window_out_of_the_background():
    """The window holds 30% event frames; SNCP's inliers span what the background frames
    alone span, PCA's do not."""
    rng = np.random.default_rng(7)
    components = rng.uniform(0, 1, size=(3, *SHAPE)) * 60 + 15
    background = np.tensordot(rng.uniform(0.5, 1.5, size=(100, 3)), components, axes=1)
    background += rng.normal(0, 1, background.shape)
    frames = add_patch(background.astype(np.float32), 0, 29).reshape(100, -1)
    background_alone = principal_directions(frames[30:].T.astype(np.float64), 3)
    errors = {}
    for method in ("sncp", "pca"):
        model = Model(window=100, method=method)
        model.reset(frames)
        errors[method] = recovery_error(background_alone, model.basis_.astype(np.float64))
    assert errors["sncp"] < 0.05 and errors["pca"] > 0.5


@pytest.mark.parametrize("health", [BLANK, CORRUPT])
def test_frames_without_a_picture_are_reported_never_nan(health):
    detector = Detector(window=30)
    feed(detector, scene(np.random.default_rng(8), 40))
    size = SHAPE[0] * SHAPE[1]
    result = detector.process_frame(40, 4.0, None if health == CORRUPT else np.zeros(size),
                                    health)
    assert result.status == health and not result.admitted
    assert np.isfinite([result.residual, result.score]).all() and result.score == 0.0


def test_an_all_zero_frame_fed_as_ok_scores_zero_not_nan():
    detector = Detector(window=30)
    feed(detector, scene(np.random.default_rng(9), 40))
    result = detector.process_frame(40, 4.0, np.zeros(SHAPE[0] * SHAPE[1], np.float32))
    assert np.isfinite([result.residual, result.score]).all()


def test_a_frozen_frame_keeps_the_verdict_before_it_and_stays_out_of_the_window():
    """A frozen source (a picture that stood exactly still for long) is reported as the frame
    before it was, with the status frozen, and is not learned."""
    frames = scene(np.random.default_rng(10), 50)
    detector = Detector(window=30, stride=1)
    previous = feed(detector, frames)[-1]
    filled, learned = detector.model.n_filled_, detector.model.n_learned_
    again = detector.process_frame(50, 5.0, frames[-1].ravel(), FROZEN, explain=True)
    assert (again.index, again.time_s) == (50, 5.0)
    assert (again.residual, again.score) == (previous.residual, previous.score)
    assert again.status == FROZEN
    assert detector.model.n_filled_ == filled and detector.model.n_learned_ == learned
    assert not again.admitted


def test_a_still_scene_coded_as_repeats_is_a_moment_of_the_scene_like_any_other():
    """A low bit rate codes a still room as repeats of a frame. They are scored and learned as
    the schedule says, so the warm-up lasts the same time (and the window holds the same
    frames) whether the encoder repeated or not."""
    frames = scene(np.random.default_rng(12), 80)
    for i in range(1, 80, 2):
        frames[i] = frames[i - 1]                        # every other frame a repeat
    plain, coded = Detector(window=30, stride=2), Detector(window=30, stride=2)
    plain_results = feed(plain, frames)
    coded_results = [coded.process_frame(i, i / 10, x.ravel(), REPEAT if i % 2 else OK)
                     for i, x in enumerate(frames)]
    assert [r.status for r in coded_results] == [r.status for r in plain_results]
    assert WARMUP in {r.status for r in coded_results} and coded_results[-1].status == OK
    assert coded.model.n_learned_ == plain.model.n_learned_ > 30
    assert any(r.admitted for i, r in enumerate(coded_results) if i % 2)
    assert np.array_equal(scores_of(coded_results), scores_of(plain_results))


@pytest.mark.parametrize("kwargs, message", [
    ({"method": "median"}, "unknown method"), ({"rank": 5, "window": 5}, "window longer"),
    ({"projection_dim": 2}, "below rank"), ({"inlier_fraction": 0}, "inlier fraction"),
    ({"static_after": 0}, "static_after"), ({"blocks": 0}, "blocks"), ({"stride": 0}, "stride"),
])
def test_bad_parameters_are_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        Detector(**kwargs)


def test_memory_is_bounded_by_the_window():
    frames = add_patch(scene(np.random.default_rng(11), 60), 10, 59)
    detector = Detector(window=25, stride=2)
    for repeat in range(5):
        feed(detector, frames, start=60 * repeat)
    model = detector.model
    assert model.frames_.shape == (25, SHAPE[0] * SHAPE[1])
    assert len(model.block_history_) <= 25 and len(detector.judge.recent.frames) <= 25


def test_a_presence_longer_than_the_window_spans_stays_one_event_with_no_ghost():
    """Frames of a presence replace the frames the window's vote outvotes first, so the
    background frames stay while it lasts (the window spans 100 frames, the presence 150)."""
    rng = np.random.default_rng(12)
    frames = add_patch(scene(rng, 400), 100, 249)
    detector = Detector(window=50, stride=2, static_after=None)
    scores = scores_of(feed(detector, frames))
    assert (scores[100:250] > 7).all()
    assert (scores[255:] < 4.5).all()


def test_a_pass_started_its_look_back_before_a_place_gives_the_verdicts_from_there(
        monkeypatch):
    """The window forgets (issue 26): a pass started ``look_back`` frames before a place gives
    the verdicts, from there, of the pass that started at the beginning, which started with
    someone standing (a live start learns them: a ghost when they leave) and forgets them as
    the frames of its start age out; someone else comes much later. Compared at a frame, the
    two passes say whether they hold the same background: not while the ghost lasts.
    (Where two backgrounds each hold themselves, which one a pass keeps depends on its start:
    see docs/how-it-works.md.)"""
    rng = np.random.default_rng(5)
    frames = add_patch(scene(rng, 800), 0, 59)
    add_patch(frames, 700, 740, where=OTHER)
    parameters = dict(window=20, stride=3, static_after=None)   # memory: the window's alone

    def scan(first, last, *, keep_at=()):
        """Results of a pass over first..last, and copies of its detector at ``keep_at``."""
        detector, results, kept = Detector(**parameters), [], {}
        for place in (*keep_at, last):
            results += feed(detector, frames[first + len(results):place],
                            start=first + len(results))
            kept[place] = copy.deepcopy(detector)
        return results, kept

    look_back = Detector(**parameters).look_back
    assert look_back == 5 * 20 * 3 + 25
    place = 500
    results, from_start = scan(0, 800, keep_at=(200, place))
    scores = scores_of(results)
    assert (scores[60:120] > 4.5).all()                     # the ghost of the start
    partway, started_later = scan(place - look_back, 800, keep_at=(place,))
    assert [r.score >= 4.5 for r in partway[look_back:]] == list(scores[place:] >= 4.5)
    assert (scores[700:741] >= 4.5).all() and (scores[745:] < 4.5).all()
    # At frame 200 the pass from the start still sees its ghost; one started after the patch
    # left holds another background. By ``place`` both hold the empty scene.
    assert not from_start[200].holds_background_of(scan(100, 200)[1][200])
    assert from_start[place].holds_background_of(started_later[place])
    # A window that kept its start's frames for good would still see the ghost there.
    monkeypatch.setattr(subspace_window, "MAX_AGE_IN_WINDOWS", 10 ** 6)
    unbounded = scores_of(scan(0, 700)[0])
    assert (unbounded[place:] > 4.5).all()


def test_a_detector_restored_from_a_pickle_goes_on_exactly_as_the_pass_it_came_from():
    """A pass's whole state (the window, the policy, the start's twin) travels as a pickle,
    as a chunk's detector would between a cluster's workers, and loses nothing."""
    rng = np.random.default_rng(9)
    frames = add_patch(add_patch(scene(rng, 260), 0, 39), 150, 200, where=OTHER, moving=False)
    detector = Detector(window=30, stride=3, static_after=40)
    detector.seed_reference([frames[i].ravel() for i in range(0, 260, 5)])
    feed(detector, frames[:45])
    assert detector.start_reference_ is not None            # the twin is still judging
    restored = pickle.loads(pickle.dumps(detector))
    went_on, came_back = feed(detector, frames[45:], start=45), feed(restored, frames[45:], 45)
    assert [(r.score, r.status, r.admitted, r.absorbed) for r in went_on] == [
        (r.score, r.status, r.admitted, r.absorbed) for r in came_back]
    assert max(r.score for r in went_on[105:]) > 7              # the later event is found


def test_darkness_is_the_background_then_a_picture_is_an_event_until_it_settles():
    """The picture out of darkness settles as a switched light does (``settle_frames``), not
    over a warm-up: a light left on for a second then switched off is two events."""
    rng = np.random.default_rng(13)
    frames = add_patch(scene(rng, 220), 60, 119)        # a person where the light came on
    frames[:60] = 0                                     # a dark room
    detector = Detector(window=30, static_after=40, warmup=25, settle_frames=6)
    results = []
    for i, x in enumerate(frames):
        health = BLANK if i < 60 else "ok"
        results.append(detector.process_frame(i, i / 10, x.ravel(), health))
    scores = scores_of(results)
    assert (scores[:60] == 0).all()                     # dark: reported blank, not scored
    assert (scores[60:120] > 7).all()                   # the picture is an event while it moves
    [settled] = [r.index for r in results if r.absorbed]
    assert 126 <= settled <= 128                        # it stood still for settle_frames
    assert (scores[settled + 1:] < 4.5).all()           # and is the background from then on


def test_in_a_video_mostly_dark_the_lit_start_is_judged_against_darkness():
    """A room lit only while someone is in it, the recording starting while they are: every
    lit frame of the file shows them, so the file's pictures cannot say what is usual; its
    usual look is darkness, and the start is an event from the first frame, undamped."""
    rng = np.random.default_rng(13)
    frames = add_patch(scene(rng, 300), 0, 79)           # lit with a person, then dark
    frames[80:] = 0
    health = ["ok"] * 80 + [BLANK] * 220
    detector = Detector(window=30, static_after=40, warmup=25)
    assert detector.seed_reference([frames[i].ravel() for i in range(0, 300, 10)]) == 22
    results = [detector.process_frame(i, i / 10, x.ravel(), state)
               for i, (x, state) in enumerate(zip(frames, health))]
    scores = scores_of(results)
    assert (scores[:80] > 7).all() and (scores[80:] == 0).all()
    # Seeded from its lit frames alone (as when most of the file is lit), the twin learns the
    # person: the start is the model's damped warm-up.
    lit = Detector(window=30, static_after=40, warmup=25)
    lit.seed_reference([frames[i].ravel() for i in range(0, 80, 2)])
    assert (scores_of(feed(lit, frames[:80]))[:10] < 4.5).all()


def test_the_light_coming_back_on_the_scene_the_model_knows_is_a_short_event():
    """The switch is an event at most while the brightness still moves (``settle_frames``),
    then the model, which knows the scene, explains it: nothing is rebuilt or absorbed."""
    rng = np.random.default_rng(14)
    frames = scene(rng, 260)
    frames[100:160] = 0                                 # lights off for longer than static_after
    detector = Detector(window=30, static_after=40, warmup=10, settle_frames=5)
    results = [detector.process_frame(i, i / 10, x.ravel(), BLANK if 100 <= i < 160 else "ok")
               for i, x in enumerate(frames)]
    scores = scores_of(results)
    assert (scores[166:] < 4.5).all()
    assert not any(r.absorbed for r in results)


def test_a_light_switched_on_lasts_until_the_cameras_exposure_settles():
    """The light comes back after a short darkness and the camera's exposure overshoots, then
    settles: one event through the overshoot, none after. The same swing with no switch
    before it (the camera alone) is no event."""
    rng = np.random.default_rng(16)
    frames = scene(rng, 330)
    swing = (1 + 0.1 * np.exp(-np.arange(60) / 8)).astype(np.float32)[:, None, None]
    frames[100:130] = 0                                     # 3 s of darkness
    frames[130:190] *= swing                                # the light back, exposure settling
    frames[250:310] *= swing                                # the camera swings by itself
    detector = Detector(window=30, static_after=40, warmup=10, settle_frames=5)
    results = [detector.process_frame(i, i / 10, x.ravel(), BLANK if 100 <= i < 130 else "ok")
               for i, x in enumerate(frames)]
    scores = scores_of(results)
    motion = np.abs(np.diff(np.log(swing.ravel()[::-1]))[::-1])        # one frame's
    moving = np.convolve(motion, np.ones(5))[4:len(motion)]           # over 5 frames
    settled = 130 + 5 + int(np.argmax(moving < 0.02))
    assert 135 < settled < 150
    assert (scores[130:settled - 1] >= 4.5).all()
    assert (scores[settled + 1:250] < 4.5).all()
    assert (scores[250:] < 4.5).all()


def test_blocks_outside_the_watched_area_never_raise_the_score():
    """What the Preprocessor gives with a region on the left half: zeros on the right. The
    light dimming to 0.3 (which scales the noise floor) must not make the zeros unusual."""
    rng = np.random.default_rng(15)
    frames = add_patch(scene(rng, 300), 150, 180)               # someone inside the region
    frames[200:] *= 0.3
    watched = np.zeros(SHAPE, bool)
    watched[:, :32] = True
    frames[:, ~watched] = 0
    detector = Detector(window=30, static_after=40, watched=watched.ravel())
    assert detector.judge.watched_blocks.reshape(detector.model.grid[::-1])[:, :3].all()
    assert not detector.judge.watched_blocks.reshape(detector.model.grid[::-1])[:, 3:].any()
    results = [detector.process_frame(i, i / 10, x.ravel(), explain=True)
               for i, x in enumerate(frames)]
    outside = np.array([r.block_scores[:, 3:].max() for r in results
                        if r.block_scores is not None])
    assert len(outside) > 250 and (outside <= 0).all()
    assert (scores_of(results)[150:181] > 7).all()


def test_light_invariant_blocks_ignore_a_lasting_shadow_and_still_find_a_person_in_it():
    # A cloud's shadow darkens the right half by 12% and stays; later someone walks in it.
    # Nothing absorbs the change (absorb-after 'never'), so only the energies decide.
    rng = np.random.default_rng(11)
    frames = scene(rng, 400)
    frames[150:, :, 32:] *= 0.88
    frames = add_patch(frames, 300, 330, OTHER, level=40.0)
    plain = scores_of(feed(Detector(window=50, stride=10, static_after=None,
                                    light_invariant=False), frames))
    invariant = scores_of(feed(Detector(window=50, stride=10, static_after=None), frames))
    assert (plain[160:290] > 7).mean() > 0.9            # without, the shadow is an event
    assert (invariant[60:298] < 4.5).all()              # blind to the light it casts
    assert (invariant[302:330] > 7).all()               # not to someone standing in it
    assert (invariant[340:] < 4.5).all()


@pytest.mark.parametrize("fps", [5, 10, 30, 60])
def test_the_learning_schedule_learns_as_many_frames_by_a_time_at_any_frame_rate(fps):
    """Counted in seconds, not frames: by any moment the window holds the same number of
    frames at 5 fps as at 60, spread over all the time seen (densest at the start), and past
    the span one frame in every stride."""
    span_seconds, window, warmup_seconds = 60, 100, 3
    schedule = LearningSchedule(round(span_seconds * fps / window), round(warmup_seconds * fps),
                                window)
    learned_at = {}
    for frame in range(1, 120 * fps + 1):
        schedule.should_learn()
        if frame % fps == 0:
            learned_at[frame // fps] = schedule.learned_
    expected = {1: 13, 3: 23, 10: 41, 30: 71, 60: 100, 120: 200}
    for second, count in expected.items():     # (every frame, while there are fewer)
        assert abs(learned_at[second] - min(count, second * fps)) <= 1, (second, learned_at[second])
    assert schedule.warming_up is False


def test_light_drifting_in_over_seconds_is_no_event_and_someone_arriving_in_it_is():
    """Sunlight creeping over part of the scene (a glow, not a scaling of the picture, so light
    invariance does not explain it) builds over four seconds with nothing moving: the blocks it
    makes unusual follow it. A person arriving in it later is still an event, and without
    ``gradual_change`` the drift itself is one."""
    rng = np.random.default_rng(12)
    frames = scene(rng, 400)
    rows, cols = np.mgrid[:SHAPE[0], :SHAPE[1]]
    glow = 60 * np.exp(-((rows - 30) ** 2 + (cols - 45) ** 2) / (2 * 12.0 ** 2))
    ramp = np.clip((np.arange(400) - 150) / 40, 0, 1)       # frames 150-190, then it stays
    frames += (ramp[:, None, None] * glow).astype(np.float32)
    frames = add_patch(frames, 300, 330, OTHER, level=40.0)
    following = scores_of(feed(Detector(), frames))
    plain = scores_of(feed(Detector(without=frozenset({"gradual_change"})), frames))
    assert (plain[170:290] >= 4.5).mean() > 0.5         # without it, the light is an event
    assert (following[60:298] < 4.5).all()
    assert (following[302:330] > 7).all()
    assert (following[340:] < 4.5).all()


def test_a_lamp_switched_on_is_one_short_event_once_its_light_has_settled():
    """A lamp lights most of the room unevenly (not a scaling the light invariance removes):
    one event from the switch until the brightness has held, then the lit room is the scene,
    rebuilt from the frames since the light settled; not absorb-after later, as a lasting
    change in part of the scene would be. Someone walking in afterwards is found."""
    rng = np.random.default_rng(17)
    frames = scene(rng, 400)
    cols = np.arange(SHAPE[1], dtype=np.float32)
    frames[150:] += 40 + 100 * cols / SHAPE[1]                 # the lamp, brighter on the right
    frames = add_patch(frames, 320, 340, OTHER, level=40.0)
    rebuilt = scores_of(feed(Detector(), frames))
    # Without it (nor the live reveal, which rebuilds where the lit room stands still unusual)
    # the light lasts.
    waited = scores_of(feed(Detector(without=frozenset({"scene_rebuild", "revealed"})), frames))
    assert (rebuilt[150:153] >= 4.5).all()
    assert (rebuilt[175:318] < 4.5).all()                 # settled: 5 frames, held another 12
    assert (rebuilt[322:340] > 7).all()
    assert (waited[175:250] >= 4.5).mean() > 0.9
