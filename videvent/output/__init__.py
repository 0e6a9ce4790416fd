"""Sinks: what a run writes for people and programs (CSV, JSON, plots), written safely.

The names below load their module when first used, so that a command that only reads an
events file (``videvent --help``, ``videvent events``) does not import numpy through the CSV
writer.
"""

from importlib import import_module

_MODULE_OF = {"FORMAT_VERSION": "events_json", "read_events": "events_json",
              "write_events": "events_json", "ResultFolder": "folder",
              "SCORE_COLUMNS": "scores_csv", "ScoresWriter": "scores_csv",
              "read_scores": "scores_csv"}

__all__ = sorted(_MODULE_OF)


def __getattr__(name: str):
    if name not in _MODULE_OF:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(f".{_MODULE_OF[name]}", __name__), name)
