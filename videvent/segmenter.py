"""Turn a stream of per-frame scores into events, one frame at a time.

The window scorer gives every frame a score (larger = more unusual).  The
segmenter reads those scores in frame order and cuts them into events:

* Hysteresis: a *run* starts at a frame scoring ``>= threshold`` and continues
  while frames score ``>= threshold_low``.  NaN (an unscorable frame) counts as
  below ``threshold_low``.  Both ways, as in Canny's edge hysteresis: the frames
  scoring ``>= threshold_low`` just before the run's first frame belong to it too
  (its *lead-in*: an event rising through the low threshold starts where it does),
  as far back as ``pre_roll`` frames and never into the previous event's span.
* Merging: two runs with fewer than ``merge_gap`` frames between them become
  one event, and the frames between them join its *core*.  Frames missing from
  the stream (skipped indices, e.g. frames dropped by a live source) are unknown:
  a run goes on across a hole of fewer than ``merge_gap`` of them when the frame
  after it scores ``>= threshold_low`` (dropped frames never split an event that
  merging would have kept whole); a longer hole ends the run.
* Minimum length: after merging, cores shorter than ``min_length`` frames are
  dropped.
* Padding: an event spans ``pre_roll`` frames before and ``post_roll`` frames
  after its core, clipped to the frames actually seen and so that two events'
  spans never overlap (an event's post-roll stops before the next core, the
  next event's pre-roll starts after the previous event's end).  When frames
  are missing, a padded start/end snaps inward to the nearest frame seen, so
  every reported frame has a known time.
* Absorption: ``absorbed=True`` on a frame says the detector folded a lasting
  scene change into its model there.  A run still open ends at the previous
  frame and its event is marked ``absorbed``; nothing merges across that frame.

Memory is bounded in the video length: the segmenter keeps at most one growing
event, one event waiting for its post-roll, the undecided frames (fewer than
``max(pre_roll, merge_gap + min_length)``) and the times of the last ``2 * pre_roll``
frames, besides the completed events (none once handed out, with ``keep_events=False``).
"""

from __future__ import annotations

import dataclasses
import math
import numbers
import operator
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from videvent.timecode import format_timecode


@dataclass
class Event:
    """One detected event; frame ranges are inclusive."""

    number: int  # 1-based, in order of time
    start_frame: int  # padded with pre_roll
    end_frame: int  # padded with post_roll
    core_start_frame: int  # the frames judged unusual, after merging
    core_end_frame: int
    start_time_s: float  # time of start_frame
    end_time_s: float  # time of end_frame
    peak_frame: int  # frame with the highest score in the core
    peak_score: float
    absorbed: bool = False  # ended because the detector absorbed a lasting scene change
    # What was seen and where (``videvent.kinds``), set by the session from the detector's
    # evidence on the event's frames; None where no session decided them.
    kind: str | None = None
    box: list[int] | None = None  # [x, y, width, height] in pixels of the source picture
    regions: list[str] = field(default_factory=list)  # the named watch regions it touched

    @classmethod
    def from_dict(cls, record: dict) -> "Event":
        """The event of a ``to_dict`` record (its derived keys ignored)."""
        return cls(**{key: value for key, value in record.items()
                      if key in cls.__dataclass_fields__})

    def to_dict(self) -> dict:
        """Plain fields plus timecodes and ``duration_s`` (start to end frame time)."""
        return {
            **dataclasses.asdict(self),
            "start_timecode": format_timecode(self.start_time_s),
            "end_timecode": format_timecode(self.end_time_s),
            "duration_s": self.end_time_s - self.start_time_s,
        }


@dataclass
class FrameDecision:
    """The final verdict on one frame: ``flagged`` means inside an event's core."""

    index: int
    flagged: bool
    event_number: int | None


