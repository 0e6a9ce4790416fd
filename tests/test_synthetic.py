"""Tests for the synthetic scenes and the bundled sample videos built from them."""

from __future__ import annotations

import json
from pathlib import Path

import cv2
import numpy as np
import pytest

from videvent import synthetic
from videvent.synthetic import SAMPLE_SCENES, TREE_REPEAT_FRAMES

SAMPLE_DIR = Path(__file__).resolve().parent.parent / "sample_videos"
ALL_SCENES = {**SAMPLE_SCENES, "moving_square": synthetic.moving_square_scene}


def runs(flags) -> list[list[int]]:
    """Inclusive [first, last] ranges of consecutive true flags (written here, not imported, on purpose)."""
    indices = np.flatnonzero(flags)
    if indices.size == 0:
        return []
    breaks = np.flatnonzero(np.diff(indices) > 1)
    firsts = np.concatenate([[indices[0]], indices[breaks + 1]])
    lasts = np.concatenate([indices[breaks], [indices[-1]]])
    return [[int(first), int(last)] for first, last in zip(firsts, lasts)]


def grey(image: np.ndarray) -> np.ndarray:
    return cv2.cvtColor(image, cv2.COLOR_BGR2GRAY).astype(np.float32)


def test_same_seed_gives_identical_frames_and_another_seed_does_not():
    first, again, other = synthetic.walker_scene(seed=3), synthetic.walker_scene(seed=3), synthetic.walker_scene(seed=4)
    for index in (0, 17, 120, 205, 299):
        assert np.array_equal(first.frame(index), again.frame(index))
        assert not np.array_equal(first.frame(index), other.frame(index))
    assert first.ground_truth() == again.ground_truth()


def test_frames_iterator_matches_random_access():
    clip = synthetic.moving_square_scene(seed=1)
    streamed = list(clip.frames())
    assert len(streamed) == clip.frame_count
    for index in (clip.frame_count - 1, 0, 31):  # out of order on purpose
        assert np.array_equal(streamed[index], clip.frame(index))
    assert streamed[0].shape == (clip.size[1], clip.size[0], 3) and streamed[0].dtype == np.uint8
    with pytest.raises(IndexError):
        clip.frame(clip.frame_count)


@pytest.mark.parametrize("name", sorted(ALL_SCENES))
def test_event_frames_are_exactly_where_the_foreground_changes_pixels(name):
    clip = ALL_SCENES[name]()
    changed = [
        np.any(clip.frame(index) != clip.background_frame(index))
        for index in range(clip.frame_count)
    ]
    assert runs(changed) == clip.event_frames


def test_default_walker_crosses_once_around_frames_180_to_230():
    clip = synthetic.walker_scene()
    assert (clip.fps, clip.size, clip.frame_count) == (15, (320, 240), 300)
    [[first, last]] = clip.event_frames
    assert abs(first - 180) <= 3 and abs(last - 230) <= 3


def test_walker_is_about_a_third_of_the_frame_tall():
    clip = synthetic.walker_scene(noise_sigma=0)
    rows = np.flatnonzero(np.any(clip.frame(205) != clip.background_frame(205), axis=(1, 2)))
    assert 0.28 <= (rows[-1] - rows[0] + 1) / clip.size[1] <= 0.38


def test_long_event_outlasts_half_a_window_but_not_the_absorb_time():
    clip = synthetic.long_event_scene()
    [[first, last]] = clip.event_frames
    assert 100 // 2 < last - first + 1 < 10 * clip.fps
    assert clip.frame_count == 30 * clip.fps


def test_scene_change_is_lasting():
    clip = synthetic.scene_change_scene()
    assert clip.frame_count == 450
    assert clip.change_frame == 150 and clip.lasting_change
    assert clip.event_frames == [[150, 449]]


def test_blank_frames_are_black_and_frozen_frames_repeat_the_previous_one():
    clip = synthetic.blank_frames_scene()
    assert clip.blank_frames == [[90, 99]] and clip.frozen_frames == [[120, 164]]
    for first, last in clip.blank_frames:
        for index in range(first, last + 1):
            assert not clip.frame(index).any()
        assert clip.frame(first - 1).any() and clip.frame(last + 1).any()
    for first, last in clip.frozen_frames:
        held = clip.frame(first - 1)
        for index in range(first, last + 1):
            assert np.array_equal(clip.frame(index), held)
        assert not np.array_equal(clip.frame(last + 1), held)
    [[walker_first, _]] = clip.event_frames
    assert walker_first > clip.frozen_frames[-1][1]


