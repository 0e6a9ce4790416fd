"""Every setting of a detection run, declared once: its type, default, bounds, units, help and
short flag.

The declarations (dataclass fields with ``setting(...)`` metadata) are the one source the
command-line options (``videvent._cli.options``), the config-file validation
(``load_config``) and the runtime checks (``Settings.validate``) are all derived from, so a
setting has one name, one default and one check everywhere, and every setting can be given
on the command line and in the config file. Times are kept as the user wrote them (frames,
``"12.3s"``, ``"10m"`` or a timecode) and turned into frames once the frame rate is known.
Regions and masks (``videvent.regions``) are kept as their polygons: a region file is read once,
when the settings are made, so ``events.json`` records what was watched and an export or a
resumed batch watches the same area even if the file changes.
"""

from __future__ import annotations

import dataclasses
import math
import re
import sys
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from .choices import BACKENDS, KINDS, METHODS, OVERLAYS, parse_kinds
from .regions import (Regions, format_polygon, load_region_file, parse_polygon,
                      parse_region_names)
from .timecode import parse_duration, parse_time

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

# The detector's mechanisms that ``--without`` turns off, one at a time or several, to measure
# what each is worth (an ablation); ``videvent/detectors`` reads the same names.
MECHANISMS = ("motion", "brightness_step", "light_settling", "scene_rebuild", "darkness",
              "region_vote", "presence_share", "max_age", "upper_quantile", "neighbour_spread",
              "out_of_sample", "warmup_damping", "gradual_change", "revealed",
              "frame_noise")
TIME_HELP = "frames, seconds ('12.3s'), minutes ('10m', '1h30m') or a timecode ('HH:MM:SS.mmm')"
# Words that turn a time that can be None (absorb-after) off.
NEVER = ("never", "none", "off")

Time = str | int


class SettingError(ValueError):
    """A setting that cannot work with this source (found once it is open, e.g. a range
    whose end is before its start at its frame rate): bad usage, not bad input."""


@dataclass(frozen=True)
class Spec:
    """How one setting is given and checked."""

    kind: str                        # "int", "float", "time", "bool", "choice", "text",
                                     # "polygons" or "files" (these two: repeatable),
                                     # "kinds" or "region_names" (comma-separated names)
    help: str
    short: str | None = None         # e.g. "-m"
    minimum: float | None = None
    maximum: float | None = None
    min_open: bool = False           # the minimum itself is not allowed
    choices: tuple[str, ...] = ()
    units: str = ""
    optional: bool = False           # None is a value (no default limit, or "never")
    off_flag: str | None = None      # bool: the flag that turns it off (--grey)
    metavar: str | None = None       # how the option's value is shown in --help


def setting(default: Any, kind: str, help: str, **spec) -> Any:
    return field(default=default, metadata={"spec": Spec(kind, help, **spec)})


