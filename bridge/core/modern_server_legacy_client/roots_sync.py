"""Mode B's roots catch-up: once the client's roots differ from what the legacy server was
told, the server is told, and calls wait until it has read them (roots.py says when;
TRANSLATION.md §5.8.5).

Must not park or start calls: it tells the parking (`RootsHost.pump`) when calls may go
again. client/roots.mdx (2025-11-25) §Root List Changes: on notifications/roots/list_changed
the server asks roots/list again; a ping after that answer is answered in order, so by then
the server has read them; `roots_settle` then gives a server that applies them asynchronously
time to do so, and `roots_wait` bounds the whole wait.
"""

from __future__ import annotations

from enum import Enum
from typing import Protocol

from bridge.core.codec import Message
from bridge.core.context import Context
from bridge.core.events import SERVER
from bridge.core.exchange import NO_REQUEST, Exchange
from bridge.core.jsonrpc import WireId, notification
from bridge.core.modern_server_legacy_client.roots import Resync, Roots
from bridge.core.router import Router
from bridge.core.timers import Deadline


class RootsHost(Protocol):
    """What the catch-up needs of the parking: its legacy server, and to let calls go."""

    ctx: Context
    router: Router

    def pump(self) -> None: ...


class RootsDue(Enum):
    """The catch-up's one deadline: how long the server gets to catch up."""

    RESYNC = "roots resync"


_RESYNC_DEADLINE = Deadline(None, RootsDue.RESYNC)


class RootsFence(Exchange):
    """The ping after the server read the client's new roots: answered in order, so by then
    it has applied them."""

    __slots__ = ("sync",)

    def __init__(self, sync: RootsSync) -> None:
        super().__init__(NO_REQUEST, "ping")
        self.sync = sync

    def answered(self, message: Message, line: bytes | None) -> None:
        self.sync.fenced()


class RootsSync:
    """Telling the legacy server of the client's new roots, and knowing when it has caught up."""

    __slots__ = ("ctx", "host", "roots")

    def __init__(self, host: RootsHost, roots: Roots) -> None:
        self.host = host
        self.ctx = host.ctx
        self.roots = roots

    def learn(self, response: Message) -> None:
        """The client gave its roots in a round: tell the server if they changed."""
        roots = response.get("roots")
        if not isinstance(roots, list) or not self.roots.learn(roots, self.ctx.now):
            return
        # The server asks again. Calls wait for that, so they reach a server that knows the
        # roots they were made with.
        self.ctx.send(SERVER, notification("notifications/roots/list_changed"))
        self.ctx.log("info", "roots.changed", roots=len(roots))
        self.roots.move(Resync.REASK)
        self.ctx.schedule(_RESYNC_DEADLINE, self.ctx.config.roots_wait)

    def answer(self, legacy_id: WireId | None) -> None:
        """The roots just learned; if the server asks after roots/list_changed, then a ping to
        know it has read them."""
        self.ctx.reply(SERVER, legacy_id, self.roots.answer())
        if self.roots.resync is Resync.REASK:
            self.roots.move(Resync.FENCE)
            self.host.router.issue(SERVER, "ping", None, RootsFence(self))

    def fenced(self) -> None:
        """The server answered the ping after its roots/list: it has read the new roots."""
        if self.roots.resync is not Resync.FENCE:
            return
        settle = self.ctx.config.roots_settle
        if settle > 0:
            self.roots.move(Resync.SETTLE)
            self.ctx.schedule(_RESYNC_DEADLINE, settle)
        else:
            self._caught_up()

    def on_timer(self, key: Deadline) -> None:
        if self.roots.resync is not Resync.SETTLE:
            self.ctx.log("warning", "roots.not_caught_up", stage=self.roots.resync.value,
                         waited_s=self.ctx.config.roots_wait)
        self._caught_up()

    def _caught_up(self) -> None:
        self.ctx.cancel_timer(_RESYNC_DEADLINE)
        if self.roots.resyncing:
            self.roots.move(Resync.IDLE)
        self.host.pump()
