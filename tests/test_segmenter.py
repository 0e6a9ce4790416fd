import math
import tracemalloc

import numpy as np
import pytest

from videvent.segmenter import Event, EventSegmenter, segment

NAN = float("nan")


def cores(events):
    return [(e.core_start_frame, e.core_end_frame) for e in events]


def spans(events):
    return [(e.start_frame, e.end_frame) for e in events]


def reference_segment(scores, absorbed, threshold, threshold_low=None, min_length=1,
                      merge_gap=0, pre_roll=0, post_roll=0, missing=None):
    """The documented rules applied to whole arrays, one rule after another. ``missing``:
    frames not in the stream (their scores NaN); a run goes on across a hole of fewer than
    ``merge_gap`` of them."""
    low = threshold if threshold_low is None else threshold_low
    n = len(scores)
    bridged = np.zeros(n, bool)               # missing frames in a hole a run goes on across
    if missing is not None:
        i = 0
        while i < n:
            j = i
            while j < n and missing[j]:
                j += 1
            if j > i and j - i < merge_gap:
                bridged[i:j] = True
            i = max(j, i + 1)
    runs = []  # [start, end, ended_by_absorption]
    run_start = None
    previous = -1                             # the last frame not bridged over
    for i, score in enumerate(scores):
        if bridged[i]:
            continue
        if run_start is not None and (absorbed[i] or not score >= low):
            runs.append([run_start, previous, bool(absorbed[i])])
            run_start = None
        if run_start is None and score >= threshold:
            run_start = i
        previous = i
    if run_start is not None:
        runs.append([run_start, n - 1, False])

    merged = []
    for start, end, ended_by_absorption in runs:
        if (merged and start - merged[-1][1] - 1 < merge_gap
                and not absorbed[merged[-1][1] + 1:start + 1].any()):
            merged[-1][1:] = [end, ended_by_absorption]
        else:
            merged.append([start, end, ended_by_absorption])
    # Lead-in: frames >= low just before a core's first frame, up to pre_roll of them, none
    # across an absorbed frame, after the previous core's merge gap (unless an absorption
    # closed it) and after the previous kept core's post-roll.
    kept = []
    previous_end = None
    for core in merged:
        start = core[0]
        while (start - 1 >= 0 and core[0] - (start - 1) <= pre_roll and scores[start - 1] >= low
               and not absorbed[start]
               and (previous_end is None or start - 1 > previous_end + merge_gap
                    or absorbed[previous_end + 1:start].any())
               and (not kept or start - 1 > kept[-1][1] + post_roll)):
            start -= 1
        core[0] = start
        previous_end = core[1]
        if core[1] - core[0] + 1 >= min_length:
            kept.append(core)

    events = []
    flagged = np.zeros(n, bool)
    for k, (core_start, core_end, was_absorbed) in enumerate(kept):
        start = max(core_start - pre_roll, 0, events[-1]["end_frame"] + 1 if events else 0)
        next_core_start = kept[k + 1][0] if k + 1 < len(kept) else n
        end = min(core_end + post_roll, n - 1, next_core_start - 1)
        peak = core_start + int(np.nanargmax(scores[core_start:core_end + 1]))
        events.append(dict(
            number=k + 1, start_frame=start, end_frame=end, core_start_frame=core_start,
            core_end_frame=core_end, peak_frame=peak, peak_score=scores[peak],
            absorbed=was_absorbed,
        ))
        flagged[core_start:core_end + 1] = True
    return events, flagged


def run_stream(indices, times, scores, absorbed, **params):
    """Drive EventSegmenter frame by frame, checking the streaming contract on the way."""
    segmenter = EventSegmenter(**params)
    # Documented: every frame is decided within max(pre_roll, merge_gap + min_length - 1)
    # frames.
    lag_bound = max(segmenter.pre_roll, segmenter.merge_gap + segmenter.min_length - 1)
    decided = []
    undecided = set()
    popped = []
    for index, time_s, score, absorbed_here in zip(indices, times, scores, absorbed):
        undecided.add(index)
        for decision in segmenter.update(index, time_s, score, absorbed=bool(absorbed_here)):
            undecided.remove(decision.index)  # KeyError if decided twice or never fed
            decided.append(decision)
        assert all(index - j < lag_bound for j in undecided)
        popped += segmenter.pop_completed()
    for decision in segmenter.finish():
        undecided.remove(decision.index)
        decided.append(decision)
    popped += segmenter.pop_completed()

    assert not undecided
    assert [d.index for d in decided] == list(indices)
    assert popped == segmenter.events
    assert [e.number for e in segmenter.events] == list(range(1, len(segmenter.events) + 1))
    for decision in decided:
        owner = [e.number for e in segmenter.events
                 if e.core_start_frame <= decision.index <= e.core_end_frame]
        assert decision.flagged == bool(owner)
        assert decision.event_number == (owner[0] if owner else None)
    return segmenter.events, decided


