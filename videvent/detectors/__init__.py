"""Window scorers: one detection algorithm per module, all behind ``process_frame``."""

from .base import FrameScore
from .subspace_window import SubspaceWindowDetector

__all__ = ["FrameScore", "SubspaceWindowDetector"]
