"""Regions and masks (issue 14): DVR-Scan's polygon form and region files, one-line errors, the
mask, and the guarantee that outside the watched area nothing raises the score or draws a box,
on a synthetic garden with a distraction outside the region and a person walking inside it."""

import base64
import json

import cv2
import numpy as np
import pytest

from conftest import run_cli, sample
from videvent import synthetic
from videvent.output import read_scores
from videvent.output.video import VideoWriter

from videvent.passes import build_segmenter, detector_for
from videvent.preprocess import BLANK, OK, Preprocessor, frame_health, working_size
from videvent.regions import (RegionError, Regions, covered_pixels, load_region_file,
                              parse_polygon, save_region_file)
from videvent.settings import Settings

LEFT_PART = ((0, 0), (175, 0), (175, 239), (0, 239))   # of the 320x240 garden


# -- the polygon form and region files --------------------------------------------------------
@pytest.mark.parametrize("given", ["10 20 30 40 50 60", ["10", "20", "30", "40", "50", "60"],
                                   "(10,20) (30,40) (50,60)", "10, 20, 30, 40, 50, 60",
                                   [10, 20, 30, 40, 50, 60], [[10, 20], [30, 40], [50, 60]]])
def test_a_polygon_is_x_y_pairs_in_any_of_dvr_scans_spellings(given):
    assert parse_polygon(given) == ((10, 20), (30, 40), (50, 60))


@pytest.mark.parametrize("given, problem", [
    ("10 20 30 40", "2 points, a region needs at least 3"),
    ("10 20 30 40 50", "5 numbers is not a list of x y pairs"),
    ("10 20 30 forty 50 60", "'forty' is not a whole number"),
    ("", "0 points"),
])
def test_a_bad_polygon_is_a_one_line_error_naming_it(given, problem):
    with pytest.raises(RegionError) as error:
        Regions.from_options(add_region=["0 0 5 0 5 5", given])
    message = str(error.value)
    assert message.startswith("region 2: ") and problem in message and "\n" not in message


def test_region_file_round_trip_skips_comments_and_blank_lines(tmp_path):
    path = tmp_path / "regions.txt"
    path.write_text("# the lawn\n\n10 20 30 40 50 60\n  0 0 100 0 100 50 0 50  \n")
    polygons = load_region_file(path)
    assert polygons == [((10, 20), (30, 40), (50, 60)), ((0, 0), (100, 0), (100, 50), (0, 50))]
    saved = tmp_path / "saved.txt"
    save_region_file(saved, polygons)
    assert saved.read_text() == "10 20 30 40 50 60\n0 0 100 0 100 50 0 50\n"
    assert load_region_file(saved) == polygons
    assert [p.name for p in tmp_path.iterdir()] and not list(tmp_path.glob(".*tmp"))


def test_region_file_errors_name_the_file_and_line(tmp_path):
    path = tmp_path / "regions.txt"
    path.write_text("10 20 30 40 50 60\n1 2 3\n")
    with pytest.raises(RegionError, match=r"regions.txt, line 2: 3 numbers"):
        Regions.from_options(load_region=[path])
    with pytest.raises(RegionError, match=r"cannot be read"):
        load_region_file(tmp_path / "missing.txt")
    (tmp_path / "empty.txt").write_text("# nothing\n")
    with pytest.raises(RegionError, match=r"holds no polygon"):
        load_region_file(tmp_path / "empty.txt")


def test_a_region_outside_the_frame_is_an_error_naming_the_point():
    regions = Regions.from_options(add_region=["0 0 319 0 319 239"],
                                   ignore_region=["300 10 320 10 300 30"])
    regions.check(321, 240)
    with pytest.raises(RegionError, match=r"^mask 1: point \(320, 10\) is outside the 320x240"):
        regions.check(320, 240)
    with pytest.raises(RegionError, match="nothing left to watch"):
        Regions(ignore=(((0, 0), (99, 0), (99, 99), (0, 99)),)).check(100, 100)


def test_mask_is_the_watched_regions_minus_the_ignored_ones_at_any_size():
    regions = Regions(watch=(((0, 0), (99, 0), (99, 49), (0, 49)),),      # top half
                      ignore=(((0, 0), (49, 0), (49, 49), (0, 49)),))      # its left half
    mask = regions.mask((100, 100))
    assert mask.shape == (100, 100) and mask.dtype == bool
    assert mask[:50, 50:].all() and not mask[:50, :50].any() and not mask[50:].any()
    small = regions.mask((100, 100), (10, 20))
    assert small.shape == (20, 10) and small[:10, 5:].all() and not small[10:].any()
    assert Regions().mask((4, 3)).all()


# A bow-tie over the whole 320x240 frame: its two lobes (left and right) cover half of it,
# but their signed areas cancel (the shoelace formula says 0).
BOW_TIE = "0 0 319 239 319 0 0 239"


