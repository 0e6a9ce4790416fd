"""A result folder that is never left half-written, and never a folder videvent did not make.

Files are written into a hidden staging folder beside the destination. Only when the whole run
has succeeded does the staging folder become the destination, by renaming: a new destination
is one rename; an existing one is renamed aside first (and renamed back if the second rename
fails), so the destination is always all old or all new. What the earlier folder held beyond
the results a run replaces (event clips, a watch session's alerts) is then moved across, and
the rest of it removed; both are tried first, and if either cannot be done whole (a file or
folder made immutable, a read-only mount inside it) the earlier folder is put back.

Every folder videvent makes holds a marker file, ``.videvent-result``; an existing folder
without it (and without an ``events.json`` of an earlier videvent) is refused, so a user's
own folder is never written into.

Temporary files and staging folders are named ``.<name>.<pid>[-<random>].partial``: a run
killed outright (SIGKILL, power loss) leaves them behind, and the next run in the same
folder removes those whose process is gone (``remove_stale``). A staging folder is removed
only if it holds the marker, so only what videvent made is ever deleted.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import secrets
import socket
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from ..atomic import write_text_atomically

MARKER = ".videvent-result"
# Written last into a result folder whose every file is written: what a resumed batch trusts.
COMPLETE = ".videvent-complete"
_MARKER_TEXT = "This folder was made by videvent; a new run into it replaces its results.\n"
# .<name>.<pid>.partial (a file) or .<name>.<pid>-<random>.partial (a staging folder);
# .<name>.<pid>-old.partial is an earlier result folder moved aside during a commit.
_PARTIAL = re.compile(r"^\.(?P<name>.+)\.(?P<pid>\d+)(?P<tag>-[A-Za-z0-9_]+)?\.partial$")


def public_name(path: str | os.PathLike) -> str:
    """``path`` with each temporary component named as what it becomes: the user never saw
    ``.clip.videvent.123-ab.partial/.annotated.mp4.123.partial``, only ``clip.videvent/annotated.mp4``."""
    parts = [(_PARTIAL.match(part) or {"name": part})["name"] for part in Path(path).parts]
    return os.fspath(Path(*parts)) if parts else os.fspath(path)


def made_by_videvent(folder: Path) -> bool:
    """True for a folder videvent made: it holds the marker, or is a result folder of a
    version before the marker (its events.json says which videvent wrote it)."""
    if (folder / MARKER).is_file():
        return True
    try:
        return "videvent_version" in json.loads((folder / "events.json").read_text("utf-8"))
    except (OSError, ValueError, TypeError):
        return False


def check_destination(destination: str | os.PathLike) -> Path:
    """Refuse, with one line, a result folder that would overwrite what is not videvent's.

    Accepted: a path that does not exist yet, an empty folder, or a folder videvent made.
    """
    if not os.fspath(destination).strip():
        raise ValueError("the output folder name is empty")
    destination = Path(destination)
    if destination.exists() or destination.is_symlink():
        if not destination.is_dir() or destination.is_symlink():
            raise ValueError(f"output folder '{destination}' exists and is not a folder")
        try:
            empty = not any(destination.iterdir())
        except OSError as error:
            raise ValueError(f"cannot read output folder '{destination}': "
                             f"{error.strerror or error}") from None
        if not empty and not made_by_videvent(destination):
            raise ValueError(f"output folder '{destination}' already holds files that videvent "
                             f"did not write; give a new or empty folder")
    return destination


def mark(folder: Path) -> None:
    """Mark ``folder`` as videvent's (with the machine that made it, for ``remove_stale``;
    which process did is in the staging folder's name)."""
    (folder / MARKER).write_text(
        _MARKER_TEXT + json.dumps({"host": socket.gethostname()}) + "\n", encoding="utf-8")


def mark_complete(folder: Path, facts: dict) -> None:
    """Say that ``folder`` holds every result it was to hold (``facts``: what made it)."""
    write_text_atomically(folder / COMPLETE, json.dumps(facts) + "\n")


