"""A result folder that is never left half-written.

Files are written into a hidden staging folder beside the destination; only when the whole run
has succeeded is each file moved into place with ``os.replace`` (atomic on one file system).
A failed or interrupted run removes its staging folder and leaves earlier results untouched.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path


class ResultFolder:
    """Stage files for ``destination``; ``commit()`` moves them in, ``discard()`` drops them."""

    def __init__(self, destination: str | os.PathLike, replaces: tuple[str, ...] = ()):
        self.destination = Path(destination)
        self.replaces = replaces
        parent = self.destination.parent
        try:
            parent.mkdir(parents=True, exist_ok=True)
            self.staging = Path(tempfile.mkdtemp(prefix=f".{self.destination.name}.",
                                                 suffix=".partial", dir=parent))
        except OSError as error:
            raise ValueError(f"cannot write results into '{parent}': "
                             f"{error.strerror or error}") from None
        if self.destination.exists() and not self.destination.is_dir():
            self.discard()
            raise ValueError(f"output folder '{self.destination}' exists and is not a folder")

    def path(self, filename: str) -> Path:
        """Where to write ``filename`` while the run is under way."""
        return self.staging / filename

    def commit(self, replaces: tuple[str, ...] = ()) -> Path:
        """Move the staged files in; files named in ``replaces`` that this run did not write
        are removed, so no result of an earlier run is left beside the new ones."""
        self.destination.mkdir(parents=True, exist_ok=True)
        staged = {item.name for item in self.staging.iterdir()}
        for name in sorted(staged | set(replaces)):
            target = self.destination / name
            old = None
            if target.is_dir():  # os.replace cannot replace a folder: move it aside first
                old = target.with_name(f".{name}.old-{os.getpid()}")
                os.replace(target, old)
            elif name not in staged and target.exists():
                target.unlink()
            if name in staged:
                os.replace(self.staging / name, target)
            if old is not None:
                shutil.rmtree(old, ignore_errors=True)
        self.staging.rmdir()
        return self.destination

    def discard(self) -> None:
        shutil.rmtree(self.staging, ignore_errors=True)

    def __enter__(self) -> "ResultFolder":
        return self

    def __exit__(self, exc_type, exc, traceback) -> None:
        if exc_type is None:
            self.commit(self.replaces)
        else:
            self.discard()
