"""A 2026-07-28 request renamed into the front's id space, and what the core sends for it
restored to the client's names.

Must not route nor hold a stream (the front's `modern.Mapping` does): this is the rule alone.
A modern request is stateless, so every POST, whatever connection carried it, is a client
message of one shared session, whose core assumes one client's id space: two clients'
`"id": 1`, or progress token `"t"`, must not meet there. So each request gets a wire id of
the front's own (`http-N`), used for its id and its progress token, and everything the core
sends for it gets the client's names back: the answer's id, a progress notification's token,
and a listen stream's subscription id.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Final

from bridge.core.codec import Message
from bridge.streamable.headers import LISTEN, ParamHeaders

PREFIX: Final = "http-"
SUBSCRIPTION_ID: Final = "io.modelcontextprotocol/subscriptionId"
PROGRESS: Final = "notifications/progress"
CANCELLED: Final = "notifications/cancelled"


@dataclass(slots=True)
class Renamed:
    """One request's names on either side of the front."""

    original: object
    """The id as the client spelled it (restored on the way out)."""
    wire: str
    """The id the core knows it by."""
    method: str
    token: object = None
    """The client's `_meta.progressToken`, if it named one (the core knows it as `wire`)."""


class Renaming:
    """The front's id space, and what it learns from the answers it restores: the tools'
    `Mcp-Param-*` headers (`param_headers`, from `tools/list` answers)."""

    def __init__(self) -> None:
        self._numbers = itertools.count(1)
        self.param_headers = ParamHeaders()

    def admit(self, message: Message) -> tuple[Renamed, Message]:
        """A client's request, checked (`headers.check`): its names, and the message the core
        takes (a copy: the client's own is not changed)."""
        wire = f"{PREFIX}{next(self._numbers)}"
        names = Renamed(message.get("id"), wire, str(message.get("method")))
        renamed = {**message, "id": wire}
        params = message.get("params")
        meta = params.get("_meta") if isinstance(params, dict) else None
        if isinstance(meta, dict) and "progressToken" in meta:
            names.token = meta["progressToken"]
            renamed["params"] = {**params, "_meta": {**meta, "progressToken": wire}}  # type: ignore[dict-item]
        return names, renamed

    def restore(self, message: Message, names: Renamed) -> tuple[Message, bool]:
        """A message the core sends for the request `names`, in the client's names (the same
        object when none of them is in it), and whether it is the request's answer."""
        answer = "method" not in message and message.get("id") == names.wire
        if names.token is not None and message.get("method") == PROGRESS:
            progress = message.get("params")
            if isinstance(progress, dict) and progress.get("progressToken") == names.wire:
                message = {**message, "params": {**progress, "progressToken": names.token}}
        if names.method == LISTEN:
            message = _subscription_restored(message, names)
        if answer:
            message = {**message, "id": names.original}
            if names.method == "tools/list" and "result" in message:
                self.param_headers.learn(message["result"])
        return message, answer


def cancellation(names: Renamed, reason: str) -> Message:
    """The request's cancellation, for the core, once its client has gone
    (streamable-http.mdx §Cancellation: closing the stream is how a client cancels)."""
    return {"jsonrpc": "2.0", "method": CANCELLED,
            "params": {"requestId": names.wire, "reason": reason}}


def _subscription_restored(message: Message, names: Renamed) -> Message:
    """A listen stream's message with the client's id as its subscription id.

    basic/patterns/subscriptions.mdx §Receiving Notifications: the subscription id is the
    JSON-RPC id of the `subscriptions/listen` request, on the acknowledgement, on every
    notification and on the closing result; a client waits for the acknowledgement naming
    its own id, so the wire id must not reach it.
    """
    key = "params" if "method" in message else "result"
    body = message.get(key)
    meta = body.get("_meta") if isinstance(body, dict) else None
    if not isinstance(meta, dict) or meta.get(SUBSCRIPTION_ID) != names.wire:
        return message
    restored = {**meta, SUBSCRIPTION_ID: names.original}
    return {**message, key: {**body, "_meta": restored}}  # type: ignore[dict-item]
