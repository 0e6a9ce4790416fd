"""Several cameras in one ``videvent watch``: a config file's ``[cameras.NAME]`` tables with
their own settings, a dead camera that never stalls the live one, and the dashboard's token."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import urllib.error
import urllib.request

from conftest import ROOT, sample
from test_watch import server, stream_event_start_s  # noqa: F401
from test_watch_dashboard import ServedWatch


def status_of(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code


def test_config_cameras_with_their_settings_and_a_dead_one_that_stalls_nothing(tmp_path,
                                                                               server):
    dead = socket.socket()   # accepts the connection and never sends a byte
    dead.bind(("127.0.0.1", 0))
    dead.listen(8)
    config = tmp_path / "cameras.toml"
    # The dashboard's address from the config file, as every watch setting can be.
    config.write_text(f"""
window = 60
serve = "0.0.0.0:0"
[cameras.door]
source = "{server().url}"
threshold = 6.5
[cameras.dead]
source = "http://127.0.0.1:{dead.getsockname()[1]}/"
""")
    out = tmp_path / "live"
    watch = ServedWatch([f"--config={config}"], out)
    try:
        # Bound beyond loopback with no token: one is generated, printed, and asked for.
        url = watch.dashboard_url()
        assert "?token=" in url
        base = url.split("?")[0].replace("0.0.0.0", "127.0.0.1")
        token = url.split("?token=")[1]
        assert status_of(base + "api/cameras") == 401
        assert status_of(base + "api/cameras?token=wrong") == 403
        assert status_of(base + "api/cameras?token=" + token) == 200
        # The live camera runs on its own while the dead one is still being opened.
        session = watch.wait_for("session_start", 30, camera="door")
        start = watch.wait_for("start", 30, camera="door", event=1)
        assert start["wall_time"] - session["wall_time"] <= stream_event_start_s() + 1.0
        watch.wait_for("end", 30, camera="door", event=1)
    finally:
        watch.process.send_signal(signal.SIGINT)
    assert watch.finish() == 0
    dead.close()
    events = json.loads((out / "door" / "events.json").read_text())
    assert (events["settings"]["threshold"], events["settings"]["window"]) == (6.5, 60)
    assert len(events["events"]) == 1
    assert not (out / "dead" / "events.json").exists()


def test_a_camera_without_a_source_is_a_one_line_error(tmp_path):
    config = tmp_path / "cameras.toml"
    config.write_text("[cameras.door]\nthreshold = 6\n")
    result = subprocess.run([sys.executable, "-m", "videvent", "watch", "-c", str(config),
                             "-d", str(tmp_path / "live")], capture_output=True, text=True,
                            cwd=ROOT, timeout=60)
    assert result.returncode == 2
    [line] = result.stderr.strip().splitlines()
    assert "camera 'door' has no source" in line
    assert not (tmp_path / "live").exists()


def test_a_dashboard_address_in_use_is_a_one_line_error_before_anything_is_written(tmp_path):
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen(1)
    try:
        result = subprocess.run(
            [sys.executable, "-m", "videvent", "watch", str(sample("walker")[0]), "-d",
             str(tmp_path / "live"), "--serve", f"127.0.0.1:{taken.getsockname()[1]}"],
            capture_output=True, text=True, cwd=ROOT, timeout=60)
    finally:
        taken.close()
    assert result.returncode == 1
    [line] = result.stderr.strip().splitlines()
    assert line.startswith("videvent: error: cannot serve the dashboard on 127.0.0.1:")
    assert not (tmp_path / "live").exists()
