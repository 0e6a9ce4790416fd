"""The version of videvent, in one place (read by pyproject.toml and the package)."""

__version__ = "0.3.1"
