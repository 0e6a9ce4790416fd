"""Several cameras in one ``watch``: each camera opened and watched on a thread of its own.

Every camera has its own capture thread, detector, session and result folder (a
``LiveMonitor``), so a slow or dead camera never holds up the others: one that cannot be
opened at the start is tried again with the backoff a lost source gets, while the others
already run (``open_monitor``, which a single camera's watch uses too); one lost later
reconnects on its own. The cameras come from the command line
(``watch SRC1 SRC2``) or from a config file's ``[cameras.NAME]`` tables
(``videvent.settings.load_cameras``), each with its own settings.
"""

from __future__ import annotations

import dataclasses
import os
import re
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from .alerts import AlertSink, AlertSinks
from .kinds import AlertFilter
from .live import LiveMonitor, SessionSummary, safe_name
from .output.store import STORE_NAME, store_folder
from .settings import (ALERT_SPECS, CAMERA_NAME, CAMERA_NAME_RULE, CAMERA_SPECS,
                       MAX_CAMERA_NAME, SettingError, Settings, parse_size, shown_camera_name)
from .sources import SourceError
from .sources.live import Backoff


@dataclass
class Camera:
    """One camera of a watch: its name (and result folder's), its source and settings, and
    which of its events its alerts are about (``alert_filter``)."""

    name: str
    source: str | int
    settings: Settings
    alert_filter: AlertFilter = field(default_factory=AlertFilter)
    # Retention: days its events are kept, bytes they may take on disk (None: no limit).
    keep_days: float | None = None
    max_disk: int | None = None


def camera_alert_filter(settings: Settings, alerts: dict) -> AlertFilter:
    """The filter of ``alerts`` (``alert_on``, ``alert_regions``: the options' texts, or None)
    for a camera watching ``settings``' regions: ValueError (one line) for a kind that is
    none, or a region it does not have."""
    return AlertFilter.of(alerts.get("alert_on"), alerts.get("alert_regions"),
                          len(settings.add_region))


def source_camera_name(source: str | int) -> str:
    """A camera's name from its source: a stream's host and port (or its path's last part),
    a camera's number, a file's name; letters, digits, '-' and '_' only."""
    if isinstance(source, int) or source.strip().isdigit():
        return f"camera{int(source)}"
    parts = urlsplit(source)
    # The host and port, never the user name and password before them.
    text = Path(parts.path).stem or parts.netloc.rsplit("@", 1)[-1]
    name = re.sub(r"[^A-Za-z0-9_-]+", "_", text).strip("_")
    return name[:MAX_CAMERA_NAME - 4].rstrip("_") or "camera"    # room for unique()'s -2...


def name_cameras(sources: tuple[str, ...], settings: Settings,
                 configured: dict[str, tuple[str | int, dict]],
                 names: tuple[str, ...] = (), alerts: dict | None = None,
                 retention: dict | None = None) -> list[Camera]:
    """The cameras of a watch: the config file's (their own settings over the global ones),
    then the command line's, the first of them named by ``names`` (``--name``, in order), the
    rest after their source, made unique with -2, -3... ``alerts``: the whole watch's
    ``alert_on`` and ``alert_regions``; ``retention``: its ``keep`` and ``max_disk``
    (``CAMERA_SPECS``); a camera's own in the file win over both. ValueError (one line) for
    more names than sources, a name that cannot name a folder, two cameras given the same
    name, or an alert filter naming a kind or a region that is none."""
    retention = {name: value for name, value in (retention or {}).items() if value is not None}
    if len(names) > len(sources):
        raise ValueError(f"{len(names)} --name for {len(sources)} source(s) on the command "
                         "line: one name per source, in order")
    for name in names:
        if not CAMERA_NAME.fullmatch(name):
            raise ValueError(f"camera name {shown_camera_name(name)}: {CAMERA_NAME_RULE} (it "
                             "names the camera's files, topics and page)")
    given = [*configured, *names]
    clash = next((name for name in given if given.count(name) > 1), None)
    if clash is not None:
        raise ValueError(f"two cameras are named '{clash}': give each its own name")
    cameras, taken = [], set(given)

    def unique(name: str) -> str:
        candidate, number = name, 1
        while candidate in taken:
            number += 1
            candidate = f"{name}-{number}"
        taken.add(candidate)
        return candidate

    alerts = {key: value for key, value in (alerts or {}).items() if value is not None}
    for name, (source, values) in configured.items():
        own_alerts = {**alerts, **{key: values[key] for key in ALERT_SPECS if key in values}}
        kept = {**retention, **{key: values[key] for key in CAMERA_SPECS if key in values}}
        try:
            own = settings.replace(**{key: value for key, value in values.items()
                                      if key not in ALERT_SPECS and key not in CAMERA_SPECS})
            cameras.append(Camera(name, source, own, camera_alert_filter(own, own_alerts),
                                  *_retention(kept)))
        except ValueError as error:
            raise ValueError(f"camera '{name}': {error}") from None
    for index, source in enumerate(sources):
        name = names[index] if index < len(names) else unique(source_camera_name(source))
        cameras.append(Camera(name, source, settings, camera_alert_filter(settings, alerts),
                              *_retention(retention)))
    return cameras


