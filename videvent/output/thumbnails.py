"""Event thumbnails: each event's peak frame with the overlay (see ``annotate.Overlay``), in
the source's colours at its size up to 720 pixels high, captioned with what the event was and
when (its number and kind, the frame's timecode), as the annotated video labels an event's
frames.

Only the best frame of each open event is kept until the event is done, so the thumbnails
cost no second decoding and memory stays bounded; its colour picture is made from it then
(``Frame.picture_to_show``), so a pass on grey frames pays for one colour picture an event.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import cv2
import numpy as np

from .annotate import Overlay, caption
from ..atomic import write_atomically
from .sink import Sink

# Frigate's snapshots and a 720p camera's own pictures: larger sources are scaled down to it.
THUMBNAIL_MAX_HEIGHT = 720
JPEG_QUALITY = 88


@dataclass(frozen=True)
class ThumbnailStyle:
    """How an event's thumbnail is drawn: ``overlay``, the changed areas boxed from
    ``box_level`` up, and the outlines of ``regions`` (``videvent.regions.Regions``)."""

    box_level: float
    regions: object = None
    overlay: Overlay = Overlay()

    def jpeg(self, image: np.ndarray, score) -> bytes:
        """The thumbnail of ``image`` (a frame at its own size), whose verdict is ``score``
        (with its residual image), up to 720 pixels high, as JPEG."""
        colour = cv2.cvtColor(image, cv2.COLOR_GRAY2BGR) if image.ndim == 2 else image
        residual = score.residual_image
        if residual.ndim == 3:
            residual = np.abs(residual).max(axis=2)
        shown, _ = self.overlay.draw(colour, residual, score.block_scores, self.box_level)
        if self.regions:
            self.regions.draw(shown, (colour.shape[1], colour.shape[0]))
        if shown.shape[0] > THUMBNAIL_MAX_HEIGHT:
            width = round(shown.shape[1] * THUMBNAIL_MAX_HEIGHT / shown.shape[0])
            shown = cv2.resize(shown, (width, THUMBNAIL_MAX_HEIGHT),
                               interpolation=cv2.INTER_AREA)
        jpeg = _encoded(shown)
        if jpeg is None:
            raise ValueError(f"cannot encode the thumbnail of frame {score.index}")
        return jpeg

    def captioned(self, jpeg: bytes, label: str, time_s: float) -> bytes:
        """The thumbnail ``jpeg`` with its event's ``label`` and timecode drawn in its top
        corners (``annotate.caption``); as it was with the overlay ``off``, which draws
        nothing. Drawn on the finished thumbnail, as the event's kind is known only when it
        ends: a thumbnail made where a chunk was scored (``batch``) is captioned as one made
        here, to the same bytes."""
        if self.overlay.style == "off":
            return jpeg
        picture = cv2.imdecode(np.frombuffer(jpeg, np.uint8), cv2.IMREAD_COLOR)
        if picture is None:
            raise ValueError("cannot decode a thumbnail to caption it")
        caption(picture, label, time_s)
        captioned = _encoded(picture)
        if captioned is None:
            raise ValueError(f"cannot encode the thumbnail of {label}")
        return captioned


def _encoded(picture: np.ndarray) -> bytes | None:
    """``picture`` as JPEG (None if it cannot be encoded)."""
    encoded, jpeg = cv2.imencode(".jpg", picture, [cv2.IMWRITE_JPEG_QUALITY, JPEG_QUALITY])
    return jpeg.tobytes() if encoded else None


def write_thumbnail(path: Path, jpeg: bytes) -> None:
    # Written by Python: cv2.imwrite crashes on a path that is not valid UTF-8.
    write_atomically(path, lambda temporary: temporary.write_bytes(jpeg))


class ThumbnailSink(Sink):
    """Writes ``thumbnails/eventNNN.jpg`` for every event, from its peak frame, drawn in
    ``style``.

    For front ends whose frames carry no picture (``batch`` scores chunks elsewhere):
    ``made(index)``, the thumbnail of a frame made where it was scored (None if it was not),
    else ``redecode(index)``, the picture of a frame decoded again.
    """

    def __init__(self, folder: Path, style: ThumbnailStyle,
                 redecode: Callable[[int], np.ndarray] | None = None,
                 made: Callable[[int], bytes | None] | None = None):
        self.folder, self.style = Path(folder), style
        self.redecode, self.made = redecode, made
        self.folder.mkdir(exist_ok=True)
        # Per open event: its best frame so far (score, frame, verdict). Only frames in an
        # event's core can be its peak, so nothing else is kept: a watch with unusual moments
        # that never become events keeps no pictures. The frame's picture is made when the
        # thumbnail is written: a frame scaled while decoding makes its full one then.
        self.best: dict[int, tuple[float, object, object]] = {}

    def on_frame(self, frame, score, event_number) -> None:
        if event_number is None or score.residual_image is None:
            return
        best = self.best.get(event_number)
        if best is None or score.score > best[0]:
            self.best[event_number] = (score.score, frame, score)

    def on_event_end(self, event, files: dict[str, str]) -> None:
        found = self.best.pop(event.number, None)
        if found is None:
            return
        _, frame, score = found
        jpeg = None if self.made is None else self.made(score.index)
        if jpeg is None:
            image = frame.picture_to_show()
            if image is None:
                if self.redecode is None:
                    return
                image = self.redecode(score.index)
            jpeg = self.style.jpeg(image, score)
        label = f"EVENT {event.number}" + (f": {event.kind}" if event.kind else "")
        jpeg = self.style.captioned(jpeg, label, score.time_s)
        path = self.folder / f"event{event.number:03d}.jpg"
        write_thumbnail(path, jpeg)
        files["thumbnail"] = str(path)
