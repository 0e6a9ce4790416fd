"""What the pictures show of what was found (issue 29, item 4): the changed areas outlined by
default, with the thing that changed left as it was under the outline; the heat map as a
translucent tint on request (``--overlay heat``), or nothing (``--overlay off``); boxes only
with ``-bb``; thumbnails at the source's size up to 720 pixels high. Driven on a synthetic
scene whose moving object's pixels are known, through ``videvent run`` as a user runs it."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from types import SimpleNamespace

import cv2
import numpy as np
import pytest

from conftest import Kept, run_cli
from videvent.dashboard import Dashboard
from videvent.output.annotate import Overlay, caption
from videvent.output.clips import bgr_picture
from videvent.output.thumbnails import ThumbnailStyle, write_thumbnail
from videvent.output.video import VideoWriter
from videvent.engine import Engine
from videvent.passes import prepare
from videvent.session import SessionInfo
from videvent.settings import Settings
from videvent.sources import open_source

WIDTH, HEIGHT, FPS = 320, 240, 15
FRAMES, ARRIVES, LEAVES = 150, 60, 110
SIDE, CELL, TOP = 64, 8, 88            # the object: a 64-pixel checkerboard of 8-pixel cells


def object_left(index: int) -> int:
    return 24 + (index - ARRIVES) * 4


def scene(index: int) -> np.ndarray:
    """A still, gently textured room; from ARRIVES to LEAVES a checkerboard crosses it."""
    rows, columns = np.mgrid[0:HEIGHT, 0:WIDTH]
    room = 110 + 25 * np.sin(columns / 23.0) * np.cos(rows / 31.0)
    picture = np.repeat(room[..., None], 3, axis=2).astype(np.uint8)
    if ARRIVES <= index < LEAVES:
        cells = (np.indices((SIDE, SIDE)) // CELL).sum(axis=0) % 2
        board = np.where(cells, 230, 20).astype(np.uint8)
        left = object_left(index)
        picture[TOP:TOP + SIDE, left:left + SIDE] = board[..., None]
    return picture


@pytest.fixture(scope="module")
def crossing(tmp_path_factory):
    path = tmp_path_factory.mktemp("overlay") / "crossing.mp4"
    writer = VideoWriter(path, WIDTH, HEIGHT, FPS, crf=10)
    for index in range(FRAMES):
        writer.write(scene(index))
    writer.close()
    return path


@pytest.fixture(scope="module")
def results(crossing, tmp_path_factory):
    """``run --export-video`` with each overlay: name -> result folder."""
    folders = {}
    for name, options in {"default": [], "heat": ["--overlay", "heat"],
                          "off": ["--overlay", "off"], "boxes": ["-bb"]}.items():
        folder = tmp_path_factory.mktemp("results") / name
        done = run_cli("run", crossing, "-d", folder, "-q", "--no-plot", "--export-video",
                       *options)
        assert done.returncode == 0, done.stderr
        folders[name] = folder
    return folders


def peak_of(folder) -> int:
    events = json.loads((folder / "events.json").read_text())["events"]
    assert len(events) == 1, events
    return events[0]["peak_frame"]


def source_picture(path, index: int) -> np.ndarray:
    with open_source(path, colour=True) as source:
        for frame in source.frames():
            if frame.index == index:
                return bgr_picture(frame)
    raise AssertionError(f"no frame {index}")


def annotated_picture(folder, index: int) -> np.ndarray:
    with open_source(folder / "annotated.mp4", colour=True) as video:
        for frame in video.frames():
            if frame.index == index:
                return bgr_picture(frame)
    raise AssertionError(f"no frame {index}")


def inside_object(index: int, margin: int = 6) -> tuple[slice, slice]:
    """The object's pixels, away from its edge (where an outline goes)."""
    left = object_left(index)
    return slice(TOP + margin, TOP + SIDE - margin), slice(left + margin, left + SIDE - margin)


def grey(picture: np.ndarray) -> np.ndarray:
    return cv2.cvtColor(picture, cv2.COLOR_BGR2GRAY).astype(np.float64)


def outline_pixels(picture: np.ndarray) -> int:
    """How many pixels of ``picture`` are the outline's cyan (OUTLINE_BGR; as JPEG and H.264
    leave a thin line of it: blue and green well above red)."""
    picture = picture.astype(int)
    return int((np.minimum(picture[..., 0], picture[..., 1]) - picture[..., 2] > 60).sum())


def box_pixels(picture: np.ndarray) -> int:
    """How many pixels of ``picture`` are the boxes' green (BOX_BGR)."""
    picture = picture.astype(int)
    return int((picture[..., 1] - np.maximum(picture[..., 0], picture[..., 2]) > 60).sum())


