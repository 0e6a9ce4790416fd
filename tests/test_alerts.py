"""``videvent watch`` on a file (no stream needed): the command hook, limits, outputs."""

import json
import os
from pathlib import Path

from conftest import run_cli, sample
from videvent.output import read_scores


def test_the_event_command_gets_each_alerts_fields(tmp_path):
    path, truth = sample("walker")
    log = tmp_path / "hook.log"
    out = tmp_path / "live"
    result = run_cli("watch", path, "-d", out, "-q", "--on-event",
                     f'echo "$VIDEVENT_TYPE $VIDEVENT_EVENT $VIDEVENT_CORE_START_FRAME" >> {log}')
    assert result.returncode == 0, result.stderr
    lines = log.read_text().splitlines()
    assert lines[0].startswith("session_start")
    [[first, _]] = truth["event_frames"]
    assert "start 1 " in lines and f"end 1 {first}" in lines
    alerts = [json.loads(line) for line in (out / "alerts.jsonl").read_text().splitlines()]
    assert [a["type"] for a in alerts][:2] == ["session_start", "start"]


def test_a_file_watched_gives_what_run_gives(tmp_path):
    path, _ = sample("walker")
    assert run_cli("run", path, "-d", tmp_path / "run", "-q").returncode == 0
    assert run_cli("watch", path, "-d", tmp_path / "live", "-q", "--no-clips").returncode == 0
    ran, watched = read_scores(tmp_path / "run" / "scores.csv"), read_scores(
        tmp_path / "live" / "scores.csv")
    assert (ran["flagged"] == watched["flagged"]).all()
    assert abs(ran["score"] - watched["score"]).max() < 1e-9
    for name in ("events.json", "report.html", "residuals.png", "thumbnails/event001.jpg"):
        assert (tmp_path / "live" / name).exists(), name
    source = json.loads((tmp_path / "live" / "events.json").read_text())["source"]["uri"]
    assert os.path.isabs(source)  # so `videvent export` finds it from anywhere


def test_max_frames_and_duration_stop_the_session(tmp_path):
    path, _ = sample("walker")
    assert run_cli("watch", path, "-d", tmp_path / "a", "-q", "--max-frames", "40",
                   "--no-plot").returncode == 0
    assert len(read_scores(tmp_path / "a" / "scores.csv")["frame"]) == 40
    # --no-plot: the folder is complete, without the plot and report.
    assert (tmp_path / "a" / ".videvent-complete").is_file()
    assert not (tmp_path / "a" / "report.html").exists()
    assert not (tmp_path / "a" / "residuals.png").exists()
    assert run_cli("watch", path, "-d", tmp_path / "b", "-q", "-dt", "2s").returncode == 0
    assert len(read_scores(tmp_path / "b" / "scores.csv")["frame"]) == 30
    assert (tmp_path / "b" / "residuals.png").is_file()
    # Watched again into that folder without them: the earlier session's plot and report,
    # which would describe another session, are gone.
    assert run_cli("watch", path, "-d", tmp_path / "b", "-q", "--max-frames", "20",
                   "--no-plot").returncode == 0
    assert not (tmp_path / "b" / "residuals.png").exists()
    assert not (tmp_path / "b" / "report.html").exists()


def test_an_unopenable_source_is_one_line_exit_1(tmp_path):
    result = run_cli("watch", tmp_path / "nothing.mp4", "-d", tmp_path / "out")
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "out").exists()


def test_alerts_carry_thumbnail_and_clip_rounded_values_and_a_session_end(tmp_path):
    clip = tmp_path / "clips" / "walker.mp4"
    clip.parent.mkdir()
    clip.write_bytes(sample("walker")[0].read_bytes())
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    result = run_cli("watch", clip, "--json", "-q", cwd=elsewhere)
    assert result.returncode == 0, result.stderr
    # The default folder is the session's own, beside the file; nothing in the current folder.
    assert not list(elsewhere.iterdir())
    [folder] = clip.parent.glob("videvent-watch-walker-*")
    alerts = [json.loads(line) for line in result.stdout.splitlines()]
    assert [a["type"] for a in alerts if a["type"] != "update"] == [
        "session_start", "start", "end", "session_end"]
    start, end = (next(a for a in alerts if a["type"] == kind) for kind in ("start", "end"))
    assert start["clip"] == end["clip"] == str(folder.resolve() / "walker.event001.mp4")
    assert Path(end["thumbnail"]).is_file() and Path(end["clip"]).is_file()
    for alert in alerts:  # no float longer than the millisecond
        for value in alert.values():
            if isinstance(value, float):
                assert len(repr(value).split(".")[1]) <= 3, alert
    # Each value rounded on its own: the rounded duration is within a millisecond of the
    # difference of the rounded times.
    assert abs(end["duration_s"] - (end["end_time_s"] - end["start_time_s"])) <= 0.0011
    assert alerts[-1]["frames"] == 300 and alerts[-1]["events"] == 1
    assert alerts[-1]["results"] == str(folder.resolve())


