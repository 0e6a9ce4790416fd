"""Limits on the dashboard's connections, below aiohttp: how many, and how long one may take to
send its request.

aiohttp waits for a request's line and headers for as long as the client likes, and accepts
as many connections as the process has files: a few hundred clients that send half a request
and stop hold the server's files until the session cannot open its own. Here every connection
is counted (in all and per client address) and must have its request under way within
``request_timeout`` of opening or of its last response (else it is closed); a connection
inside a handler (a page's event stream, an MJPEG stream) is never cut.

Caps alone let anyone who reaches the server hold it: half-sent requests reopened as soon as
they are closed, from a few addresses, keep every slot taken, and a client with the token is
refused at accept like the rest (at accept nobody can tell who carries a token). So a cap is
met by eviction before refusal. The *idle* connections are those waiting for a request
(opened, or answered, and since then without a whole request head), not inside a handler
and not *authenticated* (a request of theirs passed the token check: ``authenticated``); a
*half request* is an idle one that has sent part of a head. A new connection past its
address's cap closes the longest idle connection of that address; past the cap in all, or
past the share of it the unauthenticated may hold (``unauthenticated_share``: 3/4 when a
token is required, the last quarter kept for connections that showed it), it closes one of
the address that has the most idle connections: its longest idle half request, else its
longest idle connection. Only when no connection is idle is the new one refused (and one
whose head came over PENDING_S ago without reaching its handler counts as idle again).

So a flood of half requests evicts itself: a new connection is newer than all of them, it is
not a half request once its request has come (a browser and the page send it at once), and
an address of its own is not the one with the most idle connections; once its token is
checked it is never evicted, and the reserve keeps room for such connections however many
strangers connect. Without a token (a loopback dashboard, open) the share is all connections
and the same eviction keeps half requests from holding them. Left: many addresses that each
open connections sending nothing, faster than a new connection's request is read, could
still push it out; and behind a reverse proxy every client is one address.

A shorter request timeout under pressure was weighed and not taken: it frees slots by the
clock rather than when one is needed, cuts slow but honest clients, and a client that
reopens at once holds the slots again between two expiries.
"""

from __future__ import annotations

import asyncio
import itertools
from collections import Counter, OrderedDict

from aiohttp import web

# Each open page uses a handful (the page, its event stream, pictures, a clip); a household's
# screens stay far below. Past them an idle connection is closed to make room, or (none idle)
# the new one as soon as it is accepted.
MAX_CONNECTIONS = 256
MAX_PER_CLIENT = 64
# A request's line and headers must have come within this of the connection opening (or of
# its last response): a browser sends them at once.
REQUEST_TIMEOUT_S = 10.0
# With a token required, connections that have not shown it may hold at most this share of
# MAX_CONNECTIONS (192 of 256): the rest is kept for those that did.
UNAUTHENTICATED_SHARE = 0.75
# A connection whose request head has come whole is not evicted while aiohttp hands it to its
# handler (a few turns of the loop); one whose handler has not started after this is again.
PENDING_S = 1.0


