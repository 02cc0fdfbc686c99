"""One turn: recall the user's memories, ask the model, store what it marks."""

MARKER = "MEMORY:"


def extract_memories(reply):
    """Lines of the model's reply that ask to be remembered, without the marker."""
    return [
        line[len(MARKER):].strip()
        for line in reply.splitlines()
        if line.startswith(MARKER) and line[len(MARKER):].strip()
    ]


def visible_reply(reply):
    return "\n".join(line for line in reply.splitlines() if not line.startswith(MARKER))


class Assistant:
    def __init__(self, model, store):
        self.model = model
        self.store = store

    def turn(self, user_id, message):
        memories = self.store.recall(user_id)
        prompt = "\n".join(["You know this about the user:", *memories, "", message])
        reply = self.model.complete(prompt)
        for memory in extract_memories(reply):
            self.store.remember(user_id, memory)
        return visible_reply(reply)
