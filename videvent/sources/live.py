"""A source watched live: a camera, a stream or a file played as it comes, as one source.

``LiveSource`` wraps the source first opened and gives the engine what ``run`` gets from a
file, frames in order, so that ``watch`` and ``run`` go through the same loop. What is
particular to watching lives here: a stream that drops is reopened with exponential backoff
(the model is kept), and the news of it ("lost", "back") comes between the frames as
``SourceNews``; a live source restarts its clock on reconnection, so its frames are numbered
and timed by the session instead; a file can be played at its own pace (``realtime``); and a
live picture goes stale (``paced``), so the reader may drop the oldest frames rather than
fall behind.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace

from ..timecode import format_timecode
from .base import Frame, FrameSource, SourceError

# The waits between attempts to (re)open a camera: half a second, doubling, then every five
# seconds for as long as it is tried (Frigate and Motion try again every few seconds), so a
# camera that answers again is watched within five seconds.
FIRST_BACKOFF_S, MAX_BACKOFF_S = 0.5, 5.0
# Failed attempts in a row before a camera is given up (``--max-reconnects``): about a minute
# of them, as long as a camera takes to restart.
MAX_RECONNECTS = 15


class Backoff:
    """The waits between attempts to (re)open a source: FIRST_BACKOFF_S, doubling each time,
    at most MAX_BACKOFF_S."""

    def __init__(self):
        self.reset()

    def reset(self) -> None:
        self.delay_s = FIRST_BACKOFF_S

    def wait(self, stop: threading.Event) -> None:
        """Wait the current delay (less, if ``stop`` is set meanwhile), then double it."""
        stop.wait(self.delay_s)
        self.delay_s = min(self.delay_s * 2, MAX_BACKOFF_S)


@dataclass(frozen=True)
class SourceNews:
    """The source was ``lost`` or is ``back``, before the session's frame ``index``, at
    ``time_s`` seconds since the capture started."""

    kind: str
    index: int
    time_s: float

    def detail(self) -> dict:
        return {"frame": self.index, "time_s": round(self.time_s, 3),
                "timecode": format_timecode(self.time_s)}


class LiveSource(FrameSource):
    """``source`` watched until it ends, the range or ``max_frames`` is reached, or ``stop``
    is set; ``reopen()`` opens it again after it drops (SourceError while it cannot), until
    ``max_reconnects`` attempts in a row have failed (None: for ever; ``gave_up`` says it
    stopped trying; ``reconnects`` counts every attempt of the session).

    Its name, address, rate and size are the first source's. ``frames()`` yields frames and,
    between them, ``SourceNews``; one pass only.
    """

    def __init__(self, source: FrameSource, reopen: Callable[[], FrameSource], *,
                 realtime: bool = False, max_reconnects: int | None = MAX_RECONNECTS,
                 max_frames: int | None = None, stop: threading.Event | None = None):
        self._source: FrameSource | None = source
        self.reopen, self.realtime = reopen, realtime
        self.max_reconnects, self.max_frames = max_reconnects, max_frames
        self.stop = stop if stop is not None else threading.Event()
        self.reconnects = 0
        self.gave_up = False
        for name in ("name", "uri", "fps", "frame_count", "width", "height", "is_live",
                     "fps_assumed"):
            setattr(self, name, getattr(source, name))
        # Only a live picture (or one played at its pace) goes stale: a file read flat out
        # waits for the detector instead of losing frames.
        self.paced = source.is_live or realtime

    def sample(self, count: int, *, size: tuple[int, int] | None = None) -> Iterator[Frame]:
        """The first source's sample (a file watched is seeded as ``run`` seeds it)."""
        return self._source.sample(count, size=size)

    def frames(self, start: int = 0, end: int | None = None, *,
               size: tuple[int, int] | None = None) -> Iterator[Frame | SourceNews]:
        source, index, started = self._source, start, time.monotonic()
        backoff = Backoff()
        # The range (-st/-et/-dt) and --max-frames end the capture in frames of the session:
        # the end of a range is not a source lost.
        if self.max_frames is not None:
            end = min(end, start + self.max_frames) if end is not None \
                else start + self.max_frames
        try:
            while not self.stop.is_set():
                first_time = first_wall = None
                try:
                    for frame in source.frames(start, end, size=size) if index == start \
                            else source.frames(size=size):
                        now = time.monotonic()
                        if self.realtime and not source.is_live:
                            if first_time is None:
                                first_time, first_wall = frame.time_s, now
                            delay = first_wall + (frame.time_s - first_time) - now
                            if delay > 0 and self.stop.wait(delay):
                                break
                            now = time.monotonic()
                        # Live sources restart their clocks on reconnection: number and time
                        # frames by the session instead.
                        if source.is_live:
                            frame = replace(frame, index=index, time_s=now - started)
                        yield frame
                        index = frame.index + 1
                        if end is not None and index >= end:
                            break
                except (SourceError, OSError, ValueError):
                    pass  # treated as the source ending, below
                source.close()
                if self.stop.is_set() or not source.is_live or (end is not None
                                                                and index >= end):
                    return
                yield SourceNews("lost", index, time.monotonic() - started)
                source = self._source = None
                failed = 0      # in a row: a camera that drops now and then is never given up
                while source is None and not self.stop.is_set():
                    if self.max_reconnects is not None and failed >= self.max_reconnects:
                        self.gave_up = True
                        return
                    backoff.wait(self.stop)
                    self.reconnects += 1
                    try:
                        source = self._source = self.reopen()
                    except SourceError:
                        failed += 1
                        continue
                    backoff.reset()
                    yield SourceNews("back", index, time.monotonic() - started)
        finally:
            if source is not None:
                source.close()

    def close(self) -> None:
        if self._source is not None:
            self._source.close()
