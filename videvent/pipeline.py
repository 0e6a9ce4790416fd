"""The detection pipeline: source -> preprocess -> window scorer -> event segmenter -> sinks.

``detect`` runs it on one source and writes ``scores.csv``, ``events.json`` and
``residuals.png`` into a result folder. Decoding and preprocessing run on a reader thread
feeding a bounded queue, so the decoder and the detector use both cores and memory stays flat
however long the video is.
"""

from __future__ import annotations

import os
import queue
import threading
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from threadpoolctl import threadpool_limits

from . import __version__
from .detectors import FrameScore, SubspaceWindowDetector
from .output import ResultFolder, ScoresWriter, read_scores, write_events
from .preprocess import OK, Preprocessor, frame_health, working_size
from .segmenter import Event, EventSegmenter
from .settings import Settings
from .sources import FrameSource, open_source
from .timecode import format_timecode

# Frames decoded ahead of the detector: enough to smooth out decoder hiccups, small enough
# that memory does not depend on how far the decoder gets ahead.
READ_AHEAD = 32
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
    out_dir: Path | None = None
    files: dict[str, Path] = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {
            "videvent_version": __version__,
            "source": self.source,
            "settings": self.settings,
            "frames_read": self.frames_read,
            "events": [event.to_dict() for event in self.events],
            "absorbed": self.absorbed,
            "frame_problems": self.frame_problems,
        }


def default_out_dir(spec: str | os.PathLike) -> Path:
    """``clip.avi`` -> ``clip.videvent/`` beside it (for image patterns: beside their folder)."""
    path = Path(os.fspath(spec))
    if not path.exists() and ("%" in path.name or any(c in path.name for c in "*?[")):
        path = path.parent
    return path.parent / f"{path.stem if path.is_file() else path.name}.videvent"


def build_detector(settings: Settings, frame_shape: tuple[int, ...], fps: float):
    """The window scorer and the segmenter a run uses, with times turned into frames."""
    detector = SubspaceWindowDetector(
        frame_shape, method=settings.method, rank=settings.rank, window=settings.window,
        projection_dim=settings.projection_dim, inlier_fraction=settings.inlier_fraction,
        admit_threshold=settings.admit, absorb_after=settings.frames("absorb_after", fps),
        refit_every=settings.refit_every, blocks=settings.blocks)
    segmenter = EventSegmenter(
        settings.threshold, settings.threshold_low,
        min_length=max(1, settings.frames("min_event_length", fps)),
        merge_gap=settings.frames("merge_gap", fps),
        pre_roll=settings.frames("time_before_event", fps),
        post_roll=settings.frames("time_post_event", fps))
    return detector, segmenter


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
                    out.put((frame.index, frame.time_s, vector), timeout=0.1)
                    break
                except queue.Full:
                    continue
            if stop.is_set():
                return
        out.put(_END)
    except BaseException as error:  # handed to the consumer, which re-raises it
        out.put(error)


class _ProblemRuns:
    """Runs of blank, frozen or corrupt frames, for events.json and the report."""

    def __init__(self):
        self.runs: list[dict] = []
        self._open: dict | None = None

    def add(self, score: FrameScore) -> None:
        status = score.status
        run = self._open
        if run is not None and (run["status"] != status or score.index != run["end_frame"] + 1):
            self._open = run = None
        if status in ("blank", "frozen", "corrupt"):
            if run is None:
                self._open = {"status": status, "start_frame": score.index,
                              "end_frame": score.index, "start_time_s": score.time_s,
                              "end_time_s": score.time_s}
                self.runs.append(self._open)
            else:
                run["end_frame"], run["end_time_s"] = score.index, score.time_s


