"""A live web dashboard for the cameras of a monitoring session.

`Dashboard` serves one page (aiohttp, on its own thread) showing every camera's annotated
live picture (MJPEG), its score chart with the threshold, its status, frame rate, dropped
frames and latency, the events as they happen with their thumbnails and clips, and a region
editor saving polygons to a DVR-Scan region file (read and written by ``videvent.regions``).
Each camera is fed through the `DashboardSink` that `Dashboard.add_camera` returns. Everything
the page needs ships in this package: it works with no internet access. Access rules: see
`videvent.dashboard.server`.
"""

from .camera import DashboardSink
from .server import Dashboard

__all__ = ["Dashboard", "DashboardSink"]
