"""Small linear-algebra helpers shared by the subspace methods."""

from __future__ import annotations

import numpy as np


def principal_directions(A: np.ndarray, max_dim: int) -> np.ndarray:
    """Up to ``max_dim`` top left singular vectors of ``A``, fewer when ``A`` has lower rank.

    The paper projects the data onto its top 50 directions before scoring; a window with
    fewer independent points than that simply keeps all the directions it has.
    """
    U, s, _ = np.linalg.svd(A, full_matrices=False)
    numerical = int(np.count_nonzero(s > s[0] * max(A.shape) * np.finfo(float).eps))
    return U[:, :min(max_dim, numerical)]


def top_left_singular_vectors(A: np.ndarray, rank: int) -> np.ndarray:
    """Exactly ``rank`` top left singular vectors, or ValueError if ``A`` spans fewer."""
    U = principal_directions(A, rank)
    if U.shape[1] < rank:
        raise ValueError(f"the selected columns span only {U.shape[1]} dimension(s), "
                         f"fewer than rank={rank}")
    return U
