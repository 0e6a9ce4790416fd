"""A whole watch, as ``videvent watch`` runs it: one camera or several, with the live
dashboard and the MQTT connection they share.

``watch_all`` wires them together: each camera's extra sinks (its card on the dashboard, its
MQTT topics), one camera watched on the calling thread (the ``show`` window needs it) or
several each on a thread of its own (``videvent.cameras``), the dashboard and the connection
closed at the end, and each camera's count of event messages that never reached the broker
added to its ``events.json`` then (only the closed connection knows it). What the watch says
as it goes goes to a ``WatchReport``; what it ends with is a ``WatchOutcome``.
"""

from __future__ import annotations

import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from .cameras import (Camera, CameraNotOpened, event_store_path, open_monitor,
                      result_folders, wait_for, watch_cameras)
from .live import SessionSummary
from .output.events_json import add_to_events
from .output.folder import amending
from .output.mqtt import DEFAULT_PREFIX, DISCOVERY_PREFIX, MqttAddress
from .settings import SettingError

MQTT_LOST_KEY = "mqtt_undelivered_event_messages"


@dataclass
class DashboardConfig:
    """The live page: served at ``host``:``port`` (0: any free port), asking for ``token``
    (else the first line of ``token_file``; neither: none on a loopback address, else one is
    generated), over HTTPS with ``tls`` (certificate chain, private key; PEM).
    ``region_file``: where regions drawn on a single camera's picture are saved.
    ``health_open``: who may ask ``/healthz`` without the token (``"local"``: a client on
    this machine; ``"anyone"``)."""

    host: str = "127.0.0.1"
    port: int = 0
    token: str | None = None
    token_file: str | None = None
    tls: tuple[str | None, str | None] | None = None
    region_file: str | None = None
    health_open: str = "local"

    def the_token(self) -> str | None:
        """``token``, else ``token_file``'s first line (SetupError when it cannot be read or
        holds none)."""
        if self.token or self.token_file is None:
            return self.token or None
        path = self.token_file
        try:
            with open(path, encoding="utf-8") as handle:
                token = handle.readline().strip()
        except (OSError, UnicodeDecodeError) as error:
            raise SetupError("token_file", f"cannot read '{path}': "
                             f"{getattr(error, 'strerror', None) or error}") from None
        if not token:
            raise SetupError("token_file", f"'{path}' holds no token on its first line")
        return token


@dataclass
class MqttConfig:
    """The broker every camera publishes to over one connection: topics under ``prefix``,
    Home Assistant's discovery under ``discovery_prefix`` (None: none), the broker's
    certificate checked against ``ca_file`` (PEM; else the system's) over TLS."""

    broker: MqttAddress
    prefix: str = DEFAULT_PREFIX
    discovery_prefix: str | None = DISCOVERY_PREFIX
    ca_file: str | None = None


class WatchError(ValueError):
    """A watch that could not start (a camera that cannot be opened, a dashboard that cannot
    be served): bad input, one line."""


class SetupError(SettingError):
    """A file of the dashboard or of the MQTT connection that cannot be loaded, one line;
    ``setting``: which (``"token_file"``, ``"tls"`` or ``"ca_file"``)."""

    def __init__(self, setting: str, message: str):
        super().__init__(message)
        self.setting = setting


class WatchReport:
    """What a watch says as it goes. By default its warnings, the cameras' trouble and the
    dashboard's address on stderr; a caller overrides what it shows otherwise."""

    def warning(self, line: str) -> None:
        """Something the watch got past (an MQTT broker out of reach, a count not recorded)."""
        print(f"videvent: warning: {line}", file=sys.stderr, flush=True)

    def trouble(self, line: str) -> None:
        """A camera's trouble while the watch goes on (down at the start and waited for;
        with several cameras, one that failed)."""
        print(f"videvent: {line}", file=sys.stderr, flush=True)

    def dashboard(self, address: str) -> None:
        """The dashboard's address, once, as it is to be shown (with a generated token)."""
        print(f"dashboard: {address}", file=sys.stderr, flush=True)

    def status(self, summary: SessionSummary) -> None:
        """About once a second, with a single camera: its figures so far."""

    def ended(self, line: str, summary: SessionSummary | None) -> None:
        """A camera's closing line (``summary``: None when it never ran)."""


@dataclass
class WatchOutcome:
    """How a watch ended. ``error``: its failure (one line), or None; ``stuck``: a camera is
    still blocked in opening its source, which cannot be interrupted (the caller's process
    had better end at once, everything being written: the interpreter's exit would tear
    that thread down inside native code); ``folders``: each opened camera's name and result
    folder."""

    error: str | None = None
    stuck: bool = False
    folders: list[tuple[str, Path]] = field(default_factory=list)


def summary_line(summary: SessionSummary, out_dir) -> str:
    """A camera's session in one line, where its results are."""
    return (f"{summary.frames} frames watched, {summary.events} event"
            f"{'' if summary.events == 1 else 's'}, {summary.dropped} dropped, "
            f"{summary.reconnects} reconnection(s); capture-to-score latency "
            f"{summary.latency_ms(0.5):.1f} ms median, {summary.latency_ms(0.99):.1f} ms "
            f"p99. Results in {out_dir}")


