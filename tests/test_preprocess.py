"""Frame health at its thresholds: blank, a repeat, corrupt or ok; and when repeats are a frozen
source."""

import numpy as np
import pytest

from videvent.preprocess import (BLANK, BLANK_STD, CORRUPT, FROZEN, OK, REPEAT, HealthCheck,
                                 frame_health)

rng = np.random.default_rng(7)
PICTURE = (rng.random(160 * 90) * 255).astype(np.float32)


def flat_with_spread(std: float) -> np.ndarray:
    signs = np.where(np.arange(160 * 90) % 2 == 0, 1.0, -1.0)  # exact standard deviation
    return (100.0 + std * signs).astype(np.float32)


@pytest.mark.parametrize("std, expected", [(0.0, BLANK), (0.9 * BLANK_STD, BLANK),
                                           (1.1 * BLANK_STD, OK), (40.0, OK)])
def test_blank_is_a_spread_below_a_grey_level(std, expected):
    assert frame_health(flat_with_spread(std), None) == expected


def test_a_repeat_is_the_same_picture_and_a_still_scene_is_not():
    assert frame_health(PICTURE.copy(), PICTURE) == REPEAT
    # A repeat coded again by a lossy encoder: every pixel within a grey level.
    assert frame_health(PICTURE + np.float32(0.75), PICTURE) == REPEAT
    # A still scene: sensor noise moves one pixel in a thousand by three grey levels.
    still = PICTURE.copy()
    still[::1000] += 3.0
    assert frame_health(still, PICTURE) == OK


def test_undecoded_frame_is_corrupt():
    assert frame_health(None, PICTURE) == CORRUPT


def test_repeats_are_a_frozen_source_once_the_picture_has_stood_still_long_enough():
    health_of = HealthCheck(frozen_after=4)
    other = PICTURE[::-1].copy()
    # The picture, then three repeats: it has stood still for four frames at the third.
    assert [health_of(x) for x in (PICTURE, PICTURE, PICTURE, PICTURE, PICTURE)] == [
        OK, REPEAT, REPEAT, FROZEN, FROZEN]
    # A new picture ends the stall; its repeats start the count again.
    assert [health_of(x) for x in (other, other, other)] == [OK, REPEAT, REPEAT]
    # A frame lost to damage, or a blank one, breaks the run too.
    assert [health_of(x) for x in (None, other, other, other)] == [CORRUPT, REPEAT, REPEAT,
                                                                   REPEAT]
    assert health_of(flat_with_spread(0.0)) == BLANK


def test_repeats_are_judged_on_the_watched_features_only():
    watched = np.zeros(PICTURE.size, bool)
    watched[:100] = True
    moved_outside = PICTURE.copy()
    moved_outside[200:] += 50.0
    health_of = HealthCheck(frozen_after=2, watched=watched)
    assert [health_of(x) for x in (PICTURE, moved_outside)] == [OK, FROZEN]
