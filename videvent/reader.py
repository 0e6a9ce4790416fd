"""A producer thread feeding a bounded queue, that never stalls and never leaks.

Decoding (and preprocessing) runs on its own thread so that the decoder and the detector use
both cores; the queue between them is bounded so that memory does not depend on how far the
decoder gets ahead. Every hand-over honours ``stop``: the producer never blocks on a full
queue once the consumer has gone, and closing drains the queue until the thread has exited,
so the decoder is always closed behind it. ``run``, ``export``, ``batch`` and ``watch`` all
read through it.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

# How often a blocked hand-over looks at ``stop``.
POLL_S = 0.1
_END = object()


class _Droppable:
    """An item put with ``drop_oldest``: a newer one may take its place in a full queue."""

    __slots__ = ("item",)

    def __init__(self, item):
        self.item = item


def _unwrap(item):
    return item.item if isinstance(item, _Droppable) else item


class ReadAhead:
    """Run ``produce(put)`` on a thread; iterate over what it puts, in order.

    ``produce`` calls ``put(item)`` for each item; ``put`` returns False once the reader is
    closing, and the producer should then return. An exception in ``produce`` is raised in
    the consumer. ``close()`` (also at the end of a ``with`` block or of the iteration) stops
    the producer and waits until its thread has exited.
    """

    def __init__(self, produce: Callable[[Callable[[Any], bool]], None], size: int,
                 name: str = "videvent-reader"):
        self._queue: queue.Queue = queue.Queue(maxsize=size)
        self.stop = threading.Event()
        self.dropped = 0
        self._thread = threading.Thread(target=self._run, args=(produce,), name=name,
                                        daemon=True)
        self._thread.start()

    def put(self, item, *, drop_oldest: bool = False) -> bool:
        """Hand ``item`` over, waiting for room; False (item dropped) once closing.

        ``drop_oldest``: a full queue loses its oldest item that was put this way too
        (counted in ``dropped``): a live picture goes stale, and waiting for room would only
        make the next one late. Items put without it (a source lost, the end) are never lost.
        """
        if drop_oldest:
            item = _Droppable(item)
        while not self.stop.is_set():
            if drop_oldest and self._put_in_place_of_a_droppable(item):
                return True
            try:
                self._queue.put(item, timeout=POLL_S)
                return True
            except queue.Full:
                continue
        return False

    def _put_in_place_of_a_droppable(self, item) -> bool:
        # Under the queue's own lock: the oldest droppable item may sit behind others.
        with self._queue.mutex:
            waiting = self._queue.queue
            if len(waiting) >= self._queue.maxsize:
                stale = next((i for i, old in enumerate(waiting) if isinstance(old, _Droppable)),
                             None)
                if stale is None:
                    return False
                del waiting[stale]
                self.dropped += 1
                waiting.append(item)
                return True
        return False

    def _run(self, produce) -> None:
        try:
            produce(self.put)
            self.put(_END)
        except BaseException as error:  # handed to the consumer, which re-raises it
            self.put(error)

    def __iter__(self) -> Iterator:
        try:
            while True:
                item = _unwrap(self._queue.get())
                if item is _END:
                    return
                if isinstance(item, BaseException):
                    raise item
                yield item
        finally:
            self.close()

    def get(self, timeout: float):
        """The next item, or None after ``timeout`` seconds without one; the end of the
        producer comes as ``ReadAhead.END``."""
        try:
            item = _unwrap(self._queue.get(timeout=timeout))
        except queue.Empty:
            return None
        if isinstance(item, BaseException):
            raise item
        return item

    END = _END

    def close(self, timeout: float | None = None) -> None:
        """Stop the producer and drain the queue until its thread has exited (or, given
        ``timeout``, until that many seconds have passed: a network read that hangs in the
        decoder cannot be interrupted, and the thread is a daemon)."""
        self.stop.set()
        deadline = None if timeout is None else time.monotonic() + timeout
        while self._thread.is_alive() and (deadline is None or time.monotonic() < deadline):
            try:
                self._queue.get(timeout=POLL_S)
            except queue.Empty:
                pass

    def __enter__(self) -> "ReadAhead":
        return self

    def __exit__(self, *_exc) -> None:
        self.close()
