"""Drawing what the detector saw onto frames: heat map, boxes, event border, timecode, chart.

The heat map is the residual image the detector scored the frame with (the frame minus its
reconstruction from the background subspace), scaled back to the frame's size. Boxes surround
the strongly changed regions inside the grid blocks whose scores made the frame unusual, so a
waving tree that the model expects is not boxed even though it leaves some residual.
"""

from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np

from ..timecode import format_timecode

EVENT_BGR = (40, 40, 220)
CHART_LINE_BGR = (235, 235, 235)
THRESHOLD_BGR = (60, 60, 230)
CURSOR_BGR = (0, 220, 255)
# A residual of this many grey levels shows at full heat; half a dozen is invisible.
HEAT_FULL_SCALE = 60.0
# A pixel belongs to a changed region when its residual exceeds this many grey levels and
# four times the frame's median residual (what the background moves by).
BOX_MIN_LEVEL = 20.0
BOX_MEDIAN_FACTOR = 4.0


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
    colours = cv2.applyColorMap((heat * 255).astype(np.uint8), cv2.COLORMAP_INFERNO)
    alpha = 0.75 * heat
    # OpenCV's per-pixel blend: what numpy does in float64 arrays, a dozen times faster.
    return cv2.blendLinear(np.ascontiguousarray(image), colours, 1.0 - alpha, alpha)


def changed_regions(residual_image: np.ndarray, block_scores: np.ndarray, level: float,
                    frame_size: tuple[int, int], min_area: int = 4) -> list[Box]:
    """Boxes (in frame pixels) around the strongly changed regions of unusual blocks."""
    magnitude = np.abs(residual_image)
    if magnitude.ndim == 3:
        magnitude = magnitude.max(axis=2)
    height, width = magnitude.shape
    unusual = cv2.resize((block_scores >= level).astype(np.uint8), (width, height),
                         interpolation=cv2.INTER_NEAREST).astype(bool)
    cut = max(BOX_MIN_LEVEL, BOX_MEDIAN_FACTOR * float(np.median(magnitude)))
    mask = ((magnitude > cut) & unusual).astype(np.uint8)
    mask = cv2.morphologyEx(mask, cv2.MORPH_CLOSE, np.ones((3, 3), np.uint8))
    count, _, stats, _ = cv2.connectedComponentsWithStats(mask, connectivity=8)
    scale_x, scale_y = frame_size[0] / width, frame_size[1] / height
    boxes = []
    for x, y, w, h, area in stats[1:count]:
        if area >= min_area:
            boxes.append(Box(round(x * scale_x), round(y * scale_y), round(w * scale_x),
                             round(h * scale_y)))
    return sorted(boxes, key=lambda box: box.area, reverse=True)


