"""H.264 MP4 writing through PyAV (yuv420p, so it plays in every browser), written safely.

The file is encoded under a temporary name beside its destination and renamed into place
only when it is complete, so an interrupted export never leaves a broken video behind.
"""

from __future__ import annotations

import os
from fractions import Fraction
from pathlib import Path

import av
import cv2
import numpy as np

from ..atomic import partial_path

# Playable while it downloads.
X264_OPTIONS = {"movflags": "+faststart"}
# x264's presets: clips, short and shared, small for their quality; the annotated video of a
# whole run, the fastest (at 720p half of veryfast's CPU for 2-4 times the size: a run with it
# took 3.6 times a plain run's time, against 4.4 at veryfast).
CLIP_PRESET, ANNOTATED_PRESET = "veryfast", "ultrafast"


def frame_rate(fps: float) -> Fraction:
    """The container rate for ``fps``: exact for 30000/1001-style rates and whole numbers."""
    return Fraction(fps).limit_denominator(1001)


class VideoWriter:
    """Append BGR frames of one size to an H.264 MP4; ``close()`` puts the file in place.

    ``crf``: x264's quality; the default is for people to look at (visually clean at a fraction
    of the source's bit rate), lower keeps closer to the source (footage re-encoded for a
    benchmark: 10). ``preset``: x264's speed against size at that quality."""

    def __init__(self, path: str | os.PathLike, width: int, height: int, fps: float, *,
                 crf: int = 23, preset: str = CLIP_PRESET):
        # yuv420p stores colour per 2x2 block, so H.264 players need even sizes: an odd
        # width or height gets one repeated column or row.
        self.size = (height, width)   # of the pictures it takes
        self._pad = (height % 2, width % 2)
        width, height = width + self._pad[1], height + self._pad[0]
        self.path = Path(path)
        self._temporary = partial_path(self.path)
        self._container = av.open(str(self._temporary), mode="w", format="mp4")
        self._stream = self._container.add_stream("libx264", rate=frame_rate(fps),
                                                  options={**X264_OPTIONS, "crf": str(crf),
                                                           "preset": preset})
        self._stream.width, self._stream.height = width, height
        self._stream.pix_fmt = "yuv420p"
        # x264's frame threads, not the slice threads PyAV asks for: a file wants throughput,
        # not a frame's latency (720p veryfast: 1.7x the speed, the same size and CPU).
        self._stream.codec_context.thread_type = "FRAME"
        self.frames_written = 0

    def write(self, image: np.ndarray) -> None:
        if any(self._pad):
            image = np.pad(image, ((0, self._pad[0]), (0, self._pad[1]), (0, 0)), mode="edge")
        # The encoder's own picture format made by OpenCV (BT.601, limited range, as FFmpeg's
        # scaler makes it, within a level): FFmpeg's conversion inside encode() ran on this
        # thread at a few milliseconds a 720p frame, a third of the export's time.
        planes = cv2.cvtColor(np.ascontiguousarray(image), cv2.COLOR_BGR2YUV_I420)
        frame = av.VideoFrame.from_ndarray(planes, format="yuv420p")
        frame.pts = self.frames_written
        frame.time_base = 1 / self._stream.codec_context.framerate
        self._container.mux(self._stream.encode(frame))
        self.frames_written += 1

    def close(self) -> Path:
        try:
            self._container.mux(self._stream.encode())
            self._container.close()
            os.replace(self._temporary, self.path)
        except (OSError, av.error.FFmpegError) as error:
            # PyAV reports a full disk as EOFError, which click would take for Ctrl-D.
            self.discard()
            raise OSError(getattr(error, "errno", None) or 0,
                          getattr(error, "strerror", None) or str(error), str(self.path)) from None
        return self.path

    def discard(self) -> None:
        try:
            self._container.close()
        except (OSError, av.error.FFmpegError):
            pass  # the file is being thrown away: how its ending failed does not matter
        finally:
            self._temporary.unlink(missing_ok=True)
