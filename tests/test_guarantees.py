"""The guarantees (docs/guarantees.md), driven as a user meets them: nothing of the user's is replaced,
bad names are refused before any work, nothing half-written is left (not even by a signal or
a crash), and every error is one line with its documented exit code."""

from __future__ import annotations

import errno
import importlib
import json
import re
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import run_cli, sample, wait_until
from videvent.output import ResultFolder
from videvent.output.video import VideoWriter
from videvent.sources import open_source


def one_line(result) -> str:
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("videvent: error:"), result.stderr
    return lines[0]


def contents(folder):
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file()}


def leftovers(folder):
    return [p for p in folder.rglob("*") if ".partial" in p.name]


@pytest.fixture(scope="module")
def long_clip(tmp_path_factory):
    """The walker clip four times over (1200 frames): long enough to be stopped midway."""
    path = tmp_path_factory.mktemp("long") / "long.mp4"
    with open_source(sample("walker")[0], colour=True) as source:
        frames = [frame.image for frame in source.frames()]
    writer = VideoWriter(path, frames[0].shape[1], frames[0].shape[0], 15)
    for _ in range(4):
        for image in frames:
            writer.write(image)
    writer.close()
    return path


def test_a_folder_videvent_did_not_make_is_refused_and_left_alone(tmp_path):
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "annotated.mp4").write_bytes(b"my holiday video")
    (mine / "thumbnails").mkdir()
    (mine / "thumbnails" / "cat.jpg").write_bytes(b"my cat")
    before = contents(mine)
    result = run_cli("run", sample("walker")[0], "-d", mine, "--export-video")
    assert result.returncode == 1
    assert "did not write" in one_line(result) and str(mine) in one_line(result)
    assert contents(mine) == before and not leftovers(tmp_path)
    # An empty folder is fine, and a rerun replaces what videvent made there.
    empty = tmp_path / "empty"
    empty.mkdir()
    for _ in range(2):
        result = run_cli("run", sample("walker")[0], "-d", empty, "-q")
        assert result.returncode == 0, result.stderr
    assert (empty / ".videvent-result").is_file() and not leftovers(tmp_path)


@pytest.mark.parametrize("options, message", [
    (["-d", ""], "output folder name is empty"),
    (["--export-clips", "--clip-template", "../{n}.mp4"], "without folders"),
    (["--export-clips", "--clip-template", "/tmp/{video}{n}.mp4"], "without folders"),
    (["--export-clips", "--clip-template", "{video.__class__}{n}.mp4"], "only {video} and {n}"),
    (["--export-clips", "--clip-template", "{video[0]}{n}.mp4"], "only {video} and {n}"),
    (["--export-clips", "--clip-template", "events.json"], "must contain {n}"),
    (["--export-clips", "--clip-template", "{n}events.json"], "ending in .mp4"),
    (["--export-clips", "--clip-template", "{n:q}.mp4"], "bad clip name template"),
    # Event 47's name would be '/x.mp4' (chr(47)): refused by its format, before the scan.
    (["--export-clips", "--clip-template", "{n:c}x.mp4"], "{n} takes only"),
    (["--export-video", "SOURCE"], "would overwrite the source"),
    (["--export-video", "nowhere/annotated.mp4"], "does not exist"),
    (["--export-video", "annotated.avi"], "must end in .mp4"),
])
def test_every_output_name_is_checked_before_the_scan(tmp_path, options, message):
    source = tmp_path / "clip.mp4"
    source.write_bytes(sample("walker")[0].read_bytes())
    options = [str(source) if o == "SOURCE" else o for o in options]
    result = run_cli("run", source, *options, cwd=tmp_path)
    assert result.returncode == 2 and message in one_line(result)
    assert "Scanning" not in result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["clip.mp4"]
    assert source.read_bytes() == sample("walker")[0].read_bytes()


@pytest.mark.parametrize("arguments, message", [
    ({"export_video": "SOURCE"}, "would overwrite the source"),
    ({"clips": True, "clip_template": "../../x_{n}.mp4"}, "without folders"),
    ({"clips": True, "clip_template": "{video.__class__}{n}.mp4"}, "only {video} and {n}"),
    ({"clips": True, "clip_template": "{n:c}home{n:c}me{n:c}wedding.mp4"}, "{n} takes only"),
    ({"out_dir": " "}, "output folder name is empty"),
])
def test_the_python_api_checks_every_output_name_as_the_command_line_does(tmp_path, arguments,
                                                                          message):
    from videvent import detect
    from videvent.output.names import OutputNameError

    work = tmp_path / "work" / "deep"
    work.mkdir(parents=True)
    source = work / "clip.mp4"
    source.write_bytes(sample("walker")[0].read_bytes())
    arguments = {"out_dir": work / "result", **arguments}
    if arguments.get("export_video") == "SOURCE":
        arguments["export_video"] = source
    with pytest.raises(OutputNameError, match=re.escape(message)):
        detect(source, **arguments)
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["clip.mp4", "deep", "work"]
    assert source.read_bytes() == sample("walker")[0].read_bytes()


# Templates a tester tried: a format spec can make a later event's number anything ('{n:c}':
# event 47 is '/', 1-31 control characters), or make one name huge or unformattable.
ADVERSARIAL_TEMPLATES = [
    "{n:c}x.mp4", "{n:c}home{n:c}me{n:c}wedding.mp4", "{n:\x00>3}.mp4", "{n:>4000000000}.mp4",
    "{n:x}nnotated.mp4", "{n:_^5}.mp4", "{video:/>5}{n}.mp4", "{n:/>3}.mp4", "{n:.<3}.mp4",
    "{n:#x}.mp4", "{n:e}.mp4", "{n:,}.mp4", "{n!r}.mp4", "{video!r}{n}.mp4", "{n:%}.mp4",
    "{video:\n<9}{n}.mp4", "{n}\x01.mp4", "{n:999}.mp4", "{video:.>20}{n}.mp4",
    # and ones that are fine, which must stay accepted
    "{video}.event{n:03d}.mp4", "{video}-{n}.mp4", "visit-{n}.mp4", "{n:>5d}.mp4",
    "{video:.20}_{n:0>4}.mp4",
]
ACCEPTED = {"{n:_^5}.mp4", "{video}.event{n:03d}.mp4", "{video}-{n}.mp4", "visit-{n}.mp4",
            "{n:>5d}.mp4", "{video:.20}_{n:0>4}.mp4"}


def plain_file_name(name: str) -> bool:
    """A name that stays one file of the result folder, and not one of its results."""
    from videvent.output.names import RESULT_FILES

    return (name.endswith(".mp4") and not name.startswith(".") and "/" not in name
            and "\\" not in name and not any(ord(c) < 32 or ord(c) == 127 for c in name)
            and name not in RESULT_FILES and len(name.encode()) <= 255)


