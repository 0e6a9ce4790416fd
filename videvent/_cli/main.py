"""``videvent`` commands. Parsing and printing only: the work is done by the library.

Exit codes: 0 success (with or without events), 1 bad input (one-line message), 2 bad usage.
"""

from __future__ import annotations

import os
import signal
import sys

import click

from pathlib import Path

from .._version import __version__
from ..choices import CLIP_MODES
from ..output.events_json import read_events
from ..output.folder import public_name
from ..output.names import CLIP_TEMPLATE, OutputNameError, check_outputs
from ..settings import METHODS, SettingError, Settings
from ..timecode import format_timecode
from .batch import batch_command
from .events import events_command
from .options import (OUT_PARENT, BadInput, GroupedCommand, bad_input, no_plot_option,
                      run_options, settings_from)
from .progress import Progress
from .signals import (Stopped, _exit, _finished, _send_again, _stop, _stopped_by, _unraisable,
                      stopped_line)
from .watch import watch_command


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="videvent")
def cli() -> None:
    """Find events in video with closed-form robust PCA."""


cli.command_class = GroupedCommand


cli.add_command(batch_command)
cli.add_command(events_command)
cli.add_command(watch_command)


def export_options(function):
    """Options of the exports, shared by ``run`` and ``export``."""
    options = [
        click.option("--export-clips", "clips", is_flag=True,
                     help="Write one clip per event."),
        click.option("--clip-template", default=CLIP_TEMPLATE, show_default=True,
                     help="Clip file names ({n}: the event's number)."),
        click.option("--clip-mode", type=click.Choice(CLIP_MODES), default=CLIP_MODES[0],
                     show_default=True,
                     help="Encode again (with boxes) or copy the file's own."),
    ]
    for option in reversed(options):
        function = option(function)
    return function


def _methods(_ctx, _param, value):
    if not value:
        return ()
    methods = tuple(m.strip().lower() for m in value.split(",") if m.strip())
    unknown = [m for m in methods if m not in METHODS]
    if unknown:
        raise click.BadParameter(f"unknown method {unknown[0]!r}: choose from "
                                 f"{', '.join(METHODS)}")
    return methods


@cli.command(short_help="Find the events in a video file, a folder or a pattern of images.")
@click.argument("source")
@click.option("-d", "--output-dir", "--out", "out_dir", type=click.Path(file_okay=False),
              default=None, help="Result folder (default: SOURCE.videvent beside it).")
@click.option("--export-video", is_flag=False, flag_value="", default=None, metavar="[PATH]",
              help="Also write annotated.mp4 (or PATH).")
@export_options
@click.option("--compare", callback=_methods, default="", metavar="METHODS",
              help="Also score with these methods (pca,ancp,cop) for the report.")
@no_plot_option
@click.option("-q", "--quiet", is_flag=True, help="Print nothing but errors.")
@run_options
def run(source: str, out_dir: str | None, export_video: str | None, clips: bool,
        clip_template: str, clip_mode: str, compare: tuple[str, ...], no_plot: bool, quiet: bool,
        **options) -> None:
    """Find the events in SOURCE (a video, a folder of images, frames/b%05d.bmp): scores.csv,
    events.json, report.html and thumbnails in a result folder.
    """
    from ..pipeline import default_out_dir, detect   # the engine: not for --help or a typo

    settings = settings_from(options)
    warn_if_copied_clips_have_no_boxes(clips, clip_mode, settings.bounding_box)
    parent = click.get_current_context().meta.get(OUT_PARENT)
    if out_dir is None and parent is not None:    # the user's config file's output-dir
        out_dir = os.path.join(parent, default_out_dir(source).name)
    check_output_names(out_dir, export_video, clips, clip_template, source)
    progress = Progress(quiet)

    def started(src) -> None:
        to_scan = frames_to_scan(settings, src)
        if not quiet:
            click.echo(f"Scanning {src.name}: {src.width}x{src.height}, {src.fps:g} fps"
                       + (" (assumed: it gives no rate; --fps sets it)" if src.fps_assumed
                          else "")
                       + (f", {_frames(to_scan)}" if to_scan else "")
                       + (f" of {src.frame_count}" if to_scan and to_scan != src.frame_count
                          else ""), err=True)
        progress.start("frames", to_scan)

    try:
        result = detect(source, settings, out_dir=out_dir or default_out_dir(source),
                        plot=not no_plot, compare=compare,
                        export_video=False if export_video is None else export_video or True,
                        clips=clips, clip_template=clip_template, clip_mode=clip_mode,
                        progress=progress.update, on_start=started)
    except SettingError as error:
        raise click.UsageError(str(error)) from None
    except ValueError as error:
        raise bad_input(error) from None
    finally:
        progress.finish()
    warn_if_short(result, source)
    if not quiet:
        print_summary(result)
        for path in result.exported:
            click.echo(f"Wrote {os.fspath(path)}")


