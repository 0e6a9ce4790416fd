"""Drawing what the detector saw onto frames: the overlay, boxes, event border, timecode, chart.

The changed areas are the strongly changed pixels of the residual image the detector scored
the frame with (the frame minus its reconstruction from the background subspace), inside the
grid blocks whose scores made the frame unusual, so a waving tree that the model expects is
not marked even though it leaves some residual. The overlay (``Overlay``, the ``overlay``
setting) outlines them and leaves the picture inside as it was (a person found stays
visible), or tints the picture with the residual's heat map, or draws nothing; boxes around
them are drawn only when asked for (``bounding_box``, DVR-Scan's ``-bb``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import cv2
import numpy as np

from ..choices import OVERLAYS
from ..timecode import format_timecode

EVENT_BGR = (40, 40, 220)
CHART_LINE_BGR = (235, 235, 235)
THRESHOLD_BGR = (60, 60, 230)
CURSOR_BGR = (0, 220, 255)
# A residual of this many grey levels shows at full heat; half a dozen is invisible.
HEAT_FULL_SCALE = 60.0
# The heat map's opacity at full heat: a tint, through which what changed is still seen.
HEAT_OPACITY = 0.4
# The changed areas' outline: cyan, apart from the regions' green and red, the boxes' green,
# the event's red and the chart's yellow cursor.
OUTLINE_BGR = (255, 230, 0)
BOX_BGR = (0, 255, 0)
# A pixel belongs to a changed region when its residual exceeds this many grey levels and
# four times the frame's median residual (what the background moves by).
BOX_MIN_LEVEL = 20.0
BOX_MEDIAN_FACTOR = 4.0
# The smallest box side: the frame's long side over this.
BOX_MIN_FRACTION = 40
# Text height (timecode, EVENT label) as a share of the frame height, within these pixels:
# readable on a 160x120 frame, not shouting on a 1080p one.
TEXT_HEIGHT_SHARE, TEXT_MIN_PX, TEXT_MAX_PX = 1 / 14, 10, 28
HERSHEY_PX_PER_SCALE = 27     # FONT_HERSHEY_SIMPLEX's height at scale 1


@dataclass(frozen=True)
class Box:
    x: int
    y: int
    width: int
    height: int

    @property
    def area(self) -> int:
        return self.width * self.height


def heat_overlay(image: np.ndarray, residual_image: np.ndarray) -> np.ndarray:
    """``image`` (BGR) with the residual's magnitude blended over it as a heat map."""
    magnitude = np.abs(residual_image)
    if magnitude.ndim == 3:
        magnitude = magnitude.max(axis=2)
    heat = np.clip(magnitude / HEAT_FULL_SCALE, 0.0, 1.0).astype(np.float32)
    heat = cv2.resize(heat, (image.shape[1], image.shape[0]), interpolation=cv2.INTER_LINEAR)
    colours = cv2.applyColorMap(np.multiply(heat, 255, dtype=np.float32).astype(np.uint8),
                                cv2.COLORMAP_INFERNO)
    # In place and in float32: at 720p every full-size temporary costs a millisecond a frame.
    alpha = np.multiply(heat, HEAT_OPACITY, out=heat)
    # OpenCV's per-pixel blend: what numpy does in float64 arrays, a dozen times faster.
    return cv2.blendLinear(np.ascontiguousarray(image), colours,
                           np.subtract(1.0, alpha, dtype=np.float32), alpha)


