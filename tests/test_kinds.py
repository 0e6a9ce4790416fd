"""Each event says what was seen and where (issue 52, item 4): its kind from the detector's
evidence, its box in source pixels and the watch regions it touched."""

from __future__ import annotations

import json
from collections import Counter
from types import SimpleNamespace

import numpy as np
import pytest

from conftest import devset_clip, run_cli, sample
from videvent import Settings, detect
from videvent.detectors import FrameScore
from videvent.kinds import KINDS, RegionBlocks, block_box, event_kind, paired
from videvent.passes import levels_of
from videvent.regions import Regions
from videvent.segmenter import EventSegmenter
from videvent.session import Session


# -- the kind, from counts of evidence ---------------------------------------------------------
def test_most_frames_made_unusual_by_the_brightness_are_a_light_even_ending_in_a_rebuild():
    assert event_kind(Counter(brightness=6, residual=4), rebuilt=True) == "light"
    assert event_kind(Counter(brightness=5, residual=5)) == "moved"   # half is not most


def test_most_frames_judged_against_darkness_are_a_picture_out_of_darkness():
    assert event_kind(Counter(darkness=3, brightness=2)) == "darkness"
    assert event_kind(Counter(darkness=3, brightness=18)) == "light"


def test_a_rebuild_that_was_not_a_light_is_the_scene_then_left_appeared_moved():
    residual = Counter(residual=9, motion=1)
    assert event_kind(residual, rebuilt=True, lasting=True, left=True) == "scene"
    assert event_kind(residual, lasting=True, left=True) == "left"
    assert event_kind(residual, lasting=True) == "appeared"
    assert event_kind(residual) == "moved"
    assert event_kind(Counter()) == "moved"      # no frame counted: nothing says otherwise


# -- the place ---------------------------------------------------------------------------------
def test_the_box_covers_the_paired_blocks_in_source_pixels_and_a_lone_block_does_not_count():
    hot = np.zeros((4, 8), bool)
    hot[1, 2:4] = True          # a pair side by side: columns 2-3 of 8, row 1 of 4
    hot[3, 7] = True            # alone: a branch
    assert paired(hot).sum() == 2
    # 800x400 source: a block is 100x100 pixels.
    assert block_box(paired(hot), 800, 400) == [200, 100, 200, 100]
    assert block_box(np.zeros((4, 8), bool), 800, 400) is None


def test_the_regions_touched_are_named_in_the_order_given():
    regions = Regions(watch=(((0, 0), (399, 0), (399, 399), (0, 399)),        # left half
                             ((400, 0), (799, 0), (799, 399), (400, 399))))   # right half
    named = RegionBlocks(regions, 800, 400)
    right = np.zeros((4, 8), bool)
    right[0, 6:8] = True
    assert named.touched(right) == ["region 2"]
    assert named.touched(np.ones((4, 8), bool)) == ["region 1", "region 2"]
    assert RegionBlocks(Regions(), 800, 400).touched(right) == []


# -- a session fed a stream of verdicts --------------------------------------------------------
def _session(regions=Regions()):
    settings = Settings()
    source = SimpleNamespace(name="s", uri="s", fps=10.0, width=160, height=90)
    run = SimpleNamespace(source=source, settings=settings, levels=levels_of(settings),
                          frame_shape=(9, 16), preprocess=SimpleNamespace(regions=regions))
    segmenter = EventSegmenter(settings.threshold, settings.threshold_low, post_roll=3)
    return Session(run, segmenter)


def _feed(session, verdicts):
    for verdict in verdicts:
        session.add(SimpleNamespace(index=verdict.index, time_s=verdict.time_s), None, verdict)
    session.finish()
    return list(session.events)


def _stream(evidence_of, n=30, event=range(10, 20), **flags_at):
    """Verdicts of ``n`` frames, scoring 10 on ``event`` with the evidence ``evidence_of(i)``
    and blocks (rows 1-2, columns 4-5 of a 9x16 grid) unusual; ``flags_at``: a flag name and
    the frames that carry it."""
    blocks = np.zeros((9, 16))
    blocks[1:3, 4:6] = 9.0
    verdicts = []
    for i in range(n):
        inside = i in event
        flags = {name: i in frames for name, frames in flags_at.items()}
        verdicts.append(FrameScore(i, i / 10, 0.1, 10.0 if inside else 0.0, "ok", False,
                                   block_scores=blocks if inside else None,
                                   evidence=evidence_of(i) if inside else "residual", **flags))
    return verdicts


