"""The closed-form scores, subspace selection and the estimator of videvent.rpca."""

import numpy as np
import pytest

from videvent.rpca import (RobustSubspace, ancp_scores, ancp_scores_reference, cop_scores,
                           pca_subspace, recovery_error, residuals, robust_subspace, sncp_scores,
                           sncp_scores_reference)


def planted(rng, n_features=40, rank=3, n_inliers=60, n_outliers=20):
    basis = np.linalg.qr(rng.standard_normal((n_features, rank)))[0]
    inliers = basis @ rng.standard_normal((rank, n_inliers))
    outliers = rng.standard_normal((n_features, n_outliers))
    return basis, np.hstack([inliers, outliers])


@pytest.mark.parametrize("shape", [(30, 200), (200, 30), (50, 50)])
@pytest.mark.parametrize("fast, reference", [(ancp_scores, ancp_scores_reference),
                                             (sncp_scores, sncp_scores_reference)])
def test_fast_forms_equal_the_paper_formulas(shape, fast, reference):
    rng = np.random.default_rng(1)
    D = rng.standard_normal(shape) * rng.uniform(0.1, 10, size=shape[1])
    np.testing.assert_allclose(fast(D), reference(D), rtol=1e-9)


@pytest.mark.parametrize("shape", [(30, 200), (200, 30)])
def test_cop_squared_equals_the_full_coherence_matrix(shape):
    rng = np.random.default_rng(2)
    D = rng.standard_normal(shape)
    Dn = D / np.linalg.norm(D, axis=0)
    G = Dn.T @ Dn
    np.fill_diagonal(G, 0.0)
    np.testing.assert_allclose(cop_scores(D), (G ** 2).sum(axis=0), rtol=1e-10)
    np.testing.assert_allclose(cop_scores(D, variant="absolute", block_size=7),
                               np.abs(G).sum(axis=0), rtol=1e-10)


@pytest.mark.parametrize("method", ["sncp", "ancp", "cop"])
def test_inliers_score_above_outliers_and_the_subspace_is_recovered(method):
    rng = np.random.default_rng(3)
    basis, D = planted(rng)
    scores = {"sncp": sncp_scores, "ancp": ancp_scores, "cop": cop_scores}[method](D)
    assert scores[:60].min() > scores[60:].max()
    for kwargs in ({}, {"n_inliers": 30}, {"outlier_fraction": 0.4}):
        U = robust_subspace(D, 3, method=method, **kwargs)
        assert U.shape == (40, 3)
        np.testing.assert_allclose(U.T @ U, np.eye(3), atol=1e-10)
        assert recovery_error(basis, U) < 1e-8


def test_pca_is_pulled_away_by_outliers_where_sncp_is_not():
    rng = np.random.default_rng(4)
    basis, D = planted(rng, n_features=20, n_inliers=30, n_outliers=100)
    D[:, 30:] *= 5.0  # loud outliers: normalisation must neutralise their size
    assert recovery_error(basis, pca_subspace(D, 3)) > 0.3
    assert recovery_error(basis, robust_subspace(D, 3, method="sncp")) < 1e-8


def test_residuals_are_zero_inside_and_one_orthogonal():
    U = np.eye(5)[:, :2]
    D = np.array([[3.0, 0.0], [4.0, 0.0], [0.0, 2.0], [0.0, 0.0], [0.0, 0.0]])
    np.testing.assert_allclose(residuals(D, U), [0.0, 1.0])
    np.testing.assert_allclose(residuals(D, U, normalize=False), [0.0, 2.0])


@pytest.mark.parametrize("make_bad, message", [
    (lambda D: D.__setitem__((0, 5), np.nan) or D, "NaN or infinite"),
    (lambda D: D.__setitem__((2, 7), np.inf) or D, "NaN or infinite"),
    (lambda D: D.__setitem__((slice(None), 3), 0.0) or D, "all-zero column"),
    (lambda D: D.__setitem__((slice(None), 4), 2 * D[:, 9]) or D, "duplicate columns"),
    (lambda D: D[:, :2], "fewer than rank"),
    (lambda D: np.outer(D[:, 0], np.arange(1.0, 11.0)) + np.outer(D[:, 1], np.arange(10.0) ** 2),
     "span only 2"),
    (lambda D: D[0], "2-D"),
])
def test_bad_input_gets_a_clear_value_error(make_bad, message):
    D = np.random.default_rng(5).standard_normal((8, 10))
    with pytest.raises(ValueError, match=message):
        robust_subspace(make_bad(D), 3, method="sncp")


