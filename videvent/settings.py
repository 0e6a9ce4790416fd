"""Every setting of a detection run, with its default, checks and TOML loading.

One dataclass serves the command line, the config file (``-c``) and the Python API, so a
setting has one name, one default and one check everywhere. Times are kept as the user wrote
them (frames, ``"12.3s"`` or a timecode) and turned into frames once the frame rate is known.
"""

from __future__ import annotations

import dataclasses
import math
import sys
from dataclasses import dataclass, fields
from pathlib import Path

from .detectors.background import METHODS
from .sources import BACKENDS
from .timecode import parse_duration, parse_time

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

Time = str | int


class SettingError(ValueError):
    """A setting that cannot work with this source (found once it is open, e.g. a range
    whose end is before its start at its frame rate): bad usage, not bad input."""


@dataclass
class Settings:
    """Settings of a detection run; see ``videvent run --help`` for each one's meaning."""

    method: str = "sncp"
    rank: int = 3
    window: int = 100
    projection_dim: int = 50
    inlier_fraction: float = 0.3
    blocks: int = 16
    threshold: float = 7.0
    threshold_low: float = 4.5
    min_event_length: Time = "0.1s"
    merge_gap: Time = "0.5s"
    time_before_event: Time = "1s"
    time_post_event: Time = "1s"
    absorb_after: Time | None = "5s"         # None: never absorb a lasting change
    background_span: Time = "60s"            # time the model's window spans
    seed: bool = False                        # seed the model from frames spread over a file
    working_size: int = 160
    downscale_factor: int | None = None
    colour: bool = False
    start_time: Time | None = None
    end_time: Time | None = None
    duration: Time | None = None
    fps: float | None = None                  # frame rate of image sequences
    backend: str = "auto"
    refit_every: int = 1

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        """Raise ValueError with a one-line message on the first bad setting."""
        if self.method not in METHODS:
            raise ValueError(f"method must be one of {', '.join(METHODS)}, got {self.method!r}")
        for name in ("rank", "window", "projection_dim", "blocks", "working_size", "refit_every"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name.replace('_', '-')} must be a positive whole number, "
                                 f"got {value!r}")
        if self.window <= self.rank:
            raise ValueError(f"window ({self.window}) must be longer than rank ({self.rank})")
        if self.projection_dim < self.rank:
            raise ValueError(f"projection-dim ({self.projection_dim}) must be at least rank "
                             f"({self.rank})")
        if not 0.0 < self.inlier_fraction <= 1.0:
            raise ValueError(f"inlier-fraction must be in (0, 1], got {self.inlier_fraction}")
        for name in ("threshold", "threshold_low"):
            value = getattr(self, name)
            if value is not None and not math.isfinite(value):
                raise ValueError(f"{name.replace('_', '-')} must be a finite number, "
                                 f"got {value!r}")
        if self.threshold_low > self.threshold:
            raise ValueError(f"threshold-low ({self.threshold_low}) must not exceed threshold "
                             f"({self.threshold})")
        if self.downscale_factor is not None and self.downscale_factor < 1:
            raise ValueError(f"downscale-factor must be 1 or more, got {self.downscale_factor}")
        if self.fps is not None and not 0.0 < self.fps <= 1000.0:
            raise ValueError(f"fps must be between 0 and 1000, got {self.fps}")
        if self.backend not in BACKENDS:
            raise ValueError(f"backend must be one of {', '.join(BACKENDS)}, "
                             f"got {self.backend!r}")
        if self.end_time is not None and self.duration is not None:
            raise ValueError("give end-time or duration, not both")
        # Check the grammar of every time now, not after minutes of decoding.
        for name in TIME_FIELDS:
            value = getattr(self, name)
            if value is not None:
                parse_duration(value, 25.0)

    def frames(self, name: str, fps: float) -> int | None:
        """A time setting in frames at ``fps`` (None stays None)."""
        value = getattr(self, name)
        if value is None:
            return None
        return (parse_time if name in ("start_time", "end_time") else parse_duration)(value, fps)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    def replace(self, **changes) -> "Settings":
        return dataclasses.replace(self, **changes)


TIME_FIELDS = ("min_event_length", "merge_gap", "time_before_event", "time_post_event",
               "absorb_after", "background_span", "start_time", "end_time", "duration")
SETTING_NAMES = tuple(f.name for f in fields(Settings))
WHOLE_NUMBERS = frozenset(f.name for f in fields(Settings)
                          if f.type in ("int", "int | None"))


def load_config(path: str | Path) -> dict:
    """Settings from a TOML file: top-level keys or a ``[run]`` table, dashes or underscores.

    Raises ValueError (one line) for unreadable files, TOML errors and unknown keys.
    """
    try:
        with open(path, "rb") as handle:
            document = tomllib.load(handle)
    except OSError as error:
        raise ValueError(f"cannot read config file '{path}': {error.strerror}") from None
    except tomllib.TOMLDecodeError as error:
        raise ValueError(f"config file '{path}' is not valid TOML: {error}") from None
    table = document.get("run", document)
    if not isinstance(table, dict):
        raise ValueError(f"config file '{path}': [run] must be a table")
    if table is not document:
        loose = [key for key, value in document.items() if not isinstance(value, dict)]
        if loose:  # they would be ignored: say so rather than run without them
            raise ValueError(f"config file '{path}': '{loose[0]}' is outside the [run] table; "
                             f"put every setting under [run], or none")
    values = {}
    for key, value in table.items():
        if isinstance(value, dict):
            continue  # other commands' tables
        name = key.replace("-", "_")
        if name not in SETTING_NAMES:
            raise ValueError(f"config file '{path}': unknown setting '{key}'")
        if name in WHOLE_NUMBERS and (isinstance(value, bool) or not isinstance(value, int)):
            # The command line's conversion would cut 3.7 to 3 without a word.
            raise ValueError(f"config file '{path}': {key} must be a whole number, "
                             f"got {value!r}")
        values[name] = value
    return values
