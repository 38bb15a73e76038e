"""JSON-RPC batches from a 2025-03-26 client: answered as one array (2025-03-26 basic §Batching).

Must not forward batches: elements travel one by one; only the answers are regrouped, and
the bridge never sends a batch to anyone else (TRANSLATION.md §10.3).
"""

from __future__ import annotations

from typing import Any

from bridge.core.context import Context
from bridge.core.events import CLIENT, Action, Send
from bridge.core.jsonrpc import Inbound


def _typed(id: Any) -> tuple[type, Any]:
    return (type(id), id)  # 1 and "1" (and True) are different ids


class _Batch:
    __slots__ = ("anonymous", "answers", "expected")

    def __init__(self, expected: set[tuple[type, Any]], anonymous: int) -> None:
        self.expected = expected
        self.anonymous = anonymous  # invalid elements, answered at once with id null
        self.answers: list[dict[str, Any]] = []

    def claim(self, message: dict[str, Any]) -> bool:
        key = _typed(message.get("id"))
        if key in self.expected:
            self.expected.discard(key)
        elif message.get("id") is None and self.anonymous:
            self.anonymous -= 1
        else:
            return False
        self.answers.append(message)
        return True

    @property
    def complete(self) -> bool:
        return not self.expected and not self.anonymous


class Batches:
    """The client batches whose answers are still being gathered."""

    def __init__(self) -> None:
        self.open: list[_Batch] = []

    def start(self, items: list[Inbound], ctx: Context) -> None:
        expected = {_typed(i.id) for i in items if i.kind == "request"}
        anonymous = sum(1 for i in items if i.kind == "invalid")
        if expected or anonymous:
            self.open.append(_Batch(expected, anonymous))
        ctx.log("info", "batch.received", size=len(items))

    def collect(self, actions: list[Action]) -> None:
        """Move answers for open batches out of `actions`; emit each batch once complete."""
        kept: list[Action] = []
        for action in actions:
            if type(action) is Send and action.side == CLIENT and self._claim(action.message):
                for batch in [b for b in self.open if b.complete]:
                    self.open.remove(batch)
                    kept.append(Send(CLIENT, batch.answers))
                continue
            kept.append(action)
        actions[:] = kept

    def _claim(self, message: Any) -> bool:
        if not isinstance(message, dict) or "method" in message:
            return False
        return any(batch.claim(message) for batch in self.open)
