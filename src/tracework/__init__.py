"""tracework: evidence-backed reports about other people's code.

The library behind the ``tracework`` command.  Stages, in pipeline order:
:mod:`~tracework.subjects` (subjects and mirrors), :mod:`~tracework.blobs` (reading
the object store), :mod:`~tracework.register` and :mod:`~tracework.models` (the
source register), :mod:`~tracework.evidence` (adding files and quotes),
:mod:`~tracework.drift` (relocating quotes) and :mod:`~tracework.checks`.
"""

#: The single source of the version (pyproject.toml reads it from here).
__version__ = "0.1.0"


def __getattr__(name: str) -> object:
    """``tw.open`` and friends, imported on first use so the CLI starts fast."""
    if name in ("open", "Workbench"):
        from . import notebook

        return getattr(notebook, name)
    raise AttributeError(f"module 'tracework' has no attribute {name!r}")
