"""Sinks: what a run writes for people and programs (CSV, JSON, plots), written safely."""

from .events_json import FORMAT_VERSION, read_events, write_events
from .folder import ResultFolder
from .scores_csv import SCORE_COLUMNS, ScoresWriter, read_scores

__all__ = ["FORMAT_VERSION", "SCORE_COLUMNS", "ResultFolder", "ScoresWriter", "read_events",
           "read_scores", "write_events"]
