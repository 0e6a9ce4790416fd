"""``videvent watch`` on a file (no stream needed): the command hook, limits, outputs."""

import json
import os

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
    assert run_cli("watch", path, "-d", tmp_path / "a", "-q", "--max-frames", "40").returncode == 0
    assert len(read_scores(tmp_path / "a" / "scores.csv")["frame"]) == 40
    assert run_cli("watch", path, "-d", tmp_path / "b", "-q", "-dt", "2s").returncode == 0
    assert len(read_scores(tmp_path / "b" / "scores.csv")["frame"]) == 30


def test_an_unopenable_source_is_one_line_exit_1(tmp_path):
    result = run_cli("watch", tmp_path / "nothing.mp4", "-d", tmp_path / "out")
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "out").exists()
