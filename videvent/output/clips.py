"""Video sinks: one clip per event, and the annotated video with its ``regions.csv``.

Both are fed decided frames by a session (or by ``videvent export``, from a run's files), so
they are written in the same pass as the scores. Files appear only when complete.

A clip is made in one of ``CLIP_MODES``, as DVR-Scan's ``-m``: ``encode`` encodes the frames
the pass decoded (with boxes on request) and adds the source file's sound for the same time;
``copy`` copies the source file's packets, picture and sound, from the keyframe at or before
the clip's start (no decoding, no loss, and fast), when the event ends: into an MP4 when it
holds the codecs, else a Matroska or AVI file of the template's name with ``.mkv`` or
``.avi``. A clip that cannot be copied is encoded from the file instead, and one that cannot
be made at all is left out, each with one line on stderr: a clip never stops a run.
"""

from __future__ import annotations

import csv
import errno
import json
import os
import sys
from collections import deque
from contextlib import contextmanager
from itertools import chain
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
# FFmpeg's usual layout of each count of channels (AAC refuses a layout of a count alone).
_LAYOUTS = {1: "mono", 2: "stereo", 3: "2.1", 4: "4.0", 5: "5.0", 6: "5.1", 7: "6.1",
            8: "7.1"}


def write_clip_index(folder: Path, names: dict[int, str],
                     written: list[Path] | None = None) -> None:
    """``clips.json``: which clip is which event's, for the report's links (the clip names
    come from the user's template; a clip copied into Matroska or AVI has that ending instead
    of ``.mp4``); only the clips that exist. ``written``: the clips this pass wrote, which
    name each event's clip over one another run left under another ending (nothing of an
    earlier run is removed)."""
    made = {path.name for path in written or ()}
    found = {}
    for n, name in names.items():
        candidates = [name, *(clip_file_name(name, suffix) for _, suffix in COPY_CONTAINERS[1:])]
        present = [c for c in candidates if (folder / c).is_file()]
        chosen = next((c for c in present if c in made), present[0] if present else None)
        if chosen is not None:
            found[str(n)] = chosen
    write_text_atomically(folder / CLIPS_NAME, json.dumps(found))


def _warn(line: str) -> None:
    print(f"videvent: warning: {line}", file=sys.stderr, flush=True)


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


# The containers a clip is copied into, in order of preference, with their file names' ends:
# MP4 when it holds the codecs, else Matroska (nearly every codec), else AVI (the Video for
# Windows codecs Matroska's muxer here refuses: FLV's Sorenson H.263, WMV).
COPY_CONTAINERS = (("mp4", ".mp4"), ("matroska", ".mkv"), ("avi", ".avi"))
# Video codecs an MP4 holds as they are (a copied clip of any other is a Matroska file).
MP4_VIDEO_CODECS = ("h264", "hevc", "av1", "vp9", "mpeg4", "mpeg2video", "mpeg1video")
# How far before a time a copy seeks, in seconds, each time the one before landed after it
# (Matroska, MPEG-TS and MPEG-PS land late); then it reads from the file's beginning.
SEEK_BACK_S = (1.0, 8.0, 60.0)
# Errors of the disk, not of the media: a run still stops for them (its results are whole).
_DISK_ERRORS = (errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EIO)


class ClipError(Exception):
    """Why a clip cannot be copied (or made at all), in a few words."""


def clip_file_name(name: str, suffix: str) -> str:
    """The name a clip of template name ``name`` (``.mp4``) takes when it is copied into
    another container: the same with that container's ``suffix`` (``.mkv``, ``.avi``)."""
    return (name[:-len(".mp4")] if name.endswith(".mp4") else name) + suffix


def is_disk_error(error: BaseException) -> bool:
    return isinstance(error, OSError) and not isinstance(error, av.error.FFmpegError) \
        and error.errno in _DISK_ERRORS


def _why(error: BaseException) -> str:
    text = " ".join(str(error).split()) or type(error).__name__
    return text if len(text) <= 160 else text[:157] + "..."


