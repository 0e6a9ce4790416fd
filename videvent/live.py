"""Live monitoring: the detector on a camera, a network stream or a file at its real pace.

The source is watched as a ``videvent.sources.live.LiveSource`` (reopened with exponential
backoff when it drops, the model kept; "source lost" and "source back" are alerts of their
own) and scored by the engine's one loop, as ``run``'s frames are (``videvent.engine``): on a
reader thread into a bounded buffer, whose oldest frames are dropped (and counted) when
scoring falls behind a live picture, so latency stays bounded. The scored frames go to a
``videvent.session.Session`` with the watch's sinks (thumbnails, clips, alerts, the preview
window). Results are written as the session goes: ``scores.csv`` is flushed every second,
each event appended to ``events.jsonl`` and ``events.json`` rewritten (capped) at its end, so
a crash loses at most the last second; the plot and the report come at a clean stop.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .alerts import AlertSink, AlertSinks, check_webhook
from .output.annotate import Overlay
from .engine import Engine
from .kinds import AlertFilter
from .output.clips import ClipSink, bgr_picture
from .output.folder import COMPLETE, check_destination, mark, mark_complete, remove_stale
from .output.names import PLOT_NAME, REPORT_NAME
from .output.retention import Retention
from .output.store import STORE_NAME, EventStore, StoreSink, check_store, store_folder
from .output.sink import Sink
from .passes import open_for, prepare
from .session import Session
from .settings import Settings
from .sinks import folder_sinks
from .sources.live import MAX_RECONNECTS, LiveSource

BUFFER_FRAMES = 64            # frames captured ahead of the detector, at most
STATUS_EVERY_S = 1.0
FLUSH_EVERY_S = 1.0
LATENCY_SAMPLES = 20_000
STALLED_AFTER_S = 5.0         # a live source silent this long is said to be stalled


@dataclass
class SessionSummary:
    frames: int = 0
    dropped: int = 0
    events: int = 0
    latencies_s: deque = field(default_factory=lambda: deque(maxlen=LATENCY_SAMPLES))
    # The source watched, which counts its own reconnections as it makes them.
    source: LiveSource | None = None

    @property
    def reconnects(self) -> int:
        return self.source.reconnects if self.source is not None else 0

    @property
    def gave_up(self) -> bool:
        """The source was lost and did not come back within its reconnection attempts."""
        return self.source is not None and self.source.gave_up

    def latency_ms(self, quantile: float) -> float:
        if not self.latencies_s:
            return 0.0
        return 1000 * float(np.quantile(np.fromiter(self.latencies_s, float), quantile))

    def to_dict(self) -> dict:
        return {"dropped_frames": self.dropped, "reconnects": self.reconnects,
                "latency_ms_median": round(self.latency_ms(0.5), 2),
                "latency_ms_p99": round(self.latency_ms(0.99), 2)}


def safe_name(name: str) -> str:
    """A camera's or source's name as it is in its default folder's name."""
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in name) or "stream"


class _Preview(Sink):
    """``--show``: each frame with the overlay in a window; q stops the session."""

    def __init__(self, stop, overlay: Overlay, box_level: float):
        self.stop, self.overlay, self.box_level = stop, overlay, box_level

    def on_frame(self, frame, score, event_number) -> None:
        import cv2

        picture = bgr_picture(frame)
        if picture is None:
            return
        picture, _ = self.overlay.draw(picture, score.residual_image, score.block_scores,
                                       self.box_level, boxes=event_number is not None)
        cv2.imshow("videvent watch", picture)
        if cv2.waitKey(1) & 0xFF == ord("q"):
            self.stop()

    def close(self) -> None:
        import cv2
        cv2.destroyAllWindows()


ALERT_OPTIONS = ("json_lines", "command", "webhook")


