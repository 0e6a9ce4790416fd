"""Export what a run found: the annotated video (with ``regions.csv``, the boxes drawn on
it) and one clip per event.

A second pass over the source: the same detector with the same settings scores the same
frames again, so the heat map of every frame is the residual of the very subspace that scored
it (no second model), while which frames are flagged, and in which event, comes from the
run's ``scores.csv``. Files appear only when complete (written under a temporary name).
"""

from __future__ import annotations

import csv
import os
import string
from pathlib import Path
from typing import Callable

import numpy as np

from .output import read_events, read_scores
from .output.folder import partial_path, remove_stale
from .output.annotate import Annotator
from .output.video import VideoWriter
from .pipeline import RESULT_FILES, fingerprint, prepare_pass, score_frames
from .settings import Settings
from .sources import open_source

ANNOTATED_NAME = "annotated.mp4"
REGIONS_NAME = "regions.csv"
CLIP_TEMPLATE = "{video}.event{n:03d}.mp4"


def _settings_of(document: dict) -> Settings:
    return Settings(**document["settings"])


def check_clip_template(template: str) -> None:
    """Refuse, with one line, a clip name template that could write outside the result
    folder, over another file of it, or give every clip the same name."""
    fields = []
    try:
        for _, field, spec, _ in string.Formatter().parse(template):
            if field is not None:
                fields.append(field)
                if "{" in (spec or ""):
                    raise ValueError("nested fields")
        names = [template.format(video="clip", n=n) for n in (1, 2)]
    except (KeyError, IndexError, ValueError, AttributeError) as error:
        raise ValueError(f"bad clip name template {template!r}: {error}") from None
    unknown = [f for f in fields if f not in ("video", "n")]
    if unknown:
        raise ValueError(f"bad clip name template {template!r}: only {{video}} and {{n}} can be "
                         f"used, not {{{unknown[0]}}}")
    if "n" not in fields:
        raise ValueError(f"bad clip name template {template!r}: it must contain {{n}}, or "
                         f"every event's clip gets the same name")
    for name in names:
        if ("/" in name or "\\" in name or name.startswith(".") or not name.endswith(".mp4")
                or name in (ANNOTATED_NAME, *RESULT_FILES)):
            raise ValueError(f"bad clip name template {template!r}: it must give a file name "
                             f"ending in .mp4, without folders, not starting with '.', not a "
                             f"name of the results (got {name!r})")


def check_video_path(path: str | os.PathLike, source_uri: str | None = None) -> Path:
    """Refuse, with one line, an annotated video path that cannot be written or would
    overwrite something it must not (the source itself, a folder)."""
    path = Path(path)
    if not os.fspath(path).strip() or path.suffix.lower() != ".mp4":
        raise ValueError(f"the annotated video's name must end in .mp4, got '{path}'")
    if path.is_dir():
        raise ValueError(f"'{path}' is a folder, not a file name for the annotated video")
    if not path.parent.is_dir():
        raise ValueError(f"cannot write the annotated video '{path}': folder "
                         f"'{path.parent}' does not exist")
    if source_uri is not None and path.exists() and os.path.exists(source_uri) \
            and os.path.samefile(path, source_uri):
        raise ValueError(f"the annotated video '{path}' would overwrite the source")
    return path


def export(result_dir: str | os.PathLike, *, video: str | os.PathLike | None | bool = True,
           clips: bool = False, clip_template: str = CLIP_TEMPLATE,
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
    events = document["events"]
    flagged_event = dict(zip(scores["frame"].tolist(), scores["event"].tolist()))
    written: list[Path] = []
    with open_source(uri, colour=settings.colour, backend=settings.backend, fps=settings.fps,
                     keep_colour=True) as source:
        run = prepare_pass(source, settings)
        annotated = regions_file = None
        if video:
            video_path = folder / ANNOTATED_NAME if video is True else Path(video)
            annotated = VideoWriter(video_path, source.width, source.height, source.fps)
            annotator = Annotator(source.width, source.height, scores, events,
                                  settings.threshold, settings.threshold_low)
            # The boxes, for programs: where the change is in each event frame.
            regions_file = open(partial_path(folder / REGIONS_NAME), "w", newline="")
            regions = csv.writer(regions_file)
            regions.writerow(("frame", "event", "rank", "x", "y", "width", "height"))
        clip_folder = Path(clips_dir) if clips_dir is not None else folder
        open_clip: tuple[dict, VideoWriter] | None = None
        frames_seen = 0
        recorded = document["source"].get("fingerprint")
        first_vectors: list = []
        try:
            for frame, vector, verdict in score_frames(run, explain=annotated is not None):
                frames_seen += 1
                if recorded is not None and len(first_vectors) < len(recorded):
                    first_vectors.append(vector)
                    if len(first_vectors) == len(recorded) and not _same_fingerprint(
                            fingerprint(first_vectors, run.frame_shape), recorded):
                        raise ValueError("the source has changed since the run: its first "
                                         "frames are not those the run scanned")
                picture = frame.colour
                if picture is None:  # undecodable frame: keep the timeline, show black
                    picture = np.zeros((source.height, source.width, 3), np.uint8)
                if annotated is not None:
                    number = flagged_event.get(frame.index) or None
                    image, boxes = annotator.draw(picture, frame.index, frame.time_s, number,
                                                  verdict.residual_image, verdict.block_scores)
                    annotated.write(image)
                    regions.writerows((frame.index, number, rank, box.x, box.y, box.width,
                                       box.height) for rank, box in enumerate(boxes, 1))
                if clips:
                    open_clip = _feed_clip(open_clip, events, frame.index, picture, clip_folder,
                                           clip_template, source, written)
                if progress is not None:
                    progress(1)
            if frames_seen != document["frames_read"]:
                raise ValueError(f"the source has changed since the run: it now has "
                                 f"{frames_seen} frames in the range scanned, the run read "
                                 f"{document['frames_read']}")
            if open_clip is not None:
                written.append(open_clip[1].close())
                open_clip = None
            if annotated is not None:
                written.insert(0, annotated.close())
                annotated = None
                regions_file.close()
                os.replace(regions_file.name, folder / REGIONS_NAME)
                written.insert(1, folder / REGIONS_NAME)
        finally:
            for writer in (annotated, open_clip[1] if open_clip else None):
                if writer is not None:
                    writer.discard()
            if regions_file is not None and not regions_file.closed:
                regions_file.close()
                Path(regions_file.name).unlink(missing_ok=True)
    return written


def _same_fingerprint(ours: list, recorded: list) -> bool:
    return all((a is None) == (b is None) and (a is None or np.allclose(a, b, atol=2e-3))
               for a, b in zip(ours, recorded))


def _feed_clip(open_clip, events, index, picture, folder, template, source, written):
    """Write ``picture`` to the clip of the event whose padded range holds ``index``."""
    if open_clip is not None and index > open_clip[0]["end_frame"]:
        written.append(open_clip[1].close())
        open_clip = None
    if open_clip is None:
        for event in events:
            if event["start_frame"] <= index <= event["end_frame"]:
                name = template.format(video=source.name, n=event["number"])
                folder.mkdir(parents=True, exist_ok=True)
                open_clip = (event, VideoWriter(folder / name, source.width, source.height,
                                                source.fps))
                break
    if open_clip is not None:
        open_clip[1].write(picture)
    return open_clip
