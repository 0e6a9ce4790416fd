"""Running videvent as a service (issue 54): the systemd unit shipped in contrib/ (parsed, its
command line run through the CLI's own parser, without systemd), ``--log-format json``, and the
dashboard's ``/healthz`` and ``/metrics`` against a real watch of a real stream: the metrics
parsed by Prometheus' own parser, the health unhealthy within 10 s of the camera going away,
and the token rules."""

import configparser
import json
import shlex
import signal
import socket
import time
import urllib.error
import urllib.request

import pytest

from conftest import ROOT, run_cli, sample
from test_mqtt import broker, needs_broker  # noqa: F401
from test_watch import FFMPEG, server  # noqa: F401
from test_watch_dashboard import ServedWatch
from videvent import __version__

prometheus_parser = pytest.importorskip("prometheus_client.parser")
needs_ffmpeg = pytest.mark.skipif(FFMPEG is None, reason="ffmpeg is not installed")
UNIT = ROOT / "contrib" / "videvent.service"
EXAMPLE_CONFIG = ROOT / "contrib" / "cameras.toml"


def get(url: str, token: str | None = None) -> tuple[int, str]:
    request = urllib.request.Request(url, headers={} if token is None else {
        "Authorization": f"Bearer {token}"})
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def samples(text: str) -> dict[tuple[str, tuple], float]:
    """Every sample of a Prometheus text, parsed by prometheus_client: (name, labels) -> value."""
    return {(sample.name, tuple(sorted(sample.labels.items()))): sample.value
            for family in prometheus_parser.text_string_to_metric_families(text)
            for sample in family.samples}


@needs_ffmpeg
def test_metrics_parse_and_healthz_goes_unhealthy_within_10_s_of_the_camera_going_away(
        tmp_path, server):  # noqa: F811 - the fixture
    stream = server(loop=True)
    watch = ServedWatch([stream.url], tmp_path / "live", "--serve", "127.0.0.1:0",
                        "--max-reconnects", "50", "--name", "door")
    try:
        base = watch.dashboard_url()
        deadline = time.monotonic() + 30
        while True:                                  # until the camera has given pictures
            status, text = get(base + "metrics")
            assert status == 200
            found = samples(text)
            if (found.get(("videvent_frames_total", (("camera", "door"),)), 0) > 20
                    and ("videvent_latency_seconds", (("camera", "door"),)) in found):
                break
            assert time.monotonic() < deadline, text
            time.sleep(0.3)
        assert found[("videvent_camera_up", (("camera", "door"),))] == 1
        assert found[("videvent_build_info", (("version", __version__),))] == 1
        for kind in ("moved", "light", "appeared"):
            assert ("videvent_events_total", (("camera", "door"), ("kind", kind))) in found
        assert found[("videvent_disk_used_bytes", (("camera", "door"),))] > 0
        assert found[("videvent_latency_seconds", (("camera", "door"),))] >= 0
        assert ("videvent_dropped_frames_total", (("camera", "door"),)) in found
        status, answer = get(base + "healthz")
        assert status == 200 and json.loads(answer)["status"] == "ok"

        stream.stop()                                # the camera goes away
        gone = time.monotonic()
        while True:
            status, answer = get(base + "healthz")
            if status == 503:
                break
            assert time.monotonic() - gone < 10, answer
            time.sleep(0.2)
        [camera] = json.loads(answer)["cameras"]
        assert json.loads(answer)["status"] == "unhealthy" and camera["name"] == "door"
        assert camera["up"] is False
        assert samples(get(base + "metrics")[1])[("videvent_camera_up",
                                                  (("camera", "door"),))] == 0
    finally:
        watch.process.send_signal(signal.SIGINT)
    assert watch.finish() == 0


@needs_ffmpeg
@needs_broker
def test_metrics_count_the_mqtt_queue_of_a_watch_that_publishes(tmp_path, server,  # noqa: F811
                                                                broker):  # noqa: F811
    broker.start()
    stream = server(loop=True)
    watch = ServedWatch([stream.url], tmp_path / "live", "--serve", "127.0.0.1:0",
                        "--mqtt", f"127.0.0.1:{broker.port}", "--name", "door")
    try:
        base = watch.dashboard_url()
        deadline = time.monotonic() + 30
        while True:
            found = samples(get(base + "metrics")[1])
            if found.get(("videvent_mqtt_connected", ())) == 1:
                break
            assert time.monotonic() < deadline, found
            time.sleep(0.3)
        assert found[("videvent_mqtt_queue_length", ())] >= 0
        broker.stop()                                  # the broker goes: no longer connected
        deadline = time.monotonic() + 30
        while samples(get(base + "metrics")[1]).get(("videvent_mqtt_connected", ())) != 0:
            assert time.monotonic() < deadline
            time.sleep(0.3)
    finally:
        watch.process.send_signal(signal.SIGINT)
    assert watch.finish() == 0


