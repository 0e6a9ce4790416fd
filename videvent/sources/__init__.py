"""Frame sources, the first stage of the pipeline: `open_source` turns what the user named into
a `FrameSource` of numbered, timed, grey (or BGR) frames.

What `spec` can be, and the backend "auto" picks for it:

- an int or a digit string: a camera index (OpenCV, live);
- a URL (rtsp, http(s), udp, tcp, rtmp): a network stream (OpenCV, live);
- a folder: its images in natural order (images backend);
- a video file: PyAV if it opens the file and decodes a frame, else OpenCV;
- a printf pattern such as "frames/b%05d.bmp": OpenCV, or the images backend if OpenCV
  cannot open the sequence (FFmpeg wants its first number to be 0..4);
- a glob such as "frames/*.png": the images backend.

`backend="opencv"`, `"pyav"` or `"images"` forces one where it can read that kind of input.
"""

from __future__ import annotations

import os
import re
import threading
from pathlib import Path, PurePosixPath
from urllib.parse import urlsplit

from ..choices import BACKENDS
from .base import Frame, FrameSource, SourceError, public_uri
from .images import (IMAGE_EXTENSIONS, ImageSequenceSource, expand_glob, expand_printf,
                     is_printf_pattern, list_folder, missing_numbers, sequence_name)
from .opencv import OpenCVSource
from .pyav import PyAVSource

__all__ = ["BACKENDS", "Frame", "FrameSource", "SourceError", "is_live_spec", "open_source"]

# The thread a source is opened on (``open_source``), which the command line looks for at exit.
OPENING_THREAD = "videvent-open"
_abandoned = threading.Event()   # set once a signal stopped the wait for an opening
URL_SCHEMES = frozenset({"http", "https", "rtmp", "rtmps", "rtsp", "rtsps", "tcp", "udp"})
_GLOB_CHARS = re.compile(r"[*?[]")


def open_source(spec: str | int | os.PathLike, *, colour: bool = False, backend: str = "auto",
                fps: float | None = None, keep_colour: bool = False) -> FrameSource:
    """Open a video file, image folder, image pattern or glob, camera, or network stream.

    colour: BGR frames instead of grey. keep_colour: also give each frame's BGR picture in
    `Frame.colour`, leaving `Frame.image` as it would be otherwise. fps: the frame rate of image sequences (default 25);
    for videos, cameras and streams, used only when the source reports no rate.
    Raises SourceError, with a one-line message, when the source cannot be opened or yields
    no frame.

    On the main thread the opening runs on a thread of its own while this one waits, so a
    signal (Ctrl-C, SIGTERM) is handled at once even while FFmpeg blocks inside the open (a
    pipe nobody writes to, a device, a stalled network file system); the blocked opening is
    left behind, a daemon thread that ends with the process.
    """
    if threading.current_thread() is not threading.main_thread():
        return _open(spec, colour=colour, backend=backend, fps=fps, keep_colour=keep_colour)
    outcome: dict = {}

    def opening() -> None:
        try:
            outcome["source"] = _open(spec, colour=colour, backend=backend, fps=fps,
                                      keep_colour=keep_colour)
        except BaseException as error:   # handed to the caller as it was raised
            outcome["error"] = error

    thread = threading.Thread(target=opening, name=OPENING_THREAD, daemon=True)
    thread.start()
    try:
        while thread.is_alive():
            thread.join(0.1)             # the main thread stays in Python: signals reach it
    except BaseException:
        _abandoned.set()
        raise
    if "error" in outcome:
        raise outcome["error"]
    return outcome["source"]


def open_abandoned() -> bool:
    """Whether a signal ever stopped the wait for an opening: the process should then end
    without the interpreter's clean-up, which can tear the opening's native objects down
    (FFmpeg's) while it is still inside them, or just after it gave up."""
    return _abandoned.is_set()


def is_live_spec(spec: str | int | os.PathLike) -> bool:
    """Whether ``spec`` names a camera (its number) or a stream (a URL), not a file."""
    if isinstance(spec, int) or (isinstance(spec, str) and spec.strip().isdigit()):
        return True
    return urlsplit(os.fspath(spec)).scheme.lower() in URL_SCHEMES


