"""The ``videvent`` command line: a thin layer of click over the library."""
