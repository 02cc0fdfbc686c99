"""The single source of tracework's version (pyproject.toml reads it from here), in a
module of its own so that any layer can name it without importing the package's API."""

__version__ = "0.1.0"
