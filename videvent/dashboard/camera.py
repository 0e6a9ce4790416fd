"""One camera on the dashboard: the sink a session feeds, and what the server shows of it.

`DashboardSink` is called on the session's thread and never blocks it for long: a frame is
kept by reference and annotated and JPEG-encoded on the camera's own encoder thread, at most
`PICTURES_PER_S` times a second (frames arriving in between are simply replaced, i.e. dropped
from the picture, never from the scores). Scores go into a bounded history for the chart;
status (with when it last changed), statistics and events become messages for the page's
update stream. ``load_past`` reads the events of earlier watches from the watch's event store
(``output.store``; from their result folders' ``events.jsonl`` when there is none), so the
page's history survives a restart of the watch.
"""

from __future__ import annotations

import json
import math
import os
import threading
import time
from datetime import datetime
from collections import Counter, OrderedDict, deque
from collections.abc import Callable
from pathlib import Path

import cv2

from ..output.annotate import Annotator, Overlay
from ..output.clips import bgr_picture
from ..output.sink import Sink
from ..output.store import EventStore
from ..preprocess import working_size

PICTURES_PER_S = 10
IDLE_PICTURES_PER_S = 1         # with no page watching: the snapshot and event pictures only
JPEG_QUALITY = 80
# A wider picture is scaled down before it is annotated and encoded (a 720p picture costs
# twice as much at full size): the page shows it at most this wide.
PICTURE_MAX_WIDTH = 960
HISTORY_POINTS = 3000           # scores kept for the chart of a page opened late
LIVE_THUMBNAILS = 200           # open events' pictures kept in memory until their file exists
MEDIA_KINDS = ("thumbnail", "clip")
PAST_EVENTS = 100               # events of earlier watches shown per camera, the latest
PAST_TAIL_BYTES = 1 << 20       # of each events.jsonl, only its end is read


def _finite(value: float) -> float | None:
    return float(value) if value is not None and math.isfinite(value) else None


def _plain(value):
    """``value`` as strict JSON data: unknown objects as text, NaN and infinities as None
    (what the session passes is free-form; one odd value must not stop the updates)."""
    return json.loads(json.dumps(value, default=str), parse_constant=lambda _: None)


def shown_size(width: int, height: int) -> tuple[int, int]:
    """The size the live picture is drawn and sent at."""
    if width <= PICTURE_MAX_WIDTH:
        return width, height
    return PICTURE_MAX_WIDTH, round(height * PICTURE_MAX_WIDTH / width)


