"""Seeing the result: annotated video, boxes, event clips and the HTML report, end to end."""

import json
import shutil
import subprocess
import sys

import av
import numpy as np
import pytest

from conftest import run_cli, sample
from videvent import synthetic
from videvent.output.annotate import CURSOR_BGR, StripChart
from videvent.output.video import VideoWriter

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def run_ok(*args):
    result = run_cli(*args)
    assert result.returncode == 0, result.stderr
    return result


def decode(path):
    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        frames = sum(1 for _ in container.decode(stream))
        return stream.codec_context.name, frames, stream.width, stream.height, \
            float(stream.average_rate), stream.pix_fmt


def test_annotated_video_has_the_inputs_frames_size_and_rate(tmp_path):
    path, truth = sample("walker")
    out = tmp_path / "result"
    result = run_ok("run", path, "-d", out, "--export-video")
    assert "annotated.mp4" in result.stdout
    codec, frames, width, height, rate, pix_fmt = decode(out / "annotated.mp4")
    assert (codec, pix_fmt) == ("h264", "yuv420p")
    assert (frames, width, height) == (truth["frame_count"], truth["width"], truth["height"])
    assert rate == pytest.approx(truth["fps"])
    assert not list(out.glob(".*partial*"))


def iou(a, b):
    ax, ay, aw, ah = a
    bx, by, bw, bh = b
    w = max(0, min(ax + aw, bx + bw) - max(ax, bx))
    h = max(0, min(ay + ah, by + bh) - max(ay, by))
    return w * h / (aw * ah + bw * bh - w * h)


def test_the_largest_box_follows_a_moving_square(tmp_path):
    clip = synthetic.moving_square_scene(frame_count=150)
    first_with_square = 90
    video = tmp_path / "square.mp4"
    writer = VideoWriter(video, *clip.size, clip.fps)
    for index in range(clip.frame_count):
        writer.write(clip.frame(index) if index >= first_with_square
                     else clip.background_frame(index))
    writer.close()
    out = tmp_path / "result"
    run_ok("run", video, "-d", out, "--export-video", "-q", "--no-plot")
    rows = np.genfromtxt(out / "regions.csv", delimiter=",", names=True, dtype=int)
    largest = {int(r["frame"]): (r["x"], r["y"], r["width"], r["height"])
               for r in np.atleast_1d(rows) if r["rank"] == 1}
    flagged = json.loads((out / "events.json").read_text())["events"]
    event_frames = [f for e in flagged for f in range(e["core_start_frame"], e["core_end_frame"] + 1)]
    assert len(event_frames) >= 50 and min(event_frames) >= first_with_square - 1
    for frame in event_frames:
        assert frame in largest, f"no box on event frame {frame}"
        assert iou(largest[frame], clip.boxes[frame]) >= 0.5, (frame, largest[frame],
                                                               clip.boxes[frame])


def test_event_clips_cover_each_event_with_its_padding(tmp_path):
    path, _ = sample("walker")
    out = tmp_path / "result"
    run_ok("run", path, "-d", out, "--export-clips", "--clip-template", "{video}-{n}.mp4",
           "--no-plot")
    events = json.loads((out / "events.json").read_text())["events"]
    assert events
    for event in events:
        codec, frames, *_ = decode(out / f"walker-{event['number']}.mp4")
        assert codec == "h264" and frames == event["end_frame"] - event["start_frame"] + 1


def test_export_from_a_result_folder_and_when_its_source_is_gone(tmp_path):
    path, truth = sample("walker")
    copy = tmp_path / "clip.mp4"
    shutil.copy(path, copy)
    out = tmp_path / "result"
    run_ok("run", copy, "-d", out, "-q")
    run_ok("export", out, "-q")
    assert decode(out / "annotated.mp4")[1] == truth["frame_count"]
    copy.unlink()
    result = run_cli("export", out)
    assert result.returncode == 1
    assert result.stderr.strip().count("\n") == 0 and "gone" in result.stderr
    assert "Traceback" not in result.stderr
    result = run_cli("export", tmp_path / "nothing-here")
    assert result.returncode == 1 and "not a videvent result folder" in result.stderr


