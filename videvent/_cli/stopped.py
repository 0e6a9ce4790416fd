"""What a command stopped by a signal says: one line, the same early (``entry``) or late
(``main``), in a module of its own so that neither imports the other for it."""

import signal


def stopped_line(signal_number: int) -> str:
    """What a command stopped by a signal says, early or late."""
    return (f"videvent: stopped by {signal.Signals(signal_number).name}; nothing half-written "
            "was left")
