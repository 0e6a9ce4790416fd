"""MQTT: events, camera status and snapshots for Home Assistant and the like (``--mqtt HOST[:PORT]``).

``mqtts://`` connects over TLS: the broker's certificate and its host name are always
verified, against the system's certificate authorities or only those of a PEM file
(``--mqtt-ca``, a private CA).

Topic layout (prefix ``videvent`` by default; ``<camera>`` is the camera's name with anything
but letters, digits, ``-`` and ``_`` turned into ``_``). It follows Frigate's where it fits,
since that is what Home Assistant users know:

``<prefix>/available``
    ``online`` once connected, ``offline`` on a clean stop or, as the broker's last will,
    when the connection dies. Retained.
``<prefix>/events``
    One JSON message per change of an event, as Frigate's ``frigate/events``:
    ``{"type": "new" | "update" | "end", "before": {...}, "after": {...}}``; ``before`` is the
    event as last published (the same as ``after`` for ``new``). The event fields: ``id``
    (``<camera>-<number>-<start time>``, unique across restarts), ``camera``, ``number``,
    ``start_time`` and ``end_time`` (Unix times, as Frigate's; ``end_time`` is null until the
    end), ``start_time_s`` and ``end_time_s`` (seconds into the source), ``start_timecode``,
    ``peak_score``, ``peak_frame``, ``absorbed``, ``kind``, ``box``, ``regions`` (what and
    where, so far while it is open), ``has_snapshot``, ``thumbnail`` and ``clip`` (paths of
    the files written for it, or null). Updates come when the peak grows, at most one a
    second per event. Only the events an ``AlertFilter`` passes (``--alert-on``,
    ``--alert-regions``), with the motion state, its attributes and the snapshot.
``<prefix>/<camera>/available``
    The camera's availability: ``online`` while it gives pictures (``connected``, ``back``),
    ``offline`` while it is down (lost, or not opened yet at the start and tried again),
    stalled, or finished. Retained: the camera's ``camera_down`` / ``camera_up`` on MQTT.
    Whatever it says, a camera is there only while ``<prefix>/available`` is ``online`` too
    (its last will says ``offline`` if the process dies).
``<prefix>/<camera>/status``
    ``connected``, ``lost``, ``back``, ``stalled`` or ``finished``. Retained.
``<prefix>/<camera>/status/detail``
    The same status as JSON, with what the front end said about it. Retained.
``<prefix>/<camera>/snapshot``
    JPEG of the open event's peak frame, at its start and again at its end. Retained.
``<prefix>/<camera>/stats``
    ``{"fps", "dropped", "latency_ms"}`` about once a second (live front ends).
``<prefix>/<camera>/motion``
    ``ON`` while an event is open, ``OFF`` otherwise (``OFF`` from the start). Retained.
``<prefix>/<camera>/motion/attributes``
    The latest event published, JSON (``ATTRIBUTES``: its kind, box, regions...): the motion
    sensor's attributes in Home Assistant (``json_attributes_topic``). Retained.
``<prefix>/<camera>/score``
    The frame's score, two decimals, at most once a second of video.

Home Assistant finds each camera by MQTT discovery (``--mqtt-discovery``, its default prefix
``homeassistant``; ``off`` for none): retained ``config`` messages under
``<discovery>/<component>/videvent_<camera>/<key>/config`` describe one device per camera
with a ``binary_sensor`` (motion, the ``motion`` topic), a ``sensor`` (the score) and a
``camera`` (the snapshot). Each is available while ``<prefix>/available`` and the camera's
``<prefix>/<camera>/available`` are both ``online``. A camera down at the start is announced
too (and shown unavailable) while it is tried again. Event messages carry
``label`` (``motion``), ``has_clip`` and, when the dashboard serves them (``--serve``), the
web addresses of the thumbnail and clip (``thumbnail_url``, ``clip_url``; without the token,
which a client sends in its ``Authorization: Bearer`` header). Numbers are rounded: times to
the millisecond, scores to two decimals, stats to one.

Nothing here ever blocks the caller for long: messages wait in memory for a thread of their
own to hand them to paho-mqtt while connected; paho's own thread connects, reconnects with
back-off, and sends. Events wait in a queue of their own (``EVENT_QUEUE_LENGTH`` messages, a
hundred minute-long events), in order; every other topic holds a value that the next one replaces (a status,
a snapshot, the stats), so only its latest waits, and a broker away for long never costs an
event its place to stats. An event message is delivered once the broker acknowledged it (QoS
1: its PUBACK), not when paho took it: a broker that stops answering without closing the
connection (frozen, its host gone, the network cut) leaves what was written to it
unacknowledged. That is taken back when the connection is made again and sent again first, in
order; at most ``IN_FLIGHT`` messages are handed to paho unacknowledged, the rest wait here.
The event messages that never reach the broker (pushed out of the full queue, still waiting,
or not acknowledged when the connection closes) are counted, in all and for each camera, and
the watch says so when it ends. A broker that stops answering, or a peer that takes the
connection and never answers as a broker (plain MQTT to a TLS port), is said when it is found,
as one that cannot be reached is. The retained messages are sent again after every
reconnection, so a broker that restarted without persistence has them back.
"""

