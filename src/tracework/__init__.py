"""tracework: evidence-backed reports about other people's code.

The library behind the ``tracework`` command, one package per stage of the pipeline:
:mod:`~tracework.git` (subjects, mirrors, reading blobs), :mod:`~tracework.register`
(the source register and the evidence added to it), :mod:`~tracework.drift` (what still
holds at another commit, and ``check``), :mod:`~tracework.notebook` (the workbench an
analyst writes in), :mod:`~tracework.render` (one report at one commit),
:mod:`~tracework.batch` (many), :mod:`~tracework.site` (the published site),
:mod:`~tracework.screen` and :mod:`~tracework.capture` (the runtime half).
"""

from tracework.version import __version__

__all__ = ["__version__"]


def __getattr__(name: str) -> object:
    """``tw.open`` and friends, imported on first use so the CLI starts fast."""
    if name in ("open", "Workbench"):
        import tracework.notebook.workbench as notebook

        return getattr(notebook, name)
    raise AttributeError(f"module 'tracework' has no attribute {name!r}")
