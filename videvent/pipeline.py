"""The detection pipeline: source -> preprocess -> window scorer -> event segmenter -> sinks.

``detect`` runs it on one source and writes the result folder (``scores.csv``,
``events.json``, ``residuals.png``, event thumbnails and ``report.html``). ``score_frames`` is
the shared pass over a source that every command builds on: decoding and preprocessing run
on a reader thread feeding a bounded queue, so the decoder and the detector use both cores and
memory stays flat however long the video is.
"""

from __future__ import annotations

import os
import queue
import threading
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import cv2
import numpy as np
from threadpoolctl import threadpool_limits

from . import __version__
from .detectors import FrameScore, SubspaceWindowDetector
from .output import ResultFolder, ScoresWriter, write_events
from .output.folder import check_destination
from .preprocess import Preprocessor, frame_health, working_size
from .segmenter import Event, EventSegmenter
from .settings import SettingError, Settings
from .sources import Frame, FrameSource, open_source
from .timecode import format_timecode

# Frames decoded ahead of the detector: enough to smooth out decoder hiccups, small enough
# that memory does not depend on how far the decoder gets ahead.
READ_AHEAD = 32
# The model learns every frame of its first three seconds (unseeded: a live source), then one
# frame in every stride; fewer give statistics that the next gust of wind overturns.
WARMUP_SECONDS = 3.0
# A seed is read as short runs of consecutive frames: a run costs one seek.
SEED_GROUP = 4
THUMBNAIL_WIDTH = 320
# Everything a run or an export writes into a result folder (event clips aside, whose names
# the user chooses): a new run replaces all of them, so nothing stale stays beside it.
RESULT_FILES = ("scores.csv", "events.json", "residuals.png", "report.html", "thumbnails",
                "compare.csv", "annotated.mp4", "regions.csv", "clips.json")
_END = object()


@dataclass
class RunResult:
    """What a run found; the same facts as its ``events.json``."""

    source: dict
    settings: dict
    frames_read: int
    events: list[Event]
    absorbed: list[dict]
    frame_problems: list[dict]
    compare: list[str] = field(default_factory=list)
    out_dir: Path | None = None
    # Runs of frames the detector could not score yet (it was learning the background).
    warmup: list[dict] = field(default_factory=list)
    frames_scored: int = 0
    # Frames the container announced in the range scanned (None: it did not say).
    frames_expected: int | None = None
    # --compare: each other method's events (first and last core frame), as its own
    # detector and segmenter found them.
    compare_events: dict[str, list[list[int]]] = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {
            "videvent_version": __version__,
            "source": self.source,
            "settings": self.settings,
            "frames_read": self.frames_read,
            "events": [event.to_dict() for event in self.events],
            "absorbed": self.absorbed,
            "frame_problems": self.frame_problems,
            "warmup": self.warmup,
            "frames_scored": self.frames_scored,
            "compare": self.compare,
            "compare_events": self.compare_events,
        }


def default_out_dir(spec: str | os.PathLike) -> Path:
    """``clip.avi`` -> ``clip.videvent/`` beside it (for image patterns: beside their folder)."""
    path = Path(os.fspath(spec))
    if not path.exists() and ("%" in path.name or any(c in path.name for c in "*?[")):
        path = path.parent
    return path.parent / f"{path.stem if path.is_file() else path.name}.videvent"


def build_detector(settings: Settings, frame_shape: tuple[int, ...], fps: float,
                   method: str | None = None) -> SubspaceWindowDetector:
    """The window scorer of a run, with its times turned into frames."""
    span = max(settings.window, settings.frames("background_span", fps))
    return SubspaceWindowDetector(
        frame_shape, method=method or settings.method, rank=settings.rank,
        window=settings.window, projection_dim=settings.projection_dim,
        inlier_fraction=settings.inlier_fraction, stride=round(span / settings.window),
        warmup=max(1, round(fps * WARMUP_SECONDS)),
        static_after=settings.frames("absorb_after", fps), hot=settings.threshold_low,
        refit_every=settings.refit_every, blocks=settings.blocks)