def random_case(rng, n):
    # Smoothed noise with bursts gives runs, dips and gaps of every length.
    scores = np.convolve(rng.normal(size=n + 4), np.ones(5) / 2.2, mode="valid")
    scores += np.where(rng.random(n) < 0.04, rng.uniform(2, 6, n), 0)
    scores[rng.random(n) < 0.05] = NAN
    absorbed = rng.random(n) < 0.02
    threshold = float(rng.choice([0.8, 1.2, 2.0]))
    params = dict(
        threshold=threshold,
        threshold_low=float(rng.choice([threshold, threshold - 0.5, threshold - 1.5])),
        min_length=int(rng.integers(1, 7)),
        merge_gap=int(rng.integers(0, 7)),
        pre_roll=int(rng.integers(0, 9)),
        post_roll=int(rng.integers(0, 9)),
    )
    return scores, absorbed, params


@pytest.mark.parametrize("seed", range(300))
def test_streaming_matches_whole_array_reference(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 250))
    scores, absorbed, params = random_case(rng, n)
    times = np.arange(n) / 25.0

    events, decided = run_stream(range(n), times, scores, absorbed, **params)
    expected_events, expected_flagged = reference_segment(scores, absorbed, **params)

    # What was seen and where is the session's to say (``videvent.kinds``), not the segmenter's.
    got = [{k: v for k, v in vars(e).items()
            if not k.endswith("_time_s") and k not in ("kind", "box", "regions")}
           for e in events]
    assert got == expected_events
    for e in events:
        assert (e.start_time_s, e.end_time_s) == (times[e.start_frame], times[e.end_frame])
    np.testing.assert_array_equal([d.flagged for d in decided], expected_flagged)
    batch_events, batch_flagged = segment(scores, times, absorbed=absorbed, **params)
    assert batch_events == events
    np.testing.assert_array_equal(batch_flagged, expected_flagged)


@pytest.mark.parametrize("seed", range(100))
def test_skipped_indices_behave_like_unscorable_frames_a_run_goes_on_across(seed):
    # A stream with dropped frames must segment like the full stream with NaN in the
    # holes, a run going on across a hole shorter than the merge gap, except that padded
    # ends snap inward to frames that were seen.
    rng = np.random.default_rng(1000 + seed)
    n = int(rng.integers(2, 250))
    scores, absorbed, params = random_case(rng, n)
    seen = np.sort(rng.choice(n, size=int(rng.integers(1, n + 1)), replace=False))
    full_scores = np.full(n, NAN)
    full_scores[seen] = scores[seen]
    full_absorbed = np.zeros(n, bool)
    full_absorbed[seen] = absorbed[seen]
    first, last = seen[0], seen[-1]
    times = np.arange(n) * 0.04

    events, decided = run_stream(seen, times[seen], scores[seen], absorbed[seen], **params)
    missing = np.ones(n, bool)
    missing[seen] = False
    filled_events, filled_flagged = reference_segment(
        full_scores[first:last + 1], full_absorbed[first:last + 1], **params,
        missing=missing[first:last + 1])

    assert cores(events) == [(e["core_start_frame"] + first, e["core_end_frame"] + first)
                             for e in filled_events]
    for event, filled in zip(events, filled_events):
        assert event.start_frame == seen[seen >= filled["start_frame"] + first][0]
        assert event.end_frame == seen[seen <= filled["end_frame"] + first][-1]
        assert event.start_time_s == times[event.start_frame]
        assert (event.peak_frame, event.absorbed) == (filled["peak_frame"] + first, filled["absorbed"])
    np.testing.assert_array_equal([d.flagged for d in decided], filled_flagged[seen - first])


