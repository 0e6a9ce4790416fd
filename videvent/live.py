"""Live monitoring: the detector on a camera, a network stream or a file at its real pace.

Capture runs on its own thread into a bounded buffer; when scoring falls behind, the oldest
frames are dropped (and counted) rather than queued without limit, so latency stays bounded.
A stream that drops is reopened with exponential backoff while the model is kept; "source
lost" and "source back" are alerts of their own. Results are written as the session goes:
``scores.csv`` is flushed every second and ``events.json`` rewritten at every event's end, so
a crash loses at most the last second; the plot and the report come at a clean stop.
"""

from __future__ import annotations

import os
import threading
import time
from collections import deque
from dataclasses import dataclass, field

import numpy as np
from threadpoolctl import threadpool_limits

from . import __version__
from .alerts import AlertSinks
from .output import ScoresWriter, write_events
from .output.folder import check_destination, mark, partial_path, remove_stale
from .output.video import VideoWriter
from .pipeline import PeakFrames, ProblemRuns, prepare, seed_detector, write_thumbnail
from .preprocess import frame_health
from .segmenter import Event
from .settings import Settings
from .sources import Frame, SourceError, open_source
from .timecode import format_timecode

BUFFER_FRAMES = 64            # frames captured ahead of the detector, at most
FIRST_BACKOFF_S, MAX_BACKOFF_S = 0.5, 10.0
STATUS_EVERY_S = 1.0
FLUSH_EVERY_S = 1.0
UPDATE_EVERY_S = 1.0          # "update" alerts while an event goes on
LATENCY_SAMPLES = 20_000


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


class _DropOldestBuffer:
    """A bounded hand-over between the capture thread and the detector."""

    def __init__(self, size: int):
        self._items: deque = deque(maxlen=size)
        self._ready = threading.Condition()
        self.dropped = 0

    def put(self, item, *, wait: threading.Event | None = None) -> None:
        """Hand over ``item``. Full: drop the oldest frame, or, given ``wait`` (a file read
        as fast as it can be scored), wait for room until that event is set."""
        with self._ready:
            while wait is not None and len(self._items) == self._items.maxlen:
                if wait.is_set():
                    return
                self._ready.wait(0.1)
            if isinstance(item, _Captured) and len(self._items) == self._items.maxlen:
                self.dropped += 1  # deque drops the oldest on append
            self._items.append(item)
            self._ready.notify_all()

    def get(self, timeout: float):
        with self._ready:
            if not self._items:
                self._ready.wait(timeout)
            item = self._items.popleft() if self._items else None
            self._ready.notify_all()
            return item


