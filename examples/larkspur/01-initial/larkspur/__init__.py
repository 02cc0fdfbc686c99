"""Larkspur: a helper that keeps notes between turns."""

from .agent import Helper
from .notes import NoteStore

__all__ = ["Helper", "NoteStore"]
