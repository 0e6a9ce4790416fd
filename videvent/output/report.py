"""``report.html``: one self-contained page a person can open offline and share.

Built from the result folder alone (``events.json``, ``scores.csv``, ``thumbnails/``,
``compare.csv``, ``annotated.mp4``), so ``videvent report DIR`` re-renders it without
decoding the video again. Images are inlined as base64; the annotated video, when there is
one, is linked beside the page rather than inlined (it can be large).
"""

from __future__ import annotations

import base64
import html
import io
import json
import os
from pathlib import Path
from urllib.parse import quote

import numpy as np

from ..timecode import format_timecode
from .events_json import read_events
from ..atomic import write_text_atomically
from .names import PLOT_NAME, REPORT_NAME
from .scores_csv import read_scores


# What the plot and the page read of ``events.json``: each key and the kind of its value.
NUMBER, WHOLE, TEXT, FLAG = "a number", "a whole number", "text", "true or false"
_KINDS = {NUMBER: (int, float), WHOLE: (int,), TEXT: (str,), FLAG: (bool,)}
SOURCE_KEYS = {"name": TEXT, "uri": TEXT, "first_frame": WHOLE, "width": WHOLE,
               "height": WHOLE, "fps": NUMBER}
SETTINGS_KEYS = {"threshold": NUMBER, "threshold_low": NUMBER, "method": TEXT, "rank": WHOLE}
EVENT_KEYS = {"number": WHOLE, "start_frame": WHOLE, "end_frame": WHOLE,
              "core_start_frame": WHOLE, "core_end_frame": WHOLE, "peak_frame": WHOLE,
              "start_time_s": NUMBER, "duration_s": NUMBER, "peak_score": NUMBER,
              "absorbed": FLAG, "start_timecode": TEXT, "end_timecode": TEXT}
ABSORBED_KEYS = {"frame": WHOLE, "timecode": TEXT}
PROBLEM_KEYS = {"status": TEXT, "start_frame": WHOLE, "end_frame": WHOLE,
                "start_time_s": NUMBER}


def read_result(folder: str | os.PathLike) -> tuple[dict, dict[str, np.ndarray]]:
    """The result folder's ``events.json`` and ``scores.csv``, checked for everything the plot
    and the page read of them: ValueError (one line, naming the file) for a file that is not
    one, before anything is drawn or written."""
    folder = Path(folder)
    path = folder / "events.json"
    document = read_events(path)

    def check(table, keys: dict, where: str) -> None:
        if not isinstance(table, dict):
            raise ValueError(f"'{path}' is damaged: {where} is not a table")
        for key, kind in keys.items():
            if key not in table:
                raise ValueError(f"'{path}' is damaged: {where} has no '{key}'")
            value = table[key]
            if not isinstance(value, _KINDS[kind]) or (kind != FLAG and isinstance(value, bool)):
                raise ValueError(f"'{path}' is damaged: {where}'s '{key}' is not {kind}, got "
                                 f"{value!r:.40}")

    check(document, {"frames_read": WHOLE}, "the document")
    check(document.get("source"), SOURCE_KEYS, "'source'")
    check(document.get("settings"), SETTINGS_KEYS, "'settings'")
    for key, keys, what in (("events", EVENT_KEYS, "event"), ("absorbed", ABSORBED_KEYS,
                                                               "absorbed change"),
                            ("frame_problems", PROBLEM_KEYS, "frame problem")):
        items = document.get(key)
        if not isinstance(items, list):
            raise ValueError(f"'{path}' is damaged: '{key}' is not a list")
        for number, item in enumerate(items, start=1):
            check(item, keys, f"{what} {number}")
    compare = document.get("compare_events", {})
    if not isinstance(compare, dict) or not all(
            isinstance(ranges, list) and all(
                isinstance(pair, list) and len(pair) == 2 and all(
                    isinstance(n, int) and not isinstance(n, bool) for n in pair)
                for pair in ranges) for ranges in compare.values()):
        raise ValueError(f"'{path}' is damaged: 'compare_events' is not a table of frame "
                         f"ranges")
    scores = read_scores(folder / "scores.csv")
    if (folder / "compare.csv").is_file():
        compare = read_compare(folder / "compare.csv")
        if len(compare) != len(scores["frame"]):
            raise ValueError(f"'{folder / 'compare.csv'}' has {len(compare)} rows, not one "
                             f"for each of the {len(scores['frame'])} frames of scores.csv")
    return _readable(document), scores