class LiveMonitor:
    """One watch session; ``run()`` until the source ends, a limit is hit or ``stop()``."""

    def __init__(self, spec, settings: Settings, out_dir: str | os.PathLike | None, *,
                 realtime: bool = False, max_reconnects: int | None = 10,
                 max_frames: int | None = None,
                 alerts: dict | None = None, clips: bool = True, show: bool = False,
                 status=None):
        self.spec, self.settings = spec, settings
        self.realtime, self.max_reconnects = realtime, max_reconnects
        self.max_frames = max_frames
        self.clips, self.show, self.status = clips, show, status
        self.summary = SessionSummary()
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
        except OSError as error:
            raise ValueError(f"cannot write results into '{self.out_dir}': "
                             f"{error.strerror or error}") from None
        (self.out_dir / "thumbnails").mkdir(exist_ok=True)
        self._alerts = AlertSinks(self.out_dir / "alerts.jsonl", **(alerts or {}))

    def _open(self):
        return open_source(self.spec, colour=self.settings.colour, backend=self.settings.backend,
                           fps=self.settings.fps, keep_colour=self.clips or self.show)

    def stop(self) -> None:
        self._stop.set()

    # -- capture thread --------------------------------------------------------------------
    def _capture(self, run, buffer: _DropOldestBuffer) -> None:
        source, index, started = self._source, 0, time.monotonic()
        backoff = FIRST_BACKOFF_S
        try:
            while not self._stop.is_set():
                first_time = first_wall = None
                try:
                    frames = source.frames(run.start, run.end) if index == 0 else source.frames()
                    for frame in frames:
                        if self._stop.is_set():
                            break
                        now = time.monotonic()
                        if self.realtime and not source.is_live:
                            if first_time is None:
                                first_time, first_wall = frame.time_s, now
                            delay = first_wall + (frame.time_s - first_time) - now
                            if delay > 0:
                                time.sleep(delay)
                                now = time.monotonic()
                        # Live sources restart their clocks on reconnection: number and time
                        # frames by the session instead.
                        if source.is_live:
                            frame = Frame(index, now - started, frame.image, frame.colour)
                        vector = None if frame.image is None else run.preprocess(frame.image)
                        # Only a live picture (or one played at its pace) goes stale: a file
                        # read flat out waits for the detector instead of losing frames.
                        paced = source.is_live or self.realtime
                        buffer.put(_Captured(frame, vector, now),
                                   wait=None if paced else self._stop)
                        index = frame.index + 1
                except (SourceError, OSError, ValueError):
                    pass  # treated as the source ending, below
                source.close()
                if self._stop.is_set() or not source.is_live:
                    break
                buffer.put(("lost", index, time.monotonic() - started), wait=self._stop)
                source = None
                while source is None and not self._stop.is_set():
                    if (self.max_reconnects is not None
                            and self.summary.reconnects >= self.max_reconnects):
                        self.summary.gave_up = True
                        return
                    self._stop.wait(backoff)
                    backoff = min(backoff * 2, MAX_BACKOFF_S)
                    self.summary.reconnects += 1
                    try:
                        source = self._open()
                    except SourceError:
                        continue
                    backoff = FIRST_BACKOFF_S
                    buffer.put(("back", index, time.monotonic() - started), wait=self._stop)
        finally:
            # Markers wait for room rather than evict a frame (unless the session is stopping).
            buffer.put(("end", index, time.monotonic() - started), wait=self._stop)

    # -- the session -----------------------------------------------------------------------
    def run(self) -> SessionSummary:
        settings, source = self.settings, self._source
        fps = source.fps
        run, segmenter = self._prepared
        seed_detector(run)  # a file watched is seeded as run seeds it; a live source is not
        pre_roll = settings.frames("time_before_event", fps)
        writer = ScoresWriter(self.out_dir / "scores.csv")
        buffer = _DropOldestBuffer(BUFFER_FRAMES)
        capture = threading.Thread(target=self._capture, args=(run, buffer), daemon=True,
                                   name="videvent-capture")
        state = _SessionState(self, run, segmenter, writer, pre_roll)
        state.alert("session_start", source=source.uri, fps=fps)
        # As in run: one BLAS thread for the detector's small matrices, and the same numbers.
        blas_one_thread = threadpool_limits(limits=1, user_api="blas")
        capture.start()
        started = time.monotonic()
        last_flush = last_status = started
        previous = first_time = None
        duration = settings.frames("duration", fps)
        limit_s = None if duration is None else duration / fps
        try:
            while not self._stop.is_set():
                item = buffer.get(timeout=0.2)
                now = time.monotonic()
                if item is None:
                    continue
                if isinstance(item, tuple):
                    kind, index, time_s = item
                    if kind == "end":
                        break
                    state.source_change(kind, index, time_s)
                    continue
                first_time = item.frame.time_s if first_time is None else first_time
                if limit_s is not None and item.frame.time_s - first_time >= limit_s:
                    break
                health = frame_health(item.vector, previous)
                if item.vector is not None:
                    previous = item.vector
                verdict = run.detector.process_frame(item.frame.index, item.frame.time_s,
                                                     item.vector, health,
                                                     explain=settings.threshold_low)
                self.summary.latencies_s.append(time.monotonic() - item.captured_at)
                state.add(item.frame, verdict)
                self.summary.frames += 1
                if self.show:
                    self._preview(item.frame, verdict)
                if now - last_flush >= FLUSH_EVERY_S:
                    writer.flush()
                    last_flush = now
                if self.status is not None and now - last_status >= STATUS_EVERY_S:
                    self.summary.dropped = buffer.dropped
                    self.status(self.summary)
                    last_status = now
                if self.max_frames is not None and self.summary.frames >= self.max_frames:
                    break
        finally:
            blas_one_thread.restore_original_limits()
            self._stop.set()
            capture.join(timeout=5)
            self.summary.dropped = buffer.dropped
            state.finish()
            writer.close()
            summary = self.summary
            state.alert("session_end", frames=summary.frames, events=summary.events,
                        dropped=summary.dropped, reconnects=summary.reconnects,
                        latency_ms_median=round(summary.latency_ms(0.5), 2),
                        latency_ms_p99=round(summary.latency_ms(0.99), 2),
                        results=os.path.abspath(self.out_dir))
            self._alerts.close()
            if self.show:
                import cv2
                cv2.destroyAllWindows()
        self._write_final(state)
        return self.summary

    def _preview(self, frame: Frame, verdict) -> None:
        import cv2

        from .output.annotate import heat_overlay
        picture = frame.colour if frame.colour is not None else frame.image
        if picture is None:
            return
        if picture.ndim == 2:
            picture = cv2.cvtColor(picture, cv2.COLOR_GRAY2BGR)
        if verdict.residual_image is not None:
            picture = heat_overlay(picture, verdict.residual_image)
        cv2.imshow("videvent watch", picture)
        if cv2.waitKey(1) & 0xFF == ord("q"):
            self.stop()

    def _write_final(self, state: "_SessionState") -> None:
        state.write_events_json()
        from .output.report import write_plot, write_report
        write_plot(self.out_dir)
        write_report(self.out_dir)


