"""The detection pipeline: source -> preprocess -> window scorer -> session -> sinks.

``score_frames`` is the pass over a source that every command builds on: decoding and
preprocessing run on a reader thread feeding a bounded queue (``videvent.reader``), so the
decoder and the detector use both cores and memory stays flat however long the video is.
``scan`` feeds the scored frames to a ``videvent.session.Session``, which segments them and
tells the sinks; ``detect`` is ``videvent run``: it returns what was found and, given a
folder, writes the result folder (``scores.csv``, ``events.json``, thumbnails, the plot and
report, and the annotated video and clips when asked, all in the same pass).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np
from threadpoolctl import threadpool_limits

from .detectors import FrameScore, SubspaceWindowDetector
from .output import ResultFolder, write_events
from .output.annotate import Annotator, Overlay, StripChart, chart_height
from .output.clips import (ANNOTATED_NAME, CLIP_MODES, CLIP_TEMPLATE, REGIONS_NAME,
                           AnnotatedVideoSink, ClipSink, write_clip_index)
from .output.folder import check_destination, mark_complete
from .output.names import RESULT_FILES, check_outputs
from .output.sink import Sink
from .output.thumbnails import ThumbnailSink
from .preprocess import HealthCheck, Preprocessor, working_size
from .reader import ReadAhead
from .regions import RegionError, Regions
from .segmenter import EventSegmenter
from .session import FrameStatus, RunResult, Session
from .settings import SettingError, Settings
from .sources import Frame, FrameSource, open_source

# Frames decoded ahead of the detector: enough to smooth out decoder hiccups, small enough
# that memory does not depend on how far the decoder gets ahead.
READ_AHEAD = 32
# A picture repeated exactly for this long is a stalled source, reported as frozen (the
# duration ffmpeg's freezedetect filter reports by default). Shorter runs of repeats are a still
# scene coded at a low bit rate, which repeats a still picture within a keyframe interval.
FROZEN_AFTER_SECONDS = 2.0


def default_out_dir(spec: str | os.PathLike) -> Path:
    """``clip.avi`` -> ``clip.videvent/`` beside it (for image patterns: beside their folder)."""
    path = Path(os.fspath(spec))
    if not path.exists() and ("%" in path.name or any(c in path.name for c in "*?[")):
        path = path.parent
    return path.parent / f"{path.stem if path.is_file() else path.name}.videvent"


def seed_detector(run: "Pass", *others: SubspaceWindowDetector) -> int:
    """Seed the pass's detector (and ``others``, ``--compare``'s, from the same frames), or
    the reference that judges its start (``--seed``, ``--start-reference``), from frames
    spread over the whole source (files only). Returns how many frames seeded the pass's.

    The paper's batch setting: the inlier scores pick the background among frames from the
    whole video, so an event in view from the first frame is scored as one. Frames before the
    pass's range count too: they are the same scene.
    """
    settings = run.settings
    if not (settings.seed or settings.start_reference) or run.source.is_live:
        return 0
    window = run.detector.model.window
    vectors = [run.preprocess(frame.image)
               for frame in run.source.sample(window)
               if frame.image is not None]
    used = [detector.seed(vectors) if settings.seed else detector.seed_reference(vectors)
            for detector in (run.detector, *others)]
    return used[0]


def open_for(spec: str | os.PathLike | int, settings: Settings, *,
             keep_colour: bool = False) -> FrameSource:
    """``spec`` opened as ``settings`` read it (colour, decoder, an image sequence's rate):
    the one place every front end opens its source."""
    return open_source(spec, colour=settings.colour, backend=settings.backend, fps=settings.fps,
                       keep_colour=keep_colour)


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

    def health_check(self) -> HealthCheck:
        """A fresh judge of the pass's frames' health, fed them in order."""
        return HealthCheck(round(FROZEN_AFTER_SECONDS * self.source.fps), self.preprocess.watched)


def source_regions(settings: Settings, source: FrameSource) -> Regions:
    """The settings' regions, checked against the source's frame and the working picture:
    SettingError (one line) for a polygon outside it, one that covers no working pixel, or
    masks that leave nothing to watch."""
    regions = settings.regions()
    working = working_size(source.width, source.height, max_side=settings.working_size,
                           downscale_factor=settings.downscale_factor)
    try:
        regions.check(source.width, source.height, working)
    except RegionError as error:
        raise SettingError(str(error)) from None
    return regions


def prepare_pass(source: FrameSource, settings: Settings) -> Pass:
    start, end = frame_range(settings, source.fps)
    regions = source_regions(settings, source)
    width, height = working_size(source.width, source.height, max_side=settings.working_size,
                                 downscale_factor=settings.downscale_factor)
    shape = (height, width, 3) if settings.colour else (height, width)
    preprocess = Preprocessor(width, height, settings.colour, regions=regions,
                              source_size=(source.width, source.height))
    return Pass(source, settings, start, end, preprocess,
                SubspaceWindowDetector.from_settings(settings, shape, source.fps,
                                                     watched=preprocess.watched))


def prepare(source: FrameSource, settings: Settings) -> tuple[Pass, EventSegmenter]:
    """The pass and the segmenter of ``settings`` on ``source``; SettingError if the settings,
    in frames of this source, cannot work (bad usage: callers check this before writing)."""
    try:
        return prepare_pass(source, settings), build_segmenter(settings, source.fps)
    except ValueError as error:
        raise SettingError(str(error)) from None


def score_frames(run: Pass, *, explain: bool | float = False,
                 decoded: Iterable[tuple[Frame, np.ndarray | None]] | None = None,
                 others: Iterable[SubspaceWindowDetector] = ()
                 ) -> Iterator[tuple[Frame, np.ndarray | None, FrameScore]]:
    """(frame, working vector, verdict) for every frame of the pass, in order.

    ``decoded``: (frame, working vector) pairs of the pass already decoded and preprocessed
    elsewhere (``videvent batch`` decodes the chunks of a long video in parallel); they are
    scored instead of decoding ``run.source`` on a reader thread. ``others``: detectors the
    caller runs on the same frames (``--compare``'s), seeded as the pass's is.
    """
    seed_detector(run, *others)
    frames = read_ahead(run) if decoded is None else iter(decoded)
    # The detector's matrices are small (window x window): one BLAS thread is faster than two
    # fighting over them, leaves the other core to the decoder, and gives the same numbers
    # whoever runs the pass.
    blas_one_thread = threadpool_limits(limits=1, user_api="blas")
    health_of = run.health_check()
    try:
        for frame, vector in frames:
            health = health_of(vector)
            yield frame, vector, run.detector.process_frame(frame.index, frame.time_s, vector,
                                                            health, explain=explain)
    finally:
        blas_one_thread.restore_original_limits()
        if hasattr(frames, "close"):
            frames.close()


def read_ahead(run: Pass) -> ReadAhead:
    """The pass's (frame, working vector) pairs, decoded and preprocessed on a reader thread."""
    def produce(put) -> None:
        for frame in run.source.frames(run.start, run.end):
            vector = None if frame.image is None else run.preprocess(frame.image)
            if not put((frame, vector)):
                return

    return ReadAhead(produce, READ_AHEAD)


class Comparison:
    """``--compare``: the other methods' detectors and segmenters on the same frames, their
    residuals written to ``compare.csv`` for the report's side-by-side panels."""

    def __init__(self, run: Pass, methods: tuple[str, ...], path: Path | None):
        settings, fps = run.settings, run.source.fps
        self.methods = methods
        self.detectors = {method: SubspaceWindowDetector.from_settings(
                              settings, run.frame_shape, fps, method=method,
                              watched=run.preprocess.watched)
                          for method in methods if method != settings.method}
        self.segmenters = {method: build_segmenter(settings, fps) for method in self.detectors}
        self._rows = open(path if path is not None else os.devnull, "w")
        self._rows.write("frame," + ",".join(f"residual_{m}" for m in methods) + "\n")
        self._main = settings.method

    def add(self, frame: Frame, vector: np.ndarray | None, score: FrameScore) -> None:
        residuals = {self._main: score.residual}
        health = score.status if FrameStatus(score.status).unusable else FrameStatus.OK
        for method, detector in self.detectors.items():
            verdict = detector.process_frame(frame.index, frame.time_s, vector, health)
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


def scan(source: FrameSource, settings: Settings, folder: Path | None = None, *,
         compare: tuple[str, ...] = (), sinks: list[Sink] = (), explain_all: bool = False,
         progress: Callable[[int], None] | None = None,
         decoded: Iterable[tuple[Frame, np.ndarray | None]] | None = None) -> RunResult:
    """Run the detector over ``source`` through a session; into ``folder`` (when given) go
    ``scores.csv``, the thumbnails (and ``compare.csv``), besides what ``sinks`` write.

    ``decoded``: the pass's (frame, working vector) pairs, decoded elsewhere (see
    ``score_frames``); their frames may carry no picture, and an event's peak frame is then
    decoded again from ``source`` for its thumbnail. ``explain_all``: every frame gets its
    residual image (for the annotated video), not only those from ``threshold_low`` up.
    """
    run, segmenter = prepare(source, settings)
    if folder is not None:
        sinks = [ThumbnailSink(folder / "thumbnails", settings.threshold_low,
                               redecode=lambda index: _picture(source, index),
                               regions=run.preprocess.regions,
                               overlay=Overlay.of(settings)), *sinks]
    session = Session(run, segmenter, sinks=sinks,
                      scores_path=None if folder is None else folder / "scores.csv")
    comparison = (Comparison(run, compare, None if folder is None else folder / "compare.csv")
                  if compare else None)
    failed = True
    try:
        session.start()
        explain = True if explain_all else settings.threshold_low
        others = comparison.detectors.values() if comparison is not None else ()
        for frame, vector, frame_score in score_frames(run, explain=explain, decoded=decoded,
                                                       others=others):
            if comparison is not None:
                comparison.add(frame, vector, frame_score)
            session.add(frame, vector, frame_score)
            if progress is not None:
                progress(1)
        session.finish()
        failed = session.frames_read == 0
    finally:
        session.close(failed=failed)
        if comparison is not None:
            comparison.close()
    if session.frames_read == 0:
        raise ValueError(f"no frames to scan in '{source.uri}'"
                         + (" in the range given" if (run.start or run.end is not None) else ""))
    return session.result(compare, comparison.events() if comparison else None)


def _picture(source: FrameSource, index: int) -> np.ndarray:
    """The picture of one frame, decoded again (for a thumbnail of pre-decoded frames)."""
    for frame in source.frames(index, index + 1):
        if frame.image is not None:
            return frame.image
    raise ValueError(f"frame {index} of '{source.uri}' cannot be decoded again")


def detect(spec: str | os.PathLike | int, settings: Settings | None = None, *,
           out_dir: str | os.PathLike | None = None, plot: bool = True,
           compare: tuple[str, ...] = (), export_video: bool | str | os.PathLike = False,
           clips: bool = False, clip_template: str = CLIP_TEMPLATE,
           clip_mode: str = CLIP_MODES[0], sinks: list[Sink] = (),
           progress: Callable[[int], None] | None = None,
           on_start: Callable[[FrameSource], None] | None = None) -> RunResult:
    """Find the events in a video, folder or pattern of images.

    Without ``out_dir``, nothing is written: the result is returned. With it, the result
    folder is written (the plot and report unless ``plot`` is False), and in the same pass
    the annotated video (``export_video``: True for ``annotated.mp4`` in the folder, or a
    path) and one clip per event (``clips``, named by ``clip_template``, made as
    ``clip_mode`` says: ``output.clips.CLIP_MODES``); the files exported
    are in ``result.exported``. ``sinks`` (``videvent.Sink``) are told about every frame and
    event as they are decided.

    Raises ValueError (SourceError included) with a one-line message on bad input; the result
    folder is then left as it was. The names it would write are checked first, as the
    command line checks them (``output.names.check_outputs``: OutputNameError). An existing ``out_dir`` that videvent did not make is
    refused before the source is opened.
    """
    settings = settings or Settings()
    compare = tuple(dict.fromkeys(compare))
    if out_dir is None and (export_video or clips):
        raise ValueError("the annotated video and clips are written into a "
                         "result folder: give out_dir")
    check_outputs(spec, out_dir, export_video, clips, clip_template)
    destination = None if out_dir is None else check_destination(out_dir)
    with open_for(spec, settings, keep_colour=bool(export_video or clips)) as source:
        if on_start is not None:
            source_regions(settings, source)   # said before the scan is announced
            on_start(source)
        if destination is None:
            return scan(source, settings, sinks=sinks, progress=progress)
        return write_results(source, settings, destination, plot=plot, compare=compare,
                             export_video=export_video, clips=clips,
                             clip_template=clip_template, clip_mode=clip_mode, sinks=sinks,
                             progress=progress)


def write_results(source: FrameSource, settings: Settings, destination: Path, *,
                  plot: bool = True, compare: tuple[str, ...] = (),
                  export_video: bool | str | os.PathLike = False, clips: bool = False,
                  clip_template: str = CLIP_TEMPLATE, clip_mode: str = CLIP_MODES[0],
                  sinks: list[Sink] = (),
                  progress: Callable[[int], None] | None = None,
                  decoded: Iterable[tuple[Frame, np.ndarray | None]] | None = None
                  ) -> RunResult:
    """Scan ``source`` into the result folder ``destination``, which appears complete (with
    its completion marker, last) or not at all; see ``detect`` and ``scan``."""
    with ResultFolder(destination, replaces=RESULT_FILES) as folder:
        staging = folder.staging
        exports = export_sinks(source, settings, staging, export_video, clips, clip_template,
                               clip_mode)
        result = scan(source, settings, staging, compare=compare, sinks=[*exports, *sinks],
                      explain_all=bool(export_video), progress=progress, decoded=decoded)
        write_events(staging / "events.json", result.to_dict())
        written = [path for sink in exports for path in sink.written]
        if clips:
            write_clip_index(staging, {event.number: clip_template.format(
                video=source.name, n=event.number) for event in result.events})
        if plot:
            from .output.report import write_plot, write_report  # matplotlib: when drawing

            write_plot(staging)
            write_report(staging)
        mark_complete(staging, {"frames_read": result.frames_read, "plot": plot})
    # Named as they are now that the staging folder is the result folder.
    result.exported = [destination / path.name if path.parent == staging else path
                       for path in written]
    result.out_dir = destination
    return result


def clip_options(uri: str, settings: Settings, mode: str) -> dict:
    """``ClipSink``'s keywords for the clips of the source ``uri``, made in ``mode`` with the
    boxes ``settings`` ask for. SettingError (one line) for clips copied from what is not a
    video file (a folder or pattern of images)."""
    source_file = uri if os.path.isfile(uri) else None
    if mode not in CLIP_MODES:
        raise SettingError(f"clip mode must be one of {', '.join(CLIP_MODES)}, got {mode!r}")
    if mode == "copy" and source_file is None:
        raise SettingError(f"--clip-mode copy copies a video file's own packets; '{uri}' is "
                           f"not a video file (--clip-mode encode makes its clips)")
    return {"source_file": source_file, "mode": mode, "boxes": settings.bounding_box,
            "box_level": settings.threshold_low}


def export_sinks(source: FrameSource, settings: Settings, folder: Path,
                 video: bool | str | os.PathLike, clips: bool, clip_template: str,
                 clip_mode: str = CLIP_MODES[0]) -> list[Sink]:
    """The annotated video (``video``: True for annotated.mp4 in ``folder``, or a path) and
    the clip writer of a run, fed in the same pass as the scores."""
    sinks: list[Sink] = []
    if video:
        start, end = frame_range(settings, source.fps)
        last = (end if end is not None else source.frame_count or start + 1) - 1
        if source.frame_count:
            last = min(last, source.frame_count - 1)
        height = chart_height(source.height)
        # The chart fills in as the video plays: its scale stops at twice the threshold.
        chart = StripChart(source.width, height, start, last, settings.threshold,
                           settings.threshold * 2.0) if height else None
        path = folder / ANNOTATED_NAME if video is True else Path(video)
        sinks.append(AnnotatedVideoSink(
            path, folder / REGIONS_NAME,
            Annotator(source.width, source.height, chart, settings.threshold_low,
                      settings.regions(), Overlay.of(settings)),
            source.fps, fill_chart=True))
    if clips:
        sinks.append(ClipSink(folder, lambda n: clip_template.format(video=source.name, n=n),
                              source.fps, settings.frames("time_before_event", source.fps),
                              **clip_options(source.uri, settings, clip_mode)))
    return sinks
