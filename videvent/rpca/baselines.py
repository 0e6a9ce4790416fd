"""Iterative robust subspace baselines the paper compares ANCP and SNCP with: FMS, GMS, R1-PCA.

Each fits an r-dimensional subspace through the origin to the column-normalised data (as
every method in the paper sees it) by iteratively reweighted least squares, and returns an
M1 x r orthonormal basis. They start from PCA (or, for the convex GMS, from the identity,
whose first step is PCA's covariance), so they are deterministic.

- FMS, Fast Median Subspace (Lerman & Maunu 2017): minimises ``sum_i dist(d_i, L)``; each
  step is PCA of the points weighted by ``1 / max(dist, delta)``.
- GMS, Geometric Median Subspace (Zhang & Lerman 2014): minimises ``sum_i ||Q d_i||`` over
  symmetric ``Q`` with ``tr(Q) = 1``; the subspace is spanned by the bottom eigenvectors of Q.
  It needs outliers in every direction off the subspace (more of them than M1 - r): with
  fewer, Q can vanish on some outliers too and the bottom eigenvectors mix them in.
- R1-PCA (Ding et al. 2006): rotational-invariant L1 PCA with Huber weights
  ``min(1, c / dist)``, ``c`` the median distance. Ding et al. centre the data first; here the
  subspace goes through the origin, as in the paper's model.
"""

from __future__ import annotations

import numpy as np

from ._validation import check_data, check_rank, normalize_columns
from ._linalg import principal_directions

# Distances below this count as this much when they are inverted into weights.
DEFAULT_DELTA = 1e-10


def fms_subspace(D, rank: int, *, delta: float = DEFAULT_DELTA, max_iter: int = 100,
                 tol: float = 1e-9) -> np.ndarray:
    """Fast Median Subspace: IRLS for ``min_L sum_i ||d_i - P_L d_i||`` (Lerman & Maunu).

    ``delta`` keeps the weights of points on the subspace finite; iterations stop when the
    sine-theta distance between successive subspaces is below ``tol``, or after ``max_iter``.
    """
    Dn, rank = _unit_columns(D, rank)
    return _reweighted_pca(Dn, rank, lambda distances: 1.0 / np.maximum(distances, delta),
                           max_iter=max_iter, tol=tol)


def r1pca_subspace(D, rank: int, *, max_iter: int = 100, tol: float = 1e-9) -> np.ndarray:
    """R1-PCA (Ding et al.): PCA reweighted by Huber's ``min(1, c / distance)``, c the median."""
    Dn, rank = _unit_columns(D, rank)

    def huber_weights(distances):
        cutoff = np.median(distances)
        weights = np.ones_like(distances)
        far = distances > cutoff
        weights[far] = cutoff / distances[far]
        return weights

    return _reweighted_pca(Dn, rank, huber_weights, max_iter=max_iter, tol=tol)


def gms_subspace(D, rank: int, *, delta: float = DEFAULT_DELTA, max_iter: int = 100,
                 tol: float = 1e-9) -> np.ndarray:
    """Geometric Median Subspace: IRLS for ``min sum_i ||Q d_i||``, ``tr(Q) = 1`` (Zhang & Lerman).

    Each step sets ``Q = C^-1 / tr(C^-1)`` with ``C = sum_i d_i d_i^T / max(||Q d_i||, delta)``,
    so the bottom eigenvectors of Q, the basis, are the top eigenvectors of C. The problem is
    solved in the span of the data: outside it ``Q`` could put all its trace at no cost. Stops
    as the other baselines do, on the movement of the basis: ``Q`` itself stops changing only
    to about 1e-7, the round-off of a ``C`` whose inliers weigh ``1 / delta``.
    """
    Dn, rank = _unit_columns(D, rank)
    span = principal_directions(Dn, Dn.shape[0])
    if span.shape[1] < rank:
        raise ValueError(f"the data span only {span.shape[1]} dimension(s), fewer than "
                         f"rank={rank}")
    X = span.T @ Dn
    weights = np.ones(X.shape[1])       # Q = I / dim: every unit-length point weighs the same
    basis = None
    for _ in range(max_iter):
        eigenvalues, eigenvectors = np.linalg.eigh((X * weights) @ X.T)
        basis_next = eigenvectors[:, ::-1][:, :rank]
        converged = basis is not None and _moved(basis, basis_next) <= tol
        basis = basis_next
        if converged:
            break
        inverse = 1.0 / np.maximum(eigenvalues, eigenvalues[-1] * np.finfo(float).eps)
        Q = (eigenvectors * (inverse / inverse.sum())) @ eigenvectors.T
        weights = 1.0 / np.maximum(np.linalg.norm(Q @ X, axis=0), delta)
    return span @ basis


def _unit_columns(D, rank: int) -> tuple[np.ndarray, int]:
    """Checked data with unit-length columns, and the checked rank."""
    D = check_data(D)
    return normalize_columns(D), check_rank(rank, D)


def _reweighted_pca(Dn: np.ndarray, rank: int, weights_from_distances, *, max_iter: int,
                    tol: float) -> np.ndarray:
    """Alternate distances to the subspace and weighted PCA, starting from plain PCA."""
    U, variances = _top_directions(Dn, np.ones(Dn.shape[1]), rank)
    if variances[-1] <= variances[0] * max(Dn.shape) * np.finfo(float).eps:
        raise ValueError(f"the data span fewer than rank={rank} dimension(s)")
    for _ in range(max_iter):
        distances = np.linalg.norm(Dn - U @ (U.T @ Dn), axis=0)
        U_next, _ = _top_directions(Dn, weights_from_distances(distances), rank)
        converged = _moved(U, U_next) <= tol
        U = U_next
        if converged:
            break
    return U


def _moved(U: np.ndarray, U_next: np.ndarray) -> float:
    """Sine-theta distance ``||(I - U U^T) U_next||_F`` between successive bases."""
    return float(np.linalg.norm(U_next - U @ (U.T @ U_next)))


def _top_directions(Dn: np.ndarray, weights: np.ndarray,
                    rank: int) -> tuple[np.ndarray, np.ndarray]:
    """Top ``rank`` left singular vectors of ``Dn diag(sqrt(weights))``, squared singular values.

    Through the M1 x M1 weighted covariance when it is the smaller side, a thin SVD otherwise.
    """
    n_features, n_points = Dn.shape
    weighted = Dn * np.sqrt(weights)
    from scipy.linalg import eigh  # a heavy import; only these baselines need it

    if n_features <= n_points:
        values, vectors = eigh(weighted @ weighted.T, subset_by_index=[n_features - rank,
                                                                       n_features - 1])
        return vectors[:, ::-1], values[::-1]
    vectors, singular_values, _ = np.linalg.svd(weighted, full_matrices=False)
    return vectors[:, :rank], singular_values[:rank] ** 2