class CameraState:
    """Everything the server reads about one camera; fields change under ``lock``."""

    def __init__(self, index: int, name: str, region_file: Path | None):
        self.index, self.name, self.region_file = index, name, region_file
        self.lock = threading.Lock()
        self.width = self.height = 0
        self.working: tuple[int, int] | None = None   # the detector's picture (width, height)
        self.threshold: float | None = None
        self.status, self.status_detail = "waiting", {}
        self.status_since = time.time()                       # when the status last changed
        self.stats: dict = {}
        self.history: deque = deque(maxlen=HISTORY_POINTS)    # (time_s, score)
        self.pending_scores: list = []                        # not yet sent to the pages
        self.picture: bytes | None = None                     # latest annotated JPEG
        self.pictures_encoded = 0
        self.viewers = 0                                      # pages showing the live picture
        self.events: dict[int, dict] = {}
        self.live_thumbnails: OrderedDict[int, bytes] = OrderedDict()
        self.media: dict[tuple[int, str], Path] = {}          # (event, kind) -> registered file
        self.past: list[dict] = []                            # earlier watches' events
        self.past_media: dict[tuple[int, str], Path] = {}     # (past index, kind) -> file
        # What a service's monitor reads (``health``): since this process started.
        self.frames = 0                                       # frames scored
        self.last_frame_at: float | None = None               # monotonic time of the latest
        self.events_by_kind: Counter = Counter()              # events ended, by their kind
        self.folder: Path | None = None                       # the session's result folder

    def describe(self) -> dict:
        with self.lock:
            return {"index": self.index, "name": self.name, "width": self.width,
                    "height": self.height, "threshold": self.threshold, "status": self.status,
                    "status_detail": self.status_detail, "status_since": self.status_since,
                    "stats": self.stats,
                    "history": list(self.history), "region_editable": self.region_file is not None}

    def take_pending_scores(self) -> list:
        with self.lock:
            scores, self.pending_scores = self.pending_scores, []
        return scores

    def event_list(self) -> list[dict]:
        """This watch's events and the earlier watches' (``past``)."""
        with self.lock:
            return [*self.past, *self.events.values()]

    def media_path(self, number: int, kind: str, past: bool = False) -> Path | None:
        with self.lock:
            return (self.past_media if past else self.media).get((number, kind))

    def load_past(self, folders: list[Path], store: Path | None = None) -> None:
        """The latest ``PAST_EVENTS`` events of earlier watches (oldest first): from the event
        ``store`` when there is one, else from the ``events.jsonl`` of ``folders`` (those of
        a version before the store). Their thumbnails and clips are served only from inside
        the store's folder (or their own result folder)."""
        found = _stored_events(store, self.name)
        if found is None:
            found = []
            for folder in folders:
                found += [(folder, record, None) for record in _read_events_log(folder)]
        for index, (folder, record, seen_at) in enumerate(found[-PAST_EVENTS:]):
            base = f"/cameras/{self.index}/past/{index}"
            files = {}
            for kind in MEDIA_KINDS:
                path = _inside(folder, record.get(kind), kind)
                if path is not None:
                    files[kind] = path
                    self.past_media[(index, kind)] = path
            event = {key: value for key, value in record.items()
                     if key not in MEDIA_KINDS and key != "session_started"}
            if seen_at is None:
                seen_at = (_started_at(record.get("session_started"))
                           + float(record.get("start_time_s") or 0))
            self.past.append({
                **_plain(event), "key": f"{self.index}-past-{index}", "past": True,
                "camera": self.name, "camera_index": self.index, "open": False,
                "seen_at": seen_at, "session_started": record.get("session_started"),
                "thumbnail_url": f"{base}/thumbnail" if "thumbnail" in files else None,
                "clip_url": f"{base}/clip" if "clip" in files else None})

    def live_thumbnail(self, number: int) -> bytes | None:
        with self.lock:
            return self.live_thumbnails.get(number)


def _stored_events(store: Path | None, camera: str) -> list[tuple[Path, dict, float]] | None:
    """The latest ``PAST_EVENTS`` events of ``camera`` in the event ``store``, oldest first,
    each with its result folder (where its files are looked for) and when it started; None
    when there is no store, or it cannot be read (the result folders are read instead)."""
    if store is None or not Path(store).is_file():
        return None
    try:
        with EventStore(store, create=False) as opened:
            stored = opened.events(camera=camera, limit=PAST_EVENTS, newest_first=True)
    except ValueError:
        return None
    return [(event.folder, {**event.record, "thumbnail": event.thumbnail and str(event.thumbnail),
                            "clip": event.clip and str(event.clip)}, event.start_ts)
            for event in reversed(stored)]


def _read_events_log(folder: Path) -> list[dict]:
    """The event records of a result folder's ``events.jsonl`` (its last ``PAST_TAIL_BYTES``;
    a line that is not a JSON object is passed over)."""
    try:
        with open(folder / "events.jsonl", "rb") as handle:
            size = handle.seek(0, os.SEEK_END)
            handle.seek(max(0, size - PAST_TAIL_BYTES))
            lines = handle.read().splitlines()
    except OSError:
        return []
    if size > PAST_TAIL_BYTES:
        lines = lines[1:]                      # the first, cut, line
    records = []
    for line in lines:
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict) and isinstance(record.get("number"), int):
            records.append(record)
    return records


