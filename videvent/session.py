"""The one session every front end feeds: a frame's single way through the house.

``run``, ``watch``, ``batch`` (its chunks) and ``export`` decode and score frames in their own
ways; each hands every scored frame to a :class:`Session`, which owns what follows: the
segmenter, ``scores.csv``, the runs of unusable frames, the absorptions, the events document,
and the *sinks* (thumbnails, clips, the annotated video, alerts) it tells about frames and
events as they are decided. A frame's fate is therefore the same whatever the front end.

A live session (``live=True``) may run for weeks: completed events are appended to
``events.jsonl`` as they end and the summary document keeps only the latest of them, so
memory and the I/O per event stay bounded. ``events.jsonl`` is the folder's history: a later
live session into the same folder appends to it (each line names the session it is of, by
``session_started``, as ``events.json`` does), while ``events.json`` is the latest session's;
a ``run`` into the folder replaces both (``output.names.RESULT_FILES``). ``events.jsonl`` is
rotated past ``EVENTS_LOG_BYTES`` (``events.jsonl.1``, ``.2``...), so no file grows for ever.
"""

from __future__ import annotations

import dataclasses
import errno
import json
import os
from collections import deque
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import cv2
import numpy as np

from ._version import __version__
from .output import ScoresWriter, write_events
from .output.events_json import read_events
from .atomic import write_atomically
from .kinds import EventEvidence, RegionBlocks, block_box, event_kind
from .output.folder import public_name
from .output.sink import SessionInfo, Sink
from .segmenter import Event, EventSegmenter
from .status import UNUSABLE, FrameStatus
from .timecode import format_timecode

__all__ = ["FrameStatus", "ProblemRun", "RunResult", "Session", "SessionInfo", "Sink",
           "TimePoint"]

# Frames at the start of a pass whose picture statistics are recorded in events.json, so an
# export can tell that the source was replaced by another video with as many frames.
FINGERPRINT_FRAMES = 8
# Frames whose blocks became background, or where something left, that an event's kind may
# still need (they are rare: one every few seconds at most, while lasting changes settle).
FLAGGED_FRAMES = 1024
# A live session's events.json keeps this many of its latest events (and problem runs,
# absorptions, source changes); all of its events are in events.jsonl.
LIVE_SUMMARY_LIMIT = 1000
EVENTS_LOG = "events.jsonl"
# events.jsonl is rotated past this size (about a thousand events a part).
EVENTS_LOG_BYTES = 1 << 20


@dataclass
class ProblemRun:
    """Consecutive frames of one status (blank, frozen, corrupt, warm-up)."""

    status: str
    start_frame: int
    end_frame: int
    start_time_s: float
    end_time_s: float

    def to_dict(self) -> dict:
        return {"status": str(self.status), "start_frame": self.start_frame,
                "end_frame": self.end_frame, "start_time_s": self.start_time_s,
                "end_time_s": self.end_time_s}


@dataclass
class TimePoint:
    """A frame and its time (where the detector absorbed a lasting change)."""

    frame: int
    time_s: float

    def to_dict(self) -> dict:
        return {"frame": self.frame, "time_s": self.time_s,
                "timecode": format_timecode(self.time_s)}


class ProblemRuns:
    """Runs of frames of the given ``statuses``; frames of a ``bridged`` status neither end a
    run nor are part of it."""

    def __init__(self, statuses: tuple[str, ...] = UNUSABLE, bridged: tuple[str, ...] = (),
                 limit: int | None = None):
        self.statuses, self.bridged = statuses, bridged
        self.runs: deque[ProblemRun] = deque(maxlen=limit)
        self._open: ProblemRun | None = None
        self._last = -1

    def add(self, score) -> None:
        status = score.status
        if status in self.bridged:
            self._last = score.index
            return
        run = self._open
        if run is not None and (run.status != status or score.index != self._last + 1):
            self._open = run = None
        self._last = score.index
        if status in self.statuses:
            if run is None:
                self._open = ProblemRun(str(status), score.index, score.index, score.time_s,
                                        score.time_s)
                self.runs.append(self._open)
            else:
                run.end_frame, run.end_time_s = score.index, score.time_s


