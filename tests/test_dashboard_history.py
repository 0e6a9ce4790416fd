"""The dashboard of a watch that is restarted (issue 29, item 8), in Chromium (Playwright) on a
real ffmpeg stream served on 127.0.0.1: the events of the earlier watch, read from its result
folder, one picture per event, the camera's status in words, no empty column beside a single
camera, the region saved "for the next session", and an event that spans an outage shown with
the seconds of video it has, not the clock's."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import urllib.request

import cv2

from test_dashboard import WAIT_MS, browser, card  # noqa: F401
from test_watch import Watch, server  # noqa: F401
from test_watch_dashboard import URL_LINE, ServedWatch

PATIENCE_S = 60.0              # deadline of every wait (a liveness bound, never a pause)


def clip_seconds(path: str) -> float:
    capture = cv2.VideoCapture(path)
    try:
        frames, fps = capture.get(cv2.CAP_PROP_FRAME_COUNT), capture.get(cv2.CAP_PROP_FPS)
    finally:
        capture.release()
    assert frames > 0 and fps > 0, path
    return frames / fps


def test_a_restarted_watch_shows_the_earlier_events_one_picture_each_and_honest_durations(
        tmp_path, server, browser):
    out = tmp_path / "door"
    first = Watch(server().url, out, "--name", "door", "-dt", "10s", "--max-reconnects", "3")
    first.wait_for("end", PATIENCE_S, event=1)
    assert first.finish(timeout=PATIENCE_S) == 0

    region = tmp_path / "door.region"
    region.write_text("0 0 200 0 200 150 0 150\n")
    stream = server()
    watch = ServedWatch([stream.url], out, "--name", "door", "--serve", "127.0.0.1:0",
                        "--max-reconnects", "20", "-R", region)
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    try:
        page.goto(watch.dashboard_url())
        # The earlier watch's event, from the folder's events.jsonl: one picture, its clip's
        # poster being its thumbnail.
        past = "#events li.past"
        page.wait_for_selector(f"{past} video", timeout=WAIT_MS)
        assert page.text_content(f"{past} .event-title") == "door: event 1"
        assert "earlier watch" in page.text_content(f"{past} .event-meta")
        assert page.locator(f"{past} img.thumbnail").is_hidden()
        assert page.eval_on_selector(f"{past} video", """v => fetch(v.poster).then(r => r.ok &&
            r.headers.get('Content-Type'))""") == "image/jpeg"
        page.eval_on_selector(f"{past} video", "v => { v.muted = true; return v.play(); }")
        page.wait_for_function(f"document.querySelector('{past} video').currentTime > 0.3",
                               timeout=WAIT_MS)

        # The camera's status in words, and its card as wide as the cameras' column.
        page.wait_for_function(
            f"document.querySelector('{card(0)} .status-detail').textContent"
            ".startsWith('live since')", timeout=WAIT_MS)
        widths = page.evaluate(f"""() => [
            document.querySelector('{card(0)}').getBoundingClientRect().width,
            document.getElementById('cameras').getBoundingClientRect().width]""")
        assert widths[0] > 0.95 * widths[1], widths

        # A region saved on the page says when it applies.
        page.click(f"{card(0)} .edit-region")
        box = page.locator(f"{card(0)} canvas.regions").bounding_box()
        for x, y in ((0.1, 0.1), (0.5, 0.1), (0.5, 0.5)):
            page.mouse.click(box["x"] + x * box["width"], box["y"] + y * box["height"])
        page.click(f"{card(0)} .save-region")
        page.wait_for_function(
            f"document.querySelector('{card(0)} .region-message').textContent"
            ".includes('next session')", timeout=WAIT_MS)

        # The camera is lost in the middle of this watch's first event, and comes back.
        watch.wait_for("start", PATIENCE_S, event=1)
        stream.stop()
        page.wait_for_function(
            f"document.querySelector('{card(0)} .status-detail').textContent"
            ".startsWith('lost since')", timeout=WAIT_MS)
        watch.wait_for("camera_down", PATIENCE_S)
        server(stream.port)
        end = watch.wait_for("end", PATIENCE_S, event=1)
        # What the clip holds is the event's video, not its span of the clock.
        assert end["video_s"] < end["duration_s"]
        assert abs(clip_seconds(end["clip"]) - end["video_s"]) < 0.1, end
        current = "#events li:not(.past)"
        page.wait_for_function(
            f"document.querySelector('{current} .event-state').textContent"
            ".includes('of video')", timeout=WAIT_MS)
        shown = page.text_content(f"{current} .event-state")
        found = re.fullmatch(r"([\d.]+) s of video \(over ([\d.]+) s: the camera was lost "
                             r"meanwhile\)", shown)
        assert found, shown
        for text, value in zip(found.groups(), (end["video_s"], end["duration_s"])):
            assert abs(float(text) - value) <= 0.051, shown     # to one decimal
        assert page.locator("#events li").count() == 2
        assert errors == []
    finally:
        page.close()
        watch.process.send_signal(signal.SIGINT)
    assert watch.finish(timeout=PATIENCE_S) == 0
    logged = [json.loads(line) for line in (out / "events.jsonl").read_text().splitlines()]
    assert len({line["session_started"] for line in logged}) == 2


def test_without_a_folder_the_history_comes_from_the_earlier_dated_folders(tmp_path, server):
    """No -d: each watch writes a dated folder of its own in the current folder; a restarted
    watch's dashboard lists the events of the earlier ones (and not another camera's)."""
    stream = server()
    earlier_watches = [subprocess.Popen(     # side by side: each gets a stream of its own
        [sys.executable, "-m", "videvent", "watch", stream.url, "--name", name, "-dt", "10s",
         "-q", "--no-clips"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        cwd=tmp_path) for name in ("door", "yard")]
    for done in earlier_watches:
        _, stderr = done.communicate(timeout=120)
        assert done.returncode == 0, stderr
    [earlier] = [folder for folder in tmp_path.iterdir() if folder.name.startswith(
        "videvent-watch-door-")]
    ended = [json.loads(line) for line in (earlier / "events.jsonl").read_text().splitlines()]
    assert ended
    watch = subprocess.Popen([sys.executable, "-m", "videvent", "watch", stream.url, "--name",
                              "door", "--serve", "127.0.0.1:0", "--no-clips"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                             cwd=tmp_path)
    try:
        found = None
        while found is None:                 # printed once the camera is open
            line = watch.stderr.readline()
            assert line, "the watch ended without printing the dashboard's address"
            found = URL_LINE.match(line)
        with urllib.request.urlopen(found.group(1) + "api/events", timeout=10) as response:
            events = json.loads(response.read())
        past = [event for event in events if event.get("past")]
        assert [(event["camera"], event["number"]) for event in past] == [
            ("door", event["number"]) for event in reversed(ended)]
        with urllib.request.urlopen(found.group(1).rstrip("/") + past[0]["thumbnail_url"],
                                    timeout=10) as response:
            assert response.headers["Content-Type"] == "image/jpeg"
    finally:
        watch.send_signal(signal.SIGINT)
        watch.communicate(timeout=PATIENCE_S)
    assert watch.returncode == 0
