"""Limits on the dashboard's connections, below aiohttp: how many, and how long one may take to
send its request.

aiohttp waits for a request's line and headers for as long as the client likes, and accepts
as many connections as the process has files: a few hundred clients that send half a request
and stop hold the server's files until the session cannot open its own. Here every connection
is counted (in all and per client address; past either cap it is closed at once) and must
have its request under way within ``request_timeout`` of opening or of its last response
(else it is closed); a connection inside a handler (a page's event stream, an MJPEG stream)
is never cut.
"""

from __future__ import annotations

import asyncio
from collections import Counter

from aiohttp import web

# Each open page uses a handful (the page, its event stream, pictures, a clip); a household's
# screens stay far below. Past them a connection is closed as soon as it is accepted.
MAX_CONNECTIONS = 256
MAX_PER_CLIENT = 64
# A request's line and headers must have come within this of the connection opening (or of
# its last response): a browser sends them at once.
REQUEST_TIMEOUT_S = 10.0


class ConnectionLimits:
    """Counts connections and times their requests out; ``runner`` serves through it.

    Use ``runner(app, **options)`` in place of ``web.AppRunner`` and ``middleware`` as the
    application's first middleware (it tells which connections are inside a handler).
    """

    def __init__(self, max_connections: int = MAX_CONNECTIONS,
                 max_per_client: int = MAX_PER_CLIENT,
                 request_timeout: float = REQUEST_TIMEOUT_S):
        self.max_connections = max_connections
        self.max_per_client = max_per_client
        self.request_timeout = request_timeout
        self.refused_ = 0                    # connections closed at once, over a cap
        self.timed_out_ = 0                  # connections closed for not sending a request
        self._clients: dict[asyncio.BaseTransport, str] = {}
        self._per_client: Counter[str] = Counter()
        self._timers: dict[asyncio.BaseTransport, asyncio.TimerHandle] = {}
        self._busy: set[asyncio.BaseTransport] = set()

    @property
    def open_connections(self) -> int:
        return len(self._clients)

    def runner(self, app: web.Application, **options) -> web.AppRunner:
        limits = self

        class Runner(web.AppRunner):
            @property
            def server(self):
                server = super().server
                return None if server is None else _Factory(server, limits)

        return Runner(app, **options)

    @web.middleware
    async def middleware(self, request: web.Request, handler):
        transport = request.transport
        if transport is not None:
            self._busy.add(transport)
            self._disarm(transport)
        try:
            return await handler(request)
        finally:
            if transport is not None:
                self._busy.discard(transport)
                if transport in self._clients:
                    self._arm(transport)

    # -- connections -----------------------------------------------------------------------
    def _opened(self, transport: asyncio.BaseTransport) -> bool:
        peer = transport.get_extra_info("peername")
        client = str(peer[0]) if isinstance(peer, tuple) and peer else "?"
        if (len(self._clients) >= self.max_connections
                or self._per_client[client] >= self.max_per_client):
            self.refused_ += 1
            transport.abort()
            return False
        self._clients[transport] = client
        self._per_client[client] += 1
        self._arm(transport)
        return True

    def _closed(self, transport: asyncio.BaseTransport) -> bool:
        self._disarm(transport)
        self._busy.discard(transport)
        client = self._clients.pop(transport, None)
        if client is None:
            return False
        self._per_client[client] -= 1
        if not self._per_client[client]:
            del self._per_client[client]
        return True

    def _arm(self, transport: asyncio.BaseTransport) -> None:
        self._disarm(transport)
        loop = asyncio.get_running_loop()
        self._timers[transport] = loop.call_later(self.request_timeout, self._expire,
                                                  transport)

    def _disarm(self, transport: asyncio.BaseTransport) -> None:
        timer = self._timers.pop(transport, None)
        if timer is not None:
            timer.cancel()

    def _expire(self, transport: asyncio.BaseTransport) -> None:
        self._timers.pop(transport, None)
        if transport not in self._busy and not transport.is_closing():
            self.timed_out_ += 1
            transport.close()


class _Factory:
    """aiohttp's protocol factory, each protocol behind a ``_Counted`` one."""

    def __init__(self, server, limits: ConnectionLimits):
        self._server = server
        self._limits = limits

    def __getattr__(self, name):
        return getattr(self._server, name)

    def __call__(self) -> asyncio.Protocol:
        return _Counted(self._server(), self._limits)


class _Counted(asyncio.Protocol):
    """One connection: told to the limits when it opens (and refused there past a cap) and
    when it closes; everything else goes to aiohttp's protocol as it came."""

    def __init__(self, inner: asyncio.Protocol, limits: ConnectionLimits):
        self._inner = inner
        self._limits = limits
        self._transport: asyncio.BaseTransport | None = None   # once let through

    def connection_made(self, transport) -> None:
        if self._limits._opened(transport):
            self._transport = transport
            self._inner.connection_made(transport)

    def connection_lost(self, error) -> None:
        if self._transport is not None:       # one refused never reached aiohttp
            self._limits._closed(self._transport)
            self._inner.connection_lost(error)

    def data_received(self, data: bytes) -> None:
        self._inner.data_received(data)

    def eof_received(self):
        return self._inner.eof_received()

    def pause_writing(self) -> None:
        self._inner.pause_writing()

    def resume_writing(self) -> None:
        self._inner.resume_writing()
