"""PyAV (FFmpeg) backend for video files.

Decoding is frame-threaded; grey frames come straight from the luma plane, or scaled to the
size the caller works at inside FFmpeg (area averaging, as the preprocessing does); frame
times come from the container's timestamps, and seeking goes to the keyframe before the wanted
frame; timestamps that do not increase (every frame's the same, or going back) are set aside,
in one warning line, for the frames' places at the frame rate, and nothing is sought by them.
Frames lost to damaged data come out as `image=None` in their place instead of as errors.
"""

from __future__ import annotations

import bisect
import functools
import heapq
import itertools
import os
import stat
import sys
from collections import deque
from collections.abc import Iterator
from pathlib import Path

import av
import cv2
import numpy as np
from av.video.reformatter import VideoReformatter

from .base import Frame, FrameSource, SourceError, frame_rate, spread, usable_fps

# Pixel formats whose first plane is the full-resolution 8-bit luma (Y) plane.
_LUMA_PLANE_FORMATS = frozenset({
    "gray", "nv12", "nv16", "nv21",
    "yuv410p", "yuv411p", "yuv420p", "yuv422p", "yuv440p", "yuv444p",
    "yuvj411p", "yuvj420p", "yuvj422p", "yuvj440p", "yuvj444p",
})
# Limited-range (16..235) luma to full-range grey, clip(round((y - 16) * 255 / 219)): the same
# numbers swscale gives for to_ndarray(format="gray") (checked for all 256 values), so both
# paths and the OpenCV backend agree, at about twice the speed of to_ndarray(format="gray") on
# 720p H.264. It is done as cv2.addWeighted's saturating multiply-add, which gives the same 256
# values as a lookup table (no product lies near a rounding tie) at half its cost per frame.
LIMITED_RANGE_GAIN, LIMITED_RANGE_OFFSET = 255 / 219, -16 * 255 / 219
_FULL_RANGE = 2  # AVCOL_RANGE_JPEG
# Files with at most this many pixels in all (frames x width x height: 4 minutes of 640x360 at
# 10 fps) are read whole, in order, to sample frames from.
SMALL_FILE_PIXELS = 5e8
# Frames a decoder may output between failing on a packet and reporting it: FFmpeg's automatic
# frame threads (at most 16) plus B-frame reordering.
_MATCH_WINDOW = 24
# The files whose timestamps were said not to increase: once a file in a process, however
# often it is opened (batch opens it to plan, then to scan).
_SAID_NOT_INCREASING: set[str] = set()