def test_export_checks_every_frame_it_scores_again_against_the_runs_scores(tmp_path):
    """The export scores the source again through a session, as the run did; a frame that
    scores otherwise than the run's scores.csv says (here the record of frame 40 altered,
    as a changed source would) stops it with one line naming that frame, and nothing it
    began is left."""
    out = tmp_path / "result"
    run_ok("run", sample("walker")[0], "-d", out, "-q", "--no-plot")
    rows = (out / "scores.csv").read_text().splitlines()
    column = rows[0].split(",").index("score")
    cells = rows[41].split(",")
    assert cells[0] == "40"
    cells[column] = f"{float(cells[column]) + 1:.6g}"
    rows[41] = ",".join(cells)
    (out / "scores.csv").write_text("\n".join(rows) + "\n")
    before = sorted(path.name for path in out.iterdir())
    result = run_cli("export", out, "--export-clips")
    assert result.returncode == 1 and result.stderr.count("\n") == 1, result.stderr
    assert "source has changed since the run: frame 40 scores" in result.stderr
    assert "or videvent has changed since" in result.stderr    # a run by another version
    assert sorted(path.name for path in out.iterdir()) == before


def test_report_rerenders_from_the_folder_without_the_video(tmp_path):
    path, _ = sample("walker")
    copy = tmp_path / "clip.mp4"
    shutil.copy(path, copy)
    out = tmp_path / "result"
    run_ok("run", copy, "-d", out, "-q", "--compare", "pca,sncp")
    (out / "report.html").unlink()
    copy.unlink()
    run_ok("report", out)
    page = (out / "report.html").read_text()
    assert "Methods side by side" in page and "data:image/jpeg;base64," in page
    assert page.count("<img") >= 3  # plot, comparison panels, one thumbnail per event


BROWSER_CHECK = r"""
import json, sys
from playwright.sync_api import sync_playwright
page_url, shot, chromium = sys.argv[1:4]
with sync_playwright() as p:
    browser = p.chromium.launch(executable_path=chromium, args=[
        "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"])
    page = browser.new_page(viewport={"width": 1200, "height": 1600})
    errors = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(page_url, wait_until="load")
    images = page.eval_on_selector_all(
        "img", "els => els.map(e => [e.complete, e.naturalWidth, e.alt])")
    page.screenshot(path=shot, full_page=True)
    browser.close()
print(json.dumps({"errors": errors, "images": images}))
"""


@pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed (.ci/run installs it)")
def test_report_opens_in_a_real_browser(tmp_path):
    pytest.importorskip("playwright")
    path, _ = sample("walker")
    out = tmp_path / "result"
    run_ok("run", path, "-d", out, "--export-video", "--compare", "pca,ancp,sncp,cop", "-q")
    shot = tmp_path / "shot.png"
    check = subprocess.run([sys.executable, "-c", BROWSER_CHECK, (out / "report.html").as_uri(),
                            str(shot), CHROMIUM], capture_output=True, text=True, timeout=120)
    assert check.returncode == 0, check.stderr[-2000:]
    found = json.loads(check.stdout.strip().splitlines()[-1])
    assert found["errors"] == []
    assert len(found["images"]) >= 3
    assert all(complete and width > 0 for complete, width, _ in found["images"]), found["images"]
    import cv2
    picture = cv2.imread(str(shot))
    assert picture is not None and picture.std() > 20  # not a blank page


def test_strip_chart_shades_events_draws_the_scores_and_a_cursor_over_the_frame():
    frames = np.arange(300)
    scores = np.where((frames > 100) & (frames < 150), 12.0, 2.0)
    whole = StripChart.of_scores(320, 40, frames, scores, 7.0, [{"core_start_frame": 101,
                                                                "core_end_frame": 149}])
    image = np.full((240, 320, 3), 200, np.uint8)
    whole.draw(image, 60)
    assert (image[:-40] == 200).all()                          # above the chart: untouched
    chart = image[-40:].astype(int)
    assert (np.abs(chart[:, whole.x_of(60)] - np.array(CURSOR_BGR)) <= 1).all()
    inside, outside = chart[:, whole.x_of(125)], chart[:, whole.x_of(250)]
    # The event's core is shaded red; elsewhere the picture shows through, darkened.
    assert inside[:, 2].mean() > inside[:, 0].mean() + 20
    assert abs(outside[:, 2].mean() - outside[:, 0].mean()) < 10
    assert outside[:, 1].max() > 150                           # the score line


