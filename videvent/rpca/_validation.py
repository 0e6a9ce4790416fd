"""Input checks shared by the robust PCA functions.

Every public function in :mod:`videvent.rpca` takes a data matrix in the paper's convention
(features x data points). Bad input must fail loudly with a message that says what is wrong,
instead of turning into NaN scores three calls later.
"""

from __future__ import annotations

import numpy as np

# Columns whose norm is this small relative to the largest column count as all-zero.
_ZERO_COLUMN_RTOL = 1e-12


def check_data(D, *, name: str = "D", min_points: int = 1) -> np.ndarray:
    """Return ``D`` as a 2-D float64 array, or raise ``ValueError`` saying what is wrong."""
    D = np.asarray(D)
    if D.ndim != 2:
        raise ValueError(f"{name} must be a 2-D array (features x points), got {D.ndim}-D")
    if not np.issubdtype(D.dtype, np.number) or np.iscomplexobj(D):
        raise ValueError(f"{name} must hold real numbers, got dtype {D.dtype}")
    D = D.astype(np.float64, copy=False)
    if D.shape[0] == 0 or D.shape[1] < min_points:
        raise ValueError(f"{name} has shape {D.shape}: need at least one feature and "
                         f"{min_points} point(s)")
    finite = np.isfinite(D)
    if not finite.all():
        bad = np.flatnonzero(~finite.all(axis=0))
        raise ValueError(f"{name} contains NaN or infinite values (in {bad.size} column(s), "
                         f"first is column {bad[0]})")
    return D


def normalize_columns(D: np.ndarray, *, name: str = "D") -> np.ndarray:
    """Scale every column to unit Euclidean length; all-zero columns are an error."""
    norms = np.linalg.norm(D, axis=0)
    zero = norms <= _ZERO_COLUMN_RTOL * max(norms.max(), np.finfo(float).tiny)
    if zero.any():
        raise ValueError(f"{name} has {int(zero.sum())} all-zero column(s) (first is column "
                         f"{int(np.flatnonzero(zero)[0])}): they have no direction to score")
    return D / norms


def check_no_duplicate_columns(Dn: np.ndarray, *, name: str = "D") -> None:
    """Raise if two unit-length columns point the same way (repeated data points).

    Repeated points split their leverage between the copies and make them look more
    inlier-like than they are, so they are rejected rather than scored silently. Columns are
    sorted by a random projection, so only neighbours in that order need comparing: linear
    cost, where comparing every column with every other would be quadratic.
    """
    projection = np.random.default_rng(0).standard_normal(Dn.shape[0]) @ Dn
    order = np.argsort(projection, kind="stable")
    close = np.flatnonzero(np.diff(projection[order]) <= 1e-12)
    for position in close:
        first, second = order[position], order[position + 1]
        if np.allclose(Dn[:, first], Dn[:, second], rtol=0.0, atol=1e-12):
            raise ValueError(f"{name} has duplicate columns (columns {min(first, second)} and "
                             f"{max(first, second)} are the same after normalisation): "
                             "remove repeated data points first")


def check_rank(rank: int, D: np.ndarray, *, name: str = "D") -> int:
    """Validate the target subspace dimension against the data."""
    if isinstance(rank, bool) or not isinstance(rank, (int, np.integer)) or rank < 1:
        raise ValueError(f"rank must be a positive integer, got {rank!r}")
    n_features, n_points = D.shape
    if n_points < rank:
        raise ValueError(f"{name} has {n_points} point(s), fewer than rank={rank}")
    if n_features < rank:
        raise ValueError(f"{name} has {n_features} feature(s), fewer than rank={rank}")
    return int(rank)


def prepare(D, *, name: str = "D", min_points: int = 1) -> np.ndarray:
    """Check ``D`` and return it with unit-length columns, the first step of every score."""
    Dn = normalize_columns(check_data(D, name=name, min_points=min_points), name=name)
    check_no_duplicate_columns(Dn, name=name)
    return Dn
