"""The names a setting chooses among, declared once for the settings, the detector and the
decoders (a leaf module: checking a name imports no detector or decoder)."""

# How the window's background frames are found: the paper's inlier scores, or plain PCA.
METHODS = ("sncp", "ancp", "cop", "pca")
# Which decoder reads a source ("auto": PyAV, then OpenCV; "images": an image sequence).
BACKENDS = ("auto", "pyav", "opencv", "images")
# What is drawn over a picture of what the detector found (thumbnails, the annotated video,
# clips, the dashboard): the changed areas outlined, the heat map as a tint, or nothing.
OVERLAYS = ("outline", "heat", "off")
# How an event's clip is made (DVR-Scan's -m): its frames encoded again, or the source's own
# packets copied.
CLIP_MODES = ("encode", "copy")
# What an event was (``videvent.kinds``), first match: a picture out of darkness, a light, the
# whole scene, something that left, something that appeared and stayed, something that moved.
KINDS = ("moved", "appeared", "left", "light", "scene", "darkness")


def parse_kinds(text: str) -> frozenset[str]:
    """The kinds of a comma-separated list (``"moved, appeared"``); ValueError (one line,
    listing the kinds) for a name that is none, or an empty list."""
    names = [name.strip().lower() for name in text.split(",") if name.strip()]
    if not names:
        raise ValueError(f"no kind given: choose from {', '.join(KINDS)}")
    unknown = [name for name in names if name not in KINDS]
    if unknown:
        raise ValueError(f"unknown kind {unknown[0]!r}: choose from {', '.join(KINDS)}")
    return frozenset(names)
