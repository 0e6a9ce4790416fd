"""OpenCV (cv2.VideoCapture) backend: cameras, network streams, printf image patterns, and
video files that PyAV cannot open.

Grey frames are the decoded BGR frame through cv2.cvtColor. CAP_PROP_CONVERT_RGB=0 was
measured and not used: for yuv420p video it returns the raw limited-range luma plane (other
levels than every other path), logs a warning per frame, and for other pixel formats it
returns whatever the first plane holds.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterator

import cv2
import numpy as np

from .base import Frame, FrameSource, SourceError, frame_rate, public_uri

# How long a network stream may take to open or to deliver a frame before it counts as ended.
STREAM_TIMEOUT_MS = 10_000


class OpenCVSource(FrameSource):
    """Frames read with cv2.VideoCapture.

    `target` is a file path, a printf pattern, a URL or a camera index. Image patterns
    (`fixed_rate=True`) take their times from `fps` (default 25); other sources take them from
    CAP_PROP_POS_MSEC as long as it increases, then from index / fps.
    """

    def __init__(self, target: str | int, *, name: str, colour: bool = False,
                 fps: float | None = None, is_live: bool = False,
                 fixed_rate: bool = False, keep_colour: bool = False) -> None:
        self.uri = public_uri(str(target))          # what messages and files name it by
        self.name = name
        self.is_live = is_live
        self._target = target
        self._colour = colour
        self._keep_colour = keep_colour
        self._closed = False
        self._capture = self._open_capture()
        reported_fps = None if fixed_rate else self._capture.get(cv2.CAP_PROP_FPS)
        self.fps, self.fps_assumed = frame_rate(reported_fps, fps)
        count = self._capture.get(cv2.CAP_PROP_FRAME_COUNT)
        known = math.isfinite(count) and count > 0 and not is_live
        self.frame_count = round(count) if known else None
        # Read up to the first good frame now: it proves the source delivers frames, gives the
        # true size and the clock reading of frame 0. frames() hands these reads out first.
        self._pending: list[np.ndarray | None] = []  # None for a read that failed
        attempts = self.frame_count or 1  # a damaged file start; a live source gets one try
        for _ in range(attempts):
            ok, image = self._capture.read()
            if ok and image is not None:
                break
            self._pending.append(None)
        else:
            self._capture.release()
            raise SourceError(f"cannot read {self._describe()}: no video frame could be decoded")
        self._pending.append(image)
        self.height, self.width = image.shape[:2]
        self._position = 0  # index of the next frame frames() hands out
        self._origin_ms = (self._capture.get(cv2.CAP_PROP_POS_MSEC)
                           - 1000 * (len(self._pending) - 1) / self.fps)
        self._last_time = -math.inf
        self._use_msec = not fixed_rate

    def frames(self, start: int = 0, end: int | None = None, *,
               size: tuple[int, int] | None = None) -> Iterator[Frame]:
        self._check_pass(start, end)
        if self.is_live and start < self._position:
            raise ValueError(f"live source {self.name!r} is already at frame {self._position}")
        return self._frames(start, end)

    def close(self) -> None:
        self._closed = True
        self._capture.release()

    def _frames(self, start: int, end: int | None) -> Iterator[Frame]:
        if start != self._position and not self.is_live:
            self._seek(start)
        failed = 0  # reads that failed since the last good one
        while end is None or self._position < end:
            if self._pending:
                image = self._pending.pop(0)
            else:
                ok, image = self._capture.read()
                if not ok or image is None:
                    # In the middle of a file (or image sequence) a failed read is a frame lost
                    # to damage and the capture goes on after it; at the end reads keep
                    # failing, and the frame count bounds how long that is tried.
                    failed += 1
                    if not self.frame_count or self._position + failed >= self.frame_count:
                        return
                    continue
            for _ in range(failed):
                yield from self._emit(None, start, end)
            failed = 0
            yield from self._emit(image, start, end)

    def _emit(self, image: np.ndarray | None, start: int, end: int | None) -> Iterator[Frame]:
        """The frame at the current position, if it is in [start, end); then move on."""
        index = self._position
        if end is not None and index >= end:
            return
        self._position += 1
        if index >= start:
            if image is None:  # the capture's clock already shows the next frame
                yield Frame(index, index / self.fps, None)
            else:
                kept = _bgr(image) if self._keep_colour else None
                # Not kept: the decoded picture is held (until the frame is done with), and
                # made BGR only if the frame is shown (its thumbnail).
                made = functools.partial(_bgr, image) if kept is None else None
                working = _bgr(image) if self._colour else _grey(image)
                yield Frame(index, self._time(index), working, kept, make_picture=made)

    def _seek(self, start: int) -> None:
        """Put the capture at frame `start`, or at frame 0 when it cannot seek (then frames()
        decodes and skips)."""
        self._pending.clear()
        self._last_time = -math.inf
        # OpenCV reports success on formats it cannot seek in (MPEG-TS, raw H.264) and then
        # reads nothing; the position it reports back gives that away.
        if (self._capture.set(cv2.CAP_PROP_POS_FRAMES, start)
                and self._capture.get(cv2.CAP_PROP_POS_FRAMES) == start):
            self._position = start
            return
        self._capture.release()
        self._capture = self._open_capture()
        self._position = 0

    def _time(self, index: int) -> float:
        if self._use_msec:
            time_s = round((self._capture.get(cv2.CAP_PROP_POS_MSEC) - self._origin_ms) / 1000, 6)
            # Some backends report 0, a constant or jumps; stop trusting them at the first
            # value that does not increase.
            if math.isfinite(time_s) and time_s >= 0 and time_s > self._last_time:
                self._last_time = time_s
                return time_s
            self._use_msec = False
        return index / self.fps

    def _open_capture(self) -> cv2.VideoCapture:
        if isinstance(self._target, int):
            capture = cv2.VideoCapture(self._target)
        else:
            capture = cv2.VideoCapture(self._target, cv2.CAP_ANY, [
                cv2.CAP_PROP_OPEN_TIMEOUT_MSEC, STREAM_TIMEOUT_MS,
                cv2.CAP_PROP_READ_TIMEOUT_MSEC, STREAM_TIMEOUT_MS,
            ])
        if not capture.isOpened():
            if isinstance(self._target, int):
                reason = "no such camera, or it is in use"
            elif self.is_live:
                reason = "no answer, or not a video stream"
            else:
                reason = "not a video OpenCV can read"
            raise SourceError(f"cannot open {self._describe()}: {reason}")
        return capture

    def _describe(self) -> str:
        return f"camera {self._target}" if isinstance(self._target, int) else repr(self.uri)


def _grey(image: np.ndarray) -> np.ndarray:
    """HxW grey from what a capture returns: BGR mostly, grey or BGRA from some cameras."""
    if image.ndim == 2:
        return image
    code = cv2.COLOR_BGRA2GRAY if image.shape[2] == 4 else cv2.COLOR_BGR2GRAY
    return cv2.cvtColor(image, code)


def _bgr(image: np.ndarray) -> np.ndarray:
    """HxWx3 BGR from what a capture returns."""
    if image.ndim == 2:
        return cv2.cvtColor(image, cv2.COLOR_GRAY2BGR)
    if image.shape[2] == 4:
        return cv2.cvtColor(image, cv2.COLOR_BGRA2BGR)
    return image
