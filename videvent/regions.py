"""Regions to watch and masks to ignore: parsing, region files, validation, masks, drawing.

A polygon is a list of (x, y) points in pixels of the source picture, DVR-Scan's convention:
0 0 is the top left pixel, WIDTH-1 HEIGHT-1 the bottom right, and a polygon has 3 points or
more. ``-a/--add-region X0 Y0 X1 Y1 X2 Y2 ...`` gives one polygon (the flag may be repeated);
a region file (``-R/--load-region``) holds one polygon a line in the same form, blank lines and
lines starting with ``#`` ignored. Commas and brackets between the numbers are accepted, as
DVR-Scan accepts them, so ``(10,20) (30,40) (50,60)`` is the same polygon.

What the detector watches is the union of the watch regions (the whole picture when there
are none) minus the union of the ignore masks. ``Regions.mask`` rasterises that at the source
size and resizes it, nearest neighbour, to any size asked for (the detector's working size, a
thumbnail's); ``Regions.draw`` outlines both on a picture.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Sequence

from .atomic import write_text_atomically

Point = tuple[int, int]
Polygon = tuple[Point, ...]

# Outline colours (BGR): watched areas green, ignored ones red, as most NVRs draw them.
WATCH_COLOUR = (0, 200, 0)
IGNORE_COLOUR = (0, 0, 230)
# Anything in a polygon's text that is not a number separates numbers.
_SEPARATORS = re.compile(r"[\s,;()\[\]]+")
_POINTS_FORM = "X0 Y0 X1 Y1 X2 Y2 ..."
# A watch region as an option names it (``--alert-regions``): its number, or "region 2".
_REGION_NAME = re.compile(r"(?:region[\s_-]*)?(\d+)", re.IGNORECASE)


class RegionError(ValueError):
    """A polygon that cannot be used; the message is one line naming it and the problem."""


def parse_polygon(text: str | Sequence, name: str = "region") -> Polygon:
    """One polygon from ``"X0 Y0 X1 Y1 X2 Y2 ..."``, or the same numbers as separate
    arguments (as a shell splits ``-a 10 20 30 40 50 60``), or a list of numbers or of [x, y]
    pairs (as a TOML config file gives them)."""
    if not isinstance(text, str):
        text = " ".join(map(str, text))
    tokens = [token for token in _SEPARATORS.split(text) if token]
    try:
        numbers = [int(token) for token in tokens]
    except ValueError:
        bad = next(token for token in tokens if not _is_int(token))
        raise RegionError(f"{name}: {bad!r} is not a whole number of pixels "
                          f"(expected {_POINTS_FORM})") from None
    if len(numbers) % 2:
        raise RegionError(f"{name}: {len(numbers)} numbers is not a list of x y pairs "
                          f"(expected {_POINTS_FORM})")
    points = tuple(zip(numbers[0::2], numbers[1::2]))
    if len(points) < 3:
        raise RegionError(f"{name}: {len(points)} point{'s' if len(points) != 1 else ''}, "
                          f"a region needs at least 3 points ({_POINTS_FORM})")
    return points


def _is_int(token: str) -> bool:
    try:
        int(token)
    except ValueError:
        return False
    return True


def format_polygon(polygon: Polygon) -> str:
    """The ``X0 Y0 X1 Y1 ...`` form of a polygon (a line of a region file)."""
    return " ".join(f"{x} {y}" for x, y in polygon)


def load_region_file(path: str | os.PathLike, *, empty_ok: bool = False) -> list[Polygon]:
    """The polygons of a region file; RegionError (one line) if it cannot be read or a line is
    not a polygon, naming the file and the line. ``empty_ok`` (a file being edited, on the
    dashboard): a file that does not exist yet or holds no polygon gives none."""
    path = Path(path)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        if not empty_ok:
            raise RegionError(f"region file {str(path)!r}: cannot be read (no such file)"
                              ) from None
        lines = []
    except (OSError, UnicodeDecodeError) as error:
        reason = error.strerror if isinstance(error, OSError) and error.strerror else error
        raise RegionError(f"region file {str(path)!r}: cannot be read ({reason})") from None
    polygons = []
    for number, line in enumerate(lines, start=1):
        line = line.strip()
        if line and not line.startswith("#"):
            polygons.append(parse_polygon(line, f"{path}, line {number}"))
    if not polygons and not empty_ok:
        raise RegionError(f"region file {str(path)!r}: holds no polygon")
    return polygons


def save_region_file(path: str | os.PathLike, polygons: Iterable[Polygon]) -> None:
    """Write one polygon a line, atomically. The comment lines of the file it replaces are
    kept, at the top: they are the user's notes."""
    path = Path(path)
    try:
        comments = [line + "\n" for line in path.read_text(errors="replace").splitlines()
                    if line.lstrip().startswith("#")]
    except FileNotFoundError:
        comments = []
    text = "".join(comments) + "".join(format_polygon(polygon) + "\n" for polygon in polygons)
    write_text_atomically(path, text)


