"""What every window scorer returns for a frame."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class FrameScore:
    """The detector's verdict on one frame, given as soon as the frame arrives.

    residual: distance of the unit-length frame from the background subspace (0..1)
    score: robust z-score of the residual against the frames the model holds as normal
    status: 'ok', 'warmup' (the model was still learning its first seconds; the score is 0
        before it had a model), 'blank', 'frozen' or 'corrupt'
    admitted: the frame joined the model's window (the policy learns one frame in a stride,
        whatever its score)
    absorbed: the model was rebuilt from the recent frames at this frame, because the whole
        scene changed and stayed so (a light switched, most blocks static and unusual)
    residual_image: with ``explain=True``, the frame minus its reconstruction from the very
        subspace that scored it (working size, grey levels), for heat maps (None while the
        model has nothing to explain the frame with)
    block_scores: with ``explain=True``, the z-score of every block of the grid (rows x cols)
    evidence: which evidence gave the score: 'residual' (the model's blocks), 'motion' (the
        blocks' change from the frame before), 'brightness' (the step of the whole frame's
        brightness), 'darkness' (judged against a lasting darkness); '' when nothing scored
        (no picture, no model yet). What an event's kind is read from (``videvent.kinds``).
    lasting: blocks whose unusual picture stood still long enough became background (each in
        its block only, ``StaticRegions``) at this frame: something appeared and stayed
    left: something the model held left, revealing the background, and the model was rebuilt
        without the frames that show it at this frame (``rules.Revealed``)
    """

    index: int
    time_s: float
    residual: float
    score: float
    status: str
    admitted: bool
    absorbed: bool = False
    residual_image: np.ndarray | None = None
    block_scores: np.ndarray | None = None
    evidence: str = ""
    lasting: bool = False
    left: bool = False