@dataclass
class RunResult:
    """What a session found: the same facts as its ``events.json``, as typed records."""

    source: dict
    settings: dict
    frames_read: int
    events: list[Event]
    absorbed: list[TimePoint]
    frame_problems: list[ProblemRun]
    compare: list[str] = field(default_factory=list)
    out_dir: Path | None = None
    # Runs of frames the detector could not score yet (it was learning the background).
    warmup: list[ProblemRun] = field(default_factory=list)
    frames_scored: int = 0
    # Frames the container announced in the range scanned (None: it did not say).
    frames_expected: int | None = None
    # --compare: each other method's events (first and last core frame), as its own
    # detector and segmenter found them.
    compare_events: dict[str, list[list[int]]] = field(default_factory=dict)
    # Files exported in the same pass (annotated video, regions.csv, clips), where they are.
    exported: list[Path] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {
            "videvent_version": __version__,
            "source": self.source,
            "settings": self.settings,
            "frames_read": self.frames_read,
            "events": [event.to_dict() for event in self.events],
            "absorbed": [point.to_dict() for point in self.absorbed],
            "frame_problems": [run.to_dict() for run in self.frame_problems],
            "warmup": [run.to_dict() for run in self.warmup],
            "frames_scored": self.frames_scored,
            "compare": self.compare,
            "compare_events": self.compare_events,
        }

    @classmethod
    def load(cls, folder: str | os.PathLike) -> "RunResult":
        """The result of a run, read back from its result folder (``events.json``)."""
        document = read_events(Path(folder) / "events.json")
        try:
            return cls(
                source=document["source"], settings=document["settings"],
                frames_read=int(document["frames_read"]),
                events=[Event.from_dict(record) for record in document["events"]],
                absorbed=[TimePoint(a["frame"], a["time_s"]) for a in document["absorbed"]],
                frame_problems=[ProblemRun(**r) for r in document["frame_problems"]],
                compare=list(document.get("compare", [])), out_dir=Path(folder),
                warmup=[ProblemRun(**r) for r in document.get("warmup", [])],
                frames_scored=int(document.get("frames_scored", 0)),
                compare_events=dict(document.get("compare_events", {})))
        except (KeyError, TypeError, ValueError) as error:
            raise ValueError(f"'{folder}' holds an events.json this videvent cannot read: "
                             f"{error}") from None


def fingerprint(vectors: list[np.ndarray | None], shape: tuple[int, ...]
                ) -> list[list[float] | None]:
    """Each working frame shrunk to 4x4 pixels (None for a frame without a picture): close
    enough to survive another decoder's rounding, far enough to tell two videos apart."""
    return [None if v is None else np.round(cv2.resize(
        v.reshape(shape).astype(np.float32), (4, 4), interpolation=cv2.INTER_AREA), 4
    ).ravel().tolist() for v in vectors]


def source_uri(uri: str) -> str:
    """A file's absolute path (a result folder can be moved); other sources as given."""
    return os.path.abspath(uri) if os.path.exists(uri) else uri


@dataclass
class OutageEvent(Event):
    """An event of a live session during which its source was lost: its clock went on while
    its pictures did not, so beside ``duration_s`` (the clock's span) it says ``video_s``, the
    seconds of video it has (its frames at the source's rate: its clip's length)."""

    video_s: float = 0.0

    def to_dict(self) -> dict:
        return {**super().to_dict(), "video_s": self.video_s}


def start_record(detector) -> dict:
    """How a pass's start was judged, as the result records it: the frames that seeded the
    model or the start's reference, and where the reference took over."""
    return {"absorb_after_frames": detector.static_after, "seed_frames": detector.seeded_,
            "start_reference_frames": detector.start_reference_frames_,
            "start_reference_adopted_frame": detector.start_reference_adopted_}