class _SessionState:
    """Segmenting, alerting, clips and thumbnails as frames are scored."""

    def __init__(self, monitor: LiveMonitor, run, segmenter, writer, pre_roll: int):
        self.monitor, self.run, self.segmenter, self.writer = monitor, run, segmenter, writer
        self.pre_roll = pre_roll
        self.pending: deque = deque()
        self.recent: deque = deque(maxlen=pre_roll + 64)   # frames for the clips' pre-roll
        self.problems, self.peaks = ProblemRuns(), PeakFrames()
        self.absorbed: list[dict] = []
        self.source_events: list[dict] = []
        self.open_event: dict | None = None
        self.clip: tuple[int, VideoWriter] | None = None   # (event number, writer)
        self.written_up_to = -1
        self.frames_read = 0

    def alert(self, kind: str, **fields) -> None:
        self.monitor._alerts.send({"type": kind, "wall_time": round(time.time(), 3), **fields})

    def source_change(self, kind: str, index: int, time_s: float) -> None:
        name = {"lost": "source_lost", "back": "source_back"}[kind]
        record = {"type": name, "frame": index, "time_s": round(time_s, 3),
                  "timecode": format_timecode(time_s)}
        self.source_events.append(record)
        self.alert(name, frame=index, time_s=record["time_s"], timecode=record["timecode"])

    def add(self, frame: Frame, verdict) -> None:
        self.frames_read += 1
        if verdict.absorbed:
            self.absorbed.append({"frame": frame.index, "time_s": frame.time_s,
                                  "timecode": format_timecode(frame.time_s)})
        self.problems.add(verdict)
        self.peaks.add(frame, verdict)
        if self.monitor.clips and frame.colour is not None:
            self.recent.append((frame.index, frame.colour))
            if self.clip is not None:
                self.clip[1].write(frame.colour)
        self.pending.append(verdict)
        self._decided(self.segmenter.update(frame.index, frame.time_s, verdict.score,
                                            absorbed=verdict.absorbed))

    def _decided(self, decisions) -> None:
        for decision in decisions:
            verdict = self.pending.popleft()
            self.writer.write(verdict, decision.flagged, decision.event_number)
            if decision.flagged:
                self._event_frame(decision.event_number, verdict)
        for event in self.segmenter.pop_completed():
            self._event_done(event)

    def _event_frame(self, number: int, verdict) -> None:
        current = self.open_event
        if current is None or current["event"] != number:
            self.open_event = current = {"event": number, "start_frame": verdict.index,
                                         "start_time_s": verdict.time_s,
                                         "peak_score": verdict.score, "last_update": verdict.time_s}
            self._open_clip(number, verdict.index)
            self.alert("start", event=number, frame=verdict.index,
                       time_s=round(verdict.time_s, 3), timecode=format_timecode(verdict.time_s),
                       score=round(verdict.score, 3),
                       clip=None if self.clip is None else os.path.abspath(self.clip[1].path))
            return
        current["peak_score"] = max(current["peak_score"], verdict.score)
        if verdict.time_s - current["last_update"] >= UPDATE_EVERY_S:
            current["last_update"] = verdict.time_s
            self.alert("update", event=number, frame=verdict.index,
                       time_s=round(verdict.time_s, 3), timecode=format_timecode(verdict.time_s),
                       score=round(verdict.score, 3), peak_score=round(current["peak_score"], 3),
                       duration_s=round(verdict.time_s - current["start_time_s"], 3))

    def _open_clip(self, number: int, first_flagged: int) -> None:
        if not self.monitor.clips or not self.recent:
            return
        self._close_clip()
        height, width = self.recent[-1][1].shape[:2]
        name = f"{self.run.source.name}.event{number:03d}.mp4"
        writer = VideoWriter(self.monitor.out_dir / name, width, height, self.run.source.fps)
        for index, picture in self.recent:  # the time before the start, from the ring buffer
            if index >= first_flagged - self.pre_roll and picture.shape[:2] == (height, width):
                writer.write(picture)
        self.clip = (number, writer)

    def _close_clip(self) -> None:
        # Forgotten before closing: a clip that failed to close (disk full) is not closed twice.
        clip, self.clip = self.clip, None
        if clip is not None:
            clip[1].close()

    def _event_done(self, event: Event) -> None:
        clip = thumbnail = None
        if self.clip is not None and self.clip[0] == event.number:
            clip = self.clip[1].path
            self._close_clip()
        peak = self.peaks.take(event)
        if peak is not None:
            thumbnail = self.monitor.out_dir / "thumbnails" / f"event{event.number:03d}.jpg"
            write_thumbnail(thumbnail, *peak, self.monitor.settings.threshold_low)
        if self.open_event is not None and self.open_event["event"] == event.number:
            self.open_event = None
        # Rounded as the other alerts are: a receiver is shown 5.2 s, not 5.199999999999999.
        fields = {key: round(value, 3) if isinstance(value, float) else value
                  for key, value in event.to_dict().items() if key != "number"}
        self.alert("end", event=event.number, **fields,
                   thumbnail=None if thumbnail is None else os.path.abspath(thumbnail),
                   clip=None if clip is None else os.path.abspath(clip))
        self.monitor.summary.events += 1
        self.write_events_json()

    def finish(self) -> None:
        """Close the event under way and decide every frame still pending."""
        self._decided(self.segmenter.finish())
        self._close_clip()
        self.writer.flush()

    def write_events_json(self) -> None:
        source = self.run.source
        document = {
            "videvent_version": __version__,
            "source": {"uri": os.path.abspath(source.uri) if os.path.exists(source.uri)
                       else source.uri, "name": source.name, "fps": source.fps,
                       "frame_count": None, "width": source.width, "height": source.height,
                       "working_width": self.run.frame_shape[1],
                       "working_height": self.run.frame_shape[0], "first_frame": self.run.start,
                       "absorb_after_frames": self.run.detector.static_after, "live": True},
            "settings": self.monitor.settings.to_dict(),
            "frames_read": self.frames_read,
            "events": [event.to_dict() for event in self.segmenter.events],
            "absorbed": self.absorbed,
            "frame_problems": self.problems.runs,
            "source_events": self.source_events,
            "compare": [],
            "session": {"dropped_frames": self.monitor.summary.dropped,
                        "reconnects": self.monitor.summary.reconnects,
                        "latency_ms_median": round(self.monitor.summary.latency_ms(0.5), 2),
                        "latency_ms_p99": round(self.monitor.summary.latency_ms(0.99), 2)},
        }
        target = self.monitor.out_dir / "events.json"
        temporary = partial_path(target)
        write_events(temporary, document)
        os.replace(temporary, target)
