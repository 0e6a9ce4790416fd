"""``videvent batch`` end to end: a local cluster, a scheduler of our own, chunks, resuming."""

from __future__ import annotations

import copy
import csv
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from fractions import Fraction
from pathlib import Path

import pytest

from conftest import mean_saturation, run_cli, sample, wait_until

pytest.importorskip("distributed")

from distributed.diagnostics.plugin import WorkerPlugin  # noqa: E402

from videvent import chunked  # noqa: E402
from videvent.batch import Video, chunk_ranges, find_videos  # noqa: E402
from videvent.chunked import BoundaryMismatch, JoinedChunks, score_chunk  # noqa: E402
from videvent.engine import seed_sample  # noqa: E402
from videvent.passes import open_for, prepare_pass  # noqa: E402
from videvent.pipeline import write_results  # noqa: E402
from videvent.output.video import VideoWriter  # noqa: E402
from videvent.settings import Settings  # noqa: E402
from videvent.sources import open_source  # noqa: E402

CLIPS = ("walker", "blank_frames")


def result_files(folder):
    """Every file of a result folder: relative path -> bytes (report.html aside: it names
    the source's path and version, which are the same but not worth the byte comparison)."""
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file() and p.name != "report.html"}


def events_of(folder):
    document = json.loads((folder / "events.json").read_text())
    return document["events"], document["frames_read"]


def index_rows(out):
    with open(out / "index.csv", newline="") as handle:
        return list(csv.DictReader(handle))


@pytest.fixture(scope="module")
def archive(tmp_path_factory):
    """Two sample clips, one in a subfolder, a corrupt 'video', and `run`'s result for each."""
    root = tmp_path_factory.mktemp("batch")
    clips = root / "clips"
    (clips / "day2").mkdir(parents=True)
    shutil.copy(sample(CLIPS[0])[0], clips / f"{CLIPS[0]}.mp4")
    shutil.copy(sample(CLIPS[1])[0], clips / "day2" / f"{CLIPS[1]}.mp4")
    (clips / "bad.mp4").write_text("not a video\n" * 20)
    expected = {}
    for name, path in ((CLIPS[0], clips / f"{CLIPS[0]}.mp4"),
                       (CLIPS[1], clips / "day2" / f"{CLIPS[1]}.mp4")):
        result = run_cli("run", path, "-d", root / "run" / name, "-q")
        assert result.returncode == 0, result.stderr
        expected[name] = root / "run" / name
    return root, clips, expected


@pytest.fixture(scope="module")
def local_batch(archive):
    root, clips, _ = archive
    out = root / "local"
    result = run_cli("batch", clips, "--out", out, "--workers", "2")
    return result, out


def test_local_cluster_gives_what_run_gives_and_reports_the_corrupt_file(archive, local_batch):
    _, _, expected = archive
    result, out = local_batch
    assert result.returncode == 0, result.stderr
    assert "videvent: warning: 1 of 3 videos failed" in result.stderr
    assert "Traceback" not in result.stderr
    for name, folder in ((CLIPS[0], out / "clips" / f"{CLIPS[0]}.videvent"),
                         (CLIPS[1], out / "clips" / "day2" / f"{CLIPS[1]}.videvent")):
        assert result_files(folder) == result_files(expected[name]), name
        assert (folder / "report.html").is_file()
    # Made where the video was scored, the thumbnail is in the video's colours, as run's is.
    assert mean_saturation(out / "clips" / f"{CLIPS[0]}.videvent" / "thumbnails"
                           / "event001.jpg") > 30
    rows = index_rows(out)
    [failed] = [row for row in rows if row["status"] == "failed"]
    assert failed["video"].endswith("bad.mp4") and "not a video" in failed["error"]
    walker_events, _ = events_of(expected[CLIPS[0]])
    walker_rows = [row for row in rows if row["video"].endswith(f"{CLIPS[0]}.mp4")]
    assert [int(row["event"]) for row in walker_rows] == [e["number"] for e in walker_events]
    assert int(walker_rows[0]["start_frame"]) == walker_events[0]["start_frame"]
    page = (out / "batch_report.html").read_text()
    assert "<svg" in page and "bad.mp4" in page and "clips/walker.videvent/report.html" in page
    assert not list(out.rglob("*.partial"))


