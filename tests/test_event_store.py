"""The event store (issue 54, item 5): every event a watch reports is committed to
``events.db`` as it ends, which outlives the watch's sessions, survives the watch being killed
outright, answers ``videvent events`` and gives the dashboard its history after a restart."""

from __future__ import annotations

import csv
import io
import json
import shutil
import signal
import sqlite3
import urllib.request

import pytest

from conftest import run_cli, sample
from test_watch import FFMPEG, Watch, server  # noqa: F401
from test_watch_dashboard import ServedWatch

PATIENCE_S = 60.0              # deadline of every wait (a liveness bound, never a pause)
# Two regions of the demo's 384x216 picture: all of it, and a corner nobody walks through.
EVERYWHERE, CORNER = "0 0 383 0 383 215 0 215", "0 0 30 0 30 30 0 30"


def watched(tmp_path, *extra, cwd=None) -> list[dict]:
    """``videvent watch`` of the demo clip (a file, as fast as it decodes) with ``--json``:
    the alerts it printed."""
    result = run_cli("watch", *extra, "--json", "--no-plot", "-q", cwd=cwd or tmp_path)
    assert result.returncode == 0, result.stderr
    return [json.loads(line) for line in result.stdout.splitlines()]


def listed(*args, cwd=None) -> list[dict]:
    result = run_cli("events", *args, "--json", cwd=cwd)
    assert result.returncode == 0 and result.stderr == "", result.stderr
    return [json.loads(line) for line in result.stdout.splitlines()]


def test_events_lists_what_the_watch_reported_and_answers_by_time_kind_camera_region(
        tmp_path):
    clip, _ = sample("person_visit")
    out = tmp_path / "door"
    alerts = watched(tmp_path, clip, "-d", out, "--name", "door", "-a", EVERYWHERE,
                     "-a", CORNER)
    ends = [alert for alert in alerts if alert["type"] == "end"]
    assert [end["kind"] for end in ends] == ["moved"]
    logged = [json.loads(line) for line in (out / "events.jsonl").read_text().splitlines()]

    found = listed(out, "--kind", "moved", "--since", "1h")
    assert len(found) == len(ends) == len(logged) == 1
    for event, end, line in zip(found, ends, logged):
        assert event["camera"] == "door" and event["number"] == end["event"] == line["number"]
        for key in ("kind", "box", "regions", "start_time_s", "end_time_s"):
            assert event[key] == end[key] == line[key], key
        assert event["peak_score"] == line["peak_score"]
        assert event["thumbnail"] == end["thumbnail"] and event["clip"] == end["clip"]
        assert event["session_started"] == line["session_started"]
        assert event["start"] < event["end"] and event["start"].endswith("Z")
    assert event["regions"] == ["region 1"]

    # Each filter keeps only what it names.
    assert len(listed(out, "--region", "region 1")) == 1
    assert listed(out, "--region", "region 2") == []
    assert listed(out, "--kind", "light") == []
    assert listed(out, "--camera", "yard") == []
    assert listed(out, "--since", "2099-01-01") == []
    assert len(listed(out, "--until", "2099-01-01T00:00Z", "--since", "2000-01-01")) == 1
    table = run_cli("events", out).stdout
    assert "door" in table and "moved" in table and table.rstrip().endswith("1 event.")
    rows = list(csv.DictReader(io.StringIO(run_cli("events", out, "--csv").stdout)))
    assert [(row["camera"], row["kind"], row["regions"]) for row in rows] == [
        ("door", "moved", "region 1")]

    # The store outlives the session: a restarted watch into the same folder adds to it.
    watched(tmp_path, clip, "-d", out, "--name", "door")
    sessions = {event["session_started"] for event in listed(out)}
    assert len(sessions) == 2


def test_the_dated_folders_of_default_watches_share_one_store_beside_them(tmp_path):
    clip = tmp_path / "door.mp4"
    shutil.copy(sample("person_visit")[0], clip)
    watched(tmp_path, clip.name)
    watched(tmp_path, clip.name)
    assert (tmp_path / "events.db").is_file()
    found = listed(cwd=tmp_path)
    assert len(found) == 2 and len({event["session_started"] for event in found}) == 2
    for event in found:                   # each file is in its own session's dated folder
        assert event["clip"].startswith(str(tmp_path / "videvent-watch-door-"))
    # Asked from inside a session's folder, the store is found above it.
    session_folder = found[0]["folder"]
    assert listed(session_folder) == found