@pytest.mark.parametrize("template", ADVERSARIAL_TEMPLATES)
def test_a_clip_template_is_refused_or_gives_a_plain_file_name_for_every_event(template):
    from videvent.output.names import check_clip_template

    try:
        check_clip_template(template)
    except ValueError as error:
        assert template not in ACCEPTED, error
        assert str(error).startswith("bad clip name template") and "\n" not in str(error)
        return
    assert template in ACCEPTED, f"{template!r} accepted"
    for n in range(1, 100_001):
        name = template.format(video="clip", n=n)
        assert plain_file_name(name), (n, name)


@pytest.mark.parametrize("video", ["/", "a/b", "..", "x\x00", "x\ny", "annotated"])
def test_a_clip_name_is_checked_again_where_the_clip_is_written(video):
    # A source's own name can be anything (images in '/' are named '/'): the name of each
    # clip is checked where it is made, and refused rather than written outside the folder.
    from videvent.output.names import OutputNameError, clip_name

    # No accepted template gives a result's name: one without {n} stands in for it here.
    template = "{video}.mp4" if video == "annotated" else "{video}{n}.mp4"
    with pytest.raises(OutputNameError, match="cannot be used"):
        clip_name(template, video, 1)
    assert clip_name("{video}.event{n:03d}.mp4", "walker", 7) == "walker.event007.mp4"


def test_a_failed_move_into_place_leaves_the_earlier_folder_whole(tmp_path, monkeypatch):
    destination = tmp_path / "result"
    with ResultFolder(destination) as folder:
        folder.path("events.json").write_text("old")
        folder.path("clip.event001.mp4").write_text("old clip")
    before = contents(destination)
    real_rename = os.rename

    def rename(source, target):
        if os.fspath(source) == os.fspath(folder.staging):
            raise OSError(28, "No space left on device")
        return real_rename(source, target)

    monkeypatch.setattr(os, "rename", rename)
    folder = ResultFolder(destination, replaces=("events.json",))
    folder.path("events.json").write_text("new")
    with pytest.raises(ValueError, match="No space left on device.*as it was"):
        folder.commit(("events.json",))
    assert contents(destination) == before and not leftovers(tmp_path)
    monkeypatch.setattr(os, "rename", real_rename)
    # And a move that works: all new, the earlier clip kept beside it.
    with ResultFolder(destination, replaces=("events.json",)) as folder:
        folder.path("events.json").write_text("new")
    assert (destination / "events.json").read_text() == "new"
    assert (destination / "clip.event001.mp4").read_text() == "old clip"
    assert not leftovers(tmp_path)


def test_a_failed_move_of_the_earlier_files_kept_puts_the_earlier_folder_back(tmp_path,
                                                                              monkeypatch):
    """The earlier run's clips are moved across into the new folder after the swap; should
    one fail (the second, so the first must go back), the earlier folder is put back whole
    and the message says so (issue 51: it was left beside the new one as -old.partial)."""
    destination = tmp_path / "result"
    with ResultFolder(destination) as folder:
        folder.path("events.json").write_text("old")
        folder.path("clip.event001.mp4").write_text("old clip 1")
        folder.path("clip.event002.mp4").write_text("old clip 2")
    before = contents(destination)
    real_rename, real_replace = os.rename, os.replace
    moved = []

    def move(real):
        def moving(source, target):
            if Path(target).parent == destination and Path(target).name.startswith("clip."):
                moved.append(target)
                if len(moved) == 2:
                    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), os.fspath(source),
                                  None, os.fspath(target))
            return real(source, target)
        return moving

    monkeypatch.setattr(os, "rename", move(real_rename))
    monkeypatch.setattr(os, "replace", move(real_replace))
    folder = ResultFolder(destination, replaces=("events.json",))
    folder.path("events.json").write_text("new")
    with pytest.raises(ValueError, match=r"cannot replace the results in '.*result': "
                                         r"'.*result/clip\.event00[12]\.mp4': No space left on "
                                         r"device; it is as it was"):
        folder.commit(("events.json",))
    monkeypatch.undo()
    assert contents(destination) == before and not leftovers(tmp_path)
    assert [entry.name for entry in tmp_path.iterdir()] == ["result"]


def stop_midway(command, started, cwd=None):
    """Start ``command``, wait until ``started()``, send SIGTERM; its exit code and stderr."""
    process = subprocess.Popen([sys.executable, "-m", "videvent", *map(str, command)],
                               cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               text=True, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while not started() and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert process.poll() is None, "finished before it could be stopped"
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=60)
    finally:
        try:
            os.killpg(process.pid, signal.SIGKILL)  # what a batch's cluster left, if anything
        except ProcessLookupError:
            pass
    return process.returncode, stderr


def test_sigterm_stops_run_and_export_cleanly_and_a_crash_is_cleaned_up(tmp_path, long_clip):
    out = tmp_path / "result"
    assert run_cli("run", long_clip, "-d", out, "-q", "--start-time", "1000").returncode == 0
    before = contents(out)
    # run: stopped while it scans, the earlier results stay as they were.
    code, stderr = stop_midway(["run", long_clip, "-d", out, "--export-video"],
                               lambda: any(p.suffix == ".partial" for p in tmp_path.iterdir()))
    assert code == 143, stderr   # once, under a full suite's load, -6 (SIGABRT): stderr says why
    assert stderr.strip().splitlines()[-1].startswith("videvent: stopped by SIGTERM")
    assert contents(out) == before and not leftovers(tmp_path)
    # export: stopped while it encodes, no half-written video.
    code, stderr = stop_midway(["export", out], lambda: bool(leftovers(out)))
    assert code == 143, stderr
    assert contents(out) == before and not leftovers(tmp_path)
    # A run killed outright leaves its staging folder: the next run removes it, and only it.
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True).stdout.strip()
    crashed = tmp_path / f".result.{dead}-x1y2.partial"
    crashed.mkdir()
    (crashed / ".videvent-result").write_text((out / ".videvent-result").read_text())
    (out / f".annotated.mp4.{dead}.partial").write_bytes(b"half a video")
    not_ours = tmp_path / f".result.{dead}-mine.partial"
    not_ours.mkdir()
    assert run_cli("run", sample("walker")[0], "-d", out, "-q").returncode == 0
    assert run_cli("export", out, "-q", "--no-video").returncode == 0
    assert leftovers(tmp_path) == [not_ours]


