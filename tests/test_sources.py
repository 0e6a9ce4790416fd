"""Tests of videvent.sources on small videos and image sequences made here with known content.

Frame i of every test sequence is grey level 20 + 6*i plus a little noise (so that each frame
costs real bytes in the file), with a fixed orange-ish patch in the top left corner; the grey
level identifies the frame after lossy compression, and the patch checks the BGR channel order.
"""

from __future__ import annotations

import functools
import http.server
import json
import threading
from fractions import Fraction
from pathlib import Path

import av
import cv2
import numpy as np
import pytest

from conftest import WAVING_TREES as SHARED_WAVING_TREES
from conftest import run_cli, sample
from videvent.sources import Frame, SourceError, open_source
from videvent.sources.base import spread
from videvent.sources.images import ImageSequenceSource
from videvent.sources.opencv import OpenCVSource
from videvent.sources.pyav import PyAVSource, limited_to_full_range

FRAMES = 36
FPS = 25
WIDTH, HEIGHT = 160, 120
PATCH = (slice(0, 30), slice(0, 40))  # BGR (40, 120, 220): red > blue
BODY = (slice(40, HEIGHT), slice(None))  # where the grey level is measured
# The shared data beside the repository (../shared), as everywhere in the tests.
WAVING_TREES = SHARED_WAVING_TREES / "frames"


def make_image(i: int, size: tuple[int, int] = (WIDTH, HEIGHT)) -> np.ndarray:
    width, height = size
    noise = np.random.default_rng(i).integers(-10, 11, (height, width, 1))
    image = np.clip(20 + 6 * i + noise, 0, 255).astype(np.uint8).repeat(3, axis=2)
    image[: height // 4, : width // 4] = (40, 120, 220)
    return image


def frame_number(image: np.ndarray) -> int:
    """The i that make_image drew, from the mean grey level of the frame body."""
    grey = image if image.ndim == 2 else cv2.cvtColor(image, cv2.COLOR_BGR2GRAY)
    return round((float(grey[BODY].mean()) - 20) / 6)


def write_h264(path: Path, container_format: str | None = None) -> Path:
    """The test sequence as H.264 in the container `path`'s suffix (or container_format) names."""
    # faststart puts the mp4 index (moov) first, so a file cut short still opens.
    options = {"movflags": "faststart"} if path.suffix == ".mp4" else {}
    with av.open(str(path), "w", format=container_format, options=options) as container:
        stream = container.add_stream("libx264", rate=FPS)
        stream.width, stream.height, stream.pix_fmt = WIDTH, HEIGHT, "yuv420p"
        stream.codec_context.gop_size = 12  # several keyframes, so seeks have somewhere to land
        for i in range(FRAMES):
            container.mux(stream.encode(av.VideoFrame.from_ndarray(make_image(i), format="bgr24")))
        container.mux(stream.encode())
    return path


def write_avi(path: Path) -> Path:
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"MJPG"), FPS, (WIDTH, HEIGHT))
    for i in range(FRAMES):
        writer.write(make_image(i))
    writer.release()
    return path


