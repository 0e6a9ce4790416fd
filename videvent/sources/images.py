"""Image-sequence backend: a folder, a glob or a printf pattern of images, one imread each.

Files are in natural order (b2.png before b10.png). A file that cannot be read becomes a frame
with `image=None`; images of another size are resized to the size of the first readable one.
"""

from __future__ import annotations

import functools
import glob
import os
import re
from collections.abc import Iterator, Sequence
from pathlib import Path

import cv2
import numpy as np

from .base import Frame, FrameSource, SourceError, frame_rate

IMAGE_EXTENSIONS = frozenset({".bmp", ".jpeg", ".jpg", ".png", ".tif", ".tiff", ".webp"})
# The one integer conversion of a printf pattern such as "b%05d.bmp".
PRINTF_SPEC = re.compile(r"%0?\d*d")


def natural_key(path: str) -> list[str | int]:
    """Sort key that orders the digit runs of a name by value: frame2 < frame10."""
    return [int(part) if part.isdigit() else part.lower() for part in re.split(r"(\d+)", path)]


def list_folder(folder: str | os.PathLike) -> list[str]:
    """The image files directly in `folder`, in natural order."""
    paths = [
        entry.path for entry in os.scandir(folder)
        # Dot files are hidden metadata (macOS "._name.png" resource forks), not frames.
        if entry.is_file() and not entry.name.startswith(".")
        and os.path.splitext(entry.name)[1].lower() in IMAGE_EXTENSIONS
    ]
    return sorted(paths, key=natural_key)


def expand_glob(pattern: str) -> list[str]:
    """The files matching a glob pattern (`**` included), in natural order."""
    return sorted((path for path in glob.glob(pattern, recursive=True) if os.path.isfile(path)),
                  key=natural_key)


def is_printf_pattern(text: str) -> bool:
    return len(PRINTF_SPEC.findall(os.path.basename(text))) == 1


def expand_printf(pattern: str) -> list[str]:
    """The files a printf pattern such as "frames/b%05d.bmp" names, in numeric order."""
    return [path for _, path in _printf_matches(pattern)]


def missing_numbers(pattern: str) -> list[int]:
    """The numbers between the first and the last file of a printf pattern that have no file
    (a reader that stops at the first of them would drop every frame after it)."""
    numbers = [number for number, _ in _printf_matches(pattern)]
    present = set(numbers)
    return [n for n in range(numbers[0], numbers[-1]) if n not in present] if numbers else []


def _printf_matches(pattern: str) -> list[tuple[int, str]]:
    """(number, path) of the files a printf pattern names, in numeric order."""
    folder, template = os.path.split(pattern)
    spec = PRINTF_SPEC.search(template)
    prefix, suffix = template[: spec.start()], template[spec.end():]
    candidate = re.compile(re.escape(prefix) + r"(\d+)" + re.escape(suffix))
    try:
        names = os.listdir(folder or ".")
    except OSError:
        return []
    numbered = []
    for name in names:
        match = candidate.fullmatch(name)
        # Formatting the number back rejects names the pattern cannot produce (b7.bmp for %05d).
        if match and prefix + spec.group() % int(match.group(1)) + suffix == name:
            numbered.append((int(match.group(1)), os.path.join(folder, name)))
    return sorted(numbered)


class ImageSequenceSource(FrameSource):
    """A list of image files read one by one with cv2.imread; times are index / fps."""

    is_live = False
    sample_run = 1                     # any image is read as cheaply as the next

    def __init__(self, paths: Sequence[str], *, uri: str, name: str, colour: bool = False,
                 fps: float | None = None, keep_colour: bool = False) -> None:
        self.uri = uri
        self.name = name
        self.fps, self.fps_assumed = frame_rate(fps)
        self.frame_count = len(paths)
        self._paths = list(paths)
        self._flags = cv2.IMREAD_COLOR if colour else cv2.IMREAD_GRAYSCALE
        self._keep_colour = keep_colour
        self._closed = False
        # The first readable image sets the frame size.
        for path in self._paths:
            image = _imread(path, self._flags)
            if image is not None:
                self.height, self.width = image.shape[:2]
                break
        else:
            raise SourceError(f"cannot read {uri!r}: none of its {len(paths)} images is readable")

    def frames(self, start: int = 0, end: int | None = None, *,
               size: tuple[int, int] | None = None) -> Iterator[Frame]:
        self._check_pass(start, end)
        stop = len(self._paths) if end is None else min(end, len(self._paths))
        return (self._read(index) for index in range(start, stop))

    def close(self) -> None:
        self._closed = True

    def _read(self, index: int) -> Frame:
        image = self._load(index, self._flags)
        # Read again in colour rather than convert: decoders give grey their own way (JPEG's
        # luma channel), and the detector must see what a grey source gives it.
        kept = self._load(index, cv2.IMREAD_COLOR) if self._keep_colour else None
        # Not kept: read again in colour only if the frame is shown (its thumbnail).
        made = (functools.partial(self._load, index, cv2.IMREAD_COLOR)
                if kept is None and image is not None else None)
        return Frame(index, index / self.fps, image, kept, make_picture=made)

    def _load(self, index: int, flags: int) -> np.ndarray | None:
        image = _imread(self._paths[index], flags)
        if image is not None and image.shape[:2] != (self.height, self.width):
            image = cv2.resize(image, (self.width, self.height), interpolation=cv2.INTER_AREA)
        return image


def _imread(path: str, flags: int) -> np.ndarray | None:
    """cv2.imread, but the file read by Python: OpenCV cannot open a path that is not valid
    UTF-8 (Python keeps its undecodable bytes as surrogates, which OpenCV rejects)."""
    try:
        with open(path, "rb") as handle:
            data = np.frombuffer(handle.read(), np.uint8)
    except OSError:
        return None
    return cv2.imdecode(data, flags) if data.size else None


def sequence_name(spec: str) -> str:
    """Display name of a folder, glob or pattern: the folder the images are in."""
    path = Path(spec)
    folder = path if path.is_dir() else path.parent
    return folder.resolve().name or str(folder)
