"""The dashboard's web server: aiohttp on a thread and event loop of its own.

Routes (all behind the token check when a token is set):

- ``GET /``: the page; ``GET /static/...``: its script and style, shipped in the package.
- ``GET /api/cameras``: each camera's size, threshold, status, statistics and recent scores.
- ``GET /api/events``: every event of the session so far, newest first (open ones included),
  so a reloaded page shows them again, and those of earlier watches read from the cameras'
  result folders (``past``: true; see ``Dashboard.add_camera``).
- ``GET /api/stream``: server-sent events, one JSON object per message, ``type`` one of
  ``scores`` (a batch of ``[time_s, score]`` points), ``status``, ``stats``, ``event``
  (``state`` start / update / end) and ``camera`` (a camera started).
- ``GET /cameras/{i}/mjpeg``: the annotated live picture as MJPEG; ``/cameras/{i}/picture.jpg``:
  the latest one.
- ``GET /cameras/{i}/events/{n}/thumbnail`` and ``.../clip``: only files the session reported
  for that event (and, before the thumbnail is written, the picture of the event's start);
  ``/cameras/{i}/past/{k}/...``: those of the k-th earlier event, found in its own folder.
- ``GET``/``POST /cameras/{i}/region``: the camera's region polygons, read from and saved to the
  region file configured for it (never a path from the request); the POST takes JSON
  ``{"polygons": [[[x, y], ...], ...]}``.
- ``GET /healthz``: 200 while every camera gives pictures, else 503 (within
  ``health.SILENT_AFTER_S`` of a camera going silent), with each camera's state as JSON;
  ``GET /metrics``: the cameras' figures in Prometheus' text format (``health``).

Access: on a loopback address without a token, only requests naming a loopback host are
served (a web page elsewhere cannot reach the dashboard by renaming itself, DNS rebinding).
Bound to any other address, a token is required (one is generated when none is given; see
`Dashboard.token`). It is checked on every request, streams included, and may be given as the
``token`` query parameter (the page opened with ``/?token=...`` puts it on every request it
makes: no cookie, which would reach every service on the host) or an
``Authorization: Bearer <token>`` header; the page's script and style (``/static/``) are
served without it. Missing: 401; wrong: 403. ``/healthz`` is served without the token to a
client on this machine (a loopback address: a container's health check, a local monitor), or
to anyone with ``health_open`` ``"anyone"``; it tells only the cameras' names and states.

Connections (`connections.ConnectionLimits`): capped in all and per client address, with a
request timeout; a connection whose request passed the token check is *authenticated*: never
evicted, and a quarter of the cap is kept for such connections. Past a cap, an idle
connection that is not authenticated (waiting for a request; half-sent ones first, of the
address holding the most, the longest idle first) is closed to make room, so half-sent
requests reopened without end cannot keep a client with the token out.
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import logging
import re
import secrets
import socket
import ssl
import sys
import threading
from collections import deque
from pathlib import Path

from aiohttp import web

from .camera import MEDIA_KINDS, CameraState, DashboardSink
from .connections import UNAUTHENTICATED_SHARE, ConnectionLimits
from .health import DiskUse, Gauge, health, metrics_text
from ..regions import RegionError, check_region, load_region_file, parse_polygon
from ..regions import save_region_file

STATIC_DIR = Path(__file__).resolve().parent / "static"
UPDATE_EVERY_S = 0.2          # how often batched scores and messages go to the pages
KEEPALIVE_S = 15.0
LISTENER_BACKLOG = 2000       # messages queued for one slow page before the oldest go
SHUTDOWN_S = 2.0
MAX_REGION_BODY = 64 * 1024   # a region editor's polygons, in bytes: hundreds of points
HEALTH_ACCESS = ("local", "anyone")   # who may ask /healthz without the token
PROMETHEUS_TEXT = "text/plain; version=0.0.4; charset=utf-8"


class _OneLine(logging.Handler):
    """aiohttp's own log of a request it refused before any handler (a request line or header
    longer than 8190 bytes, more than 128 headers, bytes that are no HTTP): one line on
    stderr, as the handlers' failures are, never its traceback nor the bytes it quotes."""

    def emit(self, record: logging.LogRecord) -> None:
        error = record.exc_info[1] if record.exc_info else None
        what = record.getMessage()
        if error is not None:
            detail = getattr(error, "message", None) or str(error)
            # Not the bytes it quotes: a request line may hold the token.
            detail = re.split(r":? (?:bytearray\()?b['\"]", detail)[0]
            what += f": {type(error).__name__}: {detail}"
        print(f"videvent: dashboard: {' '.join(what.split())[:240]}", file=sys.stderr)


