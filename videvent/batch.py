"""Scan an archive of videos on Dask distributed: one result folder per video, one index.

``find_videos`` turns files, globs and folders into the list of sources (video files by
extension, and folders of images as one sequence each). ``run_batch`` runs ``detect`` on every
one of them as Dask tasks (a local cluster sized to the machine, or an existing scheduler),
writes each video's result folder exactly as ``videvent run`` would, then ``index.csv`` (one
row per event, one per failed video) and ``batch_report.html`` over the whole archive.

A rerun skips the videos whose result folder is complete and was made with the same
settings, so a killed batch resumes where it stopped. A video that cannot be read is reported
in the index and never stops the others.

Long videos (``chunk_seconds``): their time chunks are scored at once, each as a task of
its own warmed up on the detector's look-back before it, and joined in order into the verdicts
of one pass from the start (``videvent.chunked``); a chunk whose detector does not hold the
background the chunk before it ended with is scored again from there, in order.
"""

from __future__ import annotations

import csv
import glob
import html
import io
import json
import math
import os
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from .chunked import BOUNDARY_CHECK, BoundaryMismatch, JoinedChunks, score_chunk
from .engine import seed_sample, seeds
from .output import read_events
from .atomic import write_text_atomically
from .output.folder import completion, made_by_videvent, remove_stale
from .output.report import html_page
from .passes import frame_range, open_for, prepare, prepare_pass
from .pipeline import detect, write_results
from .settings import SettingError, Settings
from .sources.images import IMAGE_EXTENSIONS

VIDEO_EXTENSIONS = frozenset({".mp4", ".avi", ".mkv", ".mov", ".m4v", ".mpg", ".mpeg", ".ts",
                              ".webm", ".wmv", ".flv"})
RESULT_SUFFIX = ".videvent"
INDEX_NAME = "index.csv"
# Marks a batch's output folder, so that a later batch over a folder holding it (``batch .``
# run twice) does not scan the results of the first (annotated videos, clips) as videos.
BATCH_MARKER = ".videvent-batch"
REPORT_NAME = "batch_report.html"
# How long a scheduler has to answer before the batch gives up on it.
CONNECT_TIMEOUT_S = 10.0
INDEX_COLUMNS = ("video", "status", "event", "start_time_s", "end_time_s", "start_frame",
                 "end_frame", "peak_score", "result_dir", "error")


@dataclass(frozen=True)
class Video:
    """One source of the archive and where its results go (relative to the batch's output)."""

    spec: str
    name: str  # relative name, e.g. "cam1/2024-05-01"; results in OUT/<name>.videvent

    @property
    def result_dir(self) -> str:
        return self.name + RESULT_SUFFIX


@dataclass
class VideoOutcome:
    """What became of one video: its events (from events.json) or the error that stopped it."""

    video: Video
    events: list[dict] = field(default_factory=list)
    frames: int = 0
    duration_s: float = 0.0
    error: str | None = None
    skipped: bool = False  # complete results of an earlier run with the same settings
    chunks: int = 1  # time chunks scored in parallel (1: one sequential pass)
    rescored: int = 0  # of those, scored again from the chunk before's end
    note: str | None = None  # why a video asked to be chunked was not


@dataclass
class BatchSummary:
    outcomes: list[VideoOutcome]
    frames_scanned: int
    seconds: float

    @property
    def failed(self) -> list[VideoOutcome]:
        return [o for o in self.outcomes if o.error is not None]


# -- finding the videos ----------------------------------------------------------------------
def find_videos(paths: list[str]) -> list[Video]:
    """Videos of the given files, globs and folders (searched recursively), in order.

    Raises ValueError (one line) for a path that names nothing, or two sources that would
    share a result folder.
    """
    found: list[Video] = []
    for spec in paths:
        path = Path(spec)
        if path.is_dir():
            found += _videos_in_folder(path)
        elif path.is_file():
            found.append(Video(str(path), path.stem))
        elif any(c in spec for c in "*?["):
            matches = sorted(glob.glob(spec, recursive=True))
            if not matches:
                raise ValueError(f"no files match {spec!r}")
            found += [Video(m, Path(m).stem) for m in matches if Path(m).is_file()]
            for folder in (Path(m) for m in matches if Path(m).is_dir()):
                found += _videos_in_folder(folder)
        else:
            raise ValueError(f"cannot open {spec!r}: no such file or folder")
    names: dict[str, str] = {}
    for video in found:
        if names.setdefault(video.name, video.spec) != video.spec:
            raise ValueError(f"'{names[video.name]}' and '{video.spec}' would share the result "
                             f"folder '{video.result_dir}'; give their parent folders instead")
    return found