def _origin(stream) -> int:
    return stream.start_time or 0


@contextmanager
def _positions(source, at_s: float, kind: str = "video"):
    """Places to read ``source`` from, each one at or before ``at_s`` (seconds from the first
    picture) in its first ``kind`` stream: an iterator of ``(inputs, video, audio, packets)``
    (``packets``: of the first picture and sound streams, in the file's order), seeking
    further back each time, the last one from the file's beginning. A seek that lands after
    ``at_s`` (as Matroska's, MPEG-TS's and MPEG-PS's can) is not given."""
    def attempts():
        for back in (*SEEK_BACK_S, None):
            with av.open(os.fspath(source)) as inputs:
                video = inputs.streams.video[0] if inputs.streams.video else None
                audio = inputs.streams.audio[0] if inputs.streams.audio else None
                reference = video if kind == "video" else audio
                origin_s = float(_origin(video) * video.time_base)
                target = None if back is None else at_s - back
                if target is not None and target > 0:
                    try:
                        inputs.seek(int((origin_s + target) / reference.time_base),
                                    stream=reference, backward=True)
                    except av.error.FFmpegError:
                        continue
                packets = inputs.demux([s for s in (video, audio) if s is not None])
                read = []
                for packet in packets:
                    read.append(packet)
                    if packet.stream is reference and packet.dts is not None:
                        break
                if target is not None and target > 0:
                    first = read[-1] if read else None
                    if first is None or first.stream is not reference or \
                            float(first.dts * reference.time_base) - origin_s > at_s + 1e-6:
                        continue                  # landed late: further back
                yield inputs, video, audio, chain(read, packets)
                if target is None or target <= 0:
                    return                        # from the beginning: nothing further back
    found = attempts()
    try:
        yield found
    finally:
        found.close()


def _keyframe_at_or_before(source, start_s: float) -> tuple[int, int]:
    """(pts, dts) of the source's last picture keyframe shown at or before ``start_s``,
    which decodes on its own (ClipError: none does)."""
    with _positions(source, start_s) as positions:
        for inputs, video, _, packets in positions:
            origin, base = _origin(video), video.time_base
            found, following = None, []
            for packet in packets:
                if packet.stream is not video or packet.dts is None:
                    continue
                if float((packet.dts - origin) * base) > start_s + 1e-6:
                    break           # decoded after the start: so is every keyframe after it
                if packet.is_keyframe and packet.pts is not None \
                        and float((packet.pts - origin) * base) <= start_s + 1e-6:
                    found, following = (packet.pts, packet.dts), [packet]
                elif found is not None:
                    following.append(packet)
            if found is not None:
                if not _decodes_alone(video, found[0], following):
                    raise ClipError(f"its keyframe at "
                                    f"{float((found[0] - origin) * base):.3f} s does not "
                                    f"decode on its own (an intra-refresh stream?)")
                return found
    raise ClipError(f"no keyframe at or before {start_s:.3f} s")


def _decodes_alone(video, key_pts: int, packets) -> bool:
    """Whether the keyframe ``packets[0]`` is the first picture a decoder given ``packets``
    from it shows (a keyframe of an intra-refresh stream, which needs the pictures after it
    to be whole, is not shown)."""
    decoder = video.codec_context
    try:
        for packet in [*packets, None]:
            for frame in decoder.decode(packet):
                return bool(frame.key_frame) and frame.pts in (None, key_pts)
    except av.error.FFmpegError:
        return False
    return False


