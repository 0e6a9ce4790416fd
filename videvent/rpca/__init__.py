"""Closed-form robust PCA (Rahmani & Li): ANCP, SNCP and the paper's baselines, on arrays.

The column convention is the paper's: ``D`` is features x data points. This package holds
the mathematics only (numpy and scipy, no video or I/O), so the streaming detector, the
notebooks and users' own code all call the same tested functions.
"""

from .baselines import fms_subspace, gms_subspace, r1pca_subspace
from .estimator import RobustSubspace
from .isearch import isearch_scores
from .scores import (ancp_scores, ancp_scores_reference, cop_scores, numerical_rank,
                     right_singular_vectors, sncp_scores, sncp_scores_reference)
from .subspace import METHODS, pca_subspace, recovery_error, residuals, robust_subspace

__all__ = [
    "RobustSubspace", "METHODS", "ancp_scores", "ancp_scores_reference", "cop_scores",
    "fms_subspace", "gms_subspace", "isearch_scores", "numerical_rank", "pca_subspace",
    "r1pca_subspace", "recovery_error", "residuals", "right_singular_vectors", "robust_subspace",
    "sncp_scores", "sncp_scores_reference",
]