def _videos_in_folder(root: Path) -> list[Video]:
    """Video files under ``root``, and each folder of images as one sequence."""
    videos = []
    for folder, subfolders, files in os.walk(root):
        here = Path(folder)
        subfolders[:] = sorted(s for s in subfolders if not _videvent_output(here / s))
        relative = here.relative_to(root)
        prefix = Path(root.name) if relative == Path(".") else Path(root.name) / relative
        if any(Path(f).suffix.lower() in IMAGE_EXTENSIONS for f in files):
            videos.append(Video(str(here), prefix.as_posix()))
        for name in sorted(files):
            if Path(name).suffix.lower() in VIDEO_EXTENSIONS:
                videos.append(Video(str(here / name), (prefix / Path(name).stem).as_posix()))
    return videos


def _videvent_output(folder: Path) -> bool:
    """A folder videvent wrote: a result folder, a staging folder or a batch's output (also
    of versions before the markers: an events.json, or an index.csv with its report)."""
    return (folder.name.endswith(".partial") or made_by_videvent(folder)
            or (folder / BATCH_MARKER).is_file()
            or ((folder / INDEX_NAME).is_file() and (folder / REPORT_NAME).is_file()))


def check_settings(videos: list[Video], settings: Settings,
                   chunk_seconds: float | None = None) -> None:
    """Raise SettingError if the settings cannot work at the first readable video's frame
    rate (``-st 10s -et 5s``, ``--absorb-after 0``, chunks shorter than the background span):
    bad usage, found before any work, not one failure per video. A video that cannot be
    opened is left to its own outcome."""
    for video in videos:
        try:
            source = open_for(video.spec, settings)
        except ValueError:
            continue
        with source:
            run, _ = prepare(source, settings)
            if chunk_seconds is not None:
                # A chunk's pass warms up on five spans before it (its look-back): a chunk
                # shorter than one span is mostly warm-up, and 0.01 minutes is all warm-up.
                span = run.detector.judge.schedule.span
                if round(chunk_seconds * source.fps) < span:
                    raise SettingError(
                        f"--chunk-minutes {chunk_seconds / 60:g} is shorter than the time "
                        f"the model's window spans ({span} frames, "
                        f"{span / source.fps / 60:.3g} minutes at {source.fps:g} fps): a "
                        f"chunk must be at least one background span long (--background-"
                        f"span; the window's -w frames at least)")
        return


# -- resuming --------------------------------------------------------------------------------
def settings_record(settings: Settings) -> dict:
    """The settings as events.json records them (after a JSON round trip)."""
    return json.loads(json.dumps(settings.to_dict()))


def finished_outcome(video: Video, result_dir: Path, settings: Settings,
                     plot: bool = True) -> VideoOutcome | None:
    """The outcome read back from a complete result folder made with ``settings``, else None.

    Complete: the folder's completion marker, written last (with the plot and report when
    they are asked for now), agrees with its events.json.
    """
    facts = completion(result_dir)
    if facts is None or (plot and not facts.get("plot")):
        return None
    try:
        document = read_events(result_dir / "events.json")
        frames = int(document["frames_read"])
    except (ValueError, KeyError, TypeError, OSError):
        return None
    if frames != facts.get("frames_read") or document.get("settings") != settings_record(settings):
        return None
    return VideoOutcome(video, document["events"], frames,
                        _duration(frames, document["source"].get("fps")), skipped=True)


def _duration(frames: int, fps: float | None) -> float:
    return frames / fps if fps else 0.0


# -- the tasks (run on the workers) ----------------------------------------------------------
def scan_video(video: Video, out_dir: str, settings: Settings, plot: bool,
               note: str | None = None) -> VideoOutcome:
    """Task: ``videvent run`` on one video. Bad input becomes the outcome's error. ``note``:
    why a video asked to be chunked was not."""
    try:
        result = detect(video.spec, settings, out_dir=out_dir, plot=plot)
    except Exception as error:  # noqa: BLE001 - any failure is this video's, not the batch's
        return VideoOutcome(video, error=_one_line(error))
    return VideoOutcome(video, [e.to_dict() for e in result.events], result.frames_read,
                        _duration(result.frames_read, result.source["fps"]), note=note)


def _in_one_pass(mismatch: BoundaryMismatch) -> str:
    return f"scanned in one pass: after a seek its frames are numbered otherwise ({mismatch})"