def watch_all(cameras: list[Camera], out_dir=None, options: dict | None = None, *,
              show: bool = False, dashboard: DashboardConfig | None = None,
              mqtt: MqttConfig | None = None, report: WatchReport | None = None,
              stopping: threading.Event | None = None,
              stop_to: Callable[[Callable[[], None]], Callable[[], None]] | None = None
              ) -> WatchOutcome:
    """Watch ``cameras`` until each ends (or a stop), results in ``out_dir`` (several
    cameras: ``out_dir``/NAME; None: ``videvent-watch-...`` folders). ``options``:
    ``LiveMonitor``'s (``realtime``, ``max_reconnects``, ``max_frames``, ``clips``, ``plot``,
    ``alerts``); ``show``: the preview window (one camera only).

    ``stopping``: set to end the watch cleanly (checked while a camera is waited for, and by
    several cameras as they run). ``stop_to(action)``: from now on, the caller's stop (its
    signal handlers) calls ``action()``; returns what undoes that. Without it a single
    camera's monitor is stopped when ``stopping`` is set.

    Raises SettingError (usage: a setting that cannot work with a camera, ``show`` with
    several; SetupError for the dashboard's or MQTT's file) and WatchError (bad input), both
    before any camera runs."""
    if not cameras:
        raise ValueError("no camera to watch")
    options, report = dict(options or {}), report or WatchReport()
    stopping = stopping if stopping is not None else threading.Event()
    if show and len(cameras) > 1:
        raise SettingError("--show previews one camera; use --serve for several")
    server = publisher = None
    if dashboard is not None:
        from .dashboard import Dashboard

        if dashboard.tls is not None and None in dashboard.tls:
            raise SettingError("--serve-cert and --serve-key go together")
        options["colour_pictures"] = True
        token = dashboard.the_token()
        try:
            server = Dashboard(dashboard.host, dashboard.port, token=token,
                               region_file=dashboard.region_file if len(cameras) == 1
                               else None, tls=dashboard.tls,
                               health_open=dashboard.health_open)
        except ValueError as error:
            raise SetupError("tls", str(error)) from None
    if mqtt is not None:
        from .output.mqtt import MqttPublisher

        # One connection for the process; it never holds up the start (connects on its own
        # thread) and says "offline" when the watch ends.
        broker = mqtt.broker
        try:
            publisher = MqttPublisher(
                broker.host, broker.port, prefix=mqtt.prefix, username=broker.username,
                password=broker.password, tls=broker.tls, ca_file=mqtt.ca_file,
                report=report.warning)
        except ValueError as error:             # the CA file cannot be loaded
            raise SetupError("ca_file", str(error)) from None
        if server is not None:
            server.add_gauge("videvent_mqtt_queue_length", "Event messages waiting for the "
                             "MQTT broker's acknowledgement.", lambda: publisher.waiting)
            server.add_gauge("videvent_mqtt_connected", "1 while the MQTT broker is "
                             "connected.", lambda: int(publisher.connected))

    def sinks_of(camera: Camera) -> list:
        several = len(cameras) > 1
        sinks = [] if server is None else [server.add_camera(
            camera.name, history=result_folders(camera, out_dir, several),
            store=event_store_path(camera, out_dir, several))]
        if publisher is not None:
            from .output.mqtt import MqttSink

            media_url = None
            if server is not None:
                index = sinks[0].camera.index
                media_url = lambda number, kind: server.media_url(index, number, kind)  # noqa: E731
            sinks.append(MqttSink(publisher, camera.name, discovery_prefix=mqtt.discovery_prefix,
                                  media_url=media_url, alert_filter=camera.alert_filter))
        return sinks

    outcome = WatchOutcome()
    try:
        if len(cameras) == 1:
            outcome.error = _watch_one(cameras[0], out_dir, options, server, sinks_of(cameras[0]),
                                       show, report, stopping, stop_to, outcome.folders)
        else:
            outcome.error, outcome.stuck = _watch_several(
                cameras, out_dir, options, server, sinks_of, report, stopping, stop_to,
                outcome.folders)
    finally:
        if server is not None:
            server.stop()
        if publisher is not None:
            publisher.close()
            lost = publisher.dropped + publisher.undelivered
            if lost:
                report.warning(f"MQTT: {lost} event message{'' if lost == 1 else 's'} never "
                               f"reached the broker ({publisher.dropped} past the queue's "
                               f"length, {publisher.undelivered} still waiting or not "
                               f"acknowledged when the watch ended)")
            _record_mqtt_losses(publisher, outcome.folders, report)
    return outcome