class ConnectionLimits:
    """Counts connections, times their requests out and evicts idle ones to make room (see
    the module's docstring); ``runner`` serves through it.

    Use ``runner(app, **options)`` in place of ``web.AppRunner`` and ``middleware`` as the
    application's first middleware (it tells which connections are inside a handler); call
    ``authenticated(request)`` once a request's token is checked. ``unauthenticated_share``:
    the share of ``max_connections`` that connections never authenticated may hold (1: all,
    for a server that checks no token).
    """

    def __init__(self, max_connections: int = MAX_CONNECTIONS,
                 max_per_client: int = MAX_PER_CLIENT,
                 request_timeout: float = REQUEST_TIMEOUT_S,
                 unauthenticated_share: float = 1.0):
        self.max_connections = max_connections
        self.max_per_client = max_per_client
        self.request_timeout = request_timeout
        self.unauthenticated_share = unauthenticated_share
        self.refused_ = 0                    # connections closed at once, over a cap
        self.evicted_ = 0                    # idle connections closed to make room
        self.timed_out_ = 0                  # connections closed for not sending a request
        self._clients: dict[asyncio.BaseTransport, str] = {}
        self._per_client: Counter[str] = Counter()
        self._timers: dict[asyncio.BaseTransport, asyncio.TimerHandle] = {}
        self._busy: set[asyncio.BaseTransport] = set()
        self._authenticated: set[asyncio.BaseTransport] = set()
        # The idle connections (evictable), the longest idle first: those that sent part of
        # a request since (half requests, evicted first), and those that sent nothing.
        self._half: OrderedDict[asyncio.BaseTransport, None] = OrderedDict()
        self._idle: OrderedDict[asyncio.BaseTransport, None] = OrderedDict()
        self._idle_of: Counter[str] = Counter()          # how many of each address are idle
        # Those whose request head has come, not yet in a handler: when it came.
        self._pending: dict[asyncio.BaseTransport, float] = {}

    @property
    def open_connections(self) -> int:
        return len(self._clients)

    @property
    def max_unauthenticated(self) -> int:
        return max(1, int(self.max_connections * self.unauthenticated_share))

    @property
    def authenticated_connections(self) -> int:
        return len(self._authenticated)

    def authenticated(self, request: web.Request) -> None:
        """The request's token was checked: its connection is never evicted from now on."""
        transport = request.transport
        if transport is not None and transport in self._clients:
            self._authenticated.add(transport)
            self._not_idle(transport)

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
            self._not_idle(transport)
            self._disarm(transport)
        try:
            return await handler(request)
        finally:
            if transport is not None:
                self._busy.discard(transport)
                if transport in self._clients:
                    self._arm(transport)
                    if transport not in self._authenticated:
                        self._become_idle(transport)      # idle again, the newest

    # -- connections -----------------------------------------------------------------------
    def _opened(self, transport: asyncio.BaseTransport) -> bool:
        peer = transport.get_extra_info("peername")
        client = str(peer[0]) if isinstance(peer, tuple) and peer else "?"
        if self._per_client[client] >= self.max_per_client and not self._evict(client):
            return self._refuse(transport)
        unauthenticated = len(self._clients) - len(self._authenticated)
        if ((len(self._clients) >= self.max_connections
             or unauthenticated >= self.max_unauthenticated) and not self._evict()):
            return self._refuse(transport)
        self._clients[transport] = client
        self._per_client[client] += 1
        self._become_idle(transport)
        self._arm(transport)
        return True

    def _refuse(self, transport: asyncio.BaseTransport) -> bool:
        self.refused_ += 1
        transport.abort()
        return False

    def _evict(self, client: str | None = None) -> bool:
        """Close an idle connection of ``client``, or if None of the address that has the
        most idle ones: its longest idle half request, else its longest idle connection;
        else (none idle) one whose request head came more than PENDING_S ago and is still
        not in a handler. False if there is none."""
        owners = [client] if client is not None else [
            *([max(self._idle_of, key=self._idle_of.__getitem__)] if self._idle_of else []),
            None]                                                  # None: any address
        stale = asyncio.get_running_loop().time() - PENDING_S
        for owner in owners:
            candidates = itertools.chain(
                self._half, self._idle,
                (transport for transport, since in self._pending.items() if since < stale))
            for transport in candidates:
                if (owner is None or self._clients.get(transport) == owner) \
                        and not transport.is_closing():
                    self._forget(transport)          # (the loop ends: nothing more is read)
                    self.evicted_ += 1
                    transport.abort()
                    return True
        return False

    def _is_idle(self, transport: asyncio.BaseTransport) -> bool:
        return transport in self._idle or transport in self._half

    def _half_came(self, transport: asyncio.BaseTransport) -> None:
        """Part of a request has come, not its whole head: a half request."""
        if self._idle.pop(transport, 0) is None:
            self._half[transport] = None

    def _request_came(self, transport: asyncio.BaseTransport) -> None:
        """A request's head has come whole: it is about to be answered, not idle."""
        if self._is_idle(transport):
            self._not_idle(transport)
            self._pending[transport] = asyncio.get_running_loop().time()

    def _become_idle(self, transport: asyncio.BaseTransport) -> None:
        self._idle[transport] = None
        self._idle_of[self._clients[transport]] += 1

    def _not_idle(self, transport: asyncio.BaseTransport) -> None:
        if self._idle.pop(transport, 0) is None or self._half.pop(transport, 0) is None:
            client = self._clients[transport]
            self._idle_of[client] -= 1
            if not self._idle_of[client]:
                del self._idle_of[client]
        self._pending.pop(transport, None)

    def _closed(self, transport: asyncio.BaseTransport) -> bool:
        return self._forget(transport)

    def _forget(self, transport: asyncio.BaseTransport) -> bool:
        """No longer counted (closed, or closing: its slot is free at once)."""
        self._disarm(transport)
        self._busy.discard(transport)
        self._authenticated.discard(transport)
        self._not_idle(transport)
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
            self._forget(transport)
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
        self._tail = b""        # the last bytes received while idle: a head's end may straddle

    def connection_made(self, transport) -> None:
        if self._limits._opened(transport):
            self._transport = transport
            self._inner.connection_made(transport)

    def connection_lost(self, error) -> None:
        if self._transport is not None:       # one refused never reached aiohttp
            self._limits._closed(self._transport)
            self._inner.connection_lost(error)

    def data_received(self, data: bytes) -> None:
        transport = self._transport
        if transport is not None and self._limits._is_idle(transport):
            seen = self._tail + data
            if b"\r\n\r\n" in seen or b"\n\n" in seen:
                self._tail = b""
                self._limits._request_came(transport)
            elif data:
                self._tail = seen[-3:]
                self._limits._half_came(transport)
        else:
            self._tail = b""
        self._inner.data_received(data)

    def eof_received(self):
        return self._inner.eof_received()

    def pause_writing(self) -> None:
        self._inner.pause_writing()

    def resume_writing(self) -> None:
        self._inner.resume_writing()
