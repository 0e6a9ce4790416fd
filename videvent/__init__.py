"""videvent: find events in video with closed-form robust PCA (Rahmani & Li's ANCP and SNCP).

Every frame is a point in a high-dimensional space; the ordinary frames share a low-dimensional
subspace, learned robustly from a sliding window of normal frames; frames the subspace cannot
explain are the events.

    >>> from videvent import detect
    >>> result = detect("clip.mp4")          # writes clip.videvent/
    >>> [(e.start_time_s, e.end_time_s) for e in result.events]
"""

__version__ = "0.1.0"

from .detectors import SubspaceWindowDetector  # noqa: E402
from .pipeline import RunResult, detect  # noqa: E402
from .rpca import RobustSubspace  # noqa: E402
from .settings import Settings  # noqa: E402

__all__ = ["RobustSubspace", "RunResult", "Settings", "SubspaceWindowDetector", "__version__",
           "detect"]
