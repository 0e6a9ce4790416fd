"""Alerts by kind and place (issue 54): ``--alert-on KINDS`` and ``--alert-regions NAMES`` for
every channel (``--json``, ``alerts.jsonl``, ``--on-event``, ``--webhook``, MQTT), on the
command line and per camera in the config file; every event still recorded. Driven as a user
runs it, on the bundled lighting clip (a walker, ``moved``, then the light going out,
``light``) and, where the shared development set is here, on a real closet whose light comes
on with a visitor and goes out after him."""

import http.server
import json
import threading

import pytest

from conftest import devset_clip, run_cli, sample
from test_mqtt import Subscriber, broker, needs_broker  # noqa: F401
from videvent.choices import parse_kinds
from videvent.kinds import AlertFilter, AlertGate
from videvent.regions import parse_region_names
from videvent.segmenter import Event


def an_event(number=1, kind="moved", regions=()):
    return Event(number=number, start_frame=0, end_frame=30, core_start_frame=10,
                 core_end_frame=20, start_time_s=0.0, end_time_s=3.0, peak_frame=12,
                 peak_score=9.0, kind=kind, regions=list(regions))


# -- the filter and its gate -------------------------------------------------------------------
def test_kinds_and_regions_are_read_by_name_and_a_wrong_one_is_one_line_listing_the_valid():
    assert parse_kinds(" Light,moved ") == {"light", "moved"}
    with pytest.raises(ValueError, match="unknown kind 'ligth': choose from moved, appeared, "
                                         "left, light, scene, darkness"):
        parse_kinds("moved,ligth")
    assert parse_region_names("1, region 2,Region-3") == {"region 1", "region 2", "region 3"}
    with pytest.raises(ValueError, match="'porch' is not a region"):
        parse_region_names("porch")
    with pytest.raises(ValueError, match="region 3 is not one of the regions watched: there "
                                         "are 2"):
        parse_region_names("3", count=2)


def test_an_events_alerts_begin_once_it_passes_and_always_end():
    """No ON without an OFF: begun, an event's alerts go on to its end whatever its kind turns
    out to be; one that passes only at its end gets both then; one that never does, none."""
    gate = AlertGate(AlertFilter.of("light", None))
    assert gate.open(an_event(1, "moved")) is None                 # not yet
    assert gate.open(an_event(1, "light")) == "start"              # its kind so far passes
    assert gate.open(an_event(1, "moved")) == "update"             # begun: goes on
    assert gate.end(an_event(1, "moved")) == "end"
    assert gate.end(an_event(2, "light")) == "start and end"       # read at its end only
    assert gate.open(an_event(3, "moved")) is None and gate.end(an_event(3, "moved")) is None
    place = AlertGate(AlertFilter.of(None, "2", region_count=2))
    assert place.open(an_event(4, regions=["region 1"])) is None
    assert place.end(an_event(4, regions=["region 1", "region 2"])) == "start and end"
    assert AlertGate().open(an_event(5)) == "start"                # no filter: every event


# -- as a user runs it -------------------------------------------------------------------------
class Receiver(http.server.BaseHTTPRequestHandler):
    """A webhook's receiver: keeps what is posted to it."""

    received: list = []

    def do_POST(self):  # noqa: N802 - the http.server API
        Receiver.received.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args):
        pass


def event_alerts(lines) -> list[tuple[str, int, str]]:
    return [(alert["type"], alert["event"], alert["kind"]) for alert in lines
            if alert["type"] in ("start", "update", "end")]


