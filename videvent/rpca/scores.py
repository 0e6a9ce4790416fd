"""Inlier scores of the closed-form robust PCA methods (larger = more inlier-like).

ANCP and SNCP are the Normalized Coherence Values of Rahmani & Li (Algorithms 1 and 2);
CoP is Coherence Pursuit (Rahmani & Atia). All three work on the column-normalised data and
need one small symmetric eigen-decomposition: of ``D D^T`` or ``D^T D``, whichever is smaller.
The formulas as printed in the paper (which build an M2 x M2 matrix) are kept as
``*_reference`` functions so the tests can check the fast forms against them.
"""

from __future__ import annotations

import numpy as np

from ._validation import prepare

# Paper's rule for the numerical rank r_d: singular values above s1 / 20.
RANK_RATIO = 20.0
# A column with less than half its energy in the top r_d directions is not explained by them.
MIN_EXPLAINED_SHARE = 0.5


def numerical_rank(singular_values: np.ndarray, ratio: float = RANK_RATIO) -> int:
    """Number of singular values above ``s1 / ratio`` (at least 1)."""
    s = np.asarray(singular_values)
    return max(1, int(np.count_nonzero(s > s[0] / ratio)))


def right_singular_vectors(Dn: np.ndarray, r_d: int | None = None, *,
                           with_values: bool = False):
    """Rows ``v_i`` of the first ``r_d`` right singular vectors (M2 x r_d) via the smaller Gram.

    Gram eigenvalues are squared singular values, so the eigen-decomposition of the
    min(M1, M2)-sized Gram matrix gives the same vectors as an SVD at a fraction of the cost.
    ``with_values=True`` also returns the ``r_d`` singular values.
    """
    n_features, n_points = Dn.shape
    if n_features < n_points:
        eigvals, U = np.linalg.eigh(Dn @ Dn.T)
    else:
        eigvals, W = np.linalg.eigh(Dn.T @ Dn)
    eigvals = eigvals[::-1].clip(min=0.0)
    singular_values = np.sqrt(eigvals)
    if r_d is None:
        r_d = numerical_rank(singular_values)
    r_d = int(min(r_d, np.count_nonzero(singular_values > 0)))
    if n_features < n_points:
        V = (Dn.T @ U[:, ::-1][:, :r_d]) / singular_values[:r_d]
    else:
        V = W[:, ::-1][:, :r_d]
    return (V, singular_values[:r_d]) if with_values else V


def explained_share(V: np.ndarray, singular_values: np.ndarray) -> np.ndarray:
    """Share of each unit-length column's energy inside the top-r_d span: sum_k s_k^2 v_ik^2."""
    return np.einsum("ij,j,ij->i", V, singular_values ** 2, V)


def demote_unexplained(scores: np.ndarray, V: np.ndarray,
                       singular_values: np.ndarray) -> np.ndarray:
    """Rank last the columns that lie mostly outside the retained span.

    The s1/20 rule drops the directions that only a few points use; a point lying in such a
    direction gets a near-zero row v_i, and the inverse-leverage formula would then call it
    the most inlier-like point of all. A point the top r_d directions do not explain is not an
    inlier, so its score is set to 0, below every score of the formulas (all positive).
    """
    return np.where(explained_share(V, singular_values) < MIN_EXPLAINED_SHARE, 0.0, scores)


def _row_norms_sq(V: np.ndarray) -> np.ndarray:
    # A row of V can be (numerically) zero when its column lies wholly outside the top r_d
    # directions; clip so the inverse stays finite and that column ranks as most inlier-like
    # only if the formula really says so.
    return np.maximum(np.einsum("ij,ij->i", V, V), np.finfo(float).tiny)


def ancp_from_singular_vectors(V: np.ndarray) -> np.ndarray:
    """ANCP from the rows of the right singular vectors (no input checks: a hot-path form)."""
    return 1.0 / _row_norms_sq(V)


def sncp_from_singular_vectors(V: np.ndarray) -> np.ndarray:
    """SNCP from the rows of the right singular vectors (no input checks: a hot-path form)."""
    Vhat = V / np.sqrt(_row_norms_sq(V))[:, None]
    return np.einsum("ij,ij->i", Vhat @ (Vhat.T @ Vhat), Vhat)


