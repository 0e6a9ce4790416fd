"""The streaming window scorer: its rolling state equals the batch maths, and it behaves."""

import numpy as np
import pytest

from videvent.detectors import SubspaceWindowDetector
from videvent.preprocess import BLANK, CORRUPT, FROZEN, OK
from videvent.rpca import recovery_error, sncp_scores
from videvent.rpca.subspace import principal_directions

SHAPE = (24, 32)


def scene(rng, n_frames, *, event=None, rank=3):
    """Frames from a rank-3 background plus noise; ``event`` = (first, last) adds a bright patch."""
    components = rng.uniform(0, 1, size=(rank, *SHAPE)) * 60
    weights = 1 + 0.3 * np.sin(np.outer(np.arange(n_frames), [0.3, 0.7, 1.1]) / 2)
    frames = np.tensordot(weights, components, axes=1) + 40
    frames += rng.normal(0, 1, frames.shape)
    if event is not None:
        frames[event[0]:event[1] + 1, 5:12, 8:15] += 90
    return frames.reshape(n_frames, -1).astype(np.float32)


def feed(detector, frames):
    return [detector.process_frame(i, i / 10, x) for i, x in enumerate(frames)]


def test_rolling_gram_matrix_equals_the_window_products():
    rng = np.random.default_rng(0)
    detector = SubspaceWindowDetector(SHAPE, window=20, admit_threshold=np.inf)
    feed(detector, scene(rng, 53))
    X = detector.frames_.astype(np.float64)
    np.testing.assert_allclose(detector.gram_, X @ X.T, rtol=1e-5)


def test_refit_gives_the_papers_subspace_of_the_window():
    """Gram eigenpairs -> projection -> SNCP -> basis equals the same steps done with SVDs."""
    rng = np.random.default_rng(1)
    detector = SubspaceWindowDetector(SHAPE, window=40, projection_dim=10, rank=3,
                                      admit_threshold=np.inf, refit_every=1)
    frames = scene(rng, 40)
    frames[::7] += rng.uniform(0, 80, size=frames[::7].shape).astype(np.float32)  # outliers
    feed(detector, frames)
    D = detector.frames_.T.astype(np.float64)
    projection = principal_directions(D, 10)
    Y = projection.T @ D
    Yn = Y / np.linalg.norm(Y, axis=0)
    chosen = np.argsort(-sncp_scores(Y))[:20]
    U = np.linalg.svd(Yn[:, chosen], full_matrices=False)[0][:, :3]
    assert recovery_error(projection @ U, detector.basis_.astype(np.float64)) < 1e-3


def test_basis_stays_orthonormal_and_finite_when_the_window_spans_fewer_dimensions_than_rank():
    rng = np.random.default_rng(2)
    picture = scene(rng, 1)[0]
    frames = np.outer(np.linspace(1, 2, 60), picture).astype(np.float32)  # a rank-1 window
    detector = SubspaceWindowDetector(SHAPE, window=30, rank=3, admit_threshold=np.inf,
                                      refit_every=1)
    feed(detector, frames)
    basis = detector.basis_.astype(np.float64)
    assert np.isfinite(basis).all() and 1 <= basis.shape[1] <= 3
    np.testing.assert_allclose(basis.T @ basis, np.eye(basis.shape[1]), atol=1e-4)
    x = 1.5 * picture.astype(np.float64)
    assert np.linalg.norm(x - basis @ (basis.T @ x)) < 1e-3 * np.linalg.norm(x)


def test_basis_is_orthonormal_on_a_noisy_window():
    detector = SubspaceWindowDetector(SHAPE, window=30, rank=3, admit_threshold=np.inf)
    feed(detector, scene(np.random.default_rng(3), 60))
    basis = detector.basis_.astype(np.float64)
    assert basis.shape[1] == 3
    np.testing.assert_allclose(basis.T @ basis, np.eye(3), atol=1e-4)


