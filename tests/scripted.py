"""Scripted stand-ins for a language model, shared by the AI tests."""

from __future__ import annotations

from restrictiveness.ai.llm import FINAL_MARKER


def fenced(code: str, final: bool = False) -> str:
    """A model reply holding ``code`` in a python fence (marked final when ``final``), with
    prose around it as real replies have."""
    return (f"{FINAL_MARKER}\n" if final else "Let me run this.\n") + \
        f"```python\n{code}```\nDone."


class Scripted:
    """A fake model: replies from a script (the last one repeated), counting calls and keeping
    the messages it was sent."""

    model = "scripted-model"

    def __init__(self, *replies: str) -> None:
        self.replies, self.calls, self.seen = list(replies), 0, []

    def __call__(self, messages):
        self.seen.append(messages)
        reply = self.replies[min(self.calls, len(self.replies) - 1)]
        self.calls += 1
        return reply