def outward_address() -> str | None:
    """This machine's address on a network (not loopback), if it has one."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("192.0.2.1", 9))          # no packet is sent: a route is chosen
            address = probe.getsockname()[0]
        except OSError:
            return None
    return None if address.startswith("127.") or address == "0.0.0.0" else address


@pytest.mark.parametrize("health", ["local", "anyone"])
def test_metrics_keep_the_dashboards_token_and_healthz_is_open_to_this_machine_only(
        tmp_path, health):
    """With a token, /metrics needs it like every page; /healthz is answered without it to a
    client on this machine, and from elsewhere only with ``--serve-health anyone``."""
    from videvent.dashboard import Dashboard

    dashboard = Dashboard("0.0.0.0", 0, token="s3cret-token", health_open=health)
    dashboard.add_camera("door")
    dashboard.start()
    try:
        local = f"http://127.0.0.1:{dashboard.port}/"
        assert get(local + "metrics")[0] == 401
        assert get(local + "metrics", "wrong")[0] == 403
        status, text = get(local + "metrics", "s3cret-token")
        assert status == 200 and samples(text)[("videvent_camera_up", (("camera", "door"),))] == 0
        # Not opened yet: unhealthy, said without the token to this machine.
        status, answer = get(local + "healthz")
        assert status == 503 and "s3cret-token" not in answer
        assert json.loads(answer)["cameras"][0]["status"] == "waiting"
        address = outward_address()
        if address is None:
            pytest.skip("this machine has no address but loopback")
        status, _ = get(f"http://{address}:{dashboard.port}/healthz")
        assert status == (503 if health == "anyone" else 401)
        assert get(f"http://{address}:{dashboard.port}/metrics")[0] == 401
    finally:
        dashboard.stop()


# -- the systemd unit, without systemd ---------------------------------------------------------
def the_unit() -> configparser.ConfigParser:
    unit = configparser.ConfigParser(interpolation=None, strict=True)
    unit.optionxform = str                         # systemd's keys are case-sensitive
    unit.read_string(UNIT.read_text())
    return unit


def test_the_unit_parses_with_a_restart_policy_a_user_and_the_journal():
    unit = the_unit()
    assert unit.sections() == ["Unit", "Service", "Install"]
    service = unit["Service"]
    assert service["Restart"] == "on-failure" and service["RestartSec"]
    assert service["RestartSteps"] and service["RestartMaxDelaySec"]   # the back-off
    assert unit["Unit"]["StartLimitIntervalSec"] == "0"                # never given up
    assert service["User"] == "videvent" and service["User"] != "root"
    assert service["StandardError"] == "journal"
    assert service["StateDirectory"] == "videvent"
    assert unit["Install"]["WantedBy"] == "multi-user.target"
    assert unit["Unit"]["After"] == "network-online.target"


def test_the_units_command_line_is_one_the_cli_accepts_as_it_stands():
    """ExecStart run through ``videvent watch``'s own parser (options, their types and
    callbacks, the config file read and checked), with the example config in place of
    /etc/videvent/cameras.toml; its cameras named as the watch would name them."""
    from videvent._cli.main import cli
    from videvent.cameras import name_cameras
    from videvent.settings import Settings, load_cameras

    program, command, *arguments = shlex.split(the_unit()["Service"]["ExecStart"])
    assert program.startswith("/") and program.endswith("/videvent") and command == "watch"
    assert arguments[arguments.index("-c") + 1] == "/etc/videvent/cameras.toml"
    arguments[arguments.index("-c") + 1] = str(EXAMPLE_CONFIG)
    context = cli.commands["watch"].make_context("watch", arguments)
    assert context.params["out_dir"] == "/var/lib/videvent"
    assert context.params["serve"] == "127.0.0.1:8080"       # the dashboard, for /healthz
    assert context.params["alert_on"] == "moved,appeared,left"   # from the config file
    cameras = name_cameras((), Settings(), load_cameras(EXAMPLE_CONFIG),
                           alerts={"alert_on": context.params["alert_on"]})
    assert [camera.name for camera in cameras] == ["door", "yard"]


def test_the_service_page_shows_the_unit_and_the_config_as_shipped():
    page = (ROOT / "docs" / "service.md").read_text()
    assert "```ini\n" + UNIT.read_text() + "```" in page
    assert "```toml\n" + EXAMPLE_CONFIG.read_text() + "```" in page


# -- --log-format json -------------------------------------------------------------------------
def test_log_format_json_makes_every_stderr_line_one_json_object(tmp_path):
    path, _ = sample("lighting")
    result = run_cli("watch", path, "-d", tmp_path / "live", "--no-plot", "--no-clips",
                     "--name", "door", "--log-format", "json", "--serve", "127.0.0.1:0")
    assert result.returncode == 0, result.stderr
    records = [json.loads(line) for line in result.stderr.splitlines()]
    assert len(records) >= 2
    assert all(set(record) >= {"time", "level", "message"} for record in records)
    assert records[0]["message"].startswith("dashboard: http://127.0.0.1:")
    assert "frames watched" in records[-1]["message"] and records[-1]["level"] == "info"
    # An error: one object, level error, and the exit code it always had.
    failed = run_cli("watch", tmp_path / "nothing.mp4", "--log-format", "json")
    [record] = [json.loads(line) for line in failed.stderr.splitlines()]
    assert failed.returncode == 1 and record["level"] == "error"
    assert record["message"].startswith("cannot open")


def test_log_format_json_from_the_config_file_and_human_lines_by_default(tmp_path):
    path, _ = sample("lighting")
    config = tmp_path / "cameras.toml"
    config.write_text(f'log-format = "json"\nthreshold = 0.5\nthreshold-low = 0.4\n\n'
                      f'[cameras.door]\nsource = "{path}"\n')
    result = run_cli("watch", "-c", config, "-d", tmp_path / "json", "--no-plot", "--no-clips",
                     "--max-frames", "20")
    assert result.returncode == 0, result.stderr
    records = [json.loads(line) for line in result.stderr.splitlines()]
    assert any(record["level"] == "warning" for record in records)   # the threshold's
    assert all(record.get("camera") == "door" for record in records
               if record["message"].startswith("camera door"))
    human = run_cli("watch", path, "-d", tmp_path / "human", "--no-plot", "--no-clips",
                    "--max-frames", "20")
    assert human.returncode == 0 and human.stderr.strip()
    assert not human.stderr.lstrip().startswith("{")
