"""The progress of ``run`` and ``export`` on stderr."""

from __future__ import annotations

import os
import sys
import time

import click


class Progress:
    """Progress on stderr: a status line with the percentage, frames per second and time left
    on a terminal, redrawn every 0.2 s; when stderr is a file or a pipe (a log), one line
    every 5 s. ``VIDEVENT_PROGRESS_SECONDS`` sets the interval. Nothing when quiet.

    Nothing is printed before the first frame is done, so an error found before any work
    starts is the only thing printed.
    """

    TERMINAL_EVERY_S, LOG_EVERY_S = 0.2, 5.0

    def __init__(self, quiet: bool):
        self.enabled = not quiet
        self.terminal = sys.stderr.isatty()
        self.every_s = float(os.environ.get("VIDEVENT_PROGRESS_SECONDS") or (
            self.TERMINAL_EVERY_S if self.terminal else self.LOG_EVERY_S))
        self._label, self._total, self._done = "", None, 0
        self._started = self._shown = None
        self._lines = 0

    def start(self, label: str, total: int | None) -> None:
        self.finish()
        self._label, self._total, self._done = label, total or None, 0
        self._started = self._shown = None
        self._lines = 0

    def update(self, n: int) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if self._started is None:
            self._started = self._shown = now
        self._done += n
        if now - self._shown >= self.every_s:
            self._shown = now
            self._show(now)

    def _line(self, now: float) -> str:
        rate = self._done / max(now - self._started, 1e-9)
        if self._total:
            text = (f"{self._label}: {self._done}/{self._total} frames "
                    f"({100 * self._done / self._total:.0f}%), {rate:.0f} frames/s")
            left = max(self._total - self._done, 0) / rate if rate else 0
            return text + f", {left:.0f} s left"
        return f"{self._label}: {self._done} frames, {rate:.0f} frames/s"

    def _show(self, now: float) -> None:
        self._lines += 1
        if self.terminal:
            click.echo(f"\r{self._line(now)}\x1b[K", err=True, nl=False)
        else:
            click.echo(f"videvent: {self._line(now)}", err=True)

    def finish(self) -> None:
        # The last count, if progress was shown at all (a short run shows none).
        if self.enabled and self._lines:
            self._show(time.monotonic())
            if self.terminal:
                click.echo("", err=True)
        self._started, self._lines = None, 0
