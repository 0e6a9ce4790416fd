"""The event store: every event a watch saw, in one SQLite file that outlives its sessions.

A watch writes one result folder per camera and session; the store, ``events.db``, lives in
the folder that outlives them (``store_folder``) and gets each event as it ends, one committed
transaction per event, beside the folder's ``events.jsonl`` (which stays the export). It is
the standard library's ``sqlite3`` in WAL mode with full synchronisation: a process killed at
any moment (SIGKILL, a power cut) loses no event whose transaction committed, and several
watches (several processes, several cameras) may write into one store at once.

Each row holds the camera, the event's start and end on the wall clock (UTC) and in seconds
of its stream, its kind, box and regions, its peak, its files (relative to the store's
folder, so the whole tree can be moved) and the ``events.jsonl`` line itself; it is indexed
by time, by camera and time and by kind and time. ``EventStore.events`` answers
``videvent events``; the dashboard reads a camera's history from it.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import threading
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from .sink import Sink

STORE_NAME = "events.db"
# Says that an SQLite file is videvent's store (PRAGMA application_id, 'vdev'): a user's own
# database of the same name is never written into.
APPLICATION_ID = 0x76646576
SCHEMA_VERSION = 1
BUSY_TIMEOUT_MS = 10_000      # another watch writing into the same store: wait this long
WAL_LIMIT_BYTES = 256 * 1024  # the write-ahead log checkpointed and cut back at this size
# A session folder a watch names by default (videvent-watch-[NAME-]YYYYmmdd-HHMMSS): one per
# session, so the store goes in the folder it is made in.
DATED_FOLDER = re.compile(r"videvent-watch-(?:.+-)?\d{8}-\d{6}")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS events (
    id INTEGER PRIMARY KEY,
    camera TEXT NOT NULL,
    session_started TEXT NOT NULL,
    number INTEGER NOT NULL,
    start_utc TEXT NOT NULL,
    end_utc TEXT NOT NULL,
    start_ts REAL NOT NULL,
    end_ts REAL NOT NULL,
    start_time_s REAL NOT NULL,
    end_time_s REAL NOT NULL,
    kind TEXT,
    box TEXT,
    regions TEXT NOT NULL DEFAULT '[]',
    peak_score REAL,
    peak_frame INTEGER,
    folder TEXT NOT NULL,
    thumbnail TEXT,
    clip TEXT,
    bytes INTEGER NOT NULL DEFAULT 0,
    record TEXT NOT NULL,
    UNIQUE (camera, session_started, number)
);
CREATE INDEX IF NOT EXISTS events_by_time ON events (start_ts);
CREATE INDEX IF NOT EXISTS events_by_camera ON events (camera, start_ts);
CREATE INDEX IF NOT EXISTS events_by_kind ON events (kind, start_ts);
"""


_OPENING = threading.Lock()
OPEN_ATTEMPTS = 20
OPEN_RETRY_S = 0.1
YOUNG_S = 5.0                 # a store this new may be under construction by another watch


def _young(path: Path) -> bool:
    try:
        return time.time() - path.stat().st_mtime < YOUNG_S
    except OSError:
        return False


class StoreError(ValueError):
    """A store that cannot be opened or read: one line, naming the file."""


_NOT_OURS = ("'{}' exists and is not videvent's event store; move it, or give the watch "
             "another folder (-d)")


def check_store(path: str | os.PathLike) -> None:
    """StoreError (one line) when ``path`` exists and is not a store videvent can write;
    nothing is created or changed (a watch checks before it makes its folder)."""
    if Path(path).is_file():
        EventStore(path, create=False).close()


def store_folder(out_dir: str | os.PathLike) -> Path:
    """Where the store of a watch whose (camera's, or cameras') result folder is ``out_dir``
    lives: beside the dated folders a watch makes by default, one per session (in the folder
    they are made in), else in the folder given (``-d``), which every session reuses."""
    folder = Path(out_dir)
    if DATED_FOLDER.fullmatch(folder.name):
        return folder.parent
    return folder