def test_a_strip_chart_filled_in_as_frames_come_shows_the_past_only():
    scores = np.where((np.arange(300) > 100) & (np.arange(300) < 150), 12.0, 2.0)
    growing = StripChart(320, 40, 0, 299, 7.0, 14.0)
    for frame in range(121):
        growing.add(frame, scores[frame], 100 < frame < 150)
    image = np.full((240, 320, 3), 200, np.uint8)
    growing.draw(image, 120)
    chart = image[-40:].astype(int)
    assert chart[:, growing.x_of(30), 1].max() > 150           # the score line, so far
    assert chart[:, growing.x_of(110), 2].mean() > chart[:, growing.x_of(110), 0].mean() + 20
    # Beyond the cursor, nothing yet but the threshold line (red, never bright green).
    assert chart[:, growing.x_of(250), 1].max() < 120


def _pictures(path, colour=True):
    from videvent.sources import open_source

    with open_source(path, colour=colour) as source:
        return [frame.image for frame in source.frames()]


def test_small_frames_get_a_readable_overlay_that_leaves_the_picture_seen(tmp_path):
    import cv2

    small = tmp_path / "small.mp4"
    writer = VideoWriter(small, 160, 120, 15)
    for picture in _pictures(sample("walker")[0]):
        writer.write(cv2.resize(picture, (160, 120), interpolation=cv2.INTER_AREA))
    writer.close()
    run_ok("run", small, "-d", tmp_path / "out", "-q", "--export-video", "--no-plot")
    before = _pictures(small)
    after = _pictures(tmp_path / "out" / "annotated.mp4")
    # Frame 10 is warm-up (no model yet, no heat map): what changes is the overlay alone.
    changed = (np.abs(after[10].astype(int) - before[10].astype(int)).max(axis=2) > 40)
    assert changed.mean() < 0.25, changed.mean()
    rows = np.flatnonzero(changed[:40, 80:].any(axis=1))  # the timecode, top right
    assert rows.size and rows[-1] - rows[0] + 1 >= 10, rows
    assert changed[40:100].mean() < 0.02  # the picture between them untouched
    # The event frames: border, label, boxes and heat, still leaving most of it.
    flagged = np.flatnonzero(np.genfromtxt(tmp_path / "out" / "scores.csv", delimiter=",",
                                           names=True, dtype=None, encoding="utf-8")["flagged"])
    covered = (np.abs(after[flagged[5]].astype(int) - before[flagged[5]].astype(int))
               .max(axis=2) > 40).mean()
    assert covered < 1 / 3, covered


def test_frame_0_is_not_washed_and_boxes_are_never_specks(tmp_path):
    path, _ = sample("walker")
    run_ok("run", path, "-d", tmp_path / "out", "-q", "--export-video", "--no-plot")
    before, after = _pictures(path), _pictures(tmp_path / "out" / "annotated.mp4")
    def change(index):   # how much the overlay changed the middle of the picture
        middle = slice(60, 200)
        return np.abs(after[index][middle].astype(int)
                      - before[index][middle].astype(int)).mean()

    # The first frames (the model has seen none or a few; the reference seeded from the whole
    # file scores them) get no more heat than frames the full model scored before the walker.
    usual = np.median([change(index) for index in range(100, 180, 10)])
    assert all(change(index) < 1.1 * usual for index in (0, 1, 5)), usual
    boxes = np.atleast_1d(np.genfromtxt(tmp_path / "out" / "regions.csv", delimiter=",",
                                        names=True))
    assert boxes.size >= 20
    assert boxes["width"].min() >= 320 / 40 and boxes["height"].min() >= 320 / 40


