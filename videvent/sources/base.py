"""The interface every frame source implements: `Frame`, `FrameSource` and `SourceError`.

A source turns what the user named (a video file, a folder of images, a camera, a stream)
into an iterator of numbered, timed frames. Backends live next to this module; `open_source`
in the package picks one.
"""

from __future__ import annotations

import math
import re
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from urllib.parse import SplitResult, urlsplit, urlunsplit

import numpy as np

# Used when a source reports no usable frame rate (and for image sequences given none).
DEFAULT_FPS = 25.0
# What a stream's secrets are replaced by wherever its address is shown or written.
REDACTED = "***"
# Query parameters that carry a secret (camera makers put passwords and tokens there too:
# the CGI of cheap IP cameras takes ``loginuse=admin&loginpas=...``, others ``pw``/``psw``).
SECRET_PARAMETER = re.compile(r"(?i)(pass|pas$|pwd|psw|^pw$|token|secret|key|auth|sig|"
                              r"credential)")
# A user and password whose password holds an unencoded '/', '?' or '#' (which end the
# address's authority, so ``urlsplit`` reads the password's end as the path, the query or the
# fragment): USER:PASSWORD up to the last '@' followed by a host, its port and the rest.
LOOSE_USERINFO = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)(?P<user>[^/?#@:]*):.*"
                            r"@(?P<host>(?:[A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])(?::\d*)?)"
                            r"(?P<rest>[/?#].*)?", re.S)


def public_uri(uri: str) -> str:
    """A source's address as it may be shown, logged or written: a stream's password (and any
    query parameter that looks like a secret) replaced by ``***``; paths unchanged. Every
    message, alert, file and page names a source by this, never by what opened it."""
    loose = LOOSE_USERINFO.fullmatch(uri)
    if loose is not None and "@" not in _netloc(uri):
        uri = (f"{loose['scheme']}{loose['user']}:{REDACTED}@{loose['host']}"
               f"{loose['rest'] or ''}")
    try:
        parts = urlsplit(uri)
    except ValueError:
        return uri
    if not parts.scheme or not parts.netloc:
        return uri
    netloc = parts.netloc
    if "@" in netloc and not netloc.startswith("@"):
        userinfo, host = netloc.rsplit("@", 1)
        user = userinfo.split(":", 1)[0]
        netloc = f"{user}:{REDACTED}@{host}" if ":" in userinfo else f"{REDACTED}@{host}"
    query = "&".join(
        f"{name}={REDACTED}" if sep and SECRET_PARAMETER.search(name) else pair
        for pair in parts.query.split("&") if pair
        for name, sep, _ in [pair.partition("=")]) if parts.query else ""
    return urlunsplit(SplitResult(parts.scheme, netloc, parts.path, query, parts.fragment))


def _netloc(uri: str) -> str:
    try:
        return urlsplit(uri).netloc
    except ValueError:
        return ""


@dataclass(frozen=True)
class Frame:
    """One frame of a source.

    `index` is the 0-based frame number in the source (seeking keeps it), `time_s` the
    presentation time in seconds from the start of the source, and `image` an HxW (grey) or
    HxWx3 BGR uint8 array, or None when this frame could not be decoded.
    """

    index: int
    time_s: float
    image: np.ndarray | None
    # The BGR picture as well, when the source was opened with keep_colour=True (for drawing
    # on, while `image` stays exactly what a grey source would have given the detector).
    colour: np.ndarray | None = None
    # True when `image` was scaled down to the size the caller asked of ``frames`` while
    # decoding: the detector's picture, not one to show (``picture_to_show``).
    scaled: bool = False
    # When no colour picture was kept: what makes the frame's BGR picture at the source's
    # size from what the decoder gave, which it holds. Only the few frames that are shown (a
    # thumbnail, a snapshot) pay for a colour picture; the others never make one.
    make_picture: Callable[[], np.ndarray] | None = field(default=None, repr=False,
                                                           compare=False)

    def picture_to_show(self) -> np.ndarray | None:
        """The picture to show, in the source's colour where it has any: the kept colour one,
        else one made now, else the frame's own picture at the source's size, else None (it
        must be decoded again to be shown)."""
        if self.colour is not None:
            return self.colour
        if self.make_picture is not None:
            return self.make_picture()
        return None if self.scaled else self.image


class SourceError(ValueError):
    """A source cannot be opened or read; the message is one line, meant for the user."""


class FrameSource(ABC):
    """A sequence of frames; use as a context manager or call `close()` when done."""

    name: str
    uri: str
    fps: float
    frame_count: int | None
    width: int
    height: int
    is_live: bool
    # True when neither the source nor the caller gave a frame rate and DEFAULT_FPS stands in
    # (images carry no timing): every time setting then counts frames at a guessed rate.
    fps_assumed: bool = False
    # True when a frame goes stale if it waits (a live picture): the reader may then drop the
    # oldest frames waiting for the detector rather than let it fall behind.
    paced: bool = False
    # True when the source gives its frames once, from its start (a pipe, a device): one
    # pass, no seek, no sample. A live source is read once too. Its reads may block for as
    # long as its writer waits, so a pass does not wait for its reader at the end.
    read_once: bool = False

    @abstractmethod
    def frames(self, start: int = 0, end: int | None = None, *,
               size: tuple[int, int] | None = None) -> Iterator[Frame]:
        """Yield the frames with start <= index < end (end None: to the end of the source).

        ``size`` (width, height): the size the caller scales every picture to; a source
        that can scale while decoding, for less than it costs after, hands `image` at that
        size (``Frame.scaled``). Others ignore it.

        Start a pass once the previous one is finished or dropped: OpenCV sources read all
        passes from one capture. A live source can only go on from where it is.
        """

    # Frames ``sample`` reads in a row at each place it visits: where a seek costs more than
    # a frame (a video decodes from the keyframe before the place), a few per seek.
    sample_run = 4

    def sample(self, count: int, *, size: tuple[int, int] | None = None) -> Iterator[Frame]:
        """About ``count`` frames spread evenly over a source of known length (for seeding a
        model with the whole video's look): single frames where reading any frame costs the
        same, else runs of ``sample_run`` consecutive frames at ``count // sample_run`` places.
        ``size``: as for ``frames``, so that the sample's pictures are made as a pass's are.

        Backends that seek cheaply only to keyframes start each run at the keyframe before
        its place. Yields nothing for live sources or sources of unknown length.
        """
        if self.is_live or self.read_once or not self.frame_count or count < 1:
            return
        seen = -1
        for start in spread(self.frame_count, max(1, count // self.sample_run)):
            if start <= seen:
                continue
            for frame in self.frames(start, min(start + self.sample_run, self.frame_count),
                                     size=size):
                seen = frame.index
                yield frame

    def misnumbered_frame(self) -> tuple[int, int] | None:
        """(place, number): the first frame whose timestamp numbers it otherwise than its
        place in the source, so that a pass which seeks to it numbers it otherwise than a pass
        from the start counts it (a gap in the timestamps, a repeat, a variable frame rate);
        None if there is none, or it cannot be known without decoding the source."""
        return None

    @abstractmethod
    def close(self) -> None:
        """Release the file, device or connection; further `frames()` calls raise ValueError."""

    def _check_pass(self, start: int, end: int | None) -> None:
        """What every frames() call checks first: a sane range, on a source still open."""
        check_range(start, end)
        if getattr(self, "_closed", False):
            raise ValueError(f"source {self.name!r} is closed")

    def __enter__(self) -> FrameSource:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        count = "live" if self.is_live else f"{self.frame_count} frames"
        return (
            f"<{type(self).__name__} {self.name!r}: {self.width}x{self.height}, "
            f"{self.fps:g} fps, {count}>"
        )


def check_range(start: int, end: int | None) -> None:
    """Reject a frame range that no source could serve (a programming error, not the user's)."""
    if start < 0:
        raise ValueError(f"start must be >= 0, got {start}")
    if end is not None and end < 0:
        raise ValueError(f"end must be >= 0 or None, got {end}")


def spread(length: int, count: int) -> list[int]:
    """Up to ``count`` distinct positions spread evenly over ``range(length)``."""
    if length <= 0 or count <= 0:
        return []
    return sorted({int(round(i)) for i in np.linspace(0, length - 1, min(count, length))})


def frame_rate(*candidates: float | None) -> tuple[float, bool]:
    """The first plausible rate of ``candidates`` (the source's, then the caller's), or
    DEFAULT_FPS; and whether it is that default, assumed."""
    for candidate in candidates:
        if (fps := usable_fps(candidate)) is not None:
            return fps, False
    return DEFAULT_FPS, True


def usable_fps(value: float | None) -> float | None:
    """`value` if it is a plausible frame rate, else None (backends report 0, NaN or 1000s)."""
    if value is None or not math.isfinite(value) or not 0 < value <= 1000:
        return None
    return float(value)

