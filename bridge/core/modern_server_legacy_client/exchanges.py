"""Mode B's requests to the legacy server, other than calls (parked_call.py), subscriptions
(listen.py) and the roots fence (roots_sync.py): each owns what its answer, its deadline and a
lost server mean.

Must not reach the mode itself: each holds what it needs through `ModernFace`, the few
things of mode B's modern face an answer needs.
"""

from __future__ import annotations

from typing import Protocol

from bridge.core.codec import Message
from bridge.core.context import Context
from bridge.core.events import CLIENT
from bridge.core.exchange import NO_REQUEST, ClientRequest, Exchange
from bridge.core.jsonrpc import WireId
from bridge.core.modern_server_legacy_client.progress import ProgressRelay
from bridge.core.modern_server_legacy_client.request_meta import RequestMeta


class ModernFace(Protocol):
    """What an answer from the legacy server needs of mode B."""

    ctx: Context
    progress: ProgressRelay

    def modern_result(self, method: str, result: Message, *, retried: bool = False) -> Message:
        ...
    def relay_error(self, request_id: WireId | None, error: Message) -> None: ...
    def initialized(self, message: Message) -> None: ...
    def settled(self) -> None: ...


class LegacyForward(ClientRequest):
    """A client request that is not an eligible call, forwarded to the legacy server: its
    answer goes back modern, and the progress token the server was given goes with it."""

    __slots__ = ("face", "meta", "token")

    def __init__(self, face: ModernFace, origin: WireId, method: str, meta: RequestMeta) -> None:
        # Set directly, not through Exchange.__init__: one call less per request forwarded.
        self.origin = origin
        self.method = method
        self.id = ""
        self.sent = 0.0
        self.face = face
        self.meta = meta
        self.token: str | None = None  # the bridge's progress token, if the client asked
        self.asking = None

    @property
    def serving(self) -> WireId | None:
        return self.origin

    def answered(self, message: Message, line: bytes | None) -> None:
        face = self.face
        face.progress.untrack(self.token)
        if "error" in message:
            self.give_back(face.ctx)
            face.relay_error(self.origin, message["error"])
        else:
            if self.asking is not None:  # claimed (observe.py)
                self.count_result(face.ctx)
            face.ctx.reply(CLIENT, self.origin, face.modern_result(self.method, message["result"]))

    def expired(self, ctx: Context) -> None:
        self.face.progress.untrack(self.token)
        super().expired(ctx)

    def lost(self, ctx: Context, reason: str, data: Message | None) -> None:
        self.face.progress.untrack(self.token)
        super().lost(ctx, reason, data)

    def cancelled(self) -> None:
        """The client withdrew it (the router told the server)."""
        self.face.progress.untrack(self.token)


class LegacyInitialize(Exchange):
    """The bridge's own `initialize` (§5.8.1): its answer decides the handshake."""

    __slots__ = ("face",)

    def __init__(self, face: ModernFace) -> None:
        super().__init__(NO_REQUEST, "initialize")
        self.face = face

    def answered(self, message: Message, line: bytes | None) -> None:
        self.face.initialized(message)


class SettlingPing(Exchange):
    """The ping after `notifications/initialized` (§11.5): answered in order, so what the
    server asked on being initialized has arrived by then, and the bridge is ready."""

    __slots__ = ("face",)

    def __init__(self, face: ModernFace) -> None:
        super().__init__(NO_REQUEST, "ping")
        self.face = face

    def answered(self, message: Message, line: bytes | None) -> None:
        self.face.settled()


class Housekeeping(Exchange):
    """A request of the bridge's own whose answer changes nothing (logging/setLevel,
    resources/unsubscribe): a refusal is logged, and a lost server loses nothing."""

    __slots__ = ("ctx",)

    def __init__(self, ctx: Context, method: str) -> None:
        super().__init__(NO_REQUEST, method)
        self.ctx = ctx

    def answered(self, message: Message, line: bytes | None) -> None:
        if "error" in message:
            self.ctx.log("warning", "request.refused", method=self.method,
                         code=message["error"].get("code"))
