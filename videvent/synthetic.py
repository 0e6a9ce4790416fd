"""Deterministic synthetic scenes with exact ground truth.

Every scene is a garden: a textured sky, stone wall and lawn, a pond whose
surface ripples and a tree whose crown waves in the wind.  The tree and the
water are the *dynamic background* a detector must learn to ignore; they move
by a few sinusoids with periods of whole frames, so they repeat exactly every
``TREE_REPEAT_FRAMES`` frames (periodic, hence low-rank-ish over a window, like
the Wallflower "WavingTrees" sequence).  On top of that come the *events*: a
walking person, a chair that appears and stays, and so on, plus sensor noise.

Frames are rendered on demand (``SyntheticClip.frame(i)``, ``frames()``) so a
long clip never sits in memory whole.  The same seed always gives the same
frames.  Ground truth is measured from what is drawn, never guessed: a frame
is an event frame when the foreground objects' pixel mask in that frame is
non-empty.  ``SyntheticClip.background_frame(i)`` renders the identical frame
without the foreground objects (same noise), which lets tests check it.

Only numpy and OpenCV are used; nothing here writes files (see
``scripts/make_sample_videos.py`` for the bundled sample videos).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, Iterator, Sequence

import cv2
import numpy as np

__all__ = [
    "GROUND_TRUTH_FORMAT_VERSION",
    "SAMPLE_SCENES",
    "SyntheticClip",
    "TREE_REPEAT_FRAMES",
    "blank_frames_scene",
    "lighting_scene",
    "long_event_scene",
    "moving_square_scene",
    "scene_change_scene",
    "walker_scene",
]

GROUND_TRUTH_FORMAT_VERSION = 1

FPS = 15
WIDTH, HEIGHT = 320, 240

# Garden layout (rows of the 320x240 frame).
SKY_BOTTOM = 48
WALL_BOTTOM = 150
WATER_TOP = 210
FEET_Y = 202  # where walkers and the chair stand
PERSON_HEIGHT = HEIGHT // 3

# Tree sway: (amplitude in px at the crown top, period in frames).  Periods of
# 18, 27 and 9 frames (1.2 s, 1.8 s, 0.6 s at 15 fps) make the whole tree repeat
# exactly every 54 frames.
SWAY_TERMS = ((4.0, 18), (3.0, 27))
FLUTTER_AMPLITUDE, FLUTTER_PERIOD = 1.5, 9
TREE_REPEAT_FRAMES = 54
# Pond ripples: (amplitude in grey levels, wavelength in px, direction in
# degrees, period in frames); periods divide TREE_REPEAT_FRAMES as well.
RIPPLE_TERMS = ((9.0, 23.0, 10.0, 27), (6.0, 11.0, -25.0, 18), (4.0, 7.0, 60.0, 9))

# Foreground labels drawn into a uint8 mask, and their BGR colours.
SKIN, HAIR, JACKET, TROUSERS, CHAIR_FRAME, CHAIR_SEAT, SQUARE = range(1, 8)
PALETTE = np.zeros((256, 3), np.float32)
PALETTE[SKIN] = (110, 140, 195)
PALETTE[HAIR] = (30, 35, 45)
PALETTE[JACKET] = (140, 40, 70)
PALETTE[TROUSERS] = (45, 40, 35)
PALETTE[CHAIR_FRAME] = (55, 55, 60)
PALETTE[CHAIR_SEAT] = (40, 50, 190)
PALETTE[SQUARE] = (250, 250, 250)

Range = list[int]  # [first, last], inclusive, 0-based
Box = tuple[int, int, int, int]  # (x, y, w, h)


@dataclass(frozen=True, kw_only=True)
class SyntheticClip:
    """A rendered-on-demand synthetic clip and its ground truth.

    ``size`` is (width, height).  ``event_frames`` lists the inclusive frame
    ranges in which a foreground object is visible.  The scene-specific fields
    keep their defaults when a scene has no such thing.
    """

    name: str
    description: str
    seed: int
    fps: int
    size: tuple[int, int]
    frame_count: int
    event_frames: list[Range]
    blank_frames: list[Range] = field(default_factory=list)
    frozen_frames: list[Range] = field(default_factory=list)
    change_frame: int | None = None
    lasting_change: bool = False
    lights_off_frame: int | None = None
    boxes: list[Box | None] | None = None
    render: Callable[[int, bool], np.ndarray] = field(repr=False, compare=False)

    def frame(self, index: int) -> np.ndarray:
        """Frame ``index`` as an HxWx3 uint8 BGR array."""
        self._check_index(index)
        return self.render(index, True)

    def background_frame(self, index: int) -> np.ndarray:
        """Frame ``index`` without the foreground objects (same noise, lighting)."""
        self._check_index(index)
        return self.render(index, False)

    def frames(self) -> Iterator[np.ndarray]:
        """A fresh iterator over all frames, rendered one at a time."""
        return (self.render(index, True) for index in range(self.frame_count))

    def ground_truth(self) -> dict:
        """JSON-ready ground truth (``boxes`` only when the scene has them)."""
        truth = {
            "format_version": GROUND_TRUTH_FORMAT_VERSION,
            "name": self.name,
            "description": self.description,
            "seed": self.seed,
            "fps": self.fps,
            "width": self.size[0],
            "height": self.size[1],
            "frame_count": self.frame_count,
            "event_frames": _copy_ranges(self.event_frames),
            "blank_frames": _copy_ranges(self.blank_frames),
            "frozen_frames": _copy_ranges(self.frozen_frames),
            "change_frame": self.change_frame,
            "lasting_change": self.lasting_change,
            "lights_off_frame": self.lights_off_frame,
        }
        if self.boxes is not None:
            truth["boxes"] = [list(box) if box else None for box in self.boxes]
        return truth

    def _check_index(self, index: int) -> None:
        if not 0 <= index < self.frame_count:
            raise IndexError(f"frame {index} outside 0..{self.frame_count - 1}")


def _copy_ranges(ranges: Sequence[Range]) -> list[Range]:
    return [list(frame_range) for frame_range in ranges]


# --------------------------------------------------------------------------
# Static textures


def _smooth_noise(rng: np.random.Generator, height: int, width: int,
                  cell_sizes: Sequence[int] = (64, 24, 8, 3)) -> np.ndarray:
    """Zero-mean, unit-std fractal texture: upsampled random grids at several scales."""
    texture = np.zeros((height, width), np.float32)
    for cell in cell_sizes:
        grid = rng.standard_normal((height // cell + 2, width // cell + 2)).astype(np.float32)
        layer = cv2.resize(grid, (width + 2 * cell, height + 2 * cell), interpolation=cv2.INTER_CUBIC)
        texture += layer[cell:cell + height, cell:cell + width] * math.sqrt(cell)
    texture -= texture.mean()
    return texture / texture.std()


def _vertical_ramp(top: Sequence[float], bottom: Sequence[float], rows: int, width: int) -> np.ndarray:
    weights = np.linspace(0.0, 1.0, rows, dtype=np.float32)[:, None, None]
    ramp = (1 - weights) * np.float32(top) + weights * np.float32(bottom)
    return np.repeat(ramp, width, axis=1)


def _garden_background(rng: np.random.Generator) -> np.ndarray:
    """Sky, stone wall and lawn as float32 BGR (the pond is drawn per frame)."""
    image = np.empty((HEIGHT, WIDTH, 3), np.float32)
    sky_rows, wall_rows, lawn_rows = SKY_BOTTOM, WALL_BOTTOM - SKY_BOTTOM, HEIGHT - WALL_BOTTOM

    sky = _vertical_ramp((235, 200, 160), (240, 228, 215), sky_rows, WIDTH)
    sky += 6 * _smooth_noise(rng, sky_rows, WIDTH, (48, 16))[..., None]
    image[:SKY_BOTTOM] = sky

    # Stone wall: warm grey blocks in staggered courses, dark mortar, a shadow at its foot.
    wall = _vertical_ramp((150, 168, 185), (120, 136, 150), wall_rows, WIDTH)
    wall += 14 * _smooth_noise(rng, wall_rows, WIDTH)[..., None]
    course_height, block_width = 17, 38
    rows, cols = np.mgrid[0:wall_rows, 0:WIDTH]
    course = rows // course_height
    stagger = (course % 2) * (block_width // 2)
    mortar = (rows % course_height < 2) | ((cols + stagger) % block_width < 2)
    wall[mortar] *= 0.62
    block_shade = rng.uniform(0.9, 1.1, (wall_rows // course_height + 1, WIDTH // block_width + 2))
    wall *= block_shade[course, (cols + stagger) // block_width][..., None].astype(np.float32)
    image[SKY_BOTTOM:WALL_BOTTOM] = wall

    lawn = _vertical_ramp((55, 120, 85), (60, 145, 95), lawn_rows, WIDTH)
    lawn += 16 * _smooth_noise(rng, lawn_rows, WIDTH, (32, 6, 2))[..., None] * np.float32((0.6, 1.0, 0.8))
    image[WALL_BOTTOM:] = lawn
    return image


# --------------------------------------------------------------------------
# Dynamic background


class _WavingTree:
    """A textured crown on a trunk, warped every frame by a few periodic sways.

    The displacement is a fixed spatial profile (bending grows with height
    above the trunk base) times sinusoids in time, plus a small travelling
    flutter, so the motion is periodic and low-rank-ish yet, with its fine
    leaf texture, gives a frame differencer as much to see as a walker.
    """

    def __init__(self, rng: np.random.Generator, trunk_base: tuple[int, int],
                 crown_centre: tuple[int, int], crown_radii: tuple[int, int]):
        margin = 12  # room for the sway
        cx, cy = crown_centre
        rx, ry = crown_radii
        self.x0 = max(0, cx - rx - margin)
        self.x1 = min(WIDTH, cx + rx + margin)
        self.y0 = max(0, cy - ry - margin)
        self.y1 = trunk_base[1] + 1
        height, width = self.y1 - self.y0, self.x1 - self.x0
        local_base = (trunk_base[0] - self.x0, trunk_base[1] - self.y0)
        local_centre = (cx - self.x0, cy - self.y0)

        colour = np.zeros((height, width, 3), np.float32)
        alpha = np.zeros((height, width), np.float32)
        self._draw_wood(rng, colour, alpha, local_base, local_centre, crown_radii)
        self._draw_leaves(rng, colour, alpha, local_centre, crown_radii)
        self.layer = np.dstack([colour * alpha[..., None], alpha])  # premultiplied BGRA

        self.grid_y, self.grid_x = np.mgrid[0:height, 0:width].astype(np.float32)
        rows = self.grid_y[:, :1]  # the sway depends on height only: one column, broadcast
        crown_top = local_centre[1] - ry
        # Bending grows from nothing at the trunk base to 1 at the crown top.
        self.bend = np.clip((local_base[1] - rows) / (local_base[1] - crown_top), 0, 1) ** 1.5
        self.height_lag = 0.004 * rows  # the top lags the bottom a little
        self.sway_phases = rng.uniform(0, 2 * np.pi, len(SWAY_TERMS))
        self.flutter_phase = 0.19 * self.grid_x + 0.13 * self.grid_y

    @staticmethod
    def _draw_wood(rng, colour, alpha, base, centre, radii) -> None:
        bark = (45, 65, 85)
        trunk = np.array([(base[0] - 6, base[1]), (base[0] + 6, base[1]),
                          (centre[0] + 2, centre[1]), (centre[0] - 2, centre[1])], np.int32)
        cv2.fillPoly(colour, [trunk], bark)
        cv2.fillPoly(alpha, [trunk], 1.0)
        for angle in rng.uniform(-np.pi, 0, 9):  # branches fanning up and out
            start_y = int(rng.uniform(centre[1], centre[1] + radii[1] * 0.6))
            start = (centre[0], start_y)
            end = (int(centre[0] + 0.85 * radii[0] * math.cos(angle)),
                   int(start_y + 0.85 * radii[1] * math.sin(angle)))
            cv2.line(colour, start, end, bark, 2)
            cv2.line(alpha, start, end, 1.0, 2)

    @staticmethod
    def _draw_leaves(rng, colour, alpha, centre, radii, clusters: int = 1000) -> None:
        # Leaf clusters fill an ellipse whose rim is roughened by a few lobes;
        # the gaps between them let the wall and sky show through.
        lobes = rng.uniform(0, 2 * np.pi, 4)
        drawn = 0
        while drawn < clusters:
            u, v = rng.uniform(-1, 1, 2)
            angle = math.atan2(v, u)
            rim = 1 + 0.12 * sum(math.sin((k + 3) * angle + lobes[k]) for k in range(4))
            if u * u + v * v > rim * rim:
                continue
            x = int(centre[0] + u * radii[0])
            y = int(centre[1] + v * radii[1])
            axes = (int(rng.integers(2, 6)), int(rng.integers(1, 4)))
            # Lighter on the sunny top, darker underneath, with a random shade per cluster.
            shade = rng.uniform(0.4, 1.4) * (1.05 - 0.25 * v)
            green = (45 * shade, 115 * shade, 60 * shade)
            tilt = float(rng.uniform(0, 180))
            cv2.ellipse(colour, (x, y), axes, tilt, 0, 360, green, -1)
            cv2.ellipse(alpha, (x, y), axes, tilt, 0, 360, 1.0, -1)
            drawn += 1

    def composite(self, image: np.ndarray, index: int) -> None:
        """Draw the tree as it is at frame ``index`` onto the float image."""
        dx = np.zeros_like(self.bend)
        dy = np.zeros_like(self.bend)
        for (amplitude, period), phase in zip(SWAY_TERMS, self.sway_phases):
            angle = 2 * np.pi * (index % period) / period + phase  # modulo: exact repeats
            dx += amplitude * np.sin(angle + self.height_lag)
            dy += 0.3 * amplitude * np.cos(2 * angle + self.height_lag)  # tips swing in arcs
        dx *= self.bend
        dy *= self.bend
        flutter_angle = 2 * np.pi * (index % FLUTTER_PERIOD) / FLUTTER_PERIOD
        flutter = FLUTTER_AMPLITUDE * self.bend * np.sin(flutter_angle + self.flutter_phase)
        # Backward mapping: output pixel p shows the crown point at p - displacement.
        warped = cv2.remap(self.layer, self.grid_x - dx - flutter, self.grid_y - dy - 0.5 * flutter,
                           cv2.INTER_LINEAR, borderMode=cv2.BORDER_CONSTANT, borderValue=0)
        region = image[self.y0:self.y1, self.x0:self.x1]
        region *= 1 - warped[..., 3:]
        region += warped[..., :3]


class _Pond:
    """A band of water whose brightness ripples as a sum of travelling waves."""

    def __init__(self, rng: np.random.Generator):
        rows = HEIGHT - WATER_TOP
        self.base = _vertical_ramp((105, 85, 45), (125, 105, 60), rows, WIDTH)
        self.base += 5 * _smooth_noise(rng, rows, WIDTH, (32, 8))[..., None]
        y, x = np.mgrid[0:rows, 0:WIDTH].astype(np.float32)
        self.spatial_phases = []
        for _, wavelength, direction, _ in RIPPLE_TERMS:
            theta = math.radians(direction)
            k = 2 * np.pi / wavelength
            # Seen at a grazing angle the pond's depth is squashed, so ripples look shorter vertically.
            self.spatial_phases.append(k * (x * math.cos(theta) + 2.5 * y * math.sin(theta)))
        self.offsets = rng.uniform(0, 2 * np.pi, len(RIPPLE_TERMS))

    def composite(self, image: np.ndarray, index: int) -> None:
        ripple = np.zeros(self.base.shape[:2], np.float32)
        for (amplitude, _, _, period), spatial, offset in zip(RIPPLE_TERMS, self.spatial_phases, self.offsets):
            ripple += amplitude * np.cos(spatial - 2 * np.pi * (index % period) / period + offset)
        image[WATER_TOP:] = self.base + ripple[..., None] * np.float32((1.0, 0.9, 0.7))


# --------------------------------------------------------------------------
# Foreground objects: each draws its labels into a uint8 mask for a frame.


@dataclass(frozen=True)
class _Walker:
    """A person-like figure (head, jacket, arms, legs) following a path.

    ``path`` holds (frame, body-centre x) keyframes; the walker moves linearly
    between them and is absent outside them.  The gait phase follows the
    distance walked, so legs and arms swing in step with the speed.
    """

    path: Sequence[tuple[int, float]]
    height: int = PERSON_HEIGHT
    feet_y: int = FEET_Y

    def draw(self, labels: np.ndarray, index: int) -> None:
        frames = [frame for frame, _ in self.path]
        if not frames[0] <= index <= frames[-1]:
            return
        xs = [x for _, x in self.path]
        walked = np.concatenate([[0.0], np.cumsum(np.abs(np.diff(xs)))])
        x = float(np.interp(index, frames, xs))
        swing = math.sin(2 * np.pi * float(np.interp(index, frames, walked)) / (0.8 * self.height))

        h, feet = self.height, self.feet_y
        def at(dx: float, dy: float) -> tuple[int, int]:
            return int(round(x + dx * h)), int(round(feet - dy * h))

        hip, shoulder = 0.47, 0.80
        for side in (-1, 1):  # legs swing in opposite directions
            cv2.line(labels, at(0.045 * side, hip), at(0.17 * side * swing, 0.03), TROUSERS, max(2, round(0.085 * h)))
        torso = np.array([at(-0.12, shoulder), at(0.12, shoulder), at(0.10, hip - 0.05), at(-0.10, hip - 0.05)],
                         np.int32)
        cv2.fillPoly(labels, [torso], JACKET)
        for side in (-1, 1):  # arms swing against the legs
            cv2.line(labels, at(0.11 * side, shoulder - 0.02), at(-0.14 * side * swing + 0.1 * side, hip + 0.02),
                     JACKET, max(2, round(0.065 * h)))
        radius = max(2, round(0.07 * h))
        head = at(0, 1.0 - 0.07)
        cv2.line(labels, head, at(0, shoulder), SKIN, max(2, round(0.05 * h)))  # neck
        cv2.circle(labels, head, radius, SKIN, -1)
        cv2.ellipse(labels, head, (radius, radius), 0, 180, 360, HAIR, -1)


@dataclass(frozen=True)
class _Chair:
    """A red chair with a dark frame that appears at ``appear_frame`` and stays."""

    appear_frame: int
    x: int
    size: int = 56
    feet_y: int = FEET_Y

    def draw(self, labels: np.ndarray, index: int) -> None:
        if index < self.appear_frame:
            return
        s, x, feet = self.size, self.x, self.feet_y
        seat_y = feet - s // 2
        for leg_x in (x + 3, x + s - 4):
            cv2.line(labels, (leg_x, seat_y), (leg_x, feet), CHAIR_FRAME, 3)
        cv2.line(labels, (x + 3, seat_y), (x + 3, feet - s), CHAIR_FRAME, 3)
        cv2.rectangle(labels, (x + 5, feet - s), (x + s // 2, seat_y - 6), CHAIR_SEAT, -1)  # backrest
        cv2.rectangle(labels, (x, seat_y - 5), (x + s, seat_y + 3), CHAIR_SEAT, -1)  # seat


@dataclass(frozen=True)
class _BouncingSquare:
    """A bright square moving at constant velocity, bouncing off the frame edges."""

    frame_size: tuple[int, int]
    side: int
    start: tuple[int, int]
    velocity: tuple[int, int]

    def position(self, index: int) -> tuple[int, int]:
        return tuple(
            _bounce(start + speed * index, limit - self.side)
            for start, speed, limit in zip(self.start, self.velocity, self.frame_size)
        )

    def draw(self, labels: np.ndarray, index: int) -> None:
        x, y = self.position(index)
        labels[y:y + self.side, x:x + self.side] = SQUARE


def _bounce(position: int, span: int) -> int:
    """Fold an unbounded coordinate into 0..span like a ball between two walls."""
    phase = position % (2 * span)
    return phase if phase <= span else 2 * span - phase


# --------------------------------------------------------------------------
# Scene assembly


@dataclass
class _Scene:
    """Everything needed to render frame ``i`` of a scene, plus its timeline."""

    background: np.ndarray
    seed: int
    noise_sigma: float
    tree: _WavingTree | None = None
    pond: _Pond | None = None
    actors: Sequence = ()
    blank: Sequence[Range] = ()
    frozen: Sequence[Range] = ()
    lighting: Callable[[int], tuple[float, float]] | None = None  # frame -> (gain, offset)

    def source_index(self, index: int) -> int | None:
        """The frame whose content frame ``index`` shows: None when blank, an earlier one when frozen."""
        if any(first <= index <= last for first, last in self.blank):
            return None
        for first, last in self.frozen:
            if first <= index <= last:
                return first - 1
        return index

    def labels(self, index: int) -> np.ndarray:
        labels = np.zeros(self.background.shape[:2], np.uint8)
        for actor in self.actors:
            actor.draw(labels, index)
        return labels

    def shown_labels(self, index: int) -> np.ndarray:
        """The foreground mask as actually seen in frame ``index`` (empty when blank)."""
        source = self.source_index(index)
        if source is None:
            return np.zeros(self.background.shape[:2], np.uint8)
        return self.labels(source)

    def render(self, index: int, with_foreground: bool = True) -> np.ndarray:
        source = self.source_index(index)
        if source is None:
            return np.zeros(self.background.shape, np.uint8)
        image = self.background.copy()
        if self.pond is not None:
            self.pond.composite(image, source)
        if self.tree is not None:
            self.tree.composite(image, source)
        if with_foreground:
            labels = self.labels(source)
            drawn = labels > 0
            image[drawn] = PALETTE[labels[drawn]]
        if self.lighting is not None:
            gain, offset = self.lighting(source)
            image = image * np.float32(gain) + np.float32(offset)
        if self.noise_sigma > 0:
            # Noise is keyed by (seed, frame) so any frame renders alike in any order.
            rng = np.random.default_rng([self.seed, source])
            image += rng.standard_normal(image.shape, dtype=np.float32) * np.float32(self.noise_sigma)
        return cv2.add(image, 0.0, dtype=cv2.CV_8U)  # rounds and saturates, much faster than numpy


def _runs(flags: Sequence[bool]) -> list[Range]:
    """Inclusive [first, last] ranges of consecutive True entries."""
    runs: list[Range] = []
    for index, flag in enumerate(flags):
        if not flag:
            continue
        if runs and runs[-1][1] == index - 1:
            runs[-1][1] = index
        else:
            runs.append([index, index])
    return runs


def _visible_event_frames(scene: _Scene, frame_count: int) -> list[Range]:
    return _runs([scene.shown_labels(index).any() for index in range(frame_count)])


def _garden_scene(seed: int, noise_sigma: float, **timeline) -> _Scene:
    rng = np.random.default_rng(seed)
    return _Scene(
        background=_garden_background(rng),
        seed=seed,
        noise_sigma=noise_sigma,
        tree=_WavingTree(rng, trunk_base=(250, 168), crown_centre=(246, 68), crown_radii=(64, 58)),
        pond=_Pond(rng),
        **timeline,
    )


def _crossing(first_frame: int, last_frame: int, left_to_right: bool = True) -> list[tuple[int, float]]:
    """Keyframes for a walk across the frame, just out of view at both ends."""
    offscreen = 0.3 * PERSON_HEIGHT  # beyond the reach of a swinging arm or leg
    xs = (-offscreen, WIDTH + offscreen)
    if not left_to_right:
        xs = xs[::-1]
    return [(first_frame, xs[0]), (last_frame, xs[1])]


def _clip(name: str, description: str, seed: int, scene: _Scene, frame_count: int, **truth) -> SyntheticClip:
    return SyntheticClip(
        name=name,
        description=description,
        seed=seed,
        fps=FPS,
        size=(scene.background.shape[1], scene.background.shape[0]),
        frame_count=frame_count,
        event_frames=_visible_event_frames(scene, frame_count),
        render=scene.render,
        **truth,
    )


# --------------------------------------------------------------------------
# Scenes


def walker_scene(seed: int = 0, noise_sigma: float = 2.0) -> SyntheticClip:
    """The default demo: 20 s garden, a person crossing once (about frames 180..230)."""
    scene = _garden_scene(seed, noise_sigma, actors=[_Walker(_crossing(179, 231))])
    return _clip("walker", "Waving tree and rippling pond; a person walks across once, left to right.",
                 seed, scene, 20 * FPS)


def long_event_scene(seed: int = 0, noise_sigma: float = 2.0) -> SyntheticClip:
    """30 s garden; a person wanders in and back out for about 130 frames.

    That is longer than half a 100-frame window yet shorter than the 10 s after
    which a lasting change is absorbed into the background model.
    """
    turn_x = 170.0
    enter = 197
    path = [(enter, -0.3 * PERSON_HEIGHT), (enter + 68, turn_x), (enter + 136, -0.3 * PERSON_HEIGHT)]
    scene = _garden_scene(seed, noise_sigma, actors=[_Walker(path)])
    return _clip("long_event", "A person wanders slowly in from the left, turns mid-frame and walks back out.",
                 seed, scene, 30 * FPS)


def scene_change_scene(seed: int = 0, noise_sigma: float = 2.0, change_frame: int = 150) -> SyntheticClip:
    """30 s garden; a chair appears at ``change_frame`` and stays to the end."""
    scene = _garden_scene(seed, noise_sigma, actors=[_Chair(change_frame, x=96)])
    return _clip("scene_change", "A chair appears on the lawn and stays: a lasting scene change.",
                 seed, scene, 30 * FPS, change_frame=change_frame, lasting_change=True)


def blank_frames_scene(seed: int = 0, noise_sigma: float = 2.0) -> SyntheticClip:
    """20 s garden with a black dropout (90..99), a frozen run (120..164: 3 s, longer than the
    2 s after which repeats are a stalled source) and a later walker."""
    blank, frozen = [[90, 99]], [[120, 164]]
    scene = _garden_scene(seed, noise_sigma, actors=[_Walker(_crossing(179, 231, left_to_right=False))],
                          blank=blank, frozen=frozen)
    return _clip("blank_frames",
                 "Camera glitches: all-black frames, then frames frozen on the previous one; "
                 "later a person walks across, right to left.",
                 seed, scene, 20 * FPS, blank_frames=blank, frozen_frames=frozen)


def lighting_scene(seed: int = 0, noise_sigma: float = 2.0, lights_off_frame: int = 380) -> SyntheticClip:
    """30 s garden under drifting light (gain 0.55 -> 1.05 -> ...), a walker mid-clip, lights off at 380."""
    frame_count = 30 * FPS

    def lighting(index: int) -> tuple[float, float]:
        cycle = 2 * np.pi * index / frame_count
        offset = 8 * math.sin(cycle / 2)  # a slow haze lifting the blacks
        if index >= lights_off_frame:
            return 0.3, offset
        # Gain 0.55 -> 1.05 -> 0.55: the light almost doubles and fades again, the way a
        # camera's picture does under passing clouds, without clipping the highlights (which
        # would change the picture's structure, not just its light).
        return 0.8 - 0.25 * math.cos(cycle), offset

    scene = _garden_scene(seed, noise_sigma, actors=[_Walker(_crossing(199, 251))], lighting=lighting)
    return _clip("lighting",
                 "Illumination drifts slowly (gain 0.55 to 1.05 and back, plus an offset); a person crosses "
                 "mid-clip; at lights_off_frame the light drops suddenly to 0.3 for good.",
                 seed, scene, frame_count, lights_off_frame=lights_off_frame)


def moving_square_scene(seed: int = 0, noise_sigma: float = 2.0, size: tuple[int, int] = (160, 120),
                        frame_count: int = 60, side: int = 16,
                        velocity: tuple[int, int] = (3, 2)) -> SyntheticClip:
    """A bright square bouncing over a static texture; ``boxes`` gives its (x, y, w, h) per frame."""
    width, height = size
    rng = np.random.default_rng(seed)
    background = 90 + 20 * _smooth_noise(rng, height, width)[..., None] * np.float32((1.0, 0.9, 0.8))
    start = (int(rng.integers(0, width - side)), int(rng.integers(0, height - side)))
    square = _BouncingSquare((width, height), side, start, velocity)
    scene = _Scene(background=background, seed=seed, noise_sigma=noise_sigma, actors=[square])
    boxes = []
    for index in range(frame_count):
        points = cv2.findNonZero(scene.labels(index))
        boxes.append(tuple(int(v) for v in cv2.boundingRect(points)) if points is not None else None)
    return _clip("moving_square", "A bright square bouncing over a static texture.",
                 seed, scene, frame_count, boxes=boxes)


# The scenes bundled as sample videos, by file name.
SAMPLE_SCENES: dict[str, Callable[..., SyntheticClip]] = {
    "walker": walker_scene,
    "long_event": long_event_scene,
    "scene_change": scene_change_scene,
    "blank_frames": blank_frames_scene,
    "lighting": lighting_scene,
}