def test_bad_questions_and_a_missing_or_foreign_store_are_one_line(tmp_path):
    result = run_cli("events", tmp_path)
    assert result.returncode == 1 and len(result.stderr.splitlines()) == 1
    assert "no event store" in result.stderr and "Traceback" not in result.stderr
    for option, value in (("--since", "last tuesday"), ("--hours", "25-99"),
                          ("--kind", "bird")):
        result = run_cli("events", tmp_path, option, value)
        assert result.returncode == 2 and len(result.stderr.splitlines()) == 1, result.stderr
        assert option in result.stderr
    # A user's own file named events.db is never written into: the watch refuses to start.
    (tmp_path / "events.db").write_bytes(b"my own notes\n")
    clip = tmp_path / "door.mp4"
    shutil.copy(sample("person_visit")[0], clip)
    result = run_cli("watch", clip.name, "--no-plot", cwd=tmp_path)
    assert result.returncode == 1 and len(result.stderr.splitlines()) == 1
    assert "is not videvent's event store" in result.stderr
    assert (tmp_path / "events.db").read_bytes() == b"my own notes\n"
    assert not list(tmp_path.glob("videvent-watch-*"))
    result = run_cli("events", tmp_path)
    assert result.returncode == 1 and "is not videvent's event store" in result.stderr


@pytest.mark.skipif(FFMPEG is None, reason="ffmpeg is not installed")
def test_a_watch_killed_mid_event_loses_no_committed_event(tmp_path, server):
    """SIGKILL while an event is open, after one ended: every event the watch announced as
    ended is in the store, which opens whole; the open one is not there."""
    out = tmp_path / "live"
    stream = server(loop=True, clip="person_visit", from_s=8, encode=True, pace=3)
    watch = Watch(stream.url, out, "--max-reconnects", "0")
    watch.wait_for("end", PATIENCE_S, event=1)
    watch.wait_for("start", PATIENCE_S, event=2)
    watch.process.send_signal(signal.SIGKILL)
    watch.finish(timeout=PATIENCE_S)
    ended = sorted(alert["event"] for alert in watch.alerts if alert["type"] == "end")
    assert ended and 2 not in ended

    with sqlite3.connect(out / "events.db") as db:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        numbers = [row[0] for row in db.execute("SELECT number FROM events ORDER BY number")]
    db.close()
    assert numbers == ended
    assert [event["number"] for event in listed(out)] == ended


@pytest.mark.skipif(FFMPEG is None, reason="ffmpeg is not installed")
def test_the_dashboards_history_after_a_restart_comes_from_the_store(tmp_path):
    clip, _ = sample("person_visit")
    out = tmp_path / "door"
    watched(tmp_path, clip, "-d", out, "--name", "door")
    # The folder's own history is gone: what the page lists can only come from the store.
    (out / "events.jsonl").unlink()
    [stored] = listed(out)

    watch = ServedWatch([str(clip)], out, "--name", "door", "--realtime", "--serve",
                        "127.0.0.1:0")
    try:
        base = watch.dashboard_url().split("?")[0].rstrip("/")
        with urllib.request.urlopen(f"{base}/api/events", timeout=10) as answer:
            events = json.load(answer)
        [past] = [event for event in events if event.get("past")]
        assert (past["camera"], past["number"], past["kind"], past["start_time_s"]) == (
            "door", stored["number"], stored["kind"], stored["start_time_s"])
        for kind, media in (("thumbnail", "image/jpeg"), ("clip", "video/mp4")):
            with urllib.request.urlopen(base + past[f"{kind}_url"], timeout=10) as answer:
                assert answer.status == 200 and answer.headers["Content-Type"] == media
                assert answer.read()
    finally:
        watch.process.send_signal(signal.SIGINT)
        assert watch.finish(timeout=PATIENCE_S) == 0