@dataclass
class Settings:
    """Settings of a detection run; see ``videvent run --help`` for each one's meaning."""

    method: str = setting("sncp", "choice", "How the window's normal frames are found (pca: "
                          "not robust).", short="-m", choices=METHODS)
    rank: int = setting(3, "int", "Dimension of the background subspace.", minimum=1)
    # At least the frames whose statistics the model's z-scores need (MIN_SAMPLES in
    # videvent/detectors/background.py): a smaller window never scores a frame.
    window: int = setting(100, "int", "Frames the model holds (at least 5: its scores need "
                          "the statistics of 5 background frames).", short="-w", minimum=5,
                          units="frames")
    projection_dim: int = setting(50, "int", "Top singular vectors of the window kept.",
                                  minimum=1)
    inlier_fraction: float = setting(0.3, "float", "Share of the window, by score, that "
                                     "spans the subspace.", minimum=0.0, maximum=1.0,
                                     min_open=True)
    blocks: int = setting(16, "int", "Grid blocks across the frame's long side.", minimum=1)
    threshold: float = setting(7.0, "float", "Score that starts an event.", short="-t",
                               minimum=0.0, min_open=True, units="robust z-score")
    threshold_low: float = setting(4.5, "float", "Score an event stays above (hysteresis).", minimum=0.0, units="robust z-score")
    min_event_length: Time = setting("0.1s", "time", "Shortest event.", short="-l")
    merge_gap: Time = setting("0.5s", "time", "Merge events this close.")
    time_before_event: Time = setting("1s", "time", "Time before each event.",
                                      short="-tb")
    time_post_event: Time = setting("1s", "time", "Time after each event.",
                                    short="-tp")
    absorb_after: Time | None = setting(
        "5s", "time", "A region still this long becomes background ('never').", optional=True,
        minimum=0, min_open=True)
    background_span: Time = setting("60s", "time", "Time the model's window of frames spans.")
    seed: bool = setting(False, "bool", "Seed the model from frames spread over the whole "
                         "file.", off_flag="--no-seed")
    light_invariant: bool = setting(True, "bool", "A change of light in part of the frame "
                                    "(a shadow, a cloud, the camera's exposure) is not an event.",
                                    off_flag="--no-light-invariant")
    working_size: int = setting(160, "int", "Long side the detector works at.",
                                minimum=8, units="pixels")
    downscale_factor: int | None = setting(
        None, "int", "Divide width and height by this instead of --working-size.",
        short="-df", minimum=1, optional=True)
    colour: bool = setting(False, "bool", "Score colour frames instead of grey.",
                           off_flag="--grey")
    start_time: Time | None = setting(None, "time", "Where to start.", short="-st",
                                      optional=True)
    end_time: Time | None = setting(None, "time", "Where to stop.", short="-et", optional=True)
    duration: Time | None = setting(None, "time", "How much to scan (or watch).", short="-dt",
                                    optional=True)
    fps: float | None = setting(None, "float", "Frames a second of image sequences (default 25).",
                                minimum=0.0, maximum=1000.0, min_open=True, optional=True)
    backend: str = setting("auto", "choice", "Video decoder.", choices=BACKENDS)
    # Last, as in the events.json of earlier versions (whose settings are compared on resume).
    refit_every: int = setting(2, "int", "Frames learned between refits of the subspace.",
                               minimum=1, units="frames")
    start_reference: bool = setting(
        True, "bool", "On a file, judge the warm-up against frames spread over it.",
        off_flag="--no-start-reference")
    without: str = setting("", "text", "Mechanisms to turn off (ablation): "
                           + ", ".join(MECHANISMS) + ".",
                           metavar="NAMES")
    # Regions and masks (DVR-Scan's flags): after __post_init__, the files' polygons are in
    # add_region and ignore_region and the file lists are empty.
    add_region: tuple[str, ...] = setting(
        (), "polygons", "A polygon to watch, 'X0 Y0 X1 Y1 ...'; repeatable.",
        short="-a")
    load_region: tuple[str, ...] = setting(
        (), "files", "File of polygons to watch, one a line; repeatable.",
        short="-R")
    ignore_region: tuple[str, ...] = setting(
        (), "polygons", "A polygon to ignore, as -a; repeatable.")
    mask: tuple[str, ...] = setting(
        (), "files", "File of polygons to ignore, as -R; repeatable.")
    # What the pictures show of what was found (thumbnails, the annotated video, clips, the
    # dashboard); no effect on the scores.
    overlay: str = setting(OVERLAYS[0], "choice", "What the pictures show of what was found.", choices=OVERLAYS)
    bounding_box: bool = setting(False, "bool", "Boxes around the changes in the pictures.", short="-bb",
                                 off_flag="--no-bounding-box")

    def __post_init__(self) -> None:
        for name in ("add_region", "load_region", "ignore_region", "mask"):
            value = getattr(self, name)
            setattr(self, name, (value,) if isinstance(value, str) else tuple(value))
        # The files' polygons join the polygons given (RegionError, one line, if unreadable).
        self.add_region += tuple(map(format_polygon, _polygons_of(self.load_region)))
        self.ignore_region += tuple(map(format_polygon, _polygons_of(self.mask)))
        self.load_region = self.mask = ()
        self.validate()

    def validate(self) -> None:
        """Raise ValueError with a one-line message on the first bad setting."""
        for item in fields(self):
            check_value(item.name, getattr(self, item.name))
        if self.window <= self.rank:
            raise ValueError(f"window ({self.window}) must be longer than rank ({self.rank})")
        if self.projection_dim < self.rank:
            raise ValueError(f"projection-dim ({self.projection_dim}) must be at least rank "
                             f"({self.rank})")
        if self.threshold_low > self.threshold:
            raise ValueError(f"threshold-low ({self.threshold_low}) must not exceed threshold "
                             f"({self.threshold})")
        unknown = set(self.mechanisms_off()) - set(MECHANISMS)
        if unknown:
            raise ValueError(f"without: unknown mechanism {sorted(unknown)[0]!r}: choose from "
                             f"{', '.join(MECHANISMS)}")
        if self.end_time is not None and self.duration is not None:
            raise ValueError("give end-time or duration, not both")
        # Written back in one spelling: equal regions compare equal (batch's resume).
        regions = self.regions()
        self.add_region = tuple(map(format_polygon, regions.watch))
        self.ignore_region = tuple(map(format_polygon, regions.ignore))

    def mechanisms_off(self) -> frozenset[str]:
        """The detector mechanisms ``without`` turns off."""
        return frozenset(name.strip() for name in self.without.split(",") if name.strip())

    def regions(self) -> Regions:
        """The area watched (RegionError, one line, for a polygon that is not one); checked
        against a source's size when a pass is prepared."""
        return Regions.from_options(add_region=self.add_region,
                                    ignore_region=self.ignore_region)

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


