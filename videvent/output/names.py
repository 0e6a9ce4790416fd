"""The names a run writes to, checked before any work, by the command line and the Python API
alike: what is refused (a clip name that leaves the result folder, an annotated video over the
source) is refused the same way whichever calls."""

from __future__ import annotations

import os
import re
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


# What a field of a clip name template may hold after its colon: for ``{n}`` a fill of '0', ' '
# or '_' with an alignment, a sign, a width of at most 2 digits, and the type d (or none), so
# every event's number gives digits, a sign and those fills only; for ``{video}`` the same
# fills and alignments, a width and a precision of at most 2 digits, and the type s (or none).
# Anything else (c, x, e, %, a ',' or '/' fill, a width of 4000000000, ...) is refused.
_FIELD_SPECS = {
    "n": re.compile(r"(?:[0 _]?[<>=^])?[-+ ]?0?[0-9]{0,2}d?"),
    "video": re.compile(r"(?:[0 _]?[<>^])?[0-9]{0,2}(?:\.[0-9]{1,2})?s?"),
}
_FIELD_RULES = {
    "n": "{n} takes only a fill of '0', ' ' or '_' with an alignment, a sign, a width of up to "
         "2 digits and the type d (as in {n:03d})",
    "video": "{video} takes only a fill of '0', ' ' or '_' with an alignment, a width or "
             "precision of up to 2 digits and the type s (as in {video:.20})",
}
_NAME_RULE = ("it must give a file name ending in .mp4, without folders or control characters, "
              "not starting with '.', not a name of the results, at most 255 bytes")


def _shown(text: str) -> str:
    """``text`` on one line, as a message shows it (control characters escaped)."""
    return text.encode("unicode_escape").decode("ascii")


def _name_problem(name: str) -> str | None:
    """Why ``name`` cannot be a clip's name in the result folder (None: it can)."""
    if (not name.endswith(".mp4") or name.startswith(".") or "/" in name or "\\" in name
            or any(ord(c) < 32 or ord(c) == 127 for c in name)
            or name in (ANNOTATED_NAME, *RESULT_FILES)
            or len(name.encode("utf-8", "surrogateescape")) > 255):
        shown = name if len(name) <= 100 else name[:100] + "..."
        return f"{_NAME_RULE} (got {shown!r})"
    return None


def check_clip_template(template: str) -> None:
    """Refuse, with one line, a clip name template that could write outside the result
    folder, over another file of it, or give every clip the same name.

    The rule holds for every event number, not only the ones tried: the text around the fields
    has no '/', '\\' or control character; the only fields are ``{video}`` and ``{n}`` (``{n}``
    required), without conversions (``!r``); ``{n}``'s format is at most a fill of '0', ' ' or
    '_' with an alignment, a sign, a width of up to 2 digits and the type d, so every number
    gives only digits, a sign and those fills (never '/', a control character, a letter that
    could spell a result's name, or a huge name); ``{video}``'s at most the same fills, a width
    or precision of up to 2 digits and the type s. The names of events 1 and 2 (for a video
    named "clip") must then be ``.mp4`` file names, not starting with '.', not a result's.
    Each clip's name is checked again where it is made (``clip_name``)."""
    def bad(reason) -> ValueError:
        return ValueError(f"bad clip name template {template!r}: {reason}")

    fields = []
    try:
        parts = list(string.Formatter().parse(template))
    except ValueError as error:
        raise bad(error) from None
    for literal, field, spec, conversion in parts:
        if "/" in literal or "\\" in literal or any(ord(c) < 32 or ord(c) == 127
                                                     for c in literal):
            raise bad(f"{_NAME_RULE} (got {literal!r} in it)")
        if field is None:
            continue
        if field not in ("video", "n"):
            raise bad(f"only {{video}} and {{n}} can be used, not {{{_shown(field)}}}")
        if conversion:
            raise bad(f"{{{field}!{_shown(conversion)}}}: no conversion can be used")
        if not _FIELD_SPECS[field].fullmatch(spec or ""):
            raise bad(f"{_FIELD_RULES[field]}, not {{{field}:{_shown(spec)}}}")
        fields.append(field)
    if "n" not in fields:
        raise bad("it must contain {n}, or every event's clip gets the same name")
    try:
        names = [template.format(video="clip", n=n) for n in (1, 2)]
    except (KeyError, IndexError, ValueError, AttributeError) as error:
        raise bad(error) from None
    for name in names:
        problem = _name_problem(name)
        if problem:
            raise bad(problem)


def clip_name(template: str, video: str, n: int) -> str:
    """Event ``n``'s clip name, from a template ``check_clip_template`` accepted and the
    source's name ``video``, checked again as it is made: OutputNameError (one line) for a
    name that is not a plain ``.mp4`` file of the result folder (a source named '/', say),
    which is refused rather than written outside it."""
    name = template.format(video=video, n=n)
    problem = _name_problem(name)
    if problem:
        raise OutputNameError("clip_template", f"the clip name template {template!r} gives "
                                               f"event {n} of '{video}' a name that cannot be "
                                               f"used: {problem}")
    return name


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
