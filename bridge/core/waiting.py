"""Client messages held while no server can take them: before the mode is known, and while the
server restarts; in the order they came, each request bounded by request_timeout. And where
the client's messages go meanwhile (`Intake`).

Must not interpret what it holds beyond a request's id and a cancellation's target: the mode
handler gets every message as it came once it can serve them.
"""

from __future__ import annotations

from enum import Enum
from typing import Final

from bridge.core.codec import Message
from bridge.core.context import Context
from bridge.core.errors import session_ended, timed_out
from bridge.core.events import CLIENT
from bridge.core.jsonrpc import Inbound, is_request_id, typed_id
from bridge.core.states import IllegalMove
from bridge.core.timers import Deadline, Timers


class Intake(Enum):
    """Where the client's messages go (but for a batch's, a refused one, or a request while
    closing)."""

    HELD = "held: no handler can serve yet, or the server restarts"
    RESUMING = "held: the handler is still re-opening the client's session at a new server"
    HANDLER = "to the handler"


_INTAKE_MOVES: dict[Intake, frozenset[Intake]] = {
    Intake.HELD: frozenset({Intake.RESUMING, Intake.HANDLER}),
    Intake.RESUMING: frozenset({Intake.HANDLER, Intake.HELD}),
    Intake.HANDLER: frozenset({Intake.HELD}),
}
# Read for each client message that takes the long way.
INTAKE_HANDLER: Final = Intake.HANDLER


class HeldDue(Enum):
    """A held request's deadline, owned by its number in the order of arrival."""

    REQUEST_TIMEOUT = "request_timeout of a held request"


class Waiting:
    """The held messages, keyed by their order of arrival (a timer's owner for requests)."""

    def __init__(self, ctx: Context, timers: Timers) -> None:
        self.ctx = ctx
        self.timers = timers  # the lifecycle's: held requests outlive any mode handler
        # HANDLER exactly while the lifecycle has a handler that has what was held (a
        # resuming handler's are released after the event in which it is done).
        self.intake = Intake.HELD
        self._held: dict[int, Inbound] = {}
        self._count = 0

    def move(self, to: Intake) -> None:
        if to not in _INTAKE_MOVES[self.intake]:
            raise IllegalMove("intake", self.intake, to)
        self.intake = to

    def __bool__(self) -> bool:
        return bool(self._held)

    def owes(self) -> bool:
        """Whether a held request still waits for its answer."""
        return any(inbound.kind == "request" for inbound in self._held.values())

    def hold(self, inbound: Inbound) -> None:
        """Keep a message for later; a cancellation of a held request removes it instead."""
        if inbound.kind == "notification" and self._cancels_held(inbound.message):
            return
        self._count += 1
        inbound.line = None  # held, the decoded message is enough: not its bytes as well
        self._held[self._count] = inbound
        timeout = self.ctx.config.request_timeout
        if timeout > 0 and inbound.kind == "request":
            self.timers.schedule(Deadline(self._count, HeldDue.REQUEST_TIMEOUT),
                                 self.ctx.now + timeout)

    def hold_first(self, inbounds: list[Inbound]) -> None:
        """Keep `inbounds`, taken before anything held now, ahead of it."""
        if not inbounds:
            return
        later, self._held = self._held, {}
        for inbound in inbounds:
            self.hold(inbound)
        self._held.update(later)

    def release(self) -> list[Inbound]:
        """Everything held, in order; nothing is held any more."""
        held, self._held = self._held, {}
        for number in held:
            self.timers.cancel(Deadline(number, HeldDue.REQUEST_TIMEOUT))
        return list(held.values())

    def expire(self, number: int) -> None:
        """A held request outlived request_timeout: it gets the usual timeout error."""
        inbound = self._held.pop(number, None)
        if inbound is not None:
            message = inbound.message
            self.ctx.fail(CLIENT, message["id"],
                          timed_out(self.ctx.config.request_timeout, message["method"]))
            self.ctx.log("warning", "request.timed_out", method=message["method"], held=True)

    def fail_all(self, reason: str, data: Message | None = None) -> None:
        """The bridge stops: every held request gets an error (exactly one answer each)."""
        for inbound in self.release():
            if inbound.kind == "request":
                self.ctx.fail(CLIENT, inbound.message["id"], session_ended(reason, data))

    def _cancels_held(self, message: Message) -> bool:
        """Whether `message` cancels a held request, which is then dropped (cancellation.mdx:
        the request never reached a server, so nothing else is owed)."""
        if message["method"] != "notifications/cancelled":
            return False
        params = message.get("params")
        target = params.get("requestId") if isinstance(params, dict) else None
        if not is_request_id(target):
            return False
        key = typed_id(target)
        for number, inbound in self._held.items():
            if inbound.kind == "request" and typed_id(inbound.message["id"]) == key:
                del self._held[number]
                self.timers.cancel(Deadline(number, HeldDue.REQUEST_TIMEOUT))
                self.ctx.log("info", "request.cancelled", held=True,
                             method=inbound.message["method"])
                return True
        return False