def _polygons_of(paths) -> list:
    return [polygon for path in paths for polygon in load_region_file(path)]


SPECS: dict[str, Spec] = {item.name: item.metadata["spec"] for item in fields(Settings)}
DEFAULTS: dict[str, Any] = {item.name: item.default for item in fields(Settings)}
SETTING_NAMES = tuple(SPECS)

# Where a watch's news go, not what it finds: not Settings (nor in events.json, nor compared on
# resume), but declared the same way so the option, the config key and its check agree.
WATCH_SPECS: dict[str, Spec] = {
    "on_event": Spec("text", "Run CMD for every alert (fields as VIDEVENT_*).", optional=True, metavar="CMD"),
    "webhook": Spec("text", "POST every alert as JSON to this URL.", optional=True,
                    metavar="URL"),
    "serve": Spec("text", "Serve the live dashboard (host 127.0.0.1 unless given).", optional=True,
                  metavar="[HOST:]PORT"),
    "serve_token": Spec("text", "The dashboard's token (better: VIDEVENT_SERVE_TOKEN).", optional=True, metavar="TOKEN"),
    "serve_token_file": Spec("text", "Read the dashboard's token from this file.", optional=True, metavar="FILE"),
    "serve_cert": Spec("text", "HTTPS certificate chain (PEM; with --serve-key).", optional=True, metavar="FILE"),
    "serve_key": Spec("text", "The private key of --serve-cert (PEM).", optional=True,
                      metavar="FILE"),
    "serve_health": Spec("choice", "Who may ask the dashboard's /healthz without the token: "
                         "'local' (this machine) or 'anyone'.", choices=("local", "anyone")),
    "mqtt": Spec("text", "Publish to this MQTT broker (password: VIDEVENT_MQTT_PASSWORD).", optional=True,
                 metavar="[mqtts://][USER[:PASSWORD]@]HOST[:PORT]"),
    "mqtt_ca": Spec("text", "CA file (PEM) for an mqtts:// broker's certificate.",
                    optional=True, metavar="FILE"),
    "mqtt_prefix": Spec("text", "First level of the MQTT topics."),
    "mqtt_discovery": Spec("text", "Home Assistant discovery prefix ('off': none).", metavar="PREFIX"),
}
# How long a watch keeps each camera's events and how much disk they may take (retention):
# given for the whole watch or in a camera's own table, not detection settings either.
CAMERA_SPECS: dict[str, Spec] = {
    "keep": Spec("float", "Remove each camera's events older than DAYS.", minimum=0.0,
                 min_open=True, optional=True, metavar="DAYS"),
    "max_disk": Spec("size", "Disk each camera's events may use (50MB, 2GB): oldest go first.",
                     optional=True, metavar="SIZE"),
}
WATCH_DEFAULTS: dict[str, Any] = {**dict.fromkeys(WATCH_SPECS), "serve_health": "local",
                                  "mqtt_prefix": "videvent",
                                  "mqtt_discovery": "homeassistant",
                                  **dict.fromkeys(CAMERA_SPECS)}
