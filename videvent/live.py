"""Live monitoring: the detector on a camera, a network stream or a file at its real pace.

Capture runs on its own thread into a bounded buffer; when scoring falls behind, the oldest
frames are dropped (and counted) rather than queued without limit, so latency stays bounded.
A stream that drops is reopened with exponential backoff while the model is kept; "source
lost" and "source back" are alerts of their own. The scored frames go to a
``videvent.session.Session`` as ``run``'s do, with the watch's sinks (thumbnails, clips,
alerts, the preview window). Results are written as the session goes: ``scores.csv`` is
flushed every second, each event appended to ``events.jsonl`` and ``events.json`` rewritten
(capped) at its end, so a crash loses at most the last second; the plot and the report come
at a clean stop.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections import deque
from dataclasses import dataclass, field

import numpy as np
from threadpoolctl import threadpool_limits

from .alerts import AlertSink, AlertSinks
from .output.annotate import Overlay
from .output.clips import CLIP_TEMPLATE, ClipSink, bgr_picture
from .output.folder import COMPLETE, check_destination, mark, mark_complete, remove_stale
from .output.sink import Sink
from .output.thumbnails import ThumbnailSink
from .pipeline import open_for, prepare, seed_detector
from .reader import ReadAhead
from .session import Session
from .settings import Settings
from .sources import Frame, SourceError
from .timecode import format_timecode

BUFFER_FRAMES = 64            # frames captured ahead of the detector, at most
FIRST_BACKOFF_S, MAX_BACKOFF_S = 0.5, 10.0
STATUS_EVERY_S = 1.0
FLUSH_EVERY_S = 1.0
LATENCY_SAMPLES = 20_000
STALLED_AFTER_S = 5.0         # a live source silent this long is said to be stalled


class Backoff:
    """The waits between attempts to (re)open a source: FIRST_BACKOFF_S, doubling each time,
    at most MAX_BACKOFF_S."""

    def __init__(self):
        self.reset()

    def reset(self) -> None:
        self.delay_s = FIRST_BACKOFF_S

    def wait(self, stop: threading.Event) -> None:
        """Wait the current delay (less, if ``stop`` is set meanwhile), then double it."""
        stop.wait(self.delay_s)
        self.delay_s = min(self.delay_s * 2, MAX_BACKOFF_S)


@dataclass
class _Captured:
    frame: Frame
    vector: np.ndarray | None
    captured_at: float        # time.monotonic() when the frame was read


@dataclass
class SessionSummary:
    frames: int = 0
    dropped: int = 0
    events: int = 0
    reconnects: int = 0
    gave_up: bool = False
    latencies_s: deque = field(default_factory=lambda: deque(maxlen=LATENCY_SAMPLES))

    def latency_ms(self, quantile: float) -> float:
        if not self.latencies_s:
            return 0.0
        return 1000 * float(np.quantile(np.fromiter(self.latencies_s, float), quantile))

    def to_dict(self) -> dict:
        return {"dropped_frames": self.dropped, "reconnects": self.reconnects,
                "latency_ms_median": round(self.latency_ms(0.5), 2),
                "latency_ms_p99": round(self.latency_ms(0.99), 2)}


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


class LiveMonitor:
    """One watch session; ``run()`` until the source ends, a limit is hit or ``stop()``."""

    def __init__(self, spec, settings: Settings, out_dir: str | os.PathLike | None, *,
                 realtime: bool = False, max_reconnects: int | None = 10,
                 max_frames: int | None = None,
                 alerts: dict | None = None, clips: bool = True, show: bool = False,
                 status=None, sinks: list[Sink] = (), colour_pictures: bool = False,
                 camera: str | None = None):
        self.spec, self.settings = spec, settings
        # Colour pictures for the sinks that show them (the dashboard), not only for clips.
        self.colour_pictures = colour_pictures
        self.camera = camera   # named in every alert when a watch has several cameras
        self.realtime, self.max_reconnects = realtime, max_reconnects
        self.max_frames = max_frames
        self.clips, self.show, self.status = clips, show, status
        self.sinks = list(sinks)   # the caller's own sinks, told after the session's
        self.summary = SessionSummary()
        self._frames_at_tick = 0
        self._stop = threading.Event()
        self._source = self._open()   # raises SourceError now, before anything is written
        try:
            # Settings that cannot work at this source's frame rate: refused (SettingError)
            # before the result folder exists.
            self._prepared = prepare(self._source, settings)
        except ValueError:
            self._source.close()
            raise
        if out_dir is None:
            # A folder of its own, named for what and when: beside a file (as run's results
            # are), in the current folder for a camera or a stream, which have no folder.
            safe = "".join(c if c.isalnum() or c in "-_" else "_" for c in self._source.name)
            name = f"videvent-watch-{safe or 'stream'}-{time.strftime('%Y%m%d-%H%M%S')}"
            is_file = isinstance(spec, (str, os.PathLike)) and os.path.isfile(spec)
            out_dir = os.path.join(os.path.dirname(os.fspath(spec)), name) if is_file else name
        self.out_dir = check_destination(out_dir)
        try:
            self.out_dir.mkdir(parents=True, exist_ok=True)
            remove_stale(self.out_dir)
            mark(self.out_dir)
            # A watch's folder is complete only when it stops: an earlier run's marker goes.
            (self.out_dir / COMPLETE).unlink(missing_ok=True)
        except OSError as error:
            raise ValueError(f"cannot write results into '{self.out_dir}': "
                             f"{error.strerror or error}") from None
        self._alerts = AlertSinks(self.out_dir / "alerts.jsonl", **(alerts or {}))

    def _open(self):
        return open_for(self.spec, self.settings,
                        keep_colour=self.clips or self.show or self.colour_pictures)

    def stop(self) -> None:
        self._stop.set()

    # -- capture thread --------------------------------------------------------------------
    def _capture(self, run, put) -> None:
        """Read frames into the buffer (``put``), reopening a live source that drops, until
        the source ends, the range or the frame limit is reached, or the session stops."""
        source, index, started = self._source, run.start, time.monotonic()
        backoff = Backoff()
        # The range (-st/-et/-dt) and --max-frames end the capture in frames of the session:
        # the end of a range is not a source lost.
        end = run.end
        if self.max_frames is not None:
            end = min(end, run.start + self.max_frames) if end is not None \
                else run.start + self.max_frames
        # Only a live picture (or one played at its pace) goes stale: a file read flat out
        # waits for the detector instead of losing frames.
        paced = source.is_live or self.realtime
        while not self._stop.is_set():
            first_time = first_wall = None
            try:
                frames = source.frames(run.start, end) if index == run.start \
                    else source.frames()
                for frame in frames:
                    now = time.monotonic()
                    if self.realtime and not source.is_live:
                        if first_time is None:
                            first_time, first_wall = frame.time_s, now
                        delay = first_wall + (frame.time_s - first_time) - now
                        if delay > 0 and self._stop.wait(delay):
                            break
                        now = time.monotonic()
                    # Live sources restart their clocks on reconnection: number and time
                    # frames by the session instead.
                    if source.is_live:
                        frame = Frame(index, now - started, frame.image, frame.colour)
                    vector = None if frame.image is None else run.preprocess(frame.image)
                    if not put(_Captured(frame, vector, now), drop_oldest=paced):
                        break
                    index = frame.index + 1
                    if end is not None and index >= end:
                        break
            except (SourceError, OSError, ValueError):
                pass  # treated as the source ending, below
            source.close()
            if self._stop.is_set() or not source.is_live or (end is not None and index >= end):
                return
            put(("lost", index, time.monotonic() - started))
            source = None
            while source is None and not self._stop.is_set():
                if (self.max_reconnects is not None
                        and self.summary.reconnects >= self.max_reconnects):
                    self.summary.gave_up = True
                    return
                backoff.wait(self._stop)
                self.summary.reconnects += 1
                try:
                    source = self._open()
                except SourceError:
                    continue
                backoff.reset()
                put(("back", index, time.monotonic() - started))

    # -- the session -----------------------------------------------------------------------
    def run(self) -> SessionSummary:
        settings, source = self.settings, self._source
        run, segmenter = self._prepared
        segmenter.keep_events = False  # the session keeps what it needs, bounded
        seed_detector(run)  # a file watched is seeded as run seeds it; a live source is not
        session = self._session(run, segmenter)
        session.start()
        # As in run: one BLAS thread for the detector's small matrices, and the same numbers.
        blas_one_thread = threadpool_limits(limits=1, user_api="blas")
        buffer = ReadAhead(lambda put: self._capture(run, put), BUFFER_FRAMES,
                           name="videvent-capture")
        session.status("connected", {"uri": source.uri, "fps": source.fps})
        last_flush = last_status = last_item = time.monotonic()
        health_of = run.health_check()
        stalled = False
        try:
            while not self._stop.is_set():
                item = buffer.get(timeout=0.2)
                now = time.monotonic()
                if item is None:
                    if source.is_live and not stalled and now - last_item >= STALLED_AFTER_S:
                        stalled = True  # said once a silence; frames or a loss end it
                        session.status("stalled", {"seconds": round(now - last_item, 1)})
                    continue
                last_item, stalled = now, False
                if item is ReadAhead.END:
                    break
                if isinstance(item, tuple):
                    kind, index, time_s = item
                    session.status(kind, {"frame": index, "time_s": round(time_s, 3),
                                          "timecode": format_timecode(time_s)})
                    continue
                health = health_of(item.vector)
                verdict = run.detector.process_frame(item.frame.index, item.frame.time_s,
                                                     item.vector, health,
                                                     explain=settings.threshold_low)
                self.summary.latencies_s.append(time.monotonic() - item.captured_at)
                session.add(item.frame, item.vector, verdict)
                self.summary.frames += 1
                self.summary.events = session.events_completed
                if now - last_flush >= FLUSH_EVERY_S:
                    session.flush()
                    last_flush = now
                if now - last_status >= STATUS_EVERY_S:
                    self.summary.dropped = buffer.dropped
                    self._tick(session, now - last_status)
                    last_status = now
        finally:
            blas_one_thread.restore_original_limits()
            self._stop.set()
            buffer.close(timeout=5)
            self.summary.dropped = buffer.dropped
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
        from .output.report import write_plot, write_report
        try:
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
        """The session and its sinks: thumbnails, clips, alerts, the preview window."""
        settings, source = self.settings, self._source
        sinks: list[Sink] = [ThumbnailSink(self.out_dir / "thumbnails", settings.threshold_low,
                                           regions=run.preprocess.regions,
                                           overlay=Overlay.of(settings))]
        clips = None
        if self.clips:
            # Encoded from the frames held (a stream cannot be read again), boxes on request.
            clips = ClipSink(self.out_dir,
                             lambda n: CLIP_TEMPLATE.format(video=source.name, n=n), source.fps,
                             settings.frames("time_before_event", source.fps),
                             boxes=settings.bounding_box, box_level=settings.threshold_low)
            sinks.append(clips)
        sinks.append(AlertSink(self._alerts, clip_of=clips.path_of if clips else None,
                               camera=self.camera))
        if self.show:
            sinks.append(_Preview(self.stop, Overlay.of(settings), settings.threshold_low))
        sinks += self.sinks
        return Session(run, segmenter, scores_path=self.out_dir / "scores.csv", sinks=sinks,
                       live=True, summary_path=self.out_dir / "events.json",
                       summary_extra=lambda: {"session": self.summary.to_dict()},
                       report=lambda line: print(f"videvent: warning: {line}",
                                                 file=sys.stderr, flush=True))

    def _tick(self, session: Session, seconds: float) -> None:
        """About once a second: the status line, and the sinks that want the statistics."""
        if self.status is not None:
            self.status(self.summary)
        stats = {"fps": self.summary.frames - self._frames_at_tick,
                 "dropped": self.summary.dropped, "latency_ms": self.summary.latency_ms(0.5)}
        stats["fps"] /= max(seconds, 1e-9)
        self._frames_at_tick = self.summary.frames
        for sink in session.sinks:
            on_stats = getattr(sink, "on_stats", None)
            if on_stats is not None:
                on_stats(stats)


def watch(source, settings: Settings | None = None, *,
          out_dir: str | os.PathLike | None = None, sinks: list[Sink] = (),
          realtime: bool = False, max_frames: int | None = None,
          max_reconnects: int | None = 10, clips: bool = True,
          alerts: dict | None = None) -> SessionSummary:
    """Watch ``source`` (a camera number, a stream URL or a file) until it ends, the range
    (``settings.duration``) or ``max_frames`` is reached, or the process is interrupted;
    results go into ``out_dir`` as the session goes, and ``sinks`` (``videvent.session.Sink``)
    are told about every frame and event. ``alerts``: ``json_lines``, ``command``,
    ``webhook`` as for ``videvent watch``."""
    monitor = LiveMonitor(source, settings or Settings(), out_dir, realtime=realtime,
                          max_reconnects=max_reconnects, max_frames=max_frames,
                          alerts=alerts, clips=clips, sinks=sinks)
    return monitor.run()
