"""What every part of the core shares while handling one event: the outbox, time, ids, timers.

Must not know any protocol method: it only collects actions and hands out ids and deadlines.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from bridge.core.codec import Message
from bridge.core.config import CoreConfig
from bridge.core.errors import OwnError, invalid_message
from bridge.core.events import Action, Log, Send, Side, Spliced
from bridge.core.jsonrpc import Inbound, WireId, error_response, result_response
from bridge.core.timers import Deadline, Timers

Asking = tuple[Message, float]
"""A client request as an observer files it: the request, and when it came."""

# Bridge-minted ids live in their own namespace so a peer's ids can never collide with them
# (TRANSLATION.md §11.1).
ID_PREFIX = "rosetta-"


def counter_ids(prefix: str = ID_PREFIX) -> Callable[[], str]:
    """A deterministic id factory: rosetta-1, rosetta-2, ..."""
    count = 0

    def mint() -> str:
        nonlocal count
        count += 1
        return f"{prefix}{count}"

    return mint


class Counting(Protocol):
    """An observer as the exchanges see it (observe.Observer): an exchange that relays the
    server's answer claims the request it serves and counts its result itself."""

    def claim(self, request_id: object) -> Asking | None: ...
    def give_back(self, request_id: object, asking: Asking) -> None: ...
    def result(self, asking: Asking, now: float) -> None: ...


class Context:
    """The outbox and services of one `Bridge`; mode handlers act only through it."""

    __slots__ = ("actions", "config", "log_enabled", "mint_id", "now", "observer", "timers")

    def __init__(self, config: CoreConfig, mint_id: Callable[[], str]) -> None:
        self.config = config
        self.mint_id = mint_id
        self.timers = Timers()
        self.actions: list[Action] = []
        self.now = 0.0
        self.log_enabled = config.debug_logs
        # The observer whose requests the exchanges claim and count (observe.py), if any.
        self.observer: Counting | None = None

    def send(self, side: Side, message: Message | list[Message],
             line: bytes | Spliced | None = None, request: WireId | None = None) -> None:
        """`line`: `message` already encoded, if the caller has it; `request`: the client
        request a message to the client belongs to (see Send)."""
        self.actions.append(Send(side, message, line, request))

    def reply(self, side: Side, id: WireId | None, result: Message) -> None:
        """Answer request `id` of `side` (an answer belongs to the request it answers)."""
        self.actions.append(Send(side, result_response(id, result), None,
                                 id if side == "client" else None))

    def reply_error(self, side: Side, id: WireId | None, code: int, message: str,
                    data: object = None) -> None:
        self.actions.append(Send(side, error_response(id, code, message, data), None,
                                 id if side == "client" else None))

    def fail(self, side: Side, id: WireId | None, error: OwnError) -> None:
        """Answer request `id` of `side` with an error of the bridge's own (errors.py)."""
        self.reply_error(side, id, error.code, error.message, error.data)

    def reject(self, side: Side, inbound: Inbound) -> None:
        """Invalid input: tell the client if it can be told (JSON-RPC §5), log it either way."""
        self.log("warning", "message.invalid", side=side, reason=inbound.reason)
        if side == "client" and inbound.code is not None:
            self.fail("client", inbound.id, invalid_message(inbound.code, inbound.reason))

    def log(self, level: str, event: str, **fields: object) -> None:
        self.actions.append(Log(level, event, fields))

    def debug(self, event: str, **fields: object) -> None:
        """A per-message log line, built only when debug logging is on (hot path)."""
        if self.log_enabled:
            self.actions.append(Log("debug", event, fields))

    def schedule(self, key: Deadline, delay: float) -> None:
        self.timers.schedule(key, self.now + delay)

    def cancel_timer(self, key: Deadline) -> None:
        self.timers.cancel(key)