def kept_contrast(shown: np.ndarray, source: np.ndarray, index: int) -> float:
    """The object's own contrast (its checkerboard) in ``shown``, as a share of the source's:
    1 when it looks as it did, 0 under an opaque colour."""
    where = inside_object(index)
    return grey(shown)[where].std() / grey(source)[where].std()


def test_thumbnails_show_the_object_as_it_was_with_its_outline(crossing, results):
    """The default thumbnail is at the source's size; inside the object its pixels are the
    source's (within JPEG's noise) and its checkerboard's contrast is whole; the outline is
    drawn around it; no box. The heat map of ``--overlay heat`` is a tint: the object's
    contrast is still more than half there (the old heat map, 75% opaque, left a quarter).
    ``--overlay off`` draws nothing: the thumbnail is the source's picture."""
    index = peak_of(results["default"])
    source = source_picture(crossing, index)
    where = inside_object(index)
    shown = {name: cv2.imread(str(folder / "thumbnails" / "event001.jpg"))
             for name, folder in results.items()}
    assert all(picture.shape == (HEIGHT, WIDTH, 3) for picture in shown.values())

    default = shown["default"]
    assert np.abs(grey(default)[where] - grey(source)[where]).mean() < 6
    assert kept_contrast(default, source, index) > 0.9
    ring = np.zeros((HEIGHT, WIDTH), bool)   # a band around the object's edge
    left = object_left(index)
    ring[TOP - 8:TOP + SIDE + 8, left - 8:left + SIDE + 8] = True
    ring[inside_object(index)] = False
    assert outline_pixels(default[ring]) > SIDE   # the outline goes round the object
    assert box_pixels(default) == 0

    heat = shown["heat"]
    assert np.abs(grey(heat)[where] - grey(source)[where]).mean() > 6   # tinted
    assert 0.5 < kept_contrast(heat, source, index)
    assert box_pixels(heat) == 0

    off = shown["off"]
    assert np.abs(grey(off) - grey(source)).mean() < 3
    assert outline_pixels(off) == 0


def label_pixels(picture: np.ndarray) -> int:
    """How many pixels of ``picture`` are the event label's red (EVENT_BGR: red well above
    blue and green)."""
    picture = picture.astype(int)
    return int((picture[..., 2] - np.maximum(picture[..., 0], picture[..., 1]) > 100).sum())