def _retention(values: dict) -> tuple[float | None, int | None]:
    """(days kept, bytes allowed) from ``keep`` and ``max_disk`` as given (checked already)."""
    size = values.get("max_disk")
    return values.get("keep"), None if size is None else parse_size(size)


# Settings that only a file has a use for: where to start in it, a model seeded from frames
# spread over all of it. A stream or a device is watched from now and has no whole.
FILE_ONLY_SETTINGS = ("start_time", "seed")
PAST_FOLDERS = 20        # earlier watches' folders a camera's history is read from, the latest


def without_file_settings(camera: Camera) -> tuple[Camera, list[str]]:
    """``camera``, its settings for a file only (``FILE_ONLY_SETTINGS``) turned off when it is
    a stream or a device, and the options so set aside (``-st/--start-time``), to warn of."""
    from .settings import DEFAULTS, SPECS
    from .sources import is_live_spec

    if not is_live_spec(camera.source):
        return camera, []
    given = [name for name in FILE_ONLY_SETTINGS
             if getattr(camera.settings, name) != DEFAULTS[name]]
    if not given:
        return camera, []
    options = [f"{SPECS[name].short}/" * bool(SPECS[name].short)
               + f"--{name.replace('_', '-')}" for name in given]
    return dataclasses.replace(camera, settings=camera.settings.replace(
        **{name: DEFAULTS[name] for name in given})), options


class CameraNotOpened(ValueError):
    """A camera that could not be opened: a file at once, a stream or a device after its
    ``--max-reconnects`` attempts (one line; ``attempts``: how many were made)."""

    def __init__(self, message: str, attempts: int):
        super().__init__(message)
        self.attempts = attempts


def open_monitor(camera: Camera, out_dir, options: dict, sinks: list, stopping: threading.Event,
                 report, pause=None) -> LiveMonitor | None:
    """``camera``'s monitor, once its source opens; None if ``stopping`` is set first.

    A stream or a device that cannot be opened is tried again with backoff, as a lost one is,
    up to ``options["max_reconnects"]`` times (None: for ever), as Frigate waits for a camera
    down at boot: ``report(line)`` says so once, the ``sinks`` hear "lost" at each attempt,
    and the camera's alerts (``options["alerts"]``: ``AlertSinks``' keywords) say
    ``camera_down`` at once and ``camera_up`` when it opens. A file that cannot be opened is
    an error at once. ``pause(backoff, stopping)``: the wait between attempts (default:
    ``backoff.wait(stopping)``). Raises SettingError, CameraNotOpened (the source's own error
    when it failed once), ValueError (one line)."""
    from .sources import is_live_spec

    options = dict(options)
    alerts = AlertSink(AlertSinks(None, **(options.pop("alerts", None) or {})),
                       camera=options.pop("camera", None), name=camera.name,
                       alert_filter=camera.alert_filter)
    backoff, failures, limit = Backoff(), 0, options.get("max_reconnects")
    try:
        while not stopping.is_set():
            try:
                return LiveMonitor(camera.source, camera.settings, out_dir, sinks=sinks,
                                   name=camera.name, alert_sink=alerts,
                                   keep_days=camera.keep_days, max_disk=camera.max_disk,
                                   **options)
            except SourceError as error:
                if not is_live_spec(camera.source) or (limit is not None and failures >= limit):
                    given_up = CameraNotOpened(
                        str(error) if failures == 0 else
                        f"could not be opened after {failures + 1} attempts: {error}",
                        failures + 1)
                    for sink in sinks if failures else ():   # no longer waited for
                        sink.on_status("finished", {"error": str(given_up)})
                    raise given_up from None
                if failures == 0:
                    report(f"camera {camera.name}: {error}; trying again"
                           + ("" if limit is None else
                              f" (at most {limit} time{'' if limit == 1 else 's'})"))
                for sink in [alerts, *sinks]:
                    sink.on_status("lost", {"error": str(error), "attempts": failures + 1})
                failures += 1
            (pause or (lambda wait, stop: wait.wait(stop)))(backoff, stopping)
    except BaseException:
        alerts.close()
        raise
    alerts.close()
    return None


