"""What the background model learns, and which changes become background: the detector's policy.

Kept apart from the model (``background.py``), as river keeps ``QuantileFilter`` apart from the
anomaly detector it protects, so each can be tested alone.

- ``LearningSchedule`` says which frames join the model's window: densely at the start and
  sparser as time goes on (the window always spread over all the time seen), then one frame
  every ``stride`` frames, whatever its score, so that the window spans a long time (minutes)
  in a hundred frames. A person who stays for a minute is then a minority
  of the window, and the robust inlier scores keep them out of the background subspace; no
  gate on the score decides it. Frames without a picture (blank, corrupt, stalled) are never
  learned.
- ``StaticRegions`` decides, block by block, what becomes background before the model learns
  it: a block that has been unusual *and unchanging* for ``static_after`` frames (a bag left on
  the floor, a door left open) takes its current picture as its background, in that block
  only, and scores against it until the model explains the block again. A block where
  anything still moves (a person standing and phoning) stays unusual as long as it lasts.
  When most of the frame has become static at once (a light switched on and left on), the
  model itself is rebuilt from the recent frames: the whole frame changed, so nothing is
  blinded that was not already changed.
- ``DarkScene`` remembers that the scene has been dark (blank frames) for ``static_after``
  frames, so darkness is its background: a picture that appears then (a door opened, a light
  switched on in an empty room) is an event until it has stood still for ``settle_after``
  frames, and only then becomes the background.
- ``LightSwitch`` scores a step of the whole frame's brightness (which unit-length frames
  hide from the model) and keeps a switched light one event until the exposure has settled.
- ``StartReference`` holds a second judge of the start, seeded from frames spread over the
  whole file, and decides when it goes or takes over (see its docstring).
- ``Forgetting`` chooses the window slot a learned frame takes: whose frame the model forgets.
- ``FrozenPicture`` gives a frozen picture (a stalled source) the verdict of the picture before.

Each is a state machine tested alone; the rules of ``rules.py`` run them, one step of a frame's
judgement each. The mechanisms among them have a name each (``settings.MECHANISMS``) that
``--without`` turns off (the start's judge: ``--no-start-reference``).
"""

from __future__ import annotations

import statistics
from collections import deque
from dataclasses import replace

import cv2
import numpy as np

from ..status import FROZEN
from .background import MIN_SAMPLES, NOISE_FLOOR, neighbour_max
from .base import FrameScore

# A block is unchanging while its root-mean-square change from its reference picture stays
# below this multiple of its own noise: how much it changes from one frame to the next while
# usual (a noisy sensor's still picture moves by 5-15 grey levels, a clean one's by one or two;
# a person breathing or turning moves it by more than either). The noise is never taken below
# the background model's noise floor.
STILL_MULTIPLE = 3.0
# Share of the frame's blocks that must have become static at once for the change to count as
# the whole scene's (a light), which rebuilds the model instead of patching blocks.
SCENE_CHANGE_SHARE = 0.6
# Which frame a new one replaces: the oldest of those the last refit outvoted (event frames),
# so the window keeps its background frames while a presence lasts; but never a frame older
# than this many windows' worth of learning, so the model follows a scene that changed slowly
# (the ablation in benchmarks/README.md gives what it is worth).
MAX_AGE_IN_WINDOWS = 5
# Frames learned while the model found them unusual (a presence) hold at most this share of
# the frames in the window, full or not; past it, such a frame replaces the oldest of them.
# The per-block vote is a median, which a presence that fills half the window would carry; a
# third stays below that breakdown point with room for a second presence in the same place.
# Counted against the frames held, not the window's capacity: a third of the capacity is a
# majority of a window still filling. A presence that outlasts ``MAX_AGE_IN_WINDOWS`` windows
# of learning becomes background as the frames before it age out.
UNUSUAL_SHARE = 1 / 3