@pytest.fixture(scope="module")
def videos(tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("videos")
    return {"mp4": write_h264(folder / "clip.mp4"), "avi": write_avi(folder / "clip.avi")}


def read_all(spec, **options) -> list[Frame]:
    with open_source(spec, **options) as source:
        return list(source.frames())


def assert_one_line_error(spec, match: str, **options) -> None:
    with pytest.raises(SourceError, match=match) as caught:
        open_source(spec, **options)
    message = str(caught.value)
    assert message and "\n" not in message


# --- video files -----------------------------------------------------------------------------

@pytest.mark.parametrize("kind", ["mp4", "avi"])
@pytest.mark.parametrize("backend", ["pyav", "opencv"])
def test_video_metadata(videos, kind, backend):
    with open_source(videos[kind], backend=backend) as source:
        assert isinstance(source, PyAVSource if backend == "pyav" else OpenCVSource)
        assert (source.width, source.height) == (WIDTH, HEIGHT)
        assert source.fps == pytest.approx(FPS)
        assert source.frame_count == FRAMES
        assert source.is_live is False and source.fps_assumed is False
        assert source.name == "clip"
        assert source.uri == str(videos[kind])


@pytest.mark.parametrize("kind", ["mp4", "avi"])
@pytest.mark.parametrize("backend", ["pyav", "opencv"])
def test_video_frames_in_order_with_times(videos, kind, backend):
    frames = read_all(videos[kind], backend=backend)
    assert [frame.index for frame in frames] == list(range(FRAMES))
    assert [frame_number(frame.image) for frame in frames] == list(range(FRAMES))
    assert [frame.time_s for frame in frames] == pytest.approx(
        [i / FPS for i in range(FRAMES)], abs=1e-3)
    assert all(frame.image.shape == (HEIGHT, WIDTH) and frame.image.dtype == np.uint8
               for frame in frames)


@pytest.mark.parametrize("kind", ["mp4", "avi"])
@pytest.mark.parametrize("backend", ["pyav", "opencv"])
def test_colour_frames_are_bgr(videos, kind, backend):
    with open_source(videos[kind], backend=backend, colour=True) as source:
        image = next(iter(source.frames())).image
    assert image.shape == (HEIGHT, WIDTH, 3) and image.dtype == np.uint8
    blue, green, red = image[PATCH].reshape(-1, 3).mean(axis=0)
    assert red > green > blue + 40


def test_auto_backend_reads_files_with_pyav(videos):
    with open_source(videos["mp4"]) as source:
        assert isinstance(source, PyAVSource)


def write_with_timestamps(path: Path, pts: list[int]) -> Path:
    """The test sequence as H.264 with these timestamps (in frames), e.g. with a gap."""
    with av.open(str(path), "w") as container:
        stream = container.add_stream("libx264", rate=FPS)
        stream.width, stream.height, stream.pix_fmt = WIDTH, HEIGHT, "yuv420p"
        stream.codec_context.time_base = Fraction(1, FPS)
        stream.codec_context.gop_size = 12  # keyframes after the gap, for a seek to land on
        for i, stamp in enumerate(pts):
            frame = av.VideoFrame.from_ndarray(make_image(i), format="bgr24")
            frame.pts, frame.time_base = stamp, Fraction(1, FPS)
            container.mux(stream.encode(frame))
        container.mux(stream.encode())
    return path


@pytest.mark.parametrize("container", ["mp4", "mov"])
@pytest.mark.parametrize("gap", [False, True])
def test_timestamps_foretell_whether_a_seek_numbers_frames_as_a_pass_from_the_start(
        tmp_path, container, gap):
    """A gap of three frames' time after frame 20 (as a recorder that dropped frames writes
    them): a pass that seeks past it numbers its frames by their times, so otherwise than a
    pass from the start counts them, which the container's index says before any decoding."""
    pts = [i + (3 if gap and i >= 20 else 0) for i in range(FRAMES)]
    path = write_with_timestamps(tmp_path / f"clip.{container}", pts)
    with PyAVSource(path) as source:
        foretold = source.misnumbered_frame()
        counted = {frame.index: frame_number(frame.image) for frame in source.frames()}
        after_seek = {frame.index: frame_number(frame.image) for frame in source.frames(30)}
    assert counted == {i: i for i in range(FRAMES)}
    numbered_otherwise = any(after_seek[k] != counted.get(k) for k in after_seek)
    assert numbered_otherwise == gap
    assert (foretold is not None) == gap
    if gap:
        place, number = foretold
        assert place <= 22 and place != number   # at the gap or before it (a rate averaged)


@pytest.mark.parametrize("container", ["ts", "mkv"])
def test_without_an_index_of_every_frame_the_numbering_is_not_foretold(tmp_path, container):
    """MPEG-TS has no index, Matroska's cues hold keyframes only: not known without decoding
    (the chunked scan's boundary check then finds it)."""
    pts = [i + (3 if i >= 20 else 0) for i in range(FRAMES)]
    path = write_with_timestamps(tmp_path / f"clip.{container}", pts)
    with PyAVSource(path) as source:
        assert source.misnumbered_frame() is None


def test_images_are_numbered_by_their_places(tmp_path):
    for i in range(3):
        cv2.imwrite(str(tmp_path / f"f{i}.png"), make_image(i))
    with open_source(tmp_path) as source:
        assert source.misnumbered_frame() is None


@pytest.mark.parametrize("kind", ["mp4", "avi"])
@pytest.mark.parametrize("backend", ["pyav", "opencv"])
@pytest.mark.parametrize("start", [1, 11, 12, 13, 25, 34])
def test_seek_gives_the_frames_of_the_source(videos, kind, backend, start):
    with open_source(videos[kind], backend=backend) as source:
        frames = list(source.frames(start, start + 3))
    expected = list(range(start, min(start + 3, FRAMES)))
    assert [frame.index for frame in frames] == expected
    assert [frame_number(frame.image) for frame in frames] == expected
    assert [frame.time_s for frame in frames] == pytest.approx([i / FPS for i in expected],
                                                             abs=1e-3)


def runs_of(indices: list[int]) -> list[list[int]]:
    """``indices`` (ascending) cut into runs of consecutive numbers."""
    runs = [[indices[0]]]
    for index in indices[1:]:
        if index == runs[-1][-1] + 1:
            runs[-1].append(index)
        else:
            runs.append([index])
    return runs


@pytest.mark.parametrize("kind", ["mp4", "avi"])
@pytest.mark.parametrize("backend", ["pyav", "pyav-large", "opencv"])
def test_sample_spreads_frames_over_the_whole_file(videos, kind, backend, monkeypatch):
    """Frames for seeding, each the picture of its index: from a file read whole (small),
    single frames as many as asked for, evenly spread; where each place costs a seek, runs
    of ``sample_run`` frames at the start and near the end."""
    if backend == "pyav-large":
        monkeypatch.setattr("videvent.sources.pyav.SMALL_FILE_PIXELS", 0)
    with open_source(videos[kind], backend=backend.removesuffix("-large")) as source:
        frames = list(source.sample(8))
        run_length = source.sample_run
        assert list(source.sample(0)) == []
    indices = [frame.index for frame in frames]
    assert [frame_number(frame.image) for frame in frames] == indices
    if backend == "pyav":
        assert indices == spread(FRAMES, 8)
        return
    runs = runs_of(indices)
    assert run_length == 4 and indices == sorted(set(indices)) and len(indices) <= 8
    assert runs[0] == [0, 1, 2, 3] and all(len(run) <= run_length for run in runs)
    assert runs[-1][0] >= FRAMES // 2          # the mp4's last keyframe (24) or frame 35


@pytest.mark.parametrize("container_format, suffix", [("mpegts", "ts"), ("matroska", "mkv")])
@pytest.mark.parametrize("backend", ["pyav", "opencv"])
def test_other_containers_read_and_seek(tmp_path, backend, container_format, suffix):
    # OpenCV claims to seek in MPEG-TS but then reads nothing: the source must notice.
    path = write_h264(tmp_path / f"clip.{suffix}", container_format)
    with open_source(path, backend=backend) as source:
        assert [frame_number(f.image) for f in source.frames()] == list(range(FRAMES))
        assert [frame_number(f.image) for f in source.frames(20, 23)] == [20, 21, 22]
        assert next(source.frames(30)).time_s == pytest.approx(30 / FPS, abs=1e-3)


def write_stuck_timestamps(frames, path: Path, container_format: str, fps: int) -> Path:
    """``frames`` (BGR pictures) as H.264 without B-frames in ``container_format``, every
    packet stamped 0 (a recorder whose clock stood still; an MP4 muxer refuses it)."""
    with av.open(str(path), "w", format=container_format) as container:
        stream = container.add_stream("libx264", rate=fps, options={"bf": "0"})
        stream.height, stream.width = frames[0].shape[:2]
        stream.pix_fmt = "yuv420p"
        stream.codec_context.time_base = Fraction(1, fps)

        def mux(packets) -> None:
            for packet in packets:
                packet.pts = packet.dts = 0
                container.mux(packet)

        for k, image in enumerate(frames):
            frame = av.VideoFrame.from_ndarray(image, format="bgr24")
            frame.pts, frame.time_base = k, Fraction(1, fps)
            mux(stream.encode(frame))
        mux(stream.encode())
    return path


@pytest.mark.parametrize("container_format, suffix", [("mpegts", "ts"), ("matroska", "mkv")])
def test_timestamps_that_do_not_increase_time_the_frames_by_their_places(
        tmp_path, capfd, container_format, suffix):
    """Every frame stamped the same (issue 51: every time was 0, every event at 00:00:00.000,
    without a word): the frames are timed by their places at the frame rate, said once in a
    warning line; a pass from a frame reads its frames (nothing is sought by the timestamps)."""
    path = write_stuck_timestamps([make_image(i) for i in range(FRAMES)],
                                  tmp_path / f"stuck.{suffix}", container_format, FPS)
    with open_source(path, backend="pyav") as source:
        frames = list(source.frames())
        assert [frame_number(f.image) for f in frames] == list(range(FRAMES))
        assert [f.time_s for f in frames] == pytest.approx([i / FPS for i in range(FRAMES)])
        later = list(source.frames(20, 23))
        assert [frame_number(f.image) for f in later] == [20, 21, 22]
        assert [f.time_s for f in later] == pytest.approx([20 / FPS, 21 / FPS, 22 / FPS])
    err = capfd.readouterr().err
    assert err.splitlines() == [f"videvent: warning: '{path}': its timestamps do not increase "
                                f"(frame 1's is not after the one before); its frames are "
                                f"timed by their place at {FPS} fps instead"], err


def test_run_of_a_file_whose_timestamps_stand_still_times_its_events_by_frame(tmp_path):
    """``videvent run`` of the walker with every frame stamped 0 (Matroska): its event at its
    frames' times (frame / fps), as the walker's own file gives, and one warning line."""
    walker, truth = sample("walker")
    with av.open(str(walker)) as container:
        pictures = [frame.to_ndarray(format="bgr24") for frame in container.decode(video=0)]
    path = write_stuck_timestamps(pictures, tmp_path / "stuck.mkv", "matroska", truth["fps"])
    done = run_cli("run", path, "-d", tmp_path / "out", "-q", "--no-plot")
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines() == [f"videvent: warning: '{path}': its timestamps do not "
                                        f"increase (frame 1's is not after the one before); "
                                        f"its frames are timed by their place at 15 fps "
                                        f"instead"], done.stderr
    events = json.loads((tmp_path / "out" / "events.json").read_text())["events"]
    assert events
    for event in events:
        assert event["start_time_s"] == pytest.approx(event["start_frame"] / 15, abs=1e-6)
        assert event["end_time_s"] == pytest.approx(event["end_frame"] / 15, abs=1e-6)
        assert event["start_time_s"] > 5


@pytest.mark.parametrize("backend", ["pyav", "opencv"])
def test_passes_can_go_back_and_past_the_end(videos, backend):
    with open_source(videos["mp4"], backend=backend) as source:
        assert [f.index for f in source.frames(30)] == list(range(30, FRAMES))
        assert [f.index for f in source.frames(0, 2)] == [0, 1]
        assert list(source.frames(FRAMES + 5)) == []
        assert list(source.frames(5, 5)) == []


@pytest.mark.parametrize("kind", ["mp4", "avi"])
def test_pyav_grey_is_what_swscale_gives(videos, kind):
    # The luma-plane fast path (limited-range H.264, full-range MJPEG) against PyAV's own
    # conversion.
    with av.open(str(videos[kind])) as container:
        expected = [frame.to_ndarray(format="gray") for frame in container.decode(video=0)]
    frames = read_all(videos[kind], backend="pyav")
    assert len(frames) == len(expected)
    assert all(np.array_equal(f.image, e) for f, e in zip(frames, expected))


def test_every_limited_range_luma_value_maps_as_swscale_maps_it():
    levels = np.tile(np.arange(256, dtype=np.uint8), (16, 1))          # 16 x 256 luma plane
    planes = np.vstack([levels, np.full((8, 256), 128, np.uint8)])     # + chroma, yuv420p
    frame = av.VideoFrame.from_ndarray(planes, format="yuv420p")
    assert np.array_equal(limited_to_full_range(levels), frame.to_ndarray(format="gray"))


@pytest.mark.parametrize("kind", ["mp4", "avi"])
def test_backends_agree_within_a_few_grey_levels(videos, kind):
    by_pyav = read_all(videos[kind], backend="pyav")
    by_opencv = read_all(videos[kind], backend="opencv")
    assert len(by_pyav) == len(by_opencv) == FRAMES
    for a, b in zip(by_pyav, by_opencv):
        difference = np.abs(a.image.astype(int) - b.image.astype(int))
        assert difference.mean() < 3 and difference.max() <= 6


def test_closed_source_refuses_frames(videos):
    with open_source(videos["mp4"]) as source:
        pass
    with pytest.raises(ValueError):
        source.frames()


def test_negative_start_is_refused(videos):
    with open_source(videos["mp4"]) as source, pytest.raises(ValueError):
        source.frames(-1)


# --- damaged files -----------------------------------------------------------------------------

@pytest.mark.parametrize("backend", ["auto", "opencv"])
def test_truncated_mp4_yields_its_first_frames(tmp_path, backend):
    data = write_h264(tmp_path / "whole.mp4").read_bytes()
    cut = tmp_path / "cut.mp4"
    cut.write_bytes(data[: len(data) // 2])
    frames = read_all(cut, backend=backend)
    assert [frame.index for frame in frames] == list(range(len(frames)))
    # The first frames, in order; the packet cut in two (and what a decoder lost with it) may
    # come as image None.
    numbers = [frame_number(frame.image) for frame in frames if frame.image is not None]
    assert numbers == list(range(len(numbers)))
    assert 10 <= len(numbers) < FRAMES


def damage_frame(tmp_path: Path, number: int) -> Path:
    """A copy of the test mp4 whose frame `number` (not a keyframe) cannot be decoded."""
    whole = write_h264(tmp_path / "whole.mp4")
    with av.open(str(whole)) as container:
        packets = sorted((p.pts, p.pos, p.is_keyframe) for p in container.demux(video=0) if p.size)
    _, position, keyframe = packets[number]
    assert not keyframe
    data = bytearray(whole.read_bytes())
    data[position: position + 4] = b"\xff\xff\xff\xff"  # an impossible H.264 NAL unit length
    damaged = tmp_path / "damaged.mp4"
    damaged.write_bytes(bytes(data))
    return damaged


@pytest.mark.parametrize("backend", ["pyav", "opencv"])
def test_corrupt_frame_in_the_middle_does_not_stop_the_run(tmp_path, backend):
    frames = read_all(damage_frame(tmp_path, 13), backend=backend)
    # The lost frame keeps its number (image None) and the run reaches the end.
    assert [frame.index for frame in frames] == list(range(FRAMES))
    assert sum(frame.image is None for frame in frames) == 1
    assert frame_number(frames[-1].image) == FRAMES - 1


def test_pyav_puts_the_lost_frame_in_its_place(tmp_path):
    frames = read_all(damage_frame(tmp_path, 13), backend="pyav")
    assert [frame.index for frame in frames if frame.image is None] == [13]
    assert [frame.time_s for frame in frames] == pytest.approx([i / FPS for i in range(FRAMES)])
    assert [frame_number(frame.image) for frame in frames[:13]] == list(range(13))


# --- image sequences ---------------------------------------------------------------------------

@pytest.fixture()
def png_folder(tmp_path) -> Path:
    folder = tmp_path / "shots"
    folder.mkdir()
    # Natural order (shot2 before shot10), mixed-case extensions, and a file that is no image.
    for i in range(12):
        cv2.imwrite(str(folder / f"shot{i + 1}.{'PNG' if i % 3 else 'png'}"), make_image(i))
    (folder / "notes.txt").write_text("not a frame")
    return folder


def test_folder_of_pngs(png_folder):
    with open_source(png_folder) as source:
        assert isinstance(source, ImageSequenceSource)
        assert source.name == "shots"
        assert source.frame_count == 12
        assert (source.width, source.height, source.fps) == (WIDTH, HEIGHT, 25)
        assert source.fps_assumed is True              # images give no rate: the default
        frames = list(source.frames())
    assert [frame_number(frame.image) for frame in frames] == list(range(12))
    assert [frame.time_s for frame in frames] == pytest.approx([i / 25 for i in range(12)])
    assert frames[0].image.shape == (HEIGHT, WIDTH)


def test_image_sequence_fps_colour_and_seek(png_folder):
    with open_source(png_folder, fps=10, colour=True) as source:
        assert source.fps_assumed is False
        frames = list(source.frames(4, 7))
    assert [frame.index for frame in frames] == [4, 5, 6]
    assert [frame.time_s for frame in frames] == pytest.approx([0.4, 0.5, 0.6])
    assert frames[0].image.shape == (HEIGHT, WIDTH, 3)


def test_image_sequence_samples_single_frames_spread_over_it(png_folder):
    with open_source(png_folder) as source:
        frames = list(source.sample(5))
    assert [frame.index for frame in frames] == spread(12, 5) == [0, 3, 6, 8, 11]
    assert [frame_number(frame.image) for frame in frames] == [0, 3, 6, 8, 11]


def write_numbered(folder: Path, first: int, count: int) -> None:
    folder.mkdir()
    for i in range(count):
        cv2.imwrite(str(folder / f"b{first + i:05d}.png"), make_image(i))


def test_printf_pattern(tmp_path):
    write_numbered(tmp_path / "seq", 0, 10)
    with open_source(str(tmp_path / "seq" / "b%05d.png"), fps=5) as source:
        assert isinstance(source, OpenCVSource)
        assert source.frame_count == 10 and source.fps_assumed is False
        frames = list(source.frames())
    assert [frame_number(frame.image) for frame in frames] == list(range(10))
    assert [frame.time_s for frame in frames] == pytest.approx([i / 5 for i in range(10)])
    with open_source(str(tmp_path / "seq" / "b%05d.png")) as source:
        assert (source.fps, source.fps_assumed) == (25, True)


def test_printf_pattern_numbered_from_100(tmp_path):
    # FFmpeg (so OpenCV) only looks for a first number 0..4; the images backend takes over.
    write_numbered(tmp_path / "seq", 100, 6)
    frames = read_all(str(tmp_path / "seq" / "b%05d.png"))
    assert [frame_number(frame.image) for frame in frames] == list(range(6))


def test_glob(png_folder):
    (png_folder / "other.jpg").write_bytes(b"")  # not matched by the glob
    frames = read_all(str(png_folder / "*.PNG"))
    assert [frame_number(frame.image) for frame in frames] == [i for i in range(12) if i % 3]


@pytest.mark.parametrize("spec", ["folder", "pattern", "glob"])
def test_unreadable_image_gives_none_and_the_run_goes_on(tmp_path, spec):
    write_numbered(tmp_path / "seq", 0, 8)
    (tmp_path / "seq" / "b00003.png").write_bytes(b"this is no png")
    target = {"folder": tmp_path / "seq", "pattern": str(tmp_path / "seq" / "b%05d.png"),
              "glob": str(tmp_path / "seq" / "b*.png")}[spec]
    frames = read_all(target)
    assert [frame.index for frame in frames] == list(range(8))
    assert frames[3].image is None
    assert [frame_number(f.image) for f in frames if f.image is not None] == [0, 1, 2, 4, 5, 6, 7]


def test_images_of_another_size_are_resized(tmp_path):
    folder = tmp_path / "sizes"
    folder.mkdir()
    cv2.imwrite(str(folder / "a1.png"), make_image(0))
    cv2.imwrite(str(folder / "a2.png"), make_image(1, size=(80, 60)))
    frames = read_all(folder)
    assert [frame.image.shape for frame in frames] == [(HEIGHT, WIDTH)] * 2
    assert frame_number(frames[1].image) == 1


@pytest.mark.skipif(not WAVING_TREES.is_dir(),
                    reason="the shared WavingTrees sequence is not here (../shared/datasets)")
@pytest.mark.parametrize("spec", [str(WAVING_TREES / "b%05d.bmp"), str(WAVING_TREES)])
def test_waving_trees(spec):
    with open_source(spec) as source:
        assert source.frame_count == 287
        frames = list(source.frames())
    assert len(frames) == 287
    assert [frame.index for frame in frames] == list(range(287))
    assert all(frame.image.shape == (120, 160) for frame in frames)
    reference = cv2.imread(str(WAVING_TREES / "b00247.bmp"), cv2.IMREAD_GRAYSCALE)
    assert np.abs(frames[247].image.astype(int) - reference).max() <= 1


# --- live sources ------------------------------------------------------------------------------

@pytest.fixture()
def http_url(videos):
    """The test mp4 served over HTTP from this process."""
    handler = functools.partial(QuietHandler, directory=str(videos["mp4"].parent))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/{videos['mp4'].name}"
    server.shutdown()
    thread.join()


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:
        pass


def test_network_stream(http_url):
    with open_source(http_url) as source:
        assert isinstance(source, OpenCVSource)
        assert source.is_live and source.frame_count is None
        assert source.name == "clip"
        frames = list(source.frames())
        assert [frame_number(frame.image) for frame in frames] == list(range(FRAMES))
        with pytest.raises(ValueError):
            source.frames(0)  # a live source cannot go back


# --- errors --------------------------------------------------------------------------------------

def test_missing_path(tmp_path):
    assert_one_line_error(tmp_path / "nothing.mp4", "no such file")


def test_empty_file(tmp_path):
    (tmp_path / "empty.mp4").touch()
    assert_one_line_error(tmp_path / "empty.mp4", "empty")


@pytest.mark.parametrize("backend", ["auto", "pyav", "opencv"])
def test_text_file_renamed_avi(tmp_path, backend):
    (tmp_path / "notes.avi").write_text("these are notes, not a video\n" * 50)
    assert_one_line_error(tmp_path / "notes.avi", "not a video", backend=backend)


def test_video_without_decodable_frames(tmp_path):
    data = write_h264(tmp_path / "whole.mp4").read_bytes()
    start = data.index(b"mdat") + 4
    blank = tmp_path / "blank.mp4"
    blank.write_bytes(data[:start] + bytes(len(data) - start))  # valid index, zeroed pictures
    assert_one_line_error(blank, "no video frame")


def test_folder_without_images(tmp_path):
    (tmp_path / "notes.txt").write_text("no images here")
    assert_one_line_error(tmp_path, "no images")


def test_folder_of_unreadable_images(tmp_path):
    (tmp_path / "a.png").write_bytes(b"not a png")
    assert_one_line_error(tmp_path, "images is readable")


@pytest.mark.parametrize("spec", ["b%05d.png", "*.png"])
def test_pattern_or_glob_matching_nothing(tmp_path, spec):
    assert_one_line_error(str(tmp_path / spec), "no files match")


@pytest.mark.parametrize("camera", [99, "99"])
def test_camera_that_does_not_open(camera):
    assert_one_line_error(camera, "camera 99")


def test_backend_that_cannot_read_the_input(png_folder, videos):
    assert_one_line_error(png_folder, "cannot read folder", backend="pyav")
    assert_one_line_error(videos["mp4"], "unknown backend", backend="gstreamer")
    assert_one_line_error(videos["mp4"], "fps", fps=0)


def test_source_error_is_a_value_error():
    assert issubclass(SourceError, ValueError)


@pytest.mark.parametrize("backend", ["pyav", "opencv"])
def test_keep_colour_adds_the_picture_and_leaves_grey_frames_unchanged(backend):
    from conftest import SAMPLES
    clip = SAMPLES / "walker.mp4"
    with open_source(clip, backend=backend) as grey, \
            open_source(clip, backend=backend, keep_colour=True) as both:
        for plain, kept in zip(grey.frames(0, 12), both.frames(0, 12)):
            assert np.array_equal(plain.image, kept.image)
            assert plain.colour is None and kept.colour.shape == (240, 320, 3)
            assert abs(float(cv2.cvtColor(kept.colour, cv2.COLOR_BGR2GRAY).mean())
                       - float(kept.image.mean())) < 3


@pytest.mark.parametrize("kind", ["mp4", "avi"])
@pytest.mark.parametrize("colour", [False, True])
def test_pyav_scales_to_the_size_asked_as_the_preprocessing_would(videos, kind, colour):
    """Asked for the working size, the PyAV source hands pictures scaled inside FFmpeg:
    the same frames, within a grey level or two of OpenCV's area downscale of the full
    picture (full range from limited-range H.264 and full-range MJPEG alike), marked
    ``scaled`` so that nothing shows them; the kept colour picture stays full size."""
    size = (48, 36)
    with open_source(videos[kind], backend="pyav", colour=colour, keep_colour=True) as source:
        scaled = list(source.frames(3, 20, size=size))
        full = list(source.frames(3, 20))
    assert [f.index for f in scaled] == [f.index for f in full] == list(range(3, 20))
    for small, whole in zip(scaled, full):
        assert small.scaled and not whole.scaled
        assert small.picture_to_show() is small.colour
        assert small.colour.shape == (HEIGHT, WIDTH, 3)
        assert small.image.shape == ((36, 48, 3) if colour else (36, 48))
        expected = cv2.resize(whole.image, size, interpolation=cv2.INTER_AREA).astype(int)
        difference = np.abs(small.image.astype(int) - expected)
        # Colour: FFmpeg scales the 4:2:0 chroma before converting it, so the red patch's
        # edge differs more.
        assert difference.mean() < (1.5 if colour else 1)
        assert difference.max() <= (20 if colour else 4)
        assert abs(float(small.image.mean()) - float(whole.image.mean())) < 1   # frames 6 apart


def test_a_scaled_frame_makes_its_full_picture_when_it_is_shown(videos):
    """A frame scaled while decoding, its colour not kept, makes its picture at the source's
    size, in colour, when it is shown: the picture a source keeping colour gives."""
    with open_source(videos["mp4"], backend="pyav") as source, \
            open_source(videos["mp4"], backend="pyav", keep_colour=True) as kept:
        frames = list(source.frames(0, 8, size=(48, 36)))   # the decoder went on meanwhile
        whole = list(kept.frames(0, 8))
    for frame, full in zip(frames, whole):
        assert frame.scaled and frame.image.shape == (36, 48) and frame.colour is None
        assert np.array_equal(frame.picture_to_show(), full.colour)
        assert full.picture_to_show() is full.colour


@pytest.mark.parametrize("backend", ["pyav", "opencv", "images"])
def test_every_backend_shows_a_frame_in_its_colour_without_keeping_colour(videos, png_folder,
                                                                          backend):
    """Thumbnails and snapshots are in the source's colour though the detector's frames are
    grey and no colour was kept (a run without exports): the frame shown makes it."""
    spec = png_folder if backend == "images" else videos["mp4"]
    with open_source(spec, backend=backend) as source:
        frames = list(source.frames(0, 6))
    for frame in frames:
        assert frame.colour is None and frame.image.ndim == 2
        picture = frame.picture_to_show()
        assert picture.shape == (HEIGHT, WIDTH, 3)
        blue, green, red = picture[PATCH].reshape(-1, 3).mean(axis=0)
        assert red > green + 50 > blue + 100, (blue, green, red)    # the patch's (40, 120, 220)


def test_a_run_decodes_at_the_working_size_and_its_thumbnail_at_the_sources(tmp_path):
    """The pass asks its source for the working size; the event's thumbnail, whose frame
    came scaled, is at the source's size."""
    from conftest import SAMPLES
    from videvent.passes import prepare
    from videvent.pipeline import detect
    from videvent.settings import Settings
    settings = Settings(working_size=64)
    with open_source(SAMPLES / "walker.mp4") as source:
        run, _ = prepare(source, settings)
        assert run.decode_size == (64, 48)
    result = detect(SAMPLES / "walker.mp4", settings, out_dir=tmp_path / "out", plot=False)
    assert result.events
    thumbnails = sorted((tmp_path / "out" / "thumbnails").glob("*.jpg"))
    assert len(thumbnails) == len(result.events)
    assert all(cv2.imread(str(path)).shape[:2] == (240, 320) for path in thumbnails)