def test_the_staging_folder_of_a_killed_process_not_yet_reaped_is_removed(tmp_path):
    # Killed with its whole process group, a batch's worker can stay a zombie for a while:
    # it writes nothing more, so its staging folder is a leftover like any other.
    out = tmp_path / "result"
    assert run_cli("run", sample("walker")[0], "-d", out, "-q", "--no-plot").returncode == 0
    zombie = subprocess.Popen(["sleep", "60"])
    zombie.kill()
    try:
        deadline = time.monotonic() + 10
        while (Path(f"/proc/{zombie.pid}/stat").read_text().rpartition(")")[2].split()[0]
               != "Z" and time.monotonic() < deadline):
            time.sleep(0.01)
        crashed = tmp_path / f".result.{zombie.pid}-z1.partial"
        crashed.mkdir()
        (crashed / ".videvent-result").write_text((out / ".videvent-result").read_text())
        assert run_cli("run", sample("walker")[0], "-d", out, "-q",
                       "--no-plot").returncode == 0
        assert not crashed.exists()
    finally:
        zombie.wait()


def test_sigterm_stops_a_batch_and_leaves_no_staging_folder(tmp_path, long_clip):
    pytest.importorskip("distributed")
    clips = tmp_path / "clips"
    clips.mkdir()
    (clips / "long.mp4").write_bytes(long_clip.read_bytes())
    out = tmp_path / "out"
    code, stderr = stop_midway(["batch", clips, "--out", out, "--workers", "1"],
                               lambda: out.is_dir() and bool(leftovers(out)))
    assert code == 143, stderr
    assert stderr.strip().splitlines()[-1].startswith("videvent: stopped by SIGTERM")
    assert not leftovers(out)


def test_a_numbered_pattern_with_a_gap_is_read_whole_or_the_gap_is_named(tmp_path):
    import cv2
    import numpy as np

    frames = tmp_path / "frames"
    frames.mkdir()
    rng = np.random.default_rng(0)
    for number in range(40):
        if number != 20:
            cv2.imwrite(str(frames / f"b{number:05d}.png"),
                        rng.integers(0, 255, (48, 64), dtype=np.uint8))
    pattern = frames / "b%05d.png"
    result = run_cli("run", pattern, "-d", tmp_path / "out", "-q", "--no-plot")
    assert result.returncode == 0, result.stderr
    document = json.loads((tmp_path / "out" / "events.json").read_text())
    assert document["frames_read"] == 39
    result = run_cli("run", pattern, "-d", tmp_path / "forced", "--backend", "opencv")
    assert result.returncode == 1 and "no file for number 20" in one_line(result)


def test_a_file_name_that_is_not_utf8_runs_exports_plots_and_batches(tmp_path):
    pytest.importorskip("distributed")
    archive = tmp_path / "archive"
    archive.mkdir()
    name = os.fsdecode(b"caf\xe9 \xff.mp4")  # the bytes of a Latin-1 name, and worse
    (archive / name).write_bytes(sample("walker")[0].read_bytes())
    result = run_cli("run", archive / name, "--export-video", "--export-clips", "-q")
    assert result.returncode == 0, result.stderr  # was a segfault in cv2.imwrite
    out = archive / os.fsdecode(b"caf\xe9 \xff.videvent")
    assert (out / "thumbnails" / "event001.jpg").read_bytes()[:2] == b"\xff\xd8"
    assert (out / "residuals.png").is_file() and "caf\ufffd" in (out / "report.html").read_text()
    # The report links the clip by the file's own bytes.
    assert "href='caf%E9%20%FF.event001.mp4'" in (out / "report.html").read_text()
    result = run_cli("batch", archive, "--out", tmp_path / "batch", "--workers", "1", "-q")
    assert result.returncode == 0, result.stderr
    index = (tmp_path / "batch" / "index.csv").read_bytes()
    assert b"caf\xe9 \xff.mp4,ok,1," in index  # the file's own bytes, to open it from there


@pytest.mark.parametrize("url", ["notaurl", "file:///etc/passwd", "ftp://host/x", "http://"])
def test_a_webhook_that_is_not_an_http_url_is_refused_up_front(tmp_path, url):
    result = run_cli("watch", sample("walker")[0], "-d", tmp_path / "live", "--webhook", url)
    assert result.returncode == 2 and "http:// or https://" in one_line(result)
    assert not (tmp_path / "live").exists()


def test_the_watch_api_checks_its_options_before_making_a_folder(tmp_path):
    """Issue 51: ``videvent.watch(...)`` made its result folder, then refused a ``file:``
    webhook (and an unknown alert option was a TypeError after it). Each option the command
    line checks up front is checked first by the API too: one-line ValueError, no folder,
    neither the one asked for nor the default one beside the file."""
    import videvent

    walker = tmp_path / "walker.mp4"
    shutil.copy(sample("walker")[0], walker)
    for options, said in (({"alerts": {"webhook": "file:///some/dir/x"}}, "http:// or https://"),
                          ({"alerts": {"webhook": "ftp://host/x"}}, "http:// or https://"),
                          ({"alerts": {"webhok": "http://127.0.0.1:1/"}}, "'webhok'"),
                          ({"max_frames": 0}, "max_frames must be"),
                          ({"max_reconnects": -1}, "max_reconnects must be")):
        for out_dir in (tmp_path / "live", None):
            with pytest.raises(ValueError, match=re.escape(said)) as refused:
                videvent.watch(str(walker), out_dir=out_dir, **options)
            assert "\n" not in str(refused.value)
            assert sorted(path.name for path in tmp_path.iterdir()) == ["walker.mp4"], options


def test_a_config_file_webhook_or_dashboard_address_is_checked_up_front(tmp_path):
    walker = sample("walker")[0]
    for line, said in (('webhook = "ftp://host/x"', "http:// or https://"),
                       ('serve = "localhost:http"', "--serve: expected [HOST:]PORT"),
                       ('mqtt = "localhost:0"', "--mqtt: 'localhost:0': the port must be"),
                       (f'[cameras.a]\nsource = "{walker}"\nmqtt = "localhost"',
                        "'mqtt' is the whole watch's, not one camera's")):
        config = tmp_path / "watch.toml"
        config.write_text(line + "\n")
        result = run_cli("watch", *([] if "cameras" in line else [walker]), "-c", config,
                         "-d", tmp_path / "live")
        assert result.returncode == 2 and said in one_line(result), result.stderr
        assert not (tmp_path / "live").exists()


