"""``events.json``: the events, the settings that found them and what the run saw, versioned."""

from __future__ import annotations

import json
import os

from ..atomic import write_atomically

FORMAT_VERSION = 1


def write_events(path: str | os.PathLike, document: dict) -> None:
    with open(path, "w", encoding="utf-8") as handle:
        json.dump({"format_version": FORMAT_VERSION, **document}, handle, indent=2)
        handle.write("\n")


def add_to_events(path: str | os.PathLike, facts: dict) -> None:
    """Add ``facts`` (top-level keys) to the ``events.json`` at ``path``, rewritten whole
    (at a temporary name, renamed into place). ValueError (one line) if it is not one we can
    read, OSError if it cannot be written."""
    document = read_events(path)
    document.update(facts)
    write_atomically(path, lambda temporary: write_events(temporary, document))


def read_events(path: str | os.PathLike) -> dict:
    """Load an ``events.json``; raise ValueError (one line) if it is not one we can read."""
    try:
        with open(path, encoding="utf-8") as handle:
            document = json.load(handle)
    except OSError as error:
        raise ValueError(f"cannot read '{path}': {error.strerror}") from None
    except json.JSONDecodeError as error:
        raise ValueError(f"'{path}' is not valid JSON: {error}") from None
    version = document.get("format_version") if isinstance(document, dict) else None
    if version != FORMAT_VERSION:
        raise ValueError(f"'{path}' has format version {version!r}; this videvent reads "
                         f"version {FORMAT_VERSION}")
    return document
