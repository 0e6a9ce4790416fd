"""What one pass of the detector over a source is set up with, read from the settings.

Every front end opens its source here (``open_for``) and prepares its pass here
(``prepare``): the frame range, the regions checked against the picture, the preprocessing,
the detector (``detector_for``: the one place the settings' times become the detector's frames)
and the segmenter. A setting that cannot work at the source's frame rate is a
``SettingError`` (bad usage) raised before anything is written.
"""

from __future__ import annotations

import os
import pickle
from dataclasses import dataclass, field

import numpy as np

from .detectors import SubspaceWindowDetector
from .preprocess import HealthCheck, Preprocessor, working_size
from .regions import RegionError, Regions
from .segmenter import EventSegmenter
from .settings import SettingError, Settings
from .sources import FrameSource, open_source

# A picture repeated exactly for this long is a stalled source, reported as frozen (the
# duration ffmpeg's freezedetect filter reports by default). Shorter runs of repeats are a still
# scene coded at a low bit rate, which repeats a still picture within a keyframe interval.
FROZEN_AFTER_SECONDS = 2.0
# The model learns every frame of its first three seconds (unseeded: a live source), then one
# frame in every stride; fewer give statistics that the next gust of wind overturns.
WARMUP_SECONDS = 3.0
# A switched light has settled when the brightness held for this long (``SETTLED_MOTION``).
SETTLE_SECONDS = 0.5


def open_for(spec: str | os.PathLike | int, settings: Settings, *,
             keep_colour: bool = False) -> FrameSource:
    """``spec`` opened as ``settings`` read it (colour, decoder, an image sequence's rate):
    the one place every front end opens its source."""
    return open_source(spec, colour=settings.colour, backend=settings.backend, fps=settings.fps,
                       keep_colour=keep_colour)


def detector_parameters(settings: Settings, fps: float, method: str | None = None) -> dict:
    """The detector's parameters from ``settings`` at ``fps``: every time in frames."""
    span = max(settings.window, settings.frames("background_span", fps))
    return dict(
        method=method or settings.method, rank=settings.rank, window=settings.window,
        projection_dim=settings.projection_dim, inlier_fraction=settings.inlier_fraction,
        stride=round(span / settings.window), warmup=max(1, round(fps * WARMUP_SECONDS)),
        static_after=_at_least_one(settings.frames("absorb_after", fps)),
        hot=settings.threshold_low,
        refit_every=settings.refit_every, blocks=settings.blocks,
        light_invariant=settings.light_invariant, settle_frames=round(fps * SETTLE_SECONDS),
        without=settings.mechanisms_off())


def _at_least_one(frames: int | None) -> int | None:
    """A time shorter than a frame at this rate (0.01 s at 25 fps) is one frame."""
    return None if frames is None else max(1, frames)


def detector_for(settings: Settings, frame_shape: tuple[int, ...], fps: float, *,
                 method: str | None = None, watched: np.ndarray | None = None
                 ) -> SubspaceWindowDetector:
    """The detector of a run with ``settings`` on frames of ``frame_shape`` at ``fps``
    (``method``: another than the settings', as ``--compare`` runs)."""
    return SubspaceWindowDetector(frame_shape, **detector_parameters(settings, fps, method),
                                  watched=watched)


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


@dataclass(frozen=True)
class Levels:
    """The settings' numbers the stages after the detector read, made once (``prepare``)."""

    threshold: float          # the score that starts an event
    threshold_low: float      # ... and that an event stays above, and frames are explained from
    method: str               # the detector's
    seeding: str | None       # how a file's start is seeded: "model" (``--seed``), "reference"
                              # (``--start-reference``) or None


def levels_of(settings: Settings) -> Levels:
    seeding = "model" if settings.seed else "reference" if settings.start_reference else None
    return Levels(settings.threshold, settings.threshold_low, settings.method, seeding)