# Which events a camera's alerts are about (every channel: hook, webhook, MQTT, --json): the
# whole watch's on the command line or at the top of a config file, a camera's own in its table.
ALERT_SPECS: dict[str, Spec] = {
    "alert_on": Spec("kinds", "Alert only on events of these kinds: " + ", ".join(KINDS)
                     + " (comma-separated).", optional=True, metavar="KINDS"),
    "alert_regions": Spec("region_names", "Alert only on events touching one of these watch "
                          "regions (1,2: in the order given).", optional=True, metavar="NAMES"),
}
# What a config file may hold.
ALL_SPECS: dict[str, Spec] = {**SPECS, **WATCH_SPECS, **ALERT_SPECS, **CAMERA_SPECS}
_SIZE = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(i?)b?\s*", re.I)


def parse_size(text: str | int) -> int:
    """A size in bytes from ``50MB``, ``2GB``, ``1.5G``, ``500k`` (powers of 1000; ``MiB``,
    ``GiB``: of 1024) or a number of bytes. ValueError, one line, for anything else."""
    if isinstance(text, int) and not isinstance(text, bool) and text > 0:
        return text
    match = _SIZE.fullmatch(text) if isinstance(text, str) else None
    if match is None or float(match[1]) <= 0:
        raise ValueError(f"expected a size such as 50MB or 2GB, got {text!r}")
    power = " kmgt".index(match[2].lower() or " ")
    return int(float(match[1]) * (1024 if match[3] else 1000) ** power)


def option_name(name: str) -> str:
    return name.replace("_", "-")


def never_to_none(name: str, value: Any) -> Any:
    """'never' (or 'none', 'off') for a setting whose None means off (absorb-after)."""
    if (SPECS[name].optional and DEFAULTS[name] is not None and isinstance(value, str)
            and value.strip().lower() in NEVER):
        return None
    return value


