"""MQTT (issue 14) against a real mosquitto started on 127.0.0.1: Frigate-style event JSON,
retained status and snapshot, and a broker that dies and comes back while the sink never
holds up its caller; what never reached the broker is counted in each session's
events.json; over TLS (issue 28), with a private certificate authority made by openssl for
the test: trusted with --mqtt-ca, and refused when it is not the broker's; Home Assistant's
discovery, motion state and score, and events whose pictures the dashboard serves (issue 29);
a broker frozen with SIGSTOP while a watch publishes: what it never acknowledged is sent again
once it answers, or counted undelivered (issue 51)."""

import contextlib
import getpass
import os
import json
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import types
import urllib.request
from pathlib import Path

import cv2
import numpy as np
import paho.mqtt.client as paho
import pytest

from conftest import ROOT, sample
from test_watch import FFMPEG, Stream, stream_event_start_s
from videvent.detectors.base import FrameScore
from videvent.output.mqtt import (MqttPublisher, MqttSink, _Waiting, check_prefix,
                                  parse_mqtt_address, topic_name)
from videvent.segmenter import Event
from videvent.sources.base import Frame

MOSQUITTO = shutil.which("mosquitto") or shutil.which("/usr/sbin/mosquitto")
needs_broker = pytest.mark.skipif(MOSQUITTO is None, reason="mosquitto is not installed")
OPENSSL = shutil.which("openssl")
needs_openssl = pytest.mark.skipif(OPENSSL is None, reason="openssl is not installed")
PATIENCE_S = 20.0          # deadline of every wait on the network (a liveness bound)
LOST_KEY = "mqtt_undelivered_event_messages"      # in events.json, when MQTT was used


def certificate_authority(folder, name):
    """A new certificate authority in ``folder``: (its certificate, its key), PEM."""
    folder.mkdir(parents=True, exist_ok=True)
    certificate, key = folder / "ca.pem", folder / "ca.key"
    # The extensions a strict verifier (Python 3.13's VERIFY_X509_STRICT) asks of a CA.
    subprocess.run([OPENSSL, "req", "-x509", "-newkey", "ec", "-pkeyopt",
                    "ec_paramgen_curve:prime256v1", "-nodes", "-days", "1", "-subj", f"/CN={name}",
                    "-addext", "basicConstraints=critical,CA:TRUE",
                    "-addext", "keyUsage=critical,keyCertSign,cRLSign",
                    "-keyout", str(key), "-out", str(certificate)], check=True,
                   capture_output=True)
    return certificate, key


def server_certificate(folder, authority, names="IP:127.0.0.1,DNS:localhost"):
    """A broker's certificate for ``names`` (subjectAltName), signed by ``authority``:
    (certificate, key), PEM, in ``folder``."""
    certificate, key = folder / "server.pem", folder / "server.key"
    request, extensions = folder / "server.csr", folder / "server.ext"
    extensions.write_text(f"subjectAltName={names}\nbasicConstraints=critical,CA:FALSE\n"
                          "keyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n"
                          "authorityKeyIdentifier=keyid\nsubjectKeyIdentifier=hash\n")
    subprocess.run([OPENSSL, "req", "-new", "-newkey", "ec", "-pkeyopt",
                    "ec_paramgen_curve:prime256v1", "-nodes", "-subj", "/CN=videvent test broker",
                    "-keyout", str(key), "-out", str(request)], check=True, capture_output=True)
    subprocess.run([OPENSSL, "x509", "-req", "-in", str(request), "-CA", str(authority[0]),
                    "-CAkey", str(authority[1]), "-CAcreateserial", "-days", "1",
                    "-extfile", str(extensions), "-out", str(certificate)], check=True,
                   capture_output=True)
    return certificate, key


class Broker:
    """mosquitto on a free 127.0.0.1 port, with a generated configuration."""

    def __init__(self, folder, users: dict[str, str] | None = None, tls=None):
        """``users``: name -> password, the only ones let in (else anyone is); ``tls``:
        (certificate, key) files, PEM: the listener speaks TLS only."""
        with socket.socket() as probe:          # mosquitto cannot report a port it chose
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.config = folder / "mosquitto.conf"
        # Persistence keeps a subscriber's session over a restart, so what the sink sends while
        # the subscriber is still reconnecting waits for it (else the test would race).
        # ``user``: run as root (CI), mosquitto would switch to its own user, which cannot write
        # the test's folder, and keep nothing.
        access = "allow_anonymous true\n"
        if users:
            passwords = folder / "passwords"
            for number, (name, password) in enumerate(users.items()):
                subprocess.run(["mosquitto_passwd", "-b", *(["-c"] if number == 0 else []),
                                str(passwords), name, password], check=True,
                               capture_output=True)
            access = f"allow_anonymous false\npassword_file {passwords}\n"
        if tls is not None:
            access += f"certfile {tls[0]}\nkeyfile {tls[1]}\n"
        self.config.write_text(f"listener {self.port} 127.0.0.1\n{access}"
                               f"persistence true\npersistence_location {folder}/\n"
                               f"user {getpass.getuser()}\n")
        self.process = None

    def start(self):
        self.process = subprocess.Popen([MOSQUITTO, "-c", str(self.config)],
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + PATIENCE_S
        while time.monotonic() < deadline:
            assert self.process.poll() is None, "mosquitto exited at start"
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return
            except OSError:
                time.sleep(0.05)
        raise AssertionError("mosquitto did not accept connections")

    def stop(self):
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=10)


@pytest.fixture
def broker(tmp_path):
    broker = Broker(tmp_path)
    yield broker
    broker.stop()


