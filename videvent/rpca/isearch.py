"""Innovation Values of iSearch (Rahmani & Atia / Rahmani & Li), a baseline for ANCP and SNCP.

iSearch gives every column ``d_i`` of the column-normalised data a direction of innovation

    c_i* = argmin_c ||c^T D||_1   subject to   c^T d_i = 1

and calls ``1 / ||D^T c_i*||_1`` its Innovation Value. An outlier is innovative: a direction
can reach it while staying (almost) orthogonal to the other points, so its ``||D^T c_i*||_1``
is small and its Innovation Value large. videvent's scores are "larger = more inlier-like",
so :func:`isearch_scores` returns the inverse, ``||D^T c_i*||_1`` itself.

Both solvers work in the column space of ``D``. With the thin SVD ``D = U S V^T`` and the
change of variables ``b = S U^T c``, the problem becomes ``min ||V b||_1 s.t. v_i^T b = 1``
(``v_i`` the i-th row of ``V``): it has rank(D) unknowns instead of M1, and because ``V`` has
orthonormal columns the ADMM's least-squares step is a plain projection. Replacing the l1
norm by the l2 norm gives ``||D^T c_i*||_2^2 = 1 / ||v_i||^2``, the ANCP score (Lemma 1 of
Rahmani & Li).

As in the paper's Remark, the data are first reduced to their ``r_d`` dominant singular
directions (by default the paper's rule, singular values above s1 / 20), i.e. ``V`` keeps only
its first ``r_d`` columns. Without this step every noisy point has a small innovative
component in the noise directions, which an l1 direction of innovation finds: on the paper's
noisy model iSearch then fails at every SNR, and with it it behaves like ANCP, whose l2
problem on the same ``V`` it is.
"""

from __future__ import annotations

import numpy as np

from ._validation import prepare
from .scores import (MIN_EXPLAINED_SHARE, explained_share, numerical_rank,
                     right_singular_vectors)

SOLVERS = ("lp", "admm")

# The ADMM's duality gap costs a third product with V: check it every few iterations only.
_GAP_CHECK_EVERY = 10


def isearch_scores(D, *, solver: str = "lp", r_d: int | str | None = None,
                   max_iter: int = 1000, tol: float = 1e-3,
                   block_size: int = 1024) -> np.ndarray:
    """Inverse Innovation Values ``||D^T c_i*||_1`` of the columns of ``D`` (larger = inlier).

    Parameters
    ----------
    D : (M1, M2) data, columns are points; they are normalised to unit length first.
    solver : 'lp' solves one exact linear program per column with HiGHS, tens of milliseconds
        each, so it suits a few hundred points. 'admm' solves ``block_size`` columns at a time
        with matrix products and stops on a relative duality gap of ``tol``: its values are
        those of feasible directions, never below the exact ones and (unless ``max_iter``
        runs out first) at most a fraction ``tol`` above.
    r_d : dominant singular directions kept (the paper's Remark): None for the paper's rule
        (singular values above s1 / 20), a number for that many, or ``"all"`` for every
        direction down to round-off (iSearch without the reduction; fails on noisy data).
        As for ANCP and SNCP, a column with less than half its energy in the kept directions
        is scored 0 (ranked last): its constraint ``v_i^T b = 1`` is nearly unsatisfiable, so
        its value would blow up and call it the most inlier-like point.
    max_iter, tol, block_size : ADMM only.
    """
    if solver not in SOLVERS:
        raise ValueError(f"unknown iSearch solver {solver!r}: use one of {', '.join(SOLVERS)}")
    if max_iter < 1 or block_size < 1 or not tol > 0:
        raise ValueError(f"need max_iter >= 1, block_size >= 1 and tol > 0, got {max_iter}, "
                         f"{block_size} and {tol}")
    Dn = prepare(D)
    if isinstance(r_d, str):
        if r_d != "all":
            raise ValueError(f"r_d must be None, a positive integer or 'all', got {r_d!r}")
        V = _column_space_coordinates(Dn)
        scored = np.arange(V.shape[0])
    else:
        if r_d is not None and (isinstance(r_d, bool) or not isinstance(r_d, (int, np.integer))
                                or r_d < 1):
            raise ValueError(f"r_d must be None, a positive integer or 'all', got {r_d!r}")
        V, singular_values = right_singular_vectors(Dn, r_d, with_values=True)
        scored = np.flatnonzero(explained_share(V, singular_values) >= MIN_EXPLAINED_SHARE)
    scores = np.zeros(V.shape[0])         # unexplained columns keep 0: ranked last
    if solver == "lp":
        scores[scored] = [_innovation_lp(V, i) for i in scored]
        return scores
    for start in range(0, scored.size, block_size):
        columns = scored[start:start + block_size]
        scores[columns] = _innovation_admm(V, columns, max_iter=max_iter, tol=tol)
    return scores


