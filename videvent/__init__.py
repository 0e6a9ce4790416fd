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

from __future__ import annotations

import importlib
import sys
import types

from ._version import __version__

# The public names and the module each comes from, imported when first used (PEP 562): so
# ``import videvent.rpca`` (the maths) loads no decoder, plotting or command-line code.
_PUBLIC = {
    "batch": "batch", "detector_for": "passes", "FrameScore": "detectors", "SubspaceWindowDetector": "detectors",
    "export": "export", "watch": "live", "detect": "pipeline", "RobustSubspace": "rpca",
    "Event": "segmenter", "RunResult": "session", "Sink": "session", "FrameStatus": "status",
    "Settings": "settings", "open_source": "sources",
}
__all__ = sorted(_PUBLIC) + ["__version__"]


def __getattr__(name: str):
    if name not in _PUBLIC:
        raise AttributeError(f"module 'videvent' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{_PUBLIC[name]}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_PUBLIC))


class _Face(types.ModuleType):
    """The package, whose public functions ``batch`` and ``export`` share their names with the
    modules they come from: importing such a module later (which binds it on its package)
    leaves the function as the public name (Python's documented way to customise a module's
    attribute access: its ``__class__``)."""

    def __setattr__(self, name: str, value) -> None:
        if isinstance(value, types.ModuleType) and name in _PUBLIC:
            return      # the module stays in sys.modules; the name stays the function's
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Face