def _copy_into(source, target: Path, container_format: str, with_sound: bool,
               key: tuple[int, int], end_s: float) -> None:
    """Write ``target`` (``container_format``): the source's picture packets from the
    keyframe ``key`` (its pts, dts) to ``end_s``, and (``with_sound``) its sound for the same
    time, copied. Pictures after the keyframe in the file that are shown before it (an open
    GOP's leading pictures, which need the pictures before it) are left out."""
    key_pts, key_dts = key
    with av.open(os.fspath(source)) as probe:
        video = probe.streams.video[0]
        key_s = float((key_dts - _origin(video)) * video.time_base)
    with _positions(source, key_s) as positions, \
            av.open(os.fspath(target), "w", format=container_format) as output:
        picture_out = sound_out = None
        for inputs, video, audio, packets in positions:
            origin, base = _origin(video), video.time_base
            if picture_out is None:
                # The template's own codec: a decoder-only one (Theora) is copied too.
                picture_out = output.add_stream_from_template(video, opaque=True)
                if with_sound and audio is not None:
                    sound_out = output.add_stream_from_template(audio)
            start_s = float((key_pts - origin) * base)
            lead_s = float((key_pts - key_dts) * base)
            origin_s = float(origin * base)
            if sound_out is not None:
                shift = int(round((origin_s + start_s - lead_s) / audio.time_base))
            started, picture_done, sound_done = False, False, sound_out is None
            waiting = []                     # sound before the keyframe in the file
            for packet in packets:
                if packet.dts is None or packet.pts is None:
                    continue
                if packet.stream is video and not picture_done:
                    if not started:
                        if packet.pts != key_pts or packet.dts != key_dts \
                                or not packet.is_keyframe:
                            if float((packet.dts - origin) * base) > key_s + 1e-6:
                                break                       # passed it: not found here
                            continue
                        started = True
                    elif float((packet.dts - origin) * base) > end_s:
                        picture_done = True
                        continue
                    if packet.pts < key_pts:
                        continue                            # a leading picture
                    packet.pts -= key_dts
                    packet.dts -= key_dts
                    packet.stream = picture_out
                    output.mux(packet)
                    for sound in waiting:
                        output.mux(sound)
                    waiting = []
                elif packet.stream is audio and sound_out is not None and not sound_done:
                    at_s = float(packet.pts * audio.time_base) - origin_s
                    if at_s < start_s - 1e-6:
                        continue
                    if at_s > end_s:
                        sound_done = True
                        continue
                    packet.pts -= shift
                    packet.dts -= shift
                    packet.stream = sound_out
                    if started:
                        output.mux(packet)
                    else:
                        waiting.append(packet)
                if picture_done and sound_done:
                    break
            if started:
                return
        raise ClipError("its keyframe was not found again")


def copy_clip(source: str | os.PathLike, path: Path, start_s: float,
              end_s: float) -> tuple[Path, str | None]:
    """The source file's picture and sound from the keyframe at or before ``start_s`` to
    ``end_s`` (seconds from its first picture, as ``Frame.time_s``), copied packet by packet;
    written whole (temporary name, renamed). Into the MP4 ``path`` when an MP4 holds the
    codecs, else into the first of ``COPY_CONTAINERS`` that does, named as ``path`` with its
    suffix (``clip_file_name``), its sound left out if none holds it with the picture.
    Returns the clip's path and what was left out (None: nothing); ClipError (or the
    muxer's error) when it cannot be copied."""
    with av.open(os.fspath(source)) as probe:
        if not probe.streams.video:
            raise ClipError("the file has no picture")
        picture = probe.streams.video[0].codec_context.name
        sound = probe.streams.audio[0].codec_context.name if probe.streams.audio else None
    key = _keyframe_at_or_before(source, start_s)
    # MP4 when it holds both (browsers play it), else the first that holds the picture and
    # the sound, else the first that holds the picture, without the sound.
    mp4 = picture in MP4_VIDEO_CODECS and (sound is None or sound in MP4_AUDIO_CODECS)
    containers = [(name, suffix) for name, suffix in COPY_CONTAINERS if mp4 or name != "mp4"]
    plans = [(name, path.with_name(clip_file_name(path.name, suffix)), True)
             for name, suffix in containers]
    if sound is not None:
        plans += [(name, target, False) for name, target, _ in plans if name != "mp4"]
    error = None
    for container_format, target, with_sound in plans:
        try:
            write_atomically(target, lambda temporary: _copy_into(
                source, temporary, container_format, with_sound, key, end_s))
        except ClipError:
            raise
        except Exception as failed:        # the muxer refused: the next container
            if is_disk_error(failed):
                raise
            error = failed
            continue
        left_out = (None if with_sound or sound is None
                    else f"no container here takes its sound ({sound}) with its picture")
        return target, left_out
    raise ClipError(f"{picture} cannot be copied into MP4, Matroska or AVI ({_why(error)})")


