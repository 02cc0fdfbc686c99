"""Memories: short texts kept per user in a SQLite file, forgotten after a while."""

import sqlite3
import time

TTL_SECONDS = 7 * 24 * 3600
RECALL_LIMIT = 5

SCHEMA = """
CREATE TABLE IF NOT EXISTS memory (
    id INTEGER PRIMARY KEY,
    user_id TEXT NOT NULL,
    text TEXT NOT NULL,
    created REAL NOT NULL
)
"""


class MemoryStore:
    def __init__(self, path="fennel.db", clock=time.time):
        self.db = sqlite3.connect(path)
        self.db.execute(SCHEMA)
        self.clock = clock

    def remember(self, user_id, text):
        self.forget_expired()
        cur = self.db.execute(
            "INSERT INTO memory (user_id, text, created) VALUES (?, ?, ?)",
            (user_id, text, self.clock()),
        )
        self.db.commit()
        return cur.lastrowid

    def recall(self, user_id):
        self.forget_expired()
        rows = self.db.execute(
            "SELECT text FROM memory WHERE user_id = ? ORDER BY created DESC LIMIT ?",
            (user_id, RECALL_LIMIT),
        )
        return [text for (text,) in rows]

    def forget_expired(self):
        cutoff = self.clock() - TTL_SECONDS
        self.db.execute("DELETE FROM memory WHERE created < ?", (cutoff,))
        self.db.commit()
