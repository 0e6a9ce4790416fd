"""The names a run writes to, checked before any work, by the command line and the Python API
alike: what is refused (a clip name that leaves the result folder, an annotated video over the
source) is refused the same way whichever calls."""

from __future__ import annotations

import os
import string
from pathlib import Path

# The annotated video's default name, the default template of the event clips' names, and
# the plot and report of a result folder.
ANNOTATED_NAME = "annotated.mp4"
CLIP_TEMPLATE = "{video}.event{n:03d}.mp4"
PLOT_NAME = "residuals.png"
REPORT_NAME = "report.html"

# Everything a run or an export writes into a result folder (event clips aside, whose names
# the user chooses): a new run replaces all of them, so nothing stale stays beside it. A
# watch's events.jsonl too: a run writes none, and one left there would list another
# session's events beside the run's events.json.
RESULT_FILES = ("scores.csv", "events.json", "events.jsonl", PLOT_NAME, REPORT_NAME,
                "thumbnails", "compare.csv", ANNOTATED_NAME, "regions.csv", "clips.json")


class OutputNameError(ValueError):
    """A name the run would write to that cannot be used; ``option``: the setting that gave it
    (``out_dir``, ``clip_template`` or ``export_video``)."""

    def __init__(self, option: str, message: str):
        super().__init__(message)
        self.option = option


def check_outputs(source: str | os.PathLike | int, out_dir: str | os.PathLike | None,
                  export_video: bool | str | os.PathLike, clips: bool,
                  clip_template: str) -> None:
    """Every name a run will write, checked before any work: OutputNameError (one line)."""
    if out_dir is not None and not os.fspath(out_dir).strip():
        raise OutputNameError("out_dir", "the output folder name is empty")
    if clips:
        try:
            check_clip_template(clip_template)
        except ValueError as error:
            raise OutputNameError("clip_template", str(error)) from None
    if export_video and export_video is not True:
        try:
            check_video_path(export_video, None if isinstance(source, int) else os.fspath(source))
        except ValueError as error:
            raise OutputNameError("export_video", str(error)) from None


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
