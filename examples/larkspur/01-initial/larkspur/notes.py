"""The note store: what Larkspur keeps between turns."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

MAX_NOTE_CHARS = 2000
_ids = itertools.count(1)


def fold_words(text: str) -> list[str]:
    """Lower-case words without punctuation, used for matching notes to queries."""
    cleaned = "".join(ch if ch.isalnum() else " " for ch in text.lower())
    return cleaned.split()


@dataclass
class Note:
    note_id: int
    text: str
    tags: tuple[str, ...] = ()
    hits: int = 0


@dataclass
class NoteStore:
    notes: dict[int, Note] = field(default_factory=dict)

    def keep(self, text: str, tags: tuple[str, ...] = ()) -> int:
        """File a note and return its id; over-long notes are refused."""
        if len(text) > MAX_NOTE_CHARS:
            raise ValueError(f"note longer than {MAX_NOTE_CHARS} characters")
        for note in self.notes.values():
            if note.text == text:
                return note.note_id
        note = Note(next(_ids), text, tags)
        self.notes[note.note_id] = note
        return note.note_id

    def recall(self, query: str, limit: int = 3) -> list[Note]:
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
