"""Fennel: per-user memories chosen by the model, kept in SQLite."""

from fennel.agent import Assistant
from fennel.memory import MemoryStore

__all__ = ["Assistant", "MemoryStore"]
