"""The turn loop: file notes on request, otherwise recall and ask the model."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from .notes import NoteStore
from .prompting import build_prompt

REMEMBER_PREFIX = "remember:"


class Model(Protocol):
    def complete(self, prompt: str) -> str: ...


class EchoModel:
    """A stand-in model that returns the last line of its prompt."""

    def complete(self, prompt: str) -> str:
        return prompt.rsplit("\n", 1)[-1]


@dataclass
class Helper:
    model: Model = field(default_factory=EchoModel)
    store: NoteStore = field(default_factory=NoteStore)

    def turn(self, message: str) -> str:
        """Handle one user message and return the reply."""
        if message.lower().startswith(REMEMBER_PREFIX):
            text = message[len(REMEMBER_PREFIX) :].strip()
            note_id = self.store.keep(text, tags=("user",))
            return f"Kept as note {note_id}."
        notes = self.store.recall(message)
        return self.model.complete(build_prompt(message, notes))
