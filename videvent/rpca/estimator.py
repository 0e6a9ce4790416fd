"""``RobustSubspace``: the robust PCA methods behind scikit-learn's outlier-detector API.

Rows are samples here (scikit-learn's convention); the functions of :mod:`videvent.rpca` take
the paper's features x points matrix, so the estimator transposes once at the boundary.
Hyper-parameters live only in ``__init__``; what ``fit`` learns ends in an underscore.
"""

from __future__ import annotations

import numpy as np

from ._linalg import principal_directions
from ._validation import check_data, normalize_columns, prepare
from .subspace import METHODS, SCORE_METHODS, robust_subspace


class RobustSubspace:
    """Learn the low-dimensional subspace the normal samples share; score samples against it.

    Parameters
    ----------
    method : 'sncp', 'ancp', 'cop', 'isearch', 'pca', 'fms', 'gms' or 'r1pca'
    rank : dimension of the subspace (3 for video in the paper)
    projection_dim : if set, first project the samples onto their top ``projection_dim``
        principal directions (the paper uses 50 for video), as the paper does before scoring
    n_inliers, outlier_fraction : how many training samples span the subspace (see
        :func:`robust_subspace`). Both None, the default, is the paper's rule: add samples in
        score order until they span ``rank`` dimensions. It needs no guess of the outlier
        share and is exact on noiseless data even with far more outliers than inliers (40
        inliers among 2000 outliers: error ~1e-15). Its trade-off: on noisy data ``rank``
        samples give a basis as noisy as they are. ``outlier_fraction=0.5`` (the most
        inlier-like half) averages the noise out over many samples, but only works when the
        outliers really are at most that share: with n_o >> n_i it takes outliers into the
        basis (errors 0.3 to 0.8 with 40 or fewer inliers among 2000 outliers)
    contamination : share of the training samples ``predict`` calls outliers; sets ``offset_``

    Attributes
    ----------
    components_ : (rank, n_features) orthonormal rows spanning the learned subspace
    inlier_scores_ : (n_samples,) the method's inlier scores of the training samples
        (score methods only; None for the subspace methods)
    offset_ : threshold on ``score_samples`` below which ``predict`` gives -1
    n_features_in_ : number of features seen in ``fit``
    """

    def __init__(self, method: str = "sncp", rank: int = 3, *, projection_dim: int | None = None,
                 n_inliers: int | None = None, outlier_fraction: float | None = None,
                 contamination: float = 0.1):
        self.method = method
        self.rank = rank
        self.projection_dim = projection_dim
        self.n_inliers = n_inliers
        self.outlier_fraction = outlier_fraction
        self.contamination = contamination

    def get_params(self, deep: bool = True) -> dict:
        return {name: getattr(self, name) for name in
                ("method", "rank", "projection_dim", "n_inliers", "outlier_fraction",
                 "contamination")}

    def set_params(self, **params) -> "RobustSubspace":
        for name, value in params.items():
            if name not in self.get_params():
                raise ValueError(f"RobustSubspace has no parameter {name!r}")
            setattr(self, name, value)
        return self

    def fit(self, X, y=None) -> "RobustSubspace":
        """Learn the subspace from samples ``X`` (n_samples x n_features). Returns self."""
        if self.method not in METHODS:
            raise ValueError(f"unknown method {self.method!r}: choose one of {', '.join(METHODS)}")
        if not 0.0 <= self.contamination < 0.5:
            raise ValueError(f"contamination must be in [0, 0.5), got {self.contamination}")
        D = check_data(np.asarray(X).T, name="X")
        projection = None
        if self.projection_dim is not None:
            projection = principal_directions(normalize_columns(D, name="X"),
                                              int(self.projection_dim))
            D = projection.T @ D
        scores = SCORE_METHODS[self.method](prepare(D)) if self.method in SCORE_METHODS else None
        U = robust_subspace(D, self.rank, method=self.method, n_inliers=self.n_inliers,
                            outlier_fraction=self.outlier_fraction, scores=scores)
        if projection is not None:
            U = projection @ U
        self.components_ = U.T
        self.inlier_scores_ = scores
        self.n_features_in_ = D.shape[0] if projection is None else projection.shape[0]
        self.offset_ = 0.0
        self.offset_ = float(np.quantile(self.score_samples(X), self.contamination))
        return self

    def _check_fitted(self, X) -> np.ndarray:
        if not hasattr(self, "components_"):
            raise ValueError("this RobustSubspace is not fitted yet: call fit(X) first")
        X = check_data(np.asarray(X).T, name="X").T
        if X.shape[1] != self.n_features_in_:
            raise ValueError(f"X has {X.shape[1]} features, the model was fitted on "
                             f"{self.n_features_in_}")
        return X

    def transform(self, X) -> np.ndarray:
        """Coordinates of the samples in the learned subspace (n_samples x rank)."""
        return self._check_fitted(X) @ self.components_.T

    def residuals(self, X) -> np.ndarray:
        """Distance of each unit-length sample from the subspace (0 = inside, 1 = orthogonal)."""
        X = self._check_fitted(X)
        norms = np.linalg.norm(X, axis=1)
        if (norms == 0).any():
            raise ValueError(f"X has {int((norms == 0).sum())} all-zero sample(s): they have "
                             "no direction to score")
        Xn = X / norms[:, None]
        inside = Xn @ self.components_.T
        return np.sqrt(np.clip(1.0 - np.einsum("ij,ij->i", inside, inside), 0.0, None))

    def score_samples(self, X) -> np.ndarray:
        """Higher = more normal: minus the residual."""
        return -self.residuals(X)

    def decision_function(self, X) -> np.ndarray:
        """``score_samples - offset_``: negative for outliers."""
        return self.score_samples(X) - self.offset_

    def predict(self, X) -> np.ndarray:
        """+1 for inliers, -1 for outliers."""
        return np.where(self.decision_function(X) >= 0, 1, -1)

    def fit_predict(self, X, y=None) -> np.ndarray:
        return self.fit(X).predict(X)