def find_store(place: str | os.PathLike) -> Path:
    """The store a person means by ``place``: the file itself, or ``events.db`` in the
    folder, in the folder above it (a session's folder) or in the one above that (a camera's
    folder inside a watch's). StoreError, one line, when there is none."""
    place = Path(place)
    if place.is_file():
        return place
    if not place.is_dir():
        raise StoreError(f"'{place}' is neither a folder nor an event store")
    for folder in (place, place.parent, place.parent.parent):
        if (folder / STORE_NAME).is_file():
            return folder / STORE_NAME
    raise StoreError(f"no event store ({STORE_NAME}) in '{place}' or the two folders above "
                     f"it: `videvent watch` writes one beside its result folders")


def utc_text(timestamp: float) -> str:
    """A Unix time as ISO 8601 in UTC, to the millisecond (``2026-12-06T21:40:00.123Z``)."""
    moment = datetime.fromtimestamp(timestamp, timezone.utc)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass
class StoredEvent:
    """One row of the store, its files as paths (None: not written, or removed since)."""

    id: int
    camera: str
    session_started: str
    number: int
    start: str
    end: str
    start_ts: float
    end_ts: float
    start_time_s: float
    end_time_s: float
    kind: str | None
    box: list | None
    regions: list
    peak_score: float | None
    peak_frame: int | None
    folder: Path
    thumbnail: Path | None
    clip: Path | None
    record: dict

    def to_dict(self) -> dict:
        """As ``videvent events --json`` prints it (paths absolute)."""
        return {"camera": self.camera, "number": self.number,
                "session_started": self.session_started, "start": self.start,
                "end": self.end, "start_time_s": self.start_time_s,
                "end_time_s": self.end_time_s,
                "duration_s": round(self.end_ts - self.start_ts, 3), "kind": self.kind,
                "box": self.box, "regions": self.regions, "peak_score": self.peak_score,
                "peak_frame": self.peak_frame, "folder": os.fspath(self.folder),
                "thumbnail": None if self.thumbnail is None else os.fspath(self.thumbnail),
                "clip": None if self.clip is None else os.fspath(self.clip)}


