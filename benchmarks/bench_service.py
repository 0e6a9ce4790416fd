"""Benchmark of ``videvent watch`` as a service (issue 29's done-when; run by hand, never a test).

    python benchmarks/bench_service.py [--minutes 10] [--cameras 4] [--outages 2]
                                       [--clip sample_videos/walker.mp4] [--keep]

Four cameras (the walker clip looped at its real pace, each served over HTTP on 127.0.0.1 by an
ffmpeg of its own) watched by one ``videvent watch --mqtt`` for ten minutes, while
the first camera and the mosquitto broker are each killed (SIGKILL) and restarted twice, at
spread moments, each outage 20 s. A subscriber with a persistent session (QoS 1) counts the
event messages (``videvent/events``) that arrive; they are compared with the events every
camera's folder holds (``events.jsonl``: each ended event must have its ``new`` and its ``end``
message) and with what the watch itself counted as never delivered. The RSS of the watch
process is sampled every 5 s: its peak in the second minute against the last minute.
Prints the figures; exits 0 whatever they are.
"""

from __future__ import annotations

import argparse
import getpass
import json
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import paho.mqtt.client as paho

from bench_watch import free_port, rss_mib, serve

ROOT = Path(__file__).resolve().parent.parent
MOSQUITTO = shutil.which("mosquitto") or "/usr/sbin/mosquitto"
OUTAGE_S = 20.0
SAMPLE_EVERY_S = 5.0