def encode_clip(source: str | os.PathLike, path: Path, start_s: float, end_s: float,
                fps: float) -> Path:
    """The clip encode mode makes, from the source file decoded again: its pictures from
    ``start_s`` to ``end_s`` encoded (H.264 MP4 ``path``) with its sound for the same time."""
    half = 0.5 / fps
    writer = None
    try:
        with _positions(source, max(0.0, start_s - half)) as positions:
            for inputs, video, _, packets in positions:
                origin, base = _origin(video), video.time_base
                first, done, late = True, False, False
                for packet in packets:
                    if packet.stream is not video:
                        continue
                    try:
                        frames = packet.decode()
                    except av.error.InvalidDataError:
                        continue                        # as a run: the frame is skipped
                    for frame in frames:
                        if frame.pts is None:
                            continue
                        at_s = float((frame.pts - origin) * base)
                        if first:
                            first = False
                            if at_s > start_s + half and at_s > 0:
                                late = True             # landed late: further back
                                break
                        if at_s < start_s - half:
                            continue
                        if at_s > end_s + half:
                            done = True
                            break
                        if writer is None:
                            writer = VideoWriter(path, frame.width, frame.height, fps)
                        writer.write(frame.to_ndarray(format="bgr24"))
                    if done or late:
                        break
                if writer is not None:
                    break
        if writer is None:
            raise ClipError(f"no picture from {start_s:.3f} s to {end_s:.3f} s decodes")
        writer, clip = None, writer.close()
    finally:
        if writer is not None:
            writer.discard()
    add_audio(clip, source, start_s, end_s + 1 / fps)
    return clip


def add_audio(path: Path, source: str | os.PathLike, start_s: float, end_s: float) -> None:
    """Put the source file's sound from ``start_s`` to ``end_s`` into the clip ``path`` (its
    picture starts at ``start_s``); rewritten whole. Nothing to do for a silent source."""
    if not _has_audio(source):
        return
    write_atomically(path, lambda temporary: _add_sound(source, temporary, start_s, end_s,
                                                        picture_from=path))


def _add_sound(source, target: Path, start_s: float, end_s: float, picture_from: Path) -> None:
    """Write ``target`` (MP4): the picture of ``picture_from``, whole, and the sound of
    ``source`` from ``start_s`` to ``end_s``, copied when an MP4 holds its codec, else
    encoded as AAC."""
    with av.open(os.fspath(target), "w", format="mp4") as output:
        with av.open(os.fspath(picture_from)) as pictures:
            picture_in = pictures.streams.video[0]
            picture_out = output.add_stream_from_template(picture_in)
            with av.open(os.fspath(source)) as probe:
                sound_out, resampler = _sound_out(output, probe.streams.audio[0])
            for packet in pictures.demux(picture_in):
                if packet.dts is not None:
                    packet.stream = picture_out
                    output.mux(packet)
        _copy_sound(source, output, sound_out, resampler, start_s, end_s)


def _sound_out(output, stream):
    """The clip's sound stream for the source's ``stream``: the same codec when an MP4 holds
    it (copied), else AAC (``encoder``: the resampler that feeds it)."""
    if stream.codec_context.name in MP4_AUDIO_CODECS:
        return output.add_stream_from_template(stream), None
    sound_out = output.add_stream("aac", rate=stream.codec_context.sample_rate)
    # A layout of the channels' count alone (AVI's PCM: "1 channels") is one AAC refuses:
    # the usual layout of that many channels.
    channels = stream.codec_context.channels
    layout = av.AudioLayout(_LAYOUTS.get(channels, stream.codec_context.layout.name))
    sound_out.layout = layout
    # In frames of the encoder's size: AAC takes 1024 samples at a time.
    return sound_out, av.AudioResampler(format="fltp", layout=layout,
                                        rate=stream.codec_context.sample_rate, frame_size=1024)