@pytest.mark.parametrize("kind", ["light", "moved"])
def test_alert_on_a_kind_delivers_only_its_events_on_every_channel(tmp_path, kind):
    """The lighting clip's two events, a walker (moved) and the light going out (light): each
    filter's alerts are its kind's alone on stdout, in alerts.jsonl, to the command and to the
    webhook, with the kind and the box; events.jsonl and events.json still hold both."""
    path, _ = sample("lighting")
    out, hook_log = tmp_path / "live", tmp_path / "hook.log"
    Receiver.received = []
    receiver = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    threading.Thread(target=receiver.serve_forever, daemon=True).start()
    try:
        result = run_cli("watch", path, "-d", out, "-q", "--json", "--no-plot",
                         "--alert-on", kind,
                         "--on-event", f'echo "$VIDEVENT_TYPE $VIDEVENT_KIND" >> {hook_log}',
                         "--webhook", f"http://127.0.0.1:{receiver.server_port}/alerts")
    finally:
        receiver.shutdown()
        receiver.server_close()
    assert result.returncode == 0, result.stderr
    printed = [json.loads(line) for line in result.stdout.splitlines()]
    logged = [json.loads(line) for line in (out / "alerts.jsonl").read_text().splitlines()]
    recorded = [json.loads(line) for line in (out / "events.jsonl").read_text().splitlines()]
    assert sorted(event["kind"] for event in recorded) == ["light", "moved"]   # all recorded
    assert len(json.loads((out / "events.json").read_text())["events"]) == 2
    [number] = [event["number"] for event in recorded if event["kind"] == kind]
    alerted = event_alerts(printed)
    assert {(type_, event) for type_, event, _ in alerted} >= {("start", number),
                                                               ("end", number)}
    assert {event for _, event, _ in alerted} == {number}
    assert {alert_kind for *_, alert_kind in alerted} == {kind}
    [end] = [alert for alert in printed if alert["type"] == "end"]
    start = next(alert for alert in printed if alert["type"] == "start")
    assert "box" in start and "regions" in start and "box" in end
    assert end["box"] == next(e["box"] for e in recorded if e["number"] == number)
    assert event_alerts(logged) == alerted
    assert [line.split()[0] for line in hook_log.read_text().splitlines()
            if line.split()[0] in ("start", "end")] == ["start", "end"]
    assert all(line.split()[1] == kind for line in hook_log.read_text().splitlines()
               if line.split()[0] in ("start", "end"))
    assert event_alerts(Receiver.received) == alerted
    # The session's own news are not events: never filtered.
    assert printed[0]["type"] == "session_start" and printed[-1]["type"] == "session_end"


def test_alert_regions_deliver_only_the_events_that_touched_them(tmp_path):
    """Two watch regions, the top and the bottom of the picture: alerting on region 1 leaves
    out the walk along the bottom and the light (which has no box), both still recorded."""
    path, _ = sample("lighting")
    out = tmp_path / "live"
    result = run_cli("watch", path, "-d", out, "-q", "--json", "--no-plot", "--no-clips",
                     "-a", "0 0 319 0 319 100 0 100", "-a", "0 110 319 110 319 239 0 239",
                     "--alert-regions", "region 1")
    assert result.returncode == 0, result.stderr
    recorded = [json.loads(line) for line in (out / "events.jsonl").read_text().splitlines()]
    touching = {event["number"] for event in recorded if "region 1" in event["regions"]}
    assert touching and len(touching) < len(recorded)
    printed = [json.loads(line) for line in result.stdout.splitlines()]
    ends = [alert for alert in printed if alert["type"] == "end"]
    assert {alert["event"] for alert in ends} == touching
    assert all("region 1" in alert["regions"] for alert in ends)


def test_a_camera_of_the_config_file_has_its_own_alert_filter(tmp_path):
    """``alert-on`` at the top applies to every camera; a camera's own wins."""
    path, _ = sample("lighting")
    config = tmp_path / "cameras.toml"
    config.write_text(f'alert-on = "moved"\n\n[cameras.garden]\nsource = "{path}"\n\n'
                      f'[cameras.lamp]\nsource = "{path}"\nalert-on = "light"\n')
    out = tmp_path / "live"
    result = run_cli("watch", "-c", config, "-d", out, "-q", "--json", "--no-plot",
                     "--no-clips")
    assert result.returncode == 0, result.stderr
    printed = [json.loads(line) for line in result.stdout.splitlines()]
    kinds_of = {camera: {alert["kind"] for alert in printed
                         if alert.get("camera") == camera and alert["type"] == "end"}
                for camera in ("garden", "lamp")}
    assert kinds_of == {"garden": {"moved"}, "lamp": {"light"}}
    for camera in ("garden", "lamp"):
        assert len((out / camera / "events.jsonl").read_text().splitlines()) == 2


