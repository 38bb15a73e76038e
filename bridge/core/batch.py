"""JSON-RPC batches from a 2025-03-26 client: answered as one array (2025-03-26 basic §Batching).

Must not forward batches: elements travel one by one; only the answers are regrouped, and
the bridge never sends a batch to anyone else (TRANSLATION.md §10.3).

What each element owes in the array (JSON-RPC 2.0 §6): a request, one response under its id
(an error if it is nested too deep, limits.py); an invalid element, one error (under its id
when it has a usable one, else id null), given here at once; a notification or a response
(the client answering the bridge), nothing; a request the client cancels, nothing more
(cancellation.mdx). A batch owing nothing gets no array at all. Answers are matched by id
only, so an unrelated error (id null) can never land in an open batch.
"""

from __future__ import annotations

from bridge.core.codec import Message
from bridge.core.context import Context
from bridge.core.eras import INVALID_REQUEST
from bridge.core.errors import OwnError, invalid_message
from bridge.core.events import CLIENT, Action, Send
from bridge.core.jsonrpc import Inbound, TypedId, WireId, error_response, is_request_id, typed_id
from bridge.core.limits import event_for, is_request, unattributed


def _error(request_id: WireId | None, error: OwnError) -> Message:
    return error_response(request_id, error.code, error.message, error.data)


class _Batch:
    __slots__ = ("answers", "expected")

    def __init__(self) -> None:
        self.expected: dict[TypedId, int] = {}  # typed id -> answers still owed
        self.answers: list[Message] = []

    def expect(self, request_id: WireId) -> None:
        key = typed_id(request_id)
        self.expected[key] = self.expected.get(key, 0) + 1

    def claim(self, key: TypedId, message: Message) -> bool:
        """Take `message` as the answer it owes under `key`; False if it owes none."""
        if not self.forget(key):
            return False
        self.answers.append(message)
        return True

    def forget(self, key: TypedId) -> bool:
        """Owe one answer less under `key`; False if none was owed."""
        owed = self.expected.get(key)
        if owed is None:
            return False
        if owed > 1:
            self.expected[key] = owed - 1
        else:
            del self.expected[key]
        return True


class Batches:
    """The client batches whose answers are still being gathered."""

    def __init__(self) -> None:
        self.open: list[_Batch] = []

    def start(self, items: list[Inbound], ctx: Context) -> list[Inbound]:
        """Open a batch; answer its invalid elements; the elements left to handle one by one."""
        ctx.log("info", "batch.received", size=len(items))
        batch = _Batch()
        rest: list[Inbound] = []
        for item in items:
            if item.kind == "invalid":
                ctx.log("warning", "message.invalid", side=CLIENT, reason=item.reason)
                if item.code is not None:  # a malformed response is never answered
                    batch.answers.append(_error(item.id, invalid_message(item.code, item.reason)))
                continue
            if item.kind == "refused" and unattributed(item):
                ctx.log("warning", event_for(item), side=CLIENT, reason=item.reason,
                        outcome="answered with id null")
                batch.answers.append(_error(None, invalid_message(item.code or INVALID_REQUEST,
                                                                  item.reason)))
                continue
            if item.kind == "request" or (item.kind == "refused" and is_request(item)):
                batch.expect(item.id)
            rest.append(item)
        if batch.expected or batch.answers:
            self.open.append(batch)
        return rest

    def on_notification(self, message: Message) -> None:
        """A request the client cancels is owed no answer (cancellation.mdx): stop waiting."""
        if message["method"] != "notifications/cancelled":
            return
        params = message.get("params")
        target = params.get("requestId") if isinstance(params, dict) else None
        if not is_request_id(target):
            return
        key = typed_id(target)
        for batch in self.open:
            if batch.forget(key):
                return

    def collect(self, actions: list[Action]) -> None:
        """Move answers for open batches out of `actions`; emit each batch once complete."""
        kept: list[Action] = []
        for action in actions:
            if type(action) is Send and action.side == CLIENT and self._claim(action.message):
                self._emit_complete(kept)
                continue
            kept.append(action)
        self._emit_complete(kept)
        actions[:] = kept

    def _claim(self, message: object) -> bool:
        if not isinstance(message, dict) or "method" in message:
            return False
        request_id = message.get("id")
        if not is_request_id(request_id):
            return False
        key = typed_id(request_id)
        return any(batch.claim(key, message) for batch in self.open)

    def _emit_complete(self, out: list[Action]) -> None:
        for batch in [b for b in self.open if not b.expected]:
            self.open.remove(batch)
            if batch.answers:  # 2025-03-26 basic §Batching: never an empty array
                out.append(Send(CLIENT, batch.answers))
