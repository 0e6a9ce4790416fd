"""Event thumbnails: each event's peak frame with the overlay (see ``annotate.Overlay``), at
the source's size up to 720 pixels high.

Only the best frame of each open event is kept until the event is done, so the thumbnails
cost no second decoding and memory stays bounded.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import cv2
import numpy as np

from .annotate import Overlay
from ..atomic import write_atomically
from .sink import Sink

# Frigate's snapshots and a 720p camera's own pictures: larger sources are scaled down to it.
THUMBNAIL_MAX_HEIGHT = 720


def write_thumbnail(path: Path, image: np.ndarray, score, box_level: float,
                    regions=None, overlay: Overlay = Overlay()) -> None:
    """The peak frame of an event with ``overlay`` and the outlines of ``regions``
    (``videvent.regions.Regions``), at its own size up to 720 pixels high."""
    colour = cv2.cvtColor(image, cv2.COLOR_GRAY2BGR) if image.ndim == 2 else image
    residual = score.residual_image
    if residual.ndim == 3:
        residual = np.abs(residual).max(axis=2)
    shown, _ = overlay.draw(colour, residual, score.block_scores, box_level)
    if regions:
        regions.draw(shown, (colour.shape[1], colour.shape[0]))
    if shown.shape[0] > THUMBNAIL_MAX_HEIGHT:
        width = round(shown.shape[1] * THUMBNAIL_MAX_HEIGHT / shown.shape[0])
        shown = cv2.resize(shown, (width, THUMBNAIL_MAX_HEIGHT), interpolation=cv2.INTER_AREA)
    encoded, jpeg = cv2.imencode(".jpg", shown, [cv2.IMWRITE_JPEG_QUALITY, 88])
    if not encoded:
        raise ValueError(f"cannot encode the thumbnail {path}")
    # Written by Python: cv2.imwrite crashes on a path that is not valid UTF-8.
    write_atomically(path, lambda temporary: temporary.write_bytes(jpeg.tobytes()))


class ThumbnailSink(Sink):
    """Writes ``thumbnails/eventNNN.jpg`` for every event, from its peak frame.

    ``redecode(index)``: the picture of a frame, decoded again, for front ends whose frames
    carry none (``batch`` decodes chunks elsewhere). ``regions`` are outlined on them, and
    ``overlay`` drawn.
    """

    def __init__(self, folder: Path, box_level: float,
                 redecode: Callable[[int], np.ndarray] | None = None, regions=None,
                 overlay: Overlay = Overlay()):
        self.folder, self.box_level, self.redecode = Path(folder), box_level, redecode
        self.regions, self.overlay = regions, overlay
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
        image = frame.picture_to_show()
        if image is None:
            if self.redecode is None:
                return
            image = self.redecode(score.index)
        path = self.folder / f"event{event.number:03d}.jpg"
        write_thumbnail(path, image, score, self.box_level, self.regions, self.overlay)
        files["thumbnail"] = str(path)