def test_the_alert_thread_survives_any_receiver_and_never_follows_a_redirect_away(tmp_path):
    import socket
    import threading
    from http.server import BaseHTTPRequestHandler, HTTPServer

    from videvent.alerts import AlertSinks

    received = []

    class Receiver(BaseHTTPRequestHandler):
        def do_POST(self):
            body = self.rfile.read(int(self.headers["Content-Length"]))
            if self.path == "/away":  # send the alert to another host (127.0.0.2)
                self.send_response(303)
                self.send_header("Location", f"http://127.0.0.2:{self.server.server_port}/x")
                self.end_headers()
                return
            received.append((self.headers["Host"], json.loads(body)["n"]))
            self.send_response(200)
            self.end_headers()

        def do_GET(self):  # where urllib's redirects of a POST would go
            received.append((self.headers["Host"], None))
            self.send_response(200)
            self.end_headers()

        def log_message(self, *_):
            pass

    good = HTTPServer(("0.0.0.0", 0), Receiver)
    threading.Thread(target=good.serve_forever, daemon=True).start()
    garbage = socket.socket()  # answers every request with something that is not HTTP
    garbage.bind(("127.0.0.1", 0))
    garbage.listen()

    def answer_garbage():
        while True:
            connection, _ = garbage.accept()
            connection.recv(4096)
            connection.sendall(b"SSH-2.0-OpenSSH_9.2\r\n\x00\xff garbage\r\n")
            connection.close()

    threading.Thread(target=answer_garbage, daemon=True).start()
    port = good.server_port
    for n, url in enumerate([f"http://127.0.0.1:{garbage.getsockname()[1]}/",
                             f"http://127.0.0.1:{port}/away", f"http://127.0.0.1:{port}/ok"]):
        sinks = AlertSinks(tmp_path / f"alerts{n}.jsonl", webhook=url)
        for _ in range(2):
            sinks.send({"type": "start", "n": n})
        sinks.close()
        assert sinks.delivered + sinks.failed == 2 and (sinks.failed == 2) == (n < 2)
    good.shutdown()
    assert received == [(f"127.0.0.1:{port}", 2)] * 2  # nothing reached 127.0.0.2


def test_a_scheduler_address_that_is_not_dask_times_out_with_one_line(tmp_path, monkeypatch):
    pytest.importorskip("distributed")
    import importlib
    import socket

    from videvent.settings import Settings

    batch = importlib.import_module("videvent.batch")  # the module, not videvent.batch()

    silent = socket.socket()  # accepts connections, never answers
    silent.bind(("127.0.0.1", 0))
    silent.listen()
    monkeypatch.setattr(batch, "CONNECT_TIMEOUT_S", 2.0)
    with pytest.raises(ValueError, match="cannot reach the Dask scheduler.*no answer within 3 s"):
        batch.run_batch(batch.find_videos([str(sample("walker")[0])]), tmp_path / "out",
                        Settings(), scheduler=f"tcp://127.0.0.1:{silent.getsockname()[1]}")
    silent.close()


def test_batch_without_dask_says_how_to_install_it(tmp_path):
    hidden = tmp_path / "no-dask" / "distributed"
    hidden.mkdir(parents=True)
    (hidden / "__init__.py").write_text("raise ModuleNotFoundError(\"No module named "
                                        "'distributed'\", name='distributed')\n")
    result = subprocess.run([sys.executable, "-m", "videvent", "batch", str(sample("walker")[0])],
                            cwd=tmp_path, capture_output=True, text=True, timeout=120,
                            env={**os.environ, "PYTHONPATH": str(hidden.parent)})
    assert result.returncode == 1 and "pip install 'videvent[batch]'" in one_line(result)


def test_export_refuses_a_replaced_source_and_a_live_one(tmp_path):
    import numpy as np

    clip = tmp_path / "clip.mp4"
    clip.write_bytes(sample("walker")[0].read_bytes())
    out = tmp_path / "result"
    assert run_cli("run", clip, "-d", out, "-q").returncode == 0
    before = contents(out)
    # Another video with as many frames, of the same size: the walker mirrored.
    with open_source(sample("walker")[0], colour=True) as source:
        frames = [np.ascontiguousarray(frame.image[:, ::-1]) for frame in source.frames()]
    writer = VideoWriter(clip, frames[0].shape[1], frames[0].shape[0], 15)
    for image in frames:
        writer.write(image)
    writer.close()
    result = run_cli("export", out)
    assert result.returncode == 1 and "source has changed" in one_line(result)
    assert contents(out) == before and not leftovers(tmp_path)
    # A watch session of a stream: its source cannot be read again.
    document = json.loads((out / "events.json").read_text())
    document["source"].update(uri="rtsp://127.0.0.1:9/cam", live=True)
    (out / "events.json").write_text(json.dumps(document))
    result = run_cli("export", out)
    assert result.returncode == 1 and "live source" in one_line(result)


@pytest.mark.parametrize("height", [16, 5])
def test_export_video_of_frames_under_24_pixels_high(tmp_path, height):
    import numpy as np

    clip = tmp_path / "strip.mp4"
    writer = VideoWriter(clip, 64, height, 15)
    for index in range(60):
        image = np.full((height, 64, 3), 90, np.uint8)
        image[:, index:index + 4] = 250
        writer.write(image)
    writer.close()
    result = run_cli("run", clip, "-d", tmp_path / "out", "--export-video", "-q")
    assert result.returncode == 0, result.stderr
    with open_source(tmp_path / "out" / "annotated.mp4") as annotated:
        assert annotated.frame_count == 60 and annotated.height == height + height % 2


@pytest.mark.parametrize("text, message", [
    ("rank = 3.7\n", "rank must be a whole number, got 3.7"),
    ('threshold = 9\n[run]\nmethod = "ancp"\n', "'threshold' is outside the [run] table"),
])
def test_a_config_value_is_never_cut_or_dropped(tmp_path, text, message):
    config = tmp_path / "videvent.toml"
    config.write_text(text)
    result = run_cli("run", sample("walker")[0], "-c", config, "-d", tmp_path / "out")
    assert result.returncode == 2 and message in one_line(result)
    assert not (tmp_path / "out").exists()


def test_names_and_values_from_files_are_never_formulas_or_markup(tmp_path):
    import csv

    from videvent.batch import Video, VideoOutcome, index_csv
    from videvent.output.report import write_report

    outcome = VideoOutcome(Video("=HYPERLINK(\"http://x\")-cam.mp4", "=cam"), error="@bad")
    [row] = list(csv.DictReader(index_csv([outcome]).splitlines()))
    assert row["video"] == "'=HYPERLINK(\"http://x\")-cam.mp4" and row["error"] == "'@bad"
    out = tmp_path / "result"
    assert run_cli("run", sample("walker")[0], "-d", out, "-q", "--no-plot").returncode == 0
    document = json.loads((out / "events.json").read_text())
    document["events"][0]["start_timecode"] = "<script>alert(1)</script>"
    (out / "events.json").write_text(json.dumps(document))
    page = write_report(out).read_text()
    assert "<script>alert" not in page and "&lt;script&gt;alert(1)" in page


# What the line says of a setting that cannot work: the setting and its usable range (the
# walker clip is 320x240; its working picture 160x120).
USABLE = {"--blocks": "--blocks 10000 is more than the 160x120 working picture has pixels "
                      "across: usable here from 1 to 160",
          "-df": "-df/--downscale-factor 10000 leaves a 1x1 picture of the 320x240 source: "
                 "usable here from 1 to 20",
          "-w": "'--window': 2 is not in the range x>=5"}