class Subscriber:
    """A paho client that records every message under ``videvent/#`` (and ``topics``)."""

    def __init__(self, port, session=None, login=None, ca=None, topics=("videvent/#",)):
        """``session``: a client id whose session the broker keeps while it is away;
        ``login``: (user, password); ``ca``: over TLS, trusting this certificate authority."""
        self.messages = []
        self.arrived = threading.Condition()
        self.subscribed = threading.Event()
        self.client = paho.Client(paho.CallbackAPIVersion.VERSION2, client_id=session or "",
                                  clean_session=session is None)
        if login is not None:
            self.client.username_pw_set(*login)
        if ca is not None:
            self.client.tls_set(ca_certs=str(ca))
        self.client.on_connect = lambda client, *_: client.subscribe(
            [(topic, 1) for topic in topics])
        self.client.on_subscribe = lambda *_: self.subscribed.set()
        self.client.on_message = self._record
        self.client.reconnect_delay_set(1, 2)
        self.client.connect_async("127.0.0.1", port)
        self.client.loop_start()

    def _record(self, client, userdata, message):
        with self.arrived:
            self.messages.append(message)
            self.arrived.notify_all()

    def wait_for(self, topic, test=lambda payload: True):
        """The first message on ``topic`` whose payload passes ``test``."""
        deadline = time.monotonic() + PATIENCE_S
        with self.arrived:
            while True:
                for message in self.messages:
                    if message.topic == topic and test(message.payload):
                        return message
                left = deadline - time.monotonic()
                assert left > 0, f"no message on {topic}: got {[m.topic for m in self.messages]}"
                self.arrived.wait(left)

    def payloads(self, topic, count):
        """The payloads of the first ``count`` messages on ``topic``, once they are here."""
        deadline = time.monotonic() + PATIENCE_S
        with self.arrived:
            while True:
                payloads = [m.payload for m in self.messages if m.topic == topic]
                if len(payloads) >= count:
                    return payloads[:count]
                left = deadline - time.monotonic()
                assert left > 0, f"{len(payloads)} of {count} messages on {topic}: {payloads}"
                self.arrived.wait(left)

    def wait_until_subscribed(self):
        """Until the broker has the subscription: nothing published after it is missed."""
        assert self.subscribed.wait(PATIENCE_S), "the subscriber never subscribed"

    def events(self):
        with self.arrived:
            return [json.loads(m.payload) for m in self.messages if m.topic == "videvent/events"]

    def close(self):
        self.client.disconnect()
        self.client.loop_stop()


def an_event(number=1, peak=9.0, peak_frame=12):
    return Event(number=number, start_frame=0, end_frame=30, core_start_frame=10,
                 core_end_frame=20, start_time_s=0.0, end_time_s=2.0, peak_frame=peak_frame,
                 peak_score=peak)


def a_frame(index, score, level):
    picture = np.full((48, 64, 3), level, np.uint8)
    return (Frame(index, index / 15, picture[..., 0], picture),
            FrameScore(index, index / 15, 0.1, score, "ok", False))


def test_mqtt_address_parsing_and_its_one_line_errors(monkeypatch):
    assert parse_mqtt_address("broker.lan") == ("broker.lan", 1883, None, None, False)
    assert parse_mqtt_address("127.0.0.1:1884")[:2] == ("127.0.0.1", 1884)
    assert parse_mqtt_address("[::1]:1885")[:2] == ("::1", 1885)
    assert parse_mqtt_address("mqtts://ha:S3cret@broker") == ("broker", 8883, "ha", "S3cret",
                                                              True)
    monkeypatch.setenv("VIDEVENT_MQTT_PASSWORD", "fromenv")
    assert parse_mqtt_address("mqtt://ha@broker:1884") == ("broker", 1884, "ha", "fromenv",
                                                           False)
    assert str(parse_mqtt_address("mqtts://ha:S3cret@broker")) == "mqtts://ha@broker:8883"
    for bad, problem in [("host:0", "port must be"), ("host:http", "port must be"),
                         (":1883", "expected HOST"), ("http://host", "mqtt:// or mqtts://"),
                         ("ha:S3cret@host:x", "port must be"), ("@host", "user name")]:
        with pytest.raises(ValueError, match=problem) as error:
            parse_mqtt_address(bad)
        assert "\n" not in str(error.value) and "S3cret" not in str(error.value)
    for bad in ("#", "videvent/+", "home//cams", "a/#/b"):
        with pytest.raises(ValueError, match="without"):
            check_prefix(bad)
    assert check_prefix("home/cams") == "home/cams"


@needs_broker
def test_events_status_and_snapshot_reach_a_subscriber(broker):
    broker.start()
    subscriber = Subscriber(broker.port)
    sink = MqttSink.connect(f"127.0.0.1:{broker.port}", "front door")
    try:
        sink.on_start(types.SimpleNamespace(camera="front door", threshold=7.0))
        subscriber.wait_for("videvent/available", lambda p: p == b"online")
        sink.on_status("connected", {"uri": "rtsp://camera"})
        for index, score, level in [(10, 8.0, 60), (11, 9.0, 200), (12, 8.5, 90)]:
            sink.on_frame(*a_frame(index, score, level), 1)
        sink.on_event_start(an_event(peak=9.0))
        sink.on_event_update(an_event(peak=9.5))
        sink.on_event_end(an_event(peak=9.5), {"thumbnail": "/out/event_001.jpg"})
        sink.on_status("finished", {})
        subscriber.wait_for("videvent/events", lambda p: json.loads(p)["type"] == "end")
        new, update, end = subscriber.events()
        assert [new["type"], update["type"], end["type"]] == ["new", "update", "end"]
        assert new["before"] == new["after"] and update["before"] == new["after"]
        assert end["before"] == update["after"]
        after = end["after"]
        assert after["id"].startswith("front_door-1-") and after["camera"] == "front door"
        assert after["peak_score"] == 9.5 and after["peak_frame"] == 12
        assert after["end_time"] - after["start_time"] == pytest.approx(2.0)
        assert new["after"]["end_time"] is None and after["has_snapshot"] is True
        assert after["thumbnail"] == "/out/event_001.jpg" and after["clip"] is None
        # The snapshot is the peak frame (grey level 200), as a JPEG.
        snapshot = subscriber.wait_for("videvent/front_door/snapshot").payload
        picture = cv2.imdecode(np.frombuffer(snapshot, np.uint8), cv2.IMREAD_COLOR)
        assert picture.shape == (48, 64, 3) and abs(float(picture.mean()) - 200) < 3
        subscriber.wait_for("videvent/front_door/status", lambda p: p == b"finished")
        # A subscriber that comes later gets the retained status and snapshot.
        late = Subscriber(broker.port)
        try:
            status = late.wait_for("videvent/front_door/status")
            assert status.payload == b"finished" and status.retain
            assert late.wait_for("videvent/front_door/snapshot").payload == snapshot
            detail = json.loads(late.wait_for("videvent/front_door/status/detail").payload)
            assert detail["status"] == "finished"
        finally:
            late.close()
    finally:
        sink.close()
    assert subscriber.wait_for("videvent/available", lambda p: p == b"offline")
    subscriber.close()