def _inside(folder: Path, named, kind: str) -> Path | None:
    """The file an events.jsonl line names, found by its name in ``folder`` (a clip) or its
    thumbnails folder, and only there: never a path elsewhere that a line could name."""
    if not isinstance(named, str) or not named:
        return None
    name = Path(named).name
    candidate = (folder / "thumbnails" if kind == "thumbnail" else folder) / name
    try:
        resolved, root = candidate.resolve(), folder.resolve()
    except OSError:
        return None
    return resolved if resolved.is_file() and resolved.is_relative_to(root) else None


def _started_at(text) -> float:
    try:
        return datetime.fromisoformat(text).timestamp()
    except (TypeError, ValueError):
        return 0.0


class _PictureEncoder:
    """Annotates and encodes the latest frame of one camera on a thread of its own."""

    def __init__(self, camera: CameraState, on_picture: Callable[[CameraState], None]):
        self._camera, self._on_picture = camera, on_picture
        self._latest = None
        self._wanted = threading.Event()
        self._stopping = threading.Event()
        self.annotator: Annotator | None = None
        self._thread = threading.Thread(target=self._run, daemon=True,
                                        name=f"dashboard-picture-{camera.index}")
        self._thread.start()

    def offer(self, frame, score, event_number: int | None) -> None:
        self._latest = (frame, score, event_number)   # a reference swap: the caller never waits
        self._wanted.set()

    def _run(self) -> None:
        while not self._stopping.is_set():
            self._wanted.wait()
            self._wanted.clear()
            latest, self._latest = self._latest, None
            if latest is None:
                continue
            began = time.monotonic()
            jpeg = self._encode(*latest)
            if jpeg is not None:
                with self._camera.lock:
                    self._camera.picture = jpeg
                    self._camera.pictures_encoded += 1
                self._on_picture(self._camera)
            interval = 1.0 / (PICTURES_PER_S if self._camera.viewers else IDLE_PICTURES_PER_S)
            self._stopping.wait(max(0.0, interval - (time.monotonic() - began)))

    def _encode(self, frame, score, event_number: int | None) -> bytes | None:
        picture = bgr_picture(frame)
        if picture is None:
            return None
        width, height = shown_size(picture.shape[1], picture.shape[0])
        if width != picture.shape[1]:
            # Linear: a sixth of INTER_AREA's time at 1280 -> 960, and as good to look at.
            picture = cv2.resize(picture, (width, height), interpolation=cv2.INTER_LINEAR)
        if self.annotator is not None and self.annotator.width == width:
            picture, _ = self.annotator.draw(picture, frame.index, frame.time_s, event_number,
                                             score.residual_image, score.block_scores)
        encoded, jpeg = cv2.imencode(".jpg", picture, [cv2.IMWRITE_JPEG_QUALITY, JPEG_QUALITY])
        return jpeg.tobytes() if encoded else None

    def stop(self) -> None:
        self._stopping.set()
        self._wanted.set()
        self._thread.join(timeout=5)


