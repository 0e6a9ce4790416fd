"""The engine: the one loop that scores frames, which every front end feeds.

``run``, ``batch``, ``export``, ``watch`` and the Python API differ in where their frames
come from (a file or a range of it, a stream watched by ``sources.live.LiveSource``) and in
whom the verdicts go to (a ``Session``, ``export``'s check against the recorded run, or the
chunk of a long video that ``batch`` scores apart: ``videvent.chunked``); between the two, ``Engine.run`` is the only code that asks a detector to score
a frame, so a frame is scored the same way whatever the front end.

Decoding and preprocessing run on a reader thread feeding a bounded queue
(``videvent.reader``), so the decoder and the detector use both cores and memory stays flat
however long the video is; a paced source (a live picture) drops its oldest waiting frames
rather than fall behind.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

from .detectors import FrameScore, SubspaceWindowDetector
from .passes import Pass
from .reader import ReadAhead
from .sources import Frame
from .sources.live import SourceNews
from .status import FrameStatus

# Frames decoded ahead of the detector: enough to smooth out decoder hiccups, small enough
# that memory does not depend on how far the decoder gets ahead.
READ_AHEAD = 32
# How often the loop, waiting for a frame, looks whether it should stop (and tells
# ``on_idle``).
POLL_S = 0.2
# How long a pass of a source whose reads can block (a pipe, a device, a stream) waits for its
# reader at its end: a read blocked inside FFmpeg cannot be interrupted, and the reader is a
# daemon thread that ends with the process.
BLOCKING_READER_CLOSE_S = 2.0


class _OneBlasThread:
    """One BLAS thread while any pass scores, however many passes run at once in threads
    (``watch`` of several cameras): the first to start sets the limit, the last to end
    restores the process's own. A limit set and restored by each pass alone would let one
    camera's end hand the others two threads again mid-pass."""

    def __init__(self):
        self._lock = threading.Lock()
        self._users = 0
        self._limit = None

    @contextmanager
    def __call__(self) -> Iterator[None]:
        with self._lock:
            if self._users == 0:
                self._limit = threadpool_limits(limits=1, user_api="blas")
            self._users += 1
        try:
            yield
        finally:
            with self._lock:
                self._users -= 1
                if self._users == 0:
                    self._limit.restore_original_limits()
                    self._limit = None


# Every number a verdict rests on (the seed's and each refit's SVD, the residuals, whether two
# chunks hold the same background) is computed with one BLAS thread: OpenBLAS splits some of
# its work among its threads in ways that change the last bits of the result, and the
# detector's thresholds can turn a last bit into another event. So a verdict does not depend
# on the machine's cores, a Dask worker's thread settings or what else runs in the process.
# The matrices are small (window x window): one thread is also faster than two fighting over
# them, and leaves the other core to the decoder.
one_blas_thread = _OneBlasThread()


@dataclass
class Decoded:
    """A frame, its working vector, and when it was read (``time.monotonic()``; None for
    frames decoded elsewhere)."""

    frame: Frame
    vector: np.ndarray | None
    read_at: float | None


def seed_detector(run: Pass, *others: SubspaceWindowDetector) -> int:
    """Seed the pass's detector (and ``others``, ``--compare``'s, from the same frames), or
    the reference that judges its start (``--seed``, ``--start-reference``), from frames
    spread over the whole source (files only). Returns how many frames seeded the pass's.

    The paper's batch setting: the inlier scores pick the background among frames from the
    whole video, so an event in view from the first frame is scored as one. Frames before the
    pass's range count too: they are the same scene.
    """
    if not seeds(run):
        return 0
    vectors = run.seed_sample if run.seed_sample is not None else seed_sample(run)
    model = run.levels.seeding == "model"
    used = [detector.seed(vectors) if model else detector.seed_reference(vectors)
            for detector in (run.detector, *others)]
    return used[0]


def seeds(run: Pass) -> bool:
    """Whether the pass starts by seeding its detector (``seed_detector``)."""
    source = run.source
    return run.levels.seeding is not None and not (
        source.is_live or source.read_once or run.resumed)


def seed_sample(run: Pass) -> list[np.ndarray]:
    """The working vectors of a window of frames spread over the whole source, which seed a
    pass (``seed_detector``)."""
    # A start reference judges the pass's first frames against them: the source makes their
    # pictures as the pass's are where the two scalings differ (interlaced video, which FFmpeg
    # scales field by field: ``PyAVSource.sample``).
    return [decoded.vector for decoded in working_frames(run, run.source.sample(
        run.detector.model.window, size=run.decode_size)) if decoded.vector is not None]


def working_frames(run: Pass, frames: Iterable[Frame | SourceNews]
                   ) -> Iterator[Decoded | SourceNews]:
    """The one place a decoded frame becomes the detector's working vector (None for a frame
    without a picture), as the pass's preprocessing makes it; a source's news passes as it
    comes."""
    for frame in frames:
        if isinstance(frame, SourceNews):
            yield frame
            continue
        read_at = time.monotonic()
        yield Decoded(frame, None if frame.image is None else run.preprocess(frame.image),
                      read_at)


def read_ahead(run: Pass, size: int = READ_AHEAD) -> ReadAhead:
    """The pass's range of its source, decoded and preprocessed on a reader thread and handed
    on as ``Decoded`` (and the source's news as it comes)."""
    paced = run.source.paced

    def produce(put) -> None:
        frames = run.source.frames(run.start, run.end, size=run.decode_size)
        try:
            for item in working_frames(run, frames):
                handed = put(item) if isinstance(item, SourceNews) \
                    else put(item, drop_oldest=paced)
                if not handed:
                    return
        finally:
            frames.close()      # the source's pass ends here, on the reader's thread

    return ReadAhead(produce, size, name="videvent-capture" if paced else "videvent-reader")