def test_hysteresis_keeps_event_through_dip_and_ends_below_low():
    scores = [0, 5, 3, 2.5, 5, 1, 5, 0]
    events, flagged = segment(scores, threshold=4, threshold_low=2)
    assert cores(events) == [(1, 4), (6, 6)]  # the dip to 3 and 2.5 is kept, 1 ends it
    assert flagged.tolist() == [False, True, True, True, True, False, True, False]
    # Without hysteresis the dip splits the event.
    events, _ = segment(scores, threshold=4)
    assert cores(events) == [(1, 1), (4, 4), (6, 6)]


def test_event_rising_through_the_low_threshold_starts_where_it_does():
    # Both-way hysteresis: the frames above threshold_low just before the first frame above
    # threshold are the event's lead-in (at most pre_roll of them), and the pre-roll pads
    # from there.
    scores = [0, 3, 3, 3, 3, 5, 5, 0]
    events, flagged = segment(scores, threshold=4, threshold_low=2, pre_roll=3)
    assert cores(events) == [(2, 6)] and spans(events) == [(0, 6)]
    assert flagged.tolist() == [False, False, True, True, True, True, True, False]
    # Without a pre-roll there is no lead-in; a dip below threshold_low cuts it short.
    assert cores(segment(scores, threshold=4, threshold_low=2)[0]) == [(5, 6)]
    assert cores(segment([3, 3, 1, 3, 5], threshold=4, threshold_low=2, pre_roll=9)[0]) == [(3, 4)]


def test_lead_in_never_reaches_into_the_previous_event():
    scores = [5, 0, 3, 3, 3, 3, 5, 0]
    events, _ = segment(scores, threshold=4, threshold_low=2, post_roll=2, pre_roll=5)
    # Frames 1-2 are the first event's post-roll; the lead-in of the second starts after it.
    assert cores(events) == [(0, 0), (3, 6)] and spans(events) == [(0, 2), (3, 7)]


def test_scores_between_thresholds_do_not_start_an_event():
    events, flagged = segment([0, 3, 3, 3, 0], threshold=4, threshold_low=2)
    assert events == [] and not flagged.any()


def test_min_length_drops_short_blips():
    scores = [0, 5, 0, 0, 5, 5, 5, 0, 5, 5]
    events, flagged = segment(scores, threshold=4, min_length=3)
    assert cores(events) == [(4, 6)]
    assert events[0].number == 1
    assert flagged.tolist() == [False] * 4 + [True] * 3 + [False] * 3


def test_min_length_counts_the_merged_core():
    # Two single-frame runs merged across a 1-frame gap make a 3-frame core.
    events, _ = segment([0, 5, 0, 5, 0, 0, 0], threshold=4, min_length=3, merge_gap=2)
    assert cores(events) == [(1, 3)]


def test_merge_gap_merges_close_runs_and_not_far_ones():
    scores = [0, 0, 5, 5, 0, 0, 5, 5, 0, 0, 0, 0, 5, 0]
    events, flagged = segment(scores, threshold=4, merge_gap=3)
    assert cores(events) == [(2, 7), (12, 12)]  # gap of 2 < 3 merges, gap of 4 does not
    assert flagged[4] and flagged[5] and not flagged[8:12].any()
    events, _ = segment(scores, threshold=4, merge_gap=2)  # gap of 2 is not fewer than 2
    assert cores(events) == [(2, 3), (6, 7), (12, 12)]


def test_peak_is_the_highest_score_of_the_core():
    events, _ = segment([0, 5, 9, 6, 0, 12, 0], threshold=4, merge_gap=2)
    assert (events[0].peak_frame, events[0].peak_score) == (5, 12.0)


def test_padding_is_clipped_at_the_first_and_last_frame():
    events, flagged = segment([0, 5, 0, 0, 0, 5, 0], threshold=4, pre_roll=3, post_roll=4)
    assert spans(events) == [(0, 4), (5, 6)]
    assert cores(events) == [(1, 1), (5, 5)]
    assert flagged.tolist() == [False, True, False, False, False, True, False]