def changed_areas(residual_image: np.ndarray, block_scores: np.ndarray, level: float,
                  frame_size: tuple[int, int]) -> tuple[np.ndarray, list[Box]]:
    """The strongly changed regions of unusual blocks: their mask (at the residual's size) and
    their boxes (in frame pixels, largest first); none with a side under 1/40 of the frame's
    long side (a 2x3 box marks a speck, not a thing)."""
    magnitude = np.abs(residual_image)
    if magnitude.ndim == 3:
        magnitude = magnitude.max(axis=2)
    height, width = magnitude.shape
    unusual = cv2.resize((block_scores >= level).astype(np.uint8), (width, height),
                         interpolation=cv2.INTER_NEAREST).astype(bool)
    cut = max(BOX_MIN_LEVEL, BOX_MEDIAN_FACTOR * float(np.median(magnitude)))
    mask = ((magnitude > cut) & unusual).astype(np.uint8)
    mask = cv2.morphologyEx(mask, cv2.MORPH_CLOSE, np.ones((3, 3), np.uint8))
    count, labels, stats, _ = cv2.connectedComponentsWithStats(mask, connectivity=8)
    scale_x, scale_y = frame_size[0] / width, frame_size[1] / height
    smallest = max(frame_size) / BOX_MIN_FRACTION
    kept = {}
    for label, (x, y, w, h, _) in enumerate(stats[1:count], start=1):
        box = Box(round(x * scale_x), round(y * scale_y), round(w * scale_x), round(h * scale_y))
        if min(box.width, box.height) >= smallest:
            kept[label] = box
    areas = np.isin(labels, list(kept)).astype(np.uint8)
    return areas, sorted(kept.values(), key=lambda box: box.area, reverse=True)