@needs_broker
@pytest.mark.timeout(120)
def test_a_broker_down_at_start_or_restarted_never_holds_up_the_sink(broker):
    # The broker is not there yet: the sink starts anyway, without waiting for it. Every call
    # below is made while the broker is away and before it comes back: one that waited for
    # it would wait for ever, and the test's timeout fails it (no wall-clock assertion).
    sink = MqttSink.connect(f"127.0.0.1:{broker.port}", "yard")
    try:
        sink.on_start(types.SimpleNamespace(camera="yard", threshold=7.0))
        sink.on_status("connected", {})
        broker.start()
        subscriber = Subscriber(broker.port, session="test-subscriber")
        subscriber.wait_for("videvent/yard/status", lambda p: p == b"connected")
        sink.on_frame(*a_frame(5, 8.0, 120), 1)
        sink.on_event_start(an_event(peak=8.0, peak_frame=5))
        subscriber.wait_for("videvent/events", lambda p: json.loads(p)["type"] == "new")

        broker.stop()
        deadline = time.monotonic() + PATIENCE_S
        while sink.publisher.connected:
            assert time.monotonic() < deadline, "the sink never noticed the broker had gone"
            time.sleep(0.05)
        # While the broker is away every call returns at once; the messages wait.
        for index in range(6, 40):
            sink.on_frame(*a_frame(index, 8.5, 130), 1)
        sink.on_event_end(an_event(peak=8.5, peak_frame=6), {})
        sink.on_status("lost", {"reason": "test"})

        broker.start()
        subscriber.wait_for("videvent/events", lambda p: json.loads(p)["type"] == "end")
        subscriber.wait_for("videvent/yard/status", lambda p: p == b"lost")
        sink.on_status("back", {})
        subscriber.wait_for("videvent/yard/status", lambda p: p == b"back")
        # A subscriber that comes later gets the retained status and availability.
        late = Subscriber(broker.port)
        try:
            assert late.wait_for("videvent/yard/status", lambda p: p == b"back").retain
            assert late.wait_for("videvent/available").payload == b"online"
        finally:
            late.close()
        subscriber.close()
    finally:
        sink.close()


@needs_broker
def test_a_message_handed_over_as_the_connection_drops_goes_on_the_next_one(broker):
    """The sender checks it is connected, the connection drops, then it hands paho an event
    message: paho keeps it and says "not connected". A race of microseconds, made here by
    handing it over after the drop as the sender does: the next connection takes it back and
    sends it first, then what came after, and the sink goes on (asking paho whether such a
    message was published raised on paho's thread, which ended it and every reconnection)."""
    broker.start()
    subscriber = Subscriber(broker.port, session="test-raced")
    assert subscriber.subscribed.wait(PATIENCE_S)
    sink = MqttSink.connect(f"127.0.0.1:{broker.port}", "yard")
    publisher = sink.publisher
    try:
        sink.on_start(types.SimpleNamespace(camera="yard", threshold=7.0))
        sink.on_status("connected", {})
        subscriber.wait_for("videvent/yard/status", lambda p: p == b"connected")
        broker.stop()
        deadline = time.monotonic() + PATIENCE_S
        while publisher.connected:
            assert time.monotonic() < deadline, "the sink never noticed the broker had gone"
            time.sleep(0.05)
        raced = json.dumps({"type": "raced"})
        with publisher._handing:
            info = publisher._client.publish("videvent/events", raced, qos=1)
            assert info.rc == paho.MQTT_ERR_NO_CONN
            with publisher._wake:
                publisher._in_flight[info.mid] = (
                    info, _Waiting("videvent/events", raced, False, "yard"), True)
        sink.on_event_start(an_event(peak=8.0, peak_frame=5))
        broker.start()
        subscriber.wait_for("videvent/events", lambda p: json.loads(p)["type"] == "new")
        types_seen = [json.loads(m.payload)["type"] for m in subscriber.messages
                      if m.topic == "videvent/events"]
        assert types_seen.index("raced") < types_seen.index("new")
        sink.on_status("back", {})
        subscriber.wait_for("videvent/yard/status", lambda p: p == b"back")
    finally:
        sink.close()
        subscriber.close()
    assert publisher.undelivered == 0


@needs_broker
@pytest.mark.skipif(FFMPEG is None, reason="ffmpeg is not installed")
def test_watch_publishes_a_streams_event_and_status(broker, tmp_path):
    """``videvent watch STREAM --mqtt``, as a user runs it, on a loopback camera with a mask."""
    broker.start()
    subscriber = Subscriber(broker.port)
    camera = Stream()
    try:
        done = subprocess.run(
            [sys.executable, "-m", "videvent", "watch", camera.url, "-d", tmp_path / "live",
             "--mqtt", f"127.0.0.1:{broker.port}", "--ignore-region", "0 0 40 0 0 40",
             "-dt", "9s", "-q", "--no-plot"], capture_output=True, text=True, timeout=120, cwd=ROOT)
        assert done.returncode == 0, done.stderr
        end = json.loads(subscriber.wait_for(
            "videvent/events", lambda p: json.loads(p)["type"] == "end").payload)
        new = next(event for event in subscriber.events() if event["type"] == "new")
        assert new["after"]["id"] == end["after"]["id"] and end["after"]["number"] == 1
        # The person's walk (the stream's only event), by the session's clock.
        assert end["after"]["start_time_s"] < stream_event_start_s() < end["after"]["end_time_s"]
        assert end["after"]["end_time"] > end["after"]["start_time"]
        assert end["after"]["thumbnail"].endswith("event001.jpg")
        status = f"videvent/{topic_name(end['after']['camera'])}/status"
        subscriber.wait_for(status, lambda p: p == b"finished")
        assert [m.payload for m in subscriber.messages if m.topic == status] == [
            b"connected", b"finished"]
        assert subscriber.wait_for("videvent/available", lambda p: p == b"offline")
        document = json.loads((tmp_path / "live" / "events.json").read_text())
        assert document["settings"]["ignore_region"] == ["0 0 40 0 0 40"]
    finally:
        camera.stop()
        subscriber.close()


