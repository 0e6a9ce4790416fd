"""A long video scored in time chunks at once, with the verdicts of one pass from its start.

``batch --chunk-minutes`` scores every chunk in a task of its own (``score_chunk``): a pass
that starts a look-back before the chunk (``SubspaceWindowDetector.look_back``, how far the
window's memory reaches), as ``videvent run --start-time`` would start there. Its state
(``Pass.state``) is kept at the chunk's start and at its end. ``JoinedChunks`` then takes
the chunks in order. Each chunk's detector at its start must hold the same background as the
one the chunk before it ended with (``holds_background_of``), and then its verdicts stand.
Where it does not (in a scene occupied most of the time, which background a pass holds
depends on where it started: docs/batch.md), the chunk is scored again from that
state, which gives exactly the verdicts of the pass from the video's start. That, and the
verdicts going through one session (an event across a boundary is one event), is all that
runs in order.

Each chunk also decodes the last frames before its start, which must be the very frames the
chunk before it ended with (numbers, times and pixels), and a chunk scored again must begin
with the chunk's own first frames: a file whose frames are numbered differently after a seek
fails this (``BoundaryMismatch``), and is then scanned in one pass.
"""

from __future__ import annotations

import pickle
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np

from .detectors import FrameScore
from .engine import Engine, one_blas_thread
from .output.thumbnails import ThumbnailStyle
from .passes import open_for, prepare_pass, source_regions
from .session import FINGERPRINT_FRAMES, start_record
from .settings import Settings
from .sinks import thumbnail_style
from .sources import Frame

# Frames on each side of a boundary compared between the passes that decoded them.
BOUNDARY_CHECK = 4
# How often a chunk's task looks whether its result is still wanted.
UNWANTED_POLL_S = 0.5


class BoundaryMismatch(Exception):
    """Two passes decoded the frames they share differently."""


@dataclass
class ChunkVerdicts:
    """The verdicts on one chunk's frames (``start <= index < end``), column by column, and
    what joining it to its neighbours needs."""

    first: int                       # where its pass started: its look-back
    start: int
    end: int | None
    index: np.ndarray
    time_s: np.ndarray
    residual: np.ndarray
    score: np.ndarray
    status: list[str]
    admitted: np.ndarray
    absorbed: np.ndarray
    # The residual image and block scores of the best frame of each run of explained frames
    # that reaches the threshold: the only frames an event's thumbnail can show (a frame
    # explained is one scoring from the low threshold up; a run also ends at an absorption).
    explained: dict[int, tuple[np.ndarray, np.ndarray | None]]
    thumbnails: dict[int, bytes]      # ... and the thumbnail of each (its picture is here)
    vectors: list[np.ndarray | None]  # its first frames' (the video's fingerprint)
    before: list[tuple]               # (index, time_s, vector) of the last frames before start
    head: list[tuple]                 # ... of its first frames
    tail: list[tuple]                 # ... of its last frames
    at_start: bytes | None            # the pass's state before its first frame
    at_end: bytes
    # What each verdict's evidence was, and its flags (``FrameScore``): its event's kind.
    evidence: list[str] = field(default_factory=list)
    lasting: list[bool] = field(default_factory=list)
    left: list[bool] = field(default_factory=list)
    # Each explained frame's blocks from the low threshold up (144 booleans, not the residual
    # image): its event's box, as a pass in one piece gives it.
    unusual: dict[int, np.ndarray] = field(default_factory=dict)
    low: float = 0.0

    def frames(self) -> Iterator[tuple[Frame, np.ndarray | None, FrameScore]]:
        """(frame without its picture, working vector or None, verdict), in order."""
        for k, index in enumerate(self.index.tolist()):
            residual_image, block_scores = self.explained.get(index, (None, None))
            if block_scores is None and index in self.unusual:
                # At the low threshold where unusual, under it elsewhere: all the box reads.
                block_scores = np.where(self.unusual[index], self.low, -np.inf)
            time_s = float(self.time_s[k])
            yield (Frame(index, time_s, None), self.vectors[k] if k < len(self.vectors) else None,
                   FrameScore(index, time_s, float(self.residual[k]), float(self.score[k]),
                              self.status[k], bool(self.admitted[k]), bool(self.absorbed[k]),
                              residual_image, block_scores,
                              self.evidence[k] if self.evidence else "",
                              bool(self.lasting and self.lasting[k]),
                              bool(self.left and self.left[k])))


