"""``python -m tracework``: the same CLI as the ``tracework`` command."""

from tracework.cli import main

main()