class Camera:
    """A clip looped at its real pace as MPEG-TS over HTTP on a port of its own (ffmpeg's
    server, ``bench_watch.serve``); ``kill()`` takes it away at once, ``start()`` brings it
    back on the same port."""

    def __init__(self, clip: Path):
        self.clip, self.port = clip, free_port()
        self.start()

    def start(self) -> None:
        self.server = serve(self.clip, self.port, None, loop=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def kill(self) -> None:
        self.server.kill()
        self.server.wait()


class Broker:
    """mosquitto on a free port, saving its state on every change, so that SIGKILL loses
    none of what it had accepted (the subscriber's session and the messages queued for it)."""

    def __init__(self, folder: Path):
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.config = folder / "mosquitto.conf"
        self.config.write_text(f"listener {self.port} 127.0.0.1\nallow_anonymous true\n"
                               f"persistence true\npersistence_location {folder}/\n"
                               f"autosave_on_changes true\nautosave_interval 1\n"
                               f"max_queued_messages 0\nuser {getpass.getuser()}\n")
        self.process = None

    def start(self) -> None:
        self.process = subprocess.Popen([MOSQUITTO, "-c", str(self.config)],
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return
            except OSError:
                time.sleep(0.05)
        raise SystemExit("mosquitto did not start")

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait()


class Subscriber:
    """Every message on videvent/events, QoS 1, in a session the broker keeps (and saves)."""

    def __init__(self, port: int):
        self.messages: list[dict] = []
        self.lock = threading.Lock()
        self.subscribed = threading.Event()
        self.client = paho.Client(paho.CallbackAPIVersion.VERSION2,
                                  client_id="bench-service-subscriber", clean_session=False)
        self.client.on_connect = lambda client, *_: client.subscribe("videvent/events", qos=1)
        self.client.on_subscribe = lambda *_: self.subscribed.set()
        self.client.on_message = self._record
        self.client.reconnect_delay_set(1, 2)
        self.client.connect_async("127.0.0.1", port)
        self.client.loop_start()

    def _record(self, client, userdata, message) -> None:
        with self.lock:
            self.messages.append(json.loads(message.payload))

    def close(self) -> None:
        self.client.disconnect()
        self.client.loop_stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=10)
    parser.add_argument("--cameras", type=int, default=4)
    parser.add_argument("--outages", type=int, default=2)
    parser.add_argument("--clip", type=Path, default=ROOT / "sample_videos" / "walker.mp4")
    parser.add_argument("--keep", action="store_true", help="keep the watch's result folders")
    args = parser.parse_args()
    if not shutil.which("ffmpeg") or not Path(MOSQUITTO).exists():
        raise SystemExit("needs ffmpeg and mosquitto")
    work = Path(tempfile.mkdtemp(prefix="videvent-bench-service-"))
    seconds = args.minutes * 60
    # The outages, spread over the run: the camera's and the broker's alternate.
    moments = [seconds * (k + 1) / (2 * args.outages + 1) for k in range(2 * args.outages)]
    plan = sorted([(at, "camera") for at in moments[0::2]] + [(at, "broker") for at in moments[1::2]])

    broker = Broker(work)
    broker.start()
    subscriber = Subscriber(broker.port)
    if not subscriber.subscribed.wait(20):
        raise SystemExit("the subscriber did not subscribe")
    cameras = [Camera(args.clip) for _ in range(args.cameras)]
    out = work / "watch"
    process = subprocess.Popen(
        [sys.executable, "-m", "videvent", "watch", *(camera.url for camera in cameras),
         *(arg for n in range(args.cameras) for arg in ("--name", f"cam{n + 1}")),
         "-d", str(out), "-q", "--max-reconnects", "1000", "--no-clips",
         "--mqtt", f"127.0.0.1:{broker.port}"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    started = time.monotonic()
    memory: list[tuple[float, float]] = []
    outages = []
    try:
        for at, what in plan + [(seconds, "end")]:
            while time.monotonic() - started < at:
                memory.append((time.monotonic() - started, rss_mib(process.pid)))
                time.sleep(min(SAMPLE_EVERY_S, max(0.0, at - (time.monotonic() - started))))
            if what == "end":
                break
            print(f"{time.monotonic() - started:6.0f} s: {what} killed", flush=True)
            (cameras[0].kill if what == "camera" else broker.kill)()
            time.sleep(OUTAGE_S)
            (cameras[0].start if what == "camera" else broker.start)()
            outages.append((at, what))
            print(f"{time.monotonic() - started:6.0f} s: {what} back", flush=True)
    finally:
        process.send_signal(signal.SIGINT)
        try:
            _, stderr = process.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            process.kill()
            _, stderr = process.communicate()
        # Whatever the watch sent last, given a moment to reach the subscriber.
        time.sleep(5)
        subscriber.close()
        for camera in cameras:
            camera.kill()
        broker.process.terminate()
        broker.process.wait()

    ended, undelivered = {}, {}
    for n in range(args.cameras):
        folder = out / f"cam{n + 1}"
        ended[folder.name] = [json.loads(line) for line in
                              (folder / "events.jsonl").read_text().splitlines()]
        undelivered[folder.name] = json.loads((folder / "events.json").read_text()).get(
            "mqtt_undelivered_event_messages")
    with subscriber.lock:
        received = list(subscriber.messages)
    kinds = {}
    for message in received:
        after = message["after"]
        kinds.setdefault((after["camera"], after["number"], after["start_time_s"]),
                         set()).add(message["type"])
    complete = missing_new = missing_end = 0
    for camera, events in ended.items():
        for event in events:
            seen = next((found for (name, number, start), found in kinds.items()
                         if name == camera and number == event["number"]
                         and abs(start - round(event["start_time_s"], 3)) < 0.002), set())
            missing_new += "new" not in seen
            missing_end += "end" not in seen
            complete += {"new", "end"} <= seen
    total = sum(len(events) for events in ended.values())
    second = [rss for at, rss in memory if 60 <= at < 120]
    last = [rss for at, rss in memory if at >= seconds - 60]
    print(f"\n{args.cameras} cameras, {args.minutes:g} min, camera 1 and the broker each killed "
          f"(SIGKILL) and restarted {args.outages} times, {OUTAGE_S:g} s each")
    print(f"events ended (events.jsonl): {total} "
          f"({', '.join(f'{name} {len(events)}' for name, events in ended.items())})")
    print(f"event messages received: {len(received)}; events with both new and end: {complete} "
          f"of {total}; missing new: {missing_new}, missing end: {missing_end}")
    print(f"never delivered, as the watch counted them: {undelivered}")
    print(f"watch RSS: second minute peak {max(second, default=0):.0f} MiB, last minute peak "
          f"{max(last, default=0):.0f} MiB, overall peak {max(r for _, r in memory):.0f} MiB")
    print(f"watch exit code {process.returncode}; stderr lines: {len(stderr.splitlines())}")
    for line in stderr.splitlines()[:20]:
        print(f"   {line}")
    if args.keep:
        print(f"results kept in {out}")
    else:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