def _check_options(alerts: dict | None, max_frames, max_reconnects) -> None:
    """What the command line checks before it opens a source or makes a folder, checked as
    well for a caller of `watch` or `LiveMonitor`: ValueError, one line."""
    unknown = sorted(set(alerts or {}) - set(ALERT_OPTIONS))
    if unknown:
        raise ValueError(f"unknown alert option{'s' if len(unknown) > 1 else ''} "
                         f"{', '.join(map(repr, unknown))}: the options are "
                         f"{', '.join(ALERT_OPTIONS)}")
    if (alerts or {}).get("webhook") is not None:
        check_webhook(alerts["webhook"])
    for name, value, least in (("max_frames", max_frames, 1),
                               ("max_reconnects", max_reconnects, 0)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                                  or value < least):
            raise ValueError(f"{name} must be a whole number of at least {least} (or None), "
                             f"got {value!r}")


def _check_range_has_frames(source, start: int) -> None:
    """A file watched from a start (-st) past its last frame: ValueError, as ``run`` says it,
    before the result folder is made. Its frame count says so; one frame is read at the start
    only when the count is unknown or says the start is past it (it may be an estimate)."""
    if source.is_live or start <= 0 or (source.frame_count and start < source.frame_count):
        return
    for _ in source.frames(start, start + 1):
        return
    raise ValueError(f"no frames to scan in '{source.uri}' in the range given")