def test_lighting_drifts_slowly_then_drops_at_lights_off():
    clip = synthetic.lighting_scene()
    assert clip.lights_off_frame == 380
    brightness = {index: grey(clip.background_frame(index)).mean() for index in (0, 10, 225, 379, 380, 449)}
    assert brightness[225] > 1.5 * brightness[0]  # gain 0.55 -> 1.05
    assert abs(brightness[10] - brightness[0]) < 0.02 * brightness[0]  # slow: no jump
    assert brightness[380] < 0.5 * brightness[379]  # sudden lights-off
    assert abs(brightness[449] - brightness[380]) < 0.1 * brightness[380]  # and it stays off
    [[first, last]] = clip.event_frames
    assert 150 < first and last < clip.lights_off_frame


def test_moving_square_boxes_match_its_pixels():
    clip = synthetic.moving_square_scene(noise_sigma=0)
    assert len(clip.boxes) == clip.frame_count
    positions = set()
    for index, box in enumerate(clip.boxes):
        mask = np.any(clip.frame(index) != clip.background_frame(index), axis=2).astype(np.uint8)
        assert tuple(box) == cv2.boundingRect(cv2.findNonZero(mask))
        assert box[2] == box[3] == 16 and mask.sum() == 16 * 16
        assert clip.frame(index)[mask > 0].min() >= 240  # bright
        positions.add(box[:2])
    assert len(positions) == clip.frame_count  # it moves every frame


def test_waving_tree_keeps_a_frame_differencer_as_busy_as_the_walker():
    # A plain differencer (mean abs grey difference to the previous frame)
    # must see about as much motion in the tree as in the walker.
    clip = synthetic.walker_scene(noise_sigma=0)
    tree_rows = slice(0, synthetic.WATER_TOP)  # leave the pond out: the tree alone must be busy
    [[first, last]] = clip.event_frames
    indices = range(first - 20, last + 21)
    with_walker = np.array([grey(clip.frame(index))[tree_rows] for index in indices])
    background = np.array([grey(clip.background_frame(index))[tree_rows] for index in indices])
    tree_energy = np.abs(np.diff(background, axis=0)).mean()
    walker_energy = (np.abs(np.diff(with_walker, axis=0)) - np.abs(np.diff(background, axis=0)))[20:-20].mean()
    assert walker_energy > 0.3
    assert tree_energy > 0.75 * walker_energy


def test_dynamic_background_is_periodic_and_low_rank():
    clip = synthetic.walker_scene(noise_sigma=0)
    for index in (0, 13, 40):
        assert np.array_equal(clip.background_frame(index), clip.background_frame(index + TREE_REPEAT_FRAMES))
        assert not np.array_equal(clip.background_frame(index), clip.background_frame(index + 1))
    window = np.array([grey(clip.background_frame(index)).ravel() for index in range(100)])
    singular = np.linalg.svd(window - window.mean(axis=0), compute_uv=False)
    energy = np.cumsum(singular**2) / np.sum(singular**2)
    assert energy[9] > 0.7  # a few components carry most of the motion
    assert singular[TREE_REPEAT_FRAMES] < 1e-3 * singular[0]  # exact repeats: rank below the period


@pytest.mark.parametrize("name", sorted(SAMPLE_SCENES))
def test_sample_video_matches_its_ground_truth_and_scene(name):
    truth = json.loads((SAMPLE_DIR / f"{name}.json").read_text())
    clip = SAMPLE_SCENES[name]()
    # A stale sample (scene code changed, videos not rebuilt) fails here.
    assert truth == clip.ground_truth()

    capture = cv2.VideoCapture(str(SAMPLE_DIR / f"{name}.mp4"))
    try:
        ok, first = capture.read()
        assert ok
        count = 1
        while capture.grab():
            count += 1
    finally:
        capture.release()
    assert count == truth["frame_count"]
    assert first.shape == (truth["height"], truth["width"], 3)
    assert np.abs(first.astype(np.float32) - clip.frame(0)).mean() < 3


def test_sample_videos_fit_the_size_budget():
    total = sum(path.stat().st_size for path in SAMPLE_DIR.iterdir() if path.is_file())
    assert total < 5_000_000  # 5 MB, the budget for bundled samples
