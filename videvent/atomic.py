"""Files written whole: at a temporary name beside the target, then renamed into place, so a
reader, a crash or a full disk never leaves half a file under the real name. A leaf module:
the result folders (``output/``) and the region files (``regions.py``) both write this way."""

from __future__ import annotations

import os
from pathlib import Path


def partial_path(target: str | os.PathLike) -> Path:
    """Where to write ``target`` until it is complete (then ``os.replace`` it into place)."""
    target = Path(target)
    return target.with_name(f".{target.name}.{os.getpid()}.partial")


def write_text_atomically(path: str | os.PathLike, text: str, errors: str = "strict") -> None:
    """Write ``text`` (UTF-8) to a temporary name beside ``path``, then rename it into place:
    a reader, or a crash, never sees half a file."""
    write_atomically(path, lambda temporary: temporary.write_text(text, encoding="utf-8",
                                                                  errors=errors))


def write_atomically(path: str | os.PathLike, write) -> None:
    """``write(temporary)`` writes the file at a temporary name beside ``path``; it is then
    renamed into place, or, if writing fails (a full disk), removed: never half a file.

    A failure to write or rename it is an OSError naming ``path``: a full disk's failed write
    names no file at all, and the rename's names the temporary file the user never saw."""
    temporary = partial_path(path)
    try:
        write(temporary)
        os.replace(temporary, path)
    except BaseException as error:
        temporary.unlink(missing_ok=True)
        if isinstance(error, OSError) and error.errno and (
                error.filename is None or os.fspath(error.filename) == os.fspath(temporary)):
            raise OSError(error.errno, error.strerror or os.strerror(error.errno),
                          os.fspath(path)) from None
        raise