def seed_detector(run: "Pass") -> int:
    """Seed the pass's detector from frames spread over the whole source (files only).

    The paper's batch setting: the inlier scores pick the background among frames from the
    whole video, so an event in view from the first frame is scored as one. Frames before the
    pass's range count too: they are the same scene.
    """
    if not run.settings.seed or run.source.is_live:
        return 0
    window = run.detector.model.window
    vectors = [run.preprocess(frame.image)
               for frame in run.source.sample(window // SEED_GROUP, SEED_GROUP)
               if frame.image is not None]
    return run.detector.seed(vectors)


def build_segmenter(settings: Settings, fps: float) -> EventSegmenter:
    return EventSegmenter(
        settings.threshold, settings.threshold_low,
        min_length=max(1, settings.frames("min_event_length", fps)),
        merge_gap=settings.frames("merge_gap", fps),
        pre_roll=settings.frames("time_before_event", fps),
        post_roll=settings.frames("time_post_event", fps))


def frame_range(settings: Settings, fps: float) -> tuple[int, int | None]:
    start = settings.frames("start_time", fps) or 0
    end = settings.frames("end_time", fps)
    if settings.duration is not None:
        end = start + settings.frames("duration", fps)
    if end is not None and end <= start:
        raise ValueError(f"the end of the range to scan (frame {end}) is not after its start "
                         f"(frame {start})")
    return start, end


def _read_ahead(source: FrameSource, preprocess: Preprocessor, start: int, end: int | None,
                out: queue.Queue, stop: threading.Event) -> None:
    """Reader thread: decode and preprocess into ``out``; an exception is passed on, not lost."""
    try:
        for frame in source.frames(start, end):
            vector = None if frame.image is None else preprocess(frame.image)
            while not stop.is_set():
                try:
                    out.put((frame, vector), timeout=0.1)
                    break
                except queue.Full:
                    continue
            if stop.is_set():
                return
        out.put(_END)
    except BaseException as error:  # handed to the consumer, which re-raises it
        out.put(error)


@dataclass
class Pass:
    """One pass of the detector over a source: what it was set up with."""

    source: FrameSource
    settings: Settings
    start: int
    end: int | None
    preprocess: Preprocessor
    detector: SubspaceWindowDetector

    @property
    def frame_shape(self) -> tuple[int, ...]:
        return self.detector.frame_shape


def prepare_pass(source: FrameSource, settings: Settings) -> Pass:
    start, end = frame_range(settings, source.fps)
    width, height = working_size(source.width, source.height, max_side=settings.working_size,
                                 downscale_factor=settings.downscale_factor)
    shape = (height, width, 3) if settings.colour else (height, width)
    return Pass(source, settings, start, end, Preprocessor(width, height, settings.colour),
                build_detector(settings, shape, source.fps))


def prepare(source: FrameSource, settings: Settings) -> tuple[Pass, EventSegmenter]:
    """The pass and the segmenter of ``settings`` on ``source``; SettingError if the settings,
    in frames of this source, cannot work (bad usage: callers check this before writing)."""
    try:
        return prepare_pass(source, settings), build_segmenter(settings, source.fps)
    except ValueError as error:
        raise SettingError(str(error)) from None


def score_frames(run: Pass, *, explain: bool | float = False,
                 decoded: Iterable[tuple[Frame, np.ndarray | None]] | None = None
                 ) -> Iterator[tuple[Frame, np.ndarray | None, FrameScore]]:
    """(frame, working vector, verdict) for every frame of the pass, in order.

    ``decoded``: (frame, working vector) pairs of the pass already decoded and preprocessed
    elsewhere (``videvent batch`` decodes the chunks of a long video in parallel); they are
    scored instead of decoding ``run.source`` on a reader thread.
    """
    seed_detector(run)
    frames = _read_on_a_thread(run) if decoded is None else iter(decoded)
    # The detector's matrices are small (window x window): one BLAS thread is faster than two
    # fighting over them, leaves the other core to the decoder, and gives the same numbers
    # whoever runs the pass.
    blas_one_thread = threadpool_limits(limits=1, user_api="blas")
    previous = None
    try:
        for frame, vector in frames:
            health = frame_health(vector, previous)
            if vector is not None:
                previous = vector
            yield frame, vector, run.detector.process_frame(frame.index, frame.time_s, vector,
                                                            health, explain=explain)
    finally:
        blas_one_thread.restore_original_limits()
        if hasattr(frames, "close"):
            frames.close()


def _read_on_a_thread(run: Pass) -> Iterator[tuple[Frame, np.ndarray | None]]:
    """The pass's (frame, vector) pairs, decoded and preprocessed on a reader thread."""
    frames_in: queue.Queue = queue.Queue(maxsize=READ_AHEAD)
    stop = threading.Event()
    reader = threading.Thread(target=_read_ahead, name="videvent-reader", daemon=True,
                              args=(run.source, run.preprocess, run.start, run.end, frames_in,
                                    stop))
    reader.start()
    try:
        while True:
            item = frames_in.get()
            if item is _END:
                return
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        stop.set()
        reader.join(timeout=5)


class ProblemRuns:
    """Runs of blank, frozen or corrupt frames (or of other ``statuses``), for events.json
    and the report."""

    def __init__(self, statuses: tuple[str, ...] = ("blank", "frozen", "corrupt"),
                 bridged: tuple[str, ...] = ()):
        self.statuses, self.bridged = statuses, bridged
        self.runs: list[dict] = []
        self._open: dict | None = None
        self._last = -1

    def add(self, score: FrameScore) -> None:
        status = score.status
        if status in self.bridged:
            self._last = score.index
            return  # neither ends a run nor is part of it (the warm-up goes on over them)
        run = self._open
        if run is not None and (run["status"] != status or score.index != self._last + 1):
            self._open = run = None
        self._last = score.index
        if status in self.statuses:
            if run is None:
                self._open = {"status": status, "start_frame": score.index,
                              "end_frame": score.index, "start_time_s": score.time_s,
                              "end_time_s": score.time_s}
                self.runs.append(self._open)
            else:
                run["end_frame"], run["end_time_s"] = score.index, score.time_s


class PeakFrames:
    """The highest-scoring frame of each stretch of unusual frames, until its event is done.

    Only these few frames (a stretch's best so far) are kept, so the thumbnails of the peaks
    cost no second decoding and memory stays bounded.
    """

    def __init__(self):
        self.best: dict[int, tuple[float, np.ndarray, FrameScore]] = {}
        self._current: int | None = None

    def add(self, frame: Frame, score: FrameScore) -> None:
        if score.residual_image is None:
            self._current = None
            return
        if self._current is None or score.score > self.best[self._current][0]:
            if self._current is not None:
                del self.best[self._current]
            self._current = score.index
            # Pre-decoded frames carry no picture: the peak is decoded again when needed.
            image = None if frame.image is None else frame.image.copy()
            self.best[score.index] = (score.score, image, score)

    def take(self, event: Event) -> tuple[np.ndarray, FrameScore] | None:
        found = self.best.get(event.peak_frame)
        for index in [i for i in self.best if i <= event.end_frame and i != self._current]:
            del self.best[index]
        return None if found is None else found[1:]


# Frames at the start of a pass whose picture statistics are recorded in events.json, so an
# export can tell that the source was replaced by another video with as many frames.
FINGERPRINT_FRAMES = 8


def fingerprint(vectors: list[np.ndarray | None], shape: tuple[int, ...]
                ) -> list[list[float] | None]:
    """Each working frame shrunk to 4x4 pixels (None for a frame without a picture): close
    enough to survive another decoder's rounding, far enough to tell two videos apart."""
    return [None if v is None else np.round(cv2.resize(
        v.reshape(shape).astype(np.float32), (4, 4), interpolation=cv2.INTER_AREA), 4
    ).ravel().tolist() for v in vectors]


def write_thumbnail(path: Path, image: np.ndarray, score: FrameScore, box_level: float) -> None:
    """The peak frame of an event with its heat map and boxes, 320 pixels wide."""
    from .output.annotate import changed_regions, draw_boxes, heat_overlay

    colour = cv2.cvtColor(image, cv2.COLOR_GRAY2BGR) if image.ndim == 2 else image
    residual = score.residual_image
    if residual.ndim == 3:
        residual = np.abs(residual).max(axis=2)
    shown = heat_overlay(colour, residual)
    draw_boxes(shown, changed_regions(residual, score.block_scores, box_level,
                                      (colour.shape[1], colour.shape[0])))
    height = round(shown.shape[0] * THUMBNAIL_WIDTH / shown.shape[1])
    small = cv2.resize(shown, (THUMBNAIL_WIDTH, height), interpolation=cv2.INTER_AREA)
    encoded, jpeg = cv2.imencode(".jpg", small, [cv2.IMWRITE_JPEG_QUALITY, 88])
    if not encoded:
        raise ValueError(f"cannot encode the thumbnail {path}")
    # Written by Python: cv2.imwrite crashes on a path that is not valid UTF-8.
    Path(path).write_bytes(jpeg.tobytes())


def scan(source: FrameSource, settings: Settings, folder: ResultFolder, *,
         compare: tuple[str, ...] = (), progress: Callable[[int], None] | None = None,
         on_event: Callable[[Event], None] | None = None,
         decoded: Iterable[tuple[Frame, np.ndarray | None]] | None = None) -> RunResult:
    """Run the detector over ``source``, writing scores, thumbnails (and comparisons).

    ``decoded``: the pass's (frame, working vector) pairs, decoded elsewhere (see
    ``score_frames``); their frames may carry no picture, and an event's peak frame is then
    decoded again from ``source`` for its thumbnail.
    """
    run, segmenter = prepare(source, settings)
    writer = ScoresWriter(folder.path("scores.csv"))
    thumbnails = folder.path("thumbnails")
    thumbnails.mkdir()
    others = {method: build_detector(settings, run.frame_shape, source.fps, method)
              for method in compare if method != settings.method}
    # Each compared method's own events, for its panel in the report.
    other_events = {method: build_segmenter(settings, source.fps) for method in others}
    compare_rows = open(folder.path("compare.csv"), "w") if compare else None
    if compare_rows:
        compare_rows.write("frame," + ",".join(f"residual_{m}" for m in compare) + "\n")
    pending: deque[FrameScore] = deque()
    problems = ProblemRuns()
    # The warm-up of a still scene is interleaved with frozen frames: one run all the same.
    warmup = ProblemRuns(("warmup",), bridged=("blank", "frozen", "corrupt"))
    peaks = PeakFrames()
    absorbed: list[dict] = []
    frames_read = frames_scored = 0
    first_vectors: list[np.ndarray | None] = []

    def write_decided(decisions) -> None:
        for decision in decisions:
            writer.write(pending.popleft(), decision.flagged, decision.event_number)
        for event in segmenter.pop_completed():
            peak = peaks.take(event)
            if peak is not None and peak[0] is None:
                peak = (_picture(source, event.peak_frame), peak[1])
            if peak is not None:
                write_thumbnail(thumbnails / f"event{event.number:03d}.jpg", *peak,
                                settings.threshold_low)
            if on_event is not None:
                on_event(event)

    try:
        for frame, vector, frame_score in score_frames(run, explain=settings.threshold_low,
                                                       decoded=decoded):
            if frame_score.absorbed:
                absorbed.append({"frame": frame.index, "time_s": frame.time_s,
                                 "timecode": format_timecode(frame.time_s)})
            problems.add(frame_score)
            warmup.add(frame_score)
            frames_scored += frame_score.status == "ok"
            peaks.add(frame, frame_score)
            if compare_rows:
                residuals = {settings.method: frame_score.residual}
                for method, detector in others.items():
                    verdict = detector.process_frame(
                        frame.index, frame.time_s, vector, frame_score.status
                        if frame_score.status in ("blank", "corrupt", "frozen") else "ok")
                    residuals[method] = verdict.residual
                    other_events[method].update(frame.index, frame.time_s, verdict.score,
                                                absorbed=verdict.absorbed)
                compare_rows.write(f"{frame.index}," + ",".join(
                    f"{residuals[m]:.6g}" for m in compare) + "\n")
            if len(first_vectors) < FINGERPRINT_FRAMES:
                first_vectors.append(vector)
            pending.append(frame_score)
            write_decided(segmenter.update(frame.index, frame.time_s, frame_score.score,
                                           absorbed=frame_score.absorbed))
            frames_read += 1
            if progress is not None:
                progress(1)
        write_decided(segmenter.finish())
        for other in other_events.values():
            other.finish()
    finally:
        writer.close()
        if compare_rows:
            compare_rows.close()
    if frames_read == 0:
        raise ValueError(f"no frames to scan in '{source.uri}'"
                         + (" in the range given" if (run.start or run.end is not None) else ""))
    height, width = run.frame_shape[:2]
    source_info = {
        "uri": os.path.abspath(source.uri) if os.path.exists(source.uri) else source.uri,
        "name": source.name, "fps": source.fps, "frame_count": source.frame_count,
        "width": source.width, "height": source.height, "working_width": width,
        "working_height": height, "first_frame": run.start,
        "absorb_after_frames": run.detector.static_after,
        "seed_frames": run.detector.seeded_,
        "fingerprint": fingerprint(first_vectors, run.frame_shape),
    }
    expected = None
    if source.frame_count:
        expected = max(0, (source.frame_count if run.end is None
                           else min(run.end, source.frame_count)) - run.start)
    return RunResult(source=source_info, settings=settings.to_dict(), frames_read=frames_read,
                     events=list(segmenter.events), absorbed=absorbed,
                     frame_problems=problems.runs, compare=list(compare),
                     warmup=warmup.runs, frames_scored=frames_scored,
                     frames_expected=expected,
                     compare_events={method: [[e.core_start_frame, e.core_end_frame]
                                              for e in other.events]
                                     for method, other in other_events.items()})


def _picture(source: FrameSource, index: int) -> np.ndarray:
    """The picture of one frame, decoded again (for a thumbnail of pre-decoded frames)."""
    for frame in source.frames(index, index + 1):
        if frame.image is not None:
            return frame.image
    raise ValueError(f"frame {index} of '{source.uri}' cannot be decoded again")


def detect(spec: str | os.PathLike | int, settings: Settings | None = None, *,
           out_dir: str | os.PathLike | None = None, plot: bool = True,
           compare: tuple[str, ...] = (), progress: Callable[[int], None] | None = None,
           on_start: Callable[[FrameSource], None] | None = None,
           before_commit: Callable[[Path], None] | None = None) -> RunResult:
    """Find the events in a video, folder or pattern of images; write the result folder.

    ``before_commit(staging folder)``: more work on the results (the exports) before they
    are moved into place, so that its failure too leaves the result folder as it was.
    Raises ValueError (SourceError included) with a one-line message on bad input; the result
    folder is then left as it was. An existing ``out_dir`` that videvent did not make is
    refused before the source is opened.
    """
    settings = settings or Settings()
    compare = tuple(dict.fromkeys(compare))
    destination = check_destination(out_dir if out_dir is not None else default_out_dir(spec))
    with open_source(spec, colour=settings.colour, backend=settings.backend,
                     fps=settings.fps) as source:
        if on_start is not None:
            on_start(source)
        with ResultFolder(destination, replaces=RESULT_FILES) as folder:
            result = scan(source, settings, folder, compare=compare, progress=progress)
            write_events(folder.path("events.json"), result.to_dict())
            if before_commit is not None:
                before_commit(folder.staging)
            if plot:
                from .output.report import write_plot, write_report  # matplotlib: when drawing

                write_plot(folder.staging)
                write_report(folder.staging)
    result.out_dir = destination
    return result