# Points of one polygon, at most: a hand-drawn region has tens; thousands are a mistake or an
# attack on the editor and the file.
MAX_POINTS = 1000


def check_polygon(polygon: Polygon, width: int, height: int, name: str = "region") -> None:
    """RegionError unless ``polygon`` has 3 points or more (``MAX_POINTS`` at most), all
    inside a width x height picture (0..width-1, 0..height-1)."""
    if len(polygon) < 3:
        raise RegionError(f"{name}: {len(polygon)} points, a region needs at least 3 points")
    if len(polygon) > MAX_POINTS:
        raise RegionError(f"{name}: {len(polygon)} points, at most {MAX_POINTS}")
    for x, y in polygon:
        if not (0 <= x < width and 0 <= y < height):
            raise RegionError(f"{name}: point ({x}, {y}) is outside the {width}x{height} frame "
                              f"(x 0..{width - 1}, y 0..{height - 1})")


def covered_pixels(polygon: Polygon) -> int:
    """The source pixels ``polygon`` covers: those of its mask, filled as ``Regions.mask``
    fills it (cv2.fillPoly), that are not on its own outline. Counted on the mask, not by the
    shoelace formula, whose signed areas cancel on a polygon that crosses itself (a bow-tie
    covering half the frame would count 0); and without the outline, which fillPoly draws
    even around nothing: a line, a point or a path that goes back on itself covers 0."""
    import cv2   # here, not on import: the command line reads settings without OpenCV or numpy
    import numpy as np

    points = np.asarray(polygon, np.int64)
    low = points.min(axis=0)
    # Filled in the polygon's bounding box only: the same pixels, without a frame-sized mask.
    contour = [(points - low).astype(np.int32).reshape(-1, 1, 2)]
    width, height = (points.max(axis=0) - low + 1).tolist()
    filled = np.zeros((height, width), np.uint8)
    cv2.fillPoly(filled, contour, 1)
    outline = np.zeros_like(filled)
    cv2.polylines(outline, contour, True, 1)
    return int(np.count_nonzero(filled > outline))


def check_region(polygon: Polygon, width: int, height: int,
                 working: tuple[int, int] | None = None, name: str = "region") -> None:
    """The check of one region to watch, wherever it comes from (``-a``, ``-R``, a config
    file, the Python API, the dashboard's region editor): RegionError unless it passes
    ``check_polygon`` and, given the ``working`` (width, height) picture the detector sees,
    covers (``covered_pixels``) at least as many source pixels as one working pixel holds."""
    check_polygon(polygon, width, height, name)
    if working is not None:
        pixel = (width / working[0]) * (height / working[1])   # source pixels in one
        covered = covered_pixels(polygon)
        if covered < pixel:
            raise RegionError(
                f"{name}: covers {covered} source pixels, less than one pixel of the "
                f"{working[0]}x{working[1]} picture the detector works on ({pixel:g}): "
                f"draw it bigger")