from __future__ import annotations

import collections
import json
import re
import ssl
import sys
import threading
import time
import uuid
import os
from typing import Any, Callable, NamedTuple

import cv2
import numpy as np
import paho.mqtt.client as paho

from .._version import __version__
from ..kinds import AlertFilter, AlertGate
from .sink import Sink

DEFAULT_PORT = 1883
PASSWORD_VARIABLE = "VIDEVENT_MQTT_PASSWORD"
DEFAULT_PREFIX = "videvent"
DISCOVERY_PREFIX = "homeassistant"       # Home Assistant's own default
SCORE_EVERY_S = 1.0                      # the score topic: at most one value a second of video
MOTION_ON, MOTION_OFF = "ON", "OFF"      # Home Assistant's binary_sensor defaults
# Statuses in which a camera is offline (``connected``, ``back``: it is online).
UNAVAILABLE_STATUSES = ("lost", "stalled", "finished")
EVENT_QUEUE_LENGTH = 10_000              # event messages waiting for the broker, at most
# How long a broker that stopped answering goes unnoticed (paho closes the connection one to
# two keepalives after it last heard from it), and how long a peer that takes the connection
# has to answer: the event messages written to it meanwhile wait unacknowledged. It costs a
# 2-byte PINGREQ only when nothing else was sent for that long.
KEEPALIVE_S = 10
IN_FLIGHT = 20                           # messages handed to paho, not yet acknowledged, at most
RECONNECT_DELAY_S = (1, 10)              # paho's back-off: first and longest wait
UPDATE_EVERY_S = 1.0                     # at most one "update" a second per event
SNAPSHOT_JPEG_QUALITY = 85
ONLINE, OFFLINE = "online", "offline"
STATUSES = ("connected", "lost", "back", "stalled", "finished")
# The event's fields that Home Assistant's motion sensor shows as its attributes.
ATTRIBUTES = ("id", "number", "kind", "box", "regions", "peak_score", "start_time", "end_time")
_NOT_IN_TOPIC = re.compile(r"[^A-Za-z0-9_-]+")

Payload = bytes | str | Callable[[], bytes]


class MqttAddress(NamedTuple):
    """Where the broker is and how to log in: ``tls`` for ``mqtts://`` (port 8883 by default)."""

    host: str
    port: int
    username: str | None = None
    password: str | None = None
    tls: bool = False

    def __str__(self) -> str:                 # as messages show it: never the password
        user = "" if self.username is None else f"{self.username}@"
        return f"{'mqtts://' if self.tls else ''}{user}{self.host}:{self.port}"


def parse_mqtt_address(text: str) -> MqttAddress:
    """``[mqtt://|mqtts://][USER[:PASSWORD]@]HOST[:PORT]`` (``[v6 address]:PORT`` too); the
    password, when USER has none here, from the environment (``PASSWORD_VARIABLE``), so it
    need not be on the command line where ``ps`` shows it. ValueError with a one-line message
    (never showing the password) when it is not one."""
    text = text.strip()
    scheme, _, rest = text.rpartition("://")
    if scheme and scheme.lower() not in ("mqtt", "mqtts"):
        raise ValueError(f"{scheme}://: the broker's address starts with mqtt:// or mqtts:// "
                         f"(TLS), or with neither")
    tls = scheme.lower() == "mqtts"
    username = password = None
    if "@" in rest:
        credentials, rest = rest.rsplit("@", 1)
        username, has_password, password = credentials.partition(":")
        if not username:
            raise ValueError("the user name before '@' is empty")
        password = password if has_password else os.environ.get(PASSWORD_VARIABLE)
    host, port = _host_and_port(rest, 8883 if tls else DEFAULT_PORT)
    return MqttAddress(host, port, username, password, tls)


