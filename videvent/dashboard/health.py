"""What a service's monitor asks the dashboard's server: ``/healthz`` and ``/metrics``.

``health`` says whether every camera gives pictures: a camera is up while its status is
``connected`` or ``back`` and its latest picture is at most ``SILENT_AFTER_S`` old (so a
camera whose stream went silent is down at once, before the session calls it stalled); one
lost, stalled, finished, or not opened yet is down. ``metrics_text`` renders the cameras'
figures in Prometheus' text format (version 0.0.4): frames, dropped frames, frame rate,
latency, events by kind, up or down, the disk their result folders use, and the process's own
gauges (the MQTT queue). The disk is measured by walking each folder at most once every
``DISK_EVERY_S`` (on a thread of the caller's choosing: ``disk_used`` may take a while on a
folder of months of clips).
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Callable, Iterable

from .._version import __version__
from ..choices import KINDS

UP_STATUSES = ("connected", "back")
SILENT_AFTER_S = 5.0          # a camera silent this long is down (as a live source is stalled)
DISK_EVERY_S = 30.0           # a result folder's size is measured again after this, at most

Gauge = tuple[str, Callable[[], float | None]]     # its help, and how to read it


def camera_up(camera, now: float | None = None) -> bool:
    """Whether ``camera`` (a ``CameraState``) gives pictures now."""
    now = time.monotonic() if now is None else now
    with camera.lock:
        status, last = camera.status, camera.last_frame_at
    if status not in UP_STATUSES:
        return False
    return last is None or now - last <= SILENT_AFTER_S


def health(cameras: Iterable) -> tuple[bool, dict]:
    """Whether every camera is up, and what ``/healthz`` answers: ``status`` (``ok`` or
    ``unhealthy``) and each camera's name, whether it is up, its status and since when (Unix
    time)."""
    now = time.monotonic()
    shown = []
    for camera in cameras:
        up = camera_up(camera, now)
        with camera.lock:
            last = camera.last_frame_at
            shown.append({"name": camera.name, "up": up, "status": camera.status,
                          "since": round(camera.status_since, 3),
                          "last_picture_s": None if last is None else round(now - last, 1)})
    healthy = bool(shown) and all(camera["up"] for camera in shown)
    return healthy, {"status": "ok" if healthy else "unhealthy", "cameras": shown}


def folder_bytes(folder: Path) -> int:
    """The bytes ``folder``'s files take on disk (their blocks, as ``du`` counts them);
    symbolic links are not followed, and a file gone meanwhile counts nothing."""
    total = 0
    for root, _, names in os.walk(folder):
        for name in names:
            try:
                status = os.lstat(os.path.join(root, name))
            except OSError:
                continue
            total += getattr(status, "st_blocks", 0) * 512 or status.st_size
    return total


class DiskUse:
    """Each result folder's size, measured again at most every ``DISK_EVERY_S``."""

    def __init__(self, every_s: float = DISK_EVERY_S):
        self.every_s = every_s
        self._measured: dict[Path, tuple[float, int]] = {}   # folder -> (when, bytes)

    def of(self, folder: Path | None) -> int | None:
        if folder is None:
            return None
        now = time.monotonic()
        known = self._measured.get(folder)
        if known is None or now - known[0] >= self.every_s:
            known = self._measured[folder] = (now, folder_bytes(folder))
        return known[1]


def _label(value: str) -> str:
    return str(value).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _number(value: float) -> str:
    return repr(float(value)) if isinstance(value, float) else str(int(value))


def metrics_text(cameras: list, disk: dict[int, int | None], gauges: dict[str, Gauge]) -> str:
    """The Prometheus text of ``cameras`` (``CameraState``), the bytes of each one's result
    folder (``disk``: camera index -> bytes, None when unknown) and the process's ``gauges``
    (name -> (help, read()); a reading of None is left out)."""
    now = time.monotonic()
    rows: dict[str, list[str]] = {}
    kinds_and_help = {
        "videvent_camera_up": ("gauge", "1 while the camera gives pictures, 0 while it is "
                                        "down, stalled, finished or not opened yet."),
        "videvent_frames_total": ("counter", "Frames scored since the watch started."),
        "videvent_dropped_frames_total": ("counter", "Frames dropped because scoring fell "
                                                     "behind the camera."),
        "videvent_frames_per_second": ("gauge", "Frames scored a second, lately."),
        "videvent_latency_seconds": ("gauge", "Capture-to-score latency, the median of the "
                                              "latest frames."),
        "videvent_events_total": ("counter", "Events ended since the watch started, by kind."),
        "videvent_disk_used_bytes": ("gauge", "Disk used by the camera's result folder."),
    }
    for camera in cameras:
        up = camera_up(camera, now)
        with camera.lock:
            frames, stats = camera.frames, dict(camera.stats)
            by_kind = dict(camera.events_by_kind)
        name = f'camera="{_label(camera.name)}"'
        rows.setdefault("videvent_camera_up", []).append(f"{{{name}}} {int(up)}")
        rows.setdefault("videvent_frames_total", []).append(f"{{{name}}} {frames}")
        figures = (("videvent_dropped_frames_total", stats.get("dropped", 0), 1),
                   ("videvent_frames_per_second", stats.get("fps"), 1),
                   ("videvent_latency_seconds", stats.get("latency_ms"), 1000))
        for metric, value, per in figures:
            if isinstance(value, (int, float)):
                rows.setdefault(metric, []).append(
                    f"{{{name}}} {_number(value / per if per != 1 else value)}")
        # Every kind, 0 included: a rate over a counter that appears late misses its start.
        for kind in (*KINDS, *sorted(set(by_kind) - set(KINDS))):
            rows.setdefault("videvent_events_total", []).append(
                f'{{{name},kind="{_label(kind)}"}} {by_kind.get(kind, 0)}')
        used = disk.get(camera.index)
        if used is not None:
            rows.setdefault("videvent_disk_used_bytes", []).append(f"{{{name}}} {used}")
    lines = ["# HELP videvent_build_info The version of videvent serving.",
             "# TYPE videvent_build_info gauge",
             f'videvent_build_info{{version="{_label(__version__)}"}} 1']
    for metric, (kind, help_text) in kinds_and_help.items():
        if metric in rows:
            lines += [f"# HELP {metric} {help_text}", f"# TYPE {metric} {kind}"]
            lines += [metric + row for row in rows[metric]]
    for metric, (help_text, read) in gauges.items():
        value = read()
        if value is not None:
            lines += [f"# HELP {metric} {help_text}", f"# TYPE {metric} gauge",
                      f"{metric} {_number(value)}"]
    return "\n".join(lines) + "\n"