@contextmanager
def amending(folder: Path) -> Iterator[None]:
    """Change files of a complete ``folder`` inside this block with its completion marker
    withdrawn meanwhile and written again after, so the marker stays the last thing written:
    a reader that sees it sees the folder's final files. Should the change fail (its files
    are written whole, so they are as they were), the marker is put back all the same."""
    facts = completion(folder)
    if facts is not None:
        (folder / COMPLETE).unlink()
    try:
        yield
    finally:
        if facts is not None:
            mark_complete(folder, facts)


def completion(folder: Path) -> dict | None:
    """What the completion marker of ``folder`` says, or None: not (known to be) complete."""
    try:
        facts = json.loads((folder / COMPLETE).read_text("utf-8"))
    except (OSError, ValueError):
        return None
    return facts if isinstance(facts, dict) else None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process
        return True
    # A killed process stays in the table as a zombie until its parent (or init) reaps it,
    # which can take a while after a whole process group was killed: it writes nothing more.
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            return stat.read().rpartition(b")")[2].split()[0] != b"Z"
    except (OSError, IndexError):
        return True   # no /proc (not Linux), or it ended meanwhile: the safe answer


def _made_here(folder: Path) -> bool:
    """The staging folder's marker names this host (a shared file system may be written by
    processes of other machines, whose process ids mean nothing here)."""
    try:
        lines = (folder / MARKER).read_text("utf-8").splitlines()
        return json.loads(lines[-1]).get("host") == socket.gethostname()
    except (OSError, ValueError, IndexError, AttributeError):
        return False


def remove_stale(folder: str | os.PathLike) -> None:
    """Remove the temporary files and staging folders in ``folder`` left by dead videvent
    processes; put back a result folder that a killed commit had moved aside."""
    folder = Path(folder)
    try:
        entries = list(folder.iterdir())
    except OSError:
        return
    for entry in entries:
        match = _PARTIAL.match(entry.name)
        if match is None or int(match["pid"]) == os.getpid() or _alive(int(match["pid"])):
            continue
        try:
            if entry.is_dir() and not entry.is_symlink():
                if not _made_here(entry):
                    continue
                original = folder / match["name"]
                if match["tag"] == "-old" and not original.exists():
                    os.replace(entry, original)
                else:
                    shutil.rmtree(entry)
            else:
                entry.unlink()
        except OSError:
            continue  # left for a later run: cleaning up must never fail the run


def _new_staging_folder(parent: Path, name: str) -> Path:
    """A new, empty staging folder for the result folder ``name`` in ``parent``.

    Made with the mode the umask leaves (as ``mkdir`` makes any folder), not
    ``tempfile.mkdtemp``'s private 700: the staging folder becomes the result folder, whose
    report links a web server or a colleague must be able to follow when the umask says so.
    """
    while True:
        staging = parent / f".{name}.{os.getpid()}-{secrets.token_hex(4)}.partial"
        try:
            staging.mkdir(mode=0o777)
            return staging
        except FileExistsError:
            continue


def _check_removable(path: Path) -> None:
    """Raise the OSError that removing ``path`` (a folder: with all it holds) would meet,
    removing nothing: each entry is renamed in its folder and back, which needs what its
    removal needs (a folder that can be written, on a writable mount; an entry that is not
    immutable, append-only or a mount point)."""
    while True:     # a short name (a long one could be too long), and one not there
        probe = path.with_name(f".{secrets.token_hex(4)}.{os.getpid()}-probe.partial")
        if not os.path.lexists(probe):
            break
    os.rename(path, probe)
    os.rename(probe, path)
    if path.is_dir() and not path.is_symlink():
        for entry in path.iterdir():
            _check_removable(entry)


