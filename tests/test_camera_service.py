"""Cameras as a service (issue 29, item 1): a camera down at the start, or lost later, is said
``camera_down`` and, when it is back, ``camera_up`` on every alert channel (the ``--json``
lines, a webhook, ``alerts.jsonl``, MQTT's retained ``<prefix>/<camera>/available`` on a real
mosquitto) and shown on the dashboard, as a user runs ``videvent watch`` on a real ffmpeg
stream served on 127.0.0.1."""

from __future__ import annotations

import http.server
import json
import signal
import socket
import threading
import time
import urllib.request

import pytest

from conftest import run_cli
from test_mqtt import MOSQUITTO, Broker, Subscriber
from test_watch import Gate, Watch, server  # noqa: F401
from test_watch_dashboard import URL_LINE, ServedWatch

PATIENCE_S = 60.0              # deadline of every wait (a liveness bound, never a pause)


class Webhook:
    """A webhook receiver on a port of its own: every alert POSTed, in order."""

    def __init__(self):
        self.received: list[dict] = []
        self.arrived = threading.Condition()
        hook = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 - the http.server API
                alert = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with hook.arrived:
                    hook.received.append(alert)
                    hook.arrived.notify_all()
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/alerts"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def kinds(self, count: int) -> list[str]:
        """The types of the first ``count`` camera_down/camera_up alerts, once here."""
        with self.arrived:
            assert self.arrived.wait_for(lambda: len(self._changes()) >= count, PATIENCE_S), \
                self.received
            return self._changes()[:count]

    def _changes(self) -> list[str]:
        return [a["type"] for a in self.received if a["type"] in ("camera_down", "camera_up")]

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def camera_status(dashboard: str) -> dict:
    with urllib.request.urlopen(dashboard + "api/cameras", timeout=10) as response:
        [camera] = json.loads(response.read())
    return camera


@pytest.mark.skipif(MOSQUITTO is None, reason="mosquitto is not installed")
def test_a_camera_down_at_start_and_lost_later_is_said_down_and_up_on_every_channel(
        tmp_path, server):
    stream = server()
    gate, webhook = Gate(stream), Webhook()
    broker = Broker(tmp_path)
    broker.start()
    subscriber = Subscriber(broker.port)
    subscriber.wait_until_subscribed()
    out = tmp_path / "live"
    watch = Watch(gate.url, out, "--name", "door", "--max-reconnects", "100",
                  "--webhook", webhook.url, "--mqtt", f"127.0.0.1:{broker.port}",
                  "--serve", "127.0.0.1:0")
    try:
        # Down at the start: said at once on every channel, while it is tried again.
        down = watch.wait_for("camera_down", PATIENCE_S, camera="door")
        assert down["attempts"] == 1 and gate.url in down["error"]
        assert webhook.kinds(1) == ["camera_down"]
        subscriber.wait_for("videvent/door/available", lambda p: p == b"offline")
        # Home Assistant is told about the camera already (and that it is unavailable).
        subscriber.wait_for("videvent/door/status", lambda p: p == b"lost")
        dashboard = None
        while dashboard is None:             # printed at once, before the camera opens
            found = URL_LINE.match(watch.process.stderr.readline())
            dashboard = found and found.group(1)
        assert camera_status(dashboard)["status"] == "lost"
        assert not out.exists()              # nothing written while the camera never opened

        gate.opened.set()                    # the camera has booted
        up = watch.wait_for("camera_up", PATIENCE_S, camera="door")
        assert up["down_s"] > 0
        watch.wait_for("session_start", PATIENCE_S)
        subscriber.wait_for("videvent/door/available", lambda p: p == b"online")
        assert camera_status(dashboard)["status"] == "connected"

        stream.stop()                        # lost while it is watched
        # (The first camera_down said its attempts; one in the session says its frame.)
        lost = watch.wait_for("camera_down", PATIENCE_S, camera="door", attempts=None)
        assert lost["frame"] > 0
        watch.wait_for("source_lost", PATIENCE_S)
        server(stream.port)                  # and back where it was
        watch.wait_for("source_back", PATIENCE_S)
        assert webhook.kinds(4) == ["camera_down", "camera_up", "camera_down", "camera_up"]
        available = subscriber.payloads("videvent/door/available", 4)
        assert [p for n, p in enumerate(available) if n == 0 or p != available[n - 1]] == [
            b"offline", b"online", b"offline", b"online"]
    finally:
        watch.process.send_signal(signal.SIGINT)
        code = watch.finish(timeout=PATIENCE_S)
        subscriber.close()
        broker.stop()
        webhook.close()
        gate.close()
    assert code == 0
    changes = [a["type"] for a in watch.alerts if a["type"] in ("camera_down", "camera_up")]
    assert changes == ["camera_down", "camera_up", "camera_down", "camera_up"]
    # The camera's own log has what was said before its folder existed, in order.
    logged = [json.loads(line)["type"] for line in
              (out / "alerts.jsonl").read_text().splitlines()]
    assert logged[:3] == ["camera_down", "session_start", "camera_up"]
    assert [kind for kind in logged if kind.startswith("camera_")] == changes


