"""``scores.csv``: one row per frame read, written as frames are decided (memory stays flat)."""

from __future__ import annotations

import csv
import os

import numpy as np

from ..status import OK
from ..timecode import format_timecode

SCORE_COLUMNS = ("frame", "time_s", "timecode", "residual", "score", "flagged", "event",
                 "status", "admitted", "absorbed")


class ScoresWriter:
    """Append frame rows to a CSV file with a header."""

    def __init__(self, path: str | os.PathLike):
        self.path = os.fspath(path)
        self._file = open(path, "w", newline="", encoding="utf-8")
        self._writer = csv.writer(self._file)
        self._writer.writerow(SCORE_COLUMNS)

    def write(self, frame_score, flagged: bool, event_number: int | None) -> None:
        fs = frame_score
        self._writer.writerow((fs.index, f"{fs.time_s:.6f}", format_timecode(fs.time_s),
                               f"{fs.residual:.6g}", f"{fs.score:.6g}", int(flagged),
                               "" if event_number is None else event_number, fs.status,
                               int(fs.admitted), int(fs.absorbed)))

    def flush(self) -> None:
        self._file.flush()

    def close(self) -> None:
        self._file.close()


def read_scores(path: str | os.PathLike) -> dict[str, np.ndarray]:
    """The columns of a ``scores.csv`` as arrays (event: 0 where a frame is in none)."""
    try:
        with open(path, newline="", encoding="utf-8") as handle:
            reader = csv.DictReader(handle)
            missing = ({"frame", "time_s", "residual", "score", "flagged"}
                       - set(reader.fieldnames or ()))
            if missing:
                raise ValueError(f"'{path}' is not a videvent scores file (no column "
                                 f"{sorted(missing)[0]})")
            rows = list(reader)
    except UnicodeDecodeError:
        raise ValueError(f"'{path}' is not a videvent scores file (not UTF-8 text)") from None
    except csv.Error as error:
        raise ValueError(f"'{path}' is not a videvent scores file ({error})") from None
    def value(row, line, name, kind, default):
        text = row.get(name)
        if text in (None, ""):
            return default
        try:
            return kind(text)
        except ValueError:
            raise ValueError(f"'{path}' line {line}: {name} is not "
                             f"{'a whole number' if kind is int else 'a number'}, got "
                             f"{text!r:.40}") from None

    def column(name, kind, default=0):
        if kind is str:
            return np.array([row[name] if row.get(name) not in (None, "") else default
                             for row in rows], dtype=object)
        return np.array([value(row, line, name, kind, default)
                         for line, row in enumerate(rows, start=2)], dtype=kind)
    return {
        "frame": column("frame", int),
        "time_s": column("time_s", float),
        "residual": column("residual", float),
        "score": column("score", float),
        "flagged": column("flagged", int).astype(bool),
        "event": column("event", int),
        "status": column("status", str, OK),
        "absorbed": column("absorbed", int).astype(bool),
    }
