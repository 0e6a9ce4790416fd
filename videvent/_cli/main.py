"""``videvent`` commands. Parsing and printing only: the work is done by the library.

Exit codes: 0 success (with or without events), 1 bad input (one-line message), 2 bad usage.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time

import click

from pathlib import Path

from .._version import __version__
from ..choices import CLIP_MODES
from ..output import read_events
from ..output.folder import public_name
from ..output.names import CLIP_TEMPLATE, OutputNameError, check_outputs
from ..settings import METHODS, NEVER, SettingError, Settings
from ..timecode import format_timecode
from .batch import batch_command
from .stopped import stopped_line
from .options import (CONFIG_OPTIONS, CONFIG_PATH, OUT_PARENT, BadInput, GroupedCommand,
                      bad_input, no_plot_option, run_options, settings_from, watch_setting_options)


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="videvent")
def cli() -> None:
    """Find events in video with closed-form robust PCA."""


cli.command_class = GroupedCommand


cli.add_command(batch_command)


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


class Progress:
    """Progress on stderr: a status line with the percentage, frames per second and time left
    on a terminal, redrawn every 0.2 s; when stderr is a file or a pipe (a log), one line
    every 5 s. ``VIDEVENT_PROGRESS_SECONDS`` sets the interval. Nothing when quiet.

    Nothing is printed before the first frame is done, so an error found before any work
    starts is the only thing printed.
    """

    TERMINAL_EVERY_S, LOG_EVERY_S = 0.2, 5.0

    def __init__(self, quiet: bool):
        self.enabled = not quiet
        self.terminal = sys.stderr.isatty()
        self.every_s = float(os.environ.get("VIDEVENT_PROGRESS_SECONDS") or (
            self.TERMINAL_EVERY_S if self.terminal else self.LOG_EVERY_S))
        self._label, self._total, self._done = "", None, 0
        self._started = self._shown = None
        self._lines = 0

    def start(self, label: str, total: int | None) -> None:
        self.finish()
        self._label, self._total, self._done = label, total or None, 0
        self._started = self._shown = None
        self._lines = 0

    def update(self, n: int) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if self._started is None:
            self._started = self._shown = now
        self._done += n
        if now - self._shown >= self.every_s:
            self._shown = now
            self._show(now)

    def _line(self, now: float) -> str:
        rate = self._done / max(now - self._started, 1e-9)
        if self._total:
            text = (f"{self._label}: {self._done}/{self._total} frames "
                    f"({100 * self._done / self._total:.0f}%), {rate:.0f} frames/s")
            left = max(self._total - self._done, 0) / rate if rate else 0
            return text + f", {left:.0f} s left"
        return f"{self._label}: {self._done} frames, {rate:.0f} frames/s"

    def _show(self, now: float) -> None:
        self._lines += 1
        if self.terminal:
            click.echo(f"\r{self._line(now)}\x1b[K", err=True, nl=False)
        else:
            click.echo(f"videvent: {self._line(now)}", err=True)

    def finish(self) -> None:
        # The last count, if progress was shown at all (a short run shows none).
        if self.enabled and self._lines:
            self._show(time.monotonic())
            if self.terminal:
                click.echo("", err=True)
        self._started, self._lines = None, 0


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


def check_display() -> None:
    """``--show`` needs a window: without a display, say so before anything starts (OpenCV
    would abort the process with a Qt plugin error once the session is under way)."""
    if sys.platform.startswith("linux") and not (os.environ.get("DISPLAY")
                                                 or os.environ.get("WAYLAND_DISPLAY")):
        raise click.UsageError("--show needs a display (DISPLAY is not set); run without "
                               "--show, or follow the session in report.html and the alerts")


def _parsed(option: str, parse, value: str | None):
    """A watch setting (the option, or its config file key) parsed before anything starts:
    None when unset, a one-line usage error that names it when ``parse`` refuses it."""
    if value is None:
        return None
    try:
        return parse(value)
    except ValueError as error:
        raise click.UsageError(f"{option}: {error}") from None


def _serve_address(value: str) -> tuple[str, int]:
    """``[HOST:]PORT`` -> (host, port); the host is 127.0.0.1 unless one is given."""
    host, _, port = value.rpartition(":")
    if not port.isdigit() or int(port) > 65535:
        raise ValueError(f"expected [HOST:]PORT (PORT 0: any free port), got {value!r}")
    return host.strip("[]") or "127.0.0.1", int(port)


@cli.command(short_help="Watch cameras, streams or files live, with alerts and a dashboard.")
@click.argument("sources", nargs=-1, metavar="[SOURCE]...")
@click.option("-d", "--output-dir", "--out", "out_dir", type=click.Path(file_okay=False),
              default=None, help="Result folder (default: videvent-watch-NAME-TIME).")
@click.option("--realtime", is_flag=True, help="Play a file at its own pace (for demos).")
@click.option("--json", "json_lines", is_flag=True,
              help="One JSON line per event and camera change on stdout.")
@click.option("--show", is_flag=True, help="A preview window with the heat map (q quits).")
@click.option("--no-clips", is_flag=True, help="Do not write a clip per event.")
@click.option("--max-reconnects", type=click.IntRange(0), default=10, show_default=True,
              help="Give up after this many failed reconnections.")
@click.option("--max-frames", type=click.IntRange(1), default=None, help="Stop after N frames.")
@no_plot_option
@click.option("-q", "--quiet", is_flag=True, help="No status line or summary.")
@click.option("--name", "names", multiple=True, metavar="NAME",
              help="Each SOURCE's name, in order (repeat it).")
@watch_setting_options
@run_options
def watch(sources: tuple[str, ...], out_dir: str | None, realtime: bool, json_lines: bool,
          show: bool, no_clips: bool, max_reconnects: int, max_frames: int | None,
          no_plot: bool, quiet: bool,
          names: tuple[str, ...],
          on_event: str | None, webhook: str | None, serve: str | None,
          serve_token: str | None, serve_token_file: str | None, serve_cert: str | None,
          serve_key: str | None, mqtt: str | None, mqtt_ca: str | None, mqtt_prefix: str,
          mqtt_discovery: str, **options) -> None:
    """Watch each SOURCE live: a camera (0), a stream (rtsp://, http://, udp://) or a file;
    or the cameras of the config file's [cameras.NAME] tables (-c), each with its settings.

    Writes what `run` writes, as it goes, plus alerts.jsonl and a clip per event. Ctrl-C (or
    SIGTERM) stops cleanly: the event under way is closed and every file is complete.
    -dt/--duration (e.g. 10m, 1h30m or 00:10:00) and --max-frames stop it on their own.
    --serve 8080 shows every camera, its score and its events on a live web page.
    """
    from ..alerts import check_webhook
    from ..cameras import name_cameras, without_file_settings
    from ..output.mqtt import check_prefix, parse_mqtt_address
    from ..settings import load_cameras
    from ..watching import DashboardConfig, MqttConfig, SetupError, WatchError, watch_all

    # With one camera, regions drawn on the dashboard are saved to its (first) -R file, which
    # the settings read and no longer name.
    region_files = tuple(options.get("load_region") or ())
    settings = settings_from(options)
    if show:
        check_display()
    webhook = _parsed("--webhook", check_webhook, webhook)
    served_at = _parsed("--serve", _serve_address, serve)
    broker = _parsed("--mqtt", parse_mqtt_address, mqtt)
    if mqtt_ca is not None and (broker is None or not broker.tls):
        # Never the --mqtt value itself in the message: it may hold a password.
        raise click.UsageError("--mqtt-ca is for a broker reached over TLS: give --mqtt "
                               "mqtts://HOST[:PORT] with it, or leave --mqtt-ca out")
    mqtt_prefix = _parsed("--mqtt-prefix", check_prefix, mqtt_prefix)
    mqtt_discovery = (None if mqtt_discovery.strip().lower() in NEVER
                      else _parsed("--mqtt-discovery", check_prefix, mqtt_discovery))
    meta = click.get_current_context().meta
    config = meta.get(CONFIG_PATH)
    try:
        cameras = name_cameras(sources, settings,
                               load_cameras(config, meta[CONFIG_OPTIONS]) if config else {},
                               names)
    except ValueError as error:
        raise click.UsageError(str(error)) from None
    if not cameras:
        raise click.UsageError("give a SOURCE, or a config file (-c) with [cameras.NAME] "
                               "tables")
    parent = meta.get(OUT_PARENT)
    if out_dir is None and parent is not None:    # the user's config file's output-dir
        from ..live import safe_name

        dated = time.strftime("%Y%m%d-%H%M%S")
        out_dir = os.path.join(parent, f"videvent-watch-{dated}" if len(cameras) > 1
                               else f"videvent-watch-{safe_name(cameras[0].name)}-{dated}")
    for index, camera in enumerate(cameras):
        cameras[index], set_aside = without_file_settings(camera)
        if set_aside:
            # A warning, not an error: a config file shared by run and watch may set them.
            one = len(set_aside) == 1
            click.echo(f"videvent: warning: camera {camera.name}: {' and '.join(set_aside)} "
                       f"{'is' if one else 'are'} for files; a stream or a camera is watched "
                       f"from now, without {'it' if one else 'them'}", err=True)
    dashboard = None if served_at is None else DashboardConfig(
        *served_at, token=serve_token or (None if serve_token_file is not None
                                          else os.environ.get(TOKEN_VARIABLE) or None),
        token_file=serve_token_file, region_file=region_files[0] if region_files else None,
        tls=None if serve_cert is None and serve_key is None else (serve_cert, serve_key))
    try:
        outcome = watch_all(
            cameras, out_dir,
            {"realtime": realtime, "max_reconnects": max_reconnects, "max_frames": max_frames,
             "clips": not no_clips, "plot": not no_plot,
             "alerts": {"json_lines": json_lines, "command": on_event, "webhook": webhook}},
            show=show, dashboard=dashboard,
            mqtt=None if broker is None else MqttConfig(broker, mqtt_prefix, mqtt_discovery,
                                                        mqtt_ca),
            report=_WatchSaid(quiet, several=len(cameras) > 1), stopping=_signalled,
            stop_to=_stop_to)
    except SetupError as error:
        hint = {"token_file": "'--serve-token-file'", "tls": "'--serve-cert'",
                "ca_file": "'--mqtt-ca'"}[error.setting]
        raise click.BadParameter(str(error), param_hint=hint) from None
    except SettingError as error:
        raise click.UsageError(str(error)) from None
    except WatchError as error:
        raise BadInput(str(error)) from None
    problem = None if outcome.error is None else BadInput(outcome.error)
    if outcome.stuck:
        # Everything is written, sent and closed by now: the process ends at once, past the
        # interpreter's exit, which would abort tearing the blocked thread down.
        if problem is not None:
            problem.show()
        _end_at_once(problem.exit_code if problem is not None else 0)
    if problem is not None:
        raise problem


TOKEN_VARIABLE = "VIDEVENT_SERVE_TOKEN"


class _WatchSaid:
    """What a watch says, on stderr: with -q only its warnings and errors (and, with several
    cameras, a camera's trouble: the others go on, so it is not the watch's closing error).
    A single camera's status line is redrawn in place on a terminal."""

    def __init__(self, quiet: bool, several: bool):
        self.quiet, self.several = quiet, several
        self.interactive = not quiet and not several and sys.stderr.isatty()

    def warning(self, line: str) -> None:
        click.echo(f"videvent: warning: {line}", err=True)

    def trouble(self, line: str) -> None:
        if self.several or not self.quiet:
            click.echo(f"videvent: {line}", err=True)

    def dashboard(self, address: str) -> None:
        click.echo(f"dashboard: {address}", err=True)

    def status(self, summary) -> None:
        if self.interactive:
            click.echo(f"\r{summary.frames} frames | latency {summary.latency_ms(0.5):.0f} ms "
                       f"(p99 {summary.latency_ms(0.99):.0f}) | dropped {summary.dropped} | "
                       f"events {summary.events}   ", err=True, nl=False)

    def ended(self, line: str, summary) -> None:
        if self.quiet:
            return
        if self.interactive and summary is not None:
            click.echo("", err=True)     # below the status line
        click.echo(line, err=True)


def _stop_to(action):
    """Route SIGINT and SIGTERM to ``action`` (off the handler: ``_on_signal``); returns what
    puts the handlers before back."""
    handlers = {number: signal.signal(number, _on_signal(action))
                for number in (signal.SIGINT, signal.SIGTERM)}
    return lambda: [signal.signal(number, handler) for number, handler in handlers.items()]


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


class Stopped(BaseException):
    """SIGINT or SIGTERM: unwinds like an error (every staging folder and temporary file is
    removed on the way out) but is no Exception, so no ``except Exception`` swallows it."""

    def __init__(self, signal_number: int):
        super().__init__(signal_number)
        self.signal_number = signal_number


# A second signal this soon after the first is the clean-up's to ignore; later, the first was
# lost (raised where native code swallows exceptions) and it stops the process again.
CLEAN_UP_S = 5.0
_first_signal_at: list[float] = []
# Set by the first signal as well as raised, so that a loop that checks it (the wait for a
# camera down at the start) ends even where the exception was swallowed; ``_stopped_by``
# holds its number, for the stop sent again (``_unraisable``) and the error it turned into.
_signalled = threading.Event()
_stopped_by: list[int] = []
# Set when main's work is over: a stop sent again after that has nothing left to stop.
_finished = threading.Event()
SEND_AGAIN_AFTER_S = 0.02


def _stop(signal_number: int, _frame) -> None:
    now = time.monotonic()
    if _first_signal_at and now - _first_signal_at[0] < CLEAN_UP_S:
        return                     # the clean-up of the first is under way: not cut short
    _first_signal_at[:] = [now]
    _stopped_by[:] = [signal_number]
    _signalled.set()
    raise Stopped(signal_number)


def _unraisable(unraisable) -> None:
    """A stop raised where Python cannot deliver it (a weakref callback or a destructor, such
    as the import system's own, which a signal can land in while a command loads) is not
    reported with a traceback: an alarm sends it again, a moment later, to land where it
    unwinds. (An alarm, not a thread: starting one here could wait on a lock held below.)"""
    if not isinstance(unraisable.exc_value, Stopped):
        sys.__unraisablehook__(unraisable)
        return
    _first_signal_at.clear()       # the first was lost: this one is not its clean-up
    signal.setitimer(signal.ITIMER_REAL, SEND_AGAIN_AFTER_S)


def _send_again(_alarm: int, frame) -> None:
    if _stopped_by and not _finished.is_set():
        _stop(_stopped_by[0], frame)


class _SignalRelay:
    """Runs what a signal handler asks for on a thread of its own. A handler runs on the main
    thread between two of its bytecodes, which can be inside an event's own lock then (in its
    ``wait`` or ``set``): setting that event in the handler would wait for ever. The handler
    only appends to a list and writes a byte to a pipe, which take no lock; this thread, woken
    by the byte, does the rest. (``_stop`` sets ``_signalled`` itself: the main thread waits
    on that event only under ``pause``'s handlers.)"""

    def __init__(self):
        self._asked: list = []
        self._read, self._write = os.pipe()
        threading.Thread(target=self._run, name="videvent-signal-relay", daemon=True).start()

    def handler(self, action):
        """A signal handler that has ``action()`` called on the relay's thread."""
        def ask(_signal_number: int, _frame) -> None:
            self._asked.append(action)
            os.write(self._write, b"\0")
        return ask

    def _run(self) -> None:
        while os.read(self._read, 1):
            while self._asked:
                self._asked.pop(0)()


_relay: list[_SignalRelay] = []


def _on_signal(action):
    """A signal handler that calls ``action`` (an event's ``set``, a monitor's ``stop``) off
    the handler (``_SignalRelay``). Called where the handler is installed, never in one: the
    relay's thread is started on first use."""
    if not _relay:
        _relay.append(_SignalRelay())
    return _relay[0].handler(action)


def _exit(code: int) -> None:
    """Exit with ``code``; at once if the stop came during a source's open (FFmpeg's open
    cannot be interrupted, and the interpreter's exit under or just after its thread can
    abort, hang or crash the process). Everything is written and closed by the time this is
    called."""
    sources = sys.modules.get("videvent.sources")   # not imported: no source was opened
    if sources is not None and sources.open_abandoned():
        _end_at_once(code)
    sys.exit(code)


def _end_at_once(code: int) -> None:
    """End the process now, past the interpreter's exit, once stdout and stderr are out."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


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

