import numpy as np
import pytest

from videvent.timecode import format_timecode, parse_duration, parse_time


@pytest.mark.parametrize(
    ("text", "fps", "frame"),
    [
        ("0", 25, 0),
        ("123", 25, 123),
        (" 42 ", 25, 42),
        ("12s", 25, 300),
        ("12.3s", 10, 123),
        (".5s", 10, 5),
        ("0.5s", 25, 13),  # 12.5 frames: halves round up
        ("0.01s", 30, 0),  # 0.3 frames rounds down
        ("1.15s", 10, 12),  # exact arithmetic: 1.15 * 10 is not 11.4999...
        ("10m", 25, 15_000),  # minutes and hours, as the watch help suggests
        ("1h30m", 1, 5400),
        ("2h", 1, 7200),
        ("2m30.5s", 10, 1505),
        ("01:30", 25, 2250),
        ("01:30.250", 20, 1805),
        ("00:01:30", 25, 2250),
        ("01:00:00", 25, 90_000),
        ("1:00:00.04", 25, 90_001),
        ("123:00:00", 1, 442_800),  # hours are not limited to two digits
        ("00:00:01.5", 29.97, 45),  # 44.955 frames
        (123, 25, 123),
        (np.int64(7), 25, 7),
        (10.0, 25, 10),
    ],
)
def test_parse_time_valid(text, fps, frame):
    assert parse_time(text, fps) == frame


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("-5", "negative"),
        ("-1.5s", "negative"),
        (-3, "negative"),
        ("abc", "expected frames"),
        ("", "expected frames"),
        ("12 s", "expected frames"),
        ("1e3s", "expected frames"),
        ("1:2:3:4", "expected frames"),
        ("1.5m", "expected frames"),
        ("30m1h", "expected frames"),
        ("m", "expected frames"),
        ("12.5", "for seconds write '12.5s'"),
        (12.5, "for seconds write '12.5s'"),
        (float("nan"), "expected frames"),
        (True, "expected frames"),
        (None, "expected frames"),
        ("00:60:00", "minutes must be below 60"),
        ("75:00", "minutes must be below 60"),
        ("00:00:60", "seconds must be below 60"),
        ("01:60.5", "seconds must be below 60"),
    ],
)
def test_parse_time_rejects(text, message):
    with pytest.raises(ValueError, match=message) as info:
        parse_time(text, 25)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("fps", [0, -25, float("nan"), float("inf"), "25"])
def test_parse_time_rejects_bad_fps(fps):
    with pytest.raises(ValueError, match="frame rate"):
        parse_time("1s", fps)


def test_parse_duration_same_grammar_and_names_itself_in_errors():
    assert parse_duration("2.5s", 30) == 75
    assert parse_duration("00:00:02", 30) == 60
    assert parse_duration("15", 30) == 15
    with pytest.raises(ValueError, match="invalid duration"):
        parse_duration("soon", 30)


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0, "00:00:00.000"),
        (1.5, "00:00:01.500"),
        (59.9996, "00:01:00.000"),  # rounding carries into minutes
        (3599.9995, "01:00:00.000"),  # ... and into hours
        (3661.001, "01:01:01.001"),
        (100 * 3600 + 0.25, "100:00:00.250"),  # hours may exceed 99
    ],
)
def test_format_timecode(seconds, text):
    assert format_timecode(seconds) == text


@pytest.mark.parametrize("seconds", [-0.5, float("nan"), float("inf")])
def test_format_timecode_rejects(seconds):
    with pytest.raises(ValueError):
        format_timecode(seconds)


def test_format_then_parse_round_trips_to_the_frame():
    fps = 29.97
    for frame in [0, 1, 29, 30, 1799, 107_892]:
        assert parse_time(format_timecode(frame / fps), fps) == frame