class _Recorder:
    """The engine's consumer for a chunk's pass: keeps the pass's state where the chunk
    starts, and the verdicts from there on."""

    def __init__(self, run, start: int, style: ThumbnailStyle):
        self.run, self.start, self.threshold, self.style = (run, start, run.levels.threshold,
                                                            style)
        self.at_start: bytes | None = None
        self.before: deque = deque(maxlen=BOUNDARY_CHECK)
        self.tail: deque = deque(maxlen=BOUNDARY_CHECK)
        self.head: list[tuple] = []
        # The verdicts' fields, column by column: a verdict's residual image is let go of
        # unless its frame may be an event's peak.
        self.columns: tuple[list, ...] = ([], [], [], [], [], [], [], [], [], [])
        self.vectors: list[np.ndarray | None] = []
        self.explained: dict[int, tuple] = {}
        self.unusual: dict[int, np.ndarray] = {}
        self.thumbnails: dict[int, bytes] = {}
        # The best explained frame of the current run, and its frame (its picture).
        self._best: tuple[FrameScore, Frame] | None = None

    def add(self, frame, vector, verdict: FrameScore) -> None:
        decoded = (frame.index, frame.time_s, vector)
        if frame.index < self.start:
            self.before.append(decoded)
            if frame.index == self.start - 1:
                self.at_start = self.run.state()
            return
        if len(self.head) < BOUNDARY_CHECK:
            self.head.append(decoded)
        if len(self.vectors) < FINGERPRINT_FRAMES:
            self.vectors.append(vector)
        self.tail.append(decoded)
        # The segmenter ends an event only where no picture is explained (its score is under
        # the low threshold) or a change is absorbed: each event's core is whole runs.
        if verdict.residual_image is None or verdict.absorbed:
            self._end_run()
        if verdict.residual_image is not None and (self._best is None
                                                   or verdict.score > self._best[0].score):
            self._best = verdict, frame
        if verdict.block_scores is not None:
            self.unusual[verdict.index] = verdict.block_scores >= self.run.levels.threshold_low
        for column, value in zip(self.columns, (
                verdict.index, verdict.time_s, verdict.residual, verdict.score,
                str(verdict.status), verdict.admitted, verdict.absorbed, verdict.evidence,
                verdict.lasting, verdict.left)):
            column.append(value)

    def status(self, kind: str, detail: dict) -> None:
        """A file's news (only a live source's matter)."""

    def _end_run(self) -> None:
        best, self._best = self._best, None
        if best is None or best[0].score < self.threshold:
            return
        verdict, frame = best
        self.explained[verdict.index] = (verdict.residual_image, verdict.block_scores)
        picture = frame.picture_to_show()
        if picture is not None:       # made here, in parallel, not decoded again at the join
            self.thumbnails[verdict.index] = self.style.jpeg(picture, verdict)

    def result(self, first: int, end: int | None) -> ChunkVerdicts:
        self._end_run()
        (index, time_s, residual, score, status, admitted, absorbed, evidence, lasting,
         left) = self.columns
        if first < self.start and (self.at_start is None or not index):
            raise BoundaryMismatch(f"the pass from frame {first} never reached frame "
                                   f"{self.start}")
        return ChunkVerdicts(
            first, self.start, end, np.array(index, np.int64), np.array(time_s, np.float64),
            np.array(residual, np.float64), np.array(score, np.float64), status,
            np.array(admitted, bool), np.array(absorbed, bool), self.explained,
            self.thumbnails, self.vectors,
            list(self.before), self.head, list(self.tail), self.at_start, self.run.state(),
            evidence, lasting, left, self.unusual, self.run.levels.threshold_low)


def score_chunk(spec: str, settings: Settings, first: int, start: int, end: int | None, *,
                seed_sample: list[np.ndarray] | None = None,
                state: bytes | None = None) -> ChunkVerdicts:
    """Task: the verdicts on frames ``start <= index < end`` of a pass from frame ``first``
    (seeded, as a start is, from ``seed_sample``: frames spread over the video, decoded once
    for all its chunks), or going on from ``state`` (then ``first`` is ``start``)."""
    with open_for(spec, settings) as source:
        run = prepare_pass(source, settings)
        run.start, run.end, run.seed_sample = first, end, seed_sample
        if state is not None:
            run.resume(state)
        recorder = _Recorder(run, start, thumbnail_style(settings,
                                                         source_regions(settings, source)))
        # Residual images from the low threshold up, as ``videvent run`` makes them.
        engine = Engine(run, explain=settings.threshold_low)
        with _stopped_when_unwanted(engine.stop):
            engine.run(recorder)
    return recorder.result(first, end)