def write_plot(folder: str | os.PathLike) -> None:
    """``residuals.png`` of the result folder, from its scores and events."""
    from .plot import write_residual_plot  # matplotlib: imported only when drawing

    folder = Path(folder)
    document, scores = read_result(folder)
    settings = document["settings"]
    write_residual_plot(folder / PLOT_NAME, scores,
                        document["events"], threshold=settings["threshold"],
                        threshold_low=settings["threshold_low"],
                        title=_plot_title(document))


def _readable(document: dict) -> dict:
    """The document with the source's name and path fit for a page and a plot: a file name
    that is not valid UTF-8 comes back from events.json with surrogates, which neither UTF-8
    nor the plot's fonts can take."""
    source = document["source"]
    document["source"] = {**source, **{key: str(source[key]).encode(
        "utf-8", "surrogateescape").decode("utf-8", "replace") for key in ("name", "uri")}}
    return document


def _plot_title(document: dict) -> str:
    settings = document["settings"]
    return (f"{document['source']['name']}: residual per frame "
            f"({settings['method'].upper()}, rank {settings['rank']})")


def _png_data(figure) -> str:
    import matplotlib.pyplot as plt

    buffer = io.BytesIO()
    try:
        figure.savefig(buffer, format="png", dpi=100)
    finally:
        plt.close(figure)
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode()