def test_a_thumbnail_says_which_event_it_is_what_it_was_and_when(crossing, results):
    """The thumbnail's top left corner names the event and its kind on the event's red, as
    the annotated video labels an event's frames, and its top right the frame's timecode on
    dark grey; the picture below is left as it was. ``--overlay off`` draws nothing. The label
    is the event's: another kind draws other letters there and nothing else changes."""
    index = peak_of(results["default"])
    source = source_picture(crossing, index)
    shown = {name: cv2.imread(str(results[name] / "thumbnails" / "event001.jpg"))
             for name in ("default", "off")}
    top = 48      # the label's rows, to the end of JPEG's 16-row blocks they touch
    label, stamp = (slice(0, top), slice(0, WIDTH // 2)), (slice(0, top), slice(WIDTH // 2, None))
    default, off = shown["default"], shown["off"]
    assert label_pixels(default[label]) > 200 and label_pixels(off[label]) == 0
    white = (default[label].min(axis=2) > 200).sum()          # the letters
    assert white > 30
    dark = (default[stamp].max(axis=2) < 60).sum()             # the stamp's box
    assert dark > 200 and (off[stamp].max(axis=2) < 60).sum() == 0
    below = slice(top, None)
    assert label_pixels(default[below]) == 0
    assert np.abs(grey(off) - grey(source)).mean() < 3

    # The label drawn is the one asked for: a light's thumbnail differs in its label only.
    style = ThumbnailStyle(4.5, overlay=Overlay())
    jpeg = (results["off"] / "thumbnails" / "event001.jpg").read_bytes()
    moved, light = (cv2.imdecode(np.frombuffer(style.captioned(jpeg, f"EVENT 1: {kind}", 2.0),
                                               np.uint8), cv2.IMREAD_COLOR)
                    for kind in ("moved", "light"))
    assert (moved[label] != light[label]).any()
    # (JPEG's colour is smoothed across its 16-row blocks: a row of them further down.)
    assert np.array_equal(moved[top + 16:], light[top + 16:])
    assert ThumbnailStyle(4.5, overlay=Overlay("off")).captioned(jpeg, "EVENT 1", 2.0) == jpeg
    # Where the two do not fit side by side (160 pixels wide), the label stays whole.
    small = np.full((120, 160, 3), 128, np.uint8)
    caption(small, "EVENT 12: appeared", 65.2)
    assert label_pixels(small) > 300 and (small.max(axis=2) < 60).sum() == 0


def test_boxes_only_with_bounding_box(crossing, results):
    """``-bb`` adds a box round the object to the thumbnail and the annotated video; without
    it neither has one, and ``regions.csv`` lists the boxes either way."""
    index = peak_of(results["boxes"])
    boxed = {name: (box_pixels(cv2.imread(str(results[name] / "thumbnails" / "event001.jpg"))),
                    box_pixels(annotated_picture(results[name], index)))
             for name in ("default", "boxes")}
    assert boxed["default"] == (0, 0)
    assert min(boxed["boxes"]) > 2 * SIDE, boxed
    for name in ("default", "boxes"):
        rows = (results[name] / "regions.csv").read_text().splitlines()
        assert len(rows) > 1 and rows[0].startswith("frame,event,rank")


def test_the_annotated_video_shows_the_object_through_the_overlay(crossing, results):
    """The annotated video's frame at the event's peak: the object's pixels are the
    source's (within H.264's noise) with the default outline and with none; with the heat
    map its checkerboard is still more than half as contrasted as in the source."""
    index = peak_of(results["default"])
    source = source_picture(crossing, index)
    where = inside_object(index)
    for name, at_most in (("default", 8), ("off", 8)):
        frame = annotated_picture(results[name], index)
        assert np.abs(frame[where].astype(float) - source[where]).mean() < at_most, name
        assert kept_contrast(frame, source, index) > 0.9, name
    assert kept_contrast(annotated_picture(results["heat"], index), source, index) > 0.5
    # The default outlines the object; off does not.
    outlined = {name: outline_pixels(annotated_picture(results[name], index))
                for name in ("default", "off")}
    assert outlined["default"] > 2 * SIDE and outlined["off"] == 0, outlined


def test_a_thumbnail_is_the_sources_size_up_to_720_pixels_high(tmp_path):
    """A 1080p source's thumbnail is 1280x720; a smaller one keeps its size."""
    for (width, height), expected in (((1920, 1080), (720, 1280)), ((640, 360), (360, 640))):
        residual = np.zeros((height // 8, width // 8), np.float32)
        score = SimpleNamespace(residual_image=residual,
                                block_scores=np.zeros((9, 16), np.float32))
        path = tmp_path / f"{width}.jpg"
        write_thumbnail(path, ThumbnailStyle(4.5, overlay=Overlay()).jpeg(
            np.full((height, width), 128, np.uint8), score))
        assert cv2.imread(str(path)).shape[:2] == expected


def test_the_dashboards_picture_draws_the_overlay_the_settings_ask_for(crossing):
    """The live picture of a camera (``/cameras/0/picture.jpg``) of a frame in an event: the
    object outlined by default, as it was (no outline) with ``overlay = "off"``, a box round
    it only with ``bounding_box``."""
    shown = {}
    for name, settings in {"default": Settings(), "off": Settings(overlay="off"),
                           "boxes": Settings(bounding_box=True)}.items():
        with open_source(crossing, keep_colour=True) as source:
            run, _ = prepare(source, settings)
            kept = Kept()
            Engine(run, explain=settings.threshold_low).run(kept)
            frame, score = next((frame, score) for frame, score in kept.frames
                                if frame.index == (ARRIVES + LEAVES) // 2)
        dashboard = Dashboard()
        sink = dashboard.add_camera("door")
        base = dashboard.start().split("?")[0]
        try:
            sink.on_start(SessionInfo("door", str(crossing), FPS, WIDTH, HEIGHT,
                                      settings.threshold, settings))
            sink.on_frame(frame, score, 1)
            deadline = time.monotonic() + 20     # a liveness bound, not a measure
            while True:
                try:
                    with urllib.request.urlopen(base + "cameras/0/picture.jpg",
                                                timeout=10) as answer:
                        jpeg = answer.read()
                    break
                except urllib.error.HTTPError:
                    assert time.monotonic() < deadline, "no picture was encoded"
                    time.sleep(0.05)
        finally:
            sink.close()
            dashboard.stop()
        shown[name] = cv2.imdecode(np.frombuffer(jpeg, np.uint8), cv2.IMREAD_COLOR)
    assert score.residual_image is not None
    assert outline_pixels(shown["default"]) > 2 * SIDE and box_pixels(shown["default"]) == 0
    assert outline_pixels(shown["off"]) == 0 and box_pixels(shown["off"]) == 0
    assert box_pixels(shown["boxes"]) > 2 * SIDE