def _open(spec: str | int | os.PathLike, *, colour: bool, backend: str, fps: float | None,
          keep_colour: bool) -> FrameSource:
    if backend not in BACKENDS:
        raise SourceError(f"unknown backend {backend!r}: choose one of {', '.join(BACKENDS)}")
    if fps is not None and not fps > 0:
        raise SourceError(f"fps must be > 0, got {fps}")
    options = {"colour": colour, "fps": fps, "keep_colour": keep_colour}

    if isinstance(spec, int) or (isinstance(spec, str) and spec.strip().isdigit()):
        camera = int(spec)
        _require(backend, "opencv", f"camera {camera}")
        return OpenCVSource(camera, name=f"camera {camera}", is_live=True, **options)

    text = os.fspath(spec)
    if is_live_spec(text):
        _require(backend, "opencv", f"stream {public_uri(text)!r}")
        return OpenCVSource(text, name=_url_name(text), is_live=True, **options)

    path = Path(text)
    if path.is_dir():
        _require(backend, "images", f"folder {text!r}")
        paths = list_folder(path)
        if not paths:
            extensions = ", ".join(sorted(IMAGE_EXTENSIONS))
            raise SourceError(f"no images in folder {text!r} (looked for {extensions})")
        return ImageSequenceSource(paths, uri=text, name=sequence_name(text), **options)
    if path.exists():
        return _open_video(text, backend, options)
    if is_printf_pattern(text):
        return _open_pattern(text, backend, options)
    if _GLOB_CHARS.search(text):
        _require(backend, "images", f"glob {text!r}")
        paths = expand_glob(text)
        if not paths:
            raise SourceError(f"no files match {text!r}")
        return ImageSequenceSource(paths, uri=text, name=sequence_name(text), **options)
    raise SourceError(f"cannot open {public_uri(text)!r}: no such file or folder")


def _open_video(text: str, backend: str, options: dict) -> FrameSource:
    if os.path.isfile(text) and os.path.getsize(text) == 0:
        raise SourceError(f"cannot open {text!r}: the file is empty")
    _require(backend, ("pyav", "opencv"), f"video file {text!r}")
    if backend == "opencv":
        return OpenCVSource(text, name=Path(text).stem, **options)
    try:
        return PyAVSource(text, **options)
    except SourceError as pyav_error:
        if backend == "pyav":
            raise
        try:
            return OpenCVSource(text, name=Path(text).stem, **options)
        except SourceError:
            raise pyav_error from None  # PyAV says more about why the file is unreadable


def _open_pattern(text: str, backend: str, options: dict) -> FrameSource:
    _require(backend, ("opencv", "images"), f"pattern {text!r}")
    paths = expand_printf(text)
    if not paths:
        raise SourceError(f"no files match the pattern {text!r}")
    name = sequence_name(text)
    # OpenCV stops at the first missing number, silently: with a gap, every match is read
    # by the images backend instead (forced OpenCV is refused, naming the gap).
    missing = missing_numbers(text)
    if missing and backend == "opencv":
        shown = ", ".join(map(str, missing[:5])) + (", ..." if len(missing) > 5 else "")
        raise SourceError(f"the pattern {text!r} has no file for number{'s' * (len(missing) > 1)}"
                          f" {shown}; OpenCV would stop there (use --backend images to read "
                          f"every file)")
    if backend != "images" and not missing:
        try:
            return OpenCVSource(text, name=name, fixed_rate=True, **options)
        except SourceError:
            if backend == "opencv":
                raise
    return ImageSequenceSource(paths, uri=text, name=name, **options)


def _require(backend: str, able: str | tuple[str, ...], what: str) -> None:
    """Refuse a forced backend that cannot read this kind of input."""
    able = (able,) if isinstance(able, str) else able
    if backend not in ("auto", *able):
        raise SourceError(f"backend {backend!r} cannot read {what}; use {' or '.join(able)}")


def _url_name(url: str) -> str:
    """Short name of a stream: the last part of its path, else its host."""
    parts = urlsplit(url)
    return PurePosixPath(parts.path).stem or parts.hostname or url
