"""The verdicts on the bundled sample clips are those recorded with the dependencies' versions
named in ``tests/data/pinned_verdicts.json`` (``scripts/pin_verdicts.py``): a new release of
OpenCV, PyAV's FFmpeg, NumPy or OpenBLAS that changes what videvent finds fails here, not on a
user's footage. The events must be the very same frames. The scores may move by what another
processor's arithmetic gives, not by more: OpenBLAS's kernels for processors with FMA (Haswell,
Zen, SkylakeX) moved no score by more than 0.001 (the 15 dev clips too); its kernels for older
ones without FMA (Sandybridge) moved at most 11 of a clip's 450 frames by more than 0.01, the
worst by 0.49, where the model learned a frame differently, and no event. A dependency's change
that matters (another scaling, another decoder's pictures) moves nearly every frame."""

from __future__ import annotations

import importlib.util
import json

import numpy as np
import pytest

from conftest import ROOT

spec = importlib.util.spec_from_file_location("pin_verdicts", ROOT / "scripts" / "pin_verdicts.py")
pin_verdicts = importlib.util.module_from_spec(spec)
spec.loader.exec_module(pin_verdicts)

PINNED = json.loads(pin_verdicts.PINNED.read_text())
# Scores are recorded to 4 decimals. Of a clip's frames, this share must score within
# SCORE_TOLERANCE of the recorded score.
SCORE_TOLERANCE = 0.01
WITHIN_TOLERANCE = 0.95


@pytest.mark.parametrize("clip", pin_verdicts.CLIPS)
def test_the_sample_clips_verdicts_are_the_recorded_ones(clip):
    pinned, now = PINNED["clips"][clip], pin_verdicts.verdicts(clip)
    installed = pin_verdicts.versions()
    changed = {name: f"{PINNED['versions'][name]} -> {version}"
               for name, version in installed.items() if PINNED["versions"][name] != version}
    why = (f"{clip}: the verdicts differ from those recorded on {PINNED['recorded']} "
           f"(versions changed since: {changed or 'none'})")
    assert now["events"] == pinned["events"], why
    recorded, scores = np.array(pinned["scores"]), np.array(now["scores"])
    assert scores.shape == recorded.shape, why
    moved = np.abs(scores - recorded) > SCORE_TOLERANCE
    worst = int(np.argmax(np.abs(scores - recorded)))
    assert moved.mean() <= 1 - WITHIN_TOLERANCE, (
        f"{why}: {moved.sum()} of {len(scores)} frames' scores moved by more than "
        f"{SCORE_TOLERANCE}, frame {worst} most: {scores[worst]} against {recorded[worst]}")