@dataclass
class _OpenEvent:
    """An event whose core can still grow, or whose padded end is not yet known."""

    core_start: int
    core_end: int
    peak_frame: int
    peak_score: float
    start: tuple[int, float]  # padded start (frame, time)
    # Last frame seen within post_roll of the core: the padded end unless the next
    # event's core clips it.
    tail: tuple[int, float]
    # End of the previous event if this one is kept: its padding stops before our core.
    clipped_prev_end: tuple[int, float] | None
    number: int | None = None  # set once the core reaches min_length, i.e. it will be kept
    absorbed: bool = False


class EventSegmenter:
    """Streaming hysteresis segmenter; see the module docstring for the rules.

    Feed frames in increasing index order with :meth:`update`, then call
    :meth:`finish`.  Both return :class:`FrameDecision` objects for the frames
    whose flagged status became final, in index order, each frame exactly once.
    A frame is decided within ``max(pre_roll, merge_gap + min_length - 1)`` frames
    after it arrives (immediately with the defaults).  Events appear in :attr:`events`
    once their post-roll has been seen, or at :meth:`finish`.
    """

    def __init__(
        self,
        threshold: float,
        threshold_low: float | None = None,
        min_length: int = 1,
        merge_gap: int = 0,
        pre_roll: int = 0,
        post_roll: int = 0,
        keep_events: bool = True,
    ) -> None:
        self.threshold = _check_finite("threshold", threshold)
        self.threshold_low = self.threshold
        if threshold_low is not None:
            self.threshold_low = _check_finite("threshold_low", threshold_low)
        if self.threshold_low > self.threshold:
            raise ValueError(
                f"threshold_low ({self.threshold_low}) must not exceed threshold ({self.threshold})"
            )
        self.min_length = _check_count("min_length", min_length, minimum=1)
        self.merge_gap = _check_count("merge_gap", merge_gap, minimum=0)
        self.pre_roll = _check_count("pre_roll", pre_roll, minimum=0)
        self.post_roll = _check_count("post_roll", post_roll, minimum=0)

        # Completed events; without keep_events, only those pop_completed() has not handed
        # out yet (a live session that runs for weeks keeps none of its own).
        self.events: list[Event] = []
        self.keep_events = keep_events
        self._popped = 0  # how many of self.events pop_completed() has handed out
        self._completed = 0  # events completed so far
        self._last_end: int | None = None  # end frame of the last completed event
        self._candidate: _OpenEvent | None = None  # core may still grow, merge or be dropped
        self._waiting: _OpenEvent | None = None  # kept, core final, waiting for its post-roll
        self._in_run = False  # the last frame seen belongs to a run of the candidate
        self._undecided: deque[int] = deque()  # frames of the candidate not yet decided
        # Frames >= threshold_low since the last frame below it, while no event is open: a
        # run starting next takes them in (at most pre_roll of them, all undecided).
        self._lead_in: deque[int] = deque()
        # (index, time) within 2 * pre_roll: an event's start is pre_roll before its lead-in.
        self._recent: deque[tuple[int, float]] = deque()
        self._last_index: int | None = None
        self._finished = False

    def update(
        self, index: int, time_s: float, score: float, *, absorbed: bool = False
    ) -> list[FrameDecision]:
        """Add one frame; return the frames decided by it."""
        if self._finished:
            raise RuntimeError("update() called after finish()")
        index = operator.index(index)
        if self._last_index is not None and index <= self._last_index:
            raise ValueError(f"frame indices must increase: got {index} after {self._last_index}")
        score = float(score)
        time_s = float(time_s)
        decisions: list[FrameDecision] = []

        # Skipped indices are unknown frames: a run goes on across fewer than merge_gap of
        # them; a longer hole ends it.
        contiguous = self._last_index is not None and index == self._last_index + 1
        bridged = contiguous or (self._last_index is not None
                                 and index - self._last_index - 1 < self.merge_gap)
        if self._in_run and (absorbed or not bridged or not score >= self.threshold_low):
            self._in_run = False  # the run ended at the previous frame seen
            # After a longer hole the run had already ended in it, not by absorption.
            if absorbed and bridged:
                self._candidate.absorbed = True
        candidate = self._candidate
        if candidate is not None and not self._in_run:
            if absorbed or index > candidate.core_end + self.merge_gap:
                decisions += self._close_candidate()
        if self._lead_in and (absorbed or not contiguous or not score >= self.threshold_low):
            # Nothing leads into a run across a dip, a hole or an absorption.
            decisions += _not_flagged(self._lead_in)

        self._remember(index, time_s)
        if self._in_run or score >= self.threshold:
            decisions += self._extend_core(index, time_s, score)
        elif self._candidate is not None:
            self._undecided.append(index)  # flagged only if a later run merges across it
        elif score >= self.threshold_low and self._may_lead_in(index):
            self._lead_in.append(index)
            if len(self._lead_in) > self.pre_roll:
                decisions.append(FrameDecision(self._lead_in.popleft(), False, None))
        else:
            decisions.append(FrameDecision(index, False, None))

        for open_event in (self._waiting, self._candidate):
            if open_event is not None and index <= open_event.core_end + self.post_roll:
                open_event.tail = (index, time_s)

        # Close as soon as a run starting at the next frame would be too far to merge,
        # which keeps the undecided frames few.
        candidate = self._candidate
        if candidate is not None and not self._in_run:
            if index >= candidate.core_end + self.merge_gap:
                decisions += self._close_candidate()
        # While the candidate may still be kept, it may still clip the waiting event's end.
        waiting = self._waiting
        if waiting is not None and self._candidate is None:
            if index >= waiting.core_end + self.post_roll:
                self._complete_waiting(waiting.tail)

        self._last_index = index
        return decisions

    def finish(self) -> list[FrameDecision]:
        """End of stream: decide the remaining frames and complete open events."""
        if self._finished:
            return []
        self._finished = True
        self._in_run = False
        decisions = _not_flagged(self._lead_in)
        if self._candidate is not None:
            decisions += self._close_candidate()
        if self._waiting is not None:
            self._complete_waiting(self._waiting.tail)
        return decisions

    def pop_completed(self) -> list[Event]:
        """Events completed since the last call (for live alerts)."""
        fresh = self.events[self._popped :]
        if self.keep_events:
            self._popped = len(self.events)
        else:
            self.events.clear()
        return fresh

    def open_event(self, number: int) -> Event | None:
        """Event ``number`` as it stands while its core may still grow (its end so far)."""
        for candidate in (self._candidate, self._waiting):
            if candidate is not None and candidate.number == number:
                return Event(number, candidate.start[0], candidate.tail[0],
                             candidate.core_start, candidate.core_end, candidate.start[1],
                             candidate.tail[1], candidate.peak_frame, candidate.peak_score,
                             candidate.absorbed)
        return None

    def _remember(self, index: int, time_s: float) -> None:
        # Only frames a new event's pre-roll can reach (before its lead-in) are kept.
        self._recent.append((index, time_s))
        while self._recent[0][0] < index - 2 * self.pre_roll:
            self._recent.popleft()

    def _may_lead_in(self, index: int) -> bool:
        # Not within the post-roll of the event before: its span is its own.
        waiting = self._waiting
        return self.pre_roll > 0 and (waiting is None
                                      or index > waiting.core_end + self.post_roll)

    def _extend_core(self, index: int, time_s: float, score: float) -> list[FrameDecision]:
        candidate = self._candidate
        if candidate is None:
            candidate = self._candidate = self._start_candidate(index, time_s, score)
            self._undecided.extend(self._lead_in)
            self._lead_in.clear()
        else:
            # Either the run goes on or a new run starts close enough to merge.
            candidate.core_end = index
            if score > candidate.peak_score:
                candidate.peak_frame, candidate.peak_score = index, score
        self._in_run = True
        self._undecided.append(index)
        core_length = candidate.core_end - candidate.core_start + 1
        if candidate.number is None and core_length >= self.min_length:
            self._confirm(candidate)
        if candidate.number is None:
            return []
        # The core only grows from here, so every frame up to its end is final.
        decisions = [FrameDecision(i, True, candidate.number) for i in self._undecided]
        self._undecided.clear()
        return decisions

    def _start_candidate(self, index: int, time_s: float, score: float) -> _OpenEvent:
        core_start = self._lead_in[0] if self._lead_in else index
        earliest_start = core_start - self.pre_roll
        clipped_prev_end = None
        if self._waiting is not None:
            # All frames seen so far precede this core, so the waiting event's tail
            # is exactly where its end must stop if this event is kept.
            clipped_prev_end = self._waiting.tail
            earliest_start = max(earliest_start, clipped_prev_end[0] + 1)
        elif self._last_end is not None:
            earliest_start = max(earliest_start, self._last_end + 1)
        start = next(frame for frame in self._recent if frame[0] >= earliest_start)
        return _OpenEvent(
            core_start=core_start,
            core_end=index,
            peak_frame=index,
            peak_score=score,
            start=start,
            tail=(index, time_s),
            clipped_prev_end=clipped_prev_end,
        )

    def _confirm(self, candidate: _OpenEvent) -> None:
        # The candidate will be kept, so the waiting event (if any) ends before it.
        if self._waiting is not None:
            self._complete_waiting(candidate.clipped_prev_end)
        candidate.number = self._completed + 1

    def _close_candidate(self) -> list[FrameDecision]:
        # Frames still undecided are gap frames after a kept core, or a core too short.
        decisions = _not_flagged(self._undecided)
        if self._candidate.number is not None:
            self._waiting = self._candidate
        self._candidate = None
        return decisions

    def _complete_waiting(self, end: tuple[int, float]) -> None:
        waiting = self._waiting
        self.events.append(
            Event(
                number=waiting.number,
                start_frame=waiting.start[0],
                end_frame=end[0],
                core_start_frame=waiting.core_start,
                core_end_frame=waiting.core_end,
                start_time_s=waiting.start[1],
                end_time_s=end[1],
                peak_frame=waiting.peak_frame,
                peak_score=waiting.peak_score,
                absorbed=waiting.absorbed,
            )
        )
        self._completed += 1
        self._last_end = end[0]
        self._waiting = None


