"""Video sinks: one clip per event, and the annotated video with its ``regions.csv``.

Both are fed decided frames by a session (or by ``videvent export``, from a run's files), so
they are written in the same pass as the scores. Files appear only when complete.

A clip is made in one of ``CLIP_MODES``, as DVR-Scan's ``-m``: ``encode`` encodes the frames
the pass decoded (with boxes on request) and adds the source file's sound for the same time;
``copy`` copies the source file's packets, picture and sound, from the keyframe at or before
the clip's start (no decoding, no loss, and fast), when the event ends.
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

import av

from .annotate import Annotator, Overlay
from ..atomic import partial_path, write_atomically, write_text_atomically
from ..choices import CLIP_MODES
from .sink import Sink
from .video import ANNOTATED_PRESET, VideoWriter

# Sound codecs an MP4 holds as they are; any other is encoded as AAC.
MP4_AUDIO_CODECS = ("aac", "mp3", "ac3", "eac3", "opus", "alac", "flac")

REGIONS_NAME = "regions.csv"
CLIPS_NAME = "clips.json"


def write_clip_index(folder: Path, names: dict[int, str]) -> None:
    """``clips.json``: which clip is which event's, for the report's links (the clip names
    come from the user's template); only the clips that exist."""
    write_text_atomically(folder / CLIPS_NAME, json.dumps(
        {str(n): name for n, name in names.items() if (folder / name).is_file()}))


def bgr_picture(frame) -> np.ndarray | None:
    """The frame's picture in BGR (its colour one if kept), or None if it has none to show."""
    picture = frame.picture_to_show()
    if picture is None or picture.ndim == 3:
        return picture
    return cv2.cvtColor(picture, cv2.COLOR_GRAY2BGR)


def picture_of(frame, width: int, height: int) -> np.ndarray:
    """The frame's BGR picture; black for an undecodable frame (the timeline is kept)."""
    picture = bgr_picture(frame)
    return np.zeros((height, width, 3), np.uint8) if picture is None else picture


def _has_audio(path: str | os.PathLike) -> bool:
    with av.open(os.fspath(path)) as container:
        return bool(container.streams.audio)


def copy_clip(source: str | os.PathLike, path: Path, start_s: float, end_s: float) -> Path:
    """The source file's picture and sound from the keyframe at or before ``start_s`` to
    ``end_s`` (seconds from its first picture, as ``Frame.time_s``), copied packet by packet
    into the MP4 ``path``; written whole (temporary name, renamed)."""
    write_atomically(path, lambda temporary: _remux(source, temporary, start_s, end_s))
    return path


def add_audio(path: Path, source: str | os.PathLike, start_s: float, end_s: float) -> None:
    """Put the source file's sound from ``start_s`` to ``end_s`` into the clip ``path`` (its
    picture starts at ``start_s``); rewritten whole. Nothing to do for a silent source."""
    if not _has_audio(source):
        return
    write_atomically(path, lambda temporary: _remux(source, temporary, start_s, end_s,
                                                    picture_from=path))


def _remux(source, target: Path, start_s: float, end_s: float,
           picture_from: Path | None = None) -> None:
    """Write ``target`` (MP4): the picture of ``source`` (or of ``picture_from``, whole)
    and the sound of ``source``, from ``start_s`` to ``end_s``. With the source's picture,
    the clip starts at the keyframe at or before ``start_s`` and the sound with it."""
    with av.open(os.fspath(source)) as inputs, av.open(os.fspath(target), "w",
                                                       format="mp4") as output:
        video = inputs.streams.video[0]
        origin = video.start_time or 0                  # the first picture's time, in its units
        sounds = [(stream, _sound_out(output, stream)) for stream in inputs.streams.audio[:1]]
        if picture_from is None:
            picture_out = output.add_stream_from_template(video)
            # Back to the keyframe at or before the start: a copy can only start at one.
            inputs.seek(origin + max(0, int(start_s / video.time_base)), stream=video,
                        backward=True)
            first_s, lead_s = None, 0.0
            for packet in inputs.demux(video):
                if packet.dts is None:
                    continue                              # the end of the stream
                at_s = float((packet.pts - origin) * video.time_base)
                if first_s is None:
                    if not packet.is_keyframe or at_s > start_s:
                        continue
                    # From its decoding time: its picture shows ``lead_s`` later (B-frames).
                    first_s, shift = at_s, packet.dts
                    lead_s = float((packet.pts - packet.dts) * video.time_base)
                if float((packet.dts - origin) * video.time_base) > end_s:
                    break
                packet.pts -= shift
                packet.dts -= shift
                packet.stream = picture_out
                output.mux(packet)
            if first_s is None:
                raise ValueError(f"no keyframe at or before {start_s:.3f} s in '{source}'")
            start_s = first_s
        else:
            lead_s = 0.0
            with av.open(os.fspath(picture_from)) as pictures:
                picture_in = pictures.streams.video[0]
                picture_out = output.add_stream_from_template(picture_in)
                for packet in pictures.demux(picture_in):
                    if packet.dts is not None:
                        packet.stream = picture_out
                        output.mux(packet)
        for stream, (sound_out, encoder) in sounds:
            _copy_sound(inputs, output, stream, sound_out, encoder, origin * video.time_base,
                        start_s, end_s, lead_s)


def _sound_out(output, stream):
    """The clip's sound stream for the source's ``stream``: the same codec when an MP4 holds
    it (copied), else AAC (``encoder``: the resampler that feeds it)."""
    if stream.codec_context.name in MP4_AUDIO_CODECS:
        return output.add_stream_from_template(stream), None
    sound_out = output.add_stream("aac", rate=stream.codec_context.sample_rate)
    sound_out.layout = stream.codec_context.layout
    # In frames of the encoder's size: AAC takes 1024 samples at a time.
    return sound_out, av.AudioResampler(format="fltp", layout=stream.codec_context.layout,
                                        rate=stream.codec_context.sample_rate, frame_size=1024)


def _copy_sound(inputs, output, stream, sound_out, resampler, origin, start_s: float,
                end_s: float, lead_s: float) -> None:
    """The sound of ``stream`` from ``start_s`` to ``end_s`` (``origin``: the first picture's
    time in seconds, where 0 is), into ``sound_out`` at ``lead_s`` and on, where the picture
    of ``start_s`` shows: copied, or encoded by way of ``resampler``."""
    inputs.seek(int((float(origin) + start_s) / stream.time_base), stream=stream, backward=True)
    shift = int((float(origin) + start_s - lead_s) / stream.time_base)
    for packet in inputs.demux(stream):
        if packet.dts is None or packet.pts is None:
            continue
        at_s = float(packet.pts * stream.time_base - origin)
        if at_s < start_s:
            continue
        if at_s > end_s:
            break
        if resampler is None:
            packet.pts -= shift
            packet.dts -= shift
            packet.stream = sound_out
            output.mux(packet)
            continue
        for frame in packet.decode():
            for resampled in resampler.resample(frame):
                resampled.pts = None
                output.mux(sound_out.encode(resampled))
    if resampler is not None:
        for resampled in resampler.resample(None):     # what the resampler still holds
            resampled.pts = None
            output.mux(sound_out.encode(resampled))
        output.mux(sound_out.encode())


class ClipSink(Sink):
    """A clip per event, from its padded start (kept in a ring of recent pictures) to its
    padded end; ``written`` lists the clips, ``path_of(n)`` the open one's path.

    ``source_file``: the video file the frames come from, whose sound the clips get (none
    for a stream or images). ``mode`` "copy": each clip is copied from it when its event ends
    instead (see ``copy_clip``). ``boxes``: boxes around the changed regions of the event's
    frames, found from ``box_level`` (an encoded clip only)."""

    def __init__(self, folder: Path, name_of: Callable[[int], str], fps: float,
                 pre_roll: int, *, source_file: str | os.PathLike | None = None,
                 mode: str = CLIP_MODES[0], boxes: bool = False, box_level: float = 0.0):
        if mode == "copy" and source_file is None:
            raise ValueError("clips are copied from a video file")
        self.folder, self.name_of, self.fps = Path(folder), name_of, fps
        self.source_file, self.mode = source_file, mode
        self.boxes = Overlay("off", boxes=True) if boxes else None
        self.box_level = box_level
        self._recent: deque[tuple[int, np.ndarray]] = deque(maxlen=pre_roll + 2)
        self._times: tuple[float, float] | None = None   # the open clip's start, at the end
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
        if self.mode == "copy":
            return                      # copied from the file when the event ends
        # Opened at the event's first frame, which comes next: its picture sets the size.
        self._starting = event.number, event.start_frame
        self._times = (event.start_time_s, event.start_time_s)

    def on_frame(self, frame, score, event_number) -> None:
        if self.mode == "copy":
            return
        picture = bgr_picture(frame)
        if picture is None:
            return
        if (self.boxes is not None and event_number is not None
                and score.residual_image is not None):
            picture, _ = self.boxes.draw(picture, score.residual_image, score.block_scores,
                                         self.box_level)
        if self._times is not None:
            self._times = (self._times[0], frame.time_s)
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
        if self.mode == "copy":
            path = copy_clip(self.source_file, self.folder / self.name_of(event.number),
                             event.start_time_s, event.end_time_s)
            self.written.append(path)
            files["clip"] = str(path)
        elif self._open is not None and self._open[0] == event.number:
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
        times, self._times = self._times, None
        if clip is None:
            return None
        path = clip[1].close()
        if self.source_file is not None and times is not None:
            # The sound of the clip's time, to the end of its last picture.
            add_audio(path, self.source_file, times[0], times[1] + 1 / self.fps)
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
        self.video = VideoWriter(path, annotator.width, annotator.height, fps,
                                 preset=ANNOTATED_PRESET)
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