@pytest.mark.parametrize("arguments, said", [
    (["--alert-on", "moved,ligth"], "--alert-on: unknown kind 'ligth': choose from moved, "
                                    "appeared, left, light, scene, darkness"),
    (["--alert-regions", "2", "-a", "0 0 100 0 100 100"],
     "--alert-regions: region 2 is not one of the regions watched: there is 1 (region 1)"),
    (["--alert-regions", "door"], "--alert-regions: 'door' is not a region"),
])
def test_a_kind_or_region_that_is_none_is_one_line_and_exit_2(tmp_path, arguments, said):
    path, _ = sample("lighting")
    result = run_cli("watch", path, "-d", tmp_path / "live", *arguments)
    assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1
    assert said in result.stderr and "Traceback" not in result.stderr
    assert not (tmp_path / "live").exists()


def test_a_config_files_unknown_kind_names_the_file_and_the_key(tmp_path):
    path, _ = sample("lighting")
    config = tmp_path / "cameras.toml"
    config.write_text(f'[cameras.door]\nsource = "{path}"\nalert-on = "person"\n')
    result = run_cli("watch", "-c", config, "-d", tmp_path / "live")
    assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1
    assert "camera 'door'" in result.stderr and "alert-on: unknown kind 'person'" in result.stderr


def test_on_a_real_closet_the_light_and_the_visit_are_alerted_apart(tmp_path):
    """A closet dark until a man opens its door and its light comes on (a picture out of
    darkness), then the light goes out after he left (a light): each filter alerts its own."""
    path, _ = devset_clip("beweging_lightout_after_movement")
    ended = {}
    for kind in ("light", "darkness"):
        out = tmp_path / kind
        result = run_cli("watch", path, "-d", out, "-q", "--json", "--no-plot", "--no-clips",
                         "--alert-on", kind)
        assert result.returncode == 0, result.stderr
        printed = [json.loads(line) for line in result.stdout.splitlines()]
        ended[kind] = [(alert["event"], alert["kind"]) for alert in printed
                       if alert["type"] == "end"]
        assert len((out / "events.jsonl").read_text().splitlines()) == 2
    assert ended == {"darkness": [(1, "darkness")], "light": [(2, "light")]}


@needs_broker
def test_mqtt_publishes_only_the_kind_asked_and_home_assistant_gets_it_as_an_attribute(
        broker, tmp_path):
    """``--mqtt --alert-on light`` against a real mosquitto: the event messages, the motion
    state and its attributes are the light's alone (kind and box in every message); the
    motion sensor's discovery names the attributes' topic."""
    broker.start()
    subscriber = Subscriber(broker.port, topics=("videvent/#", "homeassistant/#"))
    try:
        subscriber.wait_until_subscribed()
        path, _ = sample("lighting")
        result = run_cli("watch", path, "-d", tmp_path / "live", "-q", "--no-plot",
                         "--no-clips", "--name", "garden", "--alert-on", "light",
                         "--mqtt", f"127.0.0.1:{broker.port}")
        assert result.returncode == 0, result.stderr
        end = json.loads(subscriber.wait_for(
            "videvent/events", lambda p: json.loads(p)["type"] == "end").payload)
        messages = subscriber.events()
        assert {message["after"]["kind"] for message in messages} == {"light"}
        assert {message["after"]["number"] for message in messages} == {2}
        assert all("box" in message["after"] and "regions" in message["after"]
                   for message in messages)
        assert [message["type"] for message in messages][0] == "new"
        assert end["after"]["kind"] == "light"
        assert subscriber.payloads("videvent/garden/motion", 3) == [b"OFF", b"ON", b"OFF"]
        attributes = json.loads(subscriber.wait_for("videvent/garden/motion/attributes",
                                                    lambda p: b'"end_time": null' not in p
                                                    ).payload)
        assert attributes["kind"] == "light" and attributes["number"] == 2
        config = json.loads(subscriber.wait_for(
            "homeassistant/binary_sensor/videvent_garden/motion/config").payload)
        assert config["json_attributes_topic"] == "videvent/garden/motion/attributes"
        recorded = (tmp_path / "live" / "events.jsonl").read_text().splitlines()
        assert len(recorded) == 2                    # the walker is recorded, not published
    finally:
        subscriber.close()