def test_a_camera_that_never_opens_is_said_down_once_and_its_end_once(tmp_path):
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))            # bound, never listening: refused at once
    try:
        done = run_cli("watch", f"http://127.0.0.1:{closed.getsockname()[1]}/camera", "--json",
                       "--max-reconnects", "2", "-d", tmp_path / "live")
    finally:
        closed.close()
    assert done.returncode == 1
    alerts = [json.loads(line) for line in done.stdout.splitlines()]
    assert [alert["type"] for alert in alerts] == ["camera_down"]
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 2 and "trying again (at most 2 times)" in lines[0], lines
    assert "could not be opened after 3 attempts" in lines[1]
    assert "stopped before" not in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "live").exists()


def test_seed_and_a_start_time_on_a_stream_are_set_aside_in_one_line(tmp_path, server):
    """--seed and -st are for files (issue 29, item 9): given for a stream, a one-line warning
    says so and the stream is watched from now, without them (what events.json records)."""
    out = tmp_path / "live"
    watch = Watch(server().url, out, "--seed", "-st", "5s", "-dt", "3s",
                  "--max-reconnects", "3")
    assert watch.finish(timeout=PATIENCE_S) == 0
    warnings = [line for line in watch.process.stderr.read().splitlines() if "warning" in line]
    assert len(warnings) == 1, warnings
    assert "-st/--start-time and --seed are for files" in warnings[0]
    document = json.loads((out / "events.json").read_text())
    assert document["settings"]["start_time"] is None and document["settings"]["seed"] is False
    # Watched from its first frame for the 3 s asked (-dt), not from 5 s in.
    assert document["frames_read"] == 45
    assert (out / "scores.csv").read_text().splitlines()[1].split(",")[0] == "0"


def test_a_camera_that_never_opens_beside_a_live_one_is_said_down_then_given_up(tmp_path,
                                                                                server):
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))            # bound, never listening: refused at once
    watch = ServedWatch([server(loop=True).url, f"http://127.0.0.1:{closed.getsockname()[1]}/"],
                        tmp_path / "live", "--name", "door", "--name", "dead",
                        "--serve", "127.0.0.1:0", "--max-reconnects", "1")
    try:
        base = watch.dashboard_url()
        assert watch.wait_for("camera_down", PATIENCE_S, camera="dead")["attempts"] == 1
        watch.wait_for("session_start", PATIENCE_S, camera="door")

        def status(name: str) -> dict:
            with urllib.request.urlopen(base + "api/cameras", timeout=10) as response:
                return next(camera for camera in json.loads(response.read())
                            if camera["name"] == name)

        deadline = time.monotonic() + PATIENCE_S
        while status("dead")["status"] != "finished":    # given up after its attempts
            assert time.monotonic() < deadline, status("dead")
            time.sleep(0.1)
        assert "could not be opened after 2 attempts" in status("dead")["status_detail"]["error"]
        assert status("door")["status"] == "connected"
    finally:
        watch.process.send_signal(signal.SIGINT)
        closed.close()
    assert watch.finish(timeout=PATIENCE_S) == 1
    assert [a["type"] for a in watch.alerts if a.get("camera") == "dead"] == ["camera_down"]
    assert any("camera dead could not be opened after 2 attempts" in line
               for line in watch.stderr_lines), watch.stderr_lines
