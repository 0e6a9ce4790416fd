"""Robust subspaces from inlier scores, the plain PCA baseline, and residuals.

``robust_subspace`` is the last step of every score-based method in the paper: keep the columns
with the largest scores and take an r-dimensional basis of their span. The paper gives two ways
to decide how many columns to keep: a bound on the outlier fraction, or adding columns in score
order until they span r dimensions. Both are here.
"""

from __future__ import annotations

import math

import numpy as np

from ._validation import check_data, check_rank, normalize_columns, prepare
from ._linalg import principal_directions, top_left_singular_vectors  # noqa: F401 (re-export)
from .baselines import fms_subspace, gms_subspace, r1pca_subspace
from .isearch import isearch_scores
from .scores import PREPARED_SCORES

# A column adds a new dimension when the part of it outside the span so far is at least this
# long (columns have unit length). Small enough for exact data, large enough to skip
# near-repeats of a direction already spanned.
SPAN_TOLERANCE = 1e-6


def _isearch(Dn):
    # ADMM: the exact LP costs tens of milliseconds per column, too slow past a few hundred.
    return isearch_scores(Dn, solver="admm")


SCORE_METHODS = {**PREPARED_SCORES, "isearch": _isearch}


def pca_subspace(D, rank: int) -> np.ndarray:
    """Top-``rank`` left singular vectors of the column-normalised data (the PCA baseline)."""
    Dn = prepare(D)
    check_rank(rank, Dn)
    return top_left_singular_vectors(Dn, rank)


SUBSPACE_METHODS = {
    "pca": pca_subspace,
    "fms": fms_subspace,
    "gms": gms_subspace,
    "r1pca": r1pca_subspace,
}

METHODS = tuple(SCORE_METHODS) + tuple(SUBSPACE_METHODS)


def columns_spanning(Dn: np.ndarray, order: np.ndarray, rank: int) -> np.ndarray:
    """Indices of the first columns in ``order`` that together span ``rank`` dimensions.

    Gram-Schmidt against the basis so far: a column joins when it adds a new direction.
    """
    basis = np.empty((Dn.shape[0], rank))
    chosen: list[int] = []
    for index in order:
        column = Dn[:, index]
        outside = column - basis[:, :len(chosen)] @ (basis[:, :len(chosen)].T @ column)
        length = np.linalg.norm(outside)
        if length > SPAN_TOLERANCE:
            basis[:, len(chosen)] = outside / length
            chosen.append(int(index))
            if len(chosen) == rank:
                return np.array(chosen)
    raise ValueError(f"the data span only {len(chosen)} dimension(s), fewer than rank={rank}")


def robust_subspace(D, rank: int, *, method: str = "sncp", n_inliers: int | None = None,
                    outlier_fraction: float | None = None, scores=None) -> np.ndarray:
    """An orthonormal basis (M1 x rank) of the subspace the inliers of ``D`` share.

    For the score methods ('sncp', 'ancp', 'cop', 'isearch'): rank the columns by score
    (or use ``scores`` given: the scores of the columns of ``D``), keep ``n_inliers`` of them, or the ``1 - outlier_fraction`` share
    of them, or (neither given) add columns until they span ``rank`` dimensions; the basis is
    the top-``rank`` left singular vectors of the kept, normalised columns. The subspace methods
    ('pca', 'fms', 'gms', 'r1pca') fit the basis directly.
    """
    D = check_data(D)
    check_rank(rank, D)
    if method in SUBSPACE_METHODS:
        return SUBSPACE_METHODS[method](D, rank)
    if method not in SCORE_METHODS:
        raise ValueError(f"unknown method {method!r}: choose one of {', '.join(METHODS)}")
    if n_inliers is not None and outlier_fraction is not None:
        raise ValueError("give n_inliers or outlier_fraction, not both")
    Dn = prepare(D)
    x = SCORE_METHODS[method](Dn) if scores is None else np.asarray(scores, dtype=float)
    if x.shape != (Dn.shape[1],) or not np.isfinite(x).all():
        raise ValueError(f"scores must be {Dn.shape[1]} finite numbers, one per column")
    order = np.argsort(-x, kind="stable")
    if outlier_fraction is not None:
        if not 0.0 <= outlier_fraction < 1.0:
            raise ValueError(f"outlier_fraction must be in [0, 1), got {outlier_fraction}")
        n_inliers = math.ceil((1.0 - outlier_fraction) * Dn.shape[1])
    if n_inliers is None:
        return top_left_singular_vectors(Dn[:, columns_spanning(Dn, order, rank)], rank)
    if not rank <= n_inliers <= Dn.shape[1]:
        raise ValueError(f"n_inliers must be between rank={rank} and {Dn.shape[1]}, "
                         f"got {n_inliers}")
    return top_left_singular_vectors(Dn[:, order[:n_inliers]], rank)


def residuals(D, U, *, normalize: bool = True) -> np.ndarray:
    """``||d_i - U U^T d_i||`` for every column (of the unit-length columns by default).

    Zero columns have residual 0 when ``normalize`` is False and are an error otherwise.
    """
    D = check_data(D)
    U = check_data(U, name="U")
    if U.shape[0] != D.shape[0]:
        raise ValueError(f"U has {U.shape[0]} rows but D has {D.shape[0]} features")
    if normalize:
        D = normalize_columns(D)
    outside = D - U @ (U.T @ D)
    return np.linalg.norm(outside, axis=0)


def recovery_error(U_true, U_estimate) -> float:
    """``||(I - U U^T) Uhat||_F / ||U||_F``, the paper's subspace recovery error."""
    U_true = np.asarray(U_true, dtype=float)
    U_estimate = np.asarray(U_estimate, dtype=float)
    outside = U_estimate - U_true @ (U_true.T @ U_estimate)
    return float(np.linalg.norm(outside) / np.linalg.norm(U_true))
