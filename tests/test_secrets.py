"""A camera's password never leaves videvent: every output of a watch, searched for it."""

from __future__ import annotations

import json
import signal
import socket
import urllib.request

import pytest

from conftest import run_cli
from test_guarantees import one_line
from test_mqtt import Subscriber, broker, needs_broker  # noqa: F401
from test_watch import server  # noqa: F401
from test_watch_dashboard import ServedWatch
from videvent.sources.base import public_uri

PASSWORD = "S3cretPass"
TOKEN = "T0kenValue"


def test_a_stream_address_is_shown_without_its_secrets():
    assert public_uri(f"rtsp://admin:{PASSWORD}@cam/stream") == "rtsp://admin:***@cam/stream"
    assert public_uri(f"http://{TOKEN}@cam:81/live.ts") == "http://***@cam:81/live.ts"
    assert (public_uri(f"http://cam/v.cgi?user=bob&password={PASSWORD}&res=hd")
            == "http://cam/v.cgi?user=bob&password=***&res=hd")
    assert public_uri(f"https://cam/hls.m3u8?token={TOKEN}") == "https://cam/hls.m3u8?token=***"
    for kept in ("clip.mp4", "/videos/a:b@c.mp4", "rtsp://cam:554/live", "udp://@:1234",
                 "http://cam/snap@2x.jpg", "http://[::1]:80/x", "http://cam/v.cgi?page=2"):
        assert public_uri(kept) == kept


@pytest.mark.parametrize("address, shown", [
    # The CGI of cheap IP cameras (loginuse/loginpas), and other makers' short names.
    (f"http://cam/videostream.cgi?loginuse=admin&loginpas={PASSWORD}",
     "http://cam/videostream.cgi?loginuse=admin&loginpas=***"),
    (f"http://cam/snapshot.cgi?user=admin&pwd={PASSWORD}&res=0",
     "http://cam/snapshot.cgi?user=admin&pwd=***&res=0"),
    (f"http://cam/cgi-bin/video.cgi?usr=admin&psw={PASSWORD}",
     "http://cam/cgi-bin/video.cgi?usr=admin&psw=***"),
    (f"http://cam/img.jpg?u=admin&pw={PASSWORD}", "http://cam/img.jpg?u=admin&pw=***"),
    # A password with an unencoded '#', '/', '?' or '@': urlsplit ends the authority there.
    (f"rtsp://admin:{PASSWORD[:4]}#{PASSWORD[4:]}/x@cam/live", "rtsp://admin:***@cam/live"),
    (f"rtsp://admin:{PASSWORD[:4]}/{PASSWORD[4:]}@cam:554/s?ch=1",
     "rtsp://admin:***@cam:554/s?ch=1"),
    (f"rtsp://admin:{PASSWORD[:4]}?{PASSWORD[4:]}@cam", "rtsp://admin:***@cam"),
    (f"rtsp://admin:{PASSWORD[:4]}@{PASSWORD[4:]}@cam/x", "rtsp://admin:***@cam/x"),
    (f"rtsp://admin:{PASSWORD[:4]}#{PASSWORD[4:]}@[fe80::1]:554/x",
     "rtsp://admin:***@[fe80::1]:554/x"),
])
def test_a_password_in_any_spelling_of_a_camera_address_is_masked(tmp_path, address, shown):
    assert public_uri(address) == shown
    if "cam/live" in address:   # and in the error line of a camera that cannot be reached
        unreachable = address.replace("@cam/", "@127.0.0.1:9/")
        for command in (["run"], ["watch", "--max-reconnects", "0"]):
            result = run_cli(*command, unreachable, "-d", tmp_path / "out", "-q")
            assert result.returncode == 1
            line = one_line(result)
            assert PASSWORD[4:] not in line and "admin:***@127.0.0.1:9/live" in line, line


@needs_broker
def test_no_output_of_a_watch_holds_a_cameras_password(tmp_path, server, broker):  # noqa: F811
    broker.start()
    subscriber = Subscriber(broker.port)
    stream = server()
    dead = socket.socket()                       # a camera that accepts and never answers
    dead.bind(("127.0.0.1", 0))
    dead.listen(8)
    live = f"http://admin:{PASSWORD}@127.0.0.1:{stream.port}/live.ts?token={TOKEN}"
    unreachable = f"http://admin:{PASSWORD}@127.0.0.1:{dead.getsockname()[1]}/"
    refused = f"rtsp://admin:{PASSWORD}@127.0.0.1:9/stream"       # nothing listens there
    out = tmp_path / "live"
    watch = ServedWatch([live, unreachable, refused], out, "--serve", "127.0.0.1:0",
                        "--mqtt", f"127.0.0.1:{broker.port}", "--max-reconnects", "1")
    try:
        page = watch.dashboard_url()
        seen = [urllib.request.urlopen(page.split("?")[0] + "api/cameras", timeout=10).read()]
        watch.wait_for("start", 30, event=1)
        watch.wait_for("end", 30, event=1)
        seen.append(urllib.request.urlopen(page.split("?")[0] + "api/cameras",
                                           timeout=10).read())
    finally:
        watch.process.send_signal(signal.SIGINT)
    watch.finish()
    dead.close()
    subscriber.close()
    seen += [json.dumps(watch.alerts).encode(), "\n".join(watch.stderr_lines).encode()]
    seen += [message.topic.encode() + message.payload for message in subscriber.messages]
    seen += [path.read_bytes() for path in out.rglob("*") if path.is_file()]
    assert any(b"session_start" in item for item in seen) and len(subscriber.messages) > 0
    everything = b"\n".join(seen)
    assert PASSWORD.encode() not in everything and TOKEN.encode() not in everything
    # The address is still shown, with its secrets replaced.
    assert b"admin:***@127.0.0.1" in everything and b"token=***" in everything