def test_a_region_is_as_big_as_its_mask_a_bow_tie_half_the_frame_a_line_nothing():
    """The size checked is counted on the mask the detector uses (issue 51), not the signed
    area: a bow-tie is accepted, a line, a point or a path back on itself covers nothing."""
    working = working_size(320, 240)
    bow_tie = Regions.from_options(add_region=[BOW_TIE])
    bow_tie.check(320, 240, working)
    share = bow_tie.mask((320, 240)).mean()
    assert 0.48 < share < 0.52, share
    assert abs(covered_pixels(bow_tie.watch[0]) - 320 * 240 / 2) < 0.03 * 320 * 240
    for flat in ("0 0 100 100 200 200", "50 50 50 50 50 50", "0 0 100 0 100 100 100 0"):
        with pytest.raises(RegionError, match="^region 1: covers 0 source pixels"):
            Regions.from_options(add_region=[flat]).check(320, 240, working)
    # Even at full size (one source pixel to a working pixel) a line covers none.
    with pytest.raises(RegionError, match="^region 1: covers 0 source pixels"):
        Regions.from_options(add_region=["0 0 100 100 200 200"]).check(320, 240, (320, 240))


def test_run_watches_a_bow_tie_region(tmp_path):
    video, _ = sample("walker")     # 320x240
    done = run_cli("run", video, "-a", BOW_TIE, "-et", "20", "-d", tmp_path / "out",
                   "--no-plot", "-q")
    assert done.returncode == 0, done.stderr
    document = json.loads((tmp_path / "out" / "events.json").read_text())
    assert document["settings"]["add_region"] == [BOW_TIE]


def test_regions_are_drawn_on_pictures_of_any_size():
    regions = Regions(watch=(LEFT_PART,), ignore=(((200, 20), (300, 20), (300, 80)),))
    picture = np.zeros((120, 160, 3), np.uint8)                # half the source size
    regions.draw(picture, (320, 240))
    green = (picture[..., 1] > 100) & (picture[..., 2] < 50)
    red = (picture[..., 2] > 100) & (picture[..., 1] < 50)
    assert green[:, 85:90].any() and not green[:, 95:].any()   # the edge at x 175 -> 87
    assert red[:, 100:151].any() and not red[:, :95].any()


# -- the preprocessor ---------------------------------------------------------------------------
def test_without_regions_the_preprocessor_is_unchanged():
    picture = synthetic.walker_scene().frame(200)
    plain = Preprocessor(160, 120)(picture)
    expected = cv2.resize(cv2.cvtColor(picture, cv2.COLOR_BGR2GRAY), (160, 120),
                          interpolation=cv2.INTER_AREA).astype(np.float32).ravel()
    assert np.array_equal(plain, expected)
    assert np.array_equal(Preprocessor(160, 120, regions=Regions())(picture), expected)


def test_outside_the_region_the_detector_sees_zeros_and_health_reads_the_region():
    regions = Regions(watch=(LEFT_PART,))
    preprocess = Preprocessor(160, 120, regions=regions, source_size=(320, 240))
    picture = synthetic.walker_scene().frame(0)
    vector = preprocess(picture).reshape(120, 160)
    assert not vector[:, 88:].any() and vector[:, :87].all()
    # A flat grey picture is blank inside the region although the zeros around it make contrast.
    grey = preprocess(np.full((240, 320, 3), 128, np.uint8))
    assert frame_health(grey, None) == OK
    assert frame_health(grey, None, preprocess.watched) == BLANK
    colour = Preprocessor(160, 120, colour=True, regions=regions, source_size=(320, 240))
    assert not colour(picture).reshape(120, 160, 3)[:, 88:].any()
    assert np.array_equal(colour.watched, np.repeat(preprocess.watched, 3))


def test_a_working_pixel_with_any_of_the_region_in_it_is_watched():
    """A region edge that covers 3 of the 8 source columns a working pixel averages: that
    pixel carries the region's light, so it is watched (a 0/1 mask rounded it away)."""
    regions = Regions(watch=(parse_polygon("0 0 2 0 2 719 0 719", "sliver"),))
    preprocess = Preprocessor(160, 90, regions=regions, source_size=(1280, 720))
    vector = preprocess(np.full((720, 1280), 200, np.uint8)).reshape(90, 160)
    carrying = vector > 0
    assert carrying[:, 0].all() and not carrying[:, 1:].any()
    assert np.array_equal(preprocess.watched.reshape(90, 160), carrying)


