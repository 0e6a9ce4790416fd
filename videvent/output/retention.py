"""Retention: a watch keeps each camera's events for ``keep_days`` and within ``max_disk``
bytes, the oldest going first, and removes only what it wrote.

What counts toward a camera's disk: its events' thumbnails and clips, over every session (their
sizes as the event store recorded them when they were written), the logs of its current
result folder (``scores.csv``, ``events.json``, ``events.jsonl`` and its rotated parts,
``alerts.jsonl``) and the event store itself. While they exceed ``max_disk``, while an event
is older than ``keep_days``, or while the file system has less free space than a reserve (so
that a clip being written does not meet a full disk), the camera's oldest event goes: its clip
and thumbnail (only the files the store names, inside its own result folder, and not
rewritten since by a later session into that folder), then its row in the store. An events file rotated away
(``events.jsonl.N``) goes once none of its events is kept. Nothing else is ever removed: a
file of the user's in the folder is in no event's record.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

from .sink import Sink
from .store import EventStore, StoredEvent, utc_text

EVENTS_LOG = "events.jsonl"
LOG_NAMES = ("scores.csv", "events.json", "alerts.jsonl")
KEEP_CHECK_EVERY_S = 60.0        # events past keep_days are looked for this often at least
USAGE_EVERY_S = 5.0              # the disk used, as the dashboard shows it, recounted
# The free space kept on the file system when retention is on: room for the clips being
# written (a minute of 720p H.264 is about 20 MB); on a small one, a share of it.
FREE_RESERVE_BYTES = 64 * 1000 * 1000
FREE_RESERVE_SHARE = 0.05
MTIME_SLACK_S = 120.0            # a file written this long after its event ended is another's


class Retention(Sink):
    """The retention of one camera's events in ``store``, its current result folder being
    ``folder``; told after the store (``StoreSink``), so the event just ended counts.
    ``report(line)``: a failure to remove, said once."""

    def __init__(self, store: EventStore, folder: str | os.PathLike, *,
                 keep_days: float | None = None, max_disk: int | None = None,
                 report=None):
        self.store, self.folder = store, Path(folder)
        self.keep_days, self.max_disk = keep_days, max_disk
        self._report = report or (lambda line: None)
        self._reported: set[str] = set()
        self.camera = ""
        self.removed = 0
        self._last_keep = self._last_usage = 0.0
        self._usage: dict = {}

    # -- told by the session ----------------------------------------------------------------
    def on_start(self, info) -> None:
        self.camera = info.name
        self.enforce()

    def on_event_start(self, event) -> None:
        self._safely(self._keep_free)

    def on_event_end(self, event, files: dict[str, str]) -> None:
        self.enforce()

    def on_disk_full(self) -> None:
        """A write met a full disk: space freed by the same rule, for what comes next."""
        self._safely(self._keep_free)
        self._count()

    def on_stats(self, stats: dict) -> None:
        """About once a second (the monitor's tick): the old events, now and then, and the
        disk used recounted."""
        now = time.monotonic()
        if now - self._last_keep >= KEEP_CHECK_EVERY_S:
            self.enforce()
        elif now - self._last_usage >= USAGE_EVERY_S:
            self._safely(self._keep_free)
            self._count()

    def usage(self) -> dict:
        """``disk_bytes`` (what counts toward ``max_disk``), ``disk_cap`` (``max_disk``, or
        None) and ``oldest_kept`` (when the oldest event kept started, UTC; None: none), as
        last counted (every few seconds and at each event's end)."""
        return dict(self._usage)

    # -- the rule ---------------------------------------------------------------------------
    def enforce(self) -> None:
        """Remove the oldest events while the rule says so; a failure is said once and the
        watch goes on (retention is tried again at the next event)."""
        self._last_keep = time.monotonic()
        self._safely(self._enforce)
        self._count()

    def _enforce(self) -> None:
        if self.keep_days is not None:
            limit = time.time() - self.keep_days * 86_400
            while (event := self.store.oldest(self.camera, before=limit)) is not None:
                self._remove(event)
        if self.max_disk is not None:
            while self.used() > self.max_disk:
                event = self.store.oldest(self.camera)
                if event is None:
                    break                       # the logs alone: nothing of events to free
                self._remove(event)
        self._keep_free()

    def _keep_free(self) -> None:
        """Free space on the file system kept above ``FREE_RESERVE_BYTES`` (or
        ``FREE_RESERVE_SHARE`` of a smaller one), and above twice the largest event kept
        (only with a retention asked: a watch without one never removes anything)."""
        if self.keep_days is None and self.max_disk is None:
            return
        disk = shutil.disk_usage(self.folder)
        # Room for the next clip at least: twice the largest event kept.
        reserve = max(min(FREE_RESERVE_BYTES, disk.total * FREE_RESERVE_SHARE),
                      2 * self.store.largest(self.camera))
        while shutil.disk_usage(self.folder).free < reserve:
            event = self.store.oldest(self.camera)
            if event is None:
                break
            self._remove(event)

    def used(self) -> int:
        """Bytes of the camera's events' files, of its current folder's logs and of the
        event store (all of it, though other cameras may share it: never less than used)."""
        events, _ = self.store.usage(self.camera)
        return (events + sum(_size(path) for path in self._logs(self.folder))
                + self.store.size())

    def _count(self) -> None:
        self._last_usage = time.monotonic()
        try:
            _, oldest = self.store.usage(self.camera)
            self._usage = {"disk_bytes": self.used(), "disk_cap": self.max_disk,
                           "oldest_kept": None if oldest is None else utc_text(oldest)}
        except OSError:
            pass                               # said by the removal, when it matters

    def _remove(self, event: StoredEvent) -> None:
        """``event``'s files, then its row (a crash between the two leaves a row whose files
        are gone, never a file no row names), then its folder's rotated events files that
        no longer hold a kept event."""
        for path in (event.clip, event.thumbnail):
            if path is not None and self._written_for(event, path):
                path.unlink(missing_ok=True)
        self.store.remove(event)
        self.removed += 1
        self._drop_rotated_logs(event.folder)

    def _written_for(self, event: StoredEvent, path: Path) -> bool:
        """Whether ``path`` is still the file written for ``event``: a regular file inside its
        result folder, not named by another event, not rewritten since it ended."""
        try:
            if path.is_symlink() or not path.is_file():
                return False
            if not path.resolve().is_relative_to(event.folder.resolve()):
                return False
            if path.stat().st_mtime > event.end_ts + MTIME_SLACK_S:
                return False
        except OSError:
            return False
        return not self.store.shared(event, path)

    def _drop_rotated_logs(self, folder: Path) -> None:
        """The oldest rotated parts of ``folder``'s events file none of whose events is kept
        (events go oldest first: a later part empties only after the earlier ones)."""
        for path in rotated_logs(folder):
            keys = []
            try:
                for line in path.read_text(encoding="utf-8").splitlines():
                    record = json.loads(line)
                    keys.append((record.get("session_started"), record.get("number")))
            except (OSError, ValueError, AttributeError):
                return                          # not one it can read: left alone
            if self.store.kept(self.camera, keys):
                return
            path.unlink(missing_ok=True)

    @staticmethod
    def _logs(folder: Path) -> list[Path]:
        return [folder / name for name in (*LOG_NAMES, EVENTS_LOG)] + rotated_logs(folder)

    def _safely(self, action) -> None:
        try:
            action()
        except OSError as error:
            reason = error.strerror or str(error)
            if reason not in self._reported:
                self._reported.add(reason)
                where = error.filename or self.folder
                self._report(f"retention cannot remove what it should in '{where}': "
                             f"{reason}; watching on")


def rotated_logs(folder: Path) -> list[Path]:
    """The rotated parts of ``folder``'s ``events.jsonl`` (``events.jsonl.1``, ``.2``...),
    oldest first."""
    try:
        found = [path for path in folder.glob(f"{EVENTS_LOG}.*")
                 if path.suffix[1:].isdigit() and path.is_file()]
    except OSError:
        return []
    return sorted(found, key=lambda path: int(path.suffix[1:]))


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0
