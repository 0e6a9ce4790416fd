"""The paper's baselines: iSearch's Innovation Values (LP and ADMM) and the FMS, GMS and R1-PCA
subspaces."""

import numpy as np
import pytest

from videvent.rpca import ancp_scores, recovery_error, residuals, robust_subspace
from videvent.rpca.baselines import fms_subspace, gms_subspace, r1pca_subspace
from videvent.rpca.isearch import isearch_scores

SUBSPACE_BASELINES = {"fms": fms_subspace, "gms": gms_subspace, "r1pca": r1pca_subspace}


def orthonormal(rng, n_features, dim):
    return np.linalg.qr(rng.standard_normal((n_features, dim)))[0]


def on_sphere(rng, basis, n_points):
    """Points uniform on the unit sphere of the span of ``basis``."""
    X = basis @ rng.standard_normal((basis.shape[1], n_points))
    return X / np.linalg.norm(X, axis=0)


@pytest.mark.parametrize("shape, seed", [((10, 60), 0), ((30, 80), 1), ((8, 120), 2)])
def test_admm_matches_the_exact_lp(shape, seed):
    D = np.random.default_rng(seed).standard_normal(shape)
    exact = isearch_scores(D, solver="lp")
    approximate = isearch_scores(D, solver="admm", tol=1e-3, block_size=25)
    # ADMM returns values of feasible directions: never below the optimum, and its duality
    # gap certificate bounds how far above.
    assert (approximate >= exact * (1 - 1e-9)).all()
    np.testing.assert_allclose(approximate, exact, rtol=1.01e-3)


def test_isearch_ranks_structured_outliers_below_inliers():
    rng = np.random.default_rng(3)
    basis = orthonormal(rng, 20, 3)
    inliers = on_sphere(rng, basis, 60)
    # Linearly dependent outliers (a 2-dimensional subspace of their own) and scattered ones.
    outliers = np.hstack([on_sphere(rng, orthonormal(rng, 20, 2), 12),
                          on_sphere(rng, np.eye(20), 10)])
    D = np.hstack([inliers, outliers]) * rng.uniform(0.5, 3.0, size=82)  # scale must not matter
    for solver in ("lp", "admm"):
        scores = isearch_scores(D, solver=solver)
        assert scores[:60].min() > 2 * scores[60:].max(), solver
    assert recovery_error(basis, robust_subspace(D, 3, method="isearch")) < 1e-10


def test_an_isolated_point_has_the_smallest_possible_innovation_score():
    # A point with a direction of its own: c can reach it alone, so ||D^T c*||_1 = 1.
    rng = np.random.default_rng(4)
    D = np.hstack([on_sphere(rng, np.eye(6)[:, :3], 40), np.eye(6)[:, 5:]])
    scores = isearch_scores(D)
    assert scores[-1] == pytest.approx(1.0)
    assert scores[:-1].min() > 1.0


def test_isearch_rejects_bad_input():
    D = np.random.default_rng(5).standard_normal((6, 20))
    with pytest.raises(ValueError, match="solver"):
        isearch_scores(D, solver="simplex")
    with pytest.raises(ValueError, match="max_iter"):
        isearch_scores(D, solver="admm", max_iter=0)
    D[2, 3] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        isearch_scores(D)


def planted_with_outliers(seed, n_features=30, rank=3, n_inliers=90, n_outliers=40):
    rng = np.random.default_rng(seed)
    basis = orthonormal(rng, n_features, rank)
    D = np.hstack([on_sphere(rng, basis, n_inliers), on_sphere(rng, np.eye(n_features),
                                                              n_outliers)])
    return basis, D * rng.uniform(0.5, 3.0, size=D.shape[1])


@pytest.mark.parametrize("name", sorted(SUBSPACE_BASELINES))
@pytest.mark.parametrize("seed", [10, 11])
def test_baselines_recover_a_planted_subspace_from_a_few_outliers(name, seed):
    # GMS needs outliers in every direction off the subspace: more of them than M1 - rank.
    basis, D = planted_with_outliers(seed)
    U = SUBSPACE_BASELINES[name](D, 3)
    assert U.shape == (30, 3)
    np.testing.assert_allclose(U.T @ U, np.eye(3), atol=1e-12)
    assert recovery_error(basis, U) < 1e-6
    # The same fit through robust_subspace's dispatch.
    np.testing.assert_allclose(robust_subspace(D, 3, method=name), U)