def test_padding_of_close_events_never_overlaps():
    scores = np.zeros(20)
    scores[[5, 9]] = 5
    events, _ = segment(scores, threshold=4, pre_roll=3, post_roll=3)
    assert spans(events) == [(2, 8), (9, 12)]  # the post-roll of the first wins, then clip
    events, _ = segment(scores, threshold=4, pre_roll=1, post_roll=6)
    assert spans(events) == [(4, 8), (9, 15)]  # post-roll stops before the next core
    scores[[5, 9]] = 0
    scores[[5, 14]] = 5
    events, _ = segment(scores, threshold=4, pre_roll=4, post_roll=4)
    assert spans(events) == [(1, 9), (10, 18)]


def test_frames_dropped_live_never_split_an_event_the_merge_gap_keeps_whole():
    """A visit scoring between the two thresholds, its frames dropped here and there (a
    watch under load): one event, as without the drops; a hole as long as the merge gap
    ends it."""
    scores = [0.0] * 5 + [9.0] * 3 + [5.0] * 30 + [0.0] * 10
    whole = run_stream(range(48), np.arange(48) / 10, scores, [False] * 48, threshold=7,
                       threshold_low=4.5, merge_gap=5)[0]
    assert cores(whole) == [(5, 37)]
    seen = [i for i in range(48) if i % 7 not in (3, 4)]        # two frames in seven dropped
    events = run_stream(seen, np.array(seen) / 10, [scores[i] for i in seen],
                        [False] * len(seen), threshold=7, threshold_low=4.5, merge_gap=5)[0]
    assert cores(events) == [(5, 37)]
    seen = [i for i in range(48) if not 12 <= i < 17]           # a hole of the merge gap
    events = run_stream(seen, np.array(seen) / 10, [scores[i] for i in seen],
                        [False] * len(seen), threshold=7, threshold_low=4.5, merge_gap=5)[0]
    assert cores(events) == [(5, 11)]


def test_dropped_blip_does_not_clip_the_previous_event():
    scores = np.zeros(20)
    scores[[5, 8]] = 5
    scores[[13, 14]] = 5
    events, _ = segment(scores, threshold=4, min_length=2, post_roll=4, pre_roll=2)
    assert cores(events) == [(13, 14)]
    scores[5:7] = 5
    events, _ = segment(scores, threshold=4, min_length=2, post_roll=4, pre_roll=2)
    assert spans(events) == [(3, 10), (11, 18)]  # the blip at 8 lies inside the post-roll


def test_absorbed_ends_the_open_event_at_the_previous_frame():
    scores = [0, 5, 5, 5, 5, 5, 5, 0]
    absorbed = [False] * 8
    absorbed[4] = True
    events, flagged = segment(scores, threshold=4, merge_gap=5, absorbed=absorbed)
    assert cores(events) == [(1, 3), (4, 6)]  # not merged although the gap is 0
    assert [e.absorbed for e in events] == [True, False]
    assert flagged.tolist() == [False] + [True] * 6 + [False]


def test_absorbed_frame_between_runs_prevents_merging():
    scores = [0, 5, 0, 0, 5, 0]
    absorbed = [False, False, False, True, False, False]
    events, flagged = segment(scores, threshold=4, merge_gap=5, absorbed=absorbed)
    assert cores(events) == [(1, 1), (4, 4)]
    assert not any(e.absorbed for e in events)  # the first run had already ended
    assert not flagged[2:4].any()


def test_nan_is_below_threshold_low():
    scores = [0, 5, NAN, 5, 3, NAN, 0]
    events, flagged = segment(scores, threshold=4, threshold_low=2)
    assert cores(events) == [(1, 1), (3, 4)]
    events, flagged = segment(scores, threshold=4, threshold_low=2, merge_gap=2)
    assert cores(events) == [(1, 4)]
    assert flagged[2]  # a NaN frame inside a merged core is part of the event
    assert events[0].peak_score == 5
    events, flagged = segment([NAN] * 5, threshold=-1)
    assert events == [] and not flagged.any()


