"""Frames a file's container announces that cannot be decoded (issue 29, item 9): one lost in
the middle and ones missing at the end are said in the same calm words ("could not be
decoded"), never a guess at the cause; the run is complete either way."""

from __future__ import annotations

import json

from conftest import run_cli
from test_sources import FRAMES, damage_frame, write_h264


def test_a_frame_lost_in_the_middle_or_at_the_end_is_said_in_the_same_words(tmp_path):
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
    middle = run_cli("run", damage_frame(tmp_path / "a", 13), "-d", tmp_path / "middle")
    assert middle.returncode == 0, middle.stderr
    assert "Frames without a usable picture: 1 corrupt (could not be decoded)" in middle.stdout

    data = write_h264(tmp_path / "b" / "whole.mp4").read_bytes()
    cut = tmp_path / "b" / "cut.mp4"
    cut.write_bytes(data[: len(data) // 2])      # its container still announces every frame
    end = run_cli("run", cut, "-d", tmp_path / "end", "-q")
    assert end.returncode == 0, end.stderr
    read = json.loads((tmp_path / "end" / "events.json").read_text())["frames_read"]
    assert read < FRAMES
    [line] = end.stderr.splitlines()
    assert line.endswith(f"ends early: {read} of the {FRAMES} frames its container announces "
                         f"could be decoded ({FRAMES - read} could not); the results are of "
                         f"those {read}")
    said = [line for line in (middle.stdout + middle.stderr + end.stderr).splitlines()
            if "could not be decoded" in line or "could be decoded" in line]
    assert said and not any("truncated" in line or "?" in line for line in said)