def _not_flagged(frames: deque[int]) -> list[FrameDecision]:
    """Decide every frame of ``frames`` as outside any event, and empty it."""
    decisions = [FrameDecision(i, False, None) for i in frames]
    frames.clear()
    return decisions


def segment(
    scores: Sequence[float] | np.ndarray,
    times: Sequence[float] | np.ndarray | None = None,
    *,
    absorbed: Sequence[bool] | np.ndarray | None = None,
    **params,
) -> tuple[list[Event], np.ndarray]:
    """Segment a whole score array with :class:`EventSegmenter`.

    ``times`` default to the frame indices (as if 1 fps); ``absorbed`` is an
    optional per-frame boolean mask; ``params`` go to :class:`EventSegmenter`.
    Returns the events and a boolean array, True on frames inside a core.
    """
    scores = np.asarray(scores, dtype=float)
    if scores.ndim != 1:
        raise ValueError(f"scores must be one-dimensional, got shape {scores.shape}")
    times = np.arange(len(scores), dtype=float) if times is None else np.asarray(times, dtype=float)
    absorbed = np.zeros(len(scores), bool) if absorbed is None else np.asarray(absorbed, dtype=bool)
    if times.shape != scores.shape or absorbed.shape != scores.shape:
        raise ValueError("scores, times and absorbed must have the same length")

    segmenter = EventSegmenter(**params)
    decisions: list[FrameDecision] = []
    for index, (time_s, score, absorbed_here) in enumerate(zip(times, scores, absorbed)):
        decisions += segmenter.update(index, time_s, score, absorbed=bool(absorbed_here))
    decisions += segmenter.finish()
    flagged = np.zeros(len(scores), bool)
    flagged[[d.index for d in decisions if d.flagged]] = True
    return segmenter.events, flagged


def _check_finite(name: str, value: float) -> float:
    if isinstance(value, bool) or not (isinstance(value, numbers.Real) and math.isfinite(value)):
        raise ValueError(f"{name} must be a finite number, got {value!r}")
    return float(value)


def _check_count(name: str, value: int, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum} (frames), got {value!r}")
    return int(value)