class DashboardSink(Sink):
    """The sink of one camera: made by `Dashboard.add_camera`, handed to that camera's session."""

    def __init__(self, camera: CameraState, publish: Callable[[dict], None],
                 on_picture: Callable[[CameraState], None]):
        self.camera = camera
        self._publish = publish
        self._encoder = _PictureEncoder(camera, on_picture)

    def on_start(self, info) -> None:
        settings = getattr(info, "settings", None)
        threshold = float(info.threshold)
        # Boxes as the annotated export draws them: around blocks above the low threshold.
        box_level = getattr(settings, "threshold_low", threshold)
        # No strip chart: the page draws the live chart itself, with the threshold.
        self._encoder.annotator = Annotator(*shown_size(info.width, info.height), None,
                                            box_level, overlay=Overlay() if settings is None
                                            else Overlay.of(settings))
        with self.camera.lock:
            self.camera.width, self.camera.height = int(info.width), int(info.height)
            # What the region editor checks a region against, as the next session will.
            self.camera.working = (
                working_size(self.camera.width, self.camera.height) if settings is None else
                working_size(self.camera.width, self.camera.height,
                             max_side=settings.working_size,
                             downscale_factor=settings.downscale_factor))
            self.camera.threshold = threshold
            folder = getattr(info, "folder", None)
            self.camera.folder = None if folder is None else Path(folder)
        self._publish({"type": "camera", "camera": self.camera.describe()})

    def on_frame(self, frame, score, event_number: int | None) -> None:
        point = (round(float(frame.time_s), 3), _finite(score.score))
        with self.camera.lock:
            self.camera.frames += 1
            self.camera.last_frame_at = time.monotonic()
            self.camera.history.append(point)
            self.camera.pending_scores.append(point)
            # Bounded even when no server drains them (not started yet, or stopped).
            del self.camera.pending_scores[:-HISTORY_POINTS]
        self._encoder.offer(frame, score, event_number)

    def _event(self, event, state: str) -> dict:
        with self.camera.lock:
            if state != "end":
                # The picture of the moment (the peak, for an update) until the thumbnail exists.
                if self.camera.picture is not None:
                    self.camera.live_thumbnails[event.number] = self.camera.picture
                    self.camera.live_thumbnails.move_to_end(event.number)
                while len(self.camera.live_thumbnails) > LIVE_THUMBNAILS:
                    self.camera.live_thumbnails.popitem(last=False)
            base = f"/cameras/{self.camera.index}/events/{event.number}"
            has_thumbnail = ((event.number, "thumbnail") in self.camera.media
                             or event.number in self.camera.live_thumbnails)
            known = self.camera.events.get(event.number)
            record = {**_plain(event.to_dict()), "camera": self.camera.name,
                      "key": f"{self.camera.index}-{event.number}",
                      "seen_at": known["seen_at"] if known else time.time(),
                      "camera_index": self.camera.index, "open": state != "end",
                      "thumbnail_url": f"{base}/thumbnail" if has_thumbnail else None,
                      "clip_url": f"{base}/clip" if (event.number, "clip") in self.camera.media
                      else None}
            self.camera.events[event.number] = record
        return record

    def on_event_start(self, event) -> None:
        self._publish({"type": "event", "state": "start", "event": self._event(event, "start")})

    def on_event_update(self, event) -> None:
        self._publish({"type": "event", "state": "update", "event": self._event(event, "update")})

    def on_event_end(self, event, files: dict[str, str]) -> None:
        with self.camera.lock:
            for kind in MEDIA_KINDS:
                if files.get(kind):
                    self.camera.media[(event.number, kind)] = Path(files[kind]).resolve()
            if (event.number, "thumbnail") in self.camera.media:
                self.camera.live_thumbnails.pop(event.number, None)
            self.camera.events_by_kind[event.kind or "unknown"] += 1
        self._publish({"type": "event", "state": "end", "event": self._event(event, "end")})

    def on_status(self, status: str, detail: dict) -> None:
        detail = _plain(detail)
        with self.camera.lock:
            if status != self.camera.status:
                self.camera.status_since = time.time()
            self.camera.status, self.camera.status_detail = status, detail
            since = self.camera.status_since
        self._publish({"type": "status", "camera_index": self.camera.index, "status": status,
                       "detail": detail, "since": since})

    def on_stats(self, stats: dict) -> None:
        shown = _plain({key: stats[key] for key in ("fps", "dropped", "latency_ms",
                                                    "disk_bytes", "disk_cap", "oldest_kept")
                        if key in stats})
        with self.camera.lock:
            self.camera.stats = shown
        self._publish({"type": "stats", "camera_index": self.camera.index, "stats": shown})

    def close(self) -> None:
        self._encoder.stop()