def draw_boxes(image: np.ndarray, boxes: list[Box]) -> None:
    thickness = max(1, image.shape[1] // 320)
    for box in boxes:
        cv2.rectangle(image, (box.x, box.y), (box.x + box.width - 1, box.y + box.height - 1),
                      (0, 255, 0), thickness)


def _text(image: np.ndarray, text: str, origin: tuple[int, int], scale: float,
          background: tuple[int, int, int] | None = None) -> None:
    thickness = max(1, round(scale * 2))
    (w, h), baseline = cv2.getTextSize(text, cv2.FONT_HERSHEY_SIMPLEX, scale, thickness)
    x, y = origin
    if background is not None:
        cv2.rectangle(image, (x - 4, y - h - 4), (x + w + 4, y + baseline + 2), background, -1)
    else:  # a dark outline keeps white text readable on any picture
        cv2.putText(image, text, (x, y), cv2.FONT_HERSHEY_SIMPLEX, scale, (0, 0, 0),
                    thickness + 2, cv2.LINE_AA)
    cv2.putText(image, text, (x, y), cv2.FONT_HERSHEY_SIMPLEX, scale, (255, 255, 255),
                thickness, cv2.LINE_AA)


class StripChart:
    """The score over the whole video along the bottom of the frame, with a moving cursor."""

    def __init__(self, width: int, height: int, frames: np.ndarray, scores: np.ndarray,
                 threshold: float, events: list[dict]):
        self.width, self.height = width, height
        self.first = int(frames[0]) if len(frames) else 0
        self.last = int(frames[-1]) if len(frames) else 1
        top = max(threshold * 2.0, float(np.max(scores, initial=0.0)) * 1.05, 1.0)
        self._y_of = lambda value: int(round((self.height - 3) * (1 - min(value, top) / top))) + 1
        chart = np.zeros((self.height, width, 3), np.uint8)
        for event in events:
            x0, x1 = self.x_of(event["core_start_frame"]), self.x_of(event["core_end_frame"])
            cv2.rectangle(chart, (x0, 0), (max(x0, x1), self.height - 1), (40, 40, 120), -1)
        y = self._y_of(threshold)
        cv2.line(chart, (0, y), (width - 1, y), THRESHOLD_BGR, 1, cv2.LINE_AA)
        if len(frames) > 1:
            points = np.column_stack([[self.x_of(f) for f in frames],
                                      [self._y_of(max(0.0, v)) for v in scores]])
            cv2.polylines(chart, [points.astype(np.int32)], False, CHART_LINE_BGR, 1,
                          cv2.LINE_AA)
        self._chart = chart

    def x_of(self, frame: int) -> int:
        span = max(1, self.last - self.first)
        return int(round((frame - self.first) / span * (self.width - 1)))

    def draw(self, image: np.ndarray, frame: int) -> None:
        region = image[-self.height:]
        cv2.addWeighted(region, 0.35, self._chart, 0.65, 0.0, dst=region)  # in place
        x = self.x_of(frame)
        cv2.line(region, (x, 0), (x, self.height - 1), CURSOR_BGR, 2)


class Annotator:
    """Draws one result frame: heat map, boxes, EVENT label and border, timecode, chart."""

    def __init__(self, width: int, height: int, scores: dict[str, np.ndarray],
                 events: list[dict], threshold: float, box_level: float):
        self.width, self.height = width, height
        self.box_level = box_level
        # A sixth of the frame, at least 24 pixels, but never more than half of a small frame;
        # none on a frame too small to show one (under 12 pixels high).
        chart_height = min(max(24, height // 6), height // 2)
        self.chart = StripChart(width, chart_height, scores["frame"], scores["score"],
                                threshold, events) if chart_height >= 6 else None
        self._scale = max(0.45, width / 1280)

    def draw(self, image: np.ndarray, frame: int, time_s: float, event_number: int | None,
             residual_image: np.ndarray | None, block_scores: np.ndarray | None
             ) -> tuple[np.ndarray, list[Box]]:
        """The annotated frame, and the boxes drawn on it (largest first)."""
        out = image if residual_image is None else heat_overlay(image, residual_image)
        out = np.ascontiguousarray(out)
        boxes: list[Box] = []
        if event_number is not None:
            if residual_image is not None and block_scores is not None:
                boxes = changed_regions(residual_image, block_scores, self.box_level,
                                        (self.width, self.height))
                draw_boxes(out, boxes)
            border = max(3, self.width // 100)
            cv2.rectangle(out, (0, 0), (self.width - 1, self.height - 1), EVENT_BGR, border * 2)
            _text(out, f"EVENT {event_number}", (border + 8, border + int(34 * self._scale)),
                  self._scale, background=EVENT_BGR)
        stamp = format_timecode(time_s)
        size = cv2.getTextSize(stamp, cv2.FONT_HERSHEY_SIMPLEX, self._scale * 0.7, 1)[0]
        _text(out, stamp, (self.width - size[0] - 12, size[1] + 10), self._scale * 0.7,
              background=(30, 30, 30))
        if self.chart is not None:
            self.chart.draw(out, frame)
        return out, boxes