class LiveMonitor:
    """One watch session; ``run()`` until the source ends, a limit is hit or ``stop()``."""

    def __init__(self, spec, settings: Settings, out_dir: str | os.PathLike | None, *,
                 realtime: bool = False, max_reconnects: int | None = MAX_RECONNECTS,
                 max_frames: int | None = None,
                 alerts: dict | None = None, clips: bool = True, plot: bool = True,
                 show: bool = False, status=None, sinks: list[Sink] = (),
                 colour_pictures: bool = False,
                 camera: str | None = None, name: str | None = None,
                 alert_sink: AlertSink | None = None, alert_filter: AlertFilter | None = None,
                 store: str | os.PathLike | bool | None = None,
                 keep_days: float | None = None, max_disk: int | None = None):
        """``camera``: the name every alert gives (a watch of several cameras); ``name``: the
        camera's name, which names its folder, files and report (default: the source's).
        ``alert_sink``: the camera's alerts, made before it opened (``alerts``, ``camera``
        and ``alert_filter`` are then its), logged into this session's folder from now on.
        ``alert_filter``: the events alerted (all are recorded). ``store``: the event
        store's path (None: ``events.db`` where ``output.store.store_folder`` puts it for
        this folder; False: none). ``keep_days``, ``max_disk`` (bytes): the retention of
        the camera's events (``output.retention``; None: no limit)."""
        _check_options(alerts, max_frames, max_reconnects)   # before anything is opened
        self.spec, self.settings = spec, settings
        # Colour pictures for the sinks that show them (the dashboard), not only for clips.
        self.colour_pictures = colour_pictures
        self.camera = camera   # named in every alert when a watch has several cameras
        self.clips, self.plot, self.show, self.status = clips, plot, show, status
        self.sinks = list(sinks)   # the caller's own sinks, told after the session's
        self.keep_days, self.max_disk = keep_days, max_disk
        self._retention: Retention | None = None
        self._frames_at_tick = 0
        self._stop = threading.Event()
        # Opened now (SourceError before anything is written), reopened when it drops.
        opened = self._open()
        self._source = LiveSource(opened, self._open, realtime=realtime,
                                  max_reconnects=max_reconnects, max_frames=max_frames,
                                  stop=self._stop)
        if name is not None:
            self._source.name = name
        self.summary = SessionSummary(source=self._source)
        try:
            # Settings that cannot work at this source's frame rate: refused (SettingError)
            # before the result folder exists.
            self._prepared = prepare(self._source, settings)
            _check_range_has_frames(opened, self._prepared[0].start)
        except ValueError:
            self._source.close()
            raise
        if out_dir is None:
            # A folder of its own, named for what and when: beside a file (as run's results
            # are), in the current folder for a camera or a stream, which have no folder.
            name = (f"videvent-watch-{safe_name(self._source.name)}-"
                    f"{time.strftime('%Y%m%d-%H%M%S')}")
            is_file = isinstance(spec, (str, os.PathLike)) and os.path.isfile(spec)
            out_dir = os.path.join(os.path.dirname(os.fspath(spec)), name) if is_file else name
        self.out_dir = check_destination(out_dir)
        store = None if store is False else Path(
            store if store is not None else store_folder(self.out_dir) / STORE_NAME)
        try:
            if store is not None:
                check_store(store)       # a user's file of its name: refused, nothing made
        except ValueError:
            self._source.close()
            raise
        try:
            self.out_dir.mkdir(parents=True, exist_ok=True)
            remove_stale(self.out_dir)
            mark(self.out_dir)
            # A watch's folder is complete only when it stops: an earlier run's marker goes;
            # without the plot, so do an earlier session's plot and report (of another one).
            for name in (COMPLETE,) if plot else (COMPLETE, PLOT_NAME, REPORT_NAME):
                (self.out_dir / name).unlink(missing_ok=True)
        except OSError as error:
            raise ValueError(f"cannot write results into '{self.out_dir}': "
                             f"{error.strerror or error}") from None
        # Opened now: a file there that is not videvent's store is refused before the watch.
        try:
            self.store = None if store is None else EventStore(store)
        except ValueError:
            self._source.close()
            raise
        except OSError as error:           # a full disk: the watch goes on without it
            self.store = None
            print(f"videvent: warning: cannot write '{store}': {error.strerror or error}; "
                  f"watching on, without what cannot be written", file=sys.stderr, flush=True)
        if alert_sink is None:
            alert_sink = AlertSink(AlertSinks(self.out_dir / "alerts.jsonl", **(alerts or {})),
                                   camera=camera, name=name, alert_filter=alert_filter)
        else:
            alert_sink.receivers.log_to(self.out_dir / "alerts.jsonl")
        self._alert_sink = alert_sink

    def _open(self):
        return open_for(self.spec, self.settings,
                        keep_colour=self.clips or self.show or self.colour_pictures)

    def stop(self) -> None:
        self._stop.set()

    # -- the session -----------------------------------------------------------------------
    def run(self) -> SessionSummary:
        settings, source = self.settings, self._source
        run, segmenter = self._prepared
        session = self._session(run, segmenter)
        session.start()
        session.status("connected", {"uri": source.uri, "fps": source.fps})
        engine = Engine(run, explain=settings.threshold_low, stop=self._stop)
        last_flush = last_status = time.monotonic()
        stalled_since = None   # the silence already said to be a stall

        def scored(decoded, _verdict) -> None:
            nonlocal last_flush, last_status
            now = time.monotonic()
            self.summary.latencies_s.append(now - decoded.read_at)
            self.summary.frames += 1
            self.summary.events = session.events_completed
            if now - last_flush >= FLUSH_EVERY_S:
                session.flush()
                last_flush = now
            if now - last_status >= STATUS_EVERY_S:
                self.summary.dropped = engine.dropped
                self._tick(session, now - last_status)
                last_status = now

        def idle(since: float) -> None:
            nonlocal stalled_since
            silent_s = time.monotonic() - since
            if source.is_live and since != stalled_since and silent_s >= STALLED_AFTER_S:
                stalled_since = since  # said once a silence; frames or a loss end it
                session.status("stalled", {"seconds": round(silent_s, 1)})

        try:
            engine.run(session, buffer=BUFFER_FRAMES, close_timeout=5, on_scored=scored,
                       on_idle=idle)
        finally:
            self.summary.dropped = engine.dropped
            try:
                session.finish()   # the last events, and the summary document
                self.summary.events = session.events_completed
                summary = self.summary
                session.status("finished", {
                    "frames": summary.frames, "events": summary.events,
                    "dropped": summary.dropped, "reconnects": summary.reconnects,
                    "latency_ms_median": round(summary.latency_ms(0.5), 2),
                    "latency_ms_p99": round(summary.latency_ms(0.99), 2),
                    "results": os.path.abspath(self.out_dir)})
            finally:
                session.close()
                if self.store is not None:
                    self.store.close()
        try:
            if self.plot:
                from .output.report import write_plot, write_report

                write_plot(self.out_dir)
                write_report(self.out_dir)
            # Last, as a run's: the folder holds all the session wrote (batch, export and a
            # reader trust nothing else).
            mark_complete(self.out_dir, {"frames_read": self.summary.frames,
                                         "events": self.summary.events, "live": True})
        except OSError as error:       # the session's own files are written: say it, end well
            print(f"videvent: warning: cannot write the report in '{self.out_dir}': "
                  f"{error.strerror or error}", file=sys.stderr, flush=True)
        return self.summary

    def _session(self, run, segmenter) -> Session:
        """The session and its sinks: thumbnails, clips, the event store and its retention,
        alerts, the preview window."""
        settings, source = self.settings, self._source

        def warn(line: str) -> None:
            print(f"videvent: warning: {line}", file=sys.stderr, flush=True)

        sinks = folder_sinks(source, settings, run.preprocess.regions, self.out_dir,
                             thumbnails=True, clips=self.clips)
        if self.store is not None:
            sinks.append(StoreSink(self.store, self.out_dir))
            self._retention = Retention(self.store, self.out_dir, keep_days=self.keep_days,
                                        max_disk=self.max_disk, report=warn)
            sinks.append(self._retention)
        clips = next((sink for sink in sinks if isinstance(sink, ClipSink)), None)
        self._alert_sink.clip_of = clips.path_of if clips else None
        sinks.append(self._alert_sink)
        if self.show:
            sinks.append(_Preview(self.stop, Overlay.of(settings), settings.threshold_low))
        sinks += self.sinks
        return Session(run, segmenter, scores_path=self.out_dir / "scores.csv", sinks=sinks,
                       live=True, summary_path=self.out_dir / "events.json",
                       summary_extra=lambda: {"session": self.summary.to_dict()},
                       report=warn)

    def _tick(self, session: Session, seconds: float) -> None:
        """About once a second: the status line, and the sinks that want the statistics."""
        if self.status is not None:
            self.status(self.summary)
        stats = {"fps": self.summary.frames - self._frames_at_tick,
                 "dropped": self.summary.dropped, "latency_ms": self.summary.latency_ms(0.5)}
        stats["fps"] /= max(seconds, 1e-9)
        if self._retention is not None:
            stats.update(self._retention.usage())   # the disk used, the oldest event kept
        self._frames_at_tick = self.summary.frames
        for sink in session.sinks:
            on_stats = getattr(sink, "on_stats", None)
            if on_stats is not None:
                on_stats(stats)


