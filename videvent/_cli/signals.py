"""SIGINT and SIGTERM in the command line: what stops a command (``Stopped``, which unwinds
like an error), what ``watch`` routes them to instead (``stop_to``: a clean end, off the
handler), and how the process ends when a source's open cannot be interrupted."""

from __future__ import annotations

import os
import signal
import sys
import threading
import time


def stopped_line(signal_number: int) -> str:
    """What a command stopped by a signal says, early (``entry``) or late."""
    return (f"videvent: stopped by {signal.Signals(signal_number).name}; nothing half-written "
            "was left")


class Stopped(BaseException):
    """SIGINT or SIGTERM: unwinds like an error (every staging folder and temporary file is
    removed on the way out) but is no Exception, so no ``except Exception`` swallows it."""

    def __init__(self, signal_number: int):
        super().__init__(signal_number)
        self.signal_number = signal_number


# A second signal this soon after the first is the clean-up's to ignore; later, the first was
# lost (raised where native code swallows exceptions) and it stops the process again.
CLEAN_UP_S = 5.0
_first_signal_at: list[float] = []
# Set by the first signal as well as raised, so that a loop that checks it (the wait for a
# camera down at the start) ends even where the exception was swallowed; ``_stopped_by``
# holds its number, for the stop sent again (``_unraisable``) and the error it turned into.
_signalled = threading.Event()
_stopped_by: list[int] = []
# Set when main's work is over: a stop sent again after that has nothing left to stop.
_finished = threading.Event()
SEND_AGAIN_AFTER_S = 0.02


def _stop(signal_number: int, _frame) -> None:
    now = time.monotonic()
    if _first_signal_at and now - _first_signal_at[0] < CLEAN_UP_S:
        return                     # the clean-up of the first is under way: not cut short
    _first_signal_at[:] = [now]
    _stopped_by[:] = [signal_number]
    _signalled.set()
    raise Stopped(signal_number)


def _unraisable(unraisable) -> None:
    """A stop raised where Python cannot deliver it (a weakref callback or a destructor, such
    as the import system's own, which a signal can land in while a command loads) is not
    reported with a traceback: an alarm sends it again, a moment later, to land where it
    unwinds. (An alarm, not a thread: starting one here could wait on a lock held below.)"""
    if not isinstance(unraisable.exc_value, Stopped):
        sys.__unraisablehook__(unraisable)
        return
    _first_signal_at.clear()       # the first was lost: this one is not its clean-up
    signal.setitimer(signal.ITIMER_REAL, SEND_AGAIN_AFTER_S)


def _send_again(_alarm: int, frame) -> None:
    if _stopped_by and not _finished.is_set():
        _stop(_stopped_by[0], frame)


class _SignalRelay:
    """Runs what a signal handler asks for on a thread of its own. A handler runs on the main
    thread between two of its bytecodes, which can be inside an event's own lock then (in its
    ``wait`` or ``set``): setting that event in the handler would wait for ever. The handler
    only appends to a list and writes a byte to a pipe, which take no lock; this thread, woken
    by the byte, does the rest. (``_stop`` sets ``_signalled`` itself: the main thread waits
    on that event only under ``pause``'s handlers.)"""

    def __init__(self):
        self._asked: list = []
        self._read, self._write = os.pipe()
        threading.Thread(target=self._run, name="videvent-signal-relay", daemon=True).start()

    def handler(self, action):
        """A signal handler that has ``action()`` called on the relay's thread."""
        def ask(_signal_number: int, _frame) -> None:
            self._asked.append(action)
            os.write(self._write, b"\0")
        return ask

    def _run(self) -> None:
        while os.read(self._read, 1):
            while self._asked:
                self._asked.pop(0)()


_relay: list[_SignalRelay] = []


def _on_signal(action):
    """A signal handler that calls ``action`` (an event's ``set``, a monitor's ``stop``) off
    the handler (``_SignalRelay``). Called where the handler is installed, never in one: the
    relay's thread is started on first use."""
    if not _relay:
        _relay.append(_SignalRelay())
    return _relay[0].handler(action)


def _exit(code: int) -> None:
    """Exit with ``code``; at once if the stop came during a source's open (FFmpeg's open
    cannot be interrupted, and the interpreter's exit under or just after its thread can
    abort, hang or crash the process). Everything is written and closed by the time this is
    called."""
    sources = sys.modules.get("videvent.sources")   # not imported: no source was opened
    if sources is not None and sources.open_abandoned():
        _end_at_once(code)
    sys.exit(code)


def _end_at_once(code: int) -> None:
    """End the process now, past the interpreter's exit, once stdout and stderr are out."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def stop_to(action):
    """Route SIGINT and SIGTERM to ``action`` (off the handler: ``_on_signal``); returns what
    puts the handlers before back."""
    handlers = {number: signal.signal(number, _on_signal(action))
                for number in (signal.SIGINT, signal.SIGTERM)}
    return lambda: [signal.signal(number, handler) for number, handler in handlers.items()]
