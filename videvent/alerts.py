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
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from pathlib import Path
from urllib.parse import urlsplit

WEBHOOK_TIMEOUT_S = 2.0
PENDING_DELIVERIES = 64


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
            if alert is None:
                return
            if self.command:
                self._run_command(alert)
            if self.webhook:
                self._post(alert)

    def _run_command(self, alert: dict) -> None:
        environment = {**os.environ, **{f"VIDEVENT_{key.upper()}": "" if value is None else
                                        str(value) for key, value in alert.items()}}
        try:
            subprocess.run(self.command, shell=True, env=environment, timeout=30,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            self.delivered += 1
        except (OSError, subprocess.TimeoutExpired):
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
        """Flush the log; give pending deliveries a moment, then leave them."""
        if self._worker is not None:
            try:
                self._queue.put(None, timeout=wait_s)
            except queue.Full:
                pass
            self._worker.join(timeout=wait_s)
        self._log.close()