def scan_chunks(video: Video, out_dir: str, settings: Settings, plot: bool,
                ranges: list[tuple[int, int | None]]) -> VideoOutcome:
    """Task: the video's chunks scored as tasks of their own, at once, each from the
    detector's look-back before it, then joined in order (``videvent.chunked``); writes what
    ``run`` writes. Scans the video in one pass if two chunks decode a boundary differently.
    """
    from distributed import worker_client

    try:
        # worker_client: this task waits on others, so it gives up its worker slot meanwhile.
        with worker_client() as client, open_for(video.spec, settings) as source:
            run = prepare_pass(source, settings)
            # Frames spread over the video seed every chunk's start: decoded once, shared.
            sample = client.scatter(seed_sample(run), broadcast=True) if seeds(run) else None
            look_back = max(run.detector.look_back, BOUNDARY_CHECK)
            waiting: deque = deque()   # the chunks submitted and not yet joined, in order

            def submit(start, end):
                return client.submit(score_chunk, video.spec, settings,
                                     max(ranges[0][0], start - look_back), start, end,
                                     seed_sample=sample, pure=False)

            def in_order():
                # Two chunks a worker ahead of the join at most: the results waiting (each
                # holds two detector states, megabytes) stay few however long the video.
                ahead = 2 * max(1, len(client.scheduler_info()["workers"]))
                waiting.extend(submit(*chunk) for chunk in ranges[:ahead])
                later = iter(ranges[ahead:])
                while waiting:
                    done = waiting.popleft().result()
                    chunk = next(later, None)
                    if chunk is not None:
                        waiting.append(submit(*chunk))
                    yield done

            def rescore(chunk, state):
                # The state (megabytes) goes as data, not inside the task's description. The
                # join waits on this task, so it goes before the chunks queued ahead of it.
                return client.submit(score_chunk, video.spec, settings, chunk.start,
                                     chunk.start, chunk.end, state=client.scatter(state),
                                     pure=False, priority=1).result()

            joined = JoinedChunks(in_order(), rescore)
            try:
                result = write_results(source, settings, Path(out_dir), plot=plot,
                                       scored=joined)
            finally:
                # Chunks still being scored when the join gave up stop (they would go on
                # beside the pass that replaces them): ``chunked._stopped_when_unwanted``.
                client.cancel(list(waiting))
    except BoundaryMismatch as mismatch:
        return scan_video(video, out_dir, settings, plot, _in_one_pass(mismatch))
    except Exception as error:  # noqa: BLE001 - any failure is this video's, not the batch's
        return VideoOutcome(video, error=_one_line(error))
    return VideoOutcome(video, [e.to_dict() for e in result.events], result.frames_read,
                        _duration(result.frames_read, result.source["fps"]), chunks=len(ranges),
                        rescored=len(joined.rescored))


def chunk_ranges(video: Video, settings: Settings,
                 chunk_seconds: float) -> list[tuple[int, int | None]]:
    """The time chunks of a video's range to scan, about ``chunk_seconds`` each; none when it
    is short enough for one task, or no longer than the detector's look-back (every chunk
    would be scored from its start), or its length cannot be known (the task that scans it
    reports why).

    Each chunk after the first is scored from the detector's look-back before it, so the
    first, which has none, is longer by a look-back: every chunk is as much work.

    Raises ``BoundaryMismatch`` when the video's timestamps already show that a pass which
    seeks would number its frames otherwise than a pass from the start (the chunks' boundary
    check would find it only once the first chunks had been scored).
    """
    try:
        with open_for(video.spec, settings) as source:
            start, end = frame_range(settings, source.fps)
            count, chunk_frames = source.frame_count, max(1, round(chunk_seconds * source.fps))
            look_back = prepare_pass(source, settings).detector.look_back
            misnumbered = source.misnumbered_frame()
    except Exception:  # noqa: BLE001
        return []
    last = end
    length = (min(end, count) if end is not None and count else end or count or 0) - start
    if length <= max(chunk_frames, look_back):
        return []
    if misnumbered is not None:
        place, number = misnumbered
        raise BoundaryMismatch(f"its timestamps number frame {place} as {number}")
    pieces = math.ceil(length / chunk_frames)
    bounds = [start] + [start + look_back + round(i * (length - look_back) / pieces)
                        for i in range(1, pieces)]
    # Without an end given, the last chunk reads to the end of the source: the frame count
    # in a header can be short.
    return list(zip(bounds, bounds[1:] + [last]))


def _one_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return text[0] if text else type(error).__name__