class Comparison:
    """``--compare``: the other methods' detectors and segmenters on the same frames, their
    residuals written to ``compare.csv`` for the report's side-by-side panels."""

    def __init__(self, run: Pass, methods: tuple[str, ...], path: Path | None):
        self.methods = methods
        self.detectors = {method: run.detector_of(method)
                          for method in methods if method != run.levels.method}
        self.segmenters = {method: run.segmenter() for method in self.detectors}
        self._rows = open(path if path is not None else os.devnull, "w")
        self._rows.write("frame," + ",".join(f"residual_{m}" for m in methods) + "\n")
        self._main = run.levels.method

    def add(self, frame: Frame, score: FrameScore, verdicts: dict[str, FrameScore]) -> None:
        """The main detector's verdict on ``frame`` and the other methods' (by method)."""
        residuals = {self._main: score.residual}
        for method, verdict in verdicts.items():
            residuals[method] = verdict.residual
            self.segmenters[method].update(frame.index, frame.time_s, verdict.score,
                                           absorbed=verdict.absorbed)
        self._rows.write(f"{frame.index}," + ",".join(
            f"{residuals[m]:.6g}" for m in self.methods) + "\n")

    def events(self) -> dict[str, list[list[int]]]:
        """Each other method's events (first and last core frame)."""
        for segmenter in self.segmenters.values():
            segmenter.finish()
        return {method: [[e.core_start_frame, e.core_end_frame] for e in segmenter.events]
                for method, segmenter in self.segmenters.items()}

    def close(self) -> None:
        self._rows.close()


class Engine:
    """Scores every frame of a pass, in order, and hands each verdict to a consumer.

    ``explain``: True for every frame's residual image (the annotated video), or the score
    from which frames get it. ``comparison``: ``--compare``'s detectors, fed the same frames.
    ``stop``: set (by another thread, or a signal handler) to end the pass early; the engine
    sets it when the pass ends, so a live source stops too.
    """

    def __init__(self, run: Pass, *, explain: bool | float = False,
                 comparison: Comparison | None = None, stop: threading.Event | None = None):
        self.pass_, self.explain, self.comparison = run, explain, comparison
        self.stop = stop if stop is not None else threading.Event()
        self._reader: ReadAhead | None = None

    @property
    def dropped(self) -> int:
        """Frames of a paced source dropped so far because the detector fell behind."""
        return self._reader.dropped if self._reader is not None else 0

    def run(self, consumer, *, decoded: Iterable[tuple[Frame, np.ndarray | None]] | None = None,
            buffer: int = READ_AHEAD, close_timeout: float | None = None,
            on_scored: Callable[[Decoded, FrameScore], None] | None = None,
            on_idle: Callable[[float], None] | None = None) -> None:
        """Score the pass's frames into ``consumer``: its ``add(frame, vector, verdict)`` gets
        every frame in order, its ``status(kind, detail)`` the source's news.

        ``decoded``: the pass's (frame, working vector) pairs decoded and preprocessed
        beforehand, scored instead of reading the source (``benchmarks/bench_run.py`` times
        the detector's pass alone so). ``buffer``: frames read ahead at most.
        ``close_timeout``: how long to wait for the reader when the pass ends (a network read
        cannot be interrupted). ``on_scored(decoded, verdict)``: told as soon as a frame is
        scored, before the consumer. ``on_idle(since)``: told every ``POLL_S`` while nothing
        comes, with the ``time.monotonic()`` of the last thing that came.
        """
        with one_blas_thread():
            self._score(consumer, decoded, buffer, close_timeout, on_scored, on_idle)

    def _score(self, consumer, decoded, buffer, close_timeout, on_scored, on_idle) -> None:
        run, comparison = self.pass_, self.comparison
        others = comparison.detectors if comparison is not None else {}
        seed_detector(run, *others.values())
        if decoded is None:
            self._reader = read_ahead(run, buffer)
            items = self._waiting(self._reader, on_idle)
        else:
            items = (Decoded(frame, vector, None) for frame, vector in decoded)
        try:
            for item in items:
                if self.stop.is_set():
                    break
                if isinstance(item, SourceNews):
                    consumer.status(item.kind, item.detail())
                    continue
                frame, vector = item.frame, item.vector
                health = run.health(vector)
                verdict = run.detector.process_frame(frame.index, frame.time_s, vector, health,
                                                     explain=self.explain)
                if others:
                    # The other methods are told which frames have no usable picture, and
                    # judge the rest themselves.
                    theirs = verdict.status if FrameStatus(verdict.status).unusable \
                        else FrameStatus.OK
                    comparison.add(frame, verdict, {
                        method: detector.process_frame(frame.index, frame.time_s, vector,
                                                       theirs)
                        for method, detector in others.items()})
                if on_scored is not None:
                    on_scored(item, verdict)
                consumer.add(frame, vector, verdict)
        finally:
            self.stop.set()
            if self._reader is not None:
                if close_timeout is None and (run.source.read_once or run.source.is_live):
                    close_timeout = BLOCKING_READER_CLOSE_S
                self._reader.close(timeout=close_timeout)
            elif hasattr(decoded, "close"):
                decoded.close()

    def _waiting(self, reader: ReadAhead, on_idle):
        """What the reader hands on, until its end; while nothing comes, ``on_idle`` is told
        every POLL_S (and the loop looks at ``stop``)."""
        since = time.monotonic()
        while True:
            item = reader.get(timeout=POLL_S)
            if item is None:
                if self.stop.is_set():
                    return
                if on_idle is not None:
                    on_idle(since)
                continue
            if item is ReadAhead.END:
                return
            since = time.monotonic()
            yield item
