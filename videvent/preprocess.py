"""Preprocess stage: decoded frame -> small float vector, and a check of the frame's health.

The detector works on a downscaled grey frame (colour is an option), vectorised. Downscaling
to a working size of about 160 pixels on the long side keeps the per-frame cost of the
detector small and independent of the input resolution, and averages away sensor noise.

With regions (``videvent.regions``), every pixel the detector must not look at is set to 0 at
the source size, before the downscale: no pixel outside the watched area reaches the detector,
not even blended into a pixel on the region's edge. Zero, of all constants, because the
detector reconstructs each frame from a span of earlier frames: an area that is 0 in all of
them is 0 in every reconstruction, so its residual, hence its blocks' energy, is exactly nil
whatever happens inside; and the frame's mean brightness, whose log the brightness-step score
reads, is the watched area's mean times a fixed share, so a light switched inside the region
steps its log by the same amount as without the mask.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import cv2
import numpy as np

from .regions import Regions
from .status import BLANK, CORRUPT, FROZEN, OK, REPEAT  # noqa: F401 (a frame's health)

# A frame whose grey levels vary less than this (standard deviation, 0..255 scale) carries
# no picture: black, white or a single flat colour (lost signal, lens cap, encoder filler).
BLANK_STD = 1.0

# A frame none of whose pixels differs from the previous frame's by more than this (grey
# levels, at the working size) repeats it: a stalled decoder or camera, or a still scene that
# a low bit rate coded as a repeat. A repeat that a lossy encoder coded again comes out within
# a level of the first; a still scene's sensor noise moves some of its thousands of pixels by
# more.
FROZEN_MAX_DIFFERENCE = 1.0



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
    """Turns decoded frames (grey HxW or BGR HxWx3 uint8) into float32 vectors.

    ``regions`` (with ``source_size``, the (width, height) of the decoded pictures): pixels
    outside the watched area are set to 0 before the downscale; ``watched`` then tells which
    features of the vector carry any watched pixel (for ``frame_health``).
    """

    width: int
    height: int
    colour: bool = False
    regions: Regions | None = None
    source_size: tuple[int, int] | None = None
    watched: np.ndarray | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self):
        if self.regions:
            if self.source_size is None:
                raise ValueError("regions need the source size they are drawn on")
            inside = self.regions.mask(self.source_size).view(np.uint8) * np.uint8(255)
            # A working pixel is watched if any source pixel it averages is (at 0/255 the
            # area average of a sliver is still above 0; at 0/1 it rounded to 0 below half).
            watched = cv2.resize(inside, (self.width, self.height),
                                 interpolation=cv2.INTER_AREA) > 0
            if self.colour:
                watched = np.repeat(watched[..., None], 3, axis=2)
            self.watched = watched.ravel()

    @property
    def n_features(self) -> int:
        return self.width * self.height * (3 if self.colour else 1)

    def __call__(self, image: np.ndarray) -> np.ndarray:
        if image.ndim == 3 and not self.colour:
            image = cv2.cvtColor(image, cv2.COLOR_BGR2GRAY)
        elif image.ndim == 2 and self.colour:
            image = cv2.cvtColor(image, cv2.COLOR_GRAY2BGR)
        if self.watched is not None:
            inside = self.regions.mask((image.shape[1], image.shape[0])).view(np.uint8)
            image = cv2.bitwise_and(image, image, mask=inside)
        if image.shape[1] != self.width or image.shape[0] != self.height:
            # INTER_AREA averages the pixels it merges: the cheapest noise filter there is.
            image = cv2.resize(image, (self.width, self.height), interpolation=cv2.INTER_AREA)
        return image.astype(np.float32).ravel()


def frame_health(vector: np.ndarray | None, previous: np.ndarray | None,
                 watched: np.ndarray | None = None) -> str:
    """'corrupt' (not decoded), 'blank' (no picture), 'repeat' (the frame repeats the last one
    exactly; ``HealthCheck`` tells a stalled source from a still scene coded as repeats) or
    'ok'.

    A repeat means no pixel moved by more than FROZEN_MAX_DIFFERENCE: a still scene's sensor
    noise moves some pixel by more every frame, unless the encoder coded it as a repeat.
    ``watched`` (``Preprocessor.watched``): judge only those features, since the zeros outside
    a region would make a flat grey picture look like one with contrast.
    """
    if vector is None:
        return CORRUPT
    if watched is not None:
        vector = vector[watched]
        previous = None if previous is None else previous[watched]
    # OpenCV's reductions: a tenth of the cost of numpy's on a working-size frame, which
    # matters at hundreds of frames a second.
    if float(cv2.meanStdDev(vector)[1][0, 0]) < BLANK_STD:
        return BLANK
    if previous is not None and cv2.norm(vector, previous, cv2.NORM_INF) <= FROZEN_MAX_DIFFERENCE:
        return REPEAT
    return OK


class HealthCheck:
    """The health of each frame of a pass, in order: ``frame_health``, where repeats become
    'frozen' once the picture has stood exactly still for ``frozen_after`` frames (a stalled
    decoder or camera). Shorter runs of repeats stay 'repeat': a still scene that the encoder
    coded as repeats, as a low bit rate does within a keyframe interval."""

    def __init__(self, frozen_after: int, watched: np.ndarray | None = None):
        self.frozen_after = max(1, int(frozen_after))
        self.watched = watched
        self._previous: np.ndarray | None = None
        self._frames_still = 0          # frames the previous picture has stood exactly still

    def __call__(self, vector: np.ndarray | None) -> str:
        health = frame_health(vector, self._previous, self.watched)
        if vector is not None:
            self._previous = vector
        if health != REPEAT:
            self._frames_still = 1 if health == OK else 0
            return health
        self._frames_still += 1
        return FROZEN if self._frames_still >= self.frozen_after else REPEAT
