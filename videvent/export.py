"""Export what an earlier run found: the annotated video (with ``regions.csv``, the boxes
drawn on it) and one clip per event (``videvent export``; ``run`` writes them in its own
pass).

A second pass over the source: the same detector with the same settings scores the same
frames again, so the heat map of every frame is the residual of the very subspace that scored
it (no second model), while which frames are flagged, and in which event, comes from the
run's ``scores.csv``; the frames go to the same sinks as ``run``'s. Files appear only when
complete (written under a temporary name).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Callable

import numpy as np

from .engine import Engine
from .output import read_events, read_scores
from .output.clips import (ANNOTATED_NAME, CLIP_MODES, CLIP_TEMPLATE, CLIPS_NAME,
                           REGIONS_NAME, write_clip_index)
from .output.folder import remove_stale
from .output.names import check_clip_template, check_video_path
from .passes import open_for, prepare_pass
from .segmenter import Event
from .session import fingerprint
from .settings import Settings
from .sinks import folder_sinks

__all__ = ["ANNOTATED_NAME", "CLIPS_NAME", "CLIP_MODES", "CLIP_TEMPLATE", "REGIONS_NAME",
           "check_clip_template", "check_video_path", "export"]


def _settings_of(document: dict) -> Settings:
    return Settings(**document["settings"])


def export(result_dir: str | os.PathLike, *, video: str | os.PathLike | None | bool = True,
           clips: bool = False, clip_template: str = CLIP_TEMPLATE,
           clip_mode: str = CLIP_MODES[0],
           clips_dir: str | os.PathLike | None = None,
           progress: Callable[[int], None] | None = None) -> list[Path]:
    """Write the annotated video (``video``: True for ``annotated.mp4`` in the folder, or a
    path) and/or the event clips of a result folder; return the files written.

    Raises ValueError with a one-line message when the folder is not a result folder or its
    source is gone or has changed.
    """
    folder = Path(result_dir)
    if not (folder / "events.json").is_file():
        raise ValueError(f"'{folder}' is not a videvent result folder (no events.json)")
    document = read_events(folder / "events.json")
    scores = read_scores(folder / "scores.csv")
    settings = _settings_of(document)
    uri = document["source"]["uri"]
    if document["source"].get("live") and not os.path.isfile(uri):
        raise ValueError(f"these results are from a live source ('{uri}'), which cannot be "
                         f"read again; the clip of each event is in '{folder}'")
    if "://" not in uri and not uri.isdigit() and "%" not in uri and not os.path.exists(uri):
        raise ValueError(f"the source of these results is gone: '{uri}' does not exist")
    if clips:
        check_clip_template(clip_template)
    if video is not True and video:
        check_video_path(video, uri)
    remove_stale(folder)
    events = [Event.from_dict(record) for record in document["events"]]
    clip_folder = Path(clips_dir) if clips_dir is not None else folder
    flagged_event = dict(zip(scores["frame"].tolist(), scores["event"].tolist()))
    with open_for(uri, settings, keep_colour=True) as source:
        run = prepare_pass(source, settings)
        sinks = []
        # Made inside the try: a signal that comes while they are made still removes what
        # they began to write.
        try:
            sinks += folder_sinks(source, settings, run.preprocess.regions, folder,
                                  video=video, clips=clips, clip_template=clip_template,
                                  clip_mode=clip_mode, clip_folder=clip_folder,
                                  recorded=(scores, document["events"]))
            replay = _Replay(sinks, events, flagged_event, document["source"].get("fingerprint"),
                             run.frame_shape, progress)
            # Residual images: every frame's for the video, the unusual ones' for clip boxes.
            explain = True if video else settings.threshold_low if settings.bounding_box \
                else False
            Engine(run, explain=explain).run(replay)
            if replay.frames_seen != document["frames_read"]:
                raise ValueError(f"the source has changed since the run: it now has "
                                 f"{replay.frames_seen} frames in the range scanned, the run "
                                 f"read {document['frames_read']}")
            # Inside: a full disk fails a file only as it is finished, and the files of the
            # other sinks are then dropped too, so a failed export leaves nothing partial.
            for sink in sinks:
                sink.close()
        except BaseException:
            for sink in sinks:
                sink.discard()
            raise
    if clips and clip_folder == folder:
        write_clip_index(folder, {event.number: clip_template.format(video=source.name,
                                                                     n=event.number)
                                  for event in events})
    return [path for sink in sinks for path in sink.written]


def _same_fingerprint(ours: list, recorded: list) -> bool:
    return all((a is None) == (b is None) and (a is None or np.allclose(a, b, atol=2e-3))
               for a, b in zip(ours, recorded))


class _Replay:
    """The engine's consumer in an export: checks that the source's first frames are those
    the run scanned, and tells the sinks the run's events, at their padded starts and ends,
    with each frame's event from ``scores.csv`` (``flagged_event``: frame -> event number)."""

    def __init__(self, sinks: list, events: list[Event], flagged_event: dict[int, int],
                 recorded_fingerprint: list | None, frame_shape: tuple[int, ...],
                 progress: Callable[[int], None] | None):
        self.sinks, self.upcoming, self.flagged_event = sinks, list(events), flagged_event
        self.recorded, self.frame_shape, self.progress = (recorded_fingerprint, frame_shape,
                                                          progress)
        self.first_vectors: list = []
        self.frames_seen = 0

    def add(self, frame, vector, verdict) -> None:
        self.frames_seen += 1
        recorded = self.recorded
        if recorded is not None and len(self.first_vectors) < len(recorded):
            self.first_vectors.append(vector)
            if len(self.first_vectors) == len(recorded) and not _same_fingerprint(
                    fingerprint(self.first_vectors, self.frame_shape), recorded):
                raise ValueError("the source has changed since the run: its first "
                                 "frames are not those the run scanned")
        upcoming = self.upcoming
        while upcoming and upcoming[0].end_frame < frame.index:
            upcoming.pop(0)
        starting = upcoming[0] if upcoming and upcoming[0].start_frame == frame.index else None
        number = self.flagged_event.get(frame.index) or None
        for sink in self.sinks:
            if starting is not None:
                sink.on_event_start(starting)
            sink.on_frame(frame, verdict, number)
            if upcoming and upcoming[0].end_frame == frame.index:
                sink.on_event_end(upcoming[0], {})
        if self.progress is not None:
            self.progress(1)

    def status(self, kind: str, detail: dict) -> None:
        """A file exported has no news."""
