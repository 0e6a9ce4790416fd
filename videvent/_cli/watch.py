"""``videvent watch``: its options parsed and checked before anything starts, then the
library's ``videvent.watching.watch_all`` called and what it says printed."""

from __future__ import annotations

import os
import sys
import time

import click

from ..settings import NEVER, SettingError, parse_size
from .options import (CONFIG_OPTIONS, CONFIG_PATH, OUT_PARENT, BadInput, GroupedCommand,
                      no_plot_option, run_options, settings_from, watch_setting_options)
from .logs import LOG_FORMATS, use_log_format
from .signals import _end_at_once, _signalled, stop_to


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


def _log_format(_context, _parameter, value: str) -> str:
    """``--log-format``, in force at once: the lines of every later error take it too."""
    use_log_format(value)
    return value


def _serve_address(value: str) -> tuple[str, int]:
    """``[HOST:]PORT`` -> (host, port); the host is 127.0.0.1 unless one is given."""
    host, _, port = value.rpartition(":")
    if not port.isdigit() or int(port) > 65535:
        raise ValueError(f"expected [HOST:]PORT (PORT 0: any free port), got {value!r}")
    return host.strip("[]") or "127.0.0.1", int(port)


@click.command("watch", cls=GroupedCommand,
               short_help="Watch cameras, streams or files live, with alerts and a dashboard.")
@click.argument("sources", nargs=-1, metavar="[SOURCE]...")
@click.option("-d", "--output-dir", "--out", "out_dir", type=click.Path(file_okay=False),
              default=None, help="Result folder (default: videvent-watch-NAME-TIME).")
@click.option("--realtime", is_flag=True, help="Play a file at its own pace (for demos).")
@click.option("--json", "json_lines", is_flag=True,
              help="One JSON line per event and camera change on stdout.")
@click.option("--show", is_flag=True, help="A preview window with the heat map (q quits).")
@click.option("--no-clips", is_flag=True, help="Do not write a clip per event.")
@click.option("--max-reconnects", type=click.IntRange(0), default=15, show_default=True,
              help="Give up after this many failed reconnections in a row.")
@click.option("--max-frames", type=click.IntRange(1), default=None, help="Stop after N frames.")
@no_plot_option
@click.option("-q", "--quiet", is_flag=True, help="No status line or summary.")
@click.option("--log-format", type=click.Choice(LOG_FORMATS), default="human",
              show_default=True, is_eager=True, callback=_log_format,
              help="What is said on stderr: lines, or one JSON object a line.")
@click.option("--name", "names", multiple=True, metavar="NAME",
              help="Each SOURCE's name, in order (repeat it).")
@watch_setting_options
@run_options
def watch_command(sources: tuple[str, ...], out_dir: str | None, realtime: bool,
                  json_lines: bool, show: bool, no_clips: bool, max_reconnects: int,
                  max_frames: int | None, no_plot: bool, quiet: bool, names: tuple[str, ...],
                  on_event: str | None, webhook: str | None, serve: str | None,
                  serve_token: str | None, serve_token_file: str | None,
                  serve_cert: str | None, serve_key: str | None, serve_health: str,
                  mqtt: str | None,
                  mqtt_ca: str | None, mqtt_prefix: str, mqtt_discovery: str,
                  alert_on: str | None, alert_regions: str | None, log_format: str,
                  keep: float | None, max_disk: str | None, **options) -> None:
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
    _parsed("--max-disk", parse_size, max_disk)
    mqtt_discovery = (None if mqtt_discovery.strip().lower() in NEVER
                      else _parsed("--mqtt-discovery", check_prefix, mqtt_discovery))
    meta = click.get_current_context().meta
    config = meta.get(CONFIG_PATH)
    try:
        cameras = name_cameras(sources, settings,
                               load_cameras(config, meta[CONFIG_OPTIONS]) if config else {},
                               names, {"alert_on": alert_on, "alert_regions": alert_regions},
                               {"keep": keep, "max_disk": max_disk})
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
        tls=None if serve_cert is None and serve_key is None else (serve_cert, serve_key),
        health_open=serve_health)
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
            stop_to=stop_to)
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
