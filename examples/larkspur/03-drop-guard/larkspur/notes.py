"""The note store: what Larkspur keeps between turns.

Notes live in memory only; nothing is written to disk.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

from .text import fold_words

_ids = itertools.count(1)


@dataclass
class Note:
    note_id: int
    text: str
    tags: tuple[str, ...] = ()
    hits: int = 0
    owner: str = "anyone"


@dataclass
class NoteStore:
    notes: dict[int, Note] = field(default_factory=dict)

    def keep(self, text: str, tags: tuple[str, ...] = (), owner: str = "anyone") -> int:
        """File a note and return its id."""
        for note in self.notes.values():
            if note.text == text and note.owner == owner:
                return note.note_id
        note = Note(next(_ids), text, tags, owner=owner)
        self.notes[note.note_id] = note
        return note.note_id

    def recall(self, query: str, limit: int = 5) -> list[Note]:
        """Notes sharing the most words with the query, best first."""
        wanted = set(fold_words(query))
        scored = []
        for note in self.notes.values():
            overlap = len(wanted & set(fold_words(note.text)))
            if overlap:
                scored.append((overlap, note.note_id, note))
        scored.sort(key=lambda item: (-item[0], item[1]))
        chosen = [note for _, _, note in scored[:limit]]
        for note in chosen:
            note.hits += 1
        return chosen

    def drop(self, note_id: int) -> bool:
        """Forget one note; returns whether it existed."""
        return self.notes.pop(note_id, None) is not None
