"""What a sink is: an object a session tells about frames, events and the source as they come.

``videvent.session.Session`` calls the methods a sink has; this base class defines them all as
no-ops, so a sink subclasses it and writes only those it needs. Sinks must never block the
caller for long: one that talks to the network queues and sends on a thread of its own.
Here, in the leaf package, so that the sinks of ``videvent.output`` need nothing above it;
``videvent.session`` gives the same names.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class SessionInfo:
    """What a sink is told when the session starts."""

    name: str          # the camera's or source's name
    uri: str
    fps: float
    width: int         # the picture's size
    height: int
    threshold: float   # the score that starts an event
    settings: Any      # videvent.settings.Settings
    folder: Any = None  # the result folder the session writes into (a Path), if any
    started: str = ""  # when the session started (UTC, ISO 8601), as its records say


class Sink:
    """Base of every sink: each method is optional, and does nothing here."""

    def on_start(self, info: SessionInfo) -> None:
        """The session starts."""

    def on_frame(self, frame, score, event_number: int | None) -> None:
        """A frame is decided: ``event_number`` is its event's when it is inside an event's
        core, else None. ``frame.colour`` (or ``frame.image``) is its picture when the front
        end keeps pictures; ``score.residual_image`` and ``score.block_scores`` are set when
        the detector explains its scores."""

    def on_frame_resting(self, frame, score, event_number: int | None) -> None:
        """A frame decided while the sink rests after a failure to write (a live session,
        until the next event): nothing is to be written, but a sink that keeps recent
        frames for later (a clip's time before its event) keeps this one."""

    def on_event_start(self, event) -> None:
        """The segmenter confirmed a new event (its end is not known yet)."""

    def on_event_update(self, event) -> None:
        """The open event's peak grew."""

    def on_event_end(self, event, files: dict[str, str]) -> None:
        """The event is complete; ``files`` names what was written for it (e.g. thumbnail,
        clip): sinks earlier in the session's list add the files they wrote."""

    def on_status(self, status: str, detail: dict) -> None:
        """The source's state: connected, lost, back, stalled or finished."""

    def close(self) -> None:
        """The session is over: finish what was written."""