def compare_figure(folder: Path, document: dict, status: np.ndarray):
    """The paper's side-by-side panels: residual per frame of each method, each shaded with
    its own method's events (results of earlier versions did not record them: unshaded)."""
    import matplotlib.pyplot as plt

    from .plot import residual_axis_top

    table = read_compare(folder / "compare.csv")
    methods = [name[len("residual_"):] for name in table.dtype.names if name != "frame"]
    columns = 2 if len(methods) > 1 else 1
    rows = -(-len(methods) // columns)
    figure, axes = plt.subplots(rows, columns, figsize=(5 * columns, 2.6 * rows), squeeze=False)
    own_events = {document["settings"]["method"]: [
        [event["core_start_frame"], event["core_end_frame"]] for event in document["events"]],
        **document.get("compare_events", {})}
    for axis, method in zip(axes.ravel(), methods):
        axis.plot(table["frame"], table[f"residual_{method}"], color="black", linewidth=0.8)
        for first, last in own_events.get(method, []):
            axis.axvspan(first - 0.5, last + 0.5, color="#d62728", alpha=0.25, linewidth=0)
        axis.set_ylim(0, residual_axis_top(table[f"residual_{method}"], status))
        axis.set_title(method.upper())
        axis.set_xlabel("frame")
        axis.set_ylabel("residual")
    for axis in axes.ravel()[len(methods):]:
        axis.set_visible(False)
    figure.tight_layout()
    return figure


def read_compare(path: Path) -> np.ndarray:
    """``compare.csv``: frame and residual_METHOD columns of numbers; ValueError (one line,
    naming it) if it is not that."""
    import warnings

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")      # a short row: numpy only warns
            table = np.atleast_1d(np.genfromtxt(path, delimiter=",", names=True))
    except (ValueError, UnicodeDecodeError, Warning) as error:
        raise ValueError(f"'{path}' is not a videvent compare file "
                         f"({str(error).splitlines()[0] if str(error) else 'damaged'})"
                         ) from None
    names = table.dtype.names or ()
    if ("frame" not in names or not any(name.startswith("residual_") for name in names)
            or any(table.dtype[name].kind not in "fiu" for name in names)):
        raise ValueError(f"'{path}' is not a videvent compare file (columns frame and "
                         f"residual_METHOD of numbers)")
    return table


def _image_data(path: Path) -> str:
    kind = "jpeg" if path.suffix.lower() in (".jpg", ".jpeg") else "png"
    return f"data:image/{kind};base64," + base64.b64encode(path.read_bytes()).decode()


def _row(cells) -> str:
    return "<tr>" + "".join(f"<td>{cell}</td>" for cell in cells) + "</tr>"


def render_report(folder: str | os.PathLike) -> str:
    folder = Path(folder)
    document, scores = read_result(folder)
    source, settings, events = document["source"], document["settings"], document["events"]
    escape = html.escape
    duration = float(scores["time_s"][-1] - scores["time_s"][0]) if len(scores["frame"]) else 0
    if (folder / PLOT_NAME).is_file():  # drawn moments ago: no need to draw it twice
        plot = _image_data(folder / PLOT_NAME)
    else:
        from .plot import residual_figure

        plot = _png_data(residual_figure(scores, events, threshold=settings["threshold"],
                                         threshold_low=settings["threshold_low"],
                                         title=_plot_title(document)))
    parts = [f"<h1>videvent report: {escape(source['name'])}</h1>",
             "<table class='facts'>",
             _row(["source", escape(str(source["uri"]))]),
             _row(["frames scanned", f"{document['frames_read']} (from frame "
                                     f"{source['first_frame']})"]),
             _row(["duration", f"{format_timecode(duration)} ({duration:.2f} s)"]),
             _row(["size, frame rate", f"{source['width']}x{source['height']}, "
                                       f"{source['fps']:g} fps"]),
             _row(["events", str(len(events))]),
             _row(["videvent", escape(str(document.get("videvent_version", "")))]),
             "</table>",
             "<h2>Residual per frame</h2>",
             f"<img class='plot' alt='residual and score per frame' src='{plot}'>"]
    notes = []
    for absorbed in document["absorbed"]:
        notes.append(f"A lasting change was absorbed into the background at "
                     f"{absorbed['timecode']} (frame {absorbed['frame']}).")
    for problem in document["frame_problems"]:
        notes.append(f"{problem['status'].capitalize()} frames {problem['start_frame']}–"
                     f"{problem['end_frame']} ({format_timecode(problem['start_time_s'])}).")
    if notes:
        parts.append("<ul class='notes'>" + "".join(f"<li>{escape(n)}</li>" for n in notes)
                     + "</ul>")
    parts.append("<h2>Events</h2>")
    video = (folder / "annotated.mp4").is_file()
    clips = _clips(folder, source, events)
    poster = ""
    # With neither the annotated video nor a clip, the column of links would be empty: a
    # line under the table says how to make them instead.
    linked = video or bool(clips)
    if events:
        parts.append("<table class='events'><tr><th>#</th><th>start</th><th>end</th>"
                     "<th>duration</th><th>frames</th><th>what</th><th>where</th>"
                     "<th>peak score</th><th>peak frame</th>"
                     + ("<th>see it</th>" if linked else "") + "</tr>")
        for event in events:
            thumbnail = folder / "thumbnails" / f"event{event['number']:03d}.jpg"
            picture = (f"<img class='thumb' alt='event {event['number']} peak' "
                       f"src='{_image_data(thumbnail)}'>" if thumbnail.is_file() else "")
            if picture and not poster:  # the video's poster: the first event, not frame 0
                poster = _image_data(thumbnail)
            note = " (lasting change, absorbed)" if event["absorbed"] else ""
            # events.json may have been edited: every value from it is text, never markup.
            cell = lambda key: escape(str(event[key]))  # noqa: E731
            links = []
            if video:
                links.append(f"<a href='#annotated' class='seek' "
                             f"data-time='{float(event['start_time_s']):.3f}'>play in the "
                             f"annotated video</a>")
            if event["number"] in clips:
                # A name that is not valid UTF-8 is linked by its own bytes.
                href = quote(clips[event["number"]], errors="surrogateescape")
                links.append(f"<a href='{escape(href)}'>clip</a>")
            parts.append(_row([cell("number"), cell("start_timecode"), cell("end_timecode"),
                               f"{event['duration_s']:.2f} s", f"{cell('start_frame')}–"
                               f"{cell('end_frame')}", escape(str(event.get("kind") or "–")),
                               _where(event), f"{event['peak_score']:.1f}{note}",
                               f"{cell('peak_frame')}<br>{picture}",
                               *(["<br>".join(links)] if linked else [])]))
        parts.append("</table>")
        if not linked:
            parts.append(f"<p class='hint'>{_how_to_see_them(source)}</p>")
    else:
        parts.append("<p>No events.</p>")
    if (folder / "compare.csv").is_file():
        parts += ["<h2>Methods side by side</h2>",
                  f"<img class='plot' alt='residual per frame of each method' "
                  f"src='{_png_data(compare_figure(folder, document, scores['status']))}'>"]
    if video:
        parts += ["<h2>Annotated video</h2>",
                  "<video id='annotated' controls preload='metadata' src='annotated.mp4'"
                  + (f" poster='{poster}'" if poster else "") + "></video>", SEEK_SCRIPT]
    parts += ["<h2>Settings</h2>", "<table class='facts'>"]
    parts += [_row([escape(key.replace("_", "-")), escape(_setting_text(key, value))])
              for key, value in settings.items() if value is not None or key == "absorb_after"]
    parts.append("</table>")
    return html_page(f"videvent: {source['name']}", "\n".join(parts))


def _where(event: dict) -> str:
    """The report's cell of where an event was: its box (x, y, width x height, in source
    pixels) and the named regions it touched; text, escaped (events.json may be edited)."""
    box, regions = event.get("box"), event.get("regions") or []
    parts = []
    if isinstance(box, list) and len(box) == 4:
        x, y, width, height = box
        parts.append(html.escape(f"{x}, {y}, {width}×{height}"))
    if isinstance(regions, list) and regions:
        parts.append(html.escape(", ".join(map(str, regions))))
    return "<br>".join(parts) or "–"


# The events' links: the annotated video jumps to the event and plays (no network, no library).
SEEK_SCRIPT = """<script>
document.querySelectorAll("a.seek").forEach(function (link) {
  link.addEventListener("click", function () {
    var video = document.getElementById("annotated");
    video.currentTime = parseFloat(link.dataset.time);
    video.play();
  });
});
</script>"""


def _how_to_see_them(source: dict) -> str:
    """What makes a clip of each event, for a folder that has none (HTML)."""
    if source.get("live"):
        return ("No clip of the events: a watch keeps one of each event unless "
                "<code>--no-clips</code> is given.")
    return ("No clip of the events: <code>videvent export</code> on this folder with "
            "<code>--export-clips</code> cuts one of each event from the video (and "
            "<code>--export-video</code> draws the annotated video), as "
            "<code>videvent run</code> does with them.")


def _setting_text(key: str, value) -> str:
    """A setting as a person reads it: no Python None, True or False, nor an empty list."""
    if value is None:
        return "never" if key == "absorb_after" else "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (list, tuple)):
        return "; ".join(map(str, value)) or "none"
    return str(value) or "none"


def _clips(folder: Path, source: dict, events: list[dict]) -> dict[int, str]:
    """Event number -> its clip's file name in the folder: as the export recorded them
    (``clips.json``), else by the default names (``watch`` writes those)."""
    try:
        recorded = {int(n): str(name) for n, name in
                    json.loads((folder / "clips.json").read_text("utf-8")).items()}
    except (OSError, ValueError, AttributeError):
        recorded = {}
    for event in events:
        default = f"{source['name']}.event{event['number']:03d}.mp4"
        if event["number"] not in recorded and (folder / default).is_file():
            recorded[event["number"]] = default
    return {n: name for n, name in recorded.items() if (folder / name).is_file()}


def write_report(folder: str | os.PathLike) -> Path:
    """(Re)write ``report.html`` in the result folder, atomically."""
    folder = Path(folder)
    target = folder / REPORT_NAME
    write_text_atomically(target, render_report(folder))
    return target


PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1100px; color: #222;
        padding: 0 1em; }}
table {{ border-collapse: collapse; margin: 0.5em 0 1.5em; }}
td, th {{ border-bottom: 1px solid #ddd; padding: 0.3em 0.8em; text-align: left;
          vertical-align: top; }}
img.plot {{ max-width: 100%; }}
img.thumb {{ width: 320px; margin-top: 0.3em; }}
video {{ width: 100%; max-width: 960px; background: #000; }}
.notes li, .hint {{ color: #555; }}
</style>
</head>
<body>
{body}
</body>
</html>
"""


def html_page(title: str, body: str) -> str:
    """A complete page in videvent's report style (``title`` is escaped, ``body`` is HTML)."""
    return PAGE.format(title=html.escape(title), body=body)
