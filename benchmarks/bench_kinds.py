"""Benchmark: is every light switch of the dev set called a light, and nothing else? Run by hand.

    python benchmarks/bench_kinds.py [--devset FOLDER] [CLIP ...]

Each clip of the development set (``../shared/datasets/devset``; skipped when absent) is scanned
as ``videvent run`` scans it (``videvent.detect``, the default settings). Per clip, each event:
its core and padded frames, its kind (``videvent.kinds``), its box and the labelled light
switches (``light_switch`` in clips.json: its ``on`` and ``off`` ranges) its padded span
overlaps. Then the two counts of issue 52, item 4: the labelled switches given ``light`` (each
overlapped by events that are all lights) of how many, and the events that overlap no switch
yet were given ``light`` (on the dev set these are people, vehicles, a curtain, a bag: none
should be).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from videvent import Settings, detect  # noqa: E402

DEVSET = HERE.parent.parent / "shared" / "datasets" / "devset"


def switches(clip: dict) -> list[tuple[str, int, int]]:
    """The clip's labelled light switches: (on or off, first frame, last frame)."""
    found = []
    for key in ("on", "off"):
        ranges = (clip.get("light_switch") or {}).get(key) or []
        if ranges and isinstance(ranges[0], int):      # one range, not a list of them
            ranges = [ranges]
        found += [(key, first, last) for first, last in ranges]
    return sorted(found, key=lambda switch: switch[1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("clips", nargs="*", help="clip names (default: all 15)")
    parser.add_argument("--devset", type=Path, default=DEVSET,
                        help="the development set's folder (default: %(default)s)")
    args = parser.parse_args()
    devset = args.devset
    index = devset / "clips.json"
    if not index.is_file():
        print(f"skipped: the development set is not here ({devset})")
        return 0
    clips = json.loads(index.read_text())
    given = total = wrong = unswitched = 0
    for name in args.clips or list(clips):
        clip = clips[name]
        labelled = switches(clip)
        result = detect(devset / clip["folder"] / clip["source"], Settings())
        print(f"{name}: {len(result.events)} events, switches {labelled or 'none'}")
        kinds_of = {switch: [] for switch in labelled}
        for event in result.events:
            overlapped = [switch for switch in labelled
                          if switch[1] <= event.end_frame and switch[2] >= event.start_frame]
            for switch in overlapped:
                kinds_of[switch].append(event.kind)
            unswitched += not overlapped
            wrong += not overlapped and event.kind == "light"
            print(f"  #{event.number:<3} core {event.core_start_frame}-{event.core_end_frame} "
                  f"(span {event.start_frame}-{event.end_frame})  {event.kind:9} "
                  f"box {event.box}  switch {overlapped or '-'}")
        for switch, kinds in kinds_of.items():
            total += 1
            given += bool(kinds) and all(kind == "light" for kind in kinds)
            if not (kinds and all(kind == "light" for kind in kinds)):
                print(f"  switch {switch} given {kinds or 'no event'}")
    share = f" ({100 * given / total:.0f}%)" if total else ""
    print(f"\nlabelled light switches given 'light': {given} of {total}{share}")
    print(f"events overlapping no light switch given 'light': {wrong} of {unswitched}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