def test_events_jsonl_is_the_watch_folders_history_and_a_run_replaces_it(tmp_path):
    """The user watches a clip into a folder, watches again into the same folder (as a
    restarted service does), then runs `videvent run` into it. events.jsonl keeps every watch
    session's events, each line naming its session, and the latest session's lines are
    exactly events.json's events; a run replaces what the watches made, events.jsonl too, so
    the folder never holds two documents that disagree."""
    path, _ = sample("walker")
    out = tmp_path / "live"

    def logged():
        return [json.loads(line) for line in (out / "events.jsonl").read_text().splitlines()]

    def summary():
        return json.loads((out / "events.json").read_text())

    sessions = []
    for _ in range(2):
        result = run_cli("watch", path, "-d", out, "-q", "--no-clips", "--no-plot")
        assert result.returncode == 0, result.stderr
        document = summary()
        assert document["events"], "the walker's visit is an event"
        sessions.append((document["session_started"], document["events"]))
    (first, first_events), (second, second_events) = sessions
    assert first != second
    lines = logged()
    assert [line["session_started"] for line in lines] == \
        [first] * len(first_events) + [second] * len(second_events)
    key = ("number", "start_frame", "end_frame")
    for started, events in sessions:       # each session's lines are its events.json's events
        assert [[line[k] for k in key] for line in lines if line["session_started"] == started] \
            == [[event[k] for k in key] for event in events]

    result = run_cli("run", path, "-d", out, "-q", "--start-time", "250", "--no-plot")
    assert result.returncode == 0, result.stderr
    assert not (out / "events.jsonl").exists()       # the watches' history: replaced
    assert summary()["events"] == [] and "session_started" not in summary()
    # A watch after the run starts the history afresh.
    assert run_cli("watch", path, "-d", out, "-q", "--no-clips", "--no-plot").returncode == 0
    assert {line["session_started"] for line in logged()} == {summary()["session_started"]}


def test_a_webhook_answering_with_a_redirect_is_a_failed_delivery_never_followed(tmp_path):
    """Issue 51: urllib followed a 301/302/303 answer to a POST as a GET without the alert,
    and counted it delivered: the alert was lost silently. No redirect is followed, on the
    same host or not, whatever its code: each is counted as a failed delivery."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from videvent.alerts import AlertSinks

    received = []

    class Receiver(BaseHTTPRequestHandler):
        def do_POST(self):
            body = self.rfile.read(int(self.headers["Content-Length"]))
            if self.path.startswith("/moved/"):
                self.send_response(int(self.path.rsplit("/", 1)[1]))
                self.send_header("Location", "/ok")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            received.append(("POST", self.path, json.loads(body)))
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def do_GET(self):   # where urllib took a redirected POST
            received.append(("GET", self.path, None))
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *_):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        for code in (301, 302, 303, 307, 308):
            sinks = AlertSinks(tmp_path / f"alerts{code}.jsonl",
                               webhook=f"http://127.0.0.1:{server.server_port}/moved/{code}")
            sinks.send({"type": "start", "event": 1})
            sinks.close(wait_s=10)
            assert (sinks.delivered, sinks.failed) == (0, 1), code
        assert received == []
        sinks = AlertSinks(tmp_path / "alerts.jsonl",
                           webhook=f"http://127.0.0.1:{server.server_port}/ok")
        sinks.send({"type": "start", "event": 1})
        sinks.close(wait_s=10)
        assert (sinks.delivered, sinks.failed) == (1, 0)
        assert received == [("POST", "/ok", {"type": "start", "event": 1})]
    finally:
        server.shutdown()
        server.server_close()


def test_a_file_watched_from_past_its_end_is_what_run_says_one_line_exit_1(tmp_path):
    """Issue 51: ``watch FILE -st 1000s`` exited 0 with an empty report where ``run`` exits 1
    with a line; now both say the same line, exit 1, and write no folder (the API too)."""
    import pytest

    import videvent
    from videvent.settings import Settings

    path, _ = sample("walker")
    ran = run_cli("run", path, "-st", "1000s", "-d", tmp_path / "run")
    watched = run_cli("watch", path, "-st", "1000s", "-d", tmp_path / "live")
    assert ran.returncode == watched.returncode == 1
    assert watched.stderr.strip().splitlines() == [
        f"videvent: error: no frames to scan in '{path}' in the range given"]
    assert ran.stderr.strip().splitlines()[-1] == watched.stderr.strip()
    assert not (tmp_path / "run").exists() and not (tmp_path / "live").exists()
    with pytest.raises(ValueError, match="no frames to scan .* in the range given"):
        videvent.watch(str(path), Settings(start_time="1000s"), out_dir=tmp_path / "api")
    assert not (tmp_path / "api").exists()
    # A start inside the file is watched from there.
    assert run_cli("watch", path, "-st", "3s", "-d", tmp_path / "inside", "-q",
                   "--no-plot").returncode == 0
    assert read_scores(tmp_path / "inside" / "scores.csv")["frame"][0] == 45