@pytest.mark.parametrize("options", [["--absorb-after", "0"], ["-t", "nan"],
                                     ["-st", "10s", "-et", "5s"], ["--blocks", "10000"],
                                     ["-df", "10000"],
                                     ["-w", "2", "--rank", "1", "--projection-dim", "1"]])
@pytest.mark.parametrize("command", ["run", "watch", "batch"])
def test_settings_found_wrong_once_the_source_is_open_are_usage_errors(tmp_path, options,
                                                                        command):
    result = run_cli(command, sample("walker")[0], "-d", tmp_path / "out", "-q", *options)
    assert result.returncode == 2, result.stderr
    assert "internal error" not in one_line(result)
    assert "static_after" not in result.stderr           # named as the user gave it
    if "--absorb-after" in options:
        assert "absorb-after must be at least a frame long" in result.stderr
    if options[0] in USABLE:
        assert USABLE[options[0]] in result.stderr
    # Refused before anything is written: watch and batch made their folder first.
    assert not (tmp_path / "out").exists() and not leftovers(tmp_path)


def _file_size_limit(size: int):
    """A child whose writes fail past ``size`` bytes with EFBIG, as on a full disk (Python
    ignores SIGXFSZ, so the write fails rather than the process being killed)."""
    import resource

    return lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))


@pytest.mark.parametrize("command, options, named", [
    (["run"], ["--export-video"], "cannot write the results into '{out}'"),
    (["run"], [], "cannot write the results into '{out}'"),
])
def test_a_full_disk_is_one_line_naming_the_path(tmp_path, command, options, named):
    out = tmp_path / "out"
    result = subprocess.run([sys.executable, "-m", "videvent", *command, sample("walker")[0],
                             "-d", out, "-q", *options], capture_output=True, text=True,
                            preexec_fn=_file_size_limit(200_000 if options else 16_000),
                            timeout=300)
    assert result.returncode == 1
    line = one_line(result)
    assert named.format(out=out) in line and "internal error" not in line, line
    assert not leftovers(tmp_path)
    if command == ["run"]:
        assert not out.exists()


# ``videvent export`` in a child whose rename of the finished annotated video into place
# fails as on a full disk (a rename can need a new block for the folder's entries): the
# failure after every frame and box was written, which a file size limit cannot aim at (the
# encoder's output size varies from run to run by a few hundred bytes).
_EXPORT_WHOSE_LAST_RENAME_FAILS = """
import errno, os, sys
real_replace = os.replace
def replace(source, target):
    if os.path.basename(target) == "annotated.mp4":
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), os.fspath(target))
    return real_replace(source, target)
os.replace = replace
from videvent._cli.main import main
sys.argv = ["videvent", "export", *sys.argv[1:]]
main()
"""


