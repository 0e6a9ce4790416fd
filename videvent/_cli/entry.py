"""The ``videvent`` command's entry point: Ctrl-C or SIGTERM from the first instant.

Importing the command line (click, NumPy, OpenCV, PyAV) takes a few tenths of a second, and
its own signal handling starts only after that; a signal meanwhile used to end in a
KeyboardInterrupt traceback (SIGINT) or a silent death (SIGTERM). Nothing has been read or
written yet then, so the early handler just says so and exits as a stopped command does.
"""

import os
import signal
import sys

from .signals import stopped_line


def _stopped_early(signal_number: int, _frame) -> None:
    sys.stderr.write(stopped_line(signal_number) + "\n")
    sys.stderr.flush()
    os._exit(128 + signal_number)     # during an import: no clean-up of it to wait for


def main() -> None:
    for signal_number in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signal_number, _stopped_early)
    from .main import main as command_line   # installs its own handlers before anything else

    command_line()
