"""Export what an earlier run found: the annotated video (with ``regions.csv``, the boxes
drawn on it) and one clip per event (``videvent export``; ``run`` writes them in its own
pass).

A second pass over the source, as ``run``'s: the engine scores the same frames with the same
settings into a session with the same sinks, so the heat map of every frame is the residual
of the very subspace that scored it (no second model) and the events are cut as the run cut
them. Each verdict is checked against the run's ``scores.csv`` as it comes: a frame that
scores otherwise means the source has changed since the run, and the export stops. Files
appear only when complete (written under a temporary name).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Callable

import numpy as np

from .engine import Engine
from .output import read_events, read_scores
from .choices import CLIP_MODES
from .output.clips import CLIPS_NAME, REGIONS_NAME, write_clip_index
from .output.folder import remove_stale
from .output.names import (ANNOTATED_NAME, CLIP_TEMPLATE, check_clip_template,
                           check_video_path, clip_name)
from .passes import open_for, prepare
from .session import Session, fingerprint
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
    if os.path.exists(uri) and not (os.path.isfile(uri) or os.path.isdir(uri)):
        raise ValueError(f"the source of these results, '{uri}', is a pipe or device, which "
                         f"gives its frames once: export them in the run (--export-clips, "
                         f"--export-video)")
    if clips:
        check_clip_template(clip_template)
    if video is not True and video:
        check_video_path(video, uri)
    remove_stale(folder)
    clip_folder = Path(clips_dir) if clips_dir is not None else folder
    with open_for(uri, settings, keep_colour=True) as source:
        run, segmenter = prepare(source, settings)
        sinks, session = [], None
        # Made inside the try: a signal that comes while they are made still removes what
        # they began to write.
        try:
            sinks += folder_sinks(source, settings, run.preprocess.regions, folder,
                                  video=video, clips=clips, clip_template=clip_template,
                                  clip_mode=clip_mode, clip_folder=clip_folder,
                                  recorded=(scores, document["events"]))
            session = Session(run, segmenter, sinks=sinks)
            recorded = _Recorded(scores, document["source"].get("fingerprint"),
                                 run.frame_shape, progress)
            session.start()
            # Residual images: every frame's for the video, the unusual ones' for clip boxes.
            explain = True if video else settings.threshold_low if settings.bounding_box \
                else False
            Engine(run, explain=explain).run(session, on_scored=recorded)
            session.finish()
            if recorded.frames_seen != document["frames_read"]:
                raise ValueError(f"the source has changed since the run: it now has "
                                 f"{recorded.frames_seen} frames in the range scanned, the "
                                 f"run read {document['frames_read']}")
            # Inside: a full disk fails a file only as it is finished, and the files of the
            # other sinks are then dropped too, so a failed export leaves nothing partial.
            session.close()
        except BaseException:
            if session is not None:
                session.close(failed=True)
            else:
                for sink in sinks:
                    sink.discard()
            raise
    if clips and clip_folder == folder:
        write_clip_index(folder, {event.number: clip_name(clip_template, source.name,
                                                          event.number)
                                  for event in session.events},
                         [path for sink in sinks for path in sink.written])
    return [path for sink in sinks for path in sink.written]


# A verdict that differs has a second cause: another videvent made the run (its decoding or
# its detector changed since); the run's own version is what scores its frames the same.
OR_VIDEVENT = " (or videvent has changed since: run again, or export with the version that ran)"


class _Recorded:
    """The run's verdicts, from its ``scores.csv`` (and the fingerprint of its first frames),
    against which each frame scored again is checked as it comes: the same detector on the
    same frames scores them the same, so a difference means the source has changed."""

    def __init__(self, scores: dict, fingerprint: list | None, frame_shape: tuple[int, ...],
                 progress: Callable[[int], None] | None):
        self.frames, self.scores = scores["frame"].tolist(), scores["score"].tolist()
        self.fingerprint, self.frame_shape, self.progress = fingerprint, frame_shape, progress
        self.first_vectors: list = []
        self.frames_seen = 0

    def __call__(self, decoded, verdict) -> None:
        seen, self.frames_seen = self.frames_seen, self.frames_seen + 1
        recorded = self.fingerprint
        if recorded is not None and len(self.first_vectors) < len(recorded):
            self.first_vectors.append(decoded.vector)
            if len(self.first_vectors) == len(recorded) and not _same_fingerprint(
                    fingerprint(self.first_vectors, self.frame_shape), recorded):
                raise ValueError("the source has changed since the run: its first "
                                 "frames are not those the run scanned" + OR_VIDEVENT)
        # As scores.csv writes them (six significant digits); frames past the run's last are
        # counted, and said at the end.
        if seen < len(self.frames) and (verdict.index != self.frames[seen]
                                        or float(f"{verdict.score:.6g}") != self.scores[seen]):
            raise ValueError(f"the source has changed since the run: frame {verdict.index} "
                             f"scores {verdict.score:.6g} now, the run's frame "
                             f"{self.frames[seen]} scored {self.scores[seen]:.6g}" + OR_VIDEVENT)
        if self.progress is not None:
            self.progress(1)


def _same_fingerprint(ours: list, recorded: list) -> bool:
    return all((a is None) == (b is None) and (a is None or np.allclose(a, b, atol=2e-3))
               for a, b in zip(ours, recorded))

