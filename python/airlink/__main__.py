"""``python -m airlink`` is the ``airlink`` command."""

from airlink.cli import main

main()