def check_value(name: str, value: Any) -> None:
    """Raise ValueError (one line) if ``value`` is not one setting ``name`` can take."""
    spec, shown = ALL_SPECS[name], option_name(name)
    if value is None:
        if spec.optional:
            return
        raise ValueError(f"{shown} must be given, got None")
    if spec.kind == "bool":
        if not isinstance(value, bool):
            raise ValueError(f"{shown} must be true or false, got {value!r}")
    elif spec.kind == "choice":
        if value not in spec.choices:
            raise ValueError(f"{shown} must be one of {', '.join(spec.choices)}, got {value!r}")
    elif spec.kind == "size":
        try:
            parse_size(value)
        except ValueError as error:
            raise ValueError(f"{shown}: {error}") from None
    elif spec.kind in ("text", "kinds", "region_names"):
        if not isinstance(value, str):
            raise ValueError(f"{shown} must be text, got {value!r}")
        try:
            if spec.kind == "kinds":
                parse_kinds(value)
            elif spec.kind == "region_names":
                parse_region_names(value)
        except ValueError as error:
            raise ValueError(f"{shown}: {error}") from None
    elif spec.kind in ("polygons", "files"):
        items = (value,) if isinstance(value, str) else value
        if not isinstance(items, (list, tuple)) or not all(
                isinstance(item, str) or (spec.kind == "polygons" and isinstance(item, list))
                for item in items):
            raise ValueError(f"{shown} must be a list of "
                             f"{'polygons' if spec.kind == 'polygons' else 'file names'}, "
                             f"got {value!r}")
        if spec.kind == "polygons":   # named as Regions.check names them
            label = "region" if name == "add_region" else "mask"
            for number, item in enumerate(items, start=1):
                parse_polygon(item, f"{label} {number}")
    elif spec.kind == "time":
        if isinstance(value, bool) or not isinstance(value, (str, int)):
            raise ValueError(f"{shown} must be {TIME_HELP}, got {value!r}")
        frames = parse_duration(value, 25.0)  # the grammar, now, not after minutes of decoding
        if spec.minimum is not None and (frames < spec.minimum
                                         or (spec.min_open and frames == spec.minimum)):
            raise ValueError(f"{shown} must be at least a frame long, got {value!r}"
                             + (" ('never' turns it off)" if spec.optional else ""))
    else:
        whole = spec.kind == "int"
        if isinstance(value, bool) or not isinstance(value, int if whole else (int, float)):
            raise ValueError(f"{shown} must be a {'whole number' if whole else 'number'}, "
                             f"got {value!r}")
        if not math.isfinite(value):
            raise ValueError(f"{shown} must be a finite number, got {value!r}")
        low, high = spec.minimum, spec.maximum
        if (low is not None and (value < low or (spec.min_open and value == low))) or (
                high is not None and value > high):
            raise ValueError(f"{shown} must be {_bounds(spec)}, got {value!r}")


def _bounds(spec: Spec) -> str:
    low = "" if spec.minimum is None else (f"more than {spec.minimum:g}" if spec.min_open
                                           else f"at least {spec.minimum:g}")
    high = "" if spec.maximum is None else f"at most {spec.maximum:g}"
    return " and ".join(part for part in (low, high) if part)


def load_config(path: str | Path, options: frozenset[str] = frozenset()) -> dict:
    """Settings from a TOML file: top-level keys or a ``[run]`` table, dashes or underscores.
    Region files and masks named in it are found from the file's folder. ``options``: other
    keys the file may hold (a command's own options, underscored), returned as they are, for
    the command line to check.

    Raises ValueError (one line) for unreadable files, TOML errors, unknown keys and values
    a setting cannot take.
    """
    return _document_settings(_read_toml(path), path, options)


def _read_toml(path: str | Path) -> dict:
    try:
        with open(path, "rb") as handle:
            return tomllib.load(handle)
    except OSError as error:
        raise ValueError(f"cannot read config file '{path}': {error.strerror}") from None
    except tomllib.TOMLDecodeError as error:
        raise ValueError(f"config file '{path}' is not valid TOML: {error}") from None
    except UnicodeDecodeError as error:   # a binary file: TOML is UTF-8 text
        raise ValueError(f"config file '{path}' is not valid TOML: not UTF-8 text (byte "
                         f"{error.start})") from None


def _document_settings(document: dict, path: str | Path,
                       options: frozenset[str] = frozenset()) -> dict:
    """``load_config`` on a file already read."""
    table = document.get("run", document)
    if not isinstance(table, dict):
        raise ValueError(f"config file '{path}': [run] must be a table")
    if table is not document:
        loose = [key for key, value in document.items() if not isinstance(value, dict)]
        if loose:  # they would be ignored: say so rather than run without them
            raise ValueError(f"config file '{path}': '{loose[0]}' is outside the [run] table; "
                             f"put every setting under [run], or none")
    return _table_settings(table, f"config file '{path}'", Path(path).parent, options=options)


