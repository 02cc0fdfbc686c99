"""``python -m tracework``: the same program as the ``tracework`` command."""

from tracework.cli import run

run()