class ResultFolder:
    """Stage files for ``destination``; ``commit()`` moves them in, ``discard()`` drops them."""

    def __init__(self, destination: str | os.PathLike, replaces: tuple[str, ...] = ()):
        self.destination = check_destination(destination)
        self.replaces = replaces
        parent = self.destination.parent
        self.staging = None
        try:
            parent.mkdir(parents=True, exist_ok=True)
            remove_stale(parent)
            self.staging = _new_staging_folder(parent, self.destination.name)
            mark(self.staging)
        except OSError as error:
            self.discard()
            raise ValueError(f"cannot write results into '{parent}': "
                             f"{error.strerror or error}") from None
        except BaseException:
            # Stopped (Ctrl-C, SIGTERM) as the staging folder was being made: no ``with``
            # block is there yet to remove it.
            self.discard()
            raise

    def path(self, filename: str) -> Path:
        """Where to write ``filename`` while the run is under way."""
        return self.staging / filename

    def commit(self, replaces: tuple[str, ...] = ()) -> Path:
        """Make the staged folder the destination. What an earlier folder there held beyond
        ``replaces`` and the new files is kept; the rest of it is removed, so no result of an
        earlier run is left beside the new ones. Raises ValueError (one line) on failure,
        with the destination as it was and the staging folder removed."""
        target = self.destination
        try:
            check_destination(target)  # it may have changed while the run was going on
            if not target.exists():
                os.rename(self.staging, target)
                return target
            old = target.with_name(f".{target.name}.{os.getpid()}-old.partial")
            os.rename(target, old)
            try:
                os.rename(self.staging, target)
            except OSError:
                os.rename(old, target)
                raise
        except (OSError, ValueError) as error:
            self.discard()
            if isinstance(error, ValueError):
                raise
            raise ValueError(f"cannot move the results into '{target}': "
                             f"{error.strerror or error}; it is as it was") from None
        # The earlier folder, now aside: what it holds beyond the results is moved across and
        # the rest removed. Both are tried first (every removal by renaming the file in its own
        # folder and back, which fails where removing it would: an immutable file or folder, a
        # read-only mount); if either cannot be done whole, the earlier folder is put back.
        try:
            entries = list(old.iterdir())
            kept = [item for item in entries
                    if item.name not in replaces and not (target / item.name).exists()]
            for item in entries:
                if item not in kept:
                    _check_removable(item)
            moved: list[Path] = []
            try:
                for item in kept:
                    os.rename(item, target / item.name)
                    moved.append(item)
            except OSError:
                try:
                    for item in reversed(moved):
                        os.rename(target / item.name, item)
                except OSError as error:   # the earlier files are split: leave both, say so
                    raise ValueError(
                        f"the results are in '{target}', but some files of the earlier run "
                        f"there are left in '{old}': {error.strerror or error}") from None
                raise
        except OSError as error:
            self._put_back(old, error)
        try:
            shutil.rmtree(old)
        except OSError as error:
            raise ValueError(f"the results are in '{target}', but some files of the earlier "
                             f"run there are left in '{old}': {error.strerror or error}") from None
        return target

    def _put_back(self, old: Path, error: OSError) -> None:
        """The new results out of the way, the earlier folder ``old`` back in place: raise
        the ValueError that names what failed (``error``) and says so."""
        target = self.destination
        where = public_name(os.fsdecode(error.filename)) if error.filename else old
        reason = f"'{where}': {error.strerror or error}"
        split = ValueError(f"cannot replace the results in '{target}' ({reason}): the new "
                           f"results are there, the earlier run's files in '{old}'")
        try:
            os.rename(target, self.staging)
        except OSError:
            raise split from None
        try:
            os.rename(old, target)
        except OSError:
            try:
                os.rename(self.staging, target)
            except OSError:     # both aside, whole: the next run here puts the earlier back
                raise ValueError(f"cannot replace the results in '{target}' ({reason}): the "
                                 f"earlier run's files are in '{old}'") from None
            raise split from None
        self.discard()
        raise ValueError(f"cannot replace the results in '{target}': {reason}; it is as it "
                         f"was") from None

    def discard(self) -> None:
        if self.staging is not None:
            shutil.rmtree(self.staging, ignore_errors=True)

    def __enter__(self) -> "ResultFolder":
        return self

    def __exit__(self, exc_type, exc, traceback) -> None:
        if exc_type is None:
            self.commit(self.replaces)
            return
        self.discard()
        # A write that failed in the staging folder (disk full, quota) is named by the result
        # folder the user asked for: the staging folder is gone, and was never theirs.
        if isinstance(exc, OSError) and (exc.filename is None
                                         or str(self.staging) in os.fspath(exc.filename)):
            raise ValueError(f"cannot write the results into '{self.destination}': "
                             f"{exc.strerror or exc}; it is as it was") from None
