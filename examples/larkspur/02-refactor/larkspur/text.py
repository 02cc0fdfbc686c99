"""Text helpers shared by the note store and the prompt builder."""

from __future__ import annotations


def fold_words(text: str) -> list[str]:
    """Lower-case words without punctuation, used for matching notes to queries."""
    cleaned = "".join(ch if ch.isalnum() else " " for ch in text.lower())
    return cleaned.split()