class LearningSchedule:
    """Which frames the model learns: as many by ``t`` frames as ``window * sqrt(t / span)``
    until ``span`` (``stride * window``) frames have passed, then one every ``stride``.

    The window always holds frames spread over the whole time seen, densest at the start: a
    model of the first seconds is fitted on frames from all of them, and one of the first
    minute on frames from all of it, at any frame rate (the count learned by a given time is
    the same in seconds whatever the rate). ``warmup``: frames (a time) during which the
    model is still warming up.
    """

    def __init__(self, stride: int, warmup: int, window: int):
        if stride < 1 or warmup < 1 or window < 1:
            raise ValueError(f"stride, warm-up and window must be at least 1, got {stride}, "
                             f"{warmup}, {window}")
        self.stride = int(stride)
        self.warmup = int(warmup)
        self.window = int(window)
        self.span = self.stride * self.window
        self.learned_ = 0
        self.elapsed_ = 0                  # frames with a picture since the start (or restart)

    @property
    def warming_up(self) -> bool:
        return self.elapsed_ < self.warmup

    def _target(self, elapsed: int) -> float:
        if elapsed < self.span:
            return self.window * (elapsed / self.span) ** 0.5
        return self.window + (elapsed - self.span) / self.stride

    def should_learn(self) -> bool:
        """Whether the next frame with a picture is to be learned; counts it either way."""
        self.elapsed_ += 1
        if self.learned_ < self._target(self.elapsed_):
            self.learned_ += 1
            return True
        return False

    def restart(self, learned: int) -> None:
        """The model was rebuilt from ``learned`` frames, warmed up: go on as if they had
        been learned on this schedule."""
        self.learned_ = learned
        self.elapsed_ = max(self.warmup, round(self.span * min(1.0, learned / self.window) ** 2))


class Forgetting:
    """Which window slot the model's next learned frame takes, so whose frame it forgets.

    The next free slot while the window fills; then the oldest frame the last refit outvoted,
    or the oldest if none was (pinned seed frames stay); but the oldest whenever it is
    ``max_age`` frames learned old (None: the oldest always), and, past ``presence_share``
    (None: no share), a frame learned while unusual replaces the oldest of those.
    """

    def __init__(self, window: int, *, max_age: int | None, presence_share: float | None):
        self.max_age = max_age
        self.presence_share = presence_share
        self.unusual_ = np.zeros(int(window), bool)     # each slot's frame learned while unusual

    def clear(self) -> None:
        """The model was rebuilt (or seeded): no frame of its window was learned unusual."""
        self.unusual_[:] = False

    def slot(self, model, unusual: bool) -> int:
        """The slot of ``model`` (a ``SubspaceBackground``) the next frame takes; ``unusual``:
        the model found it so."""
        slot = self._slot(model, unusual)
        self.unusual_[slot] = unusual
        return slot

    def _slot(self, model, unusual: bool) -> int:
        free = np.arange(model.n_pinned_, model.n_filled_)
        presence = free[self.unusual_[free]]
        # Counted against the frames the window holds once this one is in, full or not: a
        # third of its capacity is a majority of a window still filling.
        held = min(model.n_filled_ + 1, model.window)
        over_share = (unusual and self.presence_share is not None
                      and len(presence) + 1 > max(1, self.presence_share * held))
        if model.n_filled_ < model.window and not over_share:
            return model.n_filled_
        oldest = int(free[np.argmin(model.joined_[free])])
        if self.max_age is None or model.n_learned_ - model.joined_[oldest] >= self.max_age:
            return oldest
        if over_share:
            return int(presence[np.argmin(model.joined_[presence])])
        if len(model.background_) != model.window:          # not refitted since it filled
            return oldest
        outvoted = free[~model.background_[free]]
        return int(outvoted[np.argmin(model.joined_[outvoted])]) if len(outvoted) else oldest


