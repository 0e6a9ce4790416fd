"""The one session every front end feeds, its sinks, the reader thread, the settings'
single declaration and the public face, driven through the public API."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import threading

import numpy as np
import pytest

import videvent
from conftest import ROOT, sample
from videvent import FrameScore, FrameStatus, RunResult, Settings, Sink, detect
from videvent.output import read_scores
from videvent.reader import ReadAhead


class Recorder(Sink):
    """Everything a session tells, in order."""

    def __init__(self):
        self.calls: list[tuple] = []

    def on_start(self, info):
        self.calls.append(("start", info.name, info.fps, info.threshold))

    def on_frame(self, frame, score, event_number):
        self.calls.append(("frame", frame.index, event_number))

    def on_event_start(self, event):
        self.calls.append(("event_start", event.number, event.core_start_frame))

    def on_event_end(self, event, files):
        self.calls.append(("event_end", event.number, event.end_frame, dict(files)))

    def close(self):
        self.calls.append(("close",))


def test_a_sink_is_told_each_frame_once_and_each_event_as_it_starts_and_ends(tmp_path):
    recorder = Recorder()
    result = detect(sample("walker")[0], out_dir=tmp_path / "out", sinks=[recorder])
    calls = recorder.calls
    assert calls[0] == ("start", "walker", 15.0, 7.0) and calls[-1] == ("close",)
    frames = [c for c in calls if c[0] == "frame"]
    assert [c[1] for c in frames] == list(range(result.frames_read))
    scores = read_scores(tmp_path / "out" / "scores.csv")
    # The frames it is told are in an event are those scores.csv flags.
    assert [c[2] or 0 for c in frames] == scores["event"].tolist()
    [event] = result.events
    starts = [c for c in calls if c[0] == "event_start"]
    ends = [c for c in calls if c[0] == "event_end"]
    assert starts == [("event_start", 1, event.core_start_frame)]
    assert ends[0][:3] == ("event_end", 1, event.end_frame)
    assert set(ends[0][3]) == {"thumbnail"}
    # Told before the event's first core frame; its end before any frame after it.
    assert calls.index(starts[0]) == calls.index(("frame", event.core_start_frame, 1)) - 1
    assert calls.index(ends[0]) < calls.index(("frame", event.end_frame + 1, None))


def test_detect_returns_data_and_writes_nothing_without_a_folder(tmp_path):
    script = ("import sys, videvent; r = videvent.detect(sys.argv[1]); "
              "print(len(r.events), r.frames_read, r.out_dir, 'matplotlib' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", script, str(sample("walker")[0])],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["1", "300", "None", "False"]
    assert list(tmp_path.iterdir()) == []
    assert not (ROOT / "sample_videos" / "walker.videvent").exists()


def test_a_result_folder_reads_back_as_typed_records(tmp_path):
    result = detect(sample("blank_frames")[0], out_dir=tmp_path / "out")
    loaded = RunResult.load(tmp_path / "out")
    assert loaded.events == result.events and loaded.frames_read == result.frames_read
    assert loaded.frame_problems == result.frame_problems and loaded.frame_problems
    assert {run.status for run in loaded.frame_problems} <= {s.value for s in FrameStatus}
    assert loaded.to_dict() == json.loads(json.dumps(result.to_dict()))
    with pytest.raises(ValueError, match="events.json"):
        RunResult.load(tmp_path)


def test_frame_status_is_text_where_text_was():
    assert FrameStatus.FROZEN == "frozen" and f"{FrameStatus.OK}" == "ok"
    assert json.dumps([FrameStatus.BLANK]) == '["blank"]'
    assert FrameStatus("corrupt").unusable and not FrameStatus("warmup").unusable


def test_a_long_live_session_keeps_a_bounded_summary_and_logs_every_event(tmp_path,
                                                                          monkeypatch):
    from videvent import session as session_module
    from videvent.passes import prepare
    from videvent.sources import Frame, open_source

    monkeypatch.setattr(session_module, "LIVE_SUMMARY_LIMIT", 5)
    settings = Settings(min_event_length=1, merge_gap=0, time_before_event=0,
                        time_post_event=0)
    with open_source(sample("walker")[0]) as source:
        run, segmenter = prepare(source, settings)
        segmenter.keep_events = False
        session = session_module.Session(run, segmenter, live=True,
                                         summary_path=tmp_path / "events.json")
        session.start()
        for index in range(400):  # an event every 10 frames: 40 events
            score = 20.0 if index % 10 == 0 else 0.0
            session.add(Frame(index, index / 15, None), None,
                        FrameScore(index, index / 15, 0.1, score, "ok", False))
            assert len(segmenter.events) <= 1  # the segmenter holds none it handed out
        session.finish()
        session.close()
    logged = [json.loads(line) for line in (tmp_path / "events.jsonl").read_text().splitlines()]
    assert [event["number"] for event in logged] == list(range(1, 41))
    summary = json.loads((tmp_path / "events.json").read_text())
    assert [event["number"] for event in summary["events"]] == list(range(36, 41))
    assert summary["source"]["live"] is True and summary["frames_read"] == 400


def test_closing_a_reader_early_ends_its_thread_and_runs_its_clean_up():
    cleaned = threading.Event()

    def produce(put):
        try:
            for item in range(10_000):
                if not put(item):
                    return
        finally:
            cleaned.set()

    reader = ReadAhead(produce, 4)
    taken = []
    for item in reader:
        taken.append(item)
        if len(taken) == 3:
            break  # the consumer stops while the producer is blocked on a full queue
    assert taken == [0, 1, 2]
    assert cleaned.is_set() and not reader._thread.is_alive()


def test_a_live_reader_drops_stale_pictures_never_the_news_between_them():
    """A full live queue loses its oldest picture, not a 'source lost' put between them."""
    put_all = threading.Event()

    def produce(put):
        put(("picture", 0), drop_oldest=True)
        put(("lost",))
        for number in range(1, 10):
            put(("picture", number), drop_oldest=True)
        put_all.set()

    reader = ReadAhead(produce, 3)
    assert put_all.wait(10)
    assert list(reader) == [("lost",), ("picture", 8), ("picture", 9)]
    assert reader.dropped == 8


def test_a_reader_hands_on_the_producers_error():
    def produce(put):
        put(1)
        raise OSError("disk gone")

    with pytest.raises(OSError, match="disk gone"):
        list(ReadAhead(produce, 4))


def test_every_setting_is_declared_once_and_reachable_everywhere(tmp_path):
    from videvent._cli.main import cli
    from videvent.settings import ALERT_SPECS, SPECS, WATCH_SPECS, option_name

    run_command = cli.commands["run"]
    options = {name for param in run_command.params for name in getattr(param, "opts", ())}
    documented = "".join((ROOT / "docs" / page).read_text() for page in ("run.md", "watch.md"))
    for name in SPECS:
        assert f"--{option_name(name)}" in options, name
        assert f"--{option_name(name)}" in documented, name
    # The watch's own settings: an option of watch, documented, and listed among the config
    # file's keys (in backquotes, by the option's name).
    watch_command = cli.commands["watch"]
    watch_options = {name for param in watch_command.params
                     for name in getattr(param, "opts", ())}
    for name in [*WATCH_SPECS, *ALERT_SPECS]:
        assert f"--{option_name(name)}" in watch_options, name
        assert f"--{option_name(name)}" in documented, name
        assert f"`{option_name(name)}`" in documented, name
    # The config file is checked by the same declarations as the options.
    config = tmp_path / "videvent.toml"
    config.write_text("[run]\ninlier-fraction = 2.0\n")
    from videvent.settings import load_config
    with pytest.raises(ValueError, match="inlier-fraction must be more than 0 and at most 1"):
        load_config(config)
    config.write_text('refit-every = 2\nabsorb-after = "never"\n')
    assert load_config(config) == {"refit_every": 2, "absorb_after": None}


def test_the_settings_choices_are_the_detectors_and_decoders_declared_once():
    from videvent.detectors.background import METHODS
    from videvent.settings import BACKENDS as SETTING_BACKENDS
    from videvent.settings import METHODS as SETTING_METHODS
    from videvent.sources import BACKENDS

    assert SETTING_METHODS is METHODS and SETTING_BACKENDS is BACKENDS
    tree = ast.parse((ROOT / "videvent" / "settings.py").read_text())
    own = {node.module for node in ast.walk(tree)
           if isinstance(node, ast.ImportFrom) and node.level == 1}
    # Only leaves: the choices, times, and the polygons of regions (parsed where the
    # settings are made); no detector or decoder is imported to check a name.
    assert own == {"choices", "timecode", "regions"}


def test_the_command_line_modules_import_each_other_one_way_only():
    imports = {}
    for module in ("main", "batch", "options"):
        tree = ast.parse((ROOT / "videvent" / "_cli" / f"{module}.py").read_text())
        imports[module] = {node.module for node in ast.walk(tree)
                           if isinstance(node, ast.ImportFrom) and node.level == 1}
    assert "main" not in imports["batch"] and "main" not in imports["options"]
    assert "batch" not in imports["options"]


def test_the_public_face():
    for name in ("detect", "watch", "batch", "export", "open_source", "Settings",
                 "SubspaceWindowDetector", "Event", "FrameScore", "FrameStatus", "RunResult",
                 "Sink"):
        assert name in videvent.__all__ and callable(getattr(videvent, name)), name
    assert np.issubdtype(np.asarray(FrameStatus.OK).dtype, np.str_)


def test_thumbnails_keep_pictures_only_for_open_events(tmp_path):
    """Unusual moments that never become events (a watch's quiet weeks) keep no picture; an
    event keeps one, its best, until its thumbnail is written."""
    from videvent.detectors.base import FrameScore as Verdict
    from videvent.output.thumbnails import ThumbnailSink, ThumbnailStyle
    from videvent.segmenter import Event
    from videvent.sources.base import Frame

    sink = ThumbnailSink(tmp_path / "thumbnails", ThumbnailStyle(box_level=4.5))
    picture = np.full((48, 64), 90, np.uint8)
    residual, blocks = np.zeros((48, 64), np.float32), np.zeros((3, 4))

    def frame(index, score, event_number):
        verdict = Verdict(index, index / 10, 0.1, score, "ok", False,
                          residual_image=residual, block_scores=blocks)
        sink.on_frame(Frame(index, index / 10, picture), verdict, event_number)

    for index in range(1000):                     # above the box level, never an event
        frame(index, 6.0, None)
    assert sink.best == {}
    for index, score in zip(range(1000, 1005), (8, 12, 9, 11, 7)):
        frame(index, score, 1)
    assert list(sink.best) == [1] and sink.best[1][2].index == 1001
    files = {}
    sink.on_event_end(Event(1, 995, 1010, 1000, 1004, 99.5, 101.0, 1001, 12.0), files)
    assert sink.best == {} and (tmp_path / "thumbnails" / "event001.jpg").exists()
    assert files == {"thumbnail": str(tmp_path / "thumbnails" / "event001.jpg")}
