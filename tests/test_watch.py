"""``videvent watch`` on a real live stream served by ffmpeg on 127.0.0.1 (loopback only)."""

import http.server
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from conftest import ROOT, sample, wait_until
from videvent.output import read_scores

FFMPEG = shutil.which("ffmpeg")
pytestmark = pytest.mark.skipif(FFMPEG is None, reason="ffmpeg is not installed "
                                                       "(.ci/run installs Debian's)")
# The walker clip from 8 s on (a keyframe): the person appears 61 frames (4.07 s) into the
# stream, after the detector's warm-up (50 frames).
STREAM_FROM_S = 8


class Stream:
    """A sample clip (the walker's) as a camera: ffmpeg plays it at its real pace from
    ``from_s`` as MPEG-TS, served over HTTP to each client that connects, on a port the server
    chose (or on ``port``, to come back where it was); ``loop``: the whole clip again each
    time it ends."""

    def __init__(self, port: int = 0, loop: bool = False, clip: str = "walker",
                 from_s: float = STREAM_FROM_S, encode: bool = False, pace: float = 1.0):
        self.players: list[subprocess.Popen] = []
        players = self.players
        # ``encode``: coded again, a keyframe a second, as a camera sends (a clip with one
        # keyframe, played from a moment after it, has no picture to start from); ``pace``:
        # that many times its real pace.
        coding = (["-c:v", "libx264", "-preset", "ultrafast", "-g", "10", "-an"] if encode
                  else ["-c", "copy"])

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 - the http.server API
                path, _ = sample(clip)
                player = subprocess.Popen(
                    [FFMPEG, "-loglevel", "error", "-readrate", str(pace), "-ss", str(from_s),
                     *(["-stream_loop", "-1"] if loop else []), "-i",
                     str(path), *coding, "-f", "mpegts", "pipe:1"],
                    stdin=subprocess.DEVNULL, stdout=subprocess.PIPE)
                players.append(player)
                self.send_response(200)
                self.send_header("Content-Type", "video/mp2t")
                self.end_headers()
                try:
                    while chunk := player.stdout.read1(65536):
                        self.wfile.write(chunk)
                except OSError:
                    pass  # the client went away
                finally:
                    player.kill()
                    player.wait()

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_port
        self.url = f"http://127.0.0.1:{self.port}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        """The camera goes away: no new connection, and the stream being played ends."""
        self.server.shutdown()
        self.server.server_close()
        for player in self.players:
            player.kill()
            player.wait()


class Gate:
    """A camera still booting, in front of ``stream``: refuses (503) its first ``refuse``
    connections (None: every one until ``opened`` is set), then sends each one to ``stream``
    (which may be given later, before ``opened`` is set). ``requests``: when each connection
    came (``time.monotonic()``) and whether it was refused, as the camera's log says."""

    def __init__(self, stream: Stream | None, refuse: int | None = None):
        self.opened = threading.Event()
        self.refused = 0
        self.stream = stream
        self.requests: list[tuple[float, bool]] = []
        gate = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 - the http.server API
                if not gate.opened.is_set() and (refuse is None or gate.refused < refuse):
                    gate.requests.append((time.monotonic(), True))
                    gate.refused += 1
                    self.send_response(503)
                    self.end_headers()
                    return
                gate.requests.append((time.monotonic(), False))
                self.send_response(302)
                self.send_header("Location", gate.stream.url)
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_port}/camera"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def stream_event_start_s() -> float:
    _, truth = sample("walker")
    return truth["event_frames"][0][0] / truth["fps"] - STREAM_FROM_S


def at_the_persons_entry(alert: dict) -> bool:
    """Whether an event's start alert is at the frame of the stream the person appears in,
    give or take a second (frames are numbered as they arrive)."""
    _, truth = sample("walker")
    return abs(alert["frame"] - stream_event_start_s() * truth["fps"]) <= truth["fps"]