def tls_context(ca_file: str | os.PathLike | None = None) -> ssl.SSLContext:
    """The TLS of an ``mqtts://`` connection: the broker's certificate and its host name are
    verified against the system's certificate authorities, or, given ``ca_file`` (PEM), only
    against those it holds (a private CA). ValueError (one line) when the file cannot be
    read or holds no certificate."""
    try:
        # Verification on (CERT_REQUIRED, check_hostname), as create_default_context makes it;
        # with cafile, the system's authorities are not loaded: only the file's are trusted.
        return ssl.create_default_context(cafile=None if ca_file is None else os.fspath(ca_file))
    except ssl.SSLError as error:      # before OSError, of which it is one
        reason = ("it holds no certificate in PEM form"
                  if error.reason == "NO_CERTIFICATE_OR_CRL_FOUND" else error.reason or error)
    except OSError as error:
        reason = error.strerror or error
    raise ValueError(f"cannot load the certificate authorities '{ca_file}': {reason}")


def check_prefix(prefix: str) -> str:
    """The topics' first level(s): ValueError for MQTT's wildcards or an empty level, which
    no broker accepts in a topic published to."""
    levels = prefix.strip("/").split("/")
    if any(not level or "+" in level or "#" in level for level in levels):
        raise ValueError(f"{prefix!r}: topic levels, '/' between them, without '+' or '#'")
    return prefix


def _host_and_port(text: str, default_port: int) -> tuple[str, int]:
    host, port = text, default_port
    match = re.fullmatch(r"\[([^\]]+)\](?::(.*))?", text)
    if match:
        host, port_text = match.group(1), match.group(2)
    elif text.count(":") == 1:
        host, port_text = text.split(":")
    else:
        port_text = None
    if port_text is not None:
        if not port_text.isdigit() or not 0 < int(port_text) < 65536:
            raise ValueError(f"{text!r}: the port must be a number from 1 to 65535")
        port = int(port_text)
    if not host or any(c.isspace() or c in "/?#@" for c in host):
        raise ValueError(f"{text!r}: expected HOST or HOST:PORT (e.g. localhost:1883)")
    return host, port


def topic_name(name: str) -> str:
    """A camera name as one level of a topic (no '/', '+', '#' or spaces)."""
    return _NOT_IN_TOPIC.sub("_", name).strip("_") or "camera"


class _Waiting(NamedTuple):
    """A message waiting to be sent; ``camera``: the camera an event message is about."""

    topic: str
    payload: Payload
    retain: bool
    camera: str | None = None


