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