@contextmanager
def _stopped_when_unwanted(stop: threading.Event) -> Iterator[None]:
    """In a Dask task: ``stop`` is set once no one wants the task's result (the chunked scan
    gave up on its chunks and cancelled them), which is the only way a running task ends
    early. Elsewhere, nothing."""
    try:
        from distributed import get_worker
        from distributed.worker import thread_state
        worker, key = get_worker(), thread_state.key
    except (ImportError, ValueError, AttributeError):   # not a Dask task
        yield
        return
    done = threading.Event()

    def watch() -> None:
        while not done.wait(UNWANTED_POLL_S):
            task = worker.state.tasks.get(key)
            if task is None or task.state == "cancelled":
                stop.set()
                return

    watcher = threading.Thread(target=watch, name="videvent-unwanted", daemon=True)
    watcher.start()
    try:
        yield
    finally:
        done.set()
        watcher.join()


def holds_same_background(state: bytes, other: bytes) -> bool:
    """Whether the detectors of two pass states hold the same background."""
    detector, _ = pickle.loads(state)
    other_detector, _ = pickle.loads(other)
    with one_blas_thread():      # as the passes computed them: the decision is the verdicts'
        return detector.holds_background_of(other_detector)


def _same_frames(ours: list[tuple], theirs: list[tuple]) -> bool:
    return len(ours) == len(theirs) > 0 and all(
        a[0] == b[0] and a[1] == b[1] and (a[2] is None) == (b[2] is None)
        and (a[2] is None or np.array_equal(a[2], b[2])) for a, b in zip(ours, theirs))


class JoinedChunks:
    """The chunks' verdicts in order, as the pass from the video's start gives them: ``run``
    gives them to a consumer (a session) as ``Engine.run`` does.

    ``chunks``: the chunks' ``ChunkVerdicts`` in order (the first scored from the video's
    start). ``rescore(chunk, state)``: the chunk scored again going on from ``state``
    (``score_chunk``). After ``run``, ``rescored`` lists the first frames of the chunks scored
    again, and ``start`` is how the pass's start was judged (seed, start reference:
    ``session.start_record``), as the last chunk whose pass began at the video's start (or the
    first) ended it.
    """

    def __init__(self, chunks: Iterable[ChunkVerdicts],
                 rescore: Callable[[ChunkVerdicts, bytes], ChunkVerdicts]):
        self.chunks, self.rescore = chunks, rescore
        self.rescored: list[int] = []
        self.start: dict | None = None
        self._thumbnails: dict[int, bytes] = {}   # of the frames given, by index, in order

    def run(self, consumer, *, on_scored: Callable | None = None) -> None:
        """Give ``consumer.add(frame, vector, verdict)`` every frame in order (a file's
        chunks have no news for ``status``); ``on_scored(frame, verdict)`` is told of each."""
        before: ChunkVerdicts | None = None
        for chunk in self.chunks:
            if before is None:
                video_start = chunk.start
            elif chunk.first > video_start:   # else its pass is the one from the start
                chunk = self._checked(before, chunk)
            if before is None or chunk.first == video_start:
                self.start = start_record(pickle.loads(chunk.at_end)[0])
            self._thumbnails.update(chunk.thumbnails)
            for frame, vector, verdict in chunk.frames():
                if on_scored is not None:
                    on_scored(frame, verdict)
                consumer.add(frame, vector, verdict)
            before = chunk

    def thumbnail(self, index: int) -> bytes | None:
        """The thumbnail made of frame ``index`` where it was scored; those of the frames
        before it are let go of (a thumbnail is asked for once its event has ended)."""
        while self._thumbnails:
            first = next(iter(self._thumbnails))
            if first > index:
                break
            jpeg = self._thumbnails.pop(first)
            if first == index:
                return jpeg
        return None

    def _checked(self, before: ChunkVerdicts, chunk: ChunkVerdicts) -> ChunkVerdicts:
        """``chunk``, or, where its detector at its start does not hold the background that
        ``before`` ended with, the chunk scored again from there."""
        if not _same_frames(chunk.before, before.tail):
            raise BoundaryMismatch(f"the frames before {chunk.start} differ")
        if holds_same_background(before.at_end, chunk.at_start):
            return chunk
        again = self.rescore(chunk, before.at_end)
        if not _same_frames(again.head, chunk.head):
            raise BoundaryMismatch(f"the frames from {chunk.start} differ")
        self.rescored.append(chunk.start)
        return again