def test_live_event_completes_once_its_post_roll_is_seen():
    segmenter = EventSegmenter(threshold=4, merge_gap=2, post_roll=3)
    scores = [0, 0, 0, 0, 0, 5, 5, 0, 0, 0, 0]
    completed_at = {}
    for index, score in enumerate(scores):
        segmenter.update(index, index / 10, score)
        for event in segmenter.pop_completed():
            completed_at[event.number] = index
    assert completed_at == {1: 9}  # core ends at 6, post-roll of 3
    assert segmenter.finish() == [] and segmenter.pop_completed() == []
    assert segmenter.events[0].end_time_s == pytest.approx(0.9)


def test_event_at_end_of_stream_completes_at_finish():
    segmenter = EventSegmenter(threshold=4, post_roll=10)
    for index, score in enumerate([0, 5, 5, 0]):
        segmenter.update(index, float(index), score)
    assert segmenter.pop_completed() == []
    segmenter.finish()
    (event,) = segmenter.pop_completed()
    assert (event.core_end_frame, event.end_frame) == (2, 3)


def test_memory_does_not_grow_with_stream_length():
    def peak_bytes(n_frames):
        segmenter = EventSegmenter(threshold=4, threshold_low=2, min_length=50, merge_gap=5,
                                   pre_roll=30, post_roll=30)
        pattern = [0.0] * 7 + [5.0] * 3  # short runs, each dropped at min_length
        tracemalloc.start()
        for index in range(n_frames):
            segmenter.update(index, index / 25, pattern[index % 10])
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        assert segmenter.events == []
        return peak

    assert peak_bytes(40_000) < peak_bytes(4_000) + 32_000


def test_short_merged_core_stays_undecided_only_until_merging_is_impossible():
    # Core 1..4 (merged, 4 frames) is one short of min_length; frame 1 can only be
    # decided once a run at frame 8 could no longer merge, i.e. at frame 7.
    segmenter = EventSegmenter(threshold=4, min_length=5, merge_gap=3)
    scores = [0, 5, 0, 0, 5, 0, 0, 0, 0, 0]
    decided_at = {}
    for index, score in enumerate(scores):
        for decision in segmenter.update(index, float(index), score):
            decided_at[decision.index] = (index, decision.flagged)
    assert decided_at[1] == (7, False)
    for index, score in enumerate([0, 0], start=len(scores)):
        for decision in segmenter.update(index, float(index), score):
            decided_at[decision.index] = (index, decision.flagged)
    # Every frame, not only frame 1, within the documented bound (merge_gap + min_length - 1).
    assert sorted(decided_at) == list(range(len(scores) + 2))
    assert max(at - index for index, (at, _) in decided_at.items()) <= 3 + 5 - 1


def test_to_dict_has_timecodes_and_duration():
    events, _ = segment([0, 5, 5, 0], times=[59.5, 59.9996, 61.25, 62.0], threshold=4,
                        pre_roll=1)
    record = events[0].to_dict()
    assert record["start_timecode"] == "00:00:59.500"
    assert record["end_timecode"] == "00:01:01.250"
    assert record["duration_s"] == pytest.approx(1.75)
    assert record["peak_frame"] == 1 and record["number"] == 1


@pytest.mark.parametrize(
    "params",
    [
        dict(threshold=NAN),
        dict(threshold=2, threshold_low=3),
        dict(threshold=2, threshold_low=math.inf),
        dict(threshold=2, min_length=0),
        dict(threshold=2, min_length=2.5),
        dict(threshold=2, merge_gap=-1),
        dict(threshold=2, pre_roll=-1),
        dict(threshold=2, post_roll=True),
    ],
)
def test_invalid_parameters_are_rejected(params):
    with pytest.raises(ValueError):
        EventSegmenter(**params)


def test_indices_must_increase_and_stream_ends_at_finish():
    segmenter = EventSegmenter(threshold=1)
    segmenter.update(3, 0.0, 0.0)
    with pytest.raises(ValueError, match="increase"):
        segmenter.update(3, 0.1, 0.0)
    segmenter.finish()
    with pytest.raises(RuntimeError):
        segmenter.update(4, 0.2, 0.0)


def test_event_is_a_plain_dataclass():
    events, _ = segment([5], threshold=4)
    assert events == [Event(number=1, start_frame=0, end_frame=0, core_start_frame=0,
                            core_end_frame=0, start_time_s=0.0, end_time_s=0.0,
                            peak_frame=0, peak_score=5.0)]