# -- the batch -------------------------------------------------------------------------------
def run_batch(videos: list[Video], out: str | os.PathLike, settings: Settings, *,
              scheduler: str | None = None, workers: int | None = None, plot: bool = True,
              chunk_seconds: float | None = None,
              progress: Callable[[VideoOutcome, int, int, float], None] | None = None
              ) -> BatchSummary:
    """Scan ``videos`` into ``out`` on Dask; write the index and the archive report.

    scheduler: address of an existing Dask scheduler; None starts a local cluster of
    ``workers`` processes (default: one per core), one thread each.
    chunk_seconds: score videos longer than this in parallel chunks of this length.
    progress(outcome, done, total, frames per second): after each video.
    """
    from distributed import Client, LocalCluster, as_completed

    out = Path(out)
    started = time.perf_counter()
    outcomes: dict[Video, VideoOutcome] = {}
    to_scan = []
    for video in videos:
        earlier = finished_outcome(video, out / video.result_dir, settings, plot)
        if earlier is not None:
            outcomes[video] = earlier
        else:
            to_scan.append(video)
    frames_scanned = 0
    done = 0
    for outcome in outcomes.values():
        done += 1
        if progress is not None:
            progress(outcome, done, len(videos), 0.0)

    if to_scan:
        cluster = None
        try:
            if scheduler is None:
                # Processes, one thread each: the detector holds the GIL most of the time.
                # Dask's HTTP servers (health, metrics; no dashboard) on loopback, on ports
                # the system picks: its default, 8787 on every interface, is another batch's
                # or another program's, and the network has no business there.
                cluster = LocalCluster(n_workers=workers or os.cpu_count() or 1,
                                       threads_per_worker=1, processes=True,
                                       dashboard_address="127.0.0.1:0",
                                       worker_dashboard_address="127.0.0.1:0",
                                       scheduler_kwargs={"dashboard": False})
            client = _connect(Client, cluster or scheduler)
        except (OSError, TimeoutError, ValueError) as error:
            if cluster is not None:
                cluster.close()
            raise ValueError(f"cannot reach the Dask scheduler at {scheduler}: "
                             f"{_one_line(error)}") from None
        try:
            futures = [_submit(client, video, str(out / video.result_dir), settings, plot,
                               chunk_seconds) for video in to_scan]
            scan_started = time.perf_counter()
            for future in as_completed(futures):
                outcome = future.result()
                outcomes[outcome.video] = outcome
                frames_scanned += outcome.frames
                done += 1
                if progress is not None:
                    rate = frames_scanned / max(time.perf_counter() - scan_started, 1e-9)
                    progress(outcome, done, len(videos), rate)
        except BaseException:
            client.close()
            if cluster is not None:
                cluster.close()
                # Its workers are gone: remove the staging folders of the videos they were
                # scanning (a remote scheduler's workers may still be writing theirs).
                _remove_leftovers(out)
            raise
        client.close()
        if cluster is not None:
            cluster.close()
    # Again at the end: a killed batch's worker may have been still dying when this batch
    # made its first staging folder beside its own, and was spared then.
    _remove_leftovers(out)

    summary = BatchSummary([outcomes[v] for v in videos], frames_scanned,
                           time.perf_counter() - started)
    out.mkdir(parents=True, exist_ok=True)
    (out / BATCH_MARKER).touch()
    # A file name that is not valid UTF-8 keeps its own bytes in the index (a program can
    # open it from there); the page, for people, shows it with a replacement character.
    write_text_atomically(out / INDEX_NAME, index_csv(summary.outcomes), "surrogateescape")
    write_text_atomically(out / REPORT_NAME, batch_report(summary.outcomes), "replace")
    return summary


def _connect(client_class, address):
    """A Dask client, or TimeoutError: ``Client``'s own timeout does not cover a peer that
    accepts the connection but never answers the handshake (anything but a scheduler), so
    the client is made on a thread that is abandoned if it does not finish in time."""
    timeout_s = CONNECT_TIMEOUT_S
    made: list = []
    maker = threading.Thread(target=lambda: made.append(_try(client_class, address, timeout_s)),
                             name="videvent-connect", daemon=True)
    maker.start()
    maker.join(timeout_s * 1.5)  # the client's own timeout, and time to give its reason
    if not made:
        raise TimeoutError(f"no answer within {timeout_s * 1.5:g} s; is it a Dask scheduler?")
    if isinstance(made[0], BaseException):
        raise made[0]
    return made[0]


def _try(client_class, address, timeout_s: float):
    try:
        return client_class(address, timeout=f"{timeout_s}s")
    except BaseException as error:  # handed to the caller, which raises it
        return error