@dataclass
class Pass:
    """One pass of the detector over a source: what it was set up with. ``settings`` are
    handed on as they were given (a sink's ``SessionInfo``, the result's record); what the
    pass's stages read of them is in ``levels``, ``detector_of`` and ``segmenter``."""

    source: FrameSource
    settings: Settings
    levels: Levels
    start: int
    end: int | None
    preprocess: Preprocessor
    detector: SubspaceWindowDetector
    health: HealthCheck
    # Working vectors of frames spread over the source, decoded once and shared by the
    # chunks of a long video (``seed_detector`` samples its own without them).
    seed_sample: list[np.ndarray] | None = None
    # Going on from another pass's state (``resume``): mid-video, not a start to seed.
    resumed: bool = field(default=False, init=False)

    @property
    def decode_size(self) -> tuple[int, int] | None:
        """The size to ask the source's pictures at (``FrameSource.frames``' ``size``): the
        working size, unless regions are masked at the source's size before the downscale."""
        if self.preprocess.regions:
            return None
        return self.preprocess.width, self.preprocess.height

    @property
    def frame_shape(self) -> tuple[int, ...]:
        return self.detector.frame_shape

    def detector_of(self, method: str) -> SubspaceWindowDetector:
        """A detector of this pass's settings with another ``method`` (``--compare``)."""
        return detector_for(self.settings, self.frame_shape, self.source.fps, method=method,
                            watched=self.preprocess.watched)

    def segmenter(self) -> EventSegmenter:
        """An event segmenter of this pass's settings."""
        return build_segmenter(self.settings, self.source.fps)

    def settings_record(self) -> dict:
        """The settings as the result records them (``events.json``)."""
        return self.settings.to_dict()

    def state(self) -> bytes:
        """All the pass has learned from its frames so far (its detector, and the health
        check's memory of the last pictures), pickled: a pass that ``resume``s from it goes on
        exactly as this one would."""
        return pickle.dumps((self.detector, self.health))

    def resume(self, state: bytes) -> None:
        """Go on from another pass's ``state``, taken before this pass's first frame."""
        self.detector, self.health = pickle.loads(state)
        self.resumed = True


# The fewest pixels across the working picture's long side (``--working-size``'s minimum).
MIN_WORKING_SIDE = 8


def working_frame(settings: Settings, source: FrameSource) -> tuple[int, int]:
    """The (width, height) the detector works at on ``source``; SettingError (one line, the
    setting and its usable range here) for ``-df`` that leaves fewer than MIN_WORKING_SIDE
    pixels across, or more ``--blocks`` than the working picture has pixels across (a block
    is a pixel at least)."""
    width, height = working_size(source.width, source.height, max_side=settings.working_size,
                                 downscale_factor=settings.downscale_factor)
    longest, across, blocks = max(source.width, source.height), max(width, height), settings.blocks
    factor = settings.downscale_factor
    largest_factor = max(1, longest // max(MIN_WORKING_SIDE, blocks))
    if factor is not None and across < MIN_WORKING_SIDE:
        raise SettingError(
            f"-df/--downscale-factor {factor} leaves a {width}x{height} picture of the "
            f"{source.width}x{source.height} source: usable here from 1 to {largest_factor} "
            f"(at least {MIN_WORKING_SIDE} pixels across, and one for each of --blocks "
            f"{blocks})")
    if blocks > across:
        if factor is not None:
            instead = f"-df at most {largest_factor}"
        elif across < longest:
            instead = f"--working-size {blocks} or more"
        else:
            instead = "nothing larger: the source's own size"
        raise SettingError(
            f"--blocks {blocks} is more than the {width}x{height} working picture has pixels "
            f"across: usable here from 1 to {across} (or {instead})")
    return width, height


def source_regions(settings: Settings, source: FrameSource) -> Regions:
    """The settings' regions, checked against the source's frame and the working picture:
    SettingError (one line) for a polygon outside it, one that covers no working pixel, or
    masks that leave nothing to watch."""
    regions = settings.regions()
    working = working_frame(settings, source)
    try:
        regions.check(source.width, source.height, working)
    except RegionError as error:
        raise SettingError(str(error)) from None
    return regions


def prepare_pass(source: FrameSource, settings: Settings) -> Pass:
    start, end = frame_range(settings, source.fps)
    regions = source_regions(settings, source)
    width, height = working_frame(settings, source)
    shape = (height, width, 3) if settings.colour else (height, width)
    preprocess = Preprocessor(width, height, settings.colour, regions=regions,
                              source_size=(source.width, source.height))
    return Pass(source, settings, levels_of(settings), start, end, preprocess,
                detector_for(settings, shape, source.fps, watched=preprocess.watched),
                HealthCheck(round(FROZEN_AFTER_SECONDS * source.fps), preprocess.watched))


def prepare(source: FrameSource, settings: Settings) -> tuple[Pass, EventSegmenter]:
    """The pass and the segmenter of ``settings`` on ``source``; SettingError if the settings,
    in frames of this source, cannot work (bad usage: callers check this before writing)."""
    try:
        return prepare_pass(source, settings), build_segmenter(settings, source.fps)
    except ValueError as error:
        raise SettingError(str(error)) from None