class PyAVSource(FrameSource):
    """A video file decoded with PyAV."""

    is_live = False

    def __init__(self, path: str | os.PathLike, *, colour: bool = False,
                 fps: float | None = None, keep_colour: bool = False) -> None:
        self.uri = os.fspath(path)
        self.name = Path(self.uri).stem
        self._colour = colour
        self._keep_colour = keep_colour
        self._closed = False
        # A pipe, socket or device gives its bytes once: it is opened once, and its one pass
        # goes on from the frames read here (opening it again would block, or lose them).
        self.read_once = not stat.S_ISREG(os.stat(self.uri).st_mode)
        self._kept: tuple[av.container.InputContainer, Iterator] | None = None
        container = self._open()
        try:
            stream = container.streams.best("video")
            if stream is None:
                raise SourceError(f"cannot open {self.uri!r}: it has no video stream")
            self._stream_index = stream.index
            self._time_base = stream.time_base
            self.fps, self.fps_assumed = frame_rate(_nominal_fps(stream), fps)
            # Whether the frames' timestamps increase (False once one is not after the one
            # before: the times are then the frames' places at the frame rate, and nothing is
            # sought by them).
            self._increasing = True
            # Decode up to the first good frame: it proves the file is readable and gives the
            # true size and the timestamp that frame 0 (time 0) stands for; and one more, to
            # see that the timestamps increase.
            self._origin_pts = None
            items = _decoded(container, self._video_stream(container))
            read, found = [], False
            for pts, frame in items:
                read.append((pts, frame))
                if found:
                    break
                if self._origin_pts is None:
                    self._origin_pts = pts
                if frame is not None:
                    self.width, self.height = frame.width, frame.height
                    found = True
            if not found:
                raise SourceError(f"cannot read {self.uri!r}: no video frame could be decoded")
            self._check_timestamps([pts for pts, _ in read])
            # The container's count; not one from its duration, of timestamps that are not.
            self.frame_count = (_frame_count(container, stream, self.fps) if self._increasing
                                else stream.frames or None)
            if self.read_once:
                self._kept = container, itertools.chain(read, items)
        finally:
            if self._kept is None:
                container.close()

    def frames(self, start: int = 0, end: int | None = None, *,
               size: tuple[int, int] | None = None) -> Iterator[Frame]:
        self._check_pass(start, end)
        return self._frames(start, end, size)

    def sample(self, count: int, *, size: tuple[int, int] | None = None) -> Iterator[Frame]:
        # ``size``: the pass's; an interlaced picture is scaled to it here, by FFmpeg, as the
        # pass's pictures are (``_sample_size``).
        if self.read_once:
            return
        # A small file is read once, in order: it costs less than it takes to decode, and its
        # keyframes may be too few to seek to (a camera clip can have one); any frame then
        # costs the same, so the sample is of single frames, as many moments as frames. A
        # larger one: each run starts at the keyframe before its place, since seeking anywhere
        # else would decode from that keyframe on, up to a few hundred frames for each run.
        self._check_pass(0, None)
        if not self.frame_count or count < 1:
            return
        if self.frame_count * self.width * self.height <= SMALL_FILE_PIXELS \
                or not self._increasing:          # (nothing is sought by its timestamps)
            wanted = set(spread(self.frame_count, count))
            yield from (frame for frame in self._frames(0, max(wanted) + 1, size,
                                                        sample=True)
                        if frame.index in wanted)
            return
        container = self._open()
        try:
            reformatter = _Reformatters()
            seen = -1
            for start in spread(self.frame_count, max(1, count // self.sample_run)):
                if seen >= 0:
                    keyframe = self._keyframe_before(container, start)
                    if keyframe is not None and keyframe <= seen:
                        continue  # its run would start at a keyframe already read: nothing new
                positioned = self._seek(container, start) if start > 0 else (
                    0, _decoded(container, self._video_stream(container)))
                if positioned is None:
                    continue
                index, items = positioned
                for pts, frame in itertools.islice(items, self.sample_run):
                    if index > seen and frame is not None:
                        seen = index
                        # (the seeding sample is never shown: no colour picture kept)
                        yield self._frame(index, pts, frame, reformatter,
                                          _sample_size(frame, size), keep=False)
                    index += 1
        finally:
            container.close()

    def misnumbered_frame(self) -> tuple[int, int] | None:
        # The container's index (MP4's, MOV's, AVI's) holds every frame's decode time, read
        # without reading the frames, and FFmpeg keeps it in time order. Evenly spaced, they
        # number the frames as their places (B-frames shift decode times from presentation
        # times by a constant). An index of keyframes only (Matroska's cues), or none
        # (MPEG-TS), tells nothing; so does a PyAV older than the index's reader. Read entry
        # by entry: a day of video has millions.
        if self.read_once:
            return None
        with self._open() as container:
            index = getattr(container.streams[self._stream_index], "index_entries", ())
            if not len(index) or len(index) != self.frame_count:
                return None
            origin = index[0].timestamp
            for place, entry in enumerate(index):
                number = self._index(entry.timestamp, origin)
                if number != place:
                    return place, number
        return None

    def close(self) -> None:
        # Each frames() pass opens and closes its own container, so nothing is held here but
        # a read-once source's, until its pass takes it (which then closes it itself: a pass
        # may still be blocked in it on another thread).
        self._closed = True
        if self._kept is not None:
            self._kept[0].close()
            self._kept = None

    def _frames(self, start: int, end: int | None, size: tuple[int, int] | None,
                sample: bool = False) -> Iterator[Frame]:
        if self.read_once:
            if self._kept is None:
                raise SourceError(f"{self.uri!r} is a pipe or device: it can be read only once")
            (container, items), self._kept = self._kept, None
            positioned = 0, items            # from its start: it cannot seek
        else:
            # A container per pass, so that two passes never disturb each other.
            container = self._open()
            positioned = None
        try:
            if start > 0 and positioned is None:
                positioned = self._seek(container, start)
                if positioned is None:
                    container.close()  # a failed seek may have left it anywhere
                    container = self._open()
            index, items = positioned or (0, _decoded(container, self._video_stream(container)))
            # Reformatters for the pass: to_ndarray(format=...) sets up a new swscale context
            # for every frame, which made BGR output 1.4x slower.
            reformatter = _Reformatters()
            previous = None
            for pts, frame in items:
                if end is not None and index >= end:
                    break
                previous = self._check_order(index, pts, previous)
                if index >= start:
                    yield self._frame(index, pts, frame, reformatter,
                                      _sample_size(frame, size) if sample else size)
                index += 1
        finally:
            container.close()

    def _open(self) -> av.container.InputContainer:
        try:
            return av.open(self.uri, metadata_errors="replace")
        except av.error.InvalidDataError:
            raise SourceError(f"cannot open {self.uri!r}: not a video file") from None
        except (av.error.FFmpegError, OSError) as error:
            reason = getattr(error, "strerror", None) or type(error).__name__
            raise SourceError(f"cannot open {self.uri!r}: {reason}") from None

    def _video_stream(self, container: av.container.InputContainer) -> av.VideoStream:
        stream = container.streams[self._stream_index]
        if not stream.codec_context.is_open:  # (the type cannot change once decoding began)
            stream.thread_type = "AUTO"  # frame and slice threads
        return stream

    def _seek(self, container: av.container.InputContainer,
              start: int) -> tuple[int, Iterator[tuple[int | None, av.VideoFrame | None]]] | None:
        """Jump to the keyframe at or before frame `start`.

        Returns the index of the first frame decoded there and the decoded items from it on,
        or None when seeking cannot be trusted here (no timestamps, seek failed, or it landed
        after the wanted frame); the caller then decodes from the start and skips.
        """
        stream = self._video_stream(container)
        if not self._seek_keyframe(container, stream, start):
            return None
        items = _decoded(container, stream)
        first = next(items, None)
        if first is None or first[0] is None:
            return None
        index = self._index(first[0])
        if index > start:
            return None
        return index, itertools.chain([first], items)

    def _keyframe_before(self, container: av.container.InputContainer,
                         start: int) -> int | None:
        """The index of the keyframe that ``_seek`` to ``start`` lands on, read from its packet
        without decoding anything (None: not known)."""
        stream = self._video_stream(container)
        if not self._seek_keyframe(container, stream, start):
            return None
        try:
            packet = next(container.demux(stream), None)
        except av.error.FFmpegError:
            return None
        if packet is None or packet.pts is None:
            return None
        return self._index(packet.pts)

    def _seek_keyframe(self, container: av.container.InputContainer, stream: av.VideoStream,
                       start: int) -> bool:
        """Seek the demuxer to the keyframe at or before frame ``start``; False if it cannot."""
        if self._origin_pts is None or not self._increasing:
            return False
        target = self._origin_pts + round(start / self.fps / self._time_base)
        try:
            container.seek(target, stream=stream, backward=True, any_frame=False)
        except av.error.FFmpegError:
            return False
        return True

    def _index(self, pts: int, origin: int | None = None) -> int:
        # Frame numbers from timestamps (counted from frame 0's, or from ``origin``): exact for
        # a constant frame rate.
        origin = self._origin_pts if origin is None else origin
        return round(float((pts - origin) * self._time_base) * self.fps)

    def _frame(self, index: int, pts: int | None, frame: av.VideoFrame | None,
               reformatter: _Reformatters, size: tuple[int, int] | None,
               keep: bool = True) -> Frame:
        """Frame ``index`` (``frame`` None: lost to damage), its picture at ``size`` if given,
        and its colour picture if the source keeps it and ``keep``."""
        time_s = self._time(pts, index)
        if frame is None:
            return Frame(index, time_s, None)
        # The kept colour picture has a reformatter of its own: one that switched between two
        # outputs would set up its scaler again for every frame.
        kept = (reformatter.colour.reformat(frame, format="bgr24").to_ndarray()
                if self._keep_colour and keep else None)
        # Not kept: made from the decoder's frame if the frame is shown (its thumbnail).
        made = functools.partial(_colour_picture, frame) if kept is None else None
        if size is None or size == (frame.width, frame.height):
            return Frame(index, time_s, self._image(frame, reformatter.working), kept,
                         make_picture=made)
        return Frame(index, time_s, self._scaled_image(frame, reformatter.working, size), kept,
                     scaled=True, make_picture=made)

    def _image(self, frame: av.VideoFrame, reformatter: VideoReformatter) -> np.ndarray:
        if self._colour:
            return reformatter.reformat(frame, format="bgr24").to_ndarray()
        if frame.format.name not in _LUMA_PLANE_FORMATS:
            return reformatter.reformat(frame, format="gray").to_ndarray()
        plane = frame.planes[0]
        luma = np.frombuffer(plane, np.uint8)[: plane.line_size * frame.height]
        luma = luma.reshape(frame.height, plane.line_size)[:, : frame.width]
        # Copy (or map) out of the decoder's buffer, which is reused for later frames.
        return luma.copy() if _full_range(frame) else limited_to_full_range(luma)

    def _scaled_image(self, frame: av.VideoFrame, reformatter: VideoReformatter,
                      size: tuple[int, int]) -> np.ndarray:
        """The picture at ``size``, grey (full range) or BGR, scaled by FFmpeg with area
        averaging: no full-size array is made, which is most of the cost of a large frame.
        One thread: the decoder's threads have the cores, and a small picture's scaling
        costs less than handing it out (6% less CPU on 720p)."""
        source_range = None  # RGB and other formats: FFmpeg knows their range
        if frame.format.name in _LUMA_PLANE_FORMATS:
            source_range = "JPEG" if _full_range(frame) else "MPEG"
        return reformatter.reformat(
            frame, width=size[0], height=size[1], format="bgr24" if self._colour else "gray",
            interpolation="AREA", src_color_range=source_range, dst_color_range="JPEG",
            threads=1).to_ndarray()

    def _time(self, pts: int | None, index: int) -> float:
        if pts is None or self._origin_pts is None or not self._increasing:
            return index / self.fps
        return float((pts - self._origin_pts) * self._time_base)

    def _check_timestamps(self, stamps: list[int | None]) -> None:
        """The first frames' timestamps: none at all (a raw H.264 stream), or one not after
        the one before, is said (the frames are timed by their places)."""
        if len(stamps) > 1 and all(pts is None for pts in stamps):
            self._not_increasing(None)
        previous = None
        for index, pts in enumerate(stamps):
            previous = self._check_order(index, pts, previous)

    def _check_order(self, index: int, pts: int | None, previous: int | None) -> int | None:
        """Frame ``index``'s timestamp against the last one seen before it (``previous``);
        returns the one the next frame's is compared with."""
        if pts is None:
            return previous
        if previous is not None and pts <= previous:
            self._not_increasing(index)
        return pts

    def _not_increasing(self, index: int | None) -> None:
        """Frame ``index``'s timestamp is not after the one before (None: the frames have
        none): from now on every time is the frame's place at the frame rate, nothing is
        sought by the timestamps, and one line says so (a file whose frames all had the same
        put every event at 0 s)."""
        if not self._increasing:
            return
        self._increasing = False
        if self.uri in _SAID_NOT_INCREASING:
            return
        _SAID_NOT_INCREASING.add(self.uri)
        why = ("its frames have no timestamps" if index is None else
               f"its timestamps do not increase (frame {index}'s is not after the one before)")
        print(f"videvent: warning: '{self.uri}': {why}; its frames are timed by their place "
              f"at {self.fps:g} fps instead", file=sys.stderr, flush=True)


def _sample_size(frame: av.VideoFrame | None, size: tuple[int, int] | None
                 ) -> tuple[int, int] | None:
    """The size a seeding sample's picture is decoded at: the pass's where the pass's scaling
    by FFmpeg and the preprocessing's of the whole picture differ, else the source's (the
    preprocessing scales it, as it did when the detector's verdicts were judged).

    FFmpeg scales an interlaced picture field by field: 1.6 grey levels a pixel from the
    whole-picture scaling, and a start reference built from those pictures found every frame
    of the pass unusual. A progressive picture comes within 0.14 either way; scaled by FFmpeg
    there too, the demo clip's reference learned the visitor, in view 75% of its time, as the
    scene and flagged the empty room it starts with (a weakness of the reference itself)."""
    return size if frame is not None and frame.interlaced_frame else None


def _colour_picture(frame: av.VideoFrame) -> np.ndarray:
    """The frame's BGR picture at its own size, made when it is shown."""
    return VideoReformatter().reformat(frame, format="bgr24").to_ndarray()


class _Reformatters:
    """A pass's scalers: one for the working picture, one for the kept colour picture."""

    def __init__(self) -> None:
        self.working, self.colour = VideoReformatter(), VideoReformatter()


def _full_range(frame: av.VideoFrame) -> bool:
    """Whether the frame's luma uses all of 0..255 (else 16..235)."""
    return (frame.color_range == _FULL_RANGE or frame.format.name == "gray"
            or frame.format.name.startswith("yuvj"))


def limited_to_full_range(luma: np.ndarray) -> np.ndarray:
    """Limited-range (16..235) 8-bit luma as full-range grey, in a new array."""
    return cv2.addWeighted(luma, LIMITED_RANGE_GAIN, luma, 0.0, LIMITED_RANGE_OFFSET)


def _decoded(container: av.container.InputContainer,
             stream: av.VideoStream) -> Iterator[tuple[int | None, av.VideoFrame | None]]:
    """Yield (pts, frame) in presentation order; frame None stands for a frame lost to damage.

    Reading stops at the end of the file or at the first error from the demuxer (a truncated or
    damaged container), after flushing the frames the decoder still holds.
    """
    losses = _LossTracker()
    flushed = False
    packets = container.demux(stream)
    while True:
        try:
            packet = next(packets)
        except StopIteration:
            break
        except av.error.FFmpegError:
            break  # the demuxer cannot go on; retrying would fail the same way
        flushed = packet.size == 0  # PyAV ends with an empty packet, which flushes the decoder
        if packet.pts is not None and not flushed:
            losses.sent(packet.pts)
        try:
            decoded = stream.decode(packet)
        except av.error.FFmpegError:
            losses.error()
            continue
        for frame in decoded:
            yield from losses.decoded(frame)
    if not flushed:
        try:
            for frame in stream.decode(None):
                yield from losses.decoded(frame)
        except av.error.FFmpegError:
            losses.error()
    yield from losses.finish()


class _LossTracker:
    """Puts (pts, None) items where the decoder lost frames to corrupt data.

    Frames are lost when the decoder raised an error and its output passed over the timestamps
    of packets sent to it: all the timestamps one output frame passes over at once are one run
    (a broken reference frame and the frames that needed it). With frame threading the error
    comes a few packets late, so output after an unexplained gap is held back (at most
    _MATCH_WINDOW frames) until an error explains it. Gaps that no error explains are packets
    without a picture of their own (a second field, a hidden frame) and are dropped.
    """

    def __init__(self) -> None:
        self._sent: list[int] = []  # heap: pts of packets whose frame has not come out yet
        self._gaps: deque[tuple[int, int]] = deque()  # (pts passed over, frames out by then)
        self._errors: deque[int] = deque()  # frames out at each unmatched decoder error
        self._held: list[tuple[int, av.VideoFrame | None]] = []  # in pts order
        self._lost: set[int] = set()  # pts already given a None item
        self._count = 0  # frames out of the decoder so far

    def sent(self, pts: int) -> None:
        heapq.heappush(self._sent, pts)

    def error(self) -> None:
        self._errors.append(self._count)

    def decoded(self, frame: av.VideoFrame) -> list[tuple[int | None, av.VideoFrame | None]]:
        """The items that can go out now that `frame` came out of the decoder."""
        self._count += 1
        pts = frame.pts
        if pts is None:  # nothing to place it by: let everything out in arrival order
            ready = [*self._held, (None, frame)]
            self._held.clear()
            self._gaps.clear()
            return ready
        while self._sent and self._sent[0] < pts:
            self._gaps.append((heapq.heappop(self._sent), self._count))
        if self._sent and self._sent[0] == pts:
            heapq.heappop(self._sent)
        elif pts in self._lost:
            # A frame that comes out after its place was given up (decoders recovering from
            # damage do that): it replaces its None item if that is still held, else it is late.
            self._lost.discard(pts)
            place = bisect.bisect_left(self._held, pts, key=_pts)
            if place == len(self._held) or self._held[place][0] != pts:
                return self._settle(final=False)
            del self._held[place]
        else:
            self._gaps = deque(gap for gap in self._gaps if gap[0] != pts)
        bisect.insort(self._held, (pts, frame), key=_pts)
        return self._settle(final=False)

    def finish(self) -> list[tuple[int | None, av.VideoFrame | None]]:
        """Everything still held, once the decoder is drained."""
        # Packets that never came out by now are lost: the damaged tail of a file, or frames
        # a frame-threaded decoder dropped when it hit the damage while flushing.
        self._count += 1
        tail = sorted(self._sent)
        self._gaps.extend((pts, self._count) for pts in tail)
        if tail:
            self._errors.append(self._count)
        return self._settle(final=True)

    def _settle(self, final: bool) -> list[tuple[int | None, av.VideoFrame | None]]:
        while self._gaps and self._errors:
            self._errors.popleft()
            run = self._gaps[0][1]
            while self._gaps and self._gaps[0][1] == run:
                pts = self._gaps.popleft()[0]
                self._lost.add(pts)
                bisect.insort(self._held, (pts, None), key=_pts)
        while self._errors and self._count - self._errors[0] > _MATCH_WINDOW:
            self._errors.popleft()  # the decoder concealed that damage in a frame it did output
        while self._gaps and (final or self._count - self._gaps[0][1] > _MATCH_WINDOW):
            self._gaps.popleft()
        ready_count = (bisect.bisect_left(self._held, self._gaps[0][0], key=_pts)
                       if self._gaps else len(self._held))
        ready = self._held[:ready_count]
        del self._held[:ready_count]
        return ready


def _pts(item: tuple[int, av.VideoFrame | None]) -> int:
    return item[0]


def _nominal_fps(stream: av.VideoStream) -> float | None:
    for rate in (stream.average_rate, stream.guessed_rate, stream.base_rate):
        if rate is not None and (fps := usable_fps(float(rate))) is not None:
            return fps
    return None


def _frame_count(container: av.container.InputContainer, stream: av.VideoStream,
                 fps: float) -> int | None:
    """The container's frame count, else an estimate from its duration (as OpenCV does)."""
    if stream.frames > 0:
        return stream.frames
    if stream.duration is not None and stream.duration > 0:
        return round(float(stream.duration * stream.time_base) * fps)
    if container.duration is not None and container.duration > 0:
        return round(container.duration / av.time_base * fps)
    return None

