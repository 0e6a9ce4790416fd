"""``watch --log-format json``: every line the watch writes on stderr as one JSON object, for
a log collector (journald's JSON export, Loki, Elasticsearch, a container's log driver).

The library says what it has to say as lines on stderr (``videvent: warning: ...``, a camera's
trouble, the dashboard's address, the closing summary and error); ``JsonLines`` stands in for
stderr and turns each whole line into ``{"time", "level", "message"}`` (and ``camera`` when
the line is about one), so no line escapes the format and the human lines stay the default.
"""

from __future__ import annotations

import io
import json
import re
import sys
import threading
from datetime import datetime, timezone

LOG_FORMATS = ("human", "json")
_LEVELS = (("videvent: error: ", "error"), ("Error: ", "error"),
           ("videvent: warning: ", "warning"), ("videvent: ", "info"))
_CAMERA = re.compile(r"camera ([A-Za-z0-9_-]+)(?=[: ])")


class JsonLines(io.TextIOBase):
    """A text stream that writes each line written to it to ``stream`` as a JSON object."""

    def __init__(self, stream):
        self._stream = stream
        self._partial = ""
        self._lock = threading.Lock()      # whole lines, when several threads say something

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return False                       # no status line redrawn in place

    def write(self, text: str) -> int:
        with self._lock:
            *lines, self._partial = (self._partial + text).split("\n")
            for line in lines:
                self._emit(line)
        return len(text)

    def flush(self) -> None:
        self._stream.flush()

    def _emit(self, line: str) -> None:
        line = line.rsplit("\r", 1)[-1].strip()   # a line redrawn in place: its latest
        if not line:
            return
        level = "info"
        for prefix, said in _LEVELS:
            if line.startswith(prefix):
                level, line = said, line[len(prefix):]
                break
        record = {"time": datetime.now(timezone.utc).isoformat(timespec="milliseconds"),
                  "level": level, "message": line}
        camera = _CAMERA.match(line)
        if camera is not None:
            record["camera"] = camera.group(1)
        self._stream.write(json.dumps(record, ensure_ascii=False) + "\n")
        self._stream.flush()


def use_log_format(log_format: str) -> None:
    """From now on, stderr's lines in ``log_format`` (``human``: as they are)."""
    if log_format == "json" and not isinstance(sys.stderr, JsonLines):
        sys.stderr = JsonLines(sys.stderr)