class CameraWatch(threading.Thread):
    """One camera of several: opens it (``open_monitor``) and runs its monitor until it ends
    or ``stop()``."""

    def __init__(self, camera: Camera, out_dir: Path, monitor_options: dict, sinks: list,
                 report):
        super().__init__(name=f"videvent-camera-{camera.name}", daemon=True)
        self.camera, self.out_dir = camera, out_dir
        self.options, self.sinks, self.report = monitor_options, sinks, report
        self.monitor: LiveMonitor | None = None
        self.summary: SessionSummary | None = None
        self.error: str | None = None
        self._stopping = threading.Event()

    def run(self) -> None:
        try:
            self._watch()
        except Exception as error:  # noqa: BLE001 - one camera's failure ends it, not the rest
            self._failed(f"failed: {type(error).__name__}: {error}")

    def _failed(self, error: str) -> None:
        """Said at once, one line, while the other cameras go on (and again in the watch's
        closing error)."""
        self.error = error.splitlines()[0] if error else error
        self.report(f"camera {self.camera.name}: {self.error}")

    def _watch(self) -> None:
        try:
            monitor = open_monitor(self.camera, self.out_dir,
                                   {**self.options, "camera": self.camera.name}, self.sinks,
                                   self._stopping, self.report)
        except (SettingError, ValueError) as error:
            self._failed(str(error))
            return
        if monitor is None:
            return
        self.monitor = monitor
        if self._stopping.is_set():   # stopped while it was opening: finish at once
            monitor.stop()
        self.summary = monitor.run()
        if self.summary.gave_up:
            self.error = (f"was lost and did not come back after "
                          f"{self.options.get('max_reconnects')} reconnection attempts")

    def stop(self) -> None:
        self._stopping.set()
        if self.monitor is not None:
            self.monitor.stop()


def result_folders(camera: Camera, out_dir: str | os.PathLike | None,
                   several: bool) -> list[Path]:
    """Where earlier watches of ``camera`` wrote their results, oldest first: its folder
    when ``-d`` names one (``out_dir``/NAME with ``several`` cameras), else the dated folders
    a watch makes by default in the current folder (a camera's own, or each of several
    cameras' inside the watch's; the latest ``PAST_FOLDERS``). A file's default folder is
    beside it: not looked for."""
    if out_dir is not None:
        return [Path(out_dir) / camera.name if several else Path(out_dir)]
    if isinstance(camera.source, str) and os.path.isfile(camera.source):
        return []
    dated = r"\d{8}-\d{6}"
    if several:
        pattern = re.compile(f"videvent-watch-{dated}")
        found = [folder / camera.name for folder in Path().glob("videvent-watch-*")
                 if pattern.fullmatch(folder.name)]
    else:
        pattern = re.compile(f"videvent-watch-{re.escape(safe_name(camera.name))}-{dated}")
        found = [folder for folder in Path().glob("videvent-watch-*")
                 if pattern.fullmatch(folder.name)]
    return sorted(folder for folder in found if folder.is_dir())[-PAST_FOLDERS:]


def event_store_path(camera: Camera, out_dir: str | os.PathLike | None,
                     several: bool = False) -> Path:
    """The event store a watch of ``camera`` writes (``output.store``): ``events.db`` in the
    folder given with ``-d`` (``out_dir``: a camera's folder, or ``several`` cameras'
    folder), or in the folder the dated session folders are made in (a file's own folder
    when it is watched alone, else the current one)."""
    if out_dir is not None:
        return store_folder(out_dir) / STORE_NAME
    if not several and isinstance(camera.source, str) and os.path.isfile(camera.source):
        return Path(os.path.dirname(camera.source)) / STORE_NAME
    return Path(STORE_NAME)


def watch_cameras(cameras: list[Camera], out_dir: str | os.PathLike | None,
                  monitor_options: dict, sinks_of, report) -> list[CameraWatch]:
    """Start one ``CameraWatch`` per camera, their results in ``out_dir``/NAME (default:
    ``videvent-watch-<date-time>`` in the current folder), their events in one store (that
    of ``out_dir``, or of the current folder); ``sinks_of(camera)``: the extra sinks of a
    camera; ``report(line)``: says a camera's trouble. Returns them started."""
    root = Path(out_dir if out_dir is not None
                else f"videvent-watch-{time.strftime('%Y%m%d-%H%M%S')}")
    store = store_folder(root) / STORE_NAME
    watches = [CameraWatch(camera, root / camera.name, {"store": store, **monitor_options},
                           sinks_of(camera), report) for camera in cameras]
    for watch in watches:
        watch.start()
    return watches


def wait_for(watches: list[CameraWatch], stopping: threading.Event) -> None:
    """Wait, on the main thread (where signals are handled), until every camera has ended;
    once ``stopping`` is set, stop them all, and leave a camera still opening behind."""
    told = False
    while True:
        if stopping.is_set() and not told:
            told = True
            for watch in watches:
                watch.stop()
        # A camera blocked in opening its source cannot be interrupted: not waited for.
        waited = [watch for watch in watches
                  if watch.is_alive() and not (told and watch.monitor is None)]
        if not waited:
            return
        waited[0].join(timeout=0.2)