def test_a_light_switched_inside_the_region_steps_the_brightness_as_much():
    """The brightness-step score reads the log of the frame's mean: the zeros outside scale
    the mean by a fixed share, so halving the light inside still steps it by log 2."""
    preprocess = Preprocessor(160, 120, regions=Regions(watch=(LEFT_PART,)),
                              source_size=(320, 240))
    picture = synthetic.walker_scene(noise_sigma=0).frame(0)
    dimmed = (picture // 2).astype(np.uint8)
    step = np.log(preprocess(picture).mean()) - np.log(preprocess(dimmed).mean())
    assert step == pytest.approx(np.log(2), abs=0.01)


# -- the guarantee, end to end ------------------------------------------------------------------
FIRST, LAST = 120, 245      # the walker crosses the garden about frames 180..230


@pytest.fixture(scope="module")
def distracted_garden():
    """The walker garden with a white square jumping about the right part of the picture,
    outside ``LEFT_PART``, every four frames: a distraction in view all the time."""
    clip = synthetic.walker_scene()
    spots = np.random.default_rng(5).integers([200, 10], [300, 200], size=(clip.frame_count, 2))
    frames, walker_inside = [], []
    inside = Regions(watch=(LEFT_PART,)).mask(clip.size)
    for index in range(FIRST, LAST + 1):
        picture = clip.frame(index)
        walker_inside.append(bool((picture != clip.background_frame(index))[inside].any()))
        x, y = (int(v) for v in spots[index // 4])
        cv2.rectangle(picture, (x, y), (x + 16, y + 16), (255, 255, 255), -1)
        frames.append(picture)
    return clip, frames, np.array(walker_inside)


def detect(clip, frames, regions):
    """Frames -> Preprocessor -> detector -> segmenter, as a run does: (flagged frame
    indices, events, the largest residual outside the watched area)."""
    settings = Settings()
    width, height = working_size(*clip.size, max_side=settings.working_size)
    preprocess = Preprocessor(width, height, regions=regions, source_size=clip.size)
    detector = detector_for(settings, (height, width), clip.fps, watched=preprocess.watched)
    segmenter = build_segmenter(settings, clip.fps)
    outside = (np.zeros((height, width), bool) if preprocess.watched is None
               else ~preprocess.watched.reshape(height, width))
    flagged, previous, leak = [], None, 0.0
    for index, picture in enumerate(frames, start=FIRST):
        vector = preprocess(picture)
        verdict = detector.process_frame(index, index / clip.fps, vector,
                                         frame_health(vector, previous, preprocess.watched),
                                         explain=True)
        previous = vector
        if verdict.residual_image is not None:           # None before the model's first frames
            leak = max(leak, float(np.abs(verdict.residual_image[outside]).max(initial=0.0)))
        flagged += [d.index for d in segmenter.update(index, verdict.time_s, verdict.score)
                    if d.flagged]
    flagged += [d.index for d in segmenter.finish() if d.flagged]
    return np.array(flagged, int), segmenter.events, leak


def test_outside_the_region_nothing_is_flagged_and_the_event_inside_is_found(distracted_garden):
    clip, frames, walker_inside = distracted_garden
    flagged, events, leak = detect(clip, frames, Regions(watch=(LEFT_PART,)))
    assert len(events) == 1 and walker_inside[events[0].peak_frame - FIRST]
    assert shows_the_walker(walker_inside, flagged - FIRST)
    assert leak == 0.0                                 # so no box can be drawn outside
    # Without the region the distraction is flagged, away from the walker too.
    flagged, events, _ = detect(clip, frames, None)
    assert (~walker_inside[flagged - FIRST]).sum() > 10


# -- through the command line, as a user runs it ------------------------------------------------
LEFT_TEXT = "0 0 175 0 175 239 0 239"
RIGHT_TEXT = "176 0 319 0 319 239 176 239"


@pytest.fixture(scope="module")
def garden_video(distracted_garden, tmp_path_factory):
    """The distracted garden as an H.264 file (frame 0 is the scene's frame FIRST)."""
    clip, frames, walker_inside = distracted_garden
    path = tmp_path_factory.mktemp("garden") / "garden.mp4"
    writer = VideoWriter(path, *clip.size, clip.fps)
    for picture in frames:
        writer.write(picture)
    writer.close()
    return path, walker_inside


def flagged_frames(folder) -> np.ndarray:
    scores = read_scores(folder / "scores.csv")
    return scores["frame"][scores["flagged"].astype(bool)]


def shows_the_walker(walker_inside, flagged) -> bool:
    """Every flagged frame shows the walker inside, or follows one that did (motion is a
    change from the frame before)."""
    return bool((walker_inside[flagged] | walker_inside[flagged - 1]).all())


def test_run_with_a_region_flags_only_the_walker_inside_it(garden_video, tmp_path):
    video, walker_inside = garden_video
    # Without a region, the distraction is flagged: the scene through the CLI has one.
    assert run_cli("run", video, "-d", tmp_path / "all", "--no-plot", "-q").returncode == 0
    flagged = flagged_frames(tmp_path / "all")
    assert (~walker_inside[flagged]).sum() > 10

    done = run_cli("run", video, "-a", LEFT_TEXT, "-d", tmp_path / "left", "--export-video",
                   "-q")
    assert done.returncode == 0, done.stderr
    document = json.loads((tmp_path / "left" / "events.json").read_text())
    events = document["events"]
    assert len(events) == 1 and walker_inside[events[0]["peak_frame"]]
    flagged = flagged_frames(tmp_path / "left")
    assert len(flagged) and shows_the_walker(walker_inside, flagged)
    assert document["settings"]["add_region"] == [LEFT_TEXT]
    # The region is outlined (green) on the thumbnail and on the annotated video, at x 175;
    # right of it, outside the region, the picture is the source's (no heat, no box).
    garden = decoded(video)
    thumbnail = tmp_path / "left" / "thumbnails" / "event001.jpg"
    assert_outlined(cv2.imread(str(thumbnail)), garden[events[0]["peak_frame"]])
    assert_outlined(decoded(tmp_path / "left" / "annotated.mp4")[0], garden[0])
    # The report's picture of the event is that outlined thumbnail.
    report = (tmp_path / "left" / "report.html").read_text()
    assert base64.b64encode(thumbnail.read_bytes()).decode() in report


def decoded(video) -> list[np.ndarray]:
    capture = cv2.VideoCapture(str(video))
    pictures = []
    while (read := capture.read())[0]:
        pictures.append(read[1])
    capture.release()
    return pictures


def assert_outlined(picture, source):
    """``picture`` (the annotated video's, or a grey thumbnail) has the green outline of
    LEFT_TEXT over ``source``, and nothing else greener than it right of the outline."""
    source = cv2.resize(source, picture.shape[1::-1], interpolation=cv2.INTER_AREA)
    greener = greenness(picture) - greenness(source) > 40
    rows = slice(picture.shape[0] // 5, picture.shape[0] // 2)   # the wall: not green, no text
    edge = round(175 * picture.shape[1] / 320)
    assert greener[rows, edge - 2:edge + 3].any(axis=1).all()
    assert greener[rows, edge + 5:].mean() < 0.01


def greenness(picture: np.ndarray) -> np.ndarray:
    picture = picture.astype(int)
    return picture[..., 1] - np.maximum(picture[..., 0], picture[..., 2])


def test_region_files_and_masks_from_a_config_file_watch_the_same_area(garden_video, tmp_path):
    video, walker_inside = garden_video
    settings = tmp_path / "settings"
    settings.mkdir()
    (settings / "whole.txt").write_text("# the whole picture\n0 0 319 0 319 239 0 239\n")
    (settings / "right.txt").write_text(RIGHT_TEXT + "\n")
    # Files named in a config file are found beside it, wherever the command runs.
    (settings / "garden.toml").write_text('load-region = "whole.txt"\nmask = ["right.txt"]\n')
    done = run_cli("run", video, "-c", settings / "garden.toml", "-d", tmp_path / "out",
                   "--no-plot", "-q")
    assert done.returncode == 0, done.stderr
    document = json.loads((tmp_path / "out" / "events.json").read_text())
    assert document["settings"]["add_region"] == ["0 0 319 0 319 239 0 239"]
    assert document["settings"]["ignore_region"] == [RIGHT_TEXT]
    assert len(document["events"]) == 1
    flagged = flagged_frames(tmp_path / "out")
    assert len(flagged) and shows_the_walker(walker_inside, flagged)


@pytest.mark.parametrize("flags, message", [
    (["-a", "10 10 100 10"], "region 1: 2 points, a region needs at least 3 points"),
    (["-a", LEFT_TEXT, "-a", "0 0 400 0 400 100"],
     "region 2: point (400, 0) is outside the 320x240 frame"),
    (["-R", "missing.txt"], "region file 'missing.txt': cannot be read"),
    # A line, and a sliver under one working pixel: the detector would watch nothing.
    (["-a", "0 0 100 0 200 0"], "region 1: covers 0 source pixels, less than one pixel"),
    (["-a", LEFT_TEXT, "-a", "5 5 6 5 5 6"], "region 2: covers 0 source pixels"),
    (["-a", " ".join(f"{10 + i % 100} {10 + i // 100}" for i in range(1001))],
     "region 1: 1001 points, at most 1000"),
])
def test_a_bad_region_is_one_line_before_anything_is_written(garden_video, tmp_path, flags,
                                                             message):
    video, _ = garden_video
    done = run_cli("run", video, *flags, "-d", tmp_path / "out", cwd=tmp_path)
    assert done.returncode != 0
    assert message in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert not (tmp_path / "out").exists()
