"""Several cameras in one ``videvent watch``: a config file's ``[cameras.NAME]`` tables with
their own settings, a dead camera that never stalls the live one, and the dashboard's token."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import pytest

from conftest import ROOT, sample
from test_watch import at_the_persons_entry, server  # noqa: F401
from test_watch_dashboard import ServedWatch


def status_of(url: str, headers: dict | None = None) -> int:
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers or {}),
                                    timeout=10) as response:
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
        # Printed with an address another machine can use (this one's name), not 0.0.0.0.
        assert "0.0.0.0" not in url and socket.gethostname() in url
        base = f"http://127.0.0.1:{url.split('?')[0].rstrip('/').rsplit(':', 1)[1]}/"
        token = url.split("?token=")[1]
        assert status_of(base + "api/cameras") == 401
        assert status_of(base + "api/cameras?token=wrong") == 403
        assert status_of(base + "api/cameras?token=" + token) == 200
        assert status_of(base + "api/cameras", {"Authorization": "bearer " + token}) == 200
        # The live camera runs on its own while the dead one is still being opened.
        watch.wait_for("session_start", 30, camera="door")
        # The person found at their moment of the stream. (Its own settings, a window of 60
        # frames and a threshold of 6.5, can also flag the first gust of the tree while the
        # model holds its first ten frames: a warm-up's statistics, see docs/how-it-works.md.)
        found = [watch.wait_for("start", 30, camera="door", event=number) for number in (1, 2)]
        entry = next(start for start in found if at_the_persons_entry(start))
        watch.wait_for("end", 30, camera="door", event=entry["event"])
    finally:
        watch.process.send_signal(signal.SIGINT)
    assert watch.finish() == 0
    dead.close()
    events = json.loads((out / "door" / "events.json").read_text())
    assert (events["settings"]["threshold"], events["settings"]["window"]) == (6.5, 60)
    assert entry["event"] == events["events"][-1]["number"] == len(events["events"])
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


@pytest.mark.parametrize("where", ["--name", "config"])
@pytest.mark.parametrize("name, message", [
    ("x" * 300, "'xxxxxxxxxxxxxxxxxxxx'... (300 characters): letters, digits, '-' and '_' "
                "only, at most 64 of them"),
    ("x" * 65, "at most 64 of them"),
    ("caméra", "letters, digits, '-' and '_' only"),
])
def test_a_camera_name_that_cannot_make_file_names_is_refused_up_front(tmp_path, where, name,
                                                                       message):
    """Its files (a clip: the name, the date and time, the event's number) must have names a
    file system takes: a 300-character name left nothing but scores written."""
    options = ["--name", name, str(sample("walker")[0])]
    if where == "config":
        config = tmp_path / "cameras.toml"
        config.write_text(f"[cameras.'{name}']\nsource = '{sample('walker')[0]}'\n",
                          encoding="utf-8")
        options = ["-c", str(config)]
    result = subprocess.run([sys.executable, "-m", "videvent", "watch", *options, "-d",
                             str(tmp_path / "live")], capture_output=True, text=True,
                            cwd=ROOT, timeout=60)
    assert result.returncode == 2
    [line] = result.stderr.strip().splitlines()
    assert line.startswith("videvent: error:") and message in line, line
    assert "x" * 21 not in line
    assert not (tmp_path / "live").exists()


def test_a_camera_named_after_a_long_source_gets_a_name_that_makes_files():
    from videvent.cameras import name_cameras
    from videvent.settings import CAMERA_NAME, Settings

    [camera] = name_cameras((f"rtsp://cam/{'a' * 300}",), Settings(), {})
    assert CAMERA_NAME.fullmatch(camera.name) and len(camera.name) <= 60


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


def test_ctrl_c_at_any_moment_with_a_camera_that_never_answers_exits_cleanly(tmp_path):
    """Ctrl-C while one camera is still blocked in opening (a server that accepts and never
    sends a byte) and the other is watched: exit 0 every time, never an abort from a thread
    left inside FFmpeg, and the watched camera's files are complete."""
    dead = socket.socket()
    dead.bind(("127.0.0.1", 0))
    dead.listen(64)
    config = tmp_path / "cameras.toml"
    config.write_text(f"""
[cameras.door]
source = "{sample("walker")[0]}"
[cameras.dead]
source = "http://127.0.0.1:{dead.getsockname()[1]}/"
""")

    def stopped_at(attempt: int) -> None:
        out = tmp_path / f"live{attempt}"
        process = subprocess.Popen(
            [sys.executable, "-m", "videvent", "watch", "-c", str(config), "-d", str(out),
             "--realtime", "-q", "--no-plot"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True, cwd=ROOT)
        # Once the watch is up (its folder made, the cameras opening), at a later moment
        # each time: from while the dead camera opens to well into the live one's watch.
        deadline = time.monotonic() + 60
        while not out.exists() and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        time.sleep(0.4 * attempt)
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=60)
        assert process.returncode == 0, (attempt, stderr)
        assert "Abort" not in stderr and "Traceback" not in stderr
        if (out / "door").exists():             # the watched camera's files, complete
            events = json.loads((out / "door" / "events.json").read_text())
            rows = (out / "door" / "scores.csv").read_text().splitlines()
            assert len(rows) - 1 == events["frames_read"] - events["session"]["dropped_frames"]

    try:
        # Three watches at a time, stopped 0 to 2 s after they are up: the moments, not the
        # order, are what is tried (test_watch stops fifty at random moments).
        with ThreadPoolExecutor(3) as pool:
            for done in [pool.submit(stopped_at, attempt) for attempt in range(6)]:
                done.result()
    finally:
        dead.close()


@pytest.mark.parametrize("how", ["environment", "file"])
def test_a_token_given_out_of_sight_is_asked_for_and_never_printed(tmp_path, server,
                                                                  monkeypatch, how):
    token = "given-out-of-sight-0123456789"
    extra = []
    if how == "environment":
        monkeypatch.setenv("VIDEVENT_SERVE_TOKEN", token)
    else:
        (tmp_path / "token").write_text(token + "\n")
        extra = ["--serve-token-file", str(tmp_path / "token")]
    watch = ServedWatch([server().url], tmp_path / "live", "--serve", "0.0.0.0:0",
                        "--max-reconnects", "20", *extra)
    try:
        url = watch.dashboard_url()
        assert "token" not in url.split("/", 3)[-1]            # the address alone is printed
        base = f"http://127.0.0.1:{url.split('/')[2].rsplit(':', 1)[1]}/"
        assert status_of(base + "api/cameras") == 401
        assert status_of(base + "api/cameras", {"Authorization": f"Bearer {token}"}) == 200
    finally:
        watch.process.send_signal(signal.SIGINT)
    assert watch.finish() == 0
    assert token not in "\n".join(watch.stderr_lines) + json.dumps(watch.alerts)


def test_cameras_named_on_the_command_line_name_their_files_report_and_alerts(tmp_path):
    """``--name`` for each SOURCE in order (issue 29): its folder, clips, thumbnails, report,
    events.json and alerts say the name, not the source's; a name given twice, more names than
    sources or a name that cannot name a file are one line and exit 2, before anything is
    written."""
    walker = str(sample("walker")[0])
    out = tmp_path / "live"
    done = subprocess.run([sys.executable, "-m", "videvent", "watch", walker, walker, "--name",
                           "door", "--name", "yard", "-d", out, "-q", "--json"],
                          capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert sorted(path.name for path in out.iterdir() if path.is_dir()) == ["door", "yard"]
    for name in ("door", "yard"):
        folder = out / name
        document = json.loads((folder / "events.json").read_text())
        assert document["source"]["name"] == name and document["events"]
        assert [clip.name for clip in folder.glob("*.mp4")] == [f"{name}.event001.mp4"]
        assert f"videvent report: {name}" in (folder / "report.html").read_text()
    alerts = [json.loads(line) for line in done.stdout.splitlines()]
    assert {alert["camera"] for alert in alerts} == {"door", "yard"}

    config = tmp_path / "cameras.toml"
    config.write_text(f'quiet = true\n[cameras.door]\nsource = "{walker}"\n')
    for options, message in [(["-c", config, walker, "--name", "door"], "named 'door'"),
                             ([walker, walker, "--name", "door", "--name", "door"],
                              "named 'door'"),
                             ([walker, "--name", "a", "--name", "b"], "one name per source"),
                             ([walker, "--name", "front door"], "letters, digits")]:
        refused = subprocess.run([sys.executable, "-m", "videvent", "watch", *map(str, options),
                                  "-d", tmp_path / "refused"], capture_output=True, text=True,
                                 timeout=120, cwd=ROOT)
        assert refused.returncode == 2 and message in refused.stderr, refused.stderr
        assert len(refused.stderr.strip().splitlines()) == 1, refused.stderr
        assert not (tmp_path / "refused").exists()


def test_a_missing_file_among_cameras_is_said_at_once_while_the_others_go_on(tmp_path,
                                                                            server):
    """Issue 51: a camera that cannot be opened was said only when the watch ended. Now one
    line says it when it fails, while the other cameras go on; the watch's end names it
    again in its closing error (exit 1)."""
    missing = tmp_path / "missing.mp4"
    watch = ServedWatch([server(loop=True).url, str(missing)], tmp_path / "live",
                        "--name", "door", "--name", "gone")
    said = f"videvent: camera gone: cannot open '{missing}'"
    try:
        watch.wait_for("session_start", 30, camera="door")
        deadline = time.monotonic() + 10
        while not any(line.startswith(said) for line in watch.stderr_lines):
            assert time.monotonic() < deadline, watch.stderr_lines
            time.sleep(0.05)
        assert watch.process.poll() is None            # the other camera goes on
        watch.wait_for("start", 30, camera="door")     # and finds its events
    finally:
        watch.process.send_signal(signal.SIGINT)
    assert watch.finish() == 1
    deadline = time.monotonic() + 10
    while not watch.stderr_lines or not watch.stderr_lines[-1].startswith("videvent: error:"):
        assert time.monotonic() < deadline, watch.stderr_lines
        time.sleep(0.05)
    lines = watch.stderr_lines
    assert sum(line.startswith(said) for line in lines) == 1, lines
    assert "camera gone: could not be opened" in lines, lines
    assert lines[-1] == (f"videvent: error: camera gone cannot open '{missing}': "
                         f"no such file or folder")
    assert "Traceback" not in "\n".join(lines)
