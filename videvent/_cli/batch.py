"""``videvent batch``: ``run`` over an archive of videos on Dask distributed.

Parsing and printing only: the work is in ``videvent.batch``.
"""

from __future__ import annotations

import math
import os

import click

from ..settings import SettingError
from .options import BadInput, GroupedCommand, no_plot_option, run_options, settings_from


def _progress_line(quiet: bool):
    def report(outcome, done: int, total: int, frames_per_second: float) -> None:
        if quiet:
            return
        if outcome.error is not None:
            what = f"failed: {outcome.error}"
        elif outcome.skipped:
            what = "already done, skipped"
        else:
            what = f"{len(outcome.events)} event{'' if len(outcome.events) == 1 else 's'}"
            if outcome.chunks > 1:
                what += f" (scored in {outcome.chunks} chunks, {outcome.rescored} again)"
            if outcome.note:
                what += f" ({outcome.note})"
        rate = f" | {frames_per_second:.0f} frames/s over all workers" if frames_per_second else ""
        click.echo(f"[{done}/{total}] {outcome.video.name}: {what}{rate}", err=True)
    return report


def _finite(_ctx, _param, value: float | None) -> float | None:
    if value is not None and not math.isfinite(value):
        raise click.BadParameter(f"{value!r} is not a finite number of minutes")
    return value


@click.command("batch", cls=GroupedCommand, short_help="Scan an archive of videos in parallel on Dask.")
@click.argument("paths", nargs=-1, required=True)
@click.option("--scheduler", default=None, metavar="ADDRESS",
              help="Dask scheduler to use (e.g. tcp://host:8786); default: a local cluster, "
                   "one worker process per core.")
@click.option("--workers", type=click.IntRange(1), default=None,
              help="Worker processes of the local cluster (default: the number of cores).")
@click.option("-d", "--out", "--output-dir", "out", type=click.Path(file_okay=False),
              default="videvent-batch", show_default=True,
              help="Where the result folders, index.csv and batch_report.html go.")
@click.option("--chunk-minutes", type=click.FloatRange(0, min_open=True), default=None,
              callback=_finite,
              help="Score videos longer than this in parallel chunks of this length, each "
                   "warmed up on the detector's look-back before it (five background spans: "
                   "5 minutes by default); events as `run` finds them (see docs/batch.md). At least "
                   "one background span (--background-span, 1 minute by default; the "
                   "window's -w frames at least): a shorter chunk would be mostly warm-up.")
@no_plot_option
@click.option("-q", "--quiet", is_flag=True, help="Print nothing but errors and warnings.")
@run_options
def batch_command(paths: tuple[str, ...], scheduler: str | None, workers: int | None, out: str,
                  chunk_minutes: float | None, no_plot: bool, quiet: bool, **options) -> None:
    """Scan every video in PATHS (files, globs, folders searched recursively) on Dask.

    Each video gets what `run` writes, in OUT/<name>.videvent/; the archive gets OUT/index.csv
    (one row per event, one per failed video) and OUT/batch_report.html. Videos with complete
    results from the same settings are skipped, so a killed batch resumes.
    """
    from ..batch import check_settings, find_videos, run_batch

    settings = settings_from(options)
    try:
        import distributed  # noqa: F401 - the optional extra: say how to get it, up front
    except ImportError:
        raise BadInput("videvent batch needs Dask distributed: pip install "
                       "'videvent[batch]'") from None
    try:
        videos = find_videos(list(paths))
        if not videos:
            raise ValueError(f"no videos found in {', '.join(paths)}")
        check_settings(videos, settings,
                       None if chunk_minutes is None else chunk_minutes * 60)
        summary = run_batch(videos, out, settings, scheduler=scheduler, workers=workers,
                            plot=not no_plot,
                            chunk_seconds=None if chunk_minutes is None else chunk_minutes * 60,
                            progress=_progress_line(quiet))
    except SettingError as error:
        raise click.UsageError(str(error)) from None
    except ValueError as error:
        raise BadInput(str(error).splitlines()[0]) from None
    failed = summary.failed
    if len(failed) == len(videos):
        raise BadInput(f"none of the {len(videos)} videos could be scanned; see "
                       f"{os.path.join(out, 'index.csv')}")
    if not quiet:
        events = sum(len(o.events) for o in summary.outcomes)
        click.echo(f"{len(videos)} videos, {events} events, {summary.frames_scanned} frames "
                   f"scanned in {summary.seconds:.1f} s. Results in {out}")
    if failed:
        click.echo(f"videvent: warning: {len(failed)} of {len(videos)} videos failed; see "
                   f"{os.path.join(out, 'index.csv')}", err=True)