def _column_space_coordinates(Dn: np.ndarray) -> np.ndarray:
    """``V`` (M2 x rank(D)) of the thin SVD: ``D^T c = V b`` for ``b = S U^T c``.

    For ``r_d="all"``: a full SVD rather than the Gram eigen-decomposition, and the rank at
    round-off level, so every column lies in the span kept and its constraint
    ``v_i^T b = 1`` has a solution.
    """
    _, s, Vt = np.linalg.svd(Dn, full_matrices=False)
    rank = numerical_rank(s, ratio=1.0 / (max(Dn.shape) * np.finfo(float).eps))
    return Vt[:rank].T


def _innovation_lp(V: np.ndarray, i: int) -> float:
    """``min ||V b||_1 s.t. v_i^T b = 1``, solved exactly through its dual LP with HiGHS.

    The dual, ``max lambda s.t. V^T w = lambda v_i, -1 <= w <= 1``, has the same optimal value
    and only rank(D) equality constraints, where the primal in ``(b, t >= |V b|)`` has 2 M2
    inequalities; HiGHS solves it several times faster.
    """
    n_points, rank = V.shape
    A_eq = np.hstack([V.T, -V[i][:, None]])
    cost = np.zeros(n_points + 1)
    cost[-1] = -1.0                                     # maximise lambda
    bounds = [(-1.0, 1.0)] * n_points + [(None, None)]
    from scipy.optimize import linprog  # a heavy import; only the exact solver needs it

    result = linprog(cost, A_eq=A_eq, b_eq=np.zeros(rank), bounds=bounds, method="highs")
    if result.status != 0:
        raise RuntimeError(f"iSearch LP for column {i} failed: {result.message}")
    return -float(result.fun)


def _soft_threshold(X: np.ndarray, threshold: np.ndarray) -> np.ndarray:
    return np.sign(X) * np.maximum(np.abs(X) - threshold, 0.0)


def _innovation_admm(V: np.ndarray, columns: np.ndarray, *, max_iter: int,
                     tol: float) -> np.ndarray:
    """ADMM for ``min ||z||_1 s.t. z = V b, v_i^T b = 1``, one column of ``B``/``Z`` per point.

    Scaled-form ADMM (Boyd et al. 2011, section 3.1.1). Each point's penalty ``rho`` is the
    inverse mean magnitude of its starting ``z``, since how far a point is from the others sets
    the scale of its problem. It stops on a certified duality gap rather than on residuals:
    ``y = rho u`` always has entries in [-1, 1]; removing the part of ``V^T y`` off ``v_i`` and
    rescaling gives a feasible point of the dual LP (see :func:`_innovation_lp`), whose value is
    a lower bound. A point leaves the batch once ``upper - lower <= tol * upper``, so the slow
    few do not keep the rest iterating. ``V^T Z`` and ``V^T u`` are carried along
    (``V^T V = I``), so an iteration costs two products with ``V``.
    """
    values = np.empty(len(columns))
    targets = V[columns].T                              # v_i as columns, rank x batch
    targets_sq = np.einsum("ij,ij->j", targets, targets)
    # Start from the l2 solution b = v_i / ||v_i||^2 (the ANCP direction).
    Vt_Z = targets / targets_sq
    Z = V @ Vt_Z
    scaled_dual = np.zeros_like(Z)
    Vt_scaled_dual = np.zeros_like(Vt_Z)
    rho = 1.0 / np.abs(Z).mean(axis=0)
    active = np.arange(len(columns))
    for iteration in range(1, max_iter + 1):
        B = Vt_Z - Vt_scaled_dual
        B += targets * ((1.0 - np.einsum("ij,ij->j", targets, B)) / targets_sq)
        VB = V @ B                                      # feasible: v_i^T b = 1 holds exactly
        Z = _soft_threshold(VB + scaled_dual, 1.0 / rho)
        scaled_dual += VB - Z
        Vt_Z = V.T @ Z
        Vt_scaled_dual += B - Vt_Z
        if iteration % _GAP_CHECK_EVERY and iteration < max_iter:
            continue
        upper = np.abs(VB).sum(axis=0)
        Vt_y = rho * Vt_scaled_dual
        lam = np.einsum("ij,ij->j", targets, Vt_y) / targets_sq
        w = rho * scaled_dual - V @ (Vt_y - targets * lam)
        lower = lam / np.maximum(1.0, np.abs(w).max(axis=0))
        converged = upper - lower <= tol * upper
        values[active[converged]] = upper[converged]
        keep = ~converged
        if not keep.any():
            break
        active, targets, targets_sq, rho = (active[keep], targets[:, keep], targets_sq[keep],
                                            rho[keep])
        Z, scaled_dual = Z[:, keep], scaled_dual[:, keep]
        Vt_Z, Vt_scaled_dual = Vt_Z[:, keep], Vt_scaled_dual[:, keep]
    else:
        values[active] = upper[keep]
    return values