def outline_areas(image: np.ndarray, areas: np.ndarray) -> None:
    """Outline ``areas`` (a mask of any size, scaled to the image's) on ``image``, in place;
    only the outline is drawn, so what is inside looks as it did."""
    height, width = image.shape[:2]
    # Closed over a few working pixels: one outline around a person, not one that runs
    # into every gap between the parts that changed most.
    areas = cv2.morphologyEx(areas, cv2.MORPH_CLOSE,
                             cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (7, 7)))
    # Scaled smoothly, then cut at half: the outline follows the shape, not the mask's pixels.
    smooth = cv2.resize(areas.astype(np.float32), (width, height),
                        interpolation=cv2.INTER_LINEAR)
    contours, _ = cv2.findContours((smooth >= 0.5).astype(np.uint8), cv2.RETR_EXTERNAL,
                                   cv2.CHAIN_APPROX_SIMPLE)
    cv2.drawContours(image, contours, -1, OUTLINE_BGR, max(1, width // 320), cv2.LINE_AA)


def draw_boxes(image: np.ndarray, boxes: list[Box]) -> None:
    thickness = max(1, image.shape[1] // 320)
    for box in boxes:
        cv2.rectangle(image, (box.x, box.y), (box.x + box.width - 1, box.y + box.height - 1),
                      BOX_BGR, thickness)


@dataclass(frozen=True)
class Overlay:
    """How what the detector found is drawn over a picture: ``style`` one of ``OVERLAYS``
    (``outline``: the changed areas outlined; ``heat``: the residual's heat map as a tint;
    ``off``: nothing), and ``boxes`` around the changed regions or not."""

    style: str = OVERLAYS[0]
    boxes: bool = False

    @classmethod
    def of(cls, settings) -> "Overlay":
        """The overlay ``settings`` (``videvent.settings.Settings``) ask for."""
        return cls(settings.overlay, settings.bounding_box)

    def draw(self, image: np.ndarray, residual_image: np.ndarray | None,
             block_scores: np.ndarray | None, level: float, *, boxes: bool = True
             ) -> tuple[np.ndarray, list[Box]]:
        """A new picture: ``image`` (BGR, never changed) with the overlay, and the changed
        regions' boxes (found whether drawn or not: ``regions.csv`` lists them). ``boxes``:
        this frame may have boxes (the annotated video boxes only its events' frames)."""
        if residual_image is None:
            return image.copy(), []
        out = (heat_overlay(image, residual_image) if self.style == "heat"
               else np.array(image, copy=True, order="C"))
        if block_scores is None or (self.style != "outline" and not boxes):
            return out, []
        areas, found = changed_areas(residual_image, block_scores, level,
                                     (image.shape[1], image.shape[0]))
        if self.style == "outline":
            outline_areas(out, areas)
        if self.boxes and boxes:
            draw_boxes(out, found)
        return out, found if boxes else []


def _text_box(text: str, scale: float) -> tuple[int, int, int, int, int]:
    """The text's width, height and baseline at ``scale``, the stroke's thickness and the
    padding of its box (``_text``'s box is ``width + 2 * pad`` wide)."""
    thickness = max(1, round(scale * 2))
    (w, h), baseline = cv2.getTextSize(text, cv2.FONT_HERSHEY_SIMPLEX, scale, thickness)
    return w, h, baseline, thickness, max(2, h // 4)


def _text(image: np.ndarray, text: str, origin: tuple[int, int], scale: float,
          background: tuple[int, int, int], right: bool = False) -> None:
    """White text on a box of ``background`` whose top left (``right``: top right) corner
    is ``origin``. Small text is drawn without anti-aliasing, which would blur it away."""
    w, h, baseline, thickness, pad = _text_box(text, scale)
    x, y = origin
    if right:
        x -= w + 2 * pad
    cv2.rectangle(image, (x, y), (x + w + 2 * pad, y + h + baseline + 2 * pad), background, -1)
    cv2.putText(image, text, (x + pad, y + pad + h), cv2.FONT_HERSHEY_SIMPLEX, scale,
                (255, 255, 255), thickness, cv2.LINE_AA if scale >= 0.6 else cv2.LINE_8)


class StripChart:
    """The score along the bottom of the frame, over frames ``first..last``, with a cursor.

    Drawn whole from the scores of a finished run (``of_scores``), or filled in frame by
    frame (``add``) while the video is being scored, the future left blank: the annotated
    video is then written in the same pass as the scores.
    """

    def __init__(self, width: int, height: int, first: int, last: int, threshold: float,
                 top: float):
        self.width, self.height = width, height
        self.first, self.last = first, last
        self._top, self._threshold = top, threshold
        self._chart = np.zeros((self.height, width, 3), np.uint8)
        self._threshold_line(0, width - 1)
        self._previous: tuple[int, int] | None = None

    @classmethod
    def of_scores(cls, width: int, height: int, frames: np.ndarray, scores: np.ndarray,
                  threshold: float, events: list[dict]) -> "StripChart":
        """The chart of a whole run: its scores and its events' cores shaded."""
        top = max(threshold * 2.0, float(np.max(scores, initial=0.0)) * 1.05, 1.0)
        chart = cls(width, height, int(frames[0]) if len(frames) else 0,
                    int(frames[-1]) if len(frames) else 1, threshold, top)
        for event in events:
            chart._shade(event["core_start_frame"], event["core_end_frame"])
        chart._threshold_line(0, width - 1)
        if len(frames) > 1:
            points = np.column_stack([[chart.x_of(f) for f in frames],
                                      [chart._y_of(max(0.0, v)) for v in scores]])
            cv2.polylines(chart._chart, [points.astype(np.int32)], False, CHART_LINE_BGR, 1,
                          cv2.LINE_AA)
        return chart

    def add(self, frame: int, score: float, in_event: bool) -> None:
        """One more frame's score (and whether it is in an event's core)."""
        if in_event:
            self._shade(frame, frame)
            self._threshold_line(self.x_of(frame) - 1, self.x_of(frame))
        point = (self.x_of(frame), self._y_of(max(0.0, score) if math.isfinite(score) else 0.0))
        if self._previous is not None:
            cv2.line(self._chart, self._previous, point, CHART_LINE_BGR, 1, cv2.LINE_AA)
        self._previous = point

    def _y_of(self, value: float) -> int:
        return int(round((self.height - 3) * (1 - min(value, self._top) / self._top))) + 1

    def _shade(self, first: int, last: int) -> None:
        x0, x1 = self.x_of(first), self.x_of(last)
        cv2.rectangle(self._chart, (x0, 0), (max(x0, x1), self.height - 1), (40, 40, 120), -1)

    def _threshold_line(self, x0: int, x1: int) -> None:
        y = self._y_of(self._threshold)
        cv2.line(self._chart, (x0, y), (x1, y), THRESHOLD_BGR, 1, cv2.LINE_AA)

    def x_of(self, frame: int) -> int:
        span = max(1, self.last - self.first)
        return int(round((frame - self.first) / span * (self.width - 1)))

    def draw(self, image: np.ndarray, frame: int) -> None:
        region = image[-self.height:]
        cv2.addWeighted(region, 0.35, self._chart, 0.65, 0.0, dst=region)  # in place
        x = self.x_of(frame)
        cv2.line(region, (x, 0), (x, self.height - 1), CURSOR_BGR, 2)


def chart_height(frame_height: int) -> int:
    """A seventh of the frame (and never more than half of a tiny one); 0 (no chart) on a
    frame too small to show one (under 12 pixels high)."""
    height = min(max(6, frame_height // 7), frame_height // 2)
    return height if height >= 6 else 0


def text_layout(height: int) -> tuple[float, int]:
    """The text scale and margin for a picture ``height`` pixels high: the text scaled with
    the picture, as the chart is."""
    text_px = min(max(TEXT_MIN_PX, height * TEXT_HEIGHT_SHARE), TEXT_MAX_PX)
    return text_px / HERSHEY_PX_PER_SCALE, max(2, height // 60)


def _stamp_text(time_s: float) -> str:
    """The timecode of ``time_s``; under an hour, without the hours: a shorter stamp on a
    small frame."""
    text = format_timecode(time_s)
    return text[3:] if text.startswith("00:") else text


def stamp(image: np.ndarray, time_s: float, scale: float, margin: int) -> None:
    """The timecode ``time_s`` in the top right corner of ``image``."""
    _text(image, _stamp_text(time_s), (image.shape[1] - margin, margin), scale, (30, 30, 30),
          right=True)


def caption(image: np.ndarray, label: str, time_s: float) -> None:
    """An event's ``label`` in the top left corner of ``image`` (BGR), on the event's red, and
    its frame's timecode in the top right, if both fit side by side (a picture a hundred-odd
    pixels wide keeps the label): as the annotated video labels an event's frames."""
    scale, margin = text_layout(image.shape[0])
    _text(image, label, (margin, margin), scale, EVENT_BGR)
    widths = [width + 2 * pad for width, _, _, _, pad in
              (_text_box(text, scale) for text in (label, _stamp_text(time_s)))]
    if margin + widths[0] + margin + widths[1] <= image.shape[1] - margin:
        stamp(image, time_s, scale, margin)


class Annotator:
    """Draws one result frame: the overlay, the EVENT label and border, timecode, chart."""

    def __init__(self, width: int, height: int, chart: StripChart | None, box_level: float,
                 regions=None, overlay: Overlay = Overlay()):
        self.width, self.height = width, height
        self.box_level = box_level
        self.chart = chart
        self.overlay = overlay
        # videvent.regions.Regions (not imported: output/ needs nothing above it), outlined.
        self.regions = regions
        self._scale, self._margin = text_layout(height)

    def draw(self, image: np.ndarray, frame: int, time_s: float, event_number: int | None,
             residual_image: np.ndarray | None, block_scores: np.ndarray | None
             ) -> tuple[np.ndarray, list[Box]]:
        """The annotated frame (``image`` is left as it was), and the changed regions' boxes
        of an event's frame (largest first), drawn on it when the overlay has boxes."""
        out, boxes = self.overlay.draw(image, residual_image, block_scores, self.box_level,
                                       boxes=event_number is not None)
        if self.regions:
            self.regions.draw(out, (self.width, self.height))
        if event_number is not None:
            border = max(1, min(self.width, self.height) // 100)
            cv2.rectangle(out, (0, 0), (self.width - 1, self.height - 1), EVENT_BGR, border * 2)
            _text(out, f"EVENT {event_number}", (border + self._margin, border + self._margin),
                  self._scale, EVENT_BGR)
        stamp(out, time_s, self._scale, self._margin)
        if self.chart is not None:
            self.chart.draw(out, frame)
        return out, boxes