def _copy_sound(source, output, sound_out, resampler, start_s: float, end_s: float) -> None:
    """The sound of ``source`` from ``start_s`` to ``end_s`` (seconds from its first
    picture), into ``sound_out`` from 0: copied, or encoded by way of ``resampler``."""
    with _positions(source, start_s, kind="audio") as positions:
        for inputs, video, stream, packets in positions:
            origin = float(_origin(video) * video.time_base)
            shift = int(round((origin + start_s) / stream.time_base))
            late = None
            for packet in packets:
                if packet.stream is not stream or packet.dts is None or packet.pts is None:
                    continue
                at_s = float(packet.pts * stream.time_base) - origin
                if late is None:
                    late = at_s > start_s + 0.05 and at_s > 0.05
                    if late:
                        break                          # landed late: further back
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
            if not late:
                break
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
                 mode: str = CLIP_MODES[0], boxes: bool = False, box_level: float = 0.0,
                 report: Callable[[str], None] = None):
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
        self.report = report or _warn

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
        picture = self._remember(frame, score, event_number)
        if picture is None:
            return
        if self._times is not None:
            self._times = (self._times[0], frame.time_s)
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

    def on_frame_resting(self, frame, score, event_number) -> None:
        # After a clip failed (a live session goes on): the next clip's time before its
        # event is still kept, so that clip is whole.
        self._remember(frame, score, event_number)

    def _remember(self, frame, score, event_number) -> np.ndarray | None:
        """The frame's picture (boxes drawn, if asked, in an event), kept in the ring of
        recent ones; None when there is none to keep (copy mode, or no picture)."""
        if self.mode == "copy":
            return None
        picture = bgr_picture(frame)
        if picture is None:
            return None
        if (self.boxes is not None and event_number is not None
                and score.residual_image is not None):
            picture, _ = self.boxes.draw(picture, score.residual_image, score.block_scores,
                                         self.box_level)
        self._recent.append((frame.index, picture))
        return picture

    def on_event_end(self, event, files: dict[str, str]) -> None:
        if self.mode == "copy":
            path = self._copied(event)
            if path is not None:
                self.written.append(path)
                files["clip"] = str(path)
        elif self._open is not None and self._open[0] == event.number:
            path = self._close()
            if path is not None:
                files["clip"] = str(path)

    def _copied(self, event) -> Path | None:
        """Event ``event``'s clip copied from the file; else (its codecs, its keyframes or
        its container in the way) encoded from it as encode mode would, with one line on
        stderr that says why; None, also with one line, when it cannot be made at all. A
        clip is never what stops a run (a full disk is: the run's results are whole)."""
        self.folder.mkdir(parents=True, exist_ok=True)
        path = self.folder / self.name_of(event.number)
        start_s, end_s = event.start_time_s, event.end_time_s
        try:
            clip, left_out = copy_clip(self.source_file, path, start_s, end_s)
        except Exception as error:
            if is_disk_error(error):
                raise
            why = _why(error)
        else:
            if left_out is not None:
                self.report(f"event {event.number}'s clip '{clip.name}' is copied without "
                            f"sound: {left_out}")
            return clip
        try:
            clip = encode_clip(self.source_file, path, start_s, end_s, self.fps)
        except Exception as error:
            if is_disk_error(error):
                raise
            self.report(f"event {event.number}'s clip cannot be copied ({why}) nor encoded "
                        f"({_why(error)}); it is left out")
            return None
        self.report(f"event {event.number}'s clip cannot be copied ({why}); it is encoded "
                    f"instead")
        return clip

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
        # The open clip goes, and with it what was kept of it (not the ring of recent
        # pictures: the next clip's time before its event).
        clip, self._open, self._starting, self._times = self._open, None, None, None
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