def test_a_session_gives_each_event_its_kind_box_and_regions():
    session = _session(Regions(watch=(((0, 0), (79, 0), (79, 89), (0, 89)),)))
    events = _feed(session, _stream(lambda i: "residual"))
    assert [(e.kind, e.box, e.regions) for e in events] == [("moved", [40, 10, 20, 20],
                                                             ["region 1"])]
    record = events[0].to_dict()
    assert (record["kind"], record["box"], record["regions"]) == ("moved", [40, 10, 20, 20],
                                                                  ["region 1"])


def test_something_left_during_an_event_makes_it_left_end_to_end():
    # No detector mechanism reports ``left`` yet; the session wires it all the same.
    events = _feed(_session(), _stream(lambda i: "motion", left={14}))
    assert [e.kind for e in events] == ["left"]


def test_blocks_absorbed_as_the_event_ends_make_it_appeared_not_those_absorbed_before():
    # The absorption ends the core: the frame after its last one carries the flag.
    assert [e.kind for e in _feed(_session(), _stream(lambda i: "residual", lasting={20}))
            ] == ["appeared"]
    assert [e.kind for e in _feed(_session(), _stream(lambda i: "residual", lasting={13}))
            ] == ["moved"]


def test_an_open_event_says_its_kind_so_far():
    seen = []

    class Kinds:
        def __getattr__(self, name):
            return lambda *args: None

        def on_event_start(self, event):
            seen.append(event.kind)

        def on_event_update(self, event):
            seen.append(event.kind)

    session = _session()
    session.sinks = [Kinds()]
    # Motion first, then the brightness on most frames: the kind so far follows.
    _feed(session, _stream(lambda i: "motion" if i < 12 else "brightness"))
    assert seen[0] == "moved" and seen[-1] == "light"
    assert [e.kind for e in session.events] == ["light"]


# -- as a user runs it -------------------------------------------------------------------------
def test_run_writes_kind_box_and_the_regions_touched(tmp_path):
    video, truth = sample("person_visit")
    width, height = truth["width"], truth["height"]
    region = f"0 0 {width - 1} 0 {width - 1} {height - 1} 0 {height - 1}"
    result = run_cli("run", video, "-d", tmp_path / "out", "-q", "-a", region)
    assert result.returncode == 0, result.stderr
    events = json.loads((tmp_path / "out" / "events.json").read_text())["events"]
    assert events
    for event in events:
        assert event["kind"] in KINDS
        x, y, w, h = event["box"]
        assert 0 <= x and 0 <= y and w > 0 and h > 0 and x + w <= width and y + h <= height
        assert event["regions"] == ["region 1"]
    # The visitor walks in, stands at the table and leaves: moved, not a light.
    assert events[0]["kind"] == "moved"
    report = (tmp_path / "out" / "report.html").read_text()
    assert "<th>what</th>" in report and f"<td>{events[0]['kind']}</td>" in report


def test_a_light_switched_off_in_the_synthetic_garden_is_a_light():
    video, truth = sample("lighting")
    result = detect(video, Settings())
    off = truth["lights_off_frame"]
    at_switch = [e for e in result.events if e.start_frame <= off <= e.end_frame]
    assert [e.kind for e in at_switch] == ["light"]
    assert all(e.kind != "light" for e in result.events if e not in at_switch)


def test_a_light_switched_off_after_a_picture_came_out_of_darkness_is_a_light_of_its_own():
    """Real footage: a closet, dark until a man opens its door and its light comes on; he shuts
    the door, and two seconds later the light goes out (labelled). The lit closet settles as a
    switched light does, so the light going out is an event of its own, a light, and the
    settled closet between them is not flagged."""
    path, clip = devset_clip("beweging_lightout_after_movement")
    result = detect(path, Settings())
    off_first, off_last = clip["light_switch"]["off"]
    visit, off = result.events                          # two events, no more
    assert (visit.kind, off.kind) == ("darkness", "light")
    assert visit.core_end_frame < off_first - 10 and off_first <= off.core_start_frame <= off_last


@pytest.mark.parametrize("name, kind", [("scene_change", "appeared"), ("walker", "moved")])
def test_a_chair_that_stays_appeared_and_a_walker_moved(name, kind):
    video, truth = sample(name)
    result = detect(video, Settings())
    first, last = truth["event_frames"][0]
    found = [e for e in result.events if e.core_start_frame <= last and e.core_end_frame >= first]
    assert [e.kind for e in found] == [kind]