def _record_mqtt_losses(publisher, folders: list[tuple[str, Path]], report: WatchReport) -> None:
    """Each camera's event messages that never reached the broker, in its events.json.

    Known only once the connection, shared by every camera, is closed: after the cameras'
    sessions wrote their folders, so the count is added to their events.json then (rewritten
    whole, the completion marker again the last file written). A folder that cannot take it
    is said, one line, and the watch still ends well."""
    for name, folder in folders:
        path = folder / "events.json"
        try:
            with amending(folder):
                add_to_events(path, {MQTT_LOST_KEY: publisher.never_delivered[name]})
        except OSError as error:
            problem = f"cannot write '{path}': {error.strerror or error}"
        except ValueError as error:             # it names the file already
            problem = str(error)
        else:
            continue
        report.warning(f"MQTT: the count of event messages that never reached the broker is "
                       f"not recorded: {problem}")


def _shown(server, url: str) -> str:
    """The address as shown: with a generated token (the only way to learn it); without
    one the user gave (stderr goes to logs)."""
    if server.token is not None and not server.token_generated:
        return url.split("?")[0] + " (it asks for the token given)"
    return url


def _serve(server) -> str:
    """Start the dashboard, before anything is written; its address (with its token, when
    one applies) is shown once the cameras are open."""
    try:
        return server.start()
    except OSError as error:
        raise WatchError(f"cannot serve the dashboard on {server.host}:{server.port}: "
                         f"{error.strerror or error}") from None


def _watch_one(camera, out_dir, options, server, sinks, show, report, stopping, stop_to,
               folders) -> str | None:
    """One camera, on this thread, in the folder it always had (added to ``folders`` once
    its monitor is made). Returns its failure, or None."""
    url = None if server is None else _serve(server)

    def announce() -> None:
        """The dashboard's address, once: when the camera is open, or when it is not at its
        first attempt (a camera down at the start shows there as down while waited for)."""
        nonlocal url
        if url is not None:
            report.dashboard(_shown(server, url))
            url = None

    def pause(backoff, stop) -> None:
        # A stop while waiting for the camera ends the watch cleanly.
        undo = stop_to(stop.set) if stop_to is not None else None
        try:
            backoff.wait(stop)
        finally:
            if undo is not None:
                undo()

    def trouble(line: str) -> None:
        announce()
        report.trouble(line)

    try:
        monitor = open_monitor(camera, out_dir,
                               {"status": report.status, "show": show,
                                "store": event_store_path(camera, out_dir), **options}, sinks,
                               stopping, trouble, pause)
    except SettingError:
        raise
    except CameraNotOpened as error:
        raise WatchError(f"camera {camera.name} {error}" if error.attempts > 1
                         else str(error).splitlines()[0]) from None
    except ValueError as error:
        raise WatchError(str(error).splitlines()[0] if str(error)
                         else type(error).__name__) from None
    if monitor is None:
        report.ended(f"camera {camera.name}: stopped before it could be opened", None)
        return None
    # A stop ends the watch cleanly (its files finished) from before the dashboard's address
    # is out: whoever reads the address and stops the watch gets that, not an interruption.
    done = threading.Event()
    if stop_to is not None:
        stop_to(monitor.stop)
    else:
        threading.Thread(target=_stop_when, args=(stopping, done, monitor.stop), daemon=True,
                         name=f"videvent-stop-{camera.name}").start()
    announce()
    folders.append((camera.name, monitor.out_dir))
    try:
        summary = monitor.run()
    finally:
        done.set()
    report.ended(summary_line(summary, monitor.out_dir), summary)
    if summary.gave_up:
        return (f"the source was lost and did not come back after "
                f"{options.get('max_reconnects')} reconnection attempts")
    return None


def _how_it_ended(watch) -> str:
    """A camera's watch (``cameras.CameraWatch``) that ended, in words."""
    if watch.summary is not None:
        return summary_line(watch.summary, watch.monitor.out_dir)
    if not watch.error:
        return "stopped before it could be opened"
    return "could not be opened" if watch.monitor is None else "failed"


def _stop_when(stopping: threading.Event, done: threading.Event, stop) -> None:
    """``stop()`` once ``stopping`` is set, unless ``done`` comes first."""
    while not done.wait(0.2):
        if stopping.is_set():
            stop()
            return


def _watch_several(cameras, out_dir, options, server, sinks_of, report, stopping, stop_to,
                   folders) -> tuple[str | None, bool]:
    """Each camera on a thread of its own; this one waits for them (and, with ``stop_to``,
    handles the stop). Returns the cameras' failure (or None) and whether one is still
    blocked in opening its source; the cameras that were opened are added to ``folders``."""
    if stop_to is not None:
        stop_to(stopping.set)
    if server is not None:
        report.dashboard(_shown(server, _serve(server)))
    watches = watch_cameras(cameras, out_dir, options, sinks_of, report.trouble)
    wait_for(watches, stopping)
    folders += [(watch.camera.name, watch.monitor.out_dir) for watch in watches
                if watch.monitor is not None]
    for watch in watches:
        report.ended(f"camera {watch.camera.name}: {_how_it_ended(watch)}", watch.summary)
    failed = [watch for watch in watches if watch.error]
    error = ("; ".join(f"camera {watch.camera.name} {watch.error}" for watch in failed)
             if failed else None)
    return error, any(watch.is_alive() for watch in watches)
