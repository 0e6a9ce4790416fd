"""``videvent events``: the events of earlier watches, asked of their event store
(``videvent.output.store``) and printed as a table, JSON lines or CSV."""

from __future__ import annotations

import csv
import json
import sys
from datetime import datetime

import click

from ..choices import KINDS
from ..output.store import SINCE_HELP, EventStore, StoreError, clock_hours, find_store
from ..output.store import parse_since, within_hours
from .options import BadInput

CSV_FIELDS = ("camera", "number", "start", "end", "duration_s", "kind", "regions", "box",
              "peak_score", "start_time_s", "end_time_s", "session_started", "thumbnail",
              "clip")


def _parsed(option: str, parse, value):
    if value is None:
        return None
    try:
        return parse(value)
    except ValueError as error:
        raise click.BadParameter(str(error), param_hint=f"'{option}'") from None


@click.command("events", short_help="List earlier watches' events by time, camera, kind or "
                                     "region.")
@click.argument("place", metavar="[FOLDER]", default=".", type=click.Path())
@click.option("--since", metavar="WHEN", help=f"Events from then on: {SINCE_HELP}.")
@click.option("--until", metavar="WHEN", help="Events that started before then (as --since).")
@click.option("--hours", metavar="HH:MM-HH:MM",
              help="Only those that started between these local times (22:00-06:00).")
@click.option("--camera", metavar="NAME", help="Only this camera's.")
@click.option("--kind", type=click.Choice(KINDS), help="Only events of this kind.")
@click.option("--region", metavar="NAME", help="Only events that touched this region.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object a line.")
@click.option("--csv", "as_csv", is_flag=True, help="CSV with a header line.")
def events_command(place: str, since: str | None, until: str | None, hours: str | None,
                   camera: str | None, kind: str | None, region: str | None, as_json: bool,
                   as_csv: bool) -> None:
    """The events in the event store of FOLDER (default: the current folder; a session's
    folder finds its watch's store above it), oldest first.

    \b
    Every event at the back door at night this week:
      videvent events --camera back_door --since 7d --hours 22:00-06:00
    """
    if as_json and as_csv:
        raise click.UsageError("give --json or --csv, not both")
    since_ts = _parsed("--since", parse_since, since)
    until_ts = _parsed("--until", parse_since, until)
    night = _parsed("--hours", clock_hours, hours)
    try:
        with EventStore(find_store(place), create=False) as store:
            found = store.events(since=since_ts, until=until_ts, camera=camera, kind=kind,
                                 region=region)
    except StoreError as error:
        raise BadInput(str(error)) from None
    if night is not None:
        found = [event for event in found if within_hours(event.start_ts, night)]
    records = [event.to_dict() for event in found]
    if as_json:
        for record in records:
            click.echo(json.dumps(record))
    elif as_csv:
        writer = csv.writer(sys.stdout, lineterminator="\n")
        writer.writerow(CSV_FIELDS)
        for record in records:
            writer.writerow([";".join(record[name]) if name == "regions" else
                             "" if record[name] is None else
                             json.dumps(record[name]) if name == "box" else record[name]
                             for name in CSV_FIELDS])
    else:
        _table(records)


def _table(records: list[dict]) -> None:
    """A table for a person: local times, the event's kind and place, its clip."""
    if not records:
        click.echo("No events.")
        return
    click.echo(f"{'start (local time)':<19}  {'camera':<12}  {'#':>4}  {'kind':<9}  "
               f"{'duration':>8}  {'peak':>6}  {'regions':<12}  clip")
    for record in records:
        start = datetime.fromisoformat(record["start"].replace("Z", "+00:00")).astimezone()
        click.echo(f"{start:%Y-%m-%d %H:%M:%S}  {record['camera']:<12}  "
                   f"{record['number']:>4}  {record['kind'] or '-':<9}  "
                   f"{record['duration_s']:>7.1f}s  "
                   f"{record['peak_score'] if record['peak_score'] is not None else 0:>6.1f}  "
                   f"{','.join(record['regions']) or '-':<12}  {record['clip'] or '-'}")
    click.echo(f"{len(records)} event{'' if len(records) == 1 else 's'}.")