@dataclass(frozen=True)
class Regions:
    """Where the detector looks: the watch regions (none: the whole picture) minus the ignore
    masks, in pixels of a ``width`` x ``height`` source picture (``check`` verifies that)."""

    watch: tuple[Polygon, ...] = ()
    ignore: tuple[Polygon, ...] = ()
    _masks: dict = field(default_factory=dict, init=False, repr=False, compare=False)

    @classmethod
    def from_options(cls, add_region: Iterable[str | Sequence] = (),
                     load_region: Iterable[str | os.PathLike] = (),
                     ignore_region: Iterable[str | Sequence] = (),
                     ignore_file: Iterable[str | os.PathLike] = ()) -> "Regions":
        """Regions from the command line's ``-a`` texts and ``-R`` files (watch) and the mask
        options' texts and files (ignore); RegionError on any bad one."""
        watch = [parse_polygon(text, f"region {n}") for n, text in enumerate(add_region, 1)]
        ignore = [parse_polygon(text, f"mask {n}") for n, text in enumerate(ignore_region, 1)]
        for path in load_region:
            watch += load_region_file(path)
        for path in ignore_file:
            ignore += load_region_file(path)
        return cls(tuple(watch), tuple(ignore))

    def __bool__(self) -> bool:
        return bool(self.watch or self.ignore)

    def check(self, width: int, height: int, working: tuple[int, int] | None = None) -> None:
        """RegionError (one line, naming the polygon) unless every polygon fits the frame,
        each region covers at least one pixel of the ``working`` (width, height) picture the
        detector sees (``check_region``: a line or a sliver would leave it nothing to watch),
        and the masks leave some of the regions to watch."""
        for number, polygon in enumerate(self.watch, start=1):
            check_region(polygon, width, height, working, f"region {number}")
        for number, polygon in enumerate(self.ignore, start=1):
            check_polygon(polygon, width, height, f"mask {number}")
        if not self.mask((width, height)).any():
            raise RegionError("the masks cover all of the regions: nothing left to watch")

    def mask(self, source_size: tuple[int, int], size: tuple[int, int] | None = None
             ) -> np.ndarray:
        """Boolean (height, width) array, True where the detector looks: filled at the source
        size ``(width, height)``, then resized nearest-neighbour to ``size`` (width, height)."""
        key = (tuple(source_size), tuple(size or source_size))
        if key not in self._masks:
            import cv2
            import numpy as np

            width, height = source_size
            watched = np.zeros((height, width), np.uint8)
            if self.watch:
                cv2.fillPoly(watched, _contours(self.watch), 1)
            else:
                watched[:] = 1
            if self.ignore:
                cv2.fillPoly(watched, _contours(self.ignore), 0)
            if size is not None and tuple(size) != (width, height):
                watched = cv2.resize(watched, tuple(size), interpolation=cv2.INTER_NEAREST)
            watched = watched.astype(bool)
            watched.flags.writeable = False  # shared by every caller of the same size
            self._masks[key] = watched
        return self._masks[key]

    def draw(self, picture: np.ndarray, source_size: tuple[int, int], *,
             thickness: int | None = None) -> np.ndarray:
        """Outline the watch regions (green) and ignore masks (red) on a BGR ``picture`` (in
        place, and returned), scaling from the source size to the picture's."""
        import cv2

        height, width = picture.shape[:2]
        scale = (width / source_size[0], height / source_size[1])
        line = thickness or max(1, round(max(width, height) / 400))
        for polygons, colour in ((self.watch, WATCH_COLOUR), (self.ignore, IGNORE_COLOUR)):
            if polygons:
                cv2.polylines(picture, _contours(polygons, scale), True, colour, line,
                              cv2.LINE_AA)
        return picture


def _contours(polygons: Iterable[Polygon], scale: tuple[float, float] = (1.0, 1.0)):
    import numpy as np

    return [np.round(np.asarray(polygon, np.float64) * scale).astype(np.int32).reshape(-1, 1, 2)
            for polygon in polygons]


def parse_region_names(text: str, count: int | None = None) -> frozenset[str]:
    """The watch regions of a comma-separated list, named as events name them (``region 2``)
    from ``region 2`` or ``2``; ValueError (one line) for a name that is not one, or, given
    the ``count`` of regions there are, one past them."""
    tokens = [token.strip() for token in text.split(",") if token.strip()]
    if not tokens:
        raise ValueError("no region given: name them by number in the order given "
                         "(-a first, then the files of -R): 1,2 or 'region 1'")
    names = []
    for token in tokens:
        match = _REGION_NAME.fullmatch(token)
        if match is None or int(match.group(1)) < 1:
            raise ValueError(f"{token!r} is not a region: regions are named by number in the "
                             f"order given (-a first, then the files of -R): 1,2 or 'region 1'")
        number = int(match.group(1))
        if count is not None and number > count:
            there = (f"there is no watch region (give them with -a/--add-region or "
                     f"-R/--load-region)" if count == 0 else
                     f"there {'is' if count == 1 else 'are'} {count} "
                     f"(region 1{'' if count == 1 else f' to region {count}'})")
            raise ValueError(f"region {number} is not one of the regions watched: {there}")
        names.append(f"region {number}")
    return frozenset(names)
