"""Frame health at its thresholds: blank, frozen, corrupt or ok."""

import numpy as np
import pytest

from videvent.preprocess import BLANK, BLANK_STD, CORRUPT, FROZEN, OK, frame_health

rng = np.random.default_rng(7)
PICTURE = (rng.random(160 * 90) * 255).astype(np.float32)


def flat_with_spread(std: float) -> np.ndarray:
    signs = np.where(np.arange(160 * 90) % 2 == 0, 1.0, -1.0)  # exact standard deviation
    return (100.0 + std * signs).astype(np.float32)


@pytest.mark.parametrize("std, expected", [(0.0, BLANK), (0.9 * BLANK_STD, BLANK),
                                           (1.1 * BLANK_STD, OK), (40.0, OK)])
def test_blank_is_a_spread_below_a_grey_level(std, expected):
    assert frame_health(flat_with_spread(std), None) == expected


def test_frozen_is_a_repeat_and_a_still_scene_is_not():
    assert frame_health(PICTURE.copy(), PICTURE) == FROZEN
    # A repeat coded again by a lossy encoder: every pixel within a grey level.
    assert frame_health(PICTURE + np.float32(0.75), PICTURE) == FROZEN
    # A still scene: sensor noise moves one pixel in a thousand by three grey levels.
    still = PICTURE.copy()
    still[::1000] += 3.0
    assert frame_health(still, PICTURE) == OK


def test_undecoded_frame_is_corrupt():
    assert frame_health(None, PICTURE) == CORRUPT