_HTTP_LOG = logging.getLogger("videvent.dashboard.http")
_HTTP_LOG.propagate = False
_HTTP_LOG.setLevel(logging.WARNING)
if not _HTTP_LOG.handlers:
    _HTTP_LOG.addHandler(_OneLine())


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def posted_polygons(body, width: int, height: int,
                    working: tuple[int, int] | None = None) -> list:
    """The polygons of a region editor's POST (``{"polygons": [[[x, y], ...], ...]}``), each
    checked against the camera's frame and the ``working`` picture its detector sees by
    ``check_region``, the check ``-R`` makes when the next session reads the file (a region
    saved here never stops that session from starting); RegionError naming the first problem.
    An empty list clears the region: the whole picture is watched."""
    polygons = body.get("polygons") if isinstance(body, dict) else None
    if not isinstance(polygons, list):
        raise RegionError("no polygon list given")
    checked = [parse_polygon(polygon if isinstance(polygon, list) else [], f"polygon {number}")
               for number, polygon in enumerate(polygons, start=1)]
    for number, polygon in enumerate(checked, start=1):
        check_region(polygon, width, height, working, f"polygon {number}")
    return checked


def _json(data, status: int = 200) -> web.Response:
    return web.json_response(data, status=status, dumps=lambda value: json.dumps(value,
                                                                                    allow_nan=False))


def _refuse(status: int, message: str) -> web.Response:
    return _json({"error": message}, status)