@pytest.mark.parametrize("name", sorted(SUBSPACE_BASELINES))
def test_baselines_beat_pca_where_pca_fails(name):
    # As many outliers as inliers, loud and normalised away: PCA is pulled off the subspace.
    basis, D = planted_with_outliers(12, n_features=20, n_inliers=100, n_outliers=100)
    assert recovery_error(basis, robust_subspace(D, 3, method="pca")) > 0.01
    if name != "r1pca":     # Huber weights cut at the median distance: no defence at 50%
        assert recovery_error(basis, SUBSPACE_BASELINES[name](D, 3)) < 1e-6


def test_more_features_than_points_takes_the_thin_path():
    basis, D = planted_with_outliers(13, n_features=80, n_inliers=40, n_outliers=10)
    for name, fit in SUBSPACE_BASELINES.items():
        U = fit(D, 3)
        assert U.shape == (80, 3), name
        assert recovery_error(basis, U) < 1e-6, name


def test_baselines_are_deterministic():
    _, D = planted_with_outliers(14)
    for fit in SUBSPACE_BASELINES.values():
        np.testing.assert_array_equal(fit(D, 3), fit(D, 3))


@pytest.mark.parametrize("name", sorted(SUBSPACE_BASELINES))
@pytest.mark.parametrize("make_bad, message", [
    (lambda D: D.__setitem__((1, 4), np.nan) or D, "NaN"),
    (lambda D: D.__setitem__((0, 2), -np.inf) or D, "NaN or infinite"),
    (lambda D: D.__setitem__((slice(None), 6), 0.0) or D, "all-zero column"),
    (lambda D: D[:, :2], "fewer than rank"),
])
def test_baselines_raise_value_error_on_bad_input(name, make_bad, message):
    D = np.random.default_rng(15).standard_normal((8, 20))
    with pytest.raises(ValueError, match=message):
        SUBSPACE_BASELINES[name](make_bad(D), 3)


@pytest.mark.parametrize("name", sorted(SUBSPACE_BASELINES))
def test_baselines_refuse_data_spanning_fewer_dimensions_than_the_rank(name):
    rng = np.random.default_rng(16)
    D = orthonormal(rng, 8, 2) @ rng.standard_normal((2, 20))
    with pytest.raises(ValueError, match="span"):
        SUBSPACE_BASELINES[name](D, 3)


def paper_noisy_model(seed, snr_db, n_features=100, n_inliers=60, n_outliers=60):
    """The paper's noisy experiment, smaller: inliers on the sphere of a 5-dim subspace plus
    Gaussian noise at ``snr_db``, outliers on the sphere of a 10-dim subspace, noise-free."""
    rng = np.random.default_rng(seed)
    basis = orthonormal(rng, n_features, 5)
    inliers = on_sphere(rng, basis, n_inliers)
    noise = rng.standard_normal(inliers.shape)
    noise *= np.linalg.norm(inliers) / np.linalg.norm(noise) / 10 ** (snr_db / 20)
    outliers = on_sphere(rng, orthonormal(rng, n_features, 10), n_outliers)
    return basis, np.hstack([inliers + noise, outliers])


def residuals_separate(D, U, n_inliers):
    """The paper's success criterion: every inlier closer to the subspace than every outlier."""
    distance = residuals(D, U)
    return bool(distance[:n_inliers].max() < distance[n_inliers:].min())


def test_isearch_reduced_to_dominant_directions_behaves_like_ancp_on_noisy_data():
    """The paper's Remark: on noisy data iSearch works on the r_d dominant singular directions.
    Without the reduction every noisy inlier is innovative in the noise directions and iSearch
    fails every trial; with it, it separates the residuals whenever ANCP does."""
    outcomes = {"reduced": [], "all directions": [], "ancp": []}
    for seed in range(4):
        basis, D = paper_noisy_model(seed, snr_db=25)
        scores = {"reduced": isearch_scores(D, solver="admm", tol=1e-2),
                  "all directions": isearch_scores(D, solver="admm", tol=1e-2, r_d="all"),
                  "ancp": ancp_scores(D)}
        for name, x in scores.items():
            U = robust_subspace(D, 5, method="isearch", n_inliers=30, scores=x)
            outcomes[name].append(residuals_separate(D, U, 60))
    assert all(outcomes["ancp"])
    assert outcomes["reduced"] == outcomes["ancp"]
    assert not any(outcomes["all directions"])


def test_isearch_rejects_a_bad_r_d():
    D = np.random.default_rng(6).standard_normal((6, 20))
    for bad in (0, -1, "some", True):
        with pytest.raises(ValueError, match="r_d"):
            isearch_scores(D, r_d=bad)