def warn_if_copied_clips_have_no_boxes(clips: bool, clip_mode: str, boxes: bool) -> None:
    """-bb with clips copied (``--clip-mode copy``): the clips are the file's own packets,
    which nothing is drawn on. A warning, not an error: -bb still draws on the thumbnails,
    the annotated video and the dashboard."""
    if clips and clip_mode == "copy" and boxes:
        click.echo("videvent: warning: -bb/--bounding-box draws no boxes on clips copied with "
                   "--clip-mode copy (the file's own packets); only on the thumbnails and the "
                   "annotated video (--clip-mode encode draws them on the clips)", err=True)


def frames_to_scan(settings: Settings, source) -> int | None:
    """Frames the range given (``-st``/``-et``/``-dt``) covers in ``source``, by its frame
    count; None when the count is unknown (or the range is wrong, which the run reports)."""
    try:
        from ..passes import frame_range

        start, end = frame_range(settings, source.fps)
    except ValueError:
        return None
    if not source.frame_count:
        return None if end is None else end - start
    return max(0, min(end or source.frame_count, source.frame_count) - start)


def check_output_names(out_dir: str | None, export_video: str | None, clips: bool,
                       clip_template: str, source: str) -> None:
    """Every name the run will write, checked before any work: a usage error (exit 2)."""
    try:
        check_outputs(source, out_dir, export_video or False, clips, clip_template)
    except OutputNameError as error:
        hint = {"out_dir": "'-d' / '--output-dir'", "clip_template": "'--clip-template'",
                "export_video": "'--export-video'"}[error.option]
        raise click.BadParameter(str(error), param_hint=hint) from None


@cli.command("export", short_help="Write the annotated video and event clips of a result.")
@click.argument("result_dir", type=click.Path(file_okay=False))
@click.option("--video/--no-video", default=True, show_default=True,
              help="Write the annotated video.")
@click.option("-o", "--output", "video_path", type=click.Path(dir_okay=False), default=None,
              help="Where the annotated video goes (default: annotated.mp4 in RESULT_DIR).")
@export_options
@click.option("-q", "--quiet", is_flag=True, help="Print nothing but errors.")
def export_command(result_dir: str, video: bool, video_path: str | None, clips: bool,
                   clip_template: str, clip_mode: str, quiet: bool) -> None:
    """Write the annotated video (and event clips) of an earlier run's RESULT_DIR.

    Decodes the source again; the result folder says where it is.
    """
    from ..export import export
    from ..output.report import write_report

    progress = Progress(quiet)
    warn_if_copied_clips_have_no_boxes(clips, clip_mode, _recorded_boxes(result_dir))
    try:
        progress.start("export", _frames_read(result_dir))
        written = export(result_dir, video=(video_path or True) if video else False,
                         clips=clips, clip_template=clip_template, clip_mode=clip_mode,
                         progress=progress.update)
        progress.finish()
        write_report(result_dir)
    except ValueError as error:
        raise bad_input(error) from None
    finally:
        progress.finish()
    if not quiet:
        for path in written:
            click.echo(f"Wrote {os.fspath(path)}")