class MqttPublisher:
    """One connection to a broker, shared by the cameras of a process.

    ``publish`` only queues (``ordered``: in the events' queue, else as the topic's latest
    value); a thread sends while connected. ``dropped`` counts the event messages the full
    queue pushed out (or paho refused); at ``close``, ``undelivered`` those the broker never
    acknowledged (still waiting, or sent and unanswered), and ``never_delivered`` both, for
    each camera.
    """

    def __init__(self, host: str, port: int = DEFAULT_PORT, *, prefix: str = DEFAULT_PREFIX,
                 client_id: str | None = None, queue_length: int = EVENT_QUEUE_LENGTH,
                 keepalive: int = KEEPALIVE_S, username: str | None = None,
                 password: str | None = None, tls: bool = False,
                 ca_file: str | os.PathLike | None = None,
                 report: Callable[[str], None] | None = None):
        """``tls``: connect over TLS, trusting the certificate authorities of ``ca_file``
        (PEM) or else the system's (``tls_context``; ValueError, one line, for a file that
        cannot be loaded). ``report(line)``: told once when the broker cannot be reached or
        refuses us (and again after it had worked), so a wrong address or password is said at
        once."""
        if ca_file is not None and not tls:
            raise ValueError("certificate authorities (ca_file) are for a TLS connection")
        # Loaded first: a file that cannot be is refused before any thread starts.
        trusted = tls_context(ca_file) if tls else None
        self.prefix = prefix.strip("/") or DEFAULT_PREFIX
        self.host, self.port = host, port
        self._report = report or (lambda line: None)
        self._trouble: str | None = None              # what was last reported
        self.dropped = 0
        self.undelivered = 0                      # at close: event messages never sent
        self._dropped_of: collections.Counter = collections.Counter()    # camera -> dropped
        # At close: camera -> its event messages that never reached the broker (dropped, or
        # still waiting), so each camera's result folder can say how many of its own.
        self.never_delivered: collections.Counter = collections.Counter()
        self._queue: collections.deque = collections.deque(maxlen=queue_length)
        self._latest: dict[str, tuple[Payload, bool]] = {}   # topic -> its value waiting
        self._retained: dict[str, Payload] = {}       # sent again after every reconnection
        self._wake = threading.Condition()
        # Held while a message is handed to paho and recorded in flight, and while what paho
        # holds is taken back at a reconnection: neither misses what the other does.
        self._handing = threading.Lock()
        # mid -> (its paho info, the message, whether an event): handed to paho and not yet
        # acknowledged by the broker, in the order sent.
        self._in_flight: dict[int, tuple[paho.MQTTMessageInfo, _Waiting, bool]] = {}
        self._acknowledged_early: set[int] = set()    # acks that came before their record
        self._connected = False
        self._answered = False                    # the peer answered this connection's CONNECT
        self._closing = False
        self._stopping = False                    # close: the sender stops even if it could send
        self._client = paho.Client(paho.CallbackAPIVersion.VERSION2,
                                   client_id=client_id or f"videvent-{uuid.uuid4().hex[:12]}")
        self._client.will_set(self.topic("available"), OFFLINE, qos=1, retain=True)
        if username is not None:
            self._client.username_pw_set(username, password)
        if trusted is not None:
            self._client.tls_set_context(trusted)
        self._client.on_connect_fail = self._on_connect_fail
        self._client.reconnect_delay_set(*RECONNECT_DELAY_S)
        self._client.max_queued_messages_set(queue_length + 1000)
        self._client.max_inflight_messages_set(IN_FLIGHT)
        self._client.on_connect = self._on_connect
        self._client.on_disconnect = self._on_disconnect
        self._client.on_publish = self._on_publish
        # connect_async: the first connection too is made on paho's thread, so a broker that is
        # down or slow to answer never holds up the start of a session.
        self._client.connect_async(host, port, keepalive)
        self._client.loop_start()
        self._sender = threading.Thread(target=self._send, name="videvent-mqtt", daemon=True)
        self._sender.start()

    def topic(self, *levels: str) -> str:
        return "/".join((self.prefix, *levels))

    @property
    def connected(self) -> bool:
        return self._connected

    @property
    def waiting(self) -> int:
        """Event messages not yet acknowledged by the broker: queued, or sent and unanswered."""
        with self._wake:
            return len(self._queue) + sum(is_event for *_, is_event in self._in_flight.values())

    def publish(self, topic: str, payload: Payload, *, retain: bool = False,
                ordered: bool = False, camera: str | None = None) -> None:
        """Queue a message (``payload`` may be a function making it, called on the sending
        thread: a JPEG is encoded there, not on the caller's). ``ordered``: every one counts
        (events; ``camera``: the one it is about, for ``never_delivered``); else it replaces
        the topic's value still waiting."""
        with self._wake:
            if retain:
                self._retained[topic] = payload
            if ordered:
                if len(self._queue) == self._queue.maxlen:
                    self._drop(self._queue[0].camera)      # the oldest is pushed out
                self._queue.append(_Waiting(topic, payload, retain, camera))
            else:
                self._latest.pop(topic, None)          # the newest goes last
                self._latest[topic] = (payload, retain)
            self._wake.notify()

    def _drop(self, camera: str | None) -> None:
        """An event message about ``camera`` is lost (called holding ``_wake``)."""
        self.dropped += 1
        self._dropped_of[camera] += 1

    def _pending(self) -> bool:
        return bool(self._queue or self._latest)

    def _next(self) -> tuple[_Waiting, bool]:
        """The next message to send, and whether it is an event message: the events first,
        in order, then the latest values."""
        if self._queue:
            return self._queue.popleft(), True
        topic = next(iter(self._latest))
        payload, retain = self._latest.pop(topic)
        return _Waiting(topic, payload, retain), False

    def _room(self) -> bool:
        """Whether another message may be handed to paho (called holding ``_wake``)."""
        for mid in [mid for mid, (info, _, _) in self._in_flight.items() if _acknowledged(info)]:
            del self._in_flight[mid]
        return len(self._in_flight) < IN_FLIGHT

    def close(self, timeout: float = 2.0) -> None:
        """Say ``offline``, send what is queued if connected and wait for the broker to
        acknowledge it (``timeout`` at most), then disconnect. What it never acknowledged is
        counted undelivered."""
        self.publish(self.topic("available"), OFFLINE, retain=True)
        deadline = time.monotonic() + timeout
        with self._wake:
            self._closing = True
            self._wake.notify_all()
        self._sender.join(timeout)
        with self._wake:
            self._stopping = True                  # what could not go in time stays counted
            self._wake.notify_all()
        self._sender.join(5.0)                     # it never waits on the network
        with self._wake:
            # The acknowledgements of what was handed over (the DISCONNECT would cut them).
            # Polled too: paho marks a message acknowledged just after telling _on_publish.
            while self._connected and self._in_flight and not self._all_acknowledged():
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._wake.wait(min(left, 0.05))
        self._client.disconnect()
        self._client.loop_stop()
        with self._wake:
            self._room()
            unacknowledged = [waiting for _, waiting, is_event in self._in_flight.values()
                              if is_event]
            # Event messages the broker never acknowledged: still waiting, or sent unanswered.
            self.undelivered = len(self._queue) + len(unacknowledged)
            self.never_delivered = self._dropped_of + collections.Counter(
                waiting.camera for waiting in (*unacknowledged, *self._queue))

    def _all_acknowledged(self) -> bool:
        self._room()
        return not self._in_flight

    # -- paho's thread -----------------------------------------------------------------------
    def _say(self, trouble: str | None) -> None:
        if trouble is not None and trouble != self._trouble:
            self._report(f"MQTT broker {self.host}:{self.port}: {trouble}; trying again")
        self._trouble = trouble

    def _on_connect_fail(self, client, userdata) -> None:
        # paho calls this from inside its ``except OSError`` without passing the error on, so
        # the error being handled is why. A certificate that is not trusted is named: trying
        # again will not mend it, the user's --mqtt-ca (or the broker's certificate) will.
        error = sys.exc_info()[1]
        if isinstance(error, ssl.SSLCertVerificationError):
            self._say(f"cannot be reached: its certificate is not trusted "
                      f"({error.verify_message.rstrip('.')})")
        else:
            self._say("cannot be reached")

    def _on_connect(self, client, userdata, flags, reason_code, properties) -> None:
        with self._wake:
            self._answered = True
        if reason_code.is_failure:
            self._say(f"refused the connection ({reason_code})")
            return
        self._say(None)
        # What the last connection left unacknowledged is taken back from paho (which would
        # send it again, but after what is sent from now on) and sent again first, in order.
        # paho calls this before it sends anything on the new connection.
        with self._handing:
            self._client.drop_out_messages()
            with self._wake:
                self._room()
                held = list(self._in_flight.values())
                self._in_flight.clear()
                self._acknowledged_early.clear()
                self._take_back([waiting for _, waiting, is_event in held if is_event])
                self._connected = True
                available = self.topic("available")
                # Online first, then every retained value again (the broker may have lost
                # them), then what was waiting; a value waiting for a topic is its newest.
                again = {available: (ONLINE, True)}
                again.update((topic, (payload, True)) for topic, payload
                             in self._retained.items() if topic != available)
                again.update(self._latest)
                for _, waiting, is_event in held:      # a value unacknowledged, if no newer
                    if not is_event and not waiting.retain:
                        again.setdefault(waiting.topic, (waiting.payload, False))
                self._latest = again
                self._wake.notify_all()

    def _take_back(self, events: list[_Waiting]) -> None:
        """Put event messages sent and never acknowledged back at the head of the queue, in
        order; past its length the oldest are lost, as ever (called holding ``_wake``)."""
        if not events:
            return
        waiting = [*events, *self._queue]
        excess = max(0, len(waiting) - (self._queue.maxlen or len(waiting)))
        for message in waiting[:excess]:
            self._drop(message.camera)
        self._queue.clear()
        self._queue.extend(waiting[excess:])

    def _on_disconnect(self, client, userdata, flags, reason_code, properties) -> None:
        with self._wake:
            was_connected, answered = self._connected, self._answered
            self._connected = self._answered = False
            closing = self._closing
            self._wake.notify_all()
        if closing:
            return
        if was_connected:
            self._say("stopped answering" if reason_code == "Keep alive timeout"
                      else "closed the connection")
        elif not answered and self._trouble != "stopped answering":   # else: still so
            # The connection was taken, then nothing: not a broker, a frozen one, or plain
            # MQTT to a TLS port.
            self._say("took the connection but never answered as an MQTT broker (is it a TLS "
                      "port, for mqtts://?)")

    def _on_publish(self, client, userdata, mid, reason_code, properties) -> None:
        # The broker acknowledged message ``mid`` (paho marks its info so just after this).
        with self._wake:
            if self._in_flight.pop(mid, None) is None:
                self._acknowledged_early.add(mid)
            self._wake.notify_all()

    # -- the sending thread ------------------------------------------------------------------
    def _send(self) -> None:
        while True:
            with self._wake:
                while True:
                    if self._stopping:
                        return
                    if self._pending() and self._connected:
                        if self._room():
                            break
                    elif self._closing:
                        return                         # closing, and nothing can go
                    # Polled while it waits for room: paho marks a message acknowledged just
                    # after telling _on_publish.
                    self._wake.wait(0.05 if self._pending() and self._connected else None)
                message, is_event = self._next()
            payload = message.payload
            try:
                if callable(payload):
                    payload = payload()
            except ValueError:                         # a picture that would not encode
                if is_event:                           # the count is of event messages
                    with self._wake:
                        self._drop(message.camera)
                continue
            with self._handing:
                # QoS 1: delivered once the broker acknowledged it (_on_publish); what it had
                # not when the connection was lost is sent again (_on_connect).
                info = self._client.publish(message.topic, payload, qos=1,
                                            retain=message.retain)
                with self._wake:
                    if info.rc == paho.MQTT_ERR_QUEUE_SIZE:
                        if is_event:
                            self._drop(message.camera)
                    elif info.mid in self._acknowledged_early:
                        self._acknowledged_early.discard(info.mid)
                    else:
                        self._in_flight[info.mid] = (info, message, is_event)