class EventStore:
    """An open store. ``add`` is called from any thread (one connection, under a lock)."""

    def __init__(self, path: str | os.PathLike, *, create: bool = True):
        """Open the store at ``path``; ``create``: make it if it does not exist (else
        StoreError). StoreError, one line, for a file that is not videvent's store or (to
        read) that cannot be opened; OSError when it cannot be made or written."""
        self.path = Path(path)
        self.folder = self.path.parent
        self._lock = threading.Lock()
        if not create and not self.path.is_file():
            raise StoreError(f"no event store at '{self.path}' (a watch writes one as its "
                             f"events end)")
        # The cameras of one watch open their store at once: one at a time, so none reads it
        # while another is making it (other processes: ``_young`` below).
        with _OPENING:
            for attempt in range(OPEN_ATTEMPTS):
                try:
                    self._open(create)
                    return
                except StoreError:
                    if attempt + 1 == OPEN_ATTEMPTS or not _young(self.path):
                        raise
                time.sleep(OPEN_RETRY_S)     # another process is making it: read it again

    def _open(self, create: bool) -> None:
        existed = self.path.is_file() and self.path.stat().st_size > 0
        try:
            self._db = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_MS / 1000,
                                       isolation_level=None, check_same_thread=False)
        except sqlite3.Error as error:
            raise StoreError(f"cannot open the event store '{self.path}': {error}") from None
        try:
            self._prepare(existed, create)
        except sqlite3.DatabaseError as error:
            self._db.close()
            if existed and "not a database" in str(error):
                raise StoreError(_NOT_OURS.format(self.path)) from None
            if create:          # a full disk, a read-only folder: said, and the watch goes on
                raise _as_os_error(error, self.path) from None
            raise StoreError(f"cannot open the event store '{self.path}': {error}") from None
        except StoreError:
            self._db.close()
            raise

    def _prepare(self, existed: bool, create: bool) -> None:
        db = self._db
        db.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        found = db.execute("PRAGMA application_id").fetchone()[0]
        # An empty database is one another watch is making at this moment (or an empty file).
        empty = db.execute("SELECT count(*) FROM sqlite_master").fetchone()[0] == 0
        if existed and found != APPLICATION_ID and not empty:
            raise StoreError(_NOT_OURS.format(self.path))
        version = db.execute("PRAGMA user_version").fetchone()[0]
        if version > SCHEMA_VERSION:
            raise StoreError(f"'{self.path}' was written by a newer videvent (store version "
                             f"{version}); this one reads version {SCHEMA_VERSION}")
        if not create:
            return                              # a reader changes nothing
        # WAL: readers (the dashboard, `videvent events`) never block the watch's writes;
        # FULL: a committed event survives a power cut, not only a killed process.
        db.execute("PRAGMA journal_mode = WAL")
        db.execute("PRAGMA synchronous = FULL")
        db.execute(f"PRAGMA journal_size_limit = {WAL_LIMIT_BYTES}")
        db.execute(f"PRAGMA wal_autocheckpoint = {WAL_LIMIT_BYTES // 4096}")
        if version < SCHEMA_VERSION:
            db.execute("BEGIN IMMEDIATE")
            try:
                for statement in filter(str.strip, _SCHEMA.split(";")):
                    db.execute(statement)
                db.execute(f"PRAGMA application_id = {APPLICATION_ID}")
                db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def __enter__(self) -> "EventStore":
        return self

    def __exit__(self, *_exc) -> None:
        self.close()

    # -- writing ----------------------------------------------------------------------------
    def _relative(self, path) -> str | None:
        if not path:
            return None
        try:
            return os.path.relpath(os.path.abspath(path), os.path.abspath(self.folder))
        except ValueError:                      # another drive (Windows): as it is
            return os.path.abspath(path)

    def add(self, camera: str, folder: str | os.PathLike, record: dict,
            clock_origin: float) -> None:
        """Event ``record`` (an ``events.jsonl`` line: the event, its ``thumbnail`` and
        ``clip``, its ``session_started``) of ``camera``, whose result folder is ``folder``,
        in one committed transaction. ``clock_origin``: the Unix time of the stream's second
        0 (its wall-clock start). OSError (naming the store) when it cannot be written."""
        size = sum(_size(record.get(kind)) for kind in ("thumbnail", "clip"))
        start_ts = clock_origin + float(record["start_time_s"])
        end_ts = clock_origin + float(record["end_time_s"])
        row = (camera, record["session_started"], int(record["number"]), utc_text(start_ts),
               utc_text(end_ts), start_ts, end_ts, float(record["start_time_s"]),
               float(record["end_time_s"]), record.get("kind"),
               None if record.get("box") is None else json.dumps(record["box"]),
               json.dumps(list(record.get("regions") or [])), record.get("peak_score"),
               record.get("peak_frame"), self._relative(folder),
               self._relative(record.get("thumbnail")), self._relative(record.get("clip")),
               size, json.dumps(record, default=str))
        try:
            with self._lock:
                self._db.execute(
                    "INSERT OR REPLACE INTO events (camera, session_started, number, "
                    "start_utc, end_utc, start_ts, end_ts, start_time_s, end_time_s, kind, "
                    "box, regions, peak_score, peak_frame, folder, thumbnail, clip, bytes, "
                    "record) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    row)
        except sqlite3.Error as error:
            raise _as_os_error(error, self.path) from None

    # -- retention --------------------------------------------------------------------------
    def size(self) -> int:
        """The bytes the store's files take (the database and its write-ahead log)."""
        return sum(_size(self.path.with_name(self.path.name + suffix))
                   for suffix in ("", "-wal", "-shm"))

    def usage(self, camera: str) -> tuple[int, float | None]:
        """The bytes ``camera``'s events' files took when written, and when its oldest
        event kept started (None: it has none)."""
        return self._read("SELECT coalesce(sum(bytes), 0), min(start_ts) FROM events "
                          "WHERE camera = ?", (camera,))[0]

    def largest(self, camera: str) -> int:
        """The bytes of ``camera``'s largest event kept (0: none)."""
        return self._read("SELECT coalesce(max(bytes), 0) FROM events WHERE camera = ?",
                          (camera,))[0][0]

    def oldest(self, camera: str, before: float | None = None) -> StoredEvent | None:
        """``camera``'s oldest event (that started before ``before``), or None."""
        found = self.events(camera=camera, until=before, limit=1)
        return found[0] if found else None

    def shared(self, event: StoredEvent, path: Path) -> bool:
        """Whether another event of the store names ``path`` as its thumbnail or clip (a
        later session into the same folder reuses the numbers, and so the names)."""
        relative = self._relative(path)
        return self._read("SELECT count(*) FROM events WHERE id != ? AND (thumbnail = ? OR "
                          "clip = ?)", (event.id, relative, relative))[0][0] > 0

    def remove(self, event: StoredEvent) -> None:
        """``event``'s row, in one committed transaction (OSError when it cannot be)."""
        try:
            with self._lock:
                self._db.execute("DELETE FROM events WHERE id = ?", (event.id,))
        except sqlite3.Error as error:
            raise _as_os_error(error, self.path) from None

    def kept(self, camera: str, keys: list[tuple[str, int]]) -> bool:
        """Whether any of ``camera``'s events of ``keys`` ((session_started, number)) is in
        the store."""
        return any(self._read("SELECT 1 FROM events WHERE camera = ? AND session_started = ? "
                              "AND number = ? LIMIT 1", (camera, *key)) for key in keys)

    def _read(self, query: str, values: tuple) -> list:
        try:
            with self._lock:
                return self._db.execute(query, values).fetchall()
        except sqlite3.Error as error:
            raise _as_os_error(error, self.path) from None

    # -- reading ----------------------------------------------------------------------------
    def events(self, *, since: float | None = None, until: float | None = None,
               camera: str | None = None, kind: str | None = None,
               region: str | None = None, limit: int | None = None,
               newest_first: bool = False) -> list[StoredEvent]:
        """The events that started from ``since`` (Unix time) to before ``until``, of
        ``camera``, of ``kind``, that touched ``region``: oldest first (``newest_first``: the
        latest first), at most ``limit``. StoreError, one line, when it cannot be read."""
        where, values = [], []
        for clause, value in (("start_ts >= ?", since), ("start_ts < ?", until),
                              ("camera = ?", camera), ("kind = ?", kind),
                              ("EXISTS (SELECT 1 FROM json_each(events.regions) "
                               "WHERE json_each.value = ?)", region)):
            if value is not None:
                where.append(clause)
                values.append(value)
        query = ("SELECT id, camera, session_started, number, start_utc, end_utc, start_ts, "
                 "end_ts, start_time_s, end_time_s, kind, box, regions, peak_score, "
                 "peak_frame, folder, thumbnail, clip, record FROM events"
                 + (" WHERE " + " AND ".join(where) if where else "")
                 + f" ORDER BY start_ts {'DESC' if newest_first else 'ASC'}, id"
                 + ("" if limit is None else f" LIMIT {int(limit)}"))
        try:
            with self._lock:
                rows = self._db.execute(query, values).fetchall()
        except sqlite3.Error as error:
            raise StoreError(f"cannot read the event store '{self.path}': {error}") from None
        return [self._stored(row) for row in rows]

    def _stored(self, row) -> StoredEvent:
        (id_, camera, session, number, start, end, start_ts, end_ts, start_s, end_s, kind,
         box, regions, peak, peak_frame, folder, thumbnail, clip, record) = row

        def path(text):
            return None if text is None else (self.folder / text).resolve()

        return StoredEvent(id_, camera, session, number, start, end, start_ts, end_ts,
                           start_s, end_s, kind, None if box is None else json.loads(box),
                           json.loads(regions or "[]"), peak, peak_frame, path(folder),
                           path(thumbnail), path(clip), json.loads(record))


class StoreSink(Sink):
    """Commits each event of a session to ``store`` as it ends, ``folder`` being the
    session's result folder: told after the sinks that write its thumbnail and clip (their
    files are in the record) and before the alerts, so an event announced is an event kept.
    The record is the session's ``events.jsonl`` line."""

    def __init__(self, store: EventStore, folder: str | os.PathLike):
        self.store, self.folder = store, Path(folder)
        self.camera, self.started = "", ""
        self.clock_origin: float | None = None

    def on_start(self, info) -> None:
        self.camera, self.started = info.name, info.started

    def on_frame(self, frame, score, event_number) -> None:
        # The wall clock of the stream's second 0, from the latest frame: a live stream's
        # seconds are its capture's clock (its events are dated within the latency); a file
        # read faster than it plays is dated as it was read, never in the future.
        self.clock_origin = time.time() - frame.time_s

    def on_event_end(self, event, files: dict[str, str]) -> None:
        record = {**event.to_dict(), **files, "session_started": self.started}
        self.store.add(self.camera, self.folder, record,
                       time.time() if self.clock_origin is None else self.clock_origin)


def _size(path) -> int:
    try:
        return os.stat(path).st_size if path else 0
    except OSError:
        return 0


def _as_os_error(error: sqlite3.Error, path: Path) -> OSError:
    """An SQLite failure to write as the OSError a session says and goes on from."""
    text = str(error)
    number = 28 if "full" in text.lower() else 5      # ENOSPC, else EIO
    return OSError(number, text, os.fspath(path))


# -- since when -------------------------------------------------------------------------------
_SPAN = re.compile(r"(\d+(?:\.\d+)?)\s*(w|d|h|m|s)")
_SPAN_SECONDS = {"w": 604_800, "d": 86_400, "h": 3600, "m": 60, "s": 1}
SINCE_HELP = ("a span back from now ('90m', '1h', '7d', '2w', '1d12h') or a date or time "
              "('2026-12-01', '2026-12-01 18:00', local unless it says its zone)")


def parse_since(text: str, now: float | None = None) -> float:
    """The Unix time ``text`` means as a start: a span back from ``now`` (``1h``, ``7d``,
    ``1d12h``) or an ISO date or time (local time unless it gives its offset or ``Z``).
    ValueError, one line, for anything else."""
    now = time.time() if now is None else now
    compact = text.strip().lower().replace(" ", "") if text else ""
    if compact and _SPAN.sub("", compact) == "" and _SPAN.match(compact):
        seconds = sum(float(amount) * _SPAN_SECONDS[unit]
                      for amount, unit in _SPAN.findall(compact))
        return now - seconds
    stripped = (text or "").strip()
    try:
        moment = datetime.fromisoformat(stripped[:-1] + "+00:00" if stripped[-1:] in "zZ"
                                        and stripped else stripped)
    except ValueError:
        raise ValueError(f"expected {SINCE_HELP}, got {text!r}") from None
    if moment.tzinfo is None:
        moment = moment.astimezone()            # local time, as a person means it
    return moment.timestamp()


def clock_hours(text: str) -> tuple[int, int]:
    """``HH:MM-HH:MM`` (or ``HH-HH``) as minutes of the day, (from, to); ``to`` before
    ``from`` goes past midnight (``22:00-06:00``). ValueError, one line, otherwise."""
    match = re.fullmatch(r"\s*(\d{1,2})(?::(\d{2}))?\s*-\s*(\d{1,2})(?::(\d{2}))?\s*", text or "")
    if match:
        first = int(match[1]) * 60 + int(match[2] or 0)
        last = int(match[3]) * 60 + int(match[4] or 0)
        if max(int(match[1]), int(match[3])) <= 24 and max(int(match[2] or 0),
                                                           int(match[4] or 0)) < 60:
            return first % 1440, last % 1440
    raise ValueError(f"expected HH:MM-HH:MM in local time (22:00-06:00: the night), got "
                     f"{text!r}")


def within_hours(timestamp: float, hours: tuple[int, int]) -> bool:
    """Whether the local time of ``timestamp`` is in ``hours`` (``clock_hours``)."""
    local = datetime.fromtimestamp(timestamp)
    minute = local.hour * 60 + local.minute
    first, last = hours
    if first <= last:
        return first <= minute < last
    return minute >= first or minute < last