class Session:
    """Every scored frame goes through ``add``; ``finish`` ends the session.

    ``run`` is the pass (``videvent.pipeline.Pass``) whose detector scores the frames;
    ``scores_path``: where ``scores.csv`` goes (None: nowhere); ``sinks`` are told about
    frames and events in the order given; ``live``: the summary document is written as the
    session goes (``summary_path``) and capped, the events appended to ``events.jsonl``;
    ``summary_extra()`` gives the front end's own facts for it (a dict).

    A run's results are whole or not written: a sink's failure to write ends it. A live
    session skips what it cannot write (a full disk, a folder gone) and watches on: a sink
    whose writing fails drops what it had half written and rests until the next event (told
    of the frames meanwhile only by ``on_frame_resting``, to keep what the next event needs),
    and ``report(line)`` says so once for each kind of failure.
    """

    def __init__(self, run, segmenter: EventSegmenter, *, scores_path: Path | None = None,
                 sinks: list[Sink] = (), live: bool = False, summary_path: Path | None = None,
                 summary_extra=None, report=None):
        self.run, self.segmenter, self.sinks, self.live = run, segmenter, list(sinks), live
        if live:
            segmenter.keep_events = False  # the session keeps what it needs, bounded
        self._report = report or (lambda line: None)
        self._resting: set[int] = set()        # sinks (by id) skipped until the next event
        self._reported: set[str] = set()       # failures said already
        self.summary_path, self.summary_extra = summary_path, summary_extra
        limit = LIVE_SUMMARY_LIMIT if live else None
        self.writer = None if scores_path is None else ScoresWriter(scores_path)
        self.events: deque[Event] = deque(maxlen=limit)
        self.absorbed: deque[TimePoint] = deque(maxlen=limit)
        self.problems = ProblemRuns(limit=limit)
        # The warm-up of a still scene is interleaved with frozen frames: one run all the same.
        self.warmup = ProblemRuns((FrameStatus.WARMUP,), bridged=UNUSABLE, limit=limit)
        self.source_events: deque[dict] = deque(maxlen=limit)
        self.frames_read = self.frames_scored = self.events_completed = 0
        # The source's fingerprint, taken as its first frames arrive (a live summary is
        # rewritten at every event's end).
        self.source_fingerprint: list[list[float] | None] = []
        self._pending: deque = deque()   # (frame, score) not yet decided by the segmenter
        self._open: Event | None = None  # the event whose core the last frames were in
        # The source's outages, [lost, back] in its times (back None while it is away): an
        # event across one has fewer seconds of video than of clock. The latest only.
        self._outages: deque[list] = deque(maxlen=64)
        self._log = None
        # When this session started (UTC): in events.json and on each of its events.jsonl
        # lines, which may follow those of earlier sessions into the same folder.
        self.started = datetime.now(timezone.utc).isoformat(timespec="milliseconds")
        if live and summary_path is not None:
            self._log = open(summary_path.with_name(EVENTS_LOG), "a", encoding="utf-8")
        # What the open events' frames showed (``videvent.kinds``), by event number, and the
        # frames that said blocks became background or something left: (frame, lasting, left).
        self._evidence: dict[int, EventEvidence] = {}
        self._flagged: deque[tuple[int, bool, bool]] = deque(maxlen=FLAGGED_FRAMES)
        self._region_blocks: RegionBlocks | None = None
        self._start_record: dict | None = None   # ``finish``'s: how the start was judged
        source = run.source
        written = summary_path or scores_path
        self.info = SessionInfo(source.name, source.uri, source.fps, source.width,
                                source.height, run.levels.threshold, run.settings,
                                None if written is None else Path(written).parent, self.started)

    def start(self) -> None:
        self._tell("on_start", self.info)

    def add(self, frame, vector: np.ndarray | None, score) -> None:
        """One scored frame, in order."""
        self.frames_read += 1
        if score.absorbed:
            self.absorbed.append(TimePoint(frame.index, frame.time_s))
        self.problems.add(score)
        self.warmup.add(score)
        self.frames_scored += score.status == FrameStatus.OK
        if score.lasting or score.left:
            self._flagged.append((frame.index, bool(score.lasting), bool(score.left)))
        if len(self.source_fingerprint) < FINGERPRINT_FRAMES:
            self.source_fingerprint += fingerprint([vector], self.run.frame_shape)
        self._pending.append((frame, score))
        self._decided(self.segmenter.update(frame.index, frame.time_s, score.score,
                                            absorbed=score.absorbed))

    def status(self, status: str, detail: dict) -> None:
        """The source's state changed (connected, lost, back, stalled, finished)."""
        if status in ("lost", "back"):
            self.source_events.append({"type": f"source_{status}", **detail})
            if "time_s" in detail:
                if status == "lost":
                    self._outages.append([detail["time_s"], None])
                elif self._outages and self._outages[-1][1] is None:
                    self._outages[-1][1] = detail["time_s"]
        self._tell("on_status", status, detail)

    def _spans_an_outage(self, event: Event) -> bool:
        return any(start < event.end_time_s and (end is None or end > event.start_time_s)
                   for start, end in self._outages)

    def finish(self, start: dict | None = None) -> None:
        """Decide every frame still pending and complete the open events (and, live, write
        the final summary document). ``start``: how the pass's start was judged
        (``start_record``) when the frames were scored elsewhere (a long video's chunks),
        else the pass's own detector says it."""
        self._start_record = start
        self._decided(self.segmenter.finish())
        if self.writer is not None:
            self._guarded(self.writer.path, self.writer.flush)
        if self.live and self.summary_path is not None:
            self._guarded(self.summary_path, self.write_summary)

    def flush(self) -> None:
        if self.writer is not None:
            self._guarded(self.writer.path, self.writer.flush)

    def close(self, failed: bool = False) -> None:
        """Close the sinks (discarding what they wrote, for those that can, when the
        session ``failed``) and the files of the session."""
        try:
            for sink in self.sinks:
                discard = getattr(sink, "discard", None)
                if failed and discard is not None:
                    discard()
                elif id(sink) in self._resting and discard is not None:
                    self._guarded(None, discard)
                else:
                    self._guarded(None, sink.close)
        finally:
            if self.writer is not None:
                self._guarded(self.writer.path, self.writer.close)
            if self._log is not None:
                self._guarded(self.summary_path.with_name(EVENTS_LOG), self._log.close)

    # -- deciding frames ---------------------------------------------------------------------
    def _decided(self, decisions) -> None:
        # Completed events end before the first frame after them is handed on, so that a
        # clip or an alert stops where the event does.
        completed = deque(self.segmenter.pop_completed())
        for decision in decisions:
            frame, score = self._pending.popleft()
            while completed and completed[0].end_frame < frame.index:
                self._event_done(completed.popleft())
            if self.writer is not None:
                self._guarded(self.writer.path, self.writer.write, score, decision.flagged,
                              decision.event_number)
            number = decision.event_number if decision.flagged else None
            if number is not None:
                self._event_frame(number, score)
            self._tell("on_frame", frame, score, number)
        for event in completed:
            self._event_done(event)

    def _event_frame(self, number: int, score) -> None:
        evidence = self._evidence.get(number)
        if evidence is None:
            levels = self.run.levels
            evidence = self._evidence[number] = EventEvidence(levels.threshold,
                                                              levels.threshold_low)
        evidence.add(score)
        if self._open is None or self._open.number != number:
            self._open = self._described(self.segmenter.open_event(number))
            self._resting.clear()              # a new event: every sink tries again
            self._tell("on_event_start", self._open)
        elif score.score > self._open.peak_score or self._kind(self._open) != self._open.kind:
            # Its peak grew, or its kind so far changed (a live alert says which).
            self._open = self._described(self.segmenter.open_event(number) or self._open)
            self._tell("on_event_update", self._open)

    def _kind(self, event: Event) -> str:
        """The event's kind from its frames so far (``videvent.kinds.event_kind``)."""
        evidence = self._evidence.get(event.number)
        lasting = left = False
        # Newest first, back to its core's start (frames in order): not the whole record,
        # on every frame of an event.
        for index, lasting_here, left_here in reversed(self._flagged):
            if index < event.core_start_frame:
                break
            # Something left while it lasted; something appeared and stayed when blocks became
            # background as it ended (the absorption ends the core: the frame after it, in its
            # padding). Not earlier: a visitor who stands still for --absorb-after is absorbed
            # in part, and then leaves.
            left |= left_here and event.core_start_frame <= index <= event.end_frame
            lasting |= lasting_here and event.core_end_frame <= index <= event.end_frame
        return event_kind(evidence.evidence if evidence else {}, rebuilt=event.absorbed,
                          lasting=lasting, left=left)

    def _described(self, event: Event) -> Event:
        """``event`` with what was seen and where: its kind, box and regions (while it is
        open, as they stand so far)."""
        evidence = self._evidence.get(event.number)
        blocks = None if evidence is None else evidence.blocks
        if self._region_blocks is None:
            self._region_blocks = RegionBlocks(self.run.preprocess.regions, self.info.width,
                                               self.info.height)
        return dataclasses.replace(event, kind=self._kind(event),
                                   box=block_box(blocks, self.info.width, self.info.height),
                                   regions=self._region_blocks.touched(blocks))

    def _event_done(self, event: Event) -> None:
        event = self._described(event)
        self._evidence.pop(event.number, None)
        if self._spans_an_outage(event) and self.info.fps:
            # Its clock went on while the source was away: the video it has is its frames.
            event = OutageEvent(**dataclasses.asdict(event), video_s=round(
                (event.end_frame - event.start_frame + 1) / self.info.fps, 3))
        if self._open is not None and self._open.number == event.number:
            self._open = None
        files: dict[str, str] = {}
        self._tell("on_event_end", event, files)
        self.events.append(event)
        self.events_completed += 1
        if self._log is not None:
            self._guarded(self.summary_path.with_name(EVENTS_LOG), self._append_log,
                          json.dumps({**event.to_dict(), **files,
                                      "session_started": self.started}) + "\n")
        if self.live and self.summary_path is not None:
            self._guarded(self.summary_path, self.write_summary)

    # -- failures to write -------------------------------------------------------------------
    def _tell(self, method: str, *args) -> None:
        """Call ``method`` of every sink (live: of every sink not resting; a resting one is
        told of frames by its ``on_frame_resting``)."""
        for sink in self.sinks:
            if id(sink) in self._resting:
                # It writes nothing, but keeps what the next event needs (a clip's pre-roll).
                if method != "on_frame" or not hasattr(sink, "on_frame_resting"):
                    continue
                method_here = "on_frame_resting"
            else:
                method_here = method
            try:
                getattr(sink, method_here)(*args)
            except OSError as error:
                if not self.live:
                    raise                      # a run's results are whole or not written
                if error.errno in (errno.ENOSPC, errno.EDQUOT):
                    self._disk_full()
                self._resting.add(id(sink))
                discard = getattr(sink, "discard", None)
                if discard is not None:
                    try:
                        discard()              # what it had half written goes
                    except OSError:
                        pass
                if error.filename is None and getattr(sink, "folder", None) is not None:
                    error.filename = str(sink.folder)   # where it was writing
                self._failed(error)

    def _disk_full(self) -> None:
        """A write met a full disk: the sinks that can free space (a retention) do, by their
        own rule, so that the next event has room."""
        for sink in self.sinks:
            free = getattr(sink, "on_disk_full", None)
            if free is not None:
                free()

    def _guarded(self, path, write, *args) -> None:
        """One of the session's own writes; live, a failure is said once and skipped."""
        try:
            write(*args)
        except OSError as error:
            if not self.live:
                raise
            if error.filename is None:
                error.filename = str(path)
            if error.errno in (errno.ENOSPC, errno.EDQUOT):
                self._disk_full()
            self._failed(error)

    def _append_log(self, line: str) -> None:
        if self._log.tell() and self._log.tell() + len(line) > EVENTS_LOG_BYTES:
            self._rotate_log()
        self._log.write(line)
        self._log.flush()

    def _rotate_log(self) -> None:
        """``events.jsonl`` renamed, whole, to ``events.jsonl.N`` (one more than the last:
        the oldest has the lowest number) and begun again: no file grows for ever, and a
        reader always meets complete lines."""
        path = self.summary_path.with_name(EVENTS_LOG)
        numbers = [int(part.suffix[1:]) for part in path.parent.glob(f"{EVENTS_LOG}.*")
                   if part.suffix[1:].isdigit()]
        self._log.close()
        try:
            os.rename(path, path.with_name(f"{EVENTS_LOG}.{max(numbers, default=0) + 1}"))
        finally:
            self._log = open(path, "a", encoding="utf-8")

    def _failed(self, error: OSError) -> None:
        reason = error.strerror or type(error).__name__
        where = public_name(os.fsdecode(error.filename)) if error.filename else "the results"
        if reason not in self._reported:
            self._reported.add(reason)
            self._report(f"cannot write '{where}': {reason}; watching on, without what "
                         f"cannot be written")

    # -- what the session found --------------------------------------------------------------
    def source_record(self) -> dict:
        run, source = self.run, self.run.source
        height, width = run.frame_shape[:2]
        record = {
            "uri": source_uri(source.uri), "name": source.name, "fps": source.fps,
            "fps_assumed": source.fps_assumed,
            "frame_count": source.frame_count, "width": source.width, "height": source.height,
            "working_width": width, "working_height": height, "first_frame": run.start,
            **(self._start_record or start_record(run.detector)),
            "fingerprint": list(self.source_fingerprint),
        }
        if self.live:
            record["live"] = True
        return record

    def result(self, compare: tuple[str, ...] = (),
               compare_events: dict[str, list[list[int]]] | None = None) -> RunResult:
        run, source = self.run, self.run.source
        expected = None
        if source.frame_count and not self.live:
            expected = max(0, (source.frame_count if run.end is None
                               else min(run.end, source.frame_count)) - run.start)
        return RunResult(source=self.source_record(), settings=run.settings_record(),
                         frames_read=self.frames_read, events=list(self.events),
                         absorbed=list(self.absorbed), frame_problems=list(self.problems.runs),
                         compare=list(compare), warmup=list(self.warmup.runs),
                         frames_scored=self.frames_scored, frames_expected=expected,
                         compare_events=compare_events or {})

    def write_summary(self) -> None:
        """(Re)write the summary document, ``events.json``, in place (complete or not at all);
        a live session's also says how the source came and went, and the front end's facts."""
        document = self.result().to_dict()
        if self.live:
            document["source_events"] = list(self.source_events)
            document["session_started"] = self.started
            document.update(self.summary_extra() if self.summary_extra else {})
        # Under a temporary name, renamed into place (removed if writing fails: a full disk).
        write_atomically(self.summary_path, lambda temporary: write_events(temporary, document))
