"""Scanning a source into a session and its result folder: ``videvent run``'s work.

``scan`` feeds the engine's verdicts (``videvent.engine``) to a ``videvent.session.Session``,
which segments them and tells the sinks; ``detect`` is ``videvent run``: it returns what was
found and, given a folder, writes the result folder (``scores.csv``, ``events.json``,
thumbnails, the plot and report, and the annotated video and clips when asked, all in the
same pass).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Callable, Protocol

import numpy as np

from .engine import Comparison, Engine
from .output import ResultFolder, write_events
from .choices import CLIP_MODES
from .output.clips import write_clip_index
from .output.folder import check_destination, mark_complete
from .output.names import CLIP_TEMPLATE, RESULT_FILES, check_outputs, clip_name
from .output.sink import Sink
from .passes import Pass, open_for, prepare
from .segmenter import EventSegmenter
from .session import RunResult, Session
from .settings import Settings
from .sinks import folder_sinks
from .sources import FrameSource


class ScoredElsewhere(Protocol):
    """A pass's verdicts scored elsewhere: ``run(consumer, on_scored=)`` gives them to the
    consumer in order, as ``Engine.run`` does; ``start``, once they are all given, is how the
    pass's start was judged (``session.start_record``); ``thumbnail(index)``, the thumbnail of
    a frame made where it was scored (or None)."""

    start: dict | None

    def run(self, consumer, *, on_scored: Callable | None = None) -> None: ...

    def thumbnail(self, index: int) -> bytes | None: ...


def default_out_dir(spec: str | os.PathLike) -> Path:
    """``clip.avi`` -> ``clip.videvent/`` beside it (for image patterns: beside their folder)."""
    path = Path(os.fspath(spec))
    if not path.exists() and ("%" in path.name or any(c in path.name for c in "*?[")):
        path = path.parent
    return path.parent / f"{path.stem if path.is_file() else path.name}.videvent"


def scan(source: FrameSource, settings: Settings, folder: Path | None = None, *,
         compare: tuple[str, ...] = (), sinks: list[Sink] = (), explain_all: bool = False,
         progress: Callable[[int], None] | None = None,
         scored: ScoredElsewhere | None = None,
         prepared: tuple[Pass, EventSegmenter] | None = None) -> RunResult:
    """Run the detector over ``source`` through a session; into ``folder`` (when given) go
    ``scores.csv`` (and ``compare.csv``), besides what ``sinks`` write. ``prepared``: the pass
    and segmenter ``prepare`` made of ``settings`` on ``source`` (made here if not given).

    ``scored``: the pass's verdicts, scored elsewhere (``videvent.chunked.JoinedChunks``),
    which the session takes instead of the engine's. ``explain_all``: every frame gets its
    residual image (for the annotated video), not only those from ``threshold_low`` up.
    """
    run, segmenter = prepared or prepare(source, settings)
    session = Session(run, segmenter, sinks=sinks,
                      scores_path=None if folder is None else folder / "scores.csv")
    comparison = (Comparison(run, compare, None if folder is None else folder / "compare.csv")
                  if compare else None)
    failed = True
    try:
        session.start()
        # The engine scores the frames into the session, or a long video's chunks, scored
        # elsewhere, give it their verdicts in order: the same consumer either way.
        feeder = scored or Engine(run, explain=True if explain_all else run.levels.threshold_low,
                                  comparison=comparison)
        feeder.run(session, on_scored=None if progress is None else lambda *_: progress(1))
        session.finish(start=None if scored is None else scored.start)
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
        picture = frame.picture_to_show()
        if picture is not None:
            return picture
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
    ``clip_mode`` says: ``choices.CLIP_MODES``); the files exported
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
        # A setting that cannot work on this source is said before the scan is announced.
        prepared = prepare(source, settings)
        if on_start is not None:
            on_start(source)
        if destination is None:
            return scan(source, settings, sinks=sinks, progress=progress, prepared=prepared)
        return write_results(source, settings, destination, plot=plot, compare=compare,
                             export_video=export_video, clips=clips,
                             clip_template=clip_template, clip_mode=clip_mode, sinks=sinks,
                             progress=progress, prepared=prepared)


def write_results(source: FrameSource, settings: Settings, destination: Path, *,
                  plot: bool = True, compare: tuple[str, ...] = (),
                  export_video: bool | str | os.PathLike = False, clips: bool = False,
                  clip_template: str = CLIP_TEMPLATE, clip_mode: str = CLIP_MODES[0],
                  sinks: list[Sink] = (),
                  progress: Callable[[int], None] | None = None,
                  scored: ScoredElsewhere | None = None,
                  prepared: tuple[Pass, EventSegmenter] | None = None) -> RunResult:
    """Scan ``source`` into the result folder ``destination``, which appears complete (with
    its completion marker, last) or not at all; see ``detect`` and ``scan``."""
    prepared = prepared or prepare(source, settings)
    with ResultFolder(destination, replaces=RESULT_FILES) as folder:
        staging = folder.staging
        # Frames scored elsewhere carry no picture: an event's thumbnail was made there, or its
        # peak frame is decoded again for it.
        written_by = folder_sinks(source, settings, prepared[0].preprocess.regions, staging,
                                  thumbnails=True,
                                  redecode=lambda index: _picture(source, index),
                                  thumbnails_made=None if scored is None else scored.thumbnail,
                                  video=export_video, clips=clips, clip_template=clip_template,
                                  clip_mode=clip_mode)
        result = scan(source, settings, staging, compare=compare, sinks=[*written_by, *sinks],
                      explain_all=bool(export_video), progress=progress, scored=scored,
                      prepared=prepared)
        write_events(staging / "events.json", result.to_dict())
        written = [path for sink in written_by for path in getattr(sink, "written", ())]
        if clips:
            write_clip_index(staging, {event.number: clip_name(clip_template, source.name,
                                                               event.number)
                                       for event in result.events}, written)
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