def test_an_event_longer_than_half_the_window_stays_flagged_to_its_end():
    rng = np.random.default_rng(2)
    frames = scene(rng, 300, event=(120, 230))  # 111 frames against a 60-frame window
    detector = SubspaceWindowDetector(SHAPE, window=60, absorb_after=None)
    scores = np.array([s.score for s in feed(detector, frames)])
    assert (scores[120:231] > 7).all()
    assert (scores[60:118] < 4.5).all() and (scores[235:] < 4.5).all()


def test_a_lasting_change_is_absorbed_after_the_configured_time():
    rng = np.random.default_rng(3)
    frames = scene(rng, 300, event=(100, 299))  # the patch appears and stays
    detector = SubspaceWindowDetector(SHAPE, window=60, absorb_after=50)
    results = feed(detector, frames)
    absorbed = [s.index for s in results if s.absorbed]
    assert absorbed == [150]
    scores = np.array([s.score for s in results])
    assert (scores[100:150] > 7).all()
    assert (scores[151:] < 4.5).all()


@pytest.mark.parametrize("health", [BLANK, CORRUPT])
def test_frames_without_a_picture_are_reported_never_nan(health):
    rng = np.random.default_rng(4)
    detector = SubspaceWindowDetector(SHAPE, window=30)
    feed(detector, scene(rng, 40))
    result = detector.process_frame(40, 4.0, None if health == CORRUPT else np.zeros(768), health)
    assert result.status == health and not result.admitted
    assert np.isfinite([result.residual, result.score]).all()
    assert result.score == 0.0


def test_an_all_zero_frame_fed_as_ok_scores_zero_not_nan():
    detector = SubspaceWindowDetector(SHAPE, window=30)
    feed(detector, scene(np.random.default_rng(5), 40))
    result = detector.process_frame(40, 4.0, np.zeros(SHAPE[0] * SHAPE[1], np.float32))
    assert np.isfinite([result.residual, result.score]).all()


def test_frozen_frames_repeat_the_verdict_and_stay_out_of_the_window():
    rng = np.random.default_rng(6)
    frames = scene(rng, 50)
    detector = SubspaceWindowDetector(SHAPE, window=30)
    previous = feed(detector, frames)[-1]
    filled = detector.n_filled_
    frozen = detector.process_frame(50, 5.0, frames[-1], FROZEN)
    assert (frozen.residual, frozen.score) == (previous.residual, previous.score)
    assert detector.n_filled_ == filled and not frozen.admitted


def test_brightness_invariance_and_a_sudden_light_change_is_caught():
    rng = np.random.default_rng(7)
    frames = scene(rng, 200)
    frames[100:] *= np.linspace(1.0, 1.3, 100, dtype=np.float32)[:, None]  # slow drift
    frames[160:] *= 0.3                                                     # lights off
    detector = SubspaceWindowDetector(SHAPE, window=50, absorb_after=None)
    scores = np.array([s.score for s in feed(detector, frames)])
    assert (scores[50:160] < 4.5).all()
    assert (scores[160:] > 7).all()


@pytest.mark.parametrize("kwargs, message", [
    ({"method": "median"}, "unknown method"), ({"rank": 5, "window": 5}, "window longer"),
    ({"projection_dim": 2}, "below rank"), ({"inlier_fraction": 0}, "inlier fraction"),
    ({"absorb_after": 0}, "absorb_after"), ({"blocks": 0}, "blocks"),
])
def test_bad_parameters_are_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        SubspaceWindowDetector(SHAPE, **kwargs)


def test_memory_is_bounded_by_the_window():
    rng = np.random.default_rng(8)
    detector = SubspaceWindowDetector(SHAPE, window=25, absorb_after=None)
    frames = scene(rng, 40, event=(10, 39))
    for repeat in range(5):
        feed(detector, frames)
    assert detector.frames_.shape == (25, 768)
    assert len(detector.block_history_) <= 25 and len(detector.rejected_) <= 25
