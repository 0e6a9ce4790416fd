"""The frame-status vocabulary, declared once: what the detector made of a frame (the
``status`` of a verdict and of ``scores.csv``), and the health a frame arrives with."""

from __future__ import annotations

import enum


class FrameStatus(str, enum.Enum):
    """What the detector made of a frame; str-valued, so it reads and writes as its text."""

    OK = "ok"
    WARMUP = "warmup"
    BLANK = "blank"
    FROZEN = "frozen"
    CORRUPT = "corrupt"

    def __str__(self) -> str:
        return self.value

    @property
    def unusable(self) -> bool:
        """No usable picture: reported as a problem run, never scored."""
        return self in UNUSABLE


UNUSABLE = (FrameStatus.BLANK, FrameStatus.FROZEN, FrameStatus.CORRUPT)

# The same words as plain strings, for the per-frame paths (a frame's health, a verdict).
OK, WARMUP, BLANK, FROZEN, CORRUPT = (status.value for status in FrameStatus)
# A health only, never reported: a frame that repeats the one before, until the repeats last
# long enough to be FROZEN (``preprocess.HealthCheck``); its verdict is the one it repeats.
REPEAT = "repeat"