def scan(source: FrameSource, settings: Settings, scores_path: str | os.PathLike, *,
         progress: Callable[[int], None] | None = None,
         on_event: Callable[[Event], None] | None = None) -> RunResult:
    """Run the detector over ``source``, writing ``scores.csv`` to ``scores_path``."""
    fps = source.fps
    start, end = frame_range(settings, fps)
    width, height = working_size(source.width, source.height, max_side=settings.working_size,
                                 downscale_factor=settings.downscale_factor)
    preprocess = Preprocessor(width, height, colour=settings.colour)
    shape = (height, width, 3) if settings.colour else (height, width)
    detector, segmenter = build_detector(settings, shape, fps)
    writer = ScoresWriter(scores_path)
    pending: deque[FrameScore] = deque()
    problems = _ProblemRuns()
    absorbed: list[dict] = []
    frames_read = 0
    previous = None

    def write_decided(decisions) -> None:
        for decision in decisions:
            frame_score = pending.popleft()
            writer.write(frame_score, decision.flagged, decision.event_number)
        if on_event is not None:
            for event in segmenter.pop_completed():
                on_event(event)

    frames_in: queue.Queue = queue.Queue(maxsize=READ_AHEAD)
    stop = threading.Event()
    reader = threading.Thread(target=_read_ahead, name="videvent-reader", daemon=True,
                              args=(source, preprocess, start, end, frames_in, stop))
    reader.start()
    # The detector's matrices are small (window x window): one BLAS thread is faster than two
    # fighting over them, and leaves the other core to the decoder.
    blas_one_thread = threadpool_limits(limits=1, user_api="blas")
    try:
        while True:
            item = frames_in.get()
            if item is _END:
                break
            if isinstance(item, BaseException):
                raise item
            index, time_s, vector = item
            health = frame_health(vector, previous)
            if vector is not None:
                previous = vector
            frame_score = detector.process_frame(index, time_s, vector, health)
            if frame_score.absorbed:
                absorbed.append({"frame": index, "time_s": time_s,
                                 "timecode": format_timecode(time_s)})
            problems.add(frame_score)
            pending.append(frame_score)
            write_decided(segmenter.update(index, time_s, frame_score.score,
                                           absorbed=frame_score.absorbed))
            frames_read += 1
            if progress is not None:
                progress(1)
        write_decided(segmenter.finish())
    finally:
        blas_one_thread.restore_original_limits()
        stop.set()
        writer.close()
        reader.join(timeout=5)
    if frames_read == 0:
        raise ValueError(f"no frames to scan in '{source.uri}'"
                         + (" in the range given" if (start or end is not None) else ""))
    source_info = {
        "uri": source.uri, "name": source.name, "fps": fps, "frame_count": source.frame_count,
        "width": source.width, "height": source.height, "working_width": width,
        "working_height": height, "first_frame": start,
        "absorb_after_frames": detector.absorb_after,
    }
    return RunResult(source=source_info, settings=settings.to_dict(), frames_read=frames_read,
                     events=list(segmenter.events), absorbed=absorbed,
                     frame_problems=problems.runs)


def detect(spec: str | os.PathLike | int, settings: Settings | None = None, *,
           out_dir: str | os.PathLike | None = None, plot: bool = True,
           progress: Callable[[int], None] | None = None,
           on_start: Callable[[FrameSource], None] | None = None) -> RunResult:
    """Find the events in a video, folder or pattern of images; write the result folder.

    Raises ValueError (SourceError included) with a one-line message on bad input; the result
    folder is then left as it was.
    """
    settings = settings or Settings()
    with open_source(spec, colour=settings.colour, backend=settings.backend,
                     fps=settings.fps) as source:
        if on_start is not None:
            on_start(source)
        destination = Path(out_dir) if out_dir is not None else default_out_dir(spec)
        with ResultFolder(destination) as folder:
            result = scan(source, settings, folder.path("scores.csv"), progress=progress)
            document = result.to_dict()
            write_events(folder.path("events.json"), document)
            result.files = {"scores": destination / "scores.csv",
                            "events": destination / "events.json"}
            if plot:
                from .output.plot import write_residual_plot  # matplotlib: only when drawing

                write_residual_plot(folder.path("residuals.png"),
                                    read_scores(folder.path("scores.csv")),
                                    document["events"], threshold=settings.threshold,
                                    threshold_low=settings.threshold_low,
                                    title=f"{source.name}: residual per frame ({settings.method.upper()}, rank {settings.rank})")
                result.files["plot"] = destination / "residuals.png"
    result.out_dir = destination
    return result