def _table_settings(table: dict, where: str, folder: Path, *, watch: bool = True,
                    options: frozenset[str] = frozenset()) -> dict:
    """The settings of one TOML table, checked (files named in it are found in ``folder``);
    tables inside it are left to their readers. ``watch``: the table may hold the whole
    watch's settings (``WATCH_SPECS``), not only a detection's (a camera's table may not).
    ``options``: other keys it may hold, passed through unchecked (``load_config``)."""
    values = {}
    for key, value in table.items():
        if isinstance(value, dict):
            continue  # other commands' tables
        name = key.replace("-", "_")
        if name in WATCH_SPECS and not watch:
            raise ValueError(f"{where}: '{key}' is the whole watch's, not one camera's: put "
                             f"it above the [cameras.NAME] tables")
        if name not in ALL_SPECS and name in options:
            values[name] = value
            continue
        if name not in ALL_SPECS:
            raise ValueError(f"{where}: unknown setting '{key}'")
        value = never_to_none(name, value) if name in SPECS else value
        try:
            check_value(name, value)
        except ValueError as error:
            raise ValueError(f"{where}: {error}") from None
        kind = ALL_SPECS[name].kind
        if kind in ("polygons", "files"):
            value = [value] if isinstance(value, str) else list(value)
        if kind == "files":   # found beside the config file
            value = [str(folder / item) for item in value]
        values[name] = value
    return values


# -- several cameras in one watch ----------------------------------------------------------
# A camera's name names its result folder, its files (a clip: NAME, the date and time, the
# event's number), MQTT topics and page: plain characters, and short enough that every file
# name made from it stays well under the 255 bytes a file system allows.
MAX_CAMERA_NAME = 64
CAMERA_NAME = re.compile(rf"[A-Za-z0-9_-]{{1,{MAX_CAMERA_NAME}}}")
CAMERA_NAME_RULE = f"letters, digits, '-' and '_' only, at most {MAX_CAMERA_NAME} of them"


def shown_camera_name(name: str) -> str:
    """A camera's name as an error line quotes it: a long one by its start and length."""
    if len(name) <= MAX_CAMERA_NAME:
        return repr(name)
    return f"{name[:20]!r}... ({len(name)} characters)"


def load_cameras(path: str | Path,
                 options: frozenset[str] = frozenset()) -> dict[str, tuple[str | int, dict]]:
    """The cameras of a config file's ``[cameras.NAME]`` tables (as Frigate lists them), in
    the file's order: NAME -> (its ``source``, its own settings). No table: no cameras.

    Raises ValueError (one line) for a camera without a source, a name that cannot name a
    folder, a key of the whole watch (``WATCH_SPECS``) in a camera's table, and the errors of
    ``load_config`` (``options``: as there).
    """
    document = _read_toml(path)
    _document_settings(document, path, options)  # the file's global settings' errors first
    cameras = document.get("cameras", {})
    if not isinstance(cameras, dict):
        raise ValueError(f"config file '{path}': 'cameras' must be a table of [cameras.NAME] "
                         f"tables")
    found = {}
    for name, table in cameras.items():
        where = f"config file '{path}': camera {shown_camera_name(name)}"
        if not isinstance(table, dict):
            raise ValueError(f"{where} must be a table (with a source)")
        if not CAMERA_NAME.fullmatch(name):
            raise ValueError(f"config file '{path}': camera name {shown_camera_name(name)}: "
                             f"{CAMERA_NAME_RULE} (it names the camera's result folder and "
                             f"files)")
        source = table.get("source")
        if isinstance(source, bool) or not isinstance(source, (str, int)) or source == "":
            raise ValueError(f"{where} has no source (a stream URL, a camera number or a file)")
        own = {key: value for key, value in table.items() if key != "source"}
        found[name] = (source, _table_settings(own, where, Path(path).parent, watch=False))
    return found