class StaticRegions:
    """Blocks of the frame whose lasting change has become their background.

    ``update`` takes the frame, its per-block z-scores against the model and the residual
    image, and returns the z-scores and residual image with every absorbed block scored
    against its own reference picture instead.
    """

    def __init__(self, frame_shape: tuple[int, ...], grid: tuple[int, int], *,
                 static_after: int, hot: float, settled_after: int = 1,
                 follow_gradual: bool = True):
        if static_after < 1:
            raise ValueError(f"static_after must be at least 1 frame, got {static_after}")
        self.frame_shape = frame_shape
        self.grid = grid                                   # (columns, rows)
        self.static_after = int(static_after)
        self.hot = float(hot)
        n_blocks = grid[0] * grid[1]
        self.reference_ = np.zeros(frame_shape, np.float32)  # per block: picture to compare
        self.offset_ = np.zeros(frame_shape, np.float32)     # residual an absorbed block keeps
        self.still_for_ = np.zeros(n_blocks, int)           # frames unusual and unchanging
        # Each block's frame-to-frame change while usual (log grey levels), averaged over
        # about ``static_after`` frames: its noise.
        self.log_noise_ = np.full(n_blocks, np.log(NOISE_FLOOR))
        self.absorbed_ = np.zeros(n_blocks, bool)
        # Blocks that have changed only gradually since the frame was last usual (``update``).
        self.gradual_ = np.zeros(n_blocks, bool)
        self.following_ = np.zeros(n_blocks, bool)       # absorbed by following it
        self.usual_for_ = np.zeros(n_blocks, int)
        self.settled_after = max(1, int(settled_after))
        self.follow_gradual = bool(follow_gradual)

    @property
    def absorbed_share(self) -> float:
        return float(self.absorbed_.mean())

    def clear(self) -> None:
        self.still_for_[:] = 0
        self.absorbed_[:] = False
        self.gradual_[:] = False
        self.following_[:] = False
        self.usual_for_[:] = 0

    def update(self, x: np.ndarray, z: np.ndarray, residual_image: np.ndarray,
               score_image, previous: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """``score_image(residual_image) -> block z-scores`` scores the patched residual;
        ``previous``: the frame before (None: not known)."""
        picture = x.reshape(self.frame_shape)
        change = block_change_up_to_gain(picture, self.reference_, self.grid)
        # The model explains an absorbed block again (the object left, or the window learned
        # it): the block goes back to the model.
        self.absorbed_ &= z >= self.hot
        drifting = self._follow_gradual(picture, z, previous)
        unusual = (z >= self.hot) & ~self.absorbed_ & ~drifting
        # A usual block's reference is the frame before (renewed below): its change is noise.
        usual = ~unusual & ~self.absorbed_
        if usual.any():
            rate = 1.0 / self.static_after
            log_change = np.log(np.maximum(change[usual], NOISE_FLOOR))
            self.log_noise_[usual] += rate * (log_change - self.log_noise_[usual])
        unchanged = change < STILL_MULTIPLE * np.exp(self.log_noise_)
        self.still_for_ = np.where(unusual & unchanged, self.still_for_ + 1, 0)
        # A block starting (or restarting) to be watched takes the current picture as its
        # reference; so does every block that is not absorbed, which keeps references fresh.
        moving = ~self.absorbed_ & (self.still_for_ == 0)
        newly = self.still_for_ >= self.static_after
        self.absorbed_ |= newly
        self.still_for_[newly] = 0
        newly |= drifting
        self.absorbed_ |= drifting
        renew = moving | newly
        residual = residual_image.reshape(self.frame_shape)
        # copyto with a mask: no gathered copy of the frame, every frame of the stream; none
        # in the usual case, where every block is renewed.
        if renew.all():
            np.copyto(self.reference_, picture)
        elif renew.any():
            np.copyto(self.reference_, picture, where=self._pixels(renew))
        if newly.any():
            np.copyto(self.offset_, residual, where=self._pixels(newly))
        if self.absorbed_.any():
            # Absorbed blocks: what the model did not explain when they were absorbed (the
            # object) is taken off their residual; the model still follows the light there.
            residual = residual - np.where(self._pixels(self.absorbed_), self.offset_,
                                           np.float32(0))
            z = z.copy()
            z[self.absorbed_] = score_image(residual.ravel())[self.absorbed_]
        # A block usual for ``settled_after`` frames may start to follow a gradual change;
        # not one whose z-score dipped below the threshold a moment (a person standing nearly
        # still changes their blocks by less than noise from frame to frame).
        self.usual_for_ = np.where(z < self.hot, self.usual_for_ + 1, 0)
        self.gradual_ |= self.usual_for_ >= self.settled_after
        return z, residual.ravel()

    def _follow_gradual(self, picture: np.ndarray, z: np.ndarray,
                        previous: np.ndarray | None) -> np.ndarray:
        """The unusual blocks that got so gradually, which follow their picture now.

        Gradually: since the last frame in which nothing was unusual, no frame changed the
        block by more than its noise allows (``STILL_MULTIPLE``), so nothing was seen to move
        there. Light drifts so
        (daylight, a cloud, the exposure); a person, a car or an object moves on its way in.
        Such a block is absorbed with its current picture, frame after frame, until something
        moves in it; then it goes back to the model, as if it had never followed.
        """
        if self.follow_gradual and previous is not None:
            step = self._block_rms(picture - previous.reshape(self.frame_shape))
            self.gradual_ &= step < STILL_MULTIPLE * np.exp(self.log_noise_)
        else:
            self.gradual_[:] = False
        moved = self.following_ & ~self.gradual_
        self.absorbed_ &= ~moved
        self.following_ = self.gradual_ & (z >= self.hot)
        return self.following_

    def _pixels(self, blocks: np.ndarray) -> np.ndarray:
        """A mask of the frame's pixels (channels too) from a mask of its blocks."""
        # The nearest-neighbour resize that cuts the frame into blocks (``pixel_blocks``),
        # applied to the mask: the same pixels, at a fifth of the cost of indexing by block.
        mask = cv2.resize(blocks.astype(np.uint8).reshape(self.grid[::-1]),
                          self.frame_shape[1::-1], interpolation=cv2.INTER_NEAREST).view(bool)
        return mask[..., None] if len(self.frame_shape) == 3 else mask

    def _block_rms(self, difference: np.ndarray) -> np.ndarray:
        return block_rms(difference, self.grid)


def block_change_up_to_gain(picture: np.ndarray, reference: np.ndarray,
                            grid: tuple[int, int]) -> np.ndarray:
    """Per block of a (columns, rows) grid, the root-mean-square of ``picture`` less its best
    multiple of ``reference`` (least squares): what changed beyond the light's gain, so a block
    that only got brighter or darker with the light or the exposure is unchanged."""
    def block_mean(values):
        if values.ndim == 3:
            values = values.mean(axis=2)
        return cv2.resize(values, grid, interpolation=cv2.INTER_AREA).ravel()
    pp = block_mean(picture * picture)
    pr = block_mean(picture * reference)
    rr = block_mean(reference * reference)
    # A black reference explains nothing: the whole picture is the change.
    explained = np.where(rr > 0, pr * pr / np.maximum(rr, np.finfo(np.float32).tiny), 0)
    return np.sqrt(np.maximum(pp - explained, 0))


# Where the residual (blurred by a pixel) passes this many grey levels, something differs from
# the model's picture: ten times the sensor's noise floor, clear of sensor and codec noise. Its
# border is the difference's outline.
OUTLINE_CONTRAST = 10 * NOISE_FLOOR
# A difference is a ghost (the thing is in the model's picture, not in the frame) when the
# gradient energy along its outline is the model's picture's by this margin: (model - frame) /
# (model + frame) of at least 0.2, i.e. one and a half times the frame's.
GHOST_MARGIN = 0.2


def outline_margin(picture: np.ndarray, residual: np.ndarray, near: np.ndarray) -> float:
    """Whose outline the difference between a frame and the model's picture of it is:
    (E_model - E_frame) / (E_model + E_frame), with E the gradient energy of each picture
    along the difference's outline near ``near`` (a pixel mask), in [-1, 1]; NaN where the
    difference has no outline there.

    A thing in view has its outline in the frame, and the model's picture runs on smoothly
    across it: the margin is negative. Where the model holds something that has gone (a ghost)
    it is the other way round (the edge-energy test of removed objects, Tian et al. 2008;
    Cucchiara et al. 2003 tell a ghost by its lack of motion instead). ``picture`` and
    ``residual`` (frame minus model picture) are grey (height x width) float32 arrays.
    """
    support = np.abs(cv2.GaussianBlur(residual, (0, 0), 1.0)) > OUTLINE_CONTRAST
    kernel = np.ones((3, 3), np.uint8)
    support = cv2.morphologyEx(support.astype(np.uint8), cv2.MORPH_CLOSE, kernel)
    outline = (cv2.morphologyEx(support, cv2.MORPH_GRADIENT, kernel) > 0) & near
    if not outline.any():
        return float("nan")
    in_frame = float(_gradient_energy(picture)[outline].sum())
    in_model = float(_gradient_energy(picture - residual)[outline].sum())
    return (in_model - in_frame) / max(in_model + in_frame, 1e-9)


class Ghosts:
    """How long a still unusual region has been a ghost (``outline_margin`` at least
    ``GHOST_MARGIN``): ``update`` gives its blocks once it has been one for ``settle_frames``."""

    def __init__(self, grid: tuple[int, int], *, hot: float, settle_frames: int):
        self.grid = grid
        self.hot = float(hot)
        self.settle_frames = max(1, int(settle_frames))
        self.ghost_for_ = 0

    def update(self, x, residual, z, still_for, absorbed, grey, near) -> np.ndarray | None:
        """``x``'s blocks that have been a ghost for ``settle_frames`` (None: none yet):
        unusual (``z``), still for ``settle_frames`` (``still_for``), not absorbed, with the
        outline of ``residual`` in the model's picture (``grey``: the frame and residual as
        pictures; ``near``: the pixels of the blocks and those around them)."""
        still = (z >= self.hot) & (still_for >= self.settle_frames) & ~absorbed
        if neighbour_max(np.where(still, z, 0.0).reshape(self.grid[::-1])) < self.hot:
            self.ghost_for_ = 0
            return None
        margin = outline_margin(*grey(x, residual), near(still))
        self.ghost_for_ = self.ghost_for_ + 1 if margin >= GHOST_MARGIN else 0
        if self.ghost_for_ < self.settle_frames:
            return None
        self.ghost_for_ = 0
        return still


def _gradient_energy(picture: np.ndarray) -> np.ndarray:
    gx = cv2.Sobel(picture, cv2.CV_32F, 1, 0, ksize=3)
    gy = cv2.Sobel(picture, cv2.CV_32F, 0, 1, ksize=3)
    return gx * gx + gy * gy


def block_rms(difference: np.ndarray, grid: tuple[int, int]) -> np.ndarray:
    """Root-mean-square of a difference picture over each block of a (columns, rows) grid."""
    squared = difference * difference
    if squared.ndim == 3:
        squared = squared.mean(axis=2)
    return np.sqrt(cv2.resize(squared, grid, interpolation=cv2.INTER_AREA).ravel())


class DarkScene:
    """Whether darkness is the scene's background, and when a picture that came out of it
    has settled.

    ``blank`` is told of every blank frame, ``lit`` of every frame with a picture. After
    ``static_after`` blank frames in a row the scene is dark: ``active_`` holds, with the dark
    frames' brightness in ``dark_brightness_``, until a picture has stood still (against its
    own overall gain, since a camera's exposure settles slowly after a light) for
    ``settle_after`` frames. ``lit`` returns True on that frame; the caller rebuilds its model
    from the settled frames.
    """

    def __init__(self, frame_shape: tuple[int, ...], grid: tuple[int, int], *,
                 static_after: int, settle_after: int):
        self.frame_shape = frame_shape
        self.grid = grid
        self.static_after = int(static_after)
        self.settle_after = int(settle_after)
        self.active_ = False
        self.dark_brightness_ = 0.0
        self.dark_for_ = 0                 # blank frames in a row
        self.settled_for_ = 0              # frames the picture has stood still
        self._reference: np.ndarray | None = None

    def blank(self, brightness: float) -> None:
        self.dark_for_ += 1
        if self.dark_for_ >= self.static_after:
            self.darken(brightness)

    def darken(self, brightness: float) -> None:
        """Darkness of this brightness is the background from now on."""
        self.active_ = True
        self.dark_brightness_ = brightness
        self.settled_for_ = 0
        self._reference = None

    def leave(self) -> None:
        """The picture is one the model knows: darkness is no longer the background."""
        self.active_ = False

    def lit(self, x: np.ndarray) -> bool:
        """Count a frame with a picture; True when it settles the scene out of darkness."""
        self.dark_for_ = 0
        if not self.active_:
            return False
        picture = x.reshape(self.frame_shape)
        if self._reference is not None:
            gain = float(self._reference.mean()) / max(float(picture.mean()), 1e-3)
            still = block_rms(picture * np.float32(gain) - self._reference, self.grid).max()
            if still < STILL_MULTIPLE * NOISE_FLOOR:
                self.settled_for_ += 1
                if self.settled_for_ >= self.settle_after:
                    self.active_ = False
                    return True
                return False
        self._reference = picture.astype(np.float32, copy=True)
        self.settled_for_ = 0
        return False


class RecentFrames:
    """The last few frames with a picture, to rebuild the model from after a scene change."""

    def __init__(self, length: int):
        self.frames = deque(maxlen=max(1, int(length)))
        self.brightness = deque(maxlen=max(1, int(length)))

    def add(self, x: np.ndarray, brightness: float) -> None:
        self.frames.append(x.copy())
        self.brightness.append(brightness)




# Sudden global brightness change: the log of the mean pixel against the median of the recent
# frames', in units of this scale (a 10% step scores 1; the lights going off score 10 or
# more). Against recent frames, not the model's: slow drift never scores, a switched light
# scores until it is the recent frames' median (half of ``static_after``).
BRIGHTNESS_SCALE = 0.1
# With light-invariant blocks the brightness step is the only sign of a light switched, so it
# is more sensitive (a 7% step of the overall light scores 1).
LIGHT_INVARIANT_BRIGHTNESS_SCALE = 0.07
# After a light switched (a brightness step, or darkness), the camera's exposure swings for a
# second or so; the switch lasts until the brightness moves by less than this (log: 2%) over
# ``settle_frames``. Until then a frame scores at least the low threshold (more as the motion
# grows, as a brightness step does), so the one event goes on while the light settles: a switch
# is one event through the exposure's overshoot, not two.
SETTLED_MOTION = 0.02


class LightSwitch:
    """The brightness-step score: how far the frame's log brightness stepped from the recent
    frames' median, in ``scale`` units; while a switched light settles, at least ``hot``.

    ``settling``: follow the exposure's settling (``--without light_settling`` turns it off);
    ``switched`` says a light went (a blank frame), so the next picture settles first.
    """

    def __init__(self, *, scale: float, hot: float, settle_frames: int, settling: bool = True):
        self.scale = float(scale)
        self.hot = float(hot)
        self.settle_frames = max(1, int(settle_frames))
        self.settling = bool(settling)
        self.settling_ = False                   # a switched light has not settled yet
        self.settled_for_: int | None = None     # frames since a switched light settled
        self.held_ = False                       # a light (or darkness) has held
        self.blank_run_ = 0                      # blank frames in a row

    def switched(self) -> None:
        """A blank frame: the light went out, so the next picture is a new light; not before
        any light held (a camera starting), unless the darkness itself has held."""
        self.blank_run_ += 1
        self.held_ |= self.blank_run_ >= self.settle_frames
        self.settling_ |= self.held_

    def score(self, brightness: float, recent: deque) -> float:
        """The step of ``brightness`` against the ``recent`` frames' (oldest first; since a
        switched light settled, only those after it: the settled light is the new normal)."""
        self.blank_run_ = 0
        if len(recent) < MIN_SAMPLES:
            return 0.0
        if not self.held_:
            # A switch is a step from a light that held: the first light a camera gives moves
            # while its exposure starts, and is no switch.
            self.held_ = (len(recent) >= self.settle_frames
                          and abs(recent[-1] - recent[-self.settle_frames]) < SETTLED_MOTION)
            if not self.held_:
                return 0.0
        if self.settled_for_ is not None and self.settled_for_ >= len(recent):
            self.settled_for_ = None
        since = recent if self.settled_for_ is None else list(recent)[len(recent)
                                                                      - self.settled_for_:]
        # statistics.median: a tenth of np.median's time on a hundred floats, every frame.
        step = abs(brightness - statistics.median(since)) / self.scale if since else 0.0
        if self.settled_for_ is not None:
            self.settled_for_ += 1
        self.settling_ |= step >= self.hot
        if self.settling_ and self.settling and len(recent) >= self.settle_frames:
            motion = abs(brightness - recent[-self.settle_frames])
            if motion < SETTLED_MOTION:
                self.settling_ = False
                self.settled_for_ = 1
                step = 0.0
            else:
                # The low threshold where the light counts as settled, rising above it as
                # a brightness step does.
                step = max(step, self.hot + (motion - SETTLED_MOTION) / self.scale)
        return step


class FrozenPicture:
    """A picture that has stood exactly still for long (``HealthCheck``: a stalled decoder or
    camera) gets the verdict of the picture before, and is never learned: it says nothing of
    the scene's time since. A short run of repeats is not frozen: a still scene that a low bit
    rate coded as repeats is a moment of the scene like any other, scored and learned (else
    the warm-up and the schedule would stretch wherever the encoder repeats, and the window
    would hold fewer of a still room's frames than of the frames where something moves)."""

    def __init__(self):
        self.previous_: FrameScore | None = None

    def remember(self, verdict: FrameScore) -> FrameScore:
        self.previous_ = verdict
        return verdict

    def verdict(self, health: str, index: int, time_s: float) -> FrameScore | None:
        """A frozen frame's verdict (None for a frame of another ``health``, or before any
        picture was judged)."""
        if health != FROZEN or self.previous_ is None:
            return None
        return replace(self.previous_, index=index, time_s=time_s, admitted=False,
                       absorbed=False, status=FROZEN)


class StartReference:
    """A second judge of the start: the same detector, seeded from frames spread over the whole
    file, which scores the warm-up's frames (and an event in view since) alongside the
    stream's own model, which is learning them. Each frame scores the larger of the two.

    After the warm-up, ``decide`` says whether the twin stays, goes or takes over: it stays
    while it sees an event (one in view since the warm-up, which the model learned and would
    not see end); it takes over when the model alone finds the frame unusual where the picture
    has stood still for ``settle_frames`` (the empty scene where the warm-up learned someone: a
    ghost; or a look of the file that the warm-up's seconds did not show, an exposure drift,
    which the twin knows), or, in a scene that never stands still (a curtain, an escalator),
    once the model alone has found every frame unusual for ``static_after``, the time a
    lasting change takes to be background anyway. That last is a ghost in a moving place, so
    only if the model learned a presence: a frame the twin found unusual among those that span
    the model's background (``saw_learned``). Else what the model alone flags for that long
    moves, and is new: someone the twin calls usual because people fill the file. It goes
    when both find the frame usual, and at the latest once the window's span has passed since
    the warm-up (the window has turned over).
    """

    STAY, GO, TAKE_OVER = "stay", "go", "take over"

    def __init__(self, twin, *, hot: float, settle_frames: int, static_after: int | None,
                 until: int):
        self.twin = twin
        self.hot = float(hot)
        self.settle_frames = int(settle_frames)
        self.static_after = static_after
        self.until = int(until)                  # frames elapsed when it goes at the latest
        self.alone_unusual_for_ = 0     # frames in a row only the model, not the twin, flagged
        self.seen_learned_: set[int] = set()   # the model's learn numbers of frames the twin
                                                # found unusual

    def larger(self, verdict: FrameScore, judged: FrameScore) -> FrameScore:
        """The model's ``verdict``, with the twin's score (and what explains it) if the twin's
        ``judged`` is the larger."""
        if judged.score <= verdict.score:
            return verdict
        return replace(verdict, residual=judged.residual, score=judged.score,
                       residual_image=judged.residual_image, block_scores=judged.block_scores,
                       evidence=judged.evidence)

    def saw_learned(self, learned: bool, learned_as: int, twin_score: float) -> None:
        """Whether the model ``learned`` a frame, as its ``learned_as``-th; the twin scored it
        so."""
        if learned and twin_score >= self.hot:
            self.seen_learned_.add(learned_as)

    def decide(self, elapsed: int, twin_score: float, z: np.ndarray,
               still_for: np.ndarray, model_spans_what_it_saw: bool = True) -> str:
        """``elapsed``: the model's frames since its start; ``z``: its block z-scores of the
        frame; ``still_for``: how long each block has stood still (``StaticRegions``);
        ``model_spans_what_it_saw``: the model's background holds a frame the twin found
        unusual (``SubspaceBackground.spans_any(seen_learned_)``)."""
        if elapsed >= self.until:
            return self.GO
        if twin_score >= self.hot:
            self.alone_unusual_for_ = 0
            return self.STAY
        unusual = z >= self.hot
        if not unusual.any():
            return self.GO
        self.alone_unusual_for_ += 1
        if ((still_for[unusual] >= self.settle_frames).all()
                or (self.static_after is not None and model_spans_what_it_saw
                    and self.alone_unusual_for_ >= self.static_after)):
            return self.TAKE_OVER
        return self.STAY