def watch(source, settings: Settings | None = None, *,
          out_dir: str | os.PathLike | None = None, sinks: list[Sink] = (),
          realtime: bool = False, max_frames: int | None = None,
          max_reconnects: int | None = MAX_RECONNECTS, clips: bool = True, plot: bool = True,
          alerts: dict | None = None, alert_filter: AlertFilter | None = None
          ) -> SessionSummary:
    """Watch ``source`` (a camera number, a stream URL or a file) until it ends, the range
    (``settings.duration``) or ``max_frames`` is reached, or the process is interrupted;
    results go into ``out_dir`` as the session goes, and ``sinks`` (``videvent.session.Sink``)
    are told about every frame and event. ``alerts``: ``json_lines``, ``command``,
    ``webhook`` as for ``videvent watch``; ``alert_filter``: the events alerted
    (``videvent.kinds.AlertFilter``: ``--alert-on``, ``--alert-regions``; every event is
    recorded); ``plot``: ``residuals.png`` and ``report.html``
    when it ends. Options the command line refuses (a webhook that is not http(s), an unknown
    alert option, ``max_frames`` below 1, ``max_reconnects`` below 0) are a one-line
    ValueError before the source is opened or any folder made."""
    monitor = LiveMonitor(source, settings or Settings(), out_dir, realtime=realtime,
                          max_reconnects=max_reconnects, max_frames=max_frames,
                          alerts=alerts, clips=clips, plot=plot, sinks=sinks,
                          alert_filter=alert_filter)
    return monitor.run()