def test_an_existing_scheduler_with_two_workers_gives_the_same_results(archive, local_batch,
                                                                       tmp_path):
    from distributed import Client

    _, clips, _ = archive
    _, local_out = local_batch
    dask = [sys.executable, "-m", "dask"]
    processes = []
    # The scheduler picks its own port and writes its address down (nothing picked free and
    # released, which another process could take in between).
    address_file = tmp_path / "scheduler.json"
    try:
        processes.append(subprocess.Popen(
            dask + ["scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
                    "--scheduler-file", str(address_file)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        deadline = time.monotonic() + 60
        address = None
        while address is None:
            assert time.monotonic() < deadline and processes[0].poll() is None, \
                "the scheduler never wrote its address"
            try:
                address = json.loads(address_file.read_text())["address"]
            except (OSError, ValueError, KeyError):   # not there, or not all written yet
                time.sleep(0.1)
        for _ in range(2):
            processes.append(subprocess.Popen(
                dask + ["worker", address, "--host", "127.0.0.1", "--nthreads", "1",
                        "--no-dashboard", "--no-nanny"],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        with Client(address, timeout="30s") as client:
            client.wait_for_workers(2, timeout=60)
        out = tmp_path / "remote"
        result = run_cli("batch", clips, "--out", out, "--scheduler", address)
        assert result.returncode == 0, result.stderr
        for folder in local_out.rglob("*.videvent"):
            assert result_files(out / folder.relative_to(local_out)) == result_files(folder)
        assert [r["status"] for r in index_rows(out)] == [r["status"]
                                                          for r in index_rows(local_out)]
    finally:
        for process in reversed(processes):
            process.terminate()
        for process in processes:
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()


@pytest.fixture(scope="module")
def long_clip(tmp_path_factory):
    """Three sample clips back to back (1200 frames at 15 fps, 80 s): walker, long event,
    lights going off."""
    path = tmp_path_factory.mktemp("long") / "long.mp4"
    writer = None
    for name in ("walker", "long_event", "lighting"):
        with open_source(sample(name)[0], colour=True) as source:
            writer = writer or VideoWriter(path, source.width, source.height, source.fps)
            for frame in source.frames():
                writer.write(frame.image)
    writer.close()
    return path


# A short background span brings the detector's look-back (five spans and the warm-up) to
# 36 s, under the long clip's 80: its later chunks are scored from a look-back, not from the
# start. A smaller window keeps its stride at 3 frames (at 100 it would learn every frame and
# refit every other one: four times the work, for nearly the same events).
SHORT_LOOK_BACK = {"background_span": "6s", "window": 30}
SHORT_LOOK_BACK_ARGS = tuple(arg for name, value in SHORT_LOOK_BACK.items()
                             for arg in (f"--{name.replace('_', '-')}", str(value)))


def look_back_of(spec, settings):
    with open_for(str(spec), settings) as source:
        return prepare_pass(source, settings).detector.look_back


def test_chunks_scored_apart_give_the_events_of_a_sequential_run(long_clip, tmp_path):
    chunk_minutes = 0.3  # 18 s = 270 frames: 5 chunks
    settings = Settings(**SHORT_LOOK_BACK)
    ranges = chunk_ranges(Video(str(long_clip), "long"), settings, chunk_minutes * 60)
    assert len(ranges) >= 4 and ranges[0][0] == 0 and ranges[-1][1] is None
    # The first chunk, which has no look-back before it, is longer by one: as much work.
    look_back = look_back_of(long_clip, settings)
    lengths = [b - a for a, b in ranges[:-1]] + [1200 - ranges[-1][0]]
    assert all(abs(lengths[0] - look_back - n) <= 1 for n in lengths[1:])
    # A video no longer than the look-back (80 s against 303 s at the default span) is one
    # task: its chunks would all be scored from its start.
    assert chunk_ranges(Video(str(long_clip), "long"), Settings(), chunk_minutes * 60) == []
    sequential = tmp_path / "sequential"
    assert run_cli("run", long_clip, "-d", sequential, "-q", "--no-plot",
                   *SHORT_LOOK_BACK_ARGS).returncode == 0
    out = tmp_path / "chunked"
    result = run_cli("batch", long_clip, "--out", out, "--workers", "2",
                     "--chunk-minutes", chunk_minutes, "--no-plot",
                     *SHORT_LOOK_BACK_ARGS)
    assert result.returncode == 0, result.stderr
    # Not a sequential fallback, and the chunks from a look-back were not all scored again.
    again = re.search(rf"\(scored in {len(ranges)} chunks, (\d+) again\)", result.stderr)
    assert again and int(again.group(1)) < len(ranges) - 1, result.stderr
    chunked = out / "long.videvent"
    (theirs, frames), (ours, our_frames) = events_of(sequential), events_of(chunked)
    assert our_frames == frames and len(theirs) >= 3
    # Every event of the sequential run, with both ends within 1 s, and no other.
    assert len(ours) == len(theirs)
    for mine, its in zip(ours, theirs):
        assert abs(mine["start_time_s"] - its["start_time_s"]) <= 1.0
        assert abs(mine["end_time_s"] - its["end_time_s"]) <= 1.0
    assert sorted(p.name for p in (chunked / "thumbnails").iterdir()) == sorted(
        p.name for p in (sequential / "thumbnails").iterdir())


@pytest.mark.parametrize("container, why", [
    # The container's index foretells it: no chunk is scored.
    ("mp4", "its timestamps number frame"),
    # Matroska's cues index keyframes only: the chunks' boundary check finds it (the frames
    # before a chunk, or those a chunk scored again begins with, whichever is met first).
    ("mkv", "the frames "),
])
def test_a_video_numbered_otherwise_after_a_seek_is_scanned_in_one_pass(long_clip, tmp_path,
                                                                       container, why):
    """A recording whose timestamps skip (three frames' time every 100 frames, as a recorder
    that dropped frames writes them): a pass that seeks numbers its frames otherwise than one
    from the start."""
    import av

    gappy = tmp_path / f"gappy.{container}"
    with av.open(str(long_clip)) as source, av.open(str(gappy), "w") as written:
        frames = source.streams.video[0]
        stream = written.add_stream("libx264", rate=15, options={"preset": "veryfast"})
        stream.width, stream.height, stream.pix_fmt = frames.width, frames.height, "yuv420p"
        stream.codec_context.time_base = Fraction(1, 15)
        for k, frame in enumerate(source.decode(frames)):
            copy = av.VideoFrame.from_ndarray(frame.to_ndarray(format="yuv420p"),
                                              format="yuv420p")
            copy.pts, copy.time_base = k + 3 * (k // 100), Fraction(1, 15)
            written.mux(stream.encode(copy))
        written.mux(stream.encode())
    sequential = tmp_path / "sequential"
    assert run_cli("run", gappy, "-d", sequential, "-q", "--no-plot",
                   *SHORT_LOOK_BACK_ARGS).returncode == 0
    out = tmp_path / "chunked"
    result = run_cli("batch", gappy, "--out", out, "--workers", "1", "--chunk-minutes", 0.3,
                     "--no-plot", *SHORT_LOOK_BACK_ARGS)
    assert result.returncode == 0, result.stderr
    assert ("scanned in one pass: after a seek its frames are numbered otherwise "
            f"({why}") in result.stderr
    assert events_of(out / "gappy.videvent") == events_of(sequential)


@pytest.fixture(scope="module")
def chunks_apart(long_clip):
    """The long clip's chunks, each scored from its look-back (in this process)."""
    settings = Settings(**SHORT_LOOK_BACK)
    with open_for(str(long_clip), settings) as source:
        run = prepare_pass(source, settings)
        sample, look_back, count = seed_sample(run), run.detector.look_back, source.frame_count
    bounds = [0, 300, 600, 900, None]
    chunks = [score_chunk(str(long_clip), settings, max(0, start - look_back), start, end,
                          seed_sample=sample) for start, end in zip(bounds, bounds[1:])]
    assert count == 1200 and [c.first > 0 for c in chunks] == [False, False, True, True]
    return settings, chunks


def rescorer(long_clip, settings, spoil=None):
    def rescore(chunk, state):
        again = score_chunk(str(long_clip), settings, chunk.start, chunk.start, chunk.end,
                            state=state)
        if spoil is not None:
            spoil(again)
        return again
    return rescore


def scan_into(folder, long_clip, settings, scored=None):
    with open_for(str(long_clip), settings) as source:
        return write_results(source, settings, folder, plot=False, scored=scored)


def test_a_chunk_scored_again_from_the_chunk_before_gives_the_sequential_verdicts_exactly(
        long_clip, chunks_apart, tmp_path, monkeypatch):
    settings, chunks = chunks_apart
    expected = scan_into(tmp_path / "sequential", long_clip, settings)
    # As if no chunk's detector held the background of the one before it.
    monkeypatch.setattr(chunked, "holds_same_background", lambda *states: False)
    joined = JoinedChunks(chunks, rescorer(long_clip, settings))
    got = scan_into(tmp_path / "joined", long_clip, settings, joined)
    assert joined.rescored == [600, 900]  # those scored from a look-back, not the start
    assert len(got.events) >= 3 and got.to_dict() == expected.to_dict()
    # The very same files: scores, events, thumbnails (their pictures decoded again).
    assert result_files(tmp_path / "joined") == result_files(tmp_path / "sequential")


class Discarded:
    """A consumer of verdicts that keeps none."""

    def add(self, frame, vector, verdict) -> None:
        pass


def test_chunk_boundaries_are_checked_frame_by_frame(long_clip, chunks_apart, monkeypatch):
    settings, chunks = chunks_apart
    shifted = copy.deepcopy(chunks)
    shifted[2].before[-1][2][0] += 1   # a pixel of the last frame before the third chunk
    with pytest.raises(BoundaryMismatch):
        JoinedChunks(shifted, rescorer(long_clip, settings)).run(Discarded())

    # A chunk scored again must begin with the chunk's own first frames. Whether a chunk is
    # scored again depends on the backgrounds its passes settled on, which differ from one
    # processor to another (docs/guarantees.md): here every chunk from a look-back is.
    monkeypatch.setattr(chunked, "holds_same_background", lambda *states: False)
    spoiled = []

    def shift_first_pixel(again):
        spoiled.append(again.start)
        again.head[0][2][0] += 1
    with pytest.raises(BoundaryMismatch):
        JoinedChunks(chunks, rescorer(long_clip, settings, shift_first_pixel)).run(Discarded())
    assert spoiled == [600]            # caught at the first chunk scored again


class KillOnce(WorkerPlugin):
    """A worker plugin: the first chunk task to start kills its worker's process (once over
    the cluster: ``marker`` is created first)."""

    def __init__(self, marker):
        self.marker = marker

    def transition(self, key, start, finish, **kwargs):
        if finish == "executing" and "score_chunk" in str(key):
            try:
                with open(self.marker, "x"):
                    pass
            except FileExistsError:
                return
            os._exit(1)


def test_a_worker_killed_mid_scan_is_retried_without_changing_the_events(long_clip, tmp_path):
    """The same batch on the same cluster, once as it is and once with a worker killed in a
    chunk's task: the very same result files (the retried task computes what the lost one
    would have). Both within the chunked scan's tolerance of ``run``."""
    import cloudpickle
    from distributed import Client, LocalCluster

    from videvent.batch import run_batch

    settings = Settings(**SHORT_LOOK_BACK)
    expected = scan_into(tmp_path / "sequential", long_clip, settings)
    cloudpickle.register_pickle_by_value(sys.modules[__name__])  # the plugin, to the workers
    marker = tmp_path / "killed"
    outcomes = []
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address="127.0.0.1:0", worker_dashboard_address="127.0.0.1:0",
                      scheduler_kwargs={"dashboard": False}) as cluster, \
            Client(cluster) as client:
        for run in ("whole", "killed"):
            if run == "killed":
                client.register_plugin(KillOnce(str(marker)), name="kill-once")
            summary = run_batch([Video(str(long_clip), "long")], tmp_path / run, settings,
                                scheduler=cluster.scheduler_address, plot=False,
                                chunk_seconds=18)
            outcomes.extend(summary.outcomes)
    assert marker.exists()   # a worker died in a chunk's task
    for outcome in outcomes:
        assert outcome.error is None and outcome.chunks == 5
    whole, killed = (tmp_path / run / "long.videvent" for run in ("whole", "killed"))
    assert result_files(killed) == result_files(whole)
    # The chunked scan's promise against ``run``: its events, both ends within 1 s.
    (theirs, frames), (ours, our_frames) = events_of(tmp_path / "sequential"), events_of(killed)
    assert our_frames == frames and len(ours) == len(theirs) == len(expected.events) >= 3
    for mine, its in zip(ours, theirs):
        assert abs(mine["start_time_s"] - its["start_time_s"]) <= 1.0
        assert abs(mine["end_time_s"] - its["end_time_s"]) <= 1.0


def wait_until_unwanted(started: str, outcome: str) -> None:
    """A task that runs as a chunk's pass does, until it is stopped (or two minutes pass)."""
    stop = threading.Event()
    with chunked._stopped_when_unwanted(stop):
        Path(started).touch()
        stopped = stop.wait(120)
    Path(outcome).write_text("stopped" if stopped else "ran out")


def test_a_chunk_no_one_wants_any_more_stops_scoring(tmp_path):
    """The chunked scan cancels the chunks still running when it gives up on them (a boundary
    numbered otherwise): a running Dask task cannot be interrupted, so the pass itself looks
    whether its result is still wanted, and stops."""
    import cloudpickle
    from distributed import Client, LocalCluster

    cloudpickle.register_pickle_by_value(sys.modules[__name__])  # the task, to the workers
    started, outcome = tmp_path / "started", tmp_path / "outcome"
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                      dashboard_address="127.0.0.1:0", worker_dashboard_address="127.0.0.1:0",
                      scheduler_kwargs={"dashboard": False}) as cluster, \
            Client(cluster) as client:
        future = client.submit(wait_until_unwanted, str(started), str(outcome), pure=False)
        wait_until(started.exists, 60, "started")
        client.cancel(future)
        wait_until(outcome.exists, 60, "ended")
    assert outcome.read_text() == "stopped"
    # Outside a Dask task nothing watches: the pass runs to its end.
    stop = threading.Event()
    with chunked._stopped_when_unwanted(stop):
        assert not stop.wait(2 * chunked.UNWANTED_POLL_S)


def test_a_killed_batch_resumes_without_redoing_finished_videos(tmp_path):
    clips = tmp_path / "clips"
    clips.mkdir()
    for name in ("walker", "blank_frames", "long_event", "lighting"):
        shutil.copy(sample(name)[0], clips / f"{name}.mp4")
    out = tmp_path / "out"
    command = [sys.executable, "-m", "videvent", "batch", str(clips), "--out", str(out),
               "--workers", "1", "--no-plot", "-q"]
    # Its own session, so the batch and the cluster it started are killed together.
    batch = subprocess.Popen(command, start_new_session=True, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        finished = []
        while not finished and time.monotonic() < deadline and batch.poll() is None:
            time.sleep(0.1)
            finished = [f for f in (out / "clips").glob("*.videvent")
                        if (f / ".videvent-complete").is_file()]
        assert finished, "no video finished before the batch ended or timed out"
    finally:
        os.killpg(batch.pid, signal.SIGKILL)
        batch.wait()
    assert not (out / "index.csv").exists()  # killed before the end
    before = {p: p.stat().st_mtime_ns for f in finished for p in f.rglob("*")}
    result = run_cli(*command[3:])
    assert result.returncode == 0, result.stderr
    assert {p: p.stat().st_mtime_ns for p in before} == before
    assert len({row["video"] for row in index_rows(out) if row["status"] == "ok"}) == 4
    assert not [p for p in out.rglob("*") if ".partial" in p.name]  # the killed run's staging
    # A third run trusts the completion markers alone: the folder whose marker is gone (as if
    # its commit had been cut short) is scanned again, the others are skipped.
    (finished[0] / ".videvent-complete").unlink()
    result = run_cli(*command[3:-1])
    assert result.stderr.count("already done, skipped") == 3, result.stderr
    assert (finished[0] / ".videvent-complete").is_file()


def test_a_staging_folder_whose_process_dies_during_the_batch_is_gone_at_its_end(tmp_path):
    """A killed batch's worker can still be dying when the next batch makes its first staging
    folder beside the worker's, which is then spared (its process is alive); the batch removes
    it at its end, once that process is gone (loaded round 19 left one behind)."""
    from videvent.batch import run_batch
    from videvent.output.folder import mark

    out = tmp_path / "out"
    out.mkdir()
    dying = subprocess.Popen(["sleep", "60"])
    staging = out / f".walker.videvent.{dying.pid}-k1.partial"
    staging.mkdir()
    mark(staging)

    def after_each_video(outcome, done, total, rate):
        assert staging.exists()            # spared while its process lived
        dying.kill()
        dying.wait()

    try:
        run_batch(find_videos([str(sample("walker")[0])]), out, Settings(), workers=1,
                  plot=False, progress=after_each_video)
    finally:
        dying.kill()
        dying.wait()
    assert not staging.exists()
    assert (out / "walker.videvent" / ".videvent-complete").is_file()


def test_no_videos_is_one_line_and_exit_1(tmp_path):
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "notes.txt").write_text("nothing here")
    for argument in (tmp_path / "empty", tmp_path / "missing"):
        result = run_cli("batch", argument, "--out", tmp_path / "out")
        assert result.returncode == 1, result.stderr
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("videvent: error:"), result.stderr


def test_folders_of_images_count_as_one_sequence(tmp_path):
    sequence = tmp_path / "cams" / "gate"
    sequence.mkdir(parents=True)
    for i in range(3):
        (sequence / f"f{i:03d}.png").write_bytes(b"")
    (tmp_path / "cams" / "yard.mkv").write_bytes(b"")
    videos = find_videos([str(tmp_path / "cams")])
    assert [(v.name, os.path.basename(v.spec)) for v in videos] == [
        ("cams/yard", "yard.mkv"), ("cams/gate", "gate")]


def test_a_batch_leaves_dasks_default_port_to_whoever_has_it(tmp_path):
    """Dask's local cluster serves HTTP on 8787 by default, on every interface; a batch's
    takes a port of its own on loopback, so another batch or program there is no matter
    and nothing but the progress line reaches the user (it was four lines of Dask's warning)."""
    holder = socket.socket()
    holder.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        holder.bind(("0.0.0.0", 8787))         # taken already: the same case
        holder.listen()
    except OSError:
        pass
    try:
        result = run_cli("batch", sample("walker")[0], "--out", tmp_path / "out",
                         "--workers", "1", "--no-plot")
    finally:
        holder.close()
    assert result.returncode == 0, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("[1/1] walker"), result.stderr


def test_regions_reach_the_workers(tmp_path):
    # The walker crosses the bottom half; a mask file over it, named relative to where batch
    # is started, must mean the same on the cluster's workers as in `run`: no event, and the
    # very same results.
    clips = tmp_path / "clips"
    clips.mkdir()
    shutil.copy(sample("walker")[0], clips / "walker.mp4")
    (tmp_path / "bottom.txt").write_text("# the lawn\n0 120 319 120 319 239 0 239\n")
    result = run_cli("run", clips / "walker.mp4", "-d", tmp_path / "run", "-q",
                     "--mask", "bottom.txt", "--no-plot", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    result = run_cli("batch", "clips", "--out", "out", "--workers", "1", "--mask", "bottom.txt",
                     "--no-plot", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    folder = tmp_path / "out" / "clips" / "walker.videvent"
    assert events_of(folder)[0] == []
    assert result_files(folder) == result_files(tmp_path / "run")
    settings = json.loads((folder / "events.json").read_text())["settings"]
    # The client reads the file: the workers get its polygons, not a path they may not have.
    assert settings["ignore_region"] == ["0 120 319 120 319 239 0 239"], settings
    assert settings["mask"] == [], settings
    # Without the mask the same batch finds the walker (the mask, not the batch, hid it).
    result = run_cli("batch", "clips", "--out", "plain", "--workers", "1", "--no-plot",
                     cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert len(events_of(tmp_path / "plain" / "clips" / "walker.videvent")[0]) == 1