def _recorded_boxes(result_dir: str) -> bool:
    """Whether RESULT_DIR's run drew boxes (-bb), which its export draws too (False if it
    cannot tell: the export itself then says what is wrong with the folder)."""
    try:
        return read_events(Path(result_dir) / "events.json")["settings"]["bounding_box"] is True
    except (OSError, ValueError, KeyError, TypeError):
        return False


def _frames_read(result_dir: str) -> int | None:
    """How many frames an export of RESULT_DIR will go through (None if it cannot tell: the
    export itself then says what is wrong with the folder)."""
    try:
        return int(read_events(Path(result_dir) / "events.json")["frames_read"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


@cli.command("report", short_help="Redraw the plot and report of a result (no decoding).")
@click.argument("result_dir", type=click.Path(file_okay=False))
def report_command(result_dir: str) -> None:
    """Re-render residuals.png and report.html of RESULT_DIR from its files (no decoding)."""
    from ..output.report import read_result, write_plot, write_report

    folder = Path(result_dir)
    if not (folder / "events.json").is_file() or not (folder / "scores.csv").is_file():
        raise BadInput(f"'{folder}' is not a videvent result folder (no events.json or "
                       "scores.csv)")
    try:
        read_result(folder)    # every file checked before anything is rewritten
        write_plot(folder)
        click.echo(f"Wrote {os.fspath(write_report(folder))}")
    except ValueError as error:
        raise BadInput(str(error).splitlines()[0]) from None
    except OSError as error:    # a full disk, a read-only folder: each written file is whole
        raise BadInput(_os_error_line(error, folder)) from None


def _os_error_line(error: OSError, folder: Path) -> str:
    """One line for an OSError met in redrawing the result ``folder``, naming the file (each
    file is written whole, so one that could not be written is as it was)."""
    from ..output.names import PLOT_NAME, REPORT_NAME

    reason = error.strerror or str(error) or type(error).__name__
    if not error.filename:
        return f"cannot write into '{folder}': {reason}"
    path = public_name(os.fsdecode(error.filename))
    written = path in (os.fspath(folder / PLOT_NAME), os.fspath(folder / REPORT_NAME))
    return f"cannot {'write' if written else 'read'} '{path}': {reason}"


def warn_if_short(result, spec: str) -> None:
    """A file that ends before the frame its container announced: said on stderr, even with
    -q (the run is complete, but of less of the video than the user thinks), in the words of
    a frame lost in the middle ("could not be decoded"), without guessing why."""
    from ..sources.base import public_uri

    expected = result.frames_expected
    if expected and result.frames_read < expected:
        missing = expected - result.frames_read
        click.echo(f"videvent: warning: '{public_uri(spec)}' ends early: {result.frames_read} of "
                   f"the {expected} frames its container announces could be decoded ({missing} "
                   f"could not); the results are of those {result.frames_read}", err=True)


def _frames(count: int) -> str:
    return f"{count} frame{'' if count == 1 else 's'}"


def print_summary(result) -> None:
    events = result.events
    read, scored = result.frames_read, result.frames_scored
    if scored == 0 and not events:
        # "0 events" would claim the video was looked at.
        click.echo(f"{_frames(read)} read, none could be scored: the detector was still "
                   f"learning the background (warm-up) or no frame had a usable picture; a "
                   f"longer video, a shorter --background-span or a larger -w/--window gives it "
                   f"frames to score sooner.")
    else:
        click.echo(f"{_frames(read)} scanned"
                   + (f" ({scored} scored)" if scored < read else "")
                   + f", {len(events)} event{'' if len(events) == 1 else 's'} found.")
    # With a reference seeded from the whole file, the warm-up's frames are judged undamped.
    judged = ("also scored against frames from the whole file"
              if result.source.get("start_reference_frames") else
              "scores there are damped, so only a clear event is seen")
    for run_ in result.warmup if scored or events else ():
        click.echo(f"Warm-up (learning the background): frames "
                   f"{run_.start_frame}-{run_.end_frame} "
                   f"({format_timecode(run_.start_time_s)}-"
                   f"{format_timecode(run_.end_time_s)}); {judged}.")
    if events:
        click.echo(f"{'#':>4}  {'start':>12}  {'end':>12}  {'duration':>9}  {'frames':>13}  "
                   f"{'peak':>7}")
        for event in events:
            note = "  (lasting change, absorbed)" if event.absorbed else ""
            click.echo(f"{event.number:>4}  {format_timecode(event.start_time_s):>12}  "
                       f"{format_timecode(event.end_time_s):>12}  "
                       f"{event.end_time_s - event.start_time_s:>8.2f}s  "
                       f"{event.start_frame:>6}-{event.end_frame:<6}  "
                       f"{event.peak_score:>7.1f}{note}")
    problems = {}
    for run_ in result.frame_problems:
        problems[run_.status] = problems.get(run_.status, 0) + (
            run_.end_frame - run_.start_frame + 1)
    if problems:
        click.echo("Frames without a usable picture: "
                   + ", ".join(f"{count} {status}" + (" (could not be decoded)"
                                                      if status == "corrupt" else "")
                               for status, count in sorted(problems.items())))
    click.echo(f"Results in {os.fspath(result.out_dir)}")


def _silence_native_logs() -> None:
    """Keep OpenCV's and its FFmpeg's own log lines (``moov atom not found``, ``[tcp @ 0x..]
    Connection refused``, camera probes) off stderr: they would break the one-line promise,
    and every failure they describe becomes videvent's own message. Set in the environment
    too, so that batch's worker processes inherit it; before any capture is opened, which is
    when OpenCV reads its FFmpeg level. PyAV logs nothing unless asked (``av.logging``).
    OpenCV reads its own level when it loads, so it is not loaded here for that (--help and a
    mistyped option need none of it)."""
    os.environ.setdefault("OPENCV_LOG_LEVEL", "SILENT")
    os.environ.setdefault("OPENCV_FFMPEG_LOGLEVEL", "-8")   # AV_LOG_QUIET
    cv2 = sys.modules.get("cv2")
    if cv2 is not None:   # loaded before (a caller's own import): tell it
        cv2.utils.logging.setLogLevel(cv2.utils.logging.LOG_LEVEL_SILENT)


def _run_command_line() -> None:
    try:
        cli.main(standalone_mode=False)
    except Exception as error:
        if _stopped_by:
            # The stop's exception can come back as another one when it was raised inside
            # native code (CPython's import turns it into a TypeError): still the stop.
            raise Stopped(_stopped_by[0]) from error
        raise
    finally:
        _finished.set()


def main() -> None:
    """Entry point with the last line of defence: no traceback ever reaches the user.

    Every error is one line on stderr. SIGINT and SIGTERM stop ``run``, ``export`` and
    ``batch`` with exit code 128 + the signal's number (130, 143), after removing what the
    interrupted work had written; ``watch`` handles them itself (it finishes its files).
    """
    for signal_number in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signal_number, _stop)
    signal.signal(signal.SIGALRM, _send_again)
    sys.unraisablehook = _unraisable
    if not os.environ.get("VIDEVENT_DEBUG"):
        _silence_native_logs()
    try:
        _run_command_line()
    except click.UsageError as error:
        command = error.ctx.command_path if error.ctx is not None else "videvent"
        click.echo(f"videvent: error: {error.format_message()} (see '{command} --help')",
                   err=True)
        sys.exit(error.exit_code)
    except click.ClickException as error:
        error.show()
        sys.exit(error.exit_code)
    except click.Abort:
        click.echo("videvent: stopped", err=True)
        sys.exit(1)
    except Stopped as stop:
        click.echo(stopped_line(stop.signal_number), err=True)
        _exit(128 + stop.signal_number)
    except OSError as error:  # disk full, read-only, a folder gone: ordinary, and named
        where = f"'{public_name(os.fsdecode(error.filename))}': " if error.filename else ""
        click.echo(f"videvent: error: {where}{error.strerror or error}", err=True)
        sys.exit(1)
    except Exception as error:  # noqa: BLE001 - an unexpected failure is still one line
        if os.environ.get("VIDEVENT_DEBUG"):
            raise
        click.echo(f"videvent: internal error: {type(error).__name__}: {error}", err=True)
        sys.exit(1)

