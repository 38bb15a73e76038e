"""Mode B's roots: what the modern client said last, what the legacy server was told, and when
the bridge should ask the one or tell the other.

Must not park calls or send anything: inputs.py asks the client and answers the server,
roots_sync.py catches the server up; this keeps the two lists and decides. Rules:
client/roots.mdx (both eras); TRANSLATION.md §5.8.3, §5.8.5.

Why the bridge asks on its own. A legacy server commonly asks roots/list once (right after it
is initialized, on a timer, or in its first call that needs them), keeps the answer, and
relies on notifications/roots/list_changed to hear of changes. A modern client gives its
roots only in a call's input round, and never says they changed. So once the server has been
given roots, a call that declares roots first gets one roots round of the bridge's own when
what the bridge knows may be stale: always if the server got them from the bridge (the
client's were unknown); after the client sent notifications/roots/list_changed (removed in
2026-07-28, but a dual-era client may still send it: the one sign of change it can give); and
once what the bridge knows is older than `roots_refresh` (0: on every such call) if the server
can be told of changes. Whenever the client's roots differ from what the server was last told,
the server is told. A question the bridge answers itself gets the client's roots if known, else
the configured ones.
"""

from __future__ import annotations

from enum import Enum

from bridge.core.capabilities import declares
from bridge.core.codec import Message
from bridge.core.states import IllegalMove


class Resync(Enum):
    """Catching the server up after notifications/roots/list_changed (calls wait meanwhile)."""

    IDLE = "idle"  # nothing to catch up
    REASK = "reask"  # told; it has not asked roots/list again yet
    FENCE = "fence"  # asked and answered; a ping is out (answered in order: it has read them)
    # roots_settle passes, for a server that applies its roots asynchronously
    # (server-filesystem checks each directory before it uses the new list).
    SETTLE = "settle"


# New roots may arrive at any stage (another call's roots round): the server is told again.
_RESYNC_MOVES: dict[Resync, frozenset[Resync]] = {
    Resync.IDLE: frozenset({Resync.REASK}),
    Resync.REASK: frozenset({Resync.REASK, Resync.FENCE, Resync.IDLE}),
    Resync.FENCE: frozenset({Resync.REASK, Resync.SETTLE, Resync.IDLE}),
    Resync.SETTLE: frozenset({Resync.REASK, Resync.IDLE}),
}


class Roots:
    """The client's roots as last heard, the legacy server's as last told."""

    __slots__ = ("known", "learned_at", "listens", "resync", "stale", "static", "told")

    def __init__(self, static: tuple[str, ...]) -> None:
        self.static: list[object] = [{"uri": uri} for uri in static]  # the `roots` setting
        self.known: list[object] | None = None  # the client's roots, from its last input round
        self.learned_at = float("-inf")
        self.told: list[object] | None = None  # what the server last got for roots/list
        self.listens = False  # whether the server was promised roots/list_changed
        self.resync = Resync.IDLE
        self.stale = False  # the client said its roots changed since the bridge heard them

    def move(self, to: Resync) -> None:
        if to not in _RESYNC_MOVES[self.resync]:
            raise IllegalMove("roots resync", self.resync, to)
        self.resync = to

    @property
    def resyncing(self) -> bool:
        return self.resync is not Resync.IDLE

    def capability(self, client_caps: Message) -> Message:
        """The roots capability to declare to the legacy server at initialize.

        listChanged only if the modern client declares roots: only then can the bridge learn
        of changes to pass on.
        """
        self.listens = declares(client_caps, ("roots",))
        return {"listChanged": True} if self.listens else {}

    def any_known(self) -> bool:
        """Whether the bridge has roots to give: the client's, or configured ones."""
        return self.known is not None or bool(self.static)

    def answer(self) -> Message:
        """The answer to a roots/list the bridge must give itself: the client's roots if
        known, else the configured ones."""
        roots = self.known if self.known is not None else self.static
        self.told = roots
        return {"roots": roots}

    def wanted(self, client_caps: Message, now: float, refresh: float) -> bool:
        """Whether a call declaring `client_caps` should first ask the client for its roots."""
        if self.told is None or not declares(client_caps, ("roots",)):
            return False
        if self.known is None or self.stale:
            return True
        return self.listens and now - self.learned_at >= refresh

    def learn(self, roots: list[object], now: float) -> bool:
        """The client gave its roots; True if the server must now be told they changed."""
        self.known = roots
        self.learned_at = now
        self.stale = False
        return self.listens and self.told is not None and roots != self.told

    def relayed(self, roots: list[object], now: float) -> None:
        """The server asked during a call and got the client's own answer."""
        self.known = self.told = roots
        self.learned_at = now
        self.stale = False
