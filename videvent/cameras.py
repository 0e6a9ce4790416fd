"""Several cameras in one ``watch``: each camera opened and watched on a thread of its own.

Every camera has its own capture thread, detector, session and result folder (a
``LiveMonitor``), so a slow or dead camera never holds up the others: one that cannot be
opened at the start is tried again with the backoff a lost source gets, while the others
already run; one lost later reconnects on its own. The cameras come from the command line
(``watch SRC1 SRC2``) or from a config file's ``[cameras.NAME]`` tables
(``videvent.settings.load_cameras``), each with its own settings.
"""

from __future__ import annotations

import os
import re
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from .live import LiveMonitor, SessionSummary
from .settings import CAMERA_NAME, SettingError, Settings
from .sources import SourceError
from .sources.live import Backoff


@dataclass
class Camera:
    """One camera of a watch: its name (and result folder's), its source and settings."""

    name: str
    source: str | int
    settings: Settings


def source_camera_name(source: str | int) -> str:
    """A camera's name from its source: a stream's host and port (or its path's last part),
    a camera's number, a file's name; letters, digits, '-' and '_' only."""
    if isinstance(source, int) or source.strip().isdigit():
        return f"camera{int(source)}"
    parts = urlsplit(source)
    # The host and port, never the user name and password before them.
    text = Path(parts.path).stem or parts.netloc.rsplit("@", 1)[-1]
    return re.sub(r"[^A-Za-z0-9_-]+", "_", text).strip("_") or "camera"


def name_cameras(sources: tuple[str, ...], settings: Settings,
                 configured: dict[str, tuple[str | int, dict]],
                 names: tuple[str, ...] = ()) -> list[Camera]:
    """The cameras of a watch: the config file's (their own settings over the global ones),
    then the command line's, the first of them named by ``names`` (``--name``, in order), the
    rest after their source, made unique with -2, -3... ValueError (one line) for more names
    than sources, a name that cannot name a folder, or two cameras given the same name."""
    if len(names) > len(sources):
        raise ValueError(f"{len(names)} --name for {len(sources)} source(s) on the command "
                         "line: one name per source, in order")
    for name in names:
        if not CAMERA_NAME.fullmatch(name):
            raise ValueError(f"camera name {name!r}: letters, digits, '-' and '_' only (it "
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

    for name, (source, values) in configured.items():
        try:
            own = settings.replace(**values)
        except ValueError as error:
            raise ValueError(f"camera '{name}': {error}") from None
        cameras.append(Camera(name, source, own))
    for index, source in enumerate(sources):
        name = names[index] if index < len(names) else unique(source_camera_name(source))
        cameras.append(Camera(name, source, settings))
    return cameras


class CameraWatch(threading.Thread):
    """One camera of several: opens it (again, with backoff, while it cannot be opened, up to
    ``max_reconnects`` times) and runs its monitor until it ends or ``stop()``."""

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
            self.error = f"failed: {type(error).__name__}: {error}"

    def _watch(self) -> None:
        backoff, failures = Backoff(), 0
        limit = self.options.get("max_reconnects")
        while not self._stopping.is_set():
            try:
                monitor = LiveMonitor(self.camera.source, self.camera.settings, self.out_dir,
                                      sinks=self.sinks, camera=self.camera.name,
                                      name=self.camera.name,
                                      **self.options)
            except SettingError as error:
                self.error = str(error)
                return
            except SourceError as error:
                if failures == 0:
                    self.report(f"camera {self.camera.name}: {error}; trying again")
                for sink in self.sinks:
                    sink.on_status("lost", {"error": str(error), "attempts": failures + 1})
                if limit is not None and failures >= limit:
                    self.error = (f"could not be opened after {failures + 1} attempt"
                                  f"{'' if failures == 0 else 's'}: {error}")
                    return
                failures += 1
                backoff.wait(self._stopping)
                continue
            except ValueError as error:
                self.error = str(error).splitlines()[0]
                return
            self.monitor = monitor
            if self._stopping.is_set():   # stopped while it was opening: finish at once
                monitor.stop()
            self.summary = monitor.run()
            if self.summary.gave_up:
                self.error = (f"was lost and did not come back after {limit} reconnection "
                              f"attempts")
            return

    def stop(self) -> None:
        self._stopping.set()
        if self.monitor is not None:
            self.monitor.stop()


def watch_cameras(cameras: list[Camera], out_dir: str | os.PathLike | None,
                  monitor_options: dict, sinks_of, report) -> list[CameraWatch]:
    """Start one ``CameraWatch`` per camera, their results in ``out_dir``/NAME (default:
    ``videvent-watch-<date-time>`` in the current folder); ``sinks_of(camera)``: the extra
    sinks of a camera; ``report(line)``: says a camera's trouble. Returns them started."""
    root = Path(out_dir if out_dir is not None
                else f"videvent-watch-{time.strftime('%Y%m%d-%H%M%S')}")
    watches = [CameraWatch(camera, root / camera.name, monitor_options, sinks_of(camera),
                           report) for camera in cameras]
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
