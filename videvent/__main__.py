"""``python -m videvent``: the same as the ``videvent`` command."""

from videvent._cli.entry import main

main()
