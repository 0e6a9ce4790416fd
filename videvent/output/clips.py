"""Video sinks: one clip per event, and the annotated video with its ``regions.csv``.

Both are fed decided frames by a session (or by ``videvent export``, from a run's files), so
they are written in the same pass as the scores. Files appear only when complete.
"""

from __future__ import annotations

import csv
import json
import os
from collections import deque
from pathlib import Path
from typing import Callable

import cv2
import numpy as np

from .annotate import Annotator
from ..atomic import partial_path, write_text_atomically
from .sink import Sink
from .video import VideoWriter

ANNOTATED_NAME = "annotated.mp4"
REGIONS_NAME = "regions.csv"
CLIPS_NAME = "clips.json"
CLIP_TEMPLATE = "{video}.event{n:03d}.mp4"


def write_clip_index(folder: Path, names: dict[int, str]) -> None:
    """``clips.json``: which clip is which event's, for the report's links (the clip names
    come from the user's template); only the clips that exist."""
    write_text_atomically(folder / CLIPS_NAME, json.dumps(
        {str(n): name for n, name in names.items() if (folder / name).is_file()}))


def bgr_picture(frame) -> np.ndarray | None:
    """The frame's picture in BGR (its colour one if kept), or None if it has none."""
    picture = frame.colour if frame.colour is not None else frame.image
    if picture is None or picture.ndim == 3:
        return picture
    return cv2.cvtColor(picture, cv2.COLOR_GRAY2BGR)


def picture_of(frame, width: int, height: int) -> np.ndarray:
    """The frame's BGR picture; black for an undecodable frame (the timeline is kept)."""
    picture = bgr_picture(frame)
    return np.zeros((height, width, 3), np.uint8) if picture is None else picture


class ClipSink(Sink):
    """A clip per event, from its padded start (kept in a ring of recent pictures) to its
    padded end; ``written`` lists the clips, ``path_of(n)`` the open one's path."""

    def __init__(self, folder: Path, name_of: Callable[[int], str], fps: float,
                 pre_roll: int):
        self.folder, self.name_of, self.fps = Path(folder), name_of, fps
        self._recent: deque[tuple[int, np.ndarray]] = deque(maxlen=pre_roll + 2)
        self._open: tuple[int, VideoWriter] | None = None   # (event number, writer)
        self._starting: tuple[int, int] | None = None        # (event number, first frame)
        self.written: list[Path] = []

    def path_of(self, number: int) -> Path | None:
        """Where event ``number``'s clip goes, while it is being written."""
        current = (self._starting[0] if self._starting is not None
                   else self._open[0] if self._open is not None else None)
        return self.folder / self.name_of(number) if current == number else None

    def on_event_start(self, event) -> None:
        self._close()
        # Opened at the event's first frame, which comes next: its picture sets the size.
        self._starting = event.number, event.start_frame

    def on_frame(self, frame, score, event_number) -> None:
        picture = bgr_picture(frame)
        if picture is None:
            return
        self._recent.append((frame.index, picture))
        if self._starting is not None:
            (number, first), self._starting = self._starting, None
            self.folder.mkdir(parents=True, exist_ok=True)
            height, width = picture.shape[:2]
            self._open = (number, VideoWriter(self.folder / self.name_of(number), width,
                                              height, self.fps))
            for index, earlier in self._recent:  # the time before the start, and this frame
                if index >= first:
                    self._write(self._open[1], earlier)
        elif self._open is not None:
            self._write(self._open[1], picture)

    def on_event_end(self, event, files: dict[str, str]) -> None:
        if self._open is not None and self._open[0] == event.number:
            path = self._close()
            if path is not None:
                files["clip"] = str(path)

    @staticmethod
    def _write(writer: VideoWriter, picture: np.ndarray) -> None:
        if picture.shape[:2] == writer.size:  # a reconnected stream may change size
            writer.write(picture)

    def _close(self) -> Path | None:
        # Forgotten before closing: a clip that failed to close (disk full) is not closed twice.
        clip, self._open, self._starting = self._open, None, None
        if clip is None:
            return None
        path = clip[1].close()
        self.written.append(path)
        return path

    def close(self) -> None:
        self._close()

    def discard(self) -> None:
        clip, self._open = self._open, None
        if clip is not None:
            clip[1].discard()


class AnnotatedVideoSink(Sink):
    """Every frame drawn by ``annotator`` into an H.264 video, and the boxes drawn into
    ``regions.csv``. ``fill_chart``: the strip chart is filled in as the frames come."""

    def __init__(self, path: Path, regions_path: Path, annotator: Annotator, fps: float,
                 fill_chart: bool = False):
        self.annotator, self.fill_chart = annotator, fill_chart
        self.regions_path = Path(regions_path)
        self.video = VideoWriter(path, annotator.width, annotator.height, fps)
        self._regions_file = open(partial_path(self.regions_path), "w", newline="")
        self._regions = csv.writer(self._regions_file)
        self._regions.writerow(("frame", "event", "rank", "x", "y", "width", "height"))
        self.written: list[Path] = []

    def on_frame(self, frame, score, event_number) -> None:
        annotator = self.annotator
        if self.fill_chart and annotator.chart is not None:
            annotator.chart.add(frame.index, score.score, event_number is not None)
        # No heat map where the detector had no model to explain the frame with (its first
        # frames, and frames without a picture).
        scored = score.residual_image is not None
        image, boxes = annotator.draw(
            picture_of(frame, annotator.width, annotator.height), frame.index, frame.time_s,
            event_number, score.residual_image if scored else None,
            score.block_scores if scored else None)
        self.video.write(image)
        self._regions.writerows((frame.index, event_number, rank, box.x, box.y, box.width,
                                 box.height) for rank, box in enumerate(boxes, 1))

    def close(self) -> None:
        try:
            self.written = [self.video.close()]
            self._regions_file.close()
            os.replace(self._regions_file.name, self.regions_path)
        except BaseException:
            # A full disk at the end: the video or the boxes cannot be finished, and neither
            # is left half-written (the video has removed its own temporary file).
            self.discard()
            raise
        self.written.append(self.regions_path)

    def discard(self) -> None:
        self.video.discard()
        try:
            self._regions_file.close()
        except OSError:
            pass  # its buffer could not be flushed (disk full); the file goes anyway
        finally:
            Path(self._regions_file.name).unlink(missing_ok=True)
