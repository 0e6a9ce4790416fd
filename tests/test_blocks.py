"""Frames scored in blocks (``videvent.detectors.ahead``) get, to the last bit, the verdicts
they get scored one at a time: whatever the block's size, the grid (whole-pixel blocks or
not), colour, a region, blank frames, lasting changes, a light switched and a start judged by
a reference. A file is scored in blocks, a live picture one frame at a time."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from conftest import sample
from videvent import engine
from videvent.detectors import SubspaceWindowDetector
from videvent.detectors.ahead import FrameBlock
from videvent.engine import Engine, _blocks
from videvent.passes import prepare
from videvent.preprocess import HealthCheck
from videvent.settings import Settings
from videvent.sources import open_source
from videvent.sources.live import LiveSource, SourceNews

PARAMETERS = dict(method="sncp", rank=3, window=60, projection_dim=50, inlier_fraction=0.3,
                  refit_every=2, blocks=6, light_invariant=True, stride=4, warmup=20,
                  static_after=40, hot=4.5, settle_frames=8)


def eventful_scene(shape: tuple[int, ...], n_frames: int = 420) -> np.ndarray:
    """A drifting textured background with sensor noise, a moving object, an object left for
    good (a lasting change), a light switched on, and a few blank frames."""
    rng = np.random.default_rng(3)
    height, width = shape[:2]
    components = rng.uniform(15, 75, size=(3, *shape))
    weights = 1 + 0.3 * np.sin(np.outer(np.arange(n_frames), [0.3, 0.7, 1.1]) / 60)
    frames = np.tensordot(weights, components, axes=1) + rng.normal(0, 1.5, (n_frames, *shape))
    rows, cols = slice(height // 6, height // 2), slice(width // 6, width // 3)
    for i in range(90, 130):                                   # someone walks about
        shift = (i % 5) - 2
        frames[i, rows.start + shift:rows.stop + shift, cols] += 80
    frames[200:, height // 2:height - 2, 2:width // 2 - 2] += 60      # left there for good
    frames[300:] *= 1.5                                        # a light switched on
    frames[250:253] = 128.0                                    # the picture lost a moment
    return np.clip(frames, 0, 255).astype(np.float32)


def verdicts(detector: SubspaceWindowDetector, frames: np.ndarray, block_size: int | None,
             watched: np.ndarray | None = None) -> list:
    """Every frame's verdict, explained, scored one at a time (``block_size`` None) or in
    blocks of that many frames."""
    health = HealthCheck(50, watched)
    vectors = [x.ravel() for x in frames]
    scored = []
    for first in range(0, len(vectors), block_size or len(vectors)):
        rows = vectors[first:first + block_size] if block_size else vectors
        block = FrameBlock(rows) if block_size else None
        for row, x in enumerate(rows):
            index = first + row
            scored.append(detector.process_frame(
                index, index / 10, x, health(x), explain=True,
                ahead=None if block is None else (block, row)))
    return scored


def assert_same(theirs: list, ours: list) -> None:
    assert len(theirs) == len(ours)
    for one, other in zip(theirs, ours):
        for field in dataclasses.fields(one):
            mine, its = getattr(one, field.name), getattr(other, field.name)
            if isinstance(mine, np.ndarray) or isinstance(its, np.ndarray):
                assert np.array_equal(mine, its), (one.index, field.name)
            else:
                assert mine == its, (one.index, field.name)


@pytest.mark.parametrize("shape, watched", [
    ((48, 64), None),                      # whole-pixel blocks (6 x 5 of 8 x 8 and so on)
    ((47, 61), None),                      # a grid that cuts pixels: OpenCV's general resize
    ((36, 48, 3), None),                   # colour
    ((48, 64), "left half"),               # a region: the right half is never watched
])
@pytest.mark.parametrize("block_size", [1, 7, 32])
def test_a_block_of_frames_gets_the_verdicts_its_frames_get_one_at_a_time(shape, watched,
                                                                           block_size):
    frames = eventful_scene(shape)
    mask = None
    if watched:
        mask = np.zeros(shape, bool)
        mask[:, :shape[1] // 2] = True
        frames = frames * mask
        mask = mask.ravel()
    alone = verdicts(SubspaceWindowDetector(shape, **PARAMETERS, watched=mask), frames, None,
                     mask)
    together = verdicts(SubspaceWindowDetector(shape, **PARAMETERS, watched=mask), frames,
                        block_size, mask)
    assert_same(alone, together)
    # The scene did what it is for: events, a lasting change, blank frames, the switch.
    scores = np.array([verdict.score for verdict in alone])
    assert scores[95:125].max() > 10 and any(verdict.lasting for verdict in alone)
    assert {verdict.status for verdict in alone[250:253]} == {"blank"}
    assert max(verdict.score for verdict in alone[300:306]) >= PARAMETERS["hot"]


def test_a_start_judged_by_a_reference_is_scored_alike_in_blocks():
    """The twin judging the start keeps its own looks ahead, and goes (or takes over) at
    the same frame."""
    shape = (48, 64)
    frames = eventful_scene(shape)
    seed = [frames[i].ravel() for i in range(0, 420, 7)]
    runs = []
    for block_size in (None, 16):
        detector = SubspaceWindowDetector(shape, **PARAMETERS)
        assert detector.seed_reference(seed) > 0
        runs.append((verdicts(detector, frames, block_size), detector))
    (alone, one), (together, other) = runs
    assert_same(alone, together)
    assert one.start_reference_adopted_ == other.start_reference_adopted_
    assert (one.start_reference_ is None) == (other.start_reference_ is None)


def test_a_run_writes_the_same_scores_in_blocks_of_any_size(tmp_path, monkeypatch):
    """``videvent run``'s engine: the bundled clip with a light switched, in blocks of one
    frame and of the default size (and one that does not divide the clip)."""
    from videvent.pipeline import detect
    clip, _ = sample("lighting")
    written = []
    for size in (1, engine.BLOCK, 13):
        monkeypatch.setattr(engine, "BLOCK", size)
        out = tmp_path / f"blocks{size}"
        detect(clip, Settings(), out_dir=out, plot=False)
        written.append((out / "scores.csv").read_bytes())
    assert written[0] == written[1] == written[2]
    assert len(written[0].splitlines()) > 100


class Spy(FrameBlock):
    sizes: list[int] = []

    def __init__(self, vectors):
        super().__init__(vectors)
        Spy.sizes.append(len(vectors))


def test_a_file_is_scored_in_blocks_and_a_live_picture_one_frame_at_a_time(monkeypatch):
    monkeypatch.setattr(engine, "FrameBlock", Spy)
    clip, _ = sample("lighting")

    class Discard:
        def add(self, *scored):
            pass

        def status(self, *news):
            pass

    for realtime, expected in ((False, engine.BLOCK), (True, 1)):
        Spy.sizes = []
        with open_source(clip) as source:
            played = LiveSource(source, lambda: open_source(clip), realtime=realtime,
                                max_frames=40)
            run, _ = prepare(played, Settings())
            Engine(run).run(Discard())
        assert sum(Spy.sizes) == 40
        assert max(Spy.sizes) == expected and all(size == expected for size in Spy.sizes[:-1])


def test_blocks_end_at_a_sources_news_and_carry_it_between_them():
    news = SourceNews("lost", 3, 0.1)
    items = ["a", "b", "c", news, "d", "e", "f", "g"]
    assert list(_blocks(items, 2)) == [["a", "b"], ["c"], news, ["d", "e"], ["f", "g"]]
    assert list(_blocks([], 3)) == []