class Watch:
    """A running ``videvent watch --json``, its alerts collected as they arrive; ``plot``:
    the plot and report at its end (the tests that read them ask: 0.6 CPU-s a watch)."""

    def __init__(self, url, out, *extra, plot=False):
        self.process = subprocess.Popen(
            [sys.executable, "-m", "videvent", "watch", url, "-d", str(out), "--json", *extra,
             *([] if plot else ["--no-plot"])],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
        self.alerts: list[dict] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self):
        for line in self.process.stdout:
            alert = json.loads(line)
            alert["received"] = time.time()
            self.alerts.append(alert)

    def wait_for(self, kind, timeout, **fields):
        deadline = time.time() + timeout
        while time.time() < deadline:
            for alert in self.alerts:
                if alert["type"] == kind and all(alert.get(k) == v for k, v in fields.items()):
                    return alert
            if self.process.poll() is not None and not self._reader.is_alive():
                break
            time.sleep(0.05)
        raise AssertionError(f"no {kind} alert {fields} within {timeout} s: {self.alerts}\n"
                             f"{self.process.stderr.read() if self.process.poll() is not None else ''}")

    def finish(self, timeout=30):
        code = self.process.wait(timeout=timeout)
        self._reader.join(timeout=5)
        return code


@pytest.fixture
def server():
    started = []

    def start(port: int = 0, loop: bool = False, **clip) -> Stream:
        stream = Stream(port, loop, **clip)
        started.append(stream)
        return stream

    yield start
    for stream in started:
        stream.stop()


def test_events_are_reported_at_their_moment_in_the_stream(tmp_path, server):
    watch = Watch(server().url, tmp_path / "live", "--max-reconnects", "0")
    watch.wait_for("session_start", 30)
    start = watch.wait_for("start", 30, event=1)
    assert not (tmp_path / "live" / ".videvent-complete").exists()   # not while it watches
    # The right moment of the stream (ffmpeg starts it when the client connects): the frame
    # the person appears in. How soon after it the alert comes is a latency, measured in
    # the session's summary (and by benchmarks/), never asserted on these noisy machines.
    assert at_the_persons_entry(start)
    watch.wait_for("end", 30, event=1)
    watch.finish()
    events = json.loads((tmp_path / "live" / "events.json").read_text())
    assert len(events["events"]) == 1 and events["session"]["latency_ms_p99"] > 0


def test_a_watch_started_while_someone_stands_in_view_finds_each_later_visit_once(
        tmp_path, server):
    """The demo as a camera whose watch starts while she stands at the table (8 s in), then
    loops (coded again with a keyframe a second, at three times its pace). The warm-up learns
    her; when she leaves, the place she reveals is a ghost (the difference's outline in the
    model's picture), and once it has been one for a second and more the model is rebuilt
    without the frames that show her (``revealed``): her leaving is one event, of the kind
    "left", then each visit is one event and the empty room between visits none. Without the
    rebuild, every empty room was the event and no stay was (issue 52)."""
    _, truth = sample("person_visit")
    fps, length = truth["fps"], truth["frame_count"]
    [[first, last]] = truth["event_frames"]
    start = 8 * fps
    frames = length - start + 2 * length        # her leaving, then two whole loops
    out = tmp_path / "live"
    stream = server(loop=True, clip="person_visit", from_s=8, encode=True, pace=3)
    watch = Watch(stream.url, out, "--max-frames", str(frames))
    assert watch.finish(timeout=120) == 0
    document = json.loads((out / "events.json").read_text())
    assert document["session"]["dropped_frames"] == 0, "a loaded machine: frames were dropped"
    events = [(e["core_start_frame"], e["core_end_frame"]) for e in document["events"]]
    # What the first event was: she left, and the model was rebuilt without her.
    assert document["events"][0]["kind"] == "left", document["events"][0]
    visits = [(loop * length - start + first, loop * length - start + last) for loop in (1, 2)]
    # Her leaving (flagged until the ghost has shown for a second and a half at most), then
    # one event a visit, each within a second of it.
    leaving, *later = events
    assert leaving[0] < last - start and leaving[1] <= last - start + 4 * fps, events
    assert len(later) == len(visits), events
    for (core_start, core_end), (visit_start, visit_end) in zip(later, visits):
        assert abs(core_start - visit_start) <= fps and abs(core_end - visit_end) <= fps, events


