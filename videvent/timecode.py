"""Parse user-written times and lengths into frame numbers, and format timecodes.

One grammar serves every time-like option (start/end of the range to scan,
minimum event length, time kept before/after an event):

* ``"123"``                   -- a frame count (a bare number always means frames)
* ``"12s"``, ``"12.3s"``      -- seconds
* ``"10m"``, ``"1h30m"``, ``"2m30.5s"`` -- hours, minutes and seconds
* ``"HH:MM:SS"``, ``"HH:MM:SS.mmm"``, ``"MM:SS"``, ``"MM:SS.mmm"`` -- a timecode

Seconds and timecodes are converted with the video's frame rate and rounded to
the nearest frame (halves round up).  Arithmetic is exact (fractions), so
"1.15s" at 10 fps is frame 12, not 11 through a binary rounding error.
"""

from __future__ import annotations

import math
import numbers
import re
from fractions import Fraction

# re.ASCII: int() would also accept e.g. Arabic-Indic digits, which nobody means here.
_FRAMES = re.compile(r"\d+", re.ASCII)
_DECIMAL = re.compile(r"\d*\.\d+|\d+\.", re.ASCII)
# Hours, minutes and seconds, each optional but in this order: "10m", "1h30m", "2m30.5s".
_UNITS = re.compile(r"(?=.)(?:(\d+)h)?(?:(\d+)m)?(?:(\d+(?:\.\d+)?|\.\d+)s)?", re.ASCII)
# Hours are optional and unbounded; minutes and seconds are checked to be < 60 below.
_TIMECODE = re.compile(r"(?:(\d+):)?(\d{1,2}):(\d{1,2}(?:\.\d+)?)", re.ASCII)

_EXPECTED = (
    "expected frames ('123'), seconds ('12.3s'), minutes and hours ('10m', '1h30m') "
    "or a timecode ('HH:MM:SS[.mmm]' or 'MM:SS[.mmm]')"
)


def parse_time(text: str | int | float, fps: float) -> int:
    """Return the frame number of a point in time such as ``"00:01:30"``.

    An ``int`` (or a whole-valued ``float``) is taken as a frame number, like a
    bare ``"123"``.  Raises ``ValueError`` with a one-line message on anything
    else, including negative values.
    """
    return _to_frames(text, fps, "time")


def parse_duration(text: str | int | float, fps: float) -> int:
    """Return the number of frames in a length such as ``"2.5s"``.

    Same grammar and errors as :func:`parse_time`; only the wording of error
    messages differs.
    """
    return _to_frames(text, fps, "duration")


def format_timecode(seconds: float) -> str:
    """Format seconds as ``"HH:MM:SS.mmm"`` (hours may exceed 99).

    Rounds to the nearest millisecond first so carries propagate:
    59.9996 s gives ``"00:01:00.000"``, never ``"00:00:59.1000"``.
    """
    if not math.isfinite(seconds) or seconds < 0:
        raise ValueError(
            f"cannot format {seconds!r} as a timecode: need finite, non-negative seconds"
        )
    total_ms = math.floor(seconds * 1000 + 0.5)
    hours, rest = divmod(total_ms, 3_600_000)
    minutes, rest = divmod(rest, 60_000)
    secs, millis = divmod(rest, 1000)
    return f"{hours:02d}:{minutes:02d}:{secs:02d}.{millis:03d}"


def _to_frames(value: str | int | float, fps: float, kind: str) -> int:
    # bool is an Integral, but True as a frame rate or a time is certainly a mistake.
    fps_ok = isinstance(fps, numbers.Real) and not isinstance(fps, bool)
    if not (fps_ok and math.isfinite(fps) and fps > 0):
        raise ValueError(f"invalid frame rate {fps!r}: must be a positive number")
    if isinstance(value, bool):
        raise ValueError(f"invalid {kind} {value!r}: {_EXPECTED}")
    if isinstance(value, numbers.Real):
        return _number_to_frames(value, kind)
    if not isinstance(value, str):
        raise ValueError(f"invalid {kind} {value!r}: {_EXPECTED}")

    text = value.strip()
    if text.startswith("-"):
        raise ValueError(f"invalid {kind} {value!r}: must not be negative")
    if _FRAMES.fullmatch(text):
        return int(text)
    match = _UNITS.fullmatch(text)
    if match:
        hours, minutes, seconds = (Fraction(part or 0) for part in match.groups())
        return _round_to_frame(hours * 3600 + minutes * 60 + seconds, fps)
    match = _TIMECODE.fullmatch(text)
    if match:
        hours = int(match[1] or 0)
        minutes = int(match[2])
        seconds = Fraction(match[3])
        if minutes >= 60:
            hint = "" if match[1] else " (write longer times as HH:MM:SS)"
            raise ValueError(f"invalid {kind} {value!r}: minutes must be below 60{hint}")
        if seconds >= 60:
            raise ValueError(f"invalid {kind} {value!r}: seconds must be below 60")
        return _round_to_frame(hours * 3600 + minutes * 60 + seconds, fps)
    if _DECIMAL.fullmatch(text):
        raise ValueError(_bare_decimal_message(value, kind))
    raise ValueError(f"invalid {kind} {value!r}: {_EXPECTED}")


def _number_to_frames(value: numbers.Real, kind: str) -> int:
    # Numbers follow the string rule "a bare number is frames", so 12.5 is as
    # ambiguous as the string "12.5" and is rejected the same way.
    if not isinstance(value, numbers.Integral):
        if not math.isfinite(value):
            raise ValueError(f"invalid {kind} {value!r}: {_EXPECTED}")
        if not float(value).is_integer():
            raise ValueError(_bare_decimal_message(value, kind))
    if value < 0:
        raise ValueError(f"invalid {kind} {value!r}: must not be negative")
    return int(value)


def _bare_decimal_message(value: str | numbers.Real, kind: str) -> str:
    number = str(value).strip()
    return (
        f"invalid {kind} {value!r}: a bare number is a frame count; "
        f"for seconds write '{number}s'"
    )


def _round_to_frame(seconds: Fraction, fps: float) -> int:
    return math.floor(seconds * Fraction(float(fps)) + Fraction(1, 2))
