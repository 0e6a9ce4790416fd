"""videvent: find events in video with closed-form robust PCA (Rahmani & Li's ANCP and SNCP).

Every frame is a point in a high-dimensional space; the ordinary frames share a low-dimensional
subspace, learned from a sliding window of frames that may hold events (the robust inlier
scores pick the background among them); frames the subspace cannot explain are the events.

    >>> from videvent import detect
    >>> result = detect("clip.mp4")                     # returns what it found, writes nothing
    >>> [(e.start_time_s, e.end_time_s) for e in result.events]
    >>> detect("clip.mp4", out_dir="clip.videvent")     # the result folder of `videvent run`
    >>> RunResult.load("clip.videvent").events          # read back later

``watch``, ``batch`` and ``export`` are the other commands; ``open_source`` reads any video,
image sequence, camera or stream frame by frame, ``SubspaceWindowDetector`` scores frames
(``FrameScore``), and a ``videvent.session.Sink`` is told about frames and events as they come.
"""

__version__ = "0.1.0"

from .batch import batch  # noqa: E402
from .detectors import FrameScore, SubspaceWindowDetector  # noqa: E402
from .export import export  # noqa: E402
from .live import watch  # noqa: E402
from .pipeline import detect  # noqa: E402
from .rpca import RobustSubspace  # noqa: E402
from .segmenter import Event  # noqa: E402
from .session import FrameStatus, RunResult, Sink  # noqa: E402
from .settings import Settings  # noqa: E402
from .sources import open_source  # noqa: E402

__all__ = ["Event", "FrameScore", "FrameStatus", "RobustSubspace", "RunResult", "Settings",
           "Sink", "SubspaceWindowDetector", "__version__", "batch", "detect", "export",
           "open_source", "watch"]