def test_a_lost_stream_is_reported_reconnected_and_detection_goes_on(tmp_path, server):
    first = server()
    out = tmp_path / "live"
    watch = Watch(first.url, out, "--max-reconnects", "20")
    watch.wait_for("session_start", 30)
    # Mid-stream, before the person appears: a second of frames scored (and flushed).
    wait_until(lambda: (out / "scores.csv").is_file()
               and len((out / "scores.csv").read_text().splitlines()) > 15, 20,
               "a second of the stream scored")
    first.stop()          # the camera goes away
    watch.wait_for("source_lost", 15)
    server(first.port)    # and comes back where it was: the clip again, from 8 s
    watch.wait_for("source_back", 20)
    watch.wait_for("start", 30, event=1)
    watch.wait_for("end", 30, event=1)
    watch.process.send_signal(signal.SIGINT)
    assert watch.finish() == 0
    events = json.loads((tmp_path / "live" / "events.json").read_text())
    assert [e["type"] for e in events["source_events"]][:2] == ["source_lost", "source_back"]
    assert len(events["events"]) == 1


class Receiver(http.server.BaseHTTPRequestHandler):
    received: list = []

    def do_POST(self):  # noqa: N802 - the http.server API
        body = self.rfile.read(int(self.headers["Content-Length"]))
        Receiver.received.append(json.loads(body))
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args):
        pass


def test_a_webhook_gets_each_events_start_and_end(tmp_path, server):
    Receiver.received = []
    receiver = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    threading.Thread(target=receiver.serve_forever, daemon=True).start()
    stream = server()
    try:
        watch = Watch(stream.url, tmp_path / "live", "--max-reconnects", "0",
                      "--webhook", f"http://127.0.0.1:{receiver.server_port}/alerts")
        watch.wait_for("end", 40, event=1)
        watch.finish()
    finally:
        receiver.shutdown()
    kinds = [(a["type"], a.get("event")) for a in Receiver.received]
    assert ("start", 1) in kinds and ("end", 1) in kinds


def test_a_webhook_that_never_answers_does_not_stall_detection(tmp_path, server):
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(64)  # accepts connections, never answers
    stream = server()
    try:
        watch = Watch(stream.url, tmp_path / "live", "--max-reconnects", "0",
                      "--webhook", f"http://127.0.0.1:{silent.getsockname()[1]}/")
        watch.wait_for("session_start", 30)
        # Found at its moment: the webhook's stalled requests held nothing up.
        assert at_the_persons_entry(watch.wait_for("start", 30, event=1))
        watch.wait_for("end", 30, event=1)
        watch.finish()
    finally:
        silent.close()


def test_sigint_stops_cleanly_with_complete_files(tmp_path, server):
    out = tmp_path / "live"
    watch = Watch(server().url, out, "--max-reconnects", "0", plot=True)
    watch.wait_for("start", 30, event=1)
    watch.process.send_signal(signal.SIGINT)   # in the middle of the event
    assert watch.finish() == 0
    events = json.loads((out / "events.json").read_text())
    [event] = events["events"]
    assert event["core_end_frame"] >= event["core_start_frame"]
    scores = read_scores(out / "scores.csv")
    assert len(scores["frame"]) == events["frames_read"] > 0
    assert (out / "report.html").is_file() and (out / "residuals.png").is_file()
    assert [a["type"] for a in watch.alerts].count("end") == 1


@pytest.mark.parametrize("limit, frames", [(["-dt", "3s"], 45), (["--max-frames", "40"], 40)])
def test_a_duration_or_a_frame_limit_ends_a_live_watch_cleanly(tmp_path, server, limit, frames):
    out = tmp_path / "live"
    watch = Watch(server().url, out, "--max-reconnects", "3", *limit)
    assert watch.finish(timeout=60) == 0
    kinds = [alert["type"] for alert in watch.alerts]
    assert kinds[0] == "session_start" and kinds[-1] == "session_end"
    assert "source_lost" not in kinds and "source_back" not in kinds
    events = json.loads((out / "events.json").read_text())
    # None is read past the end; every frame read is scored or, on a loaded machine, counted
    # as dropped.
    scored = len(read_scores(out / "scores.csv")["frame"])
    assert events["frames_read"] == frames == scored + events["session"]["dropped_frames"]
    # Complete once it stopped, as a run's folder is: the marker written last says so.
    assert json.loads((out / ".videvent-complete").read_text())["frames_read"] == frames
    assert events["source_events"] == [] and events["session"]["reconnects"] == 0