class Dashboard:
    """A live page for the cameras of one session.

    ``start()`` serves it and returns its URL (with ``?token=...`` when a token is needed);
    ``add_camera(name)`` gives the sink to feed each camera's frames, events and status to;
    ``stop()`` ends the streams and the server. Binding a non-loopback ``host`` without a
    ``token`` generates one, in ``token`` (and ``token_generated`` is True) for the caller
    to print. ``region_file``: where the region editor saves, for cameras not given their own.
    ``health_open``: who may ask ``/healthz`` without the token, ``"local"`` (a client on this
    machine) or ``"anyone"``. ``add_gauge`` adds a figure of the process to ``/metrics``.
    """

    def __init__(self, host: str = "127.0.0.1", port: int = 0, token: str | None = None,
                 region_file: str | Path | None = None,
                 tls: tuple[str | Path, str | Path] | None = None,
                 health_open: str = "local"):
        """``tls``: (certificate chain, private key) files, PEM: served over HTTPS.
        ValueError (one line) if they cannot be loaded, or ``health_open`` is not one of
        ``HEALTH_ACCESS``."""
        if health_open not in HEALTH_ACCESS:
            raise ValueError(f"health_open must be one of {', '.join(HEALTH_ACCESS)}, got "
                             f"{health_open!r}")
        self.health_open = health_open
        self._gauges: dict[str, Gauge] = {}
        self._disk = DiskUse()
        self.host, self.port = host, port
        self._tls = None
        if tls is not None:
            certificate, key = tls
            self._tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            try:
                self._tls.load_cert_chain(certificate, key)
            except (OSError, ssl.SSLError) as error:
                raise ValueError(f"cannot load the dashboard's certificate '{certificate}' and "
                                 f"key '{key}': {getattr(error, 'strerror', None) or error}"
                                 ) from None
        self.token_generated = not token and not is_loopback(host)
        self.token = secrets.token_urlsafe(24) if self.token_generated else (token or None)
        self.region_file = None if region_file is None else Path(region_file)
        self.url: str | None = None
        self._cameras: list[CameraState] = []
        self._sinks: list[DashboardSink] = []
        self._outbox: deque = deque(maxlen=10_000)   # appended on session threads
        self._listeners: set[asyncio.Queue] = set()
        self._picture_waiters: dict[int, asyncio.Future] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._runner: web.AppRunner | None = None
        self._ticker: asyncio.Task | None = None
        self._closing = False
        self._page = (STATIC_DIR / "index.html").read_text()
        # With a token, a quarter of the connections is kept for those that showed it, and
        # idle connections that did not are closed to make room (see connections.py).
        self.limits = ConnectionLimits(
            unauthenticated_share=UNAUTHENTICATED_SHARE if self.token else 1.0)

    # -- the session side ------------------------------------------------------------------

    def add_camera(self, name: str, region_file: str | Path | None = None,
                   history: list[Path] = (), store: Path | None = None) -> DashboardSink:
        """The sink for camera ``name``; ``region_file`` overrides the dashboard's; its
        earlier watches' events, which it lists, come from the event ``store`` or, without
        one, from ``history``, the result folders of those watches."""
        own = Path(region_file) if region_file is not None else self.region_file
        camera = CameraState(len(self._cameras), name, own)
        camera.load_past(list(history), store)
        sink = DashboardSink(camera, self._outbox.append, self._picture_encoded)
        self._cameras.append(camera)
        self._sinks.append(sink)
        self._outbox.append({"type": "camera", "camera": camera.describe()})
        return sink

    def add_gauge(self, name: str, help_text: str, read) -> None:
        """A figure of the process on ``/metrics``: ``read()`` its value now (None: left out)."""
        self._gauges[name] = (help_text, read)

    def _picture_encoded(self, camera: CameraState) -> None:
        loop = self._loop
        if loop is not None and not loop.is_closed():
            try:
                loop.call_soon_threadsafe(self._wake_picture_waiters, camera.index)
            except RuntimeError:   # the loop closed meanwhile: nobody is watching
                pass

    # -- starting and stopping -------------------------------------------------------------

    def start(self) -> str:
        """Serve the page; returns its URL. OSError when the address cannot be bound."""
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True,
                                        name="dashboard-server")
        self._thread.start()
        try:
            asyncio.run_coroutine_threadsafe(self._serve(), self._loop).result()
        except BaseException:
            self._end_loop()
            raise
        # Bound to every address, the address another machine can use: this one's name.
        host = socket.gethostname() if self.host in ("0.0.0.0", "::", "") else self.host
        shown = f"[{host}]" if ":" in host else host
        scheme = "https" if self._tls is not None else "http"
        self.url = (f"{scheme}://{shown}:{self.port}/"
                    + (f"?token={self.token}" if self.token else ""))
        return self.url

    def media_url(self, camera_index: int, number: int, kind: str) -> str | None:
        """The web address of an event's ``thumbnail`` or ``clip`` once serving (None before),
        without the token: it goes to other programs (MQTT), which send it in a header."""
        if self.url is None:
            return None
        return f"{self.url.split('?')[0]}cameras/{camera_index}/events/{number}/{kind}"

    def stop(self) -> None:
        """End the streams, the server and the cameras' encoder threads."""
        for sink in self._sinks:
            sink.close()
        if self._loop is None:
            return
        asyncio.run_coroutine_threadsafe(self._shutdown(), self._loop).result()
        self._end_loop()

    def _end_loop(self) -> None:
        loop, self._loop = self._loop, None
        loop.call_soon_threadsafe(loop.stop)
        self._thread.join(timeout=10)
        loop.close()

    async def _serve(self) -> None:
        app = web.Application(middlewares=[self.limits.middleware, self._last_resort,
                                           self._guard])
        app.add_routes([
            web.get("/", self._index),
            web.get("/api/cameras", self._list_cameras),
            web.get("/api/events", self._list_events),
            web.get("/api/stream", self._stream),
            web.get("/healthz", self._health),
            web.get("/metrics", self._metrics),
            web.get("/cameras/{camera:\\d+}/mjpeg", self._mjpeg),
            web.get("/cameras/{camera:\\d+}/picture.jpg", self._picture),
            web.get("/cameras/{camera:\\d+}/events/{number:\\d+}/{kind}", self._media),
            web.get("/cameras/{camera:\\d+}/past/{number:\\d+}/{kind}", self._past_media),
            web.get("/cameras/{camera:\\d+}/region", self._read_region),
            web.post("/cameras/{camera:\\d+}/region", self._save_region),
            web.static("/static", STATIC_DIR, follow_symlinks=False),
        ])
        self._runner = self.limits.runner(app, handle_signals=False, access_log=None,
                                          shutdown_timeout=SHUTDOWN_S, logger=_HTTP_LOG)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port, ssl_context=self._tls)
        try:
            await site.start()
        except BaseException:
            await self._runner.cleanup()
            raise
        self.port = self._runner.addresses[0][1]   # the one bound, when asked for port 0
        self._ticker = asyncio.create_task(self._send_updates())

    async def _shutdown(self) -> None:
        self._closing = True
        if self._ticker is not None:
            self._ticker.cancel()
        for queue in self._listeners:
            self._offer(queue, None)
        for index in list(self._picture_waiters):
            self._wake_picture_waiters(index)
        if self._runner is not None:
            await self._runner.cleanup()

    # -- access ----------------------------------------------------------------------------

    @web.middleware
    async def _last_resort(self, request: web.Request, handler):
        """A handler's unexpected failure: one line on stderr and a 500, never a traceback."""
        try:
            return await handler(request)
        except (web.HTTPException, asyncio.CancelledError, ConnectionError):
            raise
        except Exception as error:  # noqa: BLE001 - the one place every failure ends
            print(f"videvent: dashboard: {request.method} {request.path[:80]}: "
                  f"{type(error).__name__}: {str(error)[:200]}", file=sys.stderr)
            return _refuse(500, "the dashboard failed to answer this request")

    @web.middleware
    async def _guard(self, request: web.Request, handler):
        if request.path == "/healthz" and (
                self.health_open == "anyone"
                or (self.token is not None and is_loopback(request.remote or ""))):
            return await handler(request)     # a monitor's question, without the token
        if self.token is None:
            try:
                host = request.url.host or ""
            except (ValueError, UnicodeError):  # a port past 65535, bytes no host name has
                return _refuse(400, "the request's Host header is not a host name")
            if not is_loopback(host):
                return _refuse(403, "this dashboard answers only to a loopback host name")
            return await handler(request)
        if request.path.startswith("/static/"):
            return await handler(request)     # the page's script and style, the same anywhere
        header = request.headers.get("Authorization", "")
        given = (request.query.get("token")
                 or (header[7:] if header[:7].lower() == "bearer " else None))
        if not given:
            return _refuse(401, "a token is needed: open the address printed with it")
        # Bytes as they came (a header need not be UTF-8), compared in constant time.
        if not secrets.compare_digest(given.encode("utf-8", "replace"),
                                      self.token.encode()):
            return _refuse(403, "wrong token")
        self.limits.authenticated(request)
        return await handler(request)

    def _camera(self, request: web.Request) -> CameraState:
        digits = request.match_info["camera"]
        # A number of any length is a route match: one that long is no camera (and int() of
        # thousands of digits is refused by Python itself).
        if len(digits) > 6 or int(digits) >= len(self._cameras):
            raise web.HTTPNotFound(text="no such camera")
        return self._cameras[int(digits)]

    # -- pages and data --------------------------------------------------------------------

    async def _index(self, request: web.Request) -> web.Response:
        # No cookie: the page carries the token it was opened with in its own requests (a
        # cookie would go to every service on this host, whatever its port).
        return web.Response(text=self._page, content_type="text/html",
                            headers={"Referrer-Policy": "no-referrer"})

    async def _list_cameras(self, request: web.Request) -> web.Response:
        return _json([camera.describe() for camera in self._cameras])

    async def _list_events(self, request: web.Request) -> web.Response:
        events = [event for camera in self._cameras for event in camera.event_list()]
        return _json(sorted(events, key=lambda event: event["seen_at"], reverse=True))

    async def _health(self, request: web.Request) -> web.Response:
        healthy, answer = health(self._cameras)
        return _json(answer, 200 if healthy else 503)

    async def _metrics(self, request: web.Request) -> web.Response:
        cameras = list(self._cameras)
        # Walking the result folders may take a while: not on the loop, which serves streams.
        disk = await asyncio.get_running_loop().run_in_executor(
            None, lambda: {camera.index: self._disk.of(camera.folder) for camera in cameras})
        return web.Response(body=metrics_text(cameras, disk, self._gauges).encode(),
                            headers={"Content-Type": PROMETHEUS_TEXT,
                                     "Cache-Control": "no-store"})

    async def _picture(self, request: web.Request) -> web.Response:
        camera = self._camera(request)
        with camera.lock:
            picture = camera.picture
        if picture is None:
            raise web.HTTPNotFound(text="no picture yet")
        return web.Response(body=picture, content_type="image/jpeg",
                            headers={"Cache-Control": "no-store"})

    async def _media(self, request: web.Request) -> web.StreamResponse:
        camera = self._camera(request)
        digits, kind = request.match_info["number"], request.match_info["kind"]
        if kind not in MEDIA_KINDS or len(digits) > 9:
            raise web.HTTPNotFound(text="no such file")
        number = int(digits)
        path = camera.media_path(number, kind)
        if path is not None and path.is_file():
            return web.FileResponse(path)
        picture = camera.live_thumbnail(number) if kind == "thumbnail" else None
        if picture is None:
            raise web.HTTPNotFound(text="not written yet")
        return web.Response(body=picture, content_type="image/jpeg")

    async def _past_media(self, request: web.Request) -> web.StreamResponse:
        camera = self._camera(request)
        digits, kind = request.match_info["number"], request.match_info["kind"]
        path = (camera.media_path(int(digits), kind, past=True)
                if kind in MEDIA_KINDS and len(digits) <= 9 else None)
        if path is None or not path.is_file():
            raise web.HTTPNotFound(text="no such file")
        return web.FileResponse(path)

    async def _read_region(self, request: web.Request) -> web.Response:
        camera = self._camera(request)
        if camera.region_file is None:
            return _json({"polygons": [], "editable": False})
        try:
            polygons = load_region_file(camera.region_file, empty_ok=True)
        except RegionError as error:
            return _refuse(409, str(error))
        return _json({"polygons": polygons, "editable": True})

    async def _save_region(self, request: web.Request) -> web.Response:
        camera = self._camera(request)
        if camera.region_file is None:
            return _refuse(404, "no region file is configured for this camera")
        # JSON only: a plain form posted by another site cannot send it without CORS approval.
        if request.content_type != "application/json":
            return _refuse(415, "send the polygons as application/json")
        if (request.content_length or 0) > MAX_REGION_BODY:
            return _refuse(413, f"the polygons take more than {MAX_REGION_BODY} bytes")
        try:
            text = await request.text()
            if len(text) > MAX_REGION_BODY:
                return _refuse(413, f"the polygons take more than {MAX_REGION_BODY} bytes")
            body = json.loads(text)
        except LookupError:                      # a charset Python does not know
            return _refuse(415, "unknown charset: send the polygons as UTF-8 JSON")
        except (ValueError, RecursionError):    # not JSON, or nested past Python's stack
            return _refuse(400, "the request is not valid JSON")
        with camera.lock:
            width, height, working = camera.width, camera.height, camera.working
        if not width:
            return _refuse(409, "the camera has not started: its frame size is unknown")
        try:
            polygons = posted_polygons(body, width, height, working)
            save_region_file(camera.region_file, polygons)
        except RegionError as error:
            return _refuse(400, str(error))
        except OSError as error:
            return _refuse(500, f"cannot write the region file: {error.strerror or error}")
        return _json({"polygons": polygons, "editable": True})

    # -- streams ---------------------------------------------------------------------------

    @staticmethod
    def _offer(queue: asyncio.Queue, message) -> None:
        if queue.full():   # a page that stopped reading loses its oldest messages
            queue.get_nowait()
        queue.put_nowait(message)

    async def _send_updates(self) -> None:
        while True:
            await asyncio.sleep(UPDATE_EVERY_S)
            messages = []
            while self._outbox:
                messages.append(self._outbox.popleft())
            for camera in self._cameras:
                points = camera.take_pending_scores()
                if points:
                    messages.append({"type": "scores", "camera_index": camera.index,
                                     "points": points})
            for message in messages:
                data = f"data: {json.dumps(message, allow_nan=False)}\n\n".encode()
                for queue in self._listeners:
                    self._offer(queue, data)

    async def _stream(self, request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream",
                                               "Cache-Control": "no-cache"})
        await response.prepare(request)
        queue: asyncio.Queue = asyncio.Queue(maxsize=LISTENER_BACKLOG)
        self._listeners.add(queue)
        try:
            await response.write(b"retry: 1000\n\n")
            while not self._closing:
                try:
                    data = await asyncio.wait_for(queue.get(), KEEPALIVE_S)
                except asyncio.TimeoutError:
                    data = b": keep-alive\n\n"
                if data is None:
                    break
                await response.write(data)
        except ConnectionError:   # the page went away (reset, or lost while a write waited)
            pass
        finally:
            self._listeners.discard(queue)
        return response

    def _wake_picture_waiters(self, index: int) -> None:
        waiter = self._picture_waiters.pop(index, None)
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def _mjpeg(self, request: web.Request) -> web.StreamResponse:
        camera = self._camera(request)
        response = web.StreamResponse(headers={
            "Content-Type": "multipart/x-mixed-replace; boundary=frame",
            "Cache-Control": "no-store"})
        await response.prepare(request)
        shown = -1
        part = b"--frame\r\nContent-Type: image/jpeg\r\n\r\n"
        camera.viewers += 1
        try:
            # Each picture is followed at once by the next part's boundary and headers:
            # browsers show a picture only once they have read those, not a frame late.
            await response.write(part)
            while not self._closing:
                waiter = self._picture_waiters.get(camera.index)
                if waiter is None:
                    waiter = self._picture_waiters[camera.index] = \
                        asyncio.get_running_loop().create_future()
                with camera.lock:
                    picture, count = camera.picture, camera.pictures_encoded
                if picture is not None and count != shown:
                    shown = count
                    await response.write(picture + b"\r\n" + part)
                    continue
                # Shielded: one page leaving must not cancel the wait of the others.
                await asyncio.shield(waiter)
        except ConnectionError:
            # The viewer left: a reset, or aiohttp's plain ConnectionError("Connection lost")
            # when it leaves while a picture waits for room in its socket. Normal, not said.
            pass
        finally:
            camera.viewers -= 1
        return response
