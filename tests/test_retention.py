"""Retention (issue 54, item 1): a watch with ``--max-disk`` (or ``max-disk`` in a camera's
table of the config file) never holds more than the cap plus one clip, keeps the newest
events, removes nothing it did not write, and its ``events.jsonl`` is rotated and stays
readable throughout; ``--keep`` removes what is older; the dashboard shows the disk used and
the oldest event kept. A real watch (the CLI, in a child process) of a looped busy stream
served by ffmpeg, shortened: a small cap, small clips, a small rotation size."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest

from conftest import run_cli, sample
from test_watch import FFMPEG, server  # noqa: F401
from test_watch_dashboard import URL_LINE

PATIENCE_S = 120.0              # deadline of every wait (a liveness bound, never a pause)
CAP = 700_000                   # bytes: a few of the demo's clips
ROTATE_BYTES = 1200             # events.jsonl rotated every few events (a line: ~450 bytes)
LOOPS = 5                       # one visit a loop


def watch_command(*arguments) -> list[str]:
    """``videvent watch ARGUMENTS`` as a user runs it, events.jsonl rotated sooner (the
    suite's only shortening: a part of 1 MiB takes a thousand events)."""
    code = ("import sys, videvent.session as session\n"
            f"session.EVENTS_LOG_BYTES = {ROTATE_BYTES}\n"
            f"sys.argv = ['videvent', 'watch', *{[str(a) for a in arguments]!r}]\n"
            "from videvent._cli.entry import main\n"
            "main()")
    return [sys.executable, "-c", code]


def folder_bytes(folder: Path, besides: set[Path]) -> int:
    """What the folder holds, the user's files (``besides``) aside."""
    total = 0
    for path in folder.rglob("*"):
        try:
            if path.is_file() and path not in besides:
                total += path.stat().st_size
        except OSError:
            pass                                 # removed as it was looked at
    return total


def readable(folder: Path) -> list[dict]:
    """Every line of the folder's events files, each a whole JSON object."""
    records = []
    for path in sorted(folder.glob("events.jsonl*")):
        try:
            text = path.read_text()
        except FileNotFoundError:
            continue                             # rotated or removed as it was looked at
        assert text == "" or text.endswith("\n"), path
        records += [json.loads(line) for line in text.splitlines()]
    return records


@pytest.mark.skipif(FFMPEG is None, reason="ffmpeg is not installed")
def test_a_watch_with_max_disk_stays_within_it_keeps_the_newest_and_only_removes_its_own(
        tmp_path, server):
    _, truth = sample("person_visit")
    out = tmp_path / "watch"
    config = tmp_path / "cameras.toml"
    stream = server(loop=True, clip="person_visit", from_s=8, encode=True, pace=3)
    config.write_text(f'[cameras.door]\nsource = "{stream.url}"\nmax-disk = "{CAP}"\n')
    frames = int((truth["frame_count"] - 8 * truth["fps"]) + LOOPS * truth["frame_count"])
    watch = subprocess.Popen(
        watch_command("-c", config, "-d", out, "--json", "--no-plot", "--max-frames", frames,
                      "--max-reconnects", "3", "--serve", "127.0.0.1:0"),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path)
    alerts: list[dict] = []
    stderr: list[str] = []
    threading.Thread(target=lambda: alerts.extend(map(json.loads, watch.stdout)),
                     daemon=True).start()
    threading.Thread(target=lambda: stderr.extend(watch.stderr), daemon=True).start()
    camera = out                                 # a single camera's folder: -d itself
    deadline = time.monotonic() + PATIENCE_S
    while not (camera / ".videvent-result").exists():
        assert watch.poll() is None and time.monotonic() < deadline, "".join(stderr)
        time.sleep(0.1)
    # The user's own files, beside videvent's: named as videvent names its own, even.
    mine = {camera / "notes.txt": b"my notes\n", camera / "door.event900.mp4": b"mine\n",
            camera / "thumbnails" / "event001-mine.jpg": b"mine too\n"}
    (camera / "thumbnails").mkdir(exist_ok=True)
    for path, content in mine.items():
        path.write_bytes(content)

    largest_clip, held, stats = 0, [], None
    while watch.poll() is None:
        assert time.monotonic() < deadline + 4 * PATIENCE_S, "the watch did not end"
        clips = [path.stat().st_size for path in camera.glob("door.event*.mp4")
                 if path not in mine and path.exists()]
        largest_clip = max([largest_clip, *clips])
        held.append(folder_bytes(out, set(mine)))
        readable(camera)                         # whole lines, whatever the moment
        url = next((found.group(1) for line in stderr if (found := URL_LINE.match(line))),
                   None)
        if url is not None and stats is None and len([a for a in alerts
                                                      if a["type"] == "end"]) >= 2:
            with urllib.request.urlopen(url + "api/cameras", timeout=10) as answer:
                stats = json.load(answer)[0]["stats"]
        time.sleep(0.5)
    assert watch.wait(timeout=PATIENCE_S) == 0, stderr

    ends = [alert["event"] for alert in alerts if alert["type"] == "end"]
    assert len(ends) >= LOOPS, ends
    # Never more than the cap and one clip (the one being written), at any moment sampled.
    assert max(held) <= CAP + largest_clip, (max(held), CAP, largest_clip)
    # The newest events are kept, the oldest gone, files and rows together.
    with sqlite3.connect(out / "events.db") as db:
        kept = [row[0] for row in db.execute("SELECT number FROM events ORDER BY number")]
    db.close()
    assert kept and kept == ends[-len(kept):] and len(kept) < len(ends), (kept, ends)
    for number in ends:
        present = [(camera / f"door.event{number:03d}.mp4").exists(),
                   (camera / "thumbnails" / f"event{number:03d}.jpg").exists()]
        assert present == [number in kept] * 2, (number, present)
    # Nothing of the user's removed.
    for path, content in mine.items():
        assert path.read_bytes() == content
    # events.jsonl rotated, and a part goes once none of its events is kept.
    records = readable(camera)
    assert (camera / "events.jsonl").stat().st_size <= ROTATE_BYTES
    assert {record["number"] for record in records} >= set(kept)
    parts = list(camera.glob("events.jsonl.*"))
    assert parts, "events.jsonl was never rotated"
    for part in parts:
        assert {json.loads(line)["number"] for line in part.read_text().splitlines()} & set(kept)
    # The dashboard showed the disk used, within the cap, and the oldest event kept.
    assert stats is not None and 0 < stats["disk_bytes"] and stats["disk_cap"] == CAP
    assert stats["oldest_kept"].endswith("Z")


def test_keep_removes_the_events_older_than_its_days(tmp_path):
    clip, _ = sample("person_visit")
    out = tmp_path / "door"
    first = run_cli("watch", clip, "-d", out, "--name", "door", "--no-plot", "-q")
    assert first.returncode == 0, first.stderr
    with sqlite3.connect(out / "events.db") as db:
        [(ended,)] = db.execute("SELECT end_ts FROM events").fetchall()
    db.close()
    while time.time() < ended + 1.0:             # a second old, at least
        time.sleep(0.1)
    old = [out / "door.event001.mp4", out / "thumbnails" / "event001.jpg"]
    assert all(path.exists() for path in old)
    (out / "keep-me.txt").write_text("mine\n")
    # A second session of a watch that keeps a tenth of a second (--keep is in days): the
    # first session's event goes at its start; the new session's own event is kept.
    second = run_cli("watch", clip, "-d", out, "--name", "door", "--no-plot", "-q",
                     "--keep", str(0.1 / 86_400 * 50))
    assert second.returncode == 0, second.stderr
    with sqlite3.connect(out / "events.db") as db:
        sessions = db.execute("SELECT DISTINCT session_started FROM events").fetchall()
    db.close()
    assert len(sessions) <= 1 and (out / "keep-me.txt").read_text() == "mine\n"


def test_a_bad_size_or_days_is_one_line(tmp_path):
    for option, value in (("--max-disk", "lots"), ("--max-disk", "-5MB"), ("--keep", "0")):
        result = run_cli("watch", "rtsp://127.0.0.1:9/none", option, value, cwd=tmp_path)
        assert result.returncode == 2 and len(result.stderr.splitlines()) == 1, result.stderr
        assert option in result.stderr
    config = tmp_path / "cameras.toml"
    config.write_text('[cameras.door]\nsource = "rtsp://127.0.0.1:9/none"\nmax-disk = "2 '
                      'bananas"\n')
    result = run_cli("watch", "-c", config, cwd=tmp_path)
    assert result.returncode == 2 and "max-disk" in result.stderr, result.stderr
    assert len(result.stderr.splitlines()) == 1


def mounted_disk(folder: Path, size: str) -> bool:
    """A small file system of its own at ``folder`` (tmpfs), where this machine allows it."""
    folder.mkdir()
    return subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)],
                          capture_output=True).returncode == 0


