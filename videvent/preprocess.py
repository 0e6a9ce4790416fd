"""Preprocess stage: decoded frame -> small float vector, and a check of the frame's health.

The detector works on a downscaled grey frame (colour is an option), vectorised. Downscaling
to a working size of about 160 pixels on the long side keeps the per-frame cost of the
detector small and independent of the input resolution, and averages away sensor noise.
"""

from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np

# A frame whose grey levels vary less than this (standard deviation, 0..255 scale) carries
# no picture: black, white or a single flat colour (lost signal, lens cap, encoder filler).
BLANK_STD = 1.0

# A frame none of whose pixels differs from the previous frame's by more than this (grey
# levels, at the working size) repeats it: a stalled decoder or camera. A repeat that a lossy
# encoder coded again comes out within a level of the first; a still scene's sensor noise
# moves some of its thousands of pixels by more.
FROZEN_MAX_DIFFERENCE = 1.0

# Frame health, as reported per frame in scores.csv.
OK, BLANK, FROZEN, CORRUPT = "ok", "blank", "frozen", "corrupt"


def working_size(width: int, height: int, *, max_side: int = 160,
                 downscale_factor: int | None = None) -> tuple[int, int]:
    """The (width, height) the detector works at."""
    if downscale_factor is not None:
        if downscale_factor < 1:
            raise ValueError(f"downscale factor must be 1 or more, got {downscale_factor}")
        return max(1, width // downscale_factor), max(1, height // downscale_factor)
    if max_side < 8:
        raise ValueError(f"working size must be at least 8 pixels, got {max_side}")
    scale = min(1.0, max_side / max(width, height))
    return max(1, round(width * scale)), max(1, round(height * scale))


@dataclass
class Preprocessor:
    """Turns decoded frames (grey HxW or BGR HxWx3 uint8) into float32 vectors."""

    width: int
    height: int
    colour: bool = False

    @property
    def n_features(self) -> int:
        return self.width * self.height * (3 if self.colour else 1)

    def __call__(self, image: np.ndarray) -> np.ndarray:
        if image.ndim == 3 and not self.colour:
            image = cv2.cvtColor(image, cv2.COLOR_BGR2GRAY)
        elif image.ndim == 2 and self.colour:
            image = cv2.cvtColor(image, cv2.COLOR_GRAY2BGR)
        if image.shape[1] != self.width or image.shape[0] != self.height:
            # INTER_AREA averages the pixels it merges: the cheapest noise filter there is.
            image = cv2.resize(image, (self.width, self.height), interpolation=cv2.INTER_AREA)
        return image.astype(np.float32).ravel()


def frame_health(vector: np.ndarray | None, previous: np.ndarray | None) -> str:
    """'corrupt' (not decoded), 'blank' (no picture), 'frozen' (the source repeats the last
    frame exactly: a stalled decoder or camera) or 'ok'.

    Frozen means no pixel moved by more than FROZEN_MAX_DIFFERENCE: a still scene's sensor
    noise moves some pixel by more every frame, and is a scene to score, not a stalled source.
    """
    if vector is None:
        return CORRUPT
    # OpenCV's reductions: a tenth of the cost of numpy's on a working-size frame, which
    # matters at hundreds of frames a second.
    if float(cv2.meanStdDev(vector)[1][0, 0]) < BLANK_STD:
        return BLANK
    if previous is not None and cv2.norm(vector, previous, cv2.NORM_INF) <= FROZEN_MAX_DIFFERENCE:
        return FROZEN
    return OK
