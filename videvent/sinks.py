"""The sinks that write a result folder, built from the settings in one place.

``run`` (and ``batch``), ``watch`` and ``export`` write the same files for the events they
are told about: each event's thumbnail, the annotated video with ``regions.csv``, one clip
per event. ``folder_sinks`` makes them for all three, so a setting that changes how one is
drawn or named changes it everywhere.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Callable

import numpy as np

from .output.annotate import Annotator, Overlay, StripChart, chart_height
from .choices import CLIP_MODES
from .output.clips import REGIONS_NAME, AnnotatedVideoSink, ClipSink
from .output.names import ANNOTATED_NAME, CLIP_TEMPLATE, clip_name
from .output.sink import Sink
from .output.thumbnails import ThumbnailSink, ThumbnailStyle
from .passes import frame_range
from .regions import Regions
from .settings import SettingError, Settings
from .sources import FrameSource


def thumbnail_style(settings: Settings, regions: Regions) -> ThumbnailStyle:
    """How the settings draw an event's thumbnail, with ``regions`` outlined."""
    return ThumbnailStyle(settings.threshold_low, regions, Overlay.of(settings))


def folder_sinks(source: FrameSource, settings: Settings, regions: Regions, folder: Path, *,
                 thumbnails: bool = False,
                 redecode: Callable[[int], np.ndarray] | None = None,
                 thumbnails_made: Callable[[int], bytes | None] | None = None,
                 video: bool | str | os.PathLike = False, clips: bool = False,
                 clip_template: str = CLIP_TEMPLATE, clip_mode: str | None = None,
                 clip_folder: Path | None = None,
                 recorded: tuple[dict, list[dict]] | None = None) -> list[Sink]:
    """The sinks writing ``source``'s results into ``folder``, in the order they are told:

    ``thumbnails`` (for frames that came without a picture: ``thumbnails_made(index)``, the
    thumbnail made where the frame was scored, or ``redecode(index)``, its picture); the
    annotated video (``video``: True for annotated.mp4 in ``folder``, or a path) and
    ``regions.csv``; one clip per event (``clips``, named by ``clip_template``, into
    ``clip_folder``, default ``folder``; made as ``clip_mode`` says, or, None, encoded from
    the frames held: a stream cannot be read again). ``regions``: the settings' regions, checked against
    the source. ``recorded``: the scores (``output.read_scores``) and events of the run an
    export draws, whose chart shows that whole run; otherwise the chart fills in as the frames
    come.
    """
    sinks: list[Sink] = []
    if thumbnails:
        sinks.append(ThumbnailSink(folder / "thumbnails", thumbnail_style(settings, regions),
                                   redecode=redecode, made=thumbnails_made))
    if video:
        height = chart_height(source.height)
        if not height:
            chart = None
        elif recorded is not None:
            scores, events = recorded
            chart = StripChart.of_scores(source.width, height, scores["frame"],
                                         scores["score"], settings.threshold, events)
        else:
            start, end = frame_range(settings, source.fps)
            last = (end if end is not None else source.frame_count or start + 1) - 1
            if source.frame_count:
                last = min(last, source.frame_count - 1)
            # The chart fills in as the video plays: its scale stops at twice the threshold.
            chart = StripChart(source.width, height, start, last, settings.threshold,
                               settings.threshold * 2.0)
        sinks.append(AnnotatedVideoSink(
            folder / ANNOTATED_NAME if video is True else Path(video), folder / REGIONS_NAME,
            Annotator(source.width, source.height, chart, settings.threshold_low, regions,
                      Overlay.of(settings)),
            source.fps, fill_chart=recorded is None))
    if clips:
        options = ({"boxes": settings.bounding_box, "box_level": settings.threshold_low}
                   if clip_mode is None else clip_options(source.uri, settings, clip_mode))
        sinks.append(ClipSink(clip_folder if clip_folder is not None else folder,
                              lambda n: clip_name(clip_template, source.name, n),
                              source.fps, settings.frames("time_before_event", source.fps),
                              **options))
    return sinks


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