def test_scores_never_turn_zero_columns_into_nan():
    D = np.random.default_rng(6).standard_normal((8, 10))
    D[:, 0] = 0.0
    for score in (ancp_scores, sncp_scores, cop_scores):
        with pytest.raises(ValueError, match="all-zero"):
            score(D)


def test_estimator_follows_scikit_learn_conventions():
    rng = np.random.default_rng(7)
    basis, D = planted(rng, n_features=30, n_inliers=90, n_outliers=10)
    X = D.T
    model = RobustSubspace(method="sncp", rank=3, contamination=0.1)
    assert model.fit(X) is model
    assert model.components_.shape == (3, 30)
    assert model.get_params()["rank"] == 3
    assert model.inlier_scores_.shape == (100,)
    labels = model.predict(X)
    assert set(np.unique(labels)) == {-1, 1}
    assert (labels[90:] == -1).all() and (labels[:90] == 1).all()
    scores = model.score_samples(X)
    assert scores[:90].min() > scores[90:].max()
    np.testing.assert_allclose(model.decision_function(X), scores - model.offset_)
    assert model.transform(X).shape == (100, 3)
    with pytest.raises(ValueError, match="features"):
        model.predict(X[:, :5])
    with pytest.raises(ValueError, match="not fitted"):
        RobustSubspace().predict(X)


def test_estimator_projection_keeps_the_subspace():
    rng = np.random.default_rng(8)
    basis, D = planted(rng, n_features=200, n_inliers=60, n_outliers=20)
    model = RobustSubspace(method="ancp", rank=3, projection_dim=50).fit(D.T)
    assert recovery_error(basis, model.components_.T) < 1e-8


@pytest.mark.parametrize("score", [ancp_scores, sncp_scores])
def test_a_lone_point_outside_the_kept_directions_ranks_last(score):
    """The s1/20 rule drops a direction only one point uses; that point is no inlier."""
    rng = np.random.default_rng(9)
    plane = np.zeros((3, 2000))
    plane[:2] = rng.standard_normal((2, 2000))
    plane[2] = 0.01 * rng.standard_normal(2000)
    lone = np.array([[0.0], [0.0], [1.0]])
    x = score(np.hstack([plane, lone]))
    assert x[-1] < x[:-1].min()


def on_sphere(rng, basis, n_points):
    """Points uniform on the unit sphere of the span of ``basis``."""
    X = basis @ rng.standard_normal((basis.shape[1], n_points))
    return X / np.linalg.norm(X, axis=0)


@pytest.mark.parametrize("n_inliers", [20, 40])
def test_estimator_default_is_exact_with_far_more_outliers_than_inliers(n_inliers):
    """The paper's phase-transition regime, 2000 outliers on the sphere of R^50 around a
    4-dim subspace: the default (the paper's spanning rule) recovers it to round-off; the
    most-inlier-like-half option cannot, since half the samples are then mostly outliers."""
    rng = np.random.default_rng(n_inliers)
    basis = np.linalg.qr(rng.standard_normal((50, 4)))[0]
    X = np.hstack([on_sphere(rng, basis, n_inliers), on_sphere(rng, np.eye(50), 2000)]).T
    default = RobustSubspace(method="sncp", rank=4).fit(X)
    assert recovery_error(basis, default.components_.T) < 1e-12
    half = RobustSubspace(method="sncp", rank=4, outlier_fraction=0.5).fit(X)
    assert recovery_error(basis, half.components_.T) > 0.1


def test_estimator_half_option_averages_noise_where_the_default_does_not():
    """The documented trade-off: few outliers and noisy inliers, the most inlier-like half
    gives a better basis than the ``rank`` samples of the spanning rule."""
    rng = np.random.default_rng(11)
    basis = np.linalg.qr(rng.standard_normal((40, 3)))[0]
    inliers = on_sphere(rng, basis, 200) + 0.05 * rng.standard_normal((40, 200))
    X = np.hstack([inliers, on_sphere(rng, np.eye(40), 20)]).T
    default = RobustSubspace(method="sncp", rank=3).fit(X)
    half = RobustSubspace(method="sncp", rank=3, outlier_fraction=0.5).fit(X)
    assert (recovery_error(basis, half.components_.T)
            < 0.5 * recovery_error(basis, default.components_.T))