def test_residuals_png_numbers_legend_time_axis_and_warm_up(tmp_path):
    from matplotlib.transforms import Bbox

    from videvent.output import read_events, read_scores
    from videvent.output.plot import residual_figure

    run_ok("run", sample("walker")[0], "-d", tmp_path / "out", "-q")
    document = read_events(tmp_path / "out" / "events.json")
    scores = read_scores(tmp_path / "out" / "scores.csv")
    figure = residual_figure(scores, document["events"], threshold=7, threshold_low=4.5,
                             title="walker: residual per frame")
    figure.canvas.draw()
    top, bottom = figure.axes[:2]
    title = top.title.get_window_extent()
    numbers = [text for text in top.texts if text.get_text() == "1"]
    assert numbers and not numbers[0].get_window_extent().overlaps(title)
    [event] = document["events"]
    left = bottom.transData.transform((event["core_start_frame"], 0))[0]
    right = bottom.transData.transform((event["core_end_frame"], 0))[0]
    box = bottom.get_window_extent()
    shaded = Bbox([[left, box.y0], [right, box.y1]])
    assert not bottom.get_legend().get_window_extent().overlaps(shaded)
    [clock] = top.child_axes  # the time axis along the top
    assert clock.get_xlabel() == "time (s)"
    ticks = clock.get_xticks()
    assert 0 <= ticks.min() and ticks.max() <= 300 / 15 + 1e-9 and len(ticks) >= 4
    hatched = [patch for patch in top.patches if patch.get_hatch() == "//"]
    assert len(hatched) == 1
    x0, x1 = hatched[0].get_x(), hatched[0].get_x() + hatched[0].get_width()
    assert (x0, x1) == (-0.5, 44.5)  # the warm-up: three seconds at 15 fps


def test_report_links_each_event_to_its_clip_and_moment_shows_no_python_values(tmp_path):
    import html
    import re

    out = tmp_path / "out"
    run_ok("run", sample("walker")[0], "-d", out, "-q", "--export-video", "--export-clips",
           "--clip-template", "visit-{n}.mp4")
    page = (out / "report.html").read_text()
    assert "href='visit-1.mp4'" in page and (out / "visit-1.mp4").is_file()
    assert "class='seek' data-time='11.067'" in page and "video.currentTime" in page
    video = re.search(r"<video [^>]*>", page).group(0)
    thumbnail = (out / "thumbnails" / "event001.jpg").read_bytes()
    import base64
    assert base64.b64encode(thumbnail).decode() in video  # the poster: the event, not frame 0
    assert "max-width: 960px" in page
    settings = page.split("<h2>Settings</h2>", 1)[1]
    cells = [html.unescape(c) for c in re.findall(r"<td>([^<]*)</td>", settings)]
    assert not {"None", "True", "False"} & set(cells), cells
    assert "threshold-low" in cells and "admit_threshold" not in cells


def test_a_report_without_exports_says_how_to_make_them_and_shows_no_empty_lists(tmp_path):
    """No clip and no annotated video: no empty column of links, a line that names
    ``--export-clips`` instead; the settings given as lists (regions, masks), unset, read
    "none", never ``[]``; and the clip that line names is then linked."""
    import html
    import re

    out = tmp_path / "out"
    run_ok("run", sample("walker")[0], "-d", out, "-q")
    page = (out / "report.html").read_text()
    events = page.split("<h2>Events</h2>", 1)[1].split("<h2>", 1)[0]
    assert "see it" not in events and "<td></td>" not in events
    assert "<code>--export-clips</code>" in events and "<code>videvent export</code>" in events
    settings = page.split("<h2>Settings</h2>", 1)[1]
    rows = dict(re.findall(r"<tr><td>([^<]*)</td><td>([^<]*)</td></tr>", settings))
    assert not [key for key, value in rows.items() if value in ("[]", "")], rows
    assert rows["add-region"] == rows["mask"] == rows["without"] == "none"
    run_ok("export", out, "--export-clips")
    page = html.unescape((out / "report.html").read_text())
    assert "<th>see it</th>" in page and "href='walker.event001.mp4'" in page
    assert "--export-clips" not in page