def test_a_camera_whose_picture_freezes_is_reported_frozen_once_it_has_for_two_seconds(
        tmp_path, server):
    # The glitching camera from its keyframe at 4 s (frame 60): its picture freezes 4 s into
    # the stream, for 3 s.
    _, truth = sample("blank_frames")
    fps, first_keyframe = truth["fps"], 60
    [[frozen_first, frozen_last]] = [[frame - first_keyframe for frame in run]
                                     for run in truth["frozen_frames"]]
    out = tmp_path / "live"
    watch = Watch(server(clip="blank_frames", from_s=first_keyframe / fps).url, out,
                  "--max-reconnects", "0", "--max-frames", str(frozen_last + fps))
    assert watch.finish(timeout=60) == 0
    status = read_scores(out / "scores.csv")["status"]
    frozen = [int(frame) for frame in (status == "frozen").nonzero()[0]]
    # Frozen from the frame at which the held picture (the one before the freeze) has stood
    # still for 2 s (a frame later if the encoder coded the first repeat a grey level off),
    # to the end of the freeze; the repeats before that are a still picture, scored.
    stalled_from = frozen_first - 1 + 2 * fps
    assert frozen and stalled_from <= frozen[0] <= stalled_from + 1
    assert frozen == list(range(frozen[0], frozen_last + 1))
    events = json.loads((out / "events.json").read_text())
    assert [(p["start_frame"], p["end_frame"]) for p in events["frame_problems"]
            if p["status"] == "frozen"] == [(frozen[0], frozen_last)]