def test_export_on_a_full_disk_leaves_nothing_partial(tmp_path):
    """``videvent export`` whose writes fail (a file size limit, as a full disk) early in
    the pass and midway, or whose finished video cannot be put in place: one line naming
    the annotated video, exit 1, no temporary file left (issue 28 found
    ``.regions.csv.PID.partial``), no annotated video nor boxes, and the run's own files as
    they were."""
    results = tmp_path / "results"
    assert run_cli("run", sample("walker")[0], "-d", results, "-q", "--no-plot").returncode == 0
    whole = tmp_path / "whole"
    shutil.copytree(results, whole)
    assert run_cli("export", whole, "-q", "--export-clips").returncode == 0
    video_size = (whole / "annotated.mp4").stat().st_size
    before = contents(results)
    for failure in (20_000, video_size // 2, "rename"):
        folder = tmp_path / f"failed_at_{failure}"
        shutil.copytree(results, folder)
        if failure == "rename":
            command = [sys.executable, "-c", _EXPORT_WHOSE_LAST_RENAME_FAILS]
            limit = None
        else:
            command = [sys.executable, "-m", "videvent", "export"]
            limit = _file_size_limit(failure)
        result = subprocess.run([*command, folder, "-q", "--export-clips"], capture_output=True,
                                text=True, preexec_fn=limit, timeout=300)
        assert result.returncode == 1, (failure, result.stderr)
        line = one_line(result)
        assert f"'{folder / 'annotated.mp4'}'" in line and "internal error" not in line, line
        assert not leftovers(folder), (failure, leftovers(folder))
        after = contents(folder)
        # An event's clip is finished at the event's end, before a failure later on: then it
        # is there whole (a later export replaces it), and nothing else is new.
        assert set(after) - set(before) <= {"walker.event001.mp4"}, (failure, sorted(after))
        assert {name: after[name] for name in before} == before
        if "walker.event001.mp4" in after:
            assert _frame_count(folder / "walker.event001.mp4") == _frame_count(
                whole / "walker.event001.mp4")


def _frame_count(video) -> int:
    with open_source(video) as source:
        return sum(1 for _ in source.frames())


@pytest.mark.parametrize("umask", [0o022, 0o077])
def test_result_folders_of_run_and_batch_follow_the_umask(tmp_path, umask):
    """Every folder and file ``run`` and ``batch`` make has the mode the umask leaves, as a
    watch's always had: with 022 a web server or a colleague can follow the links of
    ``batch_report.html``, with 077 nobody else can read them."""
    pytest.importorskip("distributed")
    clips = tmp_path / "clips"
    clips.mkdir()
    shutil.copy(sample("walker")[0], clips / "walker.mp4")
    for command in (["run", clips / "walker.mp4", "-d", tmp_path / "run"],
                    ["batch", clips, "--out", tmp_path / "batch", "--workers", "1"]):
        result = subprocess.run([sys.executable, "-m", "videvent", *command, "-q"],
                                capture_output=True, text=True, timeout=300,
                                preexec_fn=lambda: os.umask(umask))
        assert result.returncode == 0, result.stderr
    made = [tmp_path / "run", tmp_path / "batch"]
    made += [path for folder in made for path in folder.rglob("*")]
    assert len(made) > 20 and (tmp_path / "batch" / "clips" / "walker.videvent" / "report.html") in made
    wrong = {os.fspath(path.relative_to(tmp_path)): oct(path.stat().st_mode & 0o777)
             for path in made
             if path.stat().st_mode & 0o777 != (0o777 if path.is_dir() else 0o666) & ~umask}
    assert not wrong


def test_a_full_disk_never_ends_a_watch_its_events_are_all_closed(tmp_path):
    """Live, what cannot be written (the event's clip and thumbnail, the plot) is skipped and
    said once per kind; the watch goes on to its end, exit 0, every event it opened closed
    in events.json and the alerts, and nothing half-written is left."""
    out = tmp_path / "out"
    result = subprocess.run([sys.executable, "-m", "videvent", "watch", sample("walker")[0],
                             "-d", out, "-q"], capture_output=True, text=True,
                            preexec_fn=_file_size_limit(16_000), timeout=300,
                            env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    assert result.returncode == 0, result.stderr
    lines = result.stderr.strip().splitlines()
    assert lines and all(line.startswith("videvent: warning: cannot write") for line in lines)
    assert len(lines) == len(set(lines)) <= 3 and "Traceback" not in result.stderr
    events = json.loads((out / "events.json").read_text())["events"]
    assert len(events) == 1 and events[0]["end_frame"] > events[0]["start_frame"]
    alerts = [json.loads(line)["type"] for line in (out / "alerts.jsonl").read_text().splitlines()]
    assert alerts.count("start") == alerts.count("end") == 1 and alerts[-1] == "session_end"
    assert not leftovers(tmp_path) and not list(out.glob("*.mp4"))
    assert not list((out / "thumbnails").iterdir())         # no half JPEG


@pytest.mark.parametrize("damage", ["{broken", "[1, 2]", ""])
def test_a_damaged_events_json_is_one_line_naming_it(tmp_path, damage):
    out = tmp_path / "out"
    assert run_cli("run", sample("walker")[0], "-d", out, "-q", "--no-plot").returncode == 0
    (out / "events.json").write_text(damage)
    for command in ("export", "report"):
        result = run_cli(command, out)
        assert result.returncode == 1
        assert str(out / "events.json") in one_line(result), result.stderr


@pytest.fixture(scope="module")
def compared_result(tmp_path_factory):
    """A result folder with every file ``report`` reads (compare.csv too)."""
    out = tmp_path_factory.mktemp("report") / "out"
    assert run_cli("run", sample("walker")[0], "-d", out, "-q", "--compare",
                   "pca").returncode == 0
    return out


def _events_with(change):
    def damage(out):
        document = json.loads((out / "events.json").read_text())
        change(document)
        (out / "events.json").write_text(json.dumps(document))
    return damage


def _scores_with(column, text, line=5):
    def damage(out):
        rows = (out / "scores.csv").read_text().splitlines()
        header = rows[0].split(",")
        cells = rows[line - 1].split(",")
        cells[header.index(column)] = text
        rows[line - 1] = ",".join(cells)
        (out / "scores.csv").write_text("\n".join(rows) + "\n")
    return damage


@pytest.mark.parametrize("damage, named, message", [
    (lambda out: (out / "events.json").write_text('{"format_version": 1}'), "events.json",
     "has no 'frames_read'"),
    (_events_with(lambda d: d.pop("source")), "events.json", "'source' is not a table"),
    (_events_with(lambda d: d["events"][0].update(number="1")), "events.json",
     "event 1's 'number' is not a whole number"),
    (_events_with(lambda d: d["settings"].update(threshold="high")), "events.json",
     "'settings''s 'threshold' is not a number"),
    (_events_with(lambda d: d.update(events={})), "events.json", "'events' is not a list"),
    (_events_with(lambda d: d["events"][0].pop("peak_score")), "events.json",
     "event 1 has no 'peak_score'"),
    (_scores_with("score", "high"), "scores.csv", "line 5: score is not a number, got 'high'"),
    (_scores_with("frame", "1.5"), "scores.csv", "line 5: frame is not a whole number"),
    (lambda out: (out / "scores.csv").write_bytes(b"\xff\xfe" * 50), "scores.csv",
     "not UTF-8 text"),
    (lambda out: (out / "compare.csv").write_text("frame,residual_pca\n1,2\n"), "compare.csv",
     "has 1 rows"),
    (lambda out: (out / "compare.csv").write_text("x,y\n1,2\n"), "compare.csv",
     "not a videvent compare file"),
])
def test_report_on_damaged_files_is_one_line_naming_the_file_and_rewrites_nothing(
        tmp_path, compared_result, damage, named, message):
    out = tmp_path / "out"
    shutil.copytree(compared_result, out)
    damage(out)
    before = contents(out)
    result = run_cli("report", out)
    assert result.returncode == 1, result.stderr
    line = one_line(result)
    assert str(out / named) in line and message in line, line
    assert contents(out) == before and not leftovers(tmp_path)


# ``videvent report`` in a child whose move of the finished page into place fails as on a full
# disk: os.replace's error names the temporary file and the target, as the kernel's does.
_REPORT_WHOSE_LAST_RENAME_FAILS = """
import errno, os, sys
real_replace = os.replace
def replace(source, target):
    if os.path.basename(target) == "report.html":
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), os.fspath(source), None,
                      os.fspath(target))
    return real_replace(source, target)
os.replace = replace
from videvent._cli.main import main
sys.argv = ["videvent", "report", *sys.argv[1:]]
main()
"""


@pytest.mark.parametrize("failure, named", [(40_000, "residuals.png"),
                                            (130_000, "report.html"),
                                            ("rename", "report.html")])
def test_report_on_a_full_disk_is_one_line_naming_the_file(tmp_path, compared_result, failure,
                                                           named):
    """``videvent report`` whose plot (a file size limit below its size, as a full disk), page
    (a limit between the two) or move of the page into place fails: one line naming the file
    it could not write (issue 51 found a bare '[Errno 28] No space left on device'), exit 1,
    no temporary file left, and the page as it was."""
    out = tmp_path / "out"
    shutil.copytree(compared_result, out)
    before = contents(out)
    if failure == "rename":
        command, limit = [sys.executable, "-c", _REPORT_WHOSE_LAST_RENAME_FAILS], None
    else:
        command, limit = [sys.executable, "-m", "videvent", "report"], _file_size_limit(failure)
    result = subprocess.run([*command, out], capture_output=True, text=True, preexec_fn=limit,
                            timeout=300, env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    assert result.returncode == 1, result.stderr
    line = one_line(result)
    assert f"cannot write '{out / named}': " in line and "internal error" not in line, line
    assert "Errno" not in line and ".partial" not in line, line
    assert not leftovers(tmp_path)
    after = contents(out)
    # The plot may be drawn anew before the page fails; every other file is as it was.
    if named == "report.html":
        after.pop("residuals.png"), before.pop("residuals.png")
    assert after == before


def test_a_missing_or_unwritable_place_is_one_line_naming_it(tmp_path):
    (tmp_path / "a_file").write_text("")
    for command in ("run", "watch"):
        result = run_cli(command, sample("walker")[0], "-d", tmp_path / "a_file" / "out", "-q")
        assert result.returncode == 1
        assert str(tmp_path / "a_file") in one_line(result)
    result = run_cli("run", sample("walker")[0], "-q", "--export-video",
                     tmp_path / "no_such_folder" / "a.mp4")
    assert result.returncode == 2 and "no_such_folder" in one_line(result)


def test_batch_rerun_over_its_own_folder_does_not_scan_its_results(tmp_path):
    clip = tmp_path / "walker.mp4"
    clip.write_bytes(sample("walker")[0].read_bytes())
    for _ in range(2):
        result = run_cli("batch", ".", "--workers", "1", "-q", cwd=tmp_path)
        assert result.returncode == 0, result.stderr
        # The thumbnails folder of the first run is a folder of images: a video to a batch
        # that does not know it for its own.
        rows = (tmp_path / "videvent-batch" / "index.csv").read_text().splitlines()
        assert [row.split(",")[0] for row in rows[1:]] == ["walker.mp4"], rows
    # Nor a plain result folder of `run` with its exports in it.
    assert run_cli("run", clip, "-q", "--export-video", "--export-clips").returncode == 0
    result = run_cli("batch", ".", "--workers", "1", "-q", "-d", "again", cwd=tmp_path)
    rows = (tmp_path / "again" / "index.csv").read_text().splitlines()
    assert [row.split(",")[0] for row in rows[1:]] == ["walker.mp4"], rows


def _running(pid: int) -> bool:
    try:
        state = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


def test_an_on_event_hook_does_not_outlive_watch(tmp_path):
    pids = tmp_path / "pids"
    # The hook leaves a child behind, and the last one is still running when watch stops.
    hook = f"sleep 120 & echo $! >> {pids}; echo $$ >> {pids}; sleep 120"
    result = run_cli("watch", sample("walker")[0], "-d", tmp_path / "live", "-q",
                     "--on-event", hook)
    assert result.returncode == 0, result.stderr
    started = [int(line) for line in pids.read_text().split()]
    assert started
    assert not [pid for pid in started if _running(pid)]


def test_ffmpeg_and_opencv_log_lines_never_reach_stderr(tmp_path):
    # moov atom not found: an MP4 whose index is missing.
    broken = tmp_path / "broken.mp4"
    broken.write_bytes(sample("walker")[0].read_bytes()[:20_000])
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    port = closed.getsockname()[1]
    closed.close()  # nothing listens there: FFmpeg's tcp layer logs "Connection refused"
    for command in (["run", broken], ["run", broken, "-q"],
                    ["run", broken, "--backend", "opencv"],
                    ["watch", f"rtsp://127.0.0.1:{port}/x", "--max-reconnects", "0"],
                    ["watch", f"http://127.0.0.1:{port}/x", "--max-reconnects", "0", "-q"],
                    ["watch", "7", "--max-reconnects", "0"]):  # a camera probe: no /dev/video7
        result = run_cli(*command, "-d", tmp_path / "out")
        assert result.returncode == 1
        assert "cannot open" in one_line(result)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("stop, gives_up", [(signal.SIGINT, False), (signal.SIGTERM, False),
                                             (signal.SIGINT, True)])
def test_a_signal_ends_a_run_whose_source_blocks_in_opening(tmp_path, stop, gives_up):
    """A pipe nobody writes to blocks FFmpeg's open (as a device or a stalled network file
    system does): Ctrl-C or SIGTERM still ends the run, with its one line, nothing written.
    ``gives_up``: the open fails at once after the stop (the pipe's writer comes and goes: a
    camera refusing), and the process still ends so, never in the interpreter's clean-up of
    the failed open (which could crash it)."""
    pipe = tmp_path / "camera.pipe"
    os.mkfifo(pipe)
    process = subprocess.Popen([sys.executable, "-m", "videvent", "run", str(pipe), "-d",
                                str(tmp_path / "result")], cwd=tmp_path,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(2)                                   # well into the open
    process.send_signal(stop)
    if gives_up:
        # Opened read-write, which never waits for a reader: the run may have ended already.
        os.close(os.open(pipe, os.O_RDWR))
    try:
        _, stderr = process.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        process.kill()
        raise AssertionError(f"{signal.Signals(stop).name} did not end the run") from None
    assert process.returncode == 128 + stop
    assert stderr.strip() == (f"videvent: stopped by {signal.Signals(stop).name}; nothing "
                              f"half-written was left")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["camera.pipe"]


def test_a_signal_that_stops_the_wait_for_an_open_is_remembered(tmp_path):
    """What the command line's exit reads: a signal stopped the wait for an opening, so the
    process ends without the interpreter's clean-up of it (``_cli.signals._exit``)."""
    pipe = tmp_path / "camera.pipe"
    os.mkfifo(pipe)

    def interrupt(*_):
        raise KeyboardInterrupt

    sources = importlib.import_module("videvent.sources")
    before = signal.signal(signal.SIGALRM, interrupt)
    try:
        assert not sources.open_abandoned()
        signal.setitimer(signal.ITIMER_REAL, 0.5)
        with pytest.raises(KeyboardInterrupt):
            sources.open_source(pipe)
        assert sources.open_abandoned()
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, before)
        os.close(os.open(pipe, os.O_RDWR))          # let the abandoned open end
        sources._abandoned.clear()


@pytest.fixture(scope="module")
def streamable_clip(tmp_path_factory):
    """The demo clip four times over (88 s, 880 frames), its index first: an MP4 that can be
    decoded as it arrives through a pipe."""
    path = tmp_path_factory.mktemp("pipe") / "visits.mp4"
    subprocess.run(["ffmpeg", "-v", "error", "-stream_loop", "3", "-i",
                    sample("person_visit")[0], "-c", "copy", "-movflags", "+faststart",
                    str(path)], check=True, timeout=60)
    return path


def pipe_fed(tmp_path, clip, size: int | None) -> tuple[Path, subprocess.Popen]:
    """A named pipe and its writer: ``size`` bytes of ``clip`` (all if None), then the pipe
    held open without a word more (a stalled camera: ``sent`` appears in ``tmp_path`` once the
    reader has taken all but what the pipe holds), or closed (size None)."""
    pipe = tmp_path / "camera.pipe"
    os.mkfifo(pipe)
    send = (f'head -c {size} "$2" >&3; touch "$3"; sleep 120' if size
            else 'cat "$2" >&3')
    writer = subprocess.Popen(["sh", "-c", f'exec 3>"$1"; {send}', "sh", str(pipe), str(clip),
                               str(tmp_path / "sent")])
    return pipe, writer


@pytest.mark.parametrize("command, stop", [("run", signal.SIGINT), ("run", signal.SIGTERM),
                                           ("watch", signal.SIGINT)])
def test_a_pipe_whose_writer_stalls_is_stopped_by_a_signal(tmp_path, streamable_clip, command,
                                                           stop):
    """The writer sends part of a video and keeps the pipe open: the decoder blocks in FFmpeg's
    read, which no signal interrupts. The pipe is opened once (a start reference from frames
    spread over it would open it again, and block there), and the pass does not wait for a
    reader blocked in it: a run ends with its line and exit code, a watch with its files."""
    pipe, writer = pipe_fed(tmp_path, streamable_clip, 300_000)
    out = tmp_path / "result"
    process = subprocess.Popen([sys.executable, "-m", "videvent", command, str(pipe), "-d",
                                str(out)], cwd=tmp_path, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, text=True)
    try:
        # The pass is into the frames, then blocks on the pipe.
        wait_until((tmp_path / "sent").exists, 60, "the writer's bytes read")
        time.sleep(0.5)
        process.send_signal(stop)
        _, said = process.communicate(timeout=60)
    finally:
        writer.kill()
        if process.poll() is None:
            process.kill()
            raise AssertionError(f"{stop.name} did not end {command}")
    if command == "run":
        assert process.returncode == 128 + stop, said
        assert said.strip().splitlines()[-1] == (f"videvent: stopped by {stop.name}; nothing "
                                                 "half-written was left")
        assert not out.exists()
    else:
        assert process.returncode == 0, said
        assert json.loads((out / "events.json").read_text())["frames_read"] > 0


def test_a_pipe_fed_a_whole_video_gives_the_files_verdicts_and_cannot_be_exported(
        tmp_path, streamable_clip):
    """Read once, from its start, as the file is read without a start reference (which a pipe
    cannot give: its frames spread over the video cannot be read before the first)."""
    pipe, writer = pipe_fed(tmp_path, streamable_clip, None)
    try:
        through_pipe = run_cli("run", pipe, "-d", tmp_path / "piped", "-q", "--no-plot")
    finally:
        writer.kill()
    assert through_pipe.returncode == 0, through_pipe.stderr
    from_file = run_cli("run", streamable_clip, "-d", tmp_path / "file", "-q", "--no-plot",
                        "--no-start-reference")
    assert from_file.returncode == 0, from_file.stderr
    assert ((tmp_path / "piped" / "scores.csv").read_bytes()
            == (tmp_path / "file" / "scores.csv").read_bytes())
    result = run_cli("export", tmp_path / "piped", "--export-clips")
    assert result.returncode == 1 and "is a pipe or device" in one_line(result)


# Two commands of the test's own, run by videvent's entry point, in which SIGTERM lands where
# Python loses its exception, as it can while a command imports its modules: in a callback
# whose exceptions Python ignores (the import system's module locks have one), and in native
# code that replaces the exception with its own (CPython's ``from x import y``: a TypeError).
LOST_SIGNAL = """
import os, signal, sys, time, weakref
from videvent._cli import main as command_line

@command_line.cli.command()
def in_a_callback():
    class Lock:
        pass
    def released(_reference):
        os.kill(os.getpid(), signal.SIGTERM)
        for _ in range(10 ** 6):   # the handler runs at the loop's next check, in here
            pass
    lock = Lock()
    reference = weakref.ref(lock, released)
    del lock
    time.sleep(20)
    print("still running")

@command_line.cli.command()
def replaced():
    try:
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(20)
    except BaseException:
        raise TypeError("expected a message argument") from None

sys.argv = ["videvent", sys.argv[1]]
command_line.main()
"""


# A signal that lands while the main thread is inside an event's own lock, as it is for a few
# bytecodes of every ``wait`` (the wait for a camera down at the start): a handler that sets
# that event there waits for ever (a watch that Ctrl-C never ended, found under load).
SIGNAL_IN_A_WAIT = """
import os, signal, threading
from videvent._cli import signals as command_line

event = threading.Event()
signal.signal(signal.SIGINT, command_line._on_signal(event.set))
with event._cond:                   # the lock that ``event.wait`` holds as it starts and ends
    os.kill(os.getpid(), signal.SIGINT)
    for _ in range(10 ** 6):        # the handler runs at the loop's next check, in here
        pass
print(event.wait(30))
"""


def test_a_watch_handler_never_waits_on_the_lock_its_signal_interrupted():
    result = subprocess.run([sys.executable, "-c", SIGNAL_IN_A_WAIT], capture_output=True,
                            text=True, timeout=60)
    assert (result.returncode, result.stdout, result.stderr) == (0, "True\n", "")


@pytest.mark.parametrize("command", ["in-a-callback", "replaced"])
def test_a_signal_whose_exception_python_loses_still_stops_in_one_line(command):
    result = subprocess.run([sys.executable, "-c", LOST_SIGNAL, command], capture_output=True,
                            text=True, timeout=60)
    assert (result.returncode, result.stderr, result.stdout) == (
        143, "videvent: stopped by SIGTERM; nothing half-written was left\n", "")


def test_a_stop_as_the_staging_folder_is_made_leaves_nothing(tmp_path, monkeypatch):
    # SIGTERM (or Ctrl-C) can land just after the staging folder appears, before the result
    # folder's ``with`` block exists to remove it: the folder must go all the same.
    from videvent.output import folder as result_folder

    def stopped(_folder):
        raise KeyboardInterrupt

    monkeypatch.setattr(result_folder, "mark", stopped)
    with pytest.raises(KeyboardInterrupt):
        ResultFolder(tmp_path / "result")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("options, message", [
    (["--chunk-minutes", "nan"], "not a finite number of minutes"),
    (["--chunk-minutes", "inf"], "not a finite number of minutes"),
    # The walker clip at 15 fps, its background span the default 60 s (900 frames).
    (["--chunk-minutes", "0.01"], "at least one background span long"),
    (["--chunk-minutes", "0.5"], "at least one background span long"),
    # Every float setting refuses what is not a finite number (Settings' one check).
    (["-t", "inf"], "threshold must be a finite number"),
    (["--threshold-low", "nan"], "threshold-low must be a finite number"),
    (["--inlier-fraction", "nan"], "inlier-fraction must be a finite number"),
    (["--fps", "nan"], "fps must be a finite number"),
])
def test_a_chunk_length_or_a_number_that_is_no_length_is_refused_up_front(tmp_path, options,
                                                                          message):
    result = run_cli("batch", sample("walker")[0], "--out", tmp_path / "out", "-q", *options)
    assert result.returncode == 2 and message in one_line(result), result.stderr
    assert not (tmp_path / "out").exists() and not leftovers(tmp_path)


def test_the_smallest_usable_settings_score_frames(tmp_path):
    """The ends of the ranges the lines above give all work: blocks one pixel each, the
    working picture 8 pixels across, the smallest window."""
    from videvent.detectors.background import MIN_SAMPLES
    from videvent.settings import SPECS

    assert SPECS["window"].minimum == MIN_SAMPLES
    for options in (["--blocks", "160"], ["-df", "40", "--blocks", "8"], ["-df", "20"],
                    ["-w", "5", "--rank", "1", "--projection-dim", "1",
                     "--background-span", "5"]):
        result = run_cli("run", sample("walker")[0], "-d", tmp_path / "out", "--no-plot",
                         *options)
        assert result.returncode == 0, result.stderr
        assert "none could be scored" not in result.stdout, (options, result.stdout)


def test_a_chunk_of_one_background_span_is_accepted(tmp_path):
    result = run_cli("batch", sample("walker")[0], "--out", tmp_path / "out", "-q",
                     "--workers", "1", "--no-plot", "--background-span", "6s",
                     "--chunk-minutes", "0.2")
    assert result.returncode == 0, result.stderr