def _submit(client, video: Video, out_dir: str, settings: Settings, plot: bool,
            chunk_seconds: float | None):
    try:
        ranges = chunk_ranges(video, settings, chunk_seconds) if chunk_seconds else []
    except BoundaryMismatch as mismatch:
        return client.submit(scan_video, video, out_dir, settings, plot,
                             _in_one_pass(mismatch), pure=False)
    if not ranges:
        return client.submit(scan_video, video, out_dir, settings, plot, pure=False)
    return client.submit(scan_chunks, video, out_dir, settings, plot, ranges, pure=False)


# -- the archive's outputs -------------------------------------------------------------------
def index_csv(outcomes: list[VideoOutcome]) -> str:
    """One row per event, one per video without events, one per failed video."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(INDEX_COLUMNS)
    for outcome in outcomes:
        video = outcome.video
        spec, result_dir = _text_cell(video.spec), _text_cell(video.result_dir)
        if outcome.error is not None:
            writer.writerow((spec, "failed", "", "", "", "", "", "", "",
                             _text_cell(outcome.error)))
            continue
        if not outcome.events:
            writer.writerow((spec, "ok", "", "", "", "", "", "", result_dir, ""))
        for event in outcome.events:
            writer.writerow((spec, "ok", event["number"], f"{event['start_time_s']:.3f}",
                             f"{event['end_time_s']:.3f}", event["start_frame"],
                             event["end_frame"], f"{event['peak_score']:.3f}", result_dir, ""))
    return buffer.getvalue()


def _text_cell(text: str) -> str:
    """A file name or message for a spreadsheet: one starting with = + - @ (a formula to
    Excel or LibreOffice, which would run it) is quoted with a leading apostrophe."""
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


def _timeline(outcome: VideoOutcome) -> str:
    """An SVG strip: the video's length, its events shaded where they are."""
    width, height = 600, 18
    length = max(outcome.duration_s, max((e["end_time_s"] for e in outcome.events), default=0),
                 1e-9)
    bars = "".join(
        f"<rect x='{width * e['start_time_s'] / length:.1f}' y='0' "
        f"width='{max(2.0, width * (e['end_time_s'] - e['start_time_s']) / length):.1f}' "
        f"height='{height}' fill='#d62728'><title>event {e['number']}: "
        f"{html.escape(e['start_timecode'])}–{html.escape(e['end_timecode'])}, "
        f"peak {e['peak_score']:.1f}</title></rect>" for e in outcome.events)
    return (f"<svg width='{width}' height='{height}' role='img'>"
            f"<rect width='{width}' height='{height}' fill='#eee'/>{bars}</svg>")


def _remove_leftovers(out: Path) -> None:
    """Remove what dead videvent processes left anywhere in ``out`` (``remove_stale``)."""
    for folder, _, _ in os.walk(out):
        remove_stale(folder)


def batch_report(outcomes: list[VideoOutcome]) -> str:
    """Self-contained page: videos ranked by number of events, each with its timeline."""
    escape = html.escape
    good = sorted((o for o in outcomes if o.error is None),
                  key=lambda o: (-len(o.events), o.video.name))
    failed = [o for o in outcomes if o.error is not None]
    events = sum(len(o.events) for o in good)
    parts = [f"<h1>videvent batch: {len(outcomes)} videos, {events} events</h1>",
             "<table><tr><th>video</th><th>events</th><th>length</th><th>timeline</th></tr>"]
    for outcome in good:
        link = escape(f"{outcome.video.result_dir}/report.html")
        parts.append(f"<tr><td><a href='{link}'>{escape(outcome.video.name)}</a></td>"
                     f"<td>{len(outcome.events)}</td><td>{outcome.duration_s:.1f} s</td>"
                     f"<td>{_timeline(outcome)}</td></tr>")
    parts.append("</table>")
    if failed:
        parts.append(f"<h2>{len(failed)} could not be scanned</h2><ul>")
        parts += [f"<li>{escape(o.video.spec)}: {escape(o.error)}</li>" for o in failed]
        parts.append("</ul>")
    return html_page("videvent batch report", "\n".join(parts))



def batch(paths: list[str], out: str | os.PathLike = "videvent-batch",
          settings: Settings | None = None, **options) -> BatchSummary:
    """``videvent batch`` from Python: every video in ``paths`` (files, globs, folders) into
    ``out``; ``options`` as for ``run_batch`` (scheduler, workers, plot, chunk_seconds)."""
    settings = settings or Settings()
    videos = find_videos([os.fspath(p) for p in paths])
    if not videos:
        raise ValueError(f"no videos found in {', '.join(map(os.fspath, paths))}")
    check_settings(videos, settings)
    return run_batch(videos, out, settings, **options)
