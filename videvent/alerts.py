"""Live alerts: where a watch session tells the world about events as they happen.

Every alert goes to ``alerts.jsonl`` in the result folder; optionally as a JSON line on stdout
(``--json``), to a command (``--on-event``, fields as ``VIDEVENT_*`` environment variables)
and to a webhook (``--webhook``, a JSON POST). Commands and webhooks run on a worker thread
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

from .output.sink import Sink
from .timecode import format_timecode

WEBHOOK_TIMEOUT_S = 2.0
PENDING_DELIVERIES = 64
COMMAND_TIMEOUT_S = 30.0
_STDOUT = threading.Lock()


def check_webhook(url: str) -> str:
    """Refuse, with one line, a webhook that is not an http(s) URL with a host (``file:`` or
    ``ftp:`` would read or send elsewhere what a webhook must only POST)."""
    parts = urlsplit(url)
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        raise ValueError(f"the webhook must be an http:// or https:// URL with a host, "
                         f"got {url!r}")
    return url


class _SameHostRedirects(urllib.request.HTTPRedirectHandler):
    """Follow a redirect only to the same host and port: alerts never go elsewhere."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        if urlsplit(newurl).netloc != urlsplit(req.full_url).netloc:
            raise urllib.error.HTTPError(newurl, code, f"redirect to another host refused "
                                         f"({newurl})", headers, fp)
        return super().redirect_request(req, fp, code, msg, headers, newurl)


_OPENER = urllib.request.build_opener(_SameHostRedirects)


class AlertSinks:
    """Fan an alert (a flat dict with a ``type``) out to the configured receivers."""

    def __init__(self, log_path: Path, *, json_lines: bool = False, command: str | None = None,
                 webhook: str | None = None):
        self._log = open(log_path, "a", encoding="utf-8")
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

    def send(self, alert: dict) -> None:
        line = json.dumps(alert, separators=(",", ":"))
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
    and ``session_end``. ``clip_of(n)``: the path of event n's clip, if one is written;
    ``camera``: the camera's name, given in every alert (a watch of several cameras)."""

    def __init__(self, receivers: AlertSinks, clip_of=None, camera: str | None = None):
        self.receivers, self.clip_of = receivers, clip_of
        self._named = {} if camera is None else {"camera": camera}
        self._open: dict | None = None

    def send(self, kind: str, **fields) -> None:
        self.receivers.send({"type": kind, "wall_time": round(time.time(), 3), **self._named,
                             **fields})

    def on_start(self, info) -> None:
        self.send("session_start", source=info.uri, fps=info.fps)

    def on_frame(self, frame, score, event_number) -> None:
        if event_number is None:
            return
        current, time_s = self._open, score.time_s
        if current is None or current["event"] != event_number:
            self._open = {"event": event_number, "start_time_s": time_s,
                          "peak_score": score.score, "last_update": time_s}
            clip = self.clip_of(event_number) if self.clip_of else None
            self.send("start", event=event_number, frame=score.index, time_s=round(time_s, 3),
                      timecode=format_timecode(time_s), score=round(score.score, 3),
                      clip=None if clip is None else os.path.abspath(clip))
            return
        current["peak_score"] = max(current["peak_score"], score.score)
        if time_s - current["last_update"] >= UPDATE_EVERY_S:
            current["last_update"] = time_s
            self.send("update", event=event_number, frame=score.index, time_s=round(time_s, 3),
                      timecode=format_timecode(time_s), score=round(score.score, 3),
                      peak_score=round(current["peak_score"], 3),
                      duration_s=round(time_s - current["start_time_s"], 3))

    def on_event_end(self, event, files: dict[str, str]) -> None:
        if self._open is not None and self._open["event"] == event.number:
            self._open = None
        # Rounded as the other alerts are: a receiver is shown 5.2 s, not 5.199999999999999.
        fields = {key: round(value, 3) if isinstance(value, float) else value
                  for key, value in event.to_dict().items() if key != "number"}
        self.send("end", event=event.number, **fields,
                  **{name: os.path.abspath(files[name]) if name in files else None
                     for name in ("thumbnail", "clip")})

    def on_status(self, status: str, detail: dict) -> None:
        if status in ("lost", "back"):
            self.send(f"source_{status}", **detail)
        elif status == "finished":
            self.send("session_end", **detail)

    def close(self) -> None:
        self.receivers.close()