def test_a_nearly_full_disk_frees_space_by_the_same_rule_before_a_clip_fails(tmp_path):
    """A watch on a disk of 1.2 MB (its own tmpfs) with retention asked: the oldest events go
    to keep room for the next clip, and no clip meets the full disk."""
    disk = tmp_path / "disk"
    if FFMPEG is None or not mounted_disk(disk, "1200k"):
        pytest.skip("needs ffmpeg and the right to mount a tmpfs (root)")
    try:
        clip, _ = sample("person_visit")
        long = tmp_path / "long.mp4"            # 15 visits, one after the other
        subprocess.run([FFMPEG, "-loglevel", "error", "-stream_loop", "14", "-i", str(clip),
                        "-c", "copy", str(long)], check=True)
        out = disk / "shop"
        result = run_cli("watch", long, "-d", out, "--name", "shop", "--max-disk", "1GB",
                         "--no-plot", "--json")
        assert result.returncode == 0, result.stderr
        assert "No space left" not in result.stderr, result.stderr
        ends = [alert["event"] for alert in map(json.loads, result.stdout.splitlines())
                if alert["type"] == "end"]
        with sqlite3.connect(out / "events.db") as db:
            kept = db.execute("SELECT number, clip, thumbnail FROM events ORDER BY number")
            kept = kept.fetchall()
        db.close()
        assert 0 < len(kept) < len(ends) and kept[-1][0] == ends[-1], (kept, ends)
        for _, clip_name, thumbnail in kept:     # every event kept has its files
            assert clip_name and (out / clip_name).is_file()
            assert thumbnail and (out / thumbnail).is_file()
    finally:
        subprocess.run(["umount", str(disk)], check=True)