def test_the_time_axis_labels_only_seconds_recorded_none_crowding_another():
    """A 64-s watch ended its time axis `60 70`, the 70 (past the end) drawn at the last
    frame; a camera lost for half a minute put its seconds at one frame. Each label now
    stands at its own second, inside the axis, clear of the next."""
    from videvent.output.plot import residual_figure

    frames = np.arange(640)
    steady = frames / 10                             # 64 s at 10 fps
    lost = np.where(frames < 400, steady, steady + 30)   # 30 s without a frame at 40 s
    for times in (steady, lost):
        scores = {"frame": frames, "time_s": times, "residual": np.full(640, 0.5),
                  "score": np.full(640, 2.0), "status": np.full(640, "ok", dtype=object),
                  "absorbed": np.zeros(640, bool)}
        figure = residual_figure(scores, [], threshold=7)
        figure.canvas.draw()
        [clock] = figure.axes[0].child_axes
        labels = [label for label in clock.get_xticklabels() if label.get_text()]
        seconds = [float(label.get_text()) for label in labels]
        assert len(seconds) >= 5 and min(seconds) >= 0 and max(seconds) <= times[-1]
        assert seconds[-1] == (60 if times is steady else 90), seconds
        boxes = [label.get_window_extent() for label in labels]
        assert all(left.x1 < right.x0 for left, right in zip(boxes, boxes[1:])), seconds
        # Each at its own second's frame.
        axis = figure.axes[0]
        for second, box in zip(seconds, boxes):
            frame = np.interp(second, times, frames)
            assert abs((box.x0 + box.x1) / 2 - axis.transData.transform((frame, 0))[0]) < 2


def test_compare_panels_each_shade_their_own_methods_events(tmp_path):
    from videvent.output import read_events, read_scores
    from videvent.output.report import compare_figure

    out = tmp_path / "out"
    run_ok("run", sample("scene_change")[0], "-d", out, "-q", "--no-plot", "--compare",
           "sncp,pca")
    document = read_events(out / "events.json")
    run_ok("run", sample("scene_change")[0], "-d", tmp_path / "pca", "-q", "--no-plot", "-m",
           "pca")
    pca_alone = read_events(tmp_path / "pca" / "events.json")["events"]
    # PCA's events in the comparison are those of a PCA run.
    assert document["compare_events"]["pca"] == [[e["core_start_frame"], e["core_end_frame"]]
                                                 for e in pca_alone]
    # Each panel shades its own method's events, also where the methods disagree (on this
    # clip they agree, so PCA's are moved for the figure).
    document["compare_events"]["pca"] = [[10, 20], [30, 31]]
    figure = compare_figure(out, document, read_scores(out / "scores.csv")["status"])
    assert {axis.get_title().lower() for axis in figure.axes} == {"sncp", "pca"}
    for axis in figure.axes:
        method = axis.get_title().lower()
        own = (document["compare_events"].get(method) or
               [[e["core_start_frame"], e["core_end_frame"]] for e in document["events"]])
        spans = [(patch.get_x(), patch.get_x() + patch.get_width()) for patch in axis.patches]
        assert spans == [(first - 0.5, last + 0.5) for first, last in own], method


def test_a_lower_crf_keeps_the_video_closer_to_its_pictures(tmp_path):
    """``VideoWriter(crf=...)``: the benchmark's re-encoded footage (crf 10) stays closer to
    the pictures it was given than the default for people to look at (23)."""
    pictures = _pictures(sample("walker")[0])[:30]
    errors = {}
    for crf in (23, 10):
        path = tmp_path / f"crf{crf}.mp4"
        writer = VideoWriter(path, pictures[0].shape[1], pictures[0].shape[0], 15, crf=crf)
        for picture in pictures:
            writer.write(picture)
        writer.close()
        decoded = _pictures(path)
        assert len(decoded) == len(pictures)
        errors[crf] = np.mean([np.abs(a.astype(int) - b.astype(int)).mean()
                               for a, b in zip(decoded, pictures)])
    assert errors[10] < 0.8 * errors[23], errors       # 2.1 against 3.1 grey levels
