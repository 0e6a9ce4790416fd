"""Region files in DVR-Scan's format, as the dashboard's region editor reads and saves them.

One polygon a line, its points as integers ``X0 Y0 X1 Y1 X2 Y2 ...`` in source-picture pixels;
blank lines and lines starting with ``#`` are ignored. A polygon needs at least 3 points, all
inside the frame. Saving writes a temporary file beside the target and renames it into place,
so a reader never sees half a file.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..output.folder import partial_path

Polygon = list[tuple[int, int]]


class RegionError(ValueError):
    """A polygon or region file that cannot be used; the message is one line for the user."""


def check_polygons(polygons: object, width: int, height: int) -> list[Polygon]:
    """``polygons`` (a list of lists of [x, y] pairs, as the page posts them) as checked
    integer polygons; RegionError naming the first problem."""
    if not isinstance(polygons, list) or not polygons:
        raise RegionError("no polygon given")
    checked = []
    for number, polygon in enumerate(polygons, 1):
        if not isinstance(polygon, list) or len(polygon) < 3:
            raise RegionError(f"polygon {number} needs at least 3 points")
        points = []
        for point in polygon:
            if (not isinstance(point, (list, tuple)) or len(point) != 2
                    or not all(isinstance(v, (int, float)) and not isinstance(v, bool)
                               for v in point)):
                raise RegionError(f"polygon {number}: a point is not an [x, y] pair of numbers")
            x, y = round(point[0]), round(point[1])
            if not (0 <= x < width and 0 <= y < height):
                raise RegionError(f"polygon {number}: point ({x}, {y}) is outside the "
                                  f"{width}x{height} frame")
            points.append((x, y))
        checked.append(points)
    return checked


def read_region_file(path: str | os.PathLike) -> list[Polygon]:
    """The polygons of a region file (none when it does not exist yet)."""
    try:
        text = Path(path).read_text()
    except FileNotFoundError:
        return []
    except UnicodeDecodeError:
        raise RegionError(f"{path} is not a region file (not text)") from None
    polygons = []
    for number, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        try:
            values = [int(value) for value in line.split()]
        except ValueError:
            raise RegionError(f"{path}, line {number}: points must be whole numbers") from None
        if len(values) % 2 or len(values) < 6:
            raise RegionError(f"{path}, line {number}: a polygon needs at least 3 x y pairs")
        polygons.append(list(zip(values[0::2], values[1::2])))
    return polygons


def write_region_file(path: str | os.PathLike, polygons: list[Polygon]) -> None:
    """Write ``polygons`` (already checked) to ``path``: a temporary name, then renamed.
    The comment lines of the file it replaces are kept, at the top."""
    try:
        comments = [line + "\n" for line in Path(path).read_text(errors="replace").splitlines()
                    if line.lstrip().startswith("#")]
    except FileNotFoundError:
        comments = []
    text = "".join(comments) + "".join(" ".join(f"{x} {y}" for x, y in polygon) + "\n"
                                       for polygon in polygons)
    temporary = partial_path(path)
    try:
        temporary.write_text(text)
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)
