"""Live alerts: where a watch session tells the world about events as they happen.

Every alert goes to ``alerts.jsonl`` in the result folder; optionally as a JSON line on stdout
(``--json``), to a command (``--on-event``, fields as ``VIDEVENT_*`` environment variables)
and to a webhook (``--webhook``, a JSON POST). A camera's ``camera_down`` and ``camera_up``
come before its folder exists too (a camera down at start): the receivers are made before
the camera opens, and its ``alerts.jsonl`` gets the lines said until then once it is made. Commands and webhooks run on a worker thread
with a bounded queue: a slow or dead receiver costs dropped alerts, counted, never a stalled
capture, and a failed POST is not retried (no retry storm against a struggling receiver).
"""

from __future__ import annotations

import http.client
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from urllib.parse import urlsplit

from .kinds import AlertFilter, AlertGate
from .output.sink import Sink
from .timecode import format_timecode

WEBHOOK_TIMEOUT_S = 2.0
PENDING_DELIVERIES = 64
COMMAND_TIMEOUT_S = 30.0
PENDING_LOG_LINES = 100       # alerts kept for alerts.jsonl while the camera has no folder
_STDOUT = threading.Lock()


def check_webhook(url: str) -> str:
    """Refuse, with one line, a webhook that is not an http(s) URL with a host (``file:`` or
    ``ftp:`` would read or send elsewhere what a webhook must only POST)."""
    parts = urlsplit(url)
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        raise ValueError(f"the webhook must be an http:// or https:// URL with a host, "
                         f"got {url!r}")
    return url


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    """Follow no redirect: urllib would turn the POST of a 301, 302 or 303 into a GET without
    the alert (lost, yet counted delivered), and a redirect elsewhere would send it to another
    host. A 3xx answer is a failed delivery, as any other HTTP error."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        raise urllib.error.HTTPError(req.full_url, code, f"a webhook's redirect is not "
                                     f"followed ({newurl})", headers, fp)


_OPENER = urllib.request.build_opener(_NoRedirects)


class AlertSinks:
    """Fan an alert (a flat dict with a ``type``) out to the configured receivers."""

    def __init__(self, log_path: Path | None, *, json_lines: bool = False,
                 command: str | None = None, webhook: str | None = None):
        """``log_path``: the ``alerts.jsonl`` to append to; None until ``log_to`` names it
        (the lines sent meanwhile, at most ``PENDING_LOG_LINES``, are kept for it)."""
        self._log = None if log_path is None else open(log_path, "a", encoding="utf-8")
        self._unlogged: list[str] = []
        self.json_lines = json_lines
        self.command = command
        self.webhook = None if webhook is None else check_webhook(webhook)
        self.delivered = self.dropped = self.failed = 0
        self._queue: queue.Queue = queue.Queue(maxsize=PENDING_DELIVERIES)
        self._groups: list[int] = []   # process groups of the hooks started, maybe running
        self._closing = False
        self._worker = None
        if command or webhook:
            self._worker = threading.Thread(target=self._deliver_all, name="videvent-alerts",
                                            daemon=True)
            self._worker.start()

    def log_to(self, log_path: Path) -> None:
        """Append to ``log_path`` from now on, the lines sent before first."""
        self._log = open(log_path, "a", encoding="utf-8")
        self._log.writelines(line + "\n" for line in self._unlogged)
        self._log.flush()
        self._unlogged = []

    def send(self, alert: dict) -> None:
        line = json.dumps(alert, separators=(",", ":"))
        if self._log is None:
            self._unlogged = [*self._unlogged[-(PENDING_LOG_LINES - 1):], line]
        else:
            self._log.write(line + "\n")
            self._log.flush()
        if self.json_lines:
            with _STDOUT:   # whole lines, when several cameras' sessions print
                sys.stdout.write(line + "\n")
                sys.stdout.flush()
        if self._worker is not None:
            try:
                self._queue.put_nowait(alert)
            except queue.Full:
                self.dropped += 1

    def _deliver_all(self) -> None:
        while True:
            alert = self._queue.get()
            if alert is None or self._closing:
                return
            if self.command:
                self._run_command(alert)
            if self.webhook:
                self._post(alert)

    def _run_command(self, alert: dict) -> None:
        environment = {**os.environ, **{f"VIDEVENT_{key.upper()}": "" if value is None else
                                        str(value) for key, value in alert.items()}}
        try:
            # A session of its own: the hook and whatever it starts form one process group,
            # which can be ended as a whole (killing the shell alone would leave its children).
            process = subprocess.Popen(self.command, shell=True, env=environment,
                                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                       start_new_session=True)
        except OSError:
            self.failed += 1
            return
        self._groups = [g for g in self._groups if _group_alive(g)] + [process.pid]
        try:
            process.wait(timeout=COMMAND_TIMEOUT_S)
            self.delivered += 1
        except subprocess.TimeoutExpired:
            _end_group(process.pid)
            process.wait()
            self.failed += 1

    def _post(self, alert: dict) -> None:
        request = urllib.request.Request(self.webhook, data=json.dumps(alert).encode(),
                                         headers={"Content-Type": "application/json"},
                                         method="POST")
        try:
            with _OPENER.open(request, timeout=WEBHOOK_TIMEOUT_S) as response:
                response.read(1024)
            self.delivered += 1
        # Refused, timed out, an HTTP error, or an answer that is not HTTP at all: counted,
        # not retried, and the thread goes on to the next alert.
        except (OSError, http.client.HTTPException, ValueError):
            self.failed += 1

    def close(self, wait_s: float = 3.0) -> None:
        """Flush the log; give pending deliveries a moment, then leave them. No hook outlives
        the session: the process groups of the hooks still running are ended."""
        if self._worker is not None:
            try:
                self._queue.put(None, timeout=wait_s)
            except queue.Full:
                pass
            self._worker.join(timeout=wait_s)
            self._closing = True
            for group in self._groups:
                _end_group(group)
            self._worker.join(timeout=wait_s)
        if self._log is not None:
            self._log.close()


def _group_alive(group: int) -> bool:
    try:
        os.killpg(group, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def _end_group(group: int, grace_s: float = 1.0) -> None:
    """SIGTERM the process group, then SIGKILL what is left of it after ``grace_s``."""
    try:
        os.killpg(group, signal.SIGTERM)
    except (ProcessLookupError, PermissionError):
        return
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline and _group_alive(group):
        time.sleep(0.05)
    try:
        os.killpg(group, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


UPDATE_EVERY_S = 1.0          # "update" alerts while an event goes on


class AlertSink(Sink):
    """A watch session's alerts, from what its session tells: ``session_start``, an event's
    ``start``, ``update`` (at most one a second) and ``end``, ``source_lost``/``source_back``
    and ``session_end``; and, from what the camera's opening and its session tell, a
    ``camera_down`` when the camera goes (lost, or not opened at the start: ``error``,
    ``attempts``) and a ``camera_up`` when it is back (``down_s``: how long it was away), each
    once a change and naming the camera. ``clip_of(n)``: the path of event n's clip, if one
    is written; ``camera``: the camera's name, given in every alert (a watch of several
    cameras); ``name``: the camera's name in ``camera_down``/``camera_up`` (default:
    ``camera``). ``alert_filter``: the events alerted (``videvent.kinds.AlertGate`` says when
    an event's alerts begin and end); the session's and the camera's news always are."""

    def __init__(self, receivers: AlertSinks, clip_of=None, camera: str | None = None,
                 name: str | None = None, alert_filter: AlertFilter | None = None):
        self.receivers, self.clip_of = receivers, clip_of
        self._named = {} if camera is None else {"camera": camera}
        self.name = name if name is not None else camera
        self._gate = AlertGate(alert_filter)
        self._open: dict | None = None
        self._event = None                         # the open event, as it stands so far
        self._down_since: float | None = None      # monotonic time it went down, while down

    def send(self, alert_type: str, /, **fields) -> None:
        # Positional only: an event's own fields include its ``kind``.
        self.receivers.send({"type": alert_type, "wall_time": round(time.time(), 3), **self._named,
                             **fields})

    def on_start(self, info) -> None:
        self.send("session_start", source=info.uri, fps=info.fps)

    def on_event_start(self, event) -> None:
        self._event = event

    def on_event_update(self, event) -> None:
        self._event = event

    def on_frame(self, frame, score, event_number) -> None:
        if event_number is None:
            return
        current, time_s, event = self._open, score.time_s, self._event
        if current is None or current["event"] != event_number:
            current = self._open = {"event": event_number, "start_time_s": time_s,
                                    "peak_score": score.score, "last_update": time_s,
                                    "begun": False}
        else:
            current["peak_score"] = max(current["peak_score"], score.score)
        if event is None or event.number != event_number:
            return
        if not current["begun"]:
            # Its alerts begin once what it is so far passes the filter (at once without one).
            if self._gate.open(event) == "start":
                current["begun"], current["last_update"] = True, time_s
                self._send_start(event, score.index, time_s, score.score)
            return
        if time_s - current["last_update"] >= UPDATE_EVERY_S:
            current["last_update"] = time_s
            self.send("update", event=event_number, frame=score.index, time_s=round(time_s, 3),
                      timecode=format_timecode(time_s), score=round(score.score, 3),
                      peak_score=round(current["peak_score"], 3),
                      duration_s=round(time_s - current["start_time_s"], 3),
                      **self._place(event))

    @staticmethod
    def _place(event) -> dict:
        """What and where the event is so far: its kind, box and regions."""
        return {"kind": event.kind, "box": event.box, "regions": list(event.regions or ())}

    def _send_start(self, event, frame: int, time_s: float, score: float) -> None:
        clip = self.clip_of(event.number) if self.clip_of else None
        self.send("start", event=event.number, frame=frame, time_s=round(time_s, 3),
                  timecode=format_timecode(time_s), score=round(score, 3), **self._place(event),
                  clip=None if clip is None else os.path.abspath(clip))

    def on_event_end(self, event, files: dict[str, str]) -> None:
        if self._open is not None and self._open["event"] == event.number:
            self._open = None
        if self._event is not None and self._event.number == event.number:
            self._event = None
        said = self._gate.end(event)
        if said is None:
            return                                 # never passed the filter: no alert
        if said == "start and end":                # passed only now (its kind read at the end)
            self._send_start(event, event.start_frame, event.start_time_s, event.peak_score)
        # Rounded as the other alerts are: a receiver is shown 5.2 s, not 5.199999999999999.
        fields = {key: round(value, 3) if isinstance(value, float) else value
                  for key, value in event.to_dict().items() if key != "number"}
        self.send("end", event=event.number, **fields,
                  **{name: os.path.abspath(files[name]) if name in files else None
                     for name in ("thumbnail", "clip")})

    def on_status(self, status: str, detail: dict) -> None:
        # A loss in the session says where in it ("frame"); one at the start, while the camera
        # is tried again, is only the camera's news.
        if status == "back" or (status == "lost" and "frame" in detail):
            self.send(f"source_{status}", **detail)
        elif status == "finished":
            self.send("session_end", **detail)
        if status == "lost" and self._down_since is None:
            self._down_since = time.monotonic()
            self.send("camera_down", camera=self.name,
                      **{key: detail[key] for key in ("error", "attempts", "frame", "time_s")
                         if key in detail})
        elif status in ("connected", "back") and self._down_since is not None:
            down_s = time.monotonic() - self._down_since
            self._down_since = None
            self.send("camera_up", camera=self.name, down_s=round(down_s, 3))

    def close(self) -> None:
        self.receivers.close()