def _acknowledged(info) -> bool:
    """Whether the broker acknowledged a message handed to paho. Never one paho could not send
    because the connection dropped as it was handed over (paho keeps it and says "not
    connected", where ``is_published`` raises): it waits, as one sent and unanswered does, to
    be taken back and sent again first on the next connection (``_on_connect``). Raising there
    ended paho's thread, and with it every later connection."""
    return info.rc in (paho.MQTT_ERR_SUCCESS, paho.MQTT_ERR_AGAIN) and info.is_published()


class MqttSink(Sink):
    """Publishes one camera's events, status, snapshots and stats (layout: module docstring).

    ``publisher``: the shared connection (``MqttSink.connect`` makes one this sink owns and
    closes). ``camera``: the name in topics and ids; by default the session's camera name.
    ``discovery_prefix``: where Home Assistant's discovery messages go (None: none).
    ``media_url(number, kind)``: the web address of an event's ``thumbnail`` or ``clip``
    (the dashboard's), or None. ``alert_filter``: the events published (their messages, the
    motion state, its attributes and the snapshot; ``videvent.kinds.AlertGate`` says when an
    event's begin and end); the score, the stats and the status always are.
    """

    def __init__(self, publisher: MqttPublisher, camera: str | None = None, *,
                 owns_publisher: bool = False,
                 discovery_prefix: str | None = DISCOVERY_PREFIX,
                 media_url: Callable[[int, str], str | None] | None = None,
                 alert_filter: AlertFilter | None = None):
        self.publisher = publisher
        self.camera = camera
        self._gate = AlertGate(alert_filter)
        self._owns_publisher = owns_publisher
        self.discovery_prefix = discovery_prefix
        self._media_url = media_url
        self._score_time: float | None = None          # source time of the last score sent
        self._clock_offset: float | None = None        # Unix time - source time
        self._published: dict[int, dict] = {}          # open events, as last published
        self._last_update: dict[int, float] = {}
        self._threshold = float("inf")
        self._peak: tuple[float, np.ndarray] | None = None   # the coming event's best picture
        self._snapshot_of_peak = False
        self._announced = False

    @classmethod
    def connect(cls, address: str, camera: str | None = None, *,
                prefix: str = DEFAULT_PREFIX,
                ca_file: str | os.PathLike | None = None,
                discovery_prefix: str | None = DISCOVERY_PREFIX) -> "MqttSink":
        """A sink with a connection of its own to ``address`` (``parse_mqtt_address``;
        ``ca_file``: the certificate authorities an ``mqtts://`` broker is checked against;
        ValueError if either is wrong)."""
        broker = parse_mqtt_address(address)
        return cls(MqttPublisher(broker.host, broker.port, prefix=check_prefix(prefix),
                                 username=broker.username, password=broker.password,
                                 tls=broker.tls, ca_file=ca_file), camera,
                   owns_publisher=True, discovery_prefix=discovery_prefix)

    def _topic(self, *levels: str) -> str:
        return self.publisher.topic(topic_name(self.camera or "camera"), *levels)

    # -- the session's calls -----------------------------------------------------------------
    def on_start(self, info) -> None:
        if self.camera is None:
            self.camera = str(getattr(info, "camera", None) or getattr(info, "name", "camera"))
        self._threshold = float(getattr(info, "threshold", self._threshold))
        self._announce()
        self.publisher.publish(self._topic("motion"), MOTION_OFF, retain=True)

    def on_frame(self, frame, score, event_number) -> None:
        if self._clock_offset is None:
            self._clock_offset = time.time() - frame.time_s
        if (self._score_time is None or frame.time_s < self._score_time
                or frame.time_s - self._score_time >= SCORE_EVERY_S):
            self._score_time = frame.time_s
            self.publisher.publish(self._topic("score"), f"{score.score:.2f}")
        if event_number is None and score.score < self._threshold:
            if not self._published:
                self._peak = None                      # what rose above it came to nothing
            return
        # Frames above the threshold before the segmenter confirms an event are its start.
        picture = frame.picture_to_show()
        if picture is not None and (self._peak is None or score.score > self._peak[0]):
            # A reference: sources hand every frame over in an array of its own.
            self._peak = (score.score, picture)
            self._snapshot_of_peak = False

    def on_event_start(self, event) -> None:
        if self._gate.open(event) == "start":
            self._begin(event)

    def _begin(self, event) -> None:
        after = self._describe(event, ended=False, files={})
        self._publish_event("new", after, after)
        self._publish_snapshot()
        self.publisher.publish(self._topic("motion"), MOTION_ON, retain=True)

    def on_event_update(self, event) -> None:
        said = self._gate.open(event)
        if said == "start":                    # passes the filter from now on
            self._begin(event)
            return
        now = time.monotonic()
        if said is None or (now - self._last_update.get(event.number, -UPDATE_EVERY_S)
                            < UPDATE_EVERY_S):
            return
        self._last_update[event.number] = now
        before = self._published.get(event.number)
        after = self._describe(event, ended=False, files={})
        self._publish_event("update", before or after, after)

    def on_event_end(self, event, files: dict[str, str]) -> None:
        said = self._gate.end(event)
        if said == "start and end":            # passes only now (its kind read at the end)
            self._begin(event)
        if said is not None:
            if not self._snapshot_of_peak:
                self._publish_snapshot()
            before = self._published.pop(event.number, None)
            after = self._describe(event, ended=True, files=files)
            self._publish_event("end", before or after, after)
            self.publisher.publish(self._topic("motion"), MOTION_OFF, retain=True)
        self._last_update.pop(event.number, None)
        self._peak = None

    def on_status(self, status: str, detail: dict) -> None:
        self._announce()     # a camera down at the start is announced, unavailable
        self.publisher.publish(self._topic("available"), OFFLINE if status in
                               UNAVAILABLE_STATUSES else ONLINE, retain=True)
        self.publisher.publish(self._topic("status"), status, retain=True)
        message = {"status": status, "time": time.time(), **(detail or {})}
        self.publisher.publish(self._topic("status", "detail"),
                               json.dumps(message, default=str), retain=True)

    def on_stats(self, stats: dict) -> None:
        rounded = {key: round(value, 1) if isinstance(value, float) else value
                   for key, value in stats.items()}
        self.publisher.publish(self._topic("stats"), json.dumps(rounded, default=str))

    def close(self) -> None:
        if self._owns_publisher:
            self.publisher.close()

    # -- messages ----------------------------------------------------------------------------
    def _describe(self, event, *, ended: bool, files: dict[str, str]) -> dict[str, Any]:
        offset = self._clock_offset if self._clock_offset is not None else 0.0
        camera = self.camera or "camera"
        start = offset + event.start_time_s
        media = self._media_url or (lambda number, kind: None)
        return {
            "id": f"{topic_name(camera)}-{event.number}-{start:.3f}",
            "camera": camera,
            "number": event.number,
            "label": "motion",
            "start_time": round(start, 3),
            "end_time": round(offset + event.end_time_s, 3) if ended else None,
            "start_time_s": round(event.start_time_s, 3),
            "end_time_s": round(event.end_time_s, 3) if ended else None,
            "start_timecode": event.to_dict()["start_timecode"],
            "peak_score": round(float(event.peak_score), 2),
            "peak_frame": int(event.peak_frame),
            "absorbed": bool(event.absorbed),
            # What and where (``videvent.kinds``): so far while it is open, final at its end.
            "kind": event.kind,
            "box": event.box,
            "regions": list(event.regions or ()),
            "has_snapshot": self._peak is not None,
            "has_clip": bool(files.get("clip")),
            "thumbnail": files.get("thumbnail"),
            "clip": files.get("clip"),
            # The dashboard shows an open event's thumbnail before its file is written.
            "thumbnail_url": media(event.number, "thumbnail"),
            "clip_url": media(event.number, "clip") if files.get("clip") else None,
        }

    def _announce(self) -> None:
        """Home Assistant's discovery messages for this camera, once: one device, three
        entities (none without a discovery prefix)."""
        if self._announced or self.discovery_prefix is None:
            return
        self._announced = True
        camera = topic_name(self.camera or "camera")
        device = {"identifiers": [f"videvent_{camera}"], "name": self.camera or camera,
                  "manufacturer": "videvent", "model": "event detector",
                  "sw_version": __version__}
        availability = [{"topic": self.publisher.topic("available")},
                        {"topic": self._topic("available")}]
        entities = {
            ("binary_sensor", "motion"): {"name": "Motion", "device_class": "motion",
                                          "state_topic": self._topic("motion"),
                                          "json_attributes_topic":
                                              self._topic("motion", "attributes"),
                                          "payload_on": MOTION_ON, "payload_off": MOTION_OFF},
            ("sensor", "score"): {"name": "Score", "state_topic": self._topic("score"),
                                  "state_class": "measurement"},
            ("camera", "snapshot"): {"name": "Snapshot", "topic": self._topic("snapshot")},
        }
        for (component, key), config in entities.items():
            unique_id = f"videvent_{camera}_{key}"
            message = {**config, "unique_id": unique_id, "object_id": unique_id,
                       "availability": availability, "availability_mode": "all",
                       "device": device}
            self.publisher.publish(
                f"{self.discovery_prefix}/{component}/videvent_{camera}/{key}/config",
                json.dumps(message), retain=True)

    def _publish_event(self, kind: str, before: dict, after: dict) -> None:
        if kind != "end":
            self._published[after["number"]] = after
        self.publisher.publish(self.publisher.topic("events"),
                               json.dumps({"type": kind, "before": before, "after": after}),
                               ordered=True, camera=self.camera)
        # The motion sensor's attributes in Home Assistant: the latest event alerted.
        self.publisher.publish(self._topic("motion", "attributes"), json.dumps(
            {key: after[key] for key in ATTRIBUTES}), retain=True)

    def _publish_snapshot(self) -> None:
        if self._peak is None:
            return
        picture = self._peak[1]
        self._snapshot_of_peak = True
        self.publisher.publish(self._topic("snapshot"), lambda: _jpeg(picture), retain=True)


def _jpeg(picture: np.ndarray) -> bytes:
    ok, encoded = cv2.imencode(".jpg", picture, [cv2.IMWRITE_JPEG_QUALITY, SNAPSHOT_JPEG_QUALITY])
    if not ok:
        raise ValueError("the snapshot could not be encoded as JPEG")
    return encoded.tobytes()
