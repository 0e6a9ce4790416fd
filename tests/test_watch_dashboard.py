"""``videvent watch SRC1 SRC2 --serve``: the live page in a real browser (Chromium, driven by
Playwright) while the watch scores two real loopback streams served by ffmpeg."""

from __future__ import annotations

import json
import re
import signal
import threading
import time
import urllib.error
import urllib.request

from test_dashboard import (PICTURE, WAIT_MS, assert_lost_while_the_other_updates,  # noqa: F401
                            browser, card)
from test_watch import Watch, server  # noqa: F401

URL_LINE = re.compile(r"^dashboard: (http://\S+)")


class ServedWatch(Watch):
    """A running ``videvent watch --json --serve``, its stderr followed for the page's URL."""

    def __init__(self, urls, out, *extra):
        super().__init__(urls[0], out, *urls[1:], *extra)
        self.stderr_lines: list[str] = []
        threading.Thread(target=self._read_stderr, daemon=True).start()

    def _read_stderr(self):
        for line in self.process.stderr:
            self.stderr_lines.append(line.rstrip("\n"))

    def dashboard_url(self, timeout: float = 30) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for line in self.stderr_lines:
                if found := URL_LINE.match(line):
                    return found.group(1)
            assert self.process.poll() is None, "\n".join(self.stderr_lines)
            time.sleep(0.05)
        raise AssertionError(f"no dashboard address printed: {self.stderr_lines}")


def test_the_page_follows_two_streams_their_events_clips_and_a_lost_camera(tmp_path, server,
                                                                           browser):
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    streams = [server(loop=True), server(loop=True)]
    watch = ServedWatch([stream.url for stream in streams], tmp_path / "live",
                        "--serve", "127.0.0.1:0", "--max-reconnects", "20")
    try:
        url = watch.dashboard_url()
        assert "token=" not in url   # loopback: no token asked
        page.goto(url)
        for camera in (0, 1):
            page.wait_for_function(f"({PICTURE})({camera}).spread > 10", timeout=WAIT_MS)
        names = {page.text_content(f"{card(camera)} .camera-name") for camera in (0, 1)}
        assert names == {f"127_0_0_1_{stream.port}" for stream in streams}

        # The event in the list, under its camera's name.
        page.wait_for_selector("#events li", timeout=WAIT_MS)
        title = page.locator("#events li .event-title").first.text_content()
        assert title.split(":")[0] in names

        video = "#events li video"
        page.wait_for_selector(video, timeout=WAIT_MS)   # once the event's clip is written
        page.eval_on_selector(video, "v => { v.muted = true; return v.play(); }")
        page.wait_for_function(f"document.querySelector('{video}').currentTime > 0.3",
                               timeout=WAIT_MS)

        streams[0].stop()   # the first camera goes away; the second keeps streaming
        assert_lost_while_the_other_updates(page, lost=0, other=1)
        assert errors == []
    finally:
        page.close()
        watch.process.send_signal(signal.SIGINT)
    assert watch.finish() == 0


def test_a_region_drawn_on_the_page_is_saved_to_the_cameras_region_file(tmp_path, server):
    """One camera with -R FILE: the page reads FILE, and what is drawn and saved there is what
    FILE holds (the next session watches it)."""
    region = tmp_path / "door.region"
    region.write_text("# the door\n0 0 200 0 200 150 0 150\n")
    stream = server(loop=True)
    watch = ServedWatch([stream.url], tmp_path / "live", "--serve", "127.0.0.1:0",
                        "-R", region)
    try:
        base = watch.dashboard_url().split("?")[0].rstrip("/")
        with urllib.request.urlopen(f"{base}/cameras/0/region", timeout=10) as answer:
            shown = json.load(answer)
        assert shown["editable"] and shown["polygons"] == [[[0, 0], [200, 0], [200, 150],
                                                            [0, 150]]]
        drawn = {"polygons": [[[10, 10], [120, 10], [120, 90]]]}
        deadline = time.monotonic() + 30
        while True:   # the camera's size is known once its first frame is scored
            request = urllib.request.Request(f"{base}/cameras/0/region", method="POST",
                                             data=json.dumps(drawn).encode(),
                                             headers={"Content-Type": "application/json"})
            try:
                with urllib.request.urlopen(request, timeout=10) as answer:
                    assert answer.status == 200
                break
            except urllib.error.HTTPError as error:
                assert error.code == 409 and time.monotonic() < deadline, error.read()
                time.sleep(0.1)
        lines = region.read_text().splitlines()
        assert lines[0] == "# the door" and lines[1:] == ["10 10 120 10 120 90"]
    finally:
        watch.process.send_signal(signal.SIGINT)
    assert watch.finish() == 0