@needs_broker
@pytest.mark.timeout(120)
def test_a_long_outage_never_costs_an_event_its_place_to_stats(broker):
    """Four cameras' stats every second for minutes and their events, while the broker is
    down: when it is back every event message arrives, in order, and of the stats and
    statuses only each topic's latest."""
    publisher = MqttPublisher("127.0.0.1", broker.port)
    sinks = [MqttSink(publisher, f"cam{n}") for n in range(4)]
    try:
        for second in range(600):                    # ten minutes of stats, four cameras
            for sink in sinks:
                sink.on_stats({"fps": 15, "dropped": 0, "latency_ms": second})
            if second % 20 == 0:
                sink = sinks[second // 20 % 4]
                number = second // 20 + 1
                sink.on_event_start(an_event(number=number))
                sink.on_event_end(an_event(number=number), {})
                sink.on_status("back" if second % 40 else "lost", {})
        assert publisher.dropped == 0
        broker.start()
        subscriber = Subscriber(broker.port)
        subscriber.wait_for("videvent/events",
                            lambda p: json.loads(p)["after"]["number"] == 30
                            and json.loads(p)["type"] == "end")
        events = [(message["type"], message["after"]["number"]) for message in
                  subscriber.events()]
        assert events == [(kind, n) for n in range(1, 31) for kind in ("new", "end")]
        subscriber.wait_for("videvent/cam3/stats")     # the latest values go after the events
        subscriber.wait_for("videvent/cam3/status")
        stats = [json.loads(m.payload) for m in subscriber.messages
                 if m.topic == "videvent/cam0/stats"]
        assert [s["latency_ms"] for s in stats] == [599]
        subscriber.close()
    finally:
        for sink in sinks:
            sink.close()
        publisher.close()


@needs_broker
def test_a_broker_with_a_password_a_wrong_one_and_no_broker_are_each_said(tmp_path):
    """A password in the address or the environment logs in; a wrong one, or no broker at
    the address, is said on stderr at once (the watch goes on); a prefix with a wildcard is a
    usage error; the password is never printed."""
    clip = str(sample("walker")[0])
    broker = Broker(tmp_path, users={"ha": "S3cretPw"})

    def watch(address, *extra, env=None, out=None):
        return subprocess.run(
            [sys.executable, "-m", "videvent", "watch", clip, "-q", "--no-plot", "--mqtt", address,
             *extra,
             "-d", str(out or tmp_path / f"out{len(list(tmp_path.iterdir()))}")],
            capture_output=True, text=True, timeout=300, env={**os.environ, **(env or {})})

    subscriber = None
    try:
        broker.start()
        subscriber = Subscriber(broker.port, login=("ha", "S3cretPw"))
        done = watch(f"ha@127.0.0.1:{broker.port}", env={"VIDEVENT_MQTT_PASSWORD": "S3cretPw"},
                     out=tmp_path / "logged_in")
        assert done.returncode == 0, done.stderr
        assert "MQTT" not in done.stderr
        subscriber.wait_for("videvent/events", lambda p: json.loads(p)["type"] == "end")
        # Every event message reached the broker, and the session's events.json says so.
        assert json.loads((tmp_path / "logged_in" / "events.json").read_text())[LOST_KEY] == 0
        wrong = watch(f"ha:WrongPw@127.0.0.1:{broker.port}", out=tmp_path / "refused")
        assert wrong.returncode == 0
        assert f"MQTT broker 127.0.0.1:{broker.port}: refused the connection" in wrong.stderr
        # Its events never reached the broker, and the watch says how many, once it ends;
        # the session's events.json records the same number.
        said = re.search(r"MQTT: (\d+) event messages? never reached the broker", wrong.stderr)
        assert said, wrong.stderr
        lost = int(said.group(1))
        assert lost >= 2                                 # at least the event's new and end
        assert json.loads((tmp_path / "refused" / "events.json").read_text())[LOST_KEY] == lost
    finally:
        if subscriber is not None:
            subscriber.close()
        broker.stop()
    with socket.socket() as closed:                  # a port nothing listens on
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    away = watch(f"127.0.0.1:{port}")
    assert away.returncode == 0 and "cannot be reached" in away.stderr
    bad = watch(f"127.0.0.1:{port}", "--mqtt-prefix", "#")
    assert bad.returncode == 2 and "--mqtt-prefix" in bad.stderr
    for result in (wrong, away, bad):
        assert "S3cretPw" not in result.stderr + result.stdout
        assert "WrongPw" not in result.stderr + result.stdout


@contextlib.contextmanager
def tls_broker_and_subscriber(tmp_path):
    """A mosquitto serving TLS with a certificate of a fresh authority, and a subscriber on it
    that trusts that authority: (authority, broker, subscriber)."""
    authority = certificate_authority(tmp_path / "authority", "videvent test CA")
    broker = Broker(tmp_path, tls=server_certificate(tmp_path, authority))
    subscriber = None
    try:
        broker.start()
        subscriber = Subscriber(broker.port, ca=authority[0])
        subscriber.wait_until_subscribed()
        yield authority, broker, subscriber
    finally:
        if subscriber is not None:
            subscriber.close()
        broker.stop()


def watch_over_tls(clip, port, ca, out):
    """``videvent watch CLIP --mqtt mqtts://127.0.0.1:PORT --mqtt-ca CA``, as a user runs it."""
    return subprocess.run(
        [sys.executable, "-m", "videvent", "watch", str(clip), "-q", "--no-plot",
         "--mqtt", f"mqtts://127.0.0.1:{port}", "--mqtt-ca", str(ca), "-d", str(out)],
        capture_output=True, text=True, timeout=300)


@needs_broker
@needs_openssl
def test_watch_publishes_over_tls_to_a_broker_signed_by_the_ca_it_is_given(tmp_path):
    """A private certificate authority's broker on mqtts://: with --mqtt-ca, the watch's
    event messages reach a subscriber (itself on TLS), and none is recorded lost."""
    clip, truth = sample("walker")
    with tls_broker_and_subscriber(tmp_path) as (authority, broker, subscriber):
        done = watch_over_tls(clip, broker.port, authority[0], tmp_path / "out")
        assert done.returncode == 0, done.stderr
        assert "MQTT" not in done.stderr
        end = json.loads(subscriber.wait_for(
            "videvent/events", lambda p: json.loads(p)["type"] == "end").payload)
        assert [event["type"] for event in subscriber.events()][0] == "new"
        # The walker's crossing, the clip's one event.
        (first, last), = truth["event_frames"]
        assert first <= end["after"]["peak_frame"] <= last
        subscriber.wait_for(f"videvent/{topic_name(end['after']['camera'])}/status",
                            lambda p: p == b"finished")
        document = json.loads((tmp_path / "out" / "events.json").read_text())
        assert document[LOST_KEY] == 0


@needs_broker
@needs_openssl
def test_a_broker_whose_certificate_is_not_trusted_is_said_and_the_watch_ends_normally(
        tmp_path):
    """--mqtt-ca of another authority than the broker's: one warning line (the one of a
    broker that cannot be reached, saying why), nothing published, the watch ends with exit
    0 and counts its event messages as lost. A certificate of the right authority for
    another host name is refused too: verification is never turned off."""
    clip = sample("walker")[0]
    stranger = certificate_authority(tmp_path / "stranger", "another CA")
    with tls_broker_and_subscriber(tmp_path) as (authority, broker, subscriber):
        refused = watch_over_tls(clip, broker.port, stranger[0], tmp_path / "out")
        assert refused.returncode == 0, refused.stderr
        said = [line for line in refused.stderr.splitlines() if "MQTT broker" in line]
        assert said == [f"videvent: warning: MQTT broker 127.0.0.1:{broker.port}: cannot be "
                        f"reached: its certificate is not trusted (unable to get local issuer "
                        f"certificate); trying again"], refused.stderr
        lost = re.search(r"MQTT: (\d+) event messages never reached the broker",
                         refused.stderr)
        assert lost and int(lost.group(1)) >= 2, refused.stderr
        document = json.loads((tmp_path / "out" / "events.json").read_text())
        assert document[LOST_KEY] == int(lost.group(1))
        assert "Traceback" not in refused.stderr
        # The trusted subscriber, connected all along, got nothing from it.
        assert subscriber.messages == []

    misnamed_folder = tmp_path / "misnamed"
    misnamed_folder.mkdir()
    misnamed = Broker(misnamed_folder, tls=server_certificate(
        misnamed_folder, authority, names="DNS:elsewhere.invalid"))
    lines = []
    publisher = None
    try:
        misnamed.start()
        publisher = MqttPublisher("127.0.0.1", misnamed.port, tls=True, ca_file=authority[0],
                                  report=lines.append)
        deadline = time.monotonic() + PATIENCE_S
        while not lines:
            assert time.monotonic() < deadline, "the refused certificate was never said"
            time.sleep(0.05)
        assert "its certificate is not trusted" in lines[0] and "mismatch" in lines[0]
        assert not publisher.connected
    finally:
        if publisher is not None:
            publisher.close(timeout=0)
        misnamed.stop()


def test_a_bad_mqtt_ca_or_one_without_mqtts_is_one_line_and_exit_2(tmp_path):
    """A --mqtt-ca file missing or holding no certificate, from the command line or the
    config file, --mqtt-ca without an mqtts:// broker, and a discovery prefix with a wildcard:
    one line, exit 2, before anything is written (and never the password of the address)."""
    clip = str(sample("walker")[0])
    not_pem = tmp_path / "notes.txt"
    not_pem.write_text("not a certificate\n")
    config = tmp_path / "watch.toml"
    config.write_text('mqtt = "mqtts://127.0.0.1:8883"\nmqtt-ca = "no-such-ca.pem"\n')
    out = tmp_path / "out"
    for options, message in [
            (["--mqtt", "mqtts://127.0.0.1:8883", "--mqtt-ca", str(tmp_path / "missing.pem")],
             "No such file or directory"),
            (["--mqtt", "mqtts://127.0.0.1:8883", "--mqtt-ca", str(not_pem)],
             "holds no certificate"),
            (["-c", str(config)], "no-such-ca.pem"),
            (["--mqtt", "ha:S3cretPw@127.0.0.1:1883", "--mqtt-ca", str(not_pem)],
             "--mqtt-ca is for a broker reached over TLS"),
            (["--mqtt-ca", str(not_pem)], "--mqtt-ca is for a broker reached over TLS"),
            (["--mqtt", "127.0.0.1:1883", "--mqtt-discovery", "home/#"], "without '+' or '#'")]:
        result = subprocess.run([sys.executable, "-m", "videvent", "watch", clip, "-q",
                                 "-d", str(out), *options], capture_output=True, text=True,
                                timeout=120)
        assert result.returncode == 2, result.stderr
        assert len(result.stderr.strip().splitlines()) == 1, result.stderr
        named = "--mqtt-discovery" if "--mqtt-discovery" in options else "--mqtt-ca"
        assert named in result.stderr and message in result.stderr, result.stderr
        assert "S3cretPw" not in result.stderr + result.stdout
        assert not out.exists()


def test_a_watch_without_mqtt_records_no_mqtt_count(tmp_path):
    """The count of undelivered event messages is a fact of a watch that published."""
    done = subprocess.run([sys.executable, "-m", "videvent", "watch",
                           str(sample("walker")[0]), "-q", "--max-frames", "20",
                           "-d", str(tmp_path / "out")], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert LOST_KEY not in json.loads((tmp_path / "out" / "events.json").read_text())


STRACE = shutil.which("strace")


def _traced_writes(trace_file, folder) -> list[tuple[str, str]]:
    """(what, name) of each write, rename and removal of a file in ``folder``, in the order
    strace saw them: ``what`` is "write" (a name opened for writing or renamed onto) or
    "remove"."""
    prefix = re.escape(str(folder)) + "/"
    steps = []
    for line in trace_file.read_text().splitlines():
        if re.search(r"= -1 ", line):
            continue                                 # a call that failed changed nothing
        opened = re.search(rf'openat\(AT_FDCWD, "{prefix}([^"/]+)", O_WRONLY', line)
        renamed = re.search(rf'rename(?:at2?)?\(.*"{prefix}[^"/]+",.*"{prefix}([^"/]+)"', line)
        removed = re.search(rf'unlink(?:at)?\((?:AT_FDCWD, )?"{prefix}([^"/]+)"', line)
        for what, match in (("write", opened), ("write", renamed), ("remove", removed)):
            if match:
                steps.append((what, match.group(1)))
    return steps


@pytest.mark.skipif(STRACE is None, reason="strace is not installed")
def test_the_completion_marker_is_written_after_the_mqtt_count(tmp_path):
    """The count of undelivered event messages is known only once the broker's connection
    is closed, after the session wrote its folder: events.json is rewritten then, and the
    completion marker (what a reader trusts to mean "every file is final") is withdrawn
    first and written again last. Watched with strace: events.json is never written while
    the marker is there, and at the end the marker is there beside the count."""
    out, trace = tmp_path / "out", tmp_path / "trace.txt"
    with socket.socket() as closed:                  # a port nothing listens on
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    done = subprocess.run([STRACE, "-f", "-qq", "-o", str(trace), "-e",
                           "trace=openat,rename,renameat,renameat2,unlink,unlinkat",
                           sys.executable, "-m", "videvent", "watch", str(sample("walker")[0]),
                           "-q", "--no-plot", "--mqtt", f"127.0.0.1:{port}",
                           "-d", str(out)], capture_output=True, text=True, timeout=300)
    if done.returncode != 0 and "ptrace" in done.stderr:
        pytest.skip(f"strace cannot trace here: {done.stderr.strip()}")
    assert done.returncode == 0, done.stderr
    steps = _traced_writes(trace, out)
    marker_there = False
    for what, name in steps:
        if name == ".videvent-complete":
            marker_there = what == "write"
        elif name == "events.json" and what == "write":
            assert not marker_there, "events.json rewritten while the marker said it was final"
    assert steps[-1] == ("write", ".videvent-complete"), steps[-5:]
    assert json.loads((out / ".videvent-complete").read_text())["live"] is True
    # The walker's crossing was one event: at least its "new" and "end" never went out.
    assert json.loads((out / "events.json").read_text())[LOST_KEY] >= 2
    assert not [path for path in out.iterdir() if path.name.endswith(".partial")]


def test_each_cameras_events_json_counts_its_own_undelivered_event_messages(tmp_path):
    """Two cameras share one connection to a broker that is not there: each camera's
    events.json records the event messages about it that never reached the broker, and
    together they are the total the watch says on stderr."""
    clip = str(sample("walker")[0])
    with socket.socket() as closed:                  # a port nothing listens on
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    out = tmp_path / "out"
    done = subprocess.run([sys.executable, "-m", "videvent", "watch", clip, clip, "-q", "--no-plot",
                           "--mqtt", f"127.0.0.1:{port}", "-d", str(out)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    total = re.search(r"MQTT: (\d+) event messages never reached the broker", done.stderr)
    assert total, done.stderr
    counts = {folder.name: json.loads((folder / "events.json").read_text())[LOST_KEY]
              for folder in out.iterdir() if folder.is_dir()}     # beside the event store
    assert sorted(counts) == ["walker", "walker-2"]
    # Each camera saw the walker's crossing: at least its "new" and its "end".
    assert all(count >= 2 for count in counts.values()), counts
    assert sum(counts.values()) == int(total.group(1))


HOME_ASSISTANT_ENTITIES = [("binary_sensor", "motion"), ("sensor", "score"),
                           ("camera", "snapshot")]
MOSQUITTO_SUB = shutil.which("mosquitto_sub")


@needs_broker
def test_home_assistant_discovers_the_camera_and_follows_its_motion_and_score(broker):
    """What Home Assistant reads: one device per camera with three entities, their
    availability as HA's Jinja2 renders it, a retained ON/OFF motion state, the score at most
    once a second of video, and event messages with a label and rounded numbers."""
    broker.start()
    subscriber = Subscriber(broker.port, topics=("videvent/#", "homeassistant/#"))
    sink = MqttSink.connect(f"127.0.0.1:{broker.port}", "front door")
    try:
        sink.on_start(types.SimpleNamespace(camera="front door", threshold=7.0))
        configs = {component: json.loads(subscriber.wait_for(
            f"homeassistant/{component}/videvent_front_door/{key}/config").payload)
            for component, key in HOME_ASSISTANT_ENTITIES}
        motion, score, snapshot = (configs[c] for c, _ in HOME_ASSISTANT_ENTITIES)
        assert motion["device_class"] == "motion"
        assert motion["state_topic"] == "videvent/front_door/motion"
        assert (motion["payload_on"], motion["payload_off"]) == ("ON", "OFF")
        assert score["state_topic"] == "videvent/front_door/score"
        assert snapshot["topic"] == "videvent/front_door/snapshot"
        assert len({config["unique_id"] for config in configs.values()}) == 3
        assert {config["device"]["identifiers"][0] for config in configs.values()} == {
            "videvent_front_door"} and motion["device"]["name"] == "front door"
        # Available while videvent is online and the camera is neither lost, stalled nor done.
        available, camera_available = motion["availability"]
        assert available["topic"] == "videvent/available" and motion["availability_mode"] == "all"
        assert camera_available["topic"] == "videvent/front_door/available"
        expected = [b"online", b"offline", b"online", b"offline", b"offline"]
        for count, status in enumerate(("connected", "lost", "back", "stalled", "finished"), 1):
            sink.on_status(status, {})     # each awaited: a newer value replaces one waiting
            assert subscriber.payloads("videvent/front_door/available", count) == \
                expected[:count]

        sink.on_status("connected", {})
        for index, frame_score, level in [(0, 2.0, 60), (7, 3.0, 60), (15, 8.456, 120),
                                          (16, 9.0, 200), (17, 8.5, 90)]:
            sink.on_frame(*a_frame(index, frame_score, level), 1 if index >= 15 else None)
        sink.on_event_start(an_event(peak=9.0))
        subscriber.wait_for("videvent/front_door/motion", lambda p: p == b"ON")
        sink.on_event_end(an_event(peak=9.4567, peak_frame=16),
                          {"thumbnail": "/out/event001.jpg", "clip": "/out/event001.mp4"})
        end = json.loads(subscriber.wait_for(
            "videvent/events", lambda p: json.loads(p)["type"] == "end").payload)["after"]
        assert subscriber.payloads("videvent/front_door/motion", 3) == [b"OFF", b"ON", b"OFF"]
        # The score, two decimals; the latest replaces one still waiting (as every value does).
        assert subscriber.wait_for("videvent/front_door/score", lambda p: p == b"8.46")
        assert end["label"] == "motion" and end["has_clip"] is True
        assert end["peak_score"] == 9.46 and end["start_time"] == round(end["start_time"], 3)
        assert end["thumbnail_url"] is None and end["clip_url"] is None   # no dashboard
        late = Subscriber(broker.port, topics=("videvent/#", "homeassistant/#"))
        try:   # what Home Assistant reads when it starts after videvent: all retained
            assert late.wait_for("videvent/front_door/motion").payload == b"OFF"
            assert late.wait_for("homeassistant/binary_sensor/videvent_front_door/motion/config"
                                 ).retain
        finally:
            late.close()
    finally:
        sink.close()
    subscriber.close()


def test_the_score_goes_out_at_most_once_a_second_of_video():
    published = []
    recorder = types.SimpleNamespace(
        topic=lambda *levels: "/".join(("videvent", *levels)),
        publish=lambda topic, payload, **_: published.append((topic, payload)))
    sink = MqttSink(recorder, "yard", discovery_prefix=None)
    sink.on_start(types.SimpleNamespace(camera="yard", threshold=7.0))
    for index, frame_score in [(0, 2.0), (7, 3.0), (15, 8.456), (16, 9.0), (31, 1.0), (2, 5.0)]:
        sink.on_frame(*a_frame(index, frame_score, 60), None)     # 15 frames a second
    # 0 s, then 1.0 s and 2.07 s; a frame back in time (the source restarted) starts again.
    assert [payload for topic, payload in published if topic == "videvent/yard/score"] == [
        "2.00", "8.46", "1.00", "5.00"]
    assert not any(topic.startswith("homeassistant/") for topic, _ in published)


@needs_broker
@pytest.mark.timeout(150)
def test_a_watch_serving_its_dashboard_gives_home_assistant_urls_of_its_pictures(broker,
                                                                                  tmp_path):
    """``videvent watch STREAM --mqtt ... --serve 127.0.0.1:0``: the event's thumbnail can be
    fetched at the address its MQTT message gives while the watch runs, the end message names
    the clip's address, and ``mosquitto_sub`` (as docs/watch.md shows) sees the discovery."""
    broker.start()
    subscriber = Subscriber(broker.port, topics=("videvent/#", "homeassistant/#"))
    camera = Stream()
    watch = subprocess.Popen(
        [sys.executable, "-m", "videvent", "watch", camera.url, "-d", tmp_path / "live",
         "--mqtt", f"127.0.0.1:{broker.port}", "--serve", "127.0.0.1:0", "-dt", "12s", "-q",
         "--no-plot"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        new = json.loads(subscriber.wait_for(
            "videvent/events", lambda p: json.loads(p)["type"] == "new").payload)["after"]
        assert re.fullmatch(r"http://127\.0\.0\.1:\d+/cameras/0/events/1/thumbnail",
                            new["thumbnail_url"])
        with urllib.request.urlopen(new["thumbnail_url"], timeout=PATIENCE_S) as response:
            assert response.headers["Content-Type"] == "image/jpeg"
            picture = cv2.imdecode(np.frombuffer(response.read(), np.uint8), cv2.IMREAD_COLOR)
        assert picture is not None and picture.size > 0
        end = json.loads(subscriber.wait_for(
            "videvent/events", lambda p: json.loads(p)["type"] == "end").payload)["after"]
        assert end["has_clip"] and Path(end["clip"]).is_file()
        assert end["clip_url"] == new["thumbnail_url"].replace("/thumbnail", "/clip")
        camera_id = topic_name(new["camera"])
        subscriber.wait_for(f"homeassistant/binary_sensor/videvent_{camera_id}/motion/config")
        if MOSQUITTO_SUB is not None:
            seen = subprocess.run([MOSQUITTO_SUB, "-h", "127.0.0.1", "-p", str(broker.port),
                                   "-t", "homeassistant/#", "-v", "-C", "3", "-W", "20"],
                                  capture_output=True, text=True, timeout=60)
            topics = sorted(line.split(" ", 1)[0] for line in seen.stdout.splitlines())
            assert topics == sorted(f"homeassistant/{component}/videvent_{camera_id}/{key}/config"
                                    for component, key in HOME_ASSISTANT_ENTITIES)
        assert watch.wait(timeout=90) == 0, watch.stderr.read()
    finally:
        if watch.poll() is None:
            watch.kill()
            watch.wait()
        watch.stderr.close()
        camera.stop()
        subscriber.close()


class Lines:
    """A process's stderr, its lines collected on a thread as they come."""

    def __init__(self, stream):
        self.lines: list[str] = []
        self.came = threading.Condition()
        self._reader = threading.Thread(target=self._read, args=(stream,), daemon=True)
        self._reader.start()

    def _read(self, stream):
        for line in stream:
            with self.came:
                self.lines.append(line.rstrip("\n"))
                self.came.notify_all()

    def wait_for(self, text, timeout):
        """The first line holding ``text``, once it is there (``timeout`` at most)."""
        deadline = time.monotonic() + timeout
        with self.came:
            while True:
                for line in self.lines:
                    if text in line:
                        return line
                left = deadline - time.monotonic()
                assert left > 0, f"no line with {text!r} on stderr: {self.lines}"
                self.came.wait(left)

    def text(self):
        self._reader.join(timeout=PATIENCE_S)
        with self.came:
            return "\n".join(self.lines)


def watch_a_stream_and_freeze_the_broker(broker, tmp_path, duration, while_frozen):
    """``videvent watch STREAM --mqtt`` to ``broker``, a subscriber on it: once the first
    event's "new" message has arrived, the broker is frozen (SIGSTOP: it keeps its connections
    and answers nothing), and ``while_frozen(broker, errors, subscriber)`` runs; it may thaw
    it (``broker.thaw()``). Whatever happens, the broker is thawed and stopped, and the watch
    and the camera stopped. (The watch's exit code, its stderr, the subscriber's events.)"""
    broker.start()
    subscriber = Subscriber(broker.port, session="frozen-broker-subscriber")
    camera = Stream(loop=True)
    watch = subprocess.Popen(
        [sys.executable, "-m", "videvent", "watch", camera.url, "-d", tmp_path / "live",
         "--mqtt", f"127.0.0.1:{broker.port}", "-dt", duration, "-q", "--no-plot"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    errors = Lines(watch.stderr)
    frozen = []

    def thaw():
        if frozen:
            os.kill(broker.process.pid, signal.SIGCONT)
            frozen.clear()

    broker.thaw = thaw
    try:
        subscriber.wait_until_subscribed()
        subscriber.wait_for("videvent/events", lambda p: json.loads(p)["type"] == "new")
        os.kill(broker.process.pid, signal.SIGSTOP)
        frozen.append(True)
        while_frozen(broker, errors, subscriber)
        code = watch.wait(timeout=180)
    finally:
        thaw()
        if watch.poll() is None:
            watch.kill()
            watch.wait()
        camera.stop()
        subscriber.close()
        broker.stop()
    stderr = errors.text()
    watch.stderr.close()
    return code, stderr, subscriber


@needs_broker
@pytest.mark.skipif(FFMPEG is None, reason="ffmpeg is not installed")
@pytest.mark.timeout(300)
def test_what_a_frozen_broker_never_acknowledged_is_sent_again_once_it_answers(broker,
                                                                               tmp_path):
    """The broker stops answering without closing the connection (frozen with SIGSTOP, as a
    host gone or a network cut): the watch says so when paho notices (its keepalive), and
    once the broker answers again the event messages written to it meanwhile, never
    acknowledged, arrive; none is recorded undelivered."""
    def while_frozen(broker, errors, subscriber):
        errors.wait_for(f"MQTT broker 127.0.0.1:{broker.port}: stopped answering", 90)
        broker.thaw()
        subscriber.wait_for("videvent/events", lambda p: json.loads(p)["type"] == "end")

    code, stderr, subscriber = watch_a_stream_and_freeze_the_broker(broker, tmp_path, "45s",
                                                                    while_frozen)
    assert code == 0, stderr
    assert "never reached the broker" not in stderr
    # Said once: the tries while it is still frozen are the same trouble.
    assert [line for line in stderr.splitlines() if "MQTT" in line] == [
        f"videvent: warning: MQTT broker 127.0.0.1:{broker.port}: stopped answering; "
        f"trying again"], stderr
    # Every event that began ended, on the broker (QoS 1: a message may come twice).
    events = subscriber.events()
    started = {event["after"]["id"] for event in events if event["type"] == "new"}
    ended = {event["after"]["id"] for event in events if event["type"] == "end"}
    assert started and started == ended, events
    assert json.loads((tmp_path / "live" / "events.json").read_text())[LOST_KEY] == 0


@needs_broker
@pytest.mark.skipif(FFMPEG is None, reason="ffmpeg is not installed")
@pytest.mark.timeout(300)
def test_what_a_broker_frozen_to_the_end_never_acknowledged_is_counted_undelivered(broker,
                                                                                  tmp_path):
    """The broker is frozen from the first event's start to the end of the watch: the event
    messages written to it (at least the event's "end") were never acknowledged, so never
    delivered: the watch says how many and events.json records them."""
    code, stderr, subscriber = watch_a_stream_and_freeze_the_broker(
        broker, tmp_path, "15s", lambda broker, errors, subscriber: None)
    assert code == 0, stderr
    said = re.search(r"MQTT: (\d+) event messages? never reached the broker", stderr)
    assert said and int(said.group(1)) >= 1, stderr
    assert json.loads((tmp_path / "live" / "events.json").read_text())[LOST_KEY] == int(
        said.group(1))


@needs_broker
@needs_openssl
def test_a_peer_that_takes_the_connection_and_never_answers_is_said_when_found(tmp_path):
    """A peer that accepts the TCP connection and never answers MQTT's CONNECT, and plain
    MQTT to a broker's TLS port, are each said once, while it goes on (not at the end)."""
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)                               # the kernel takes connections; nothing reads
    port = silent.getsockname()[1]

    def first_line(port, lines):
        publisher = MqttPublisher("127.0.0.1", port, keepalive=1, report=lines.append)
        try:
            deadline = time.monotonic() + PATIENCE_S
            while not lines:
                assert time.monotonic() < deadline, "the silent peer was never said"
                time.sleep(0.05)
            assert not publisher.connected
        finally:
            publisher.close(timeout=0)
        return lines[0]

    try:
        assert first_line(port, []) == (
            f"MQTT broker 127.0.0.1:{port}: took the connection but never answered as an MQTT "
            f"broker (is it a TLS port, for mqtts://?); trying again")
    finally:
        silent.close()
    with tls_broker_and_subscriber(tmp_path) as (authority, broker, subscriber):
        assert "never answered as an MQTT broker" in first_line(broker.port, [])