def test_show_without_a_display_is_one_line_before_anything_starts(tmp_path):
    environment = {k: v for k, v in os.environ.items()
                   if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    result = subprocess.run([sys.executable, "-m", "videvent", "watch", str(sample("walker")[0]),
                             "-d", str(tmp_path / "live"), "--show"], capture_output=True,
                            text=True, env=environment, timeout=60)
    assert result.returncode == 2
    [line] = result.stderr.strip().splitlines()
    assert "--show needs a display" in line
    assert not (tmp_path / "live").exists()


def test_a_single_camera_down_at_start_is_waited_for(tmp_path, server):
    """Frigate waits for a camera that is down at boot (issue 29): one stream that refuses its
    first connections is said once to be tried again, is tried again with backoff, and is
    watched once it answers; a file that cannot be opened is still an error at once."""
    gate = Gate(server(), refuse=3)
    try:
        watch = Watch(gate.url, tmp_path / "live", "--max-reconnects", "10", "-dt", "6s")
        watch.wait_for("session_start", 60)
        assert watch.finish(timeout=90) == 0
        stderr = watch.process.stderr.read()
        assert stderr.count("trying again") == 1, stderr
        assert gate.refused == 3
        document = json.loads((tmp_path / "live" / "events.json").read_text())
        assert document["frames_scored"] > 0
    finally:
        gate.close()
    missing = subprocess.run([sys.executable, "-m", "videvent", "watch", tmp_path / "none.mp4",
                              "-d", tmp_path / "none"], capture_output=True, text=True,
                             timeout=60, cwd=ROOT)
    assert missing.returncode == 1 and "trying again" not in missing.stderr
    assert len(missing.stderr.strip().splitlines()) == 1, missing.stderr


def test_a_camera_that_comes_up_late_is_tried_every_few_seconds_and_watched_when_it_answers(
        tmp_path, server):
    """The reconnection policy (docs/watch.md), as the camera's log sees it: a camera down at
    the start is tried again after 0.5, 1, 2 and 4 s, then every 5 s (never the 8 and 10 s of
    before), and once its stream is up (ffmpeg, started 20 s late) the next attempt watches
    it; its alerts say it down once and up once, after as long as it was away."""
    from videvent.sources.live import FIRST_BACKOFF_S, MAX_BACKOFF_S

    gate = Gate(None)                         # a camera that answers 503 while it boots
    watch = Watch(gate.url, tmp_path / "live", "--max-reconnects", "100")
    try:
        wait_until(lambda: len(gate.requests) >= 7, 120, "seven attempts to open the camera")
        gate.stream = server()                # its stream, started now
        up = time.monotonic()
        gate.opened.set()
        watch.wait_for("session_start", 60)
    finally:
        watch.process.send_signal(signal.SIGINT)
        code = watch.finish(timeout=60)
        gate.close()
    assert code == 0
    refused = [when for when, was_refused in gate.requests if was_refused]
    picked_up = next(when for when, was_refused in gate.requests if not was_refused)
    waits = [later - earlier for earlier, later in zip(refused, refused[1:])]
    policy = [min(FIRST_BACKOFF_S * 2 ** n, MAX_BACKOFF_S) for n in range(len(waits))]
    assert policy[:6] == [0.5, 1, 2, 4, 5, 5]
    # Each wait at least the policy's (less the time the camera's log took to note it), and
    # those past the cap short of the 8 and 10 s the old policy waited there.
    assert all(wait >= planned - 0.25 for wait, planned in zip(waits, policy)), waits
    assert all(wait < 2 * MAX_BACKOFF_S - 2 for wait in waits[4:]), waits
    assert picked_up - up < 2 * MAX_BACKOFF_S - 2, (picked_up - up, waits)
    changes = [alert for alert in watch.alerts if alert["type"] in ("camera_down", "camera_up")]
    assert [alert["type"] for alert in changes] == ["camera_down", "camera_up"]
    assert changes[0]["attempts"] == 1
    assert changes[1]["down_s"] >= up - refused[0] - 0.25


def test_a_camera_that_drops_now_and_then_is_never_given_up(tmp_path, server):
    """``--max-reconnects N`` gives up after N failed attempts in a row: a stream that ends
    every three seconds and is back at the first attempt each time is watched on, past N
    drops (it was given up at its second drop with N = 1, as if the attempts that worked had
    failed). The command's default N is the library's."""
    from videvent._cli.main import cli
    from videvent.sources.live import MAX_RECONNECTS

    [option] = [p for p in cli.commands["watch"].params if p.name == "max_reconnects"]
    assert option.default == MAX_RECONNECTS
    stream = server(from_s=17, encode=True)    # the walker's last 3 s, then the stream ends
    watch = Watch(stream.url, tmp_path / "live", "--max-reconnects", "1")
    try:
        wait_until(lambda: [a["type"] for a in watch.alerts].count("source_back") >= 3, 90,
                   "three drops, each back at once")
    finally:
        watch.process.send_signal(signal.SIGINT)
        code = watch.finish(timeout=60)
    assert code == 0, watch.process.stderr.read()
    [end] = [alert for alert in watch.alerts if alert["type"] == "session_end"]
    assert end["reconnects"] >= 3


# The installed command: pip puts it beside this Python.
INSTALLED_COMMAND = Path(sys.executable).with_name("videvent")


def watch_camera_at(port: int, max_reconnects: int, folder,
                    installed_command: bool = False) -> subprocess.Popen:
    """``videvent watch`` of an HTTP camera on a 127.0.0.1 port, its stderr piped;
    ``installed_command``: started as the installed ``videvent`` command, not ``python -m``."""
    command = ([str(INSTALLED_COMMAND)] if installed_command
               else [sys.executable, "-m", "videvent"])
    return subprocess.Popen(
        command + ["watch", f"http://127.0.0.1:{port}/camera",
                   "--max-reconnects", str(max_reconnects), "-d", str(folder)],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd=ROOT)


def test_ctrl_c_inside_a_single_cameras_open_ends_the_watch_at_once(tmp_path):
    """A camera that takes the connection and never answers: Ctrl-C while the watch is inside
    its open (FFmpeg's, which cannot be interrupted) ends the watch as it ends a run, exit 130
    in one line with nothing written, without waiting for the open or tearing the process
    down under it."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    listener.settimeout(60)
    try:
        process = watch_camera_at(listener.getsockname()[1], 0, tmp_path / "live")
        connection, _ = listener.accept()          # the watch is inside its open now
        try:
            process.send_signal(signal.SIGINT)
            _, stderr = process.communicate(timeout=60)
        finally:
            connection.close()
        assert process.returncode == 130, stderr
        assert stderr.splitlines() == ["videvent: stopped by SIGINT; nothing half-written "
                                       "was left"], stderr
        assert not (tmp_path / "live").exists()
    finally:
        listener.close()


def test_the_readme_says_what_a_signal_inside_a_single_cameras_open_does():
    """The Guarantees' Signals bullet said a watch exits 0 after a signal also while a camera
    is blocked in opening, where a single camera's watch stopped inside its open ends as a run
    does (the test above): the bullet says each case's exit and line."""
    guarantees = (ROOT / "docs" / "guarantees.md").read_text()
    signals = " ".join(guarantees.split("* **Signals.**", 1)[1].split("\n* **", 1)[0].split())
    assert "closes its session cleanly instead (exit 0" in signals
    assert "stopped before it could be opened" in signals     # waited for between attempts
    assert ("A watch of a single camera or stream stopped while it is inside its open" in
            signals and "exit 130 or 143, its one line `videvent: stopped by SIGINT; nothing "
            "half-written was left`" in signals), signals


def catches(pid: int, signal_number: int) -> bool:
    """Whether process ``pid`` has a handler of its own for ``signal_number`` now (the
    kernel's SigCgt mask)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("SigCgt:"):
            return bool(int(line.split()[1], 16) >> (signal_number - 1) & 1)
    return False


def test_ctrl_c_or_sigterm_at_any_moment_of_a_watch_ends_it_in_one_line(tmp_path):
    """Fifty watches of a camera that takes the connection and never answers, each sent SIGINT
    or SIGTERM at a moment drawn from 0.25 to 1.5 s after its start (some as ``python -m
    videvent``, some as the installed ``videvent`` command): from while the command line is
    loaded through start-up to inside the camera's open. Each signal sent once videvent's
    first code ran (its entry point catches SIGTERM: the kernel says so) ends the watch
    within seconds in its one line, with the exit code that line promises, and writes
    nothing. Before that, the interpreter is still starting (a few hundredths of a second on
    a quiet machine, more under this suite's load): the signal is Python's, as for any
    program, and still nothing is written."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(128)                   # the kernel takes connections; nobody answers
    moments = random.Random(29)
    handled = 0
    try:
        for batch in range(10):
            started = []
            for one in range(5):           # five at a time: the suite waits less
                stop = (signal.SIGINT, signal.SIGTERM)[one % 2]
                folder = tmp_path / f"live_{batch}_{one}"
                started.append([moments.uniform(0.25, 1.5), time.monotonic(), stop, folder,
                                watch_camera_at(listener.getsockname()[1], 100, folder,
                                                installed_command=one >= 3), None])
            for entry in sorted(started, key=lambda s: s[0] + s[1]):
                moment, start, stop, _, process, _ = entry
                time.sleep(max(0.0, start + moment - time.monotonic()))
                entry[5] = catches(process.pid, signal.SIGTERM)  # handlers only ever stay
                process.send_signal(stop)
            for moment, _, stop, folder, process, ours in started:
                _, stderr = process.communicate(timeout=60)
                lines = stderr.splitlines()
                said = (process.returncode, lines[-1] if lines else "")
                documented = said in (
                    (128 + stop, f"videvent: stopped by {stop.name}; nothing half-written was "
                                 "left"),
                    (0, "camera camera: stopped before it could be opened"))
                if ours:
                    handled += 1
                    assert documented, (moment, stderr)
                    assert "Traceback" not in stderr and len(lines) <= 2, (moment, stderr)
                else:                      # Python's own: SIGTERM's silent end, or SIGINT's
                    assert documented or process.returncode in (-stop, 1), (moment, stderr)
                assert not folder.exists()
    finally:
        listener.close()
    assert handled >= 25, handled          # most of the moments fall after the entry point


def test_ctrl_c_while_a_single_camera_is_waited_for_ends_the_watch_cleanly(tmp_path):
    """A camera that is down, waited for: Ctrl-C ends the watch at once (issue 29)."""
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))                  # bound, never listening: refused at once
    try:
        process = watch_camera_at(closed.getsockname()[1], 100, tmp_path / "live")
        first = process.stderr.readline()
        if "trying again" not in first:             # what it died of, if it died
            process.kill()
            first += process.communicate(timeout=60)[1]
        assert "trying again" in first, first
        process.send_signal(signal.SIGINT)
        _, rest = process.communicate(timeout=60)
        # Between two attempts (most of the time) the watch ends as stopped, exit 0; during
        # an attempt's open the signal ends it as it ends a run (130): either way at once,
        # in a line, and with nothing written.
        assert (process.returncode, "stopped before it could be opened" in rest) in (
            (0, True), (130, False)), first + rest
        assert "Traceback" not in rest and not (tmp_path / "live").exists()
    finally:
        closed.close()