def ancp_scores(D, *, r_d: int | None = None) -> np.ndarray:
    """ANCP (Algorithm 1): ``x(i) = 1 / ||v_i||^2``, the inverse leverage of each column."""
    return _prepared_ancp(prepare(D), r_d)


def sncp_scores(D, *, r_d: int | None = None) -> np.ndarray:
    """SNCP (Algorithm 2): ``x(i) = sum_j (v_i^T v_j)^2 / (||v_i||^2 ||v_j||^2)``.

    Computed as ``vhat_i^T (Vhat^T Vhat) vhat_i`` with an r_d x r_d matrix, so the cost is
    linear in the number of points instead of quadratic.
    """
    return _prepared_sncp(prepare(D), r_d)


def _prepared_ancp(Dn: np.ndarray, r_d: int | None = None) -> np.ndarray:
    V, s = right_singular_vectors(Dn, r_d, with_values=True)
    return demote_unexplained(ancp_from_singular_vectors(V), V, s)


def _prepared_sncp(Dn: np.ndarray, r_d: int | None = None) -> np.ndarray:
    V, s = right_singular_vectors(Dn, r_d, with_values=True)
    return demote_unexplained(sncp_from_singular_vectors(V), V, s)


def cop_scores(D, *, variant: str = "squared", block_size: int = 2048) -> np.ndarray:
    """Coherence Pursuit: ``x(i) = sum_{j != i} |d_i^T d_j|^p`` with p = 2 or 1.

    The squared variant needs only the M1 x M1 Gram ``Dn Dn^T`` (or the M2 x M2 one when that is
    smaller). The absolute variant has no such shortcut; it is computed in column blocks so
    memory stays at ``block_size x M2``.
    """
    return coherence_values(prepare(D), variant=variant, block_size=block_size)


# Scores of already checked, unit-length data, for callers that have prepared it once.
PREPARED_SCORES = {"ancp": _prepared_ancp, "sncp": _prepared_sncp,
                   "cop": lambda Dn: coherence_values(Dn)}


def coherence_values(Dn: np.ndarray, *, variant: str = "squared",
                     block_size: int = 2048) -> np.ndarray:
    """CoP scores of already unit-length columns (no input checks: a hot-path form)."""
    n_features, n_points = Dn.shape
    if variant == "squared":
        if n_features < n_points:
            # sum_j (d_i^T d_j)^2 = d_i^T (Dn Dn^T) d_i; subtract the j = i term, which is 1.
            return np.einsum("ji,ji->i", (Dn @ Dn.T) @ Dn, Dn) - 1.0
        G = Dn.T @ Dn
        return np.einsum("ij,ij->i", G, G) - 1.0
    if variant == "absolute":
        scores = np.empty(n_points)
        for start in range(0, n_points, block_size):
            block = np.abs(Dn[:, start:start + block_size].T @ Dn)
            scores[start:start + block_size] = block.sum(axis=1) - 1.0
        return scores
    raise ValueError(f"unknown CoP variant {variant!r}: use 'squared' or 'absolute'")


def ancp_scores_reference(D, *, r_d: int | None = None) -> np.ndarray:
    """ANCP exactly as the paper writes it: a full SVD of the normalised data."""
    Dn = prepare(D)
    _, s, Vt = np.linalg.svd(Dn, full_matrices=False)
    r_d = numerical_rank(s) if r_d is None else r_d
    return 1.0 / np.sum(Vt[:r_d] ** 2, axis=0)


def sncp_scores_reference(D, *, r_d: int | None = None) -> np.ndarray:
    """SNCP exactly as the paper writes it: the M2 x M2 matrix of normalised ``v_i^T v_j``."""
    Dn = prepare(D)
    _, s, Vt = np.linalg.svd(Dn, full_matrices=False)
    r_d = numerical_rank(s) if r_d is None else r_d
    V = Vt[:r_d].T
    Vhat = V / np.linalg.norm(V, axis=1, keepdims=True)
    return np.sum((Vhat @ Vhat.T) ** 2, axis=1)
