"""``python -m tracework``: the same CLI as the ``tracework`` command."""

from .cli import main

main()
