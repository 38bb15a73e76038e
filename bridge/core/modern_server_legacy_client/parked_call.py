"""Mode B's parked call: one eligible modern request across all its rounds, and the exchange
its legacy request is filed under; its stages, their transition table, and its deadlines.

Must not decide what happens to a call (inputs.py does): it holds a call's state and checks
each move of it against the table; its legacy answer goes to its `CallOwner`.
"""

from __future__ import annotations

from enum import Enum
from typing import TYPE_CHECKING, Protocol

from bridge.core.codec import Message
from bridge.core.exchange import NO_REQUEST, Exchange
from bridge.core.jsonrpc import WireId
from bridge.core.modern_server_legacy_client.placement import INPUT_CAPABILITIES
from bridge.core.modern_server_legacy_client.questions import Question
from bridge.core.modern_server_legacy_client.request_meta import RequestMeta
from bridge.core.modern_server_legacy_client.request_state import request_digest
from bridge.core.modern_server_legacy_client.url_round import UrlRound
from bridge.core.states import IllegalMove

if TYPE_CHECKING:
    from bridge.core.context import Context

_INPUT_CAPABILITIES = INPUT_CAPABILITIES  # one C-level test a call
_NOTHING_SHIPPED: frozenset[str] = frozenset()


class CallStage(Enum):
    """Where an eligible call is, as its client sees it."""

    QUEUED = "queued"  # waiting for its turn at the legacy server
    RUNNING = "running"  # at the legacy server, its round waiting for the answer
    GATHERING = "gathering"  # the server asked: more questions are awaited for park_window
    PARKED = "parked"  # its round answered input_required; a retry resumes it
    RESUMED = "resumed"  # a retry came; its answers are being put to use
    AWAITING_URL = "awaiting url"  # the user accepted URL elicitations: time to finish them
    ENDED = "ended"  # answered, cancelled or timed out

    # Members are singletons compared by identity; Enum's own __hash__ is Python code, and
    # every call checks two moves against the table on the hot path.
    __hash__ = object.__hash__


# The stages a call passes on the hot path, as module globals: an attribute of an Enum class
# costs five times a global (EnumType defines __getattr__, so every class lookup goes
# through Python), and every call reads them.
CALL_QUEUED, CALL_RUNNING = CallStage.QUEUED, CallStage.RUNNING
CALL_PARKED, CALL_ENDED = CallStage.PARKED, CallStage.ENDED

_CALL_MOVES: dict[CallStage, frozenset[CallStage]] = {
    # A call declaring roots may first get a roots round of the bridge's own (roots.py).
    CallStage.QUEUED: frozenset({CallStage.RUNNING, CallStage.PARKED, CallStage.ENDED}),
    # A -32042 answer parks a running call in a URL round.
    CallStage.RUNNING: frozenset({CallStage.GATHERING, CallStage.PARKED, CallStage.ENDED}),
    # Every question refused on a second look: the call runs on.
    CallStage.GATHERING: frozenset({CallStage.RUNNING, CallStage.PARKED, CallStage.ENDED}),
    CallStage.PARKED: frozenset({CallStage.RESUMED, CallStage.ENDED}),
    # A retry's answers go to the server (the call runs on, or asks again), or end it, or,
    # for the bridge's own round, send it (again) or wait for the user at a URL.
    CallStage.RESUMED: frozenset({CallStage.RUNNING, CallStage.GATHERING, CallStage.PARKED,
                                  CallStage.QUEUED, CallStage.AWAITING_URL, CallStage.ENDED}),
    CallStage.AWAITING_URL: frozenset({CallStage.QUEUED, CallStage.ENDED}),
    CallStage.ENDED: frozenset(),
}


class CallDue(Enum):
    """A call's deadlines, owned by its key."""

    GATHER = "park window"  # ship the questions gathered so far
    PARKED = "parked timeout"  # the client did not retry: end the call
    URL = "url elicitation wait"  # the user had time to finish: send the call again


class CallOwner(Protocol):
    """Who a call's legacy answer goes to: the parking."""

    ctx: Context

    def call_answered(self, call: ParkedCall, message: Message) -> None: ...
    def call_expired(self, call: ParkedCall) -> None: ...


class ParkedCall(Exchange):
    """One eligible modern request, across all its rounds, and its legacy request: the
    exchange the legacy server answers. Its origin is NO_REQUEST, since its rounds change
    owner (`owner`)."""

    __slots__ = ("asked", "digest", "exclusive", "gave_roots", "key", "legacy_id", "meta",
                 "nonce", "outcome", "owner", "params", "parking", "questions", "retried",
                 "round_ids", "scheduled", "shipped", "stage", "token", "url")

    # request_timeout covers each round the legacy server works on: the router starts it
    # when the request goes out, the parking stops it while the call is parked (the client
    # is answering, not the server) and starts it again when a retry resumes the call.
    timed = True
    claims = True

    def __init__(self, parking: CallOwner, key: str, message: Message, meta: RequestMeta) -> None:
        # Exchange's members set directly, not through Exchange.__init__: one call less per call.
        self.origin = NO_REQUEST
        self.method = message["method"]
        self.id = ""
        self.sent = 0.0
        self.parking = parking
        self.key = key  # names the call in its requestState and its deadlines
        self.stage = CALL_QUEUED
        self.params: Message = message["params"]  # the current round's, re-sent after -32042
        self.digest: str | None = None  # see identity()
        self.meta = meta  # the current round's envelope: capabilities, logLevel, progressToken
        owner = message["id"]
        self.owner: WireId | None = owner  # the modern id waiting for this call; None while parked
        self.round_ids = [(type(owner), owner)]  # typed(), without the call
        self.exclusive = not _INPUT_CAPABILITIES.isdisjoint(meta.capabilities)
        self.retried = False
        self.legacy_id: str | None = None  # the minted id, while the legacy request is open
        self.token: str | None = None  # the progress token the legacy server was given
        self.questions: dict[str, Question] = {}
        self.shipped = _NOTHING_SHIPPED  # the keys of the questions of its last round
        self.asked = 0
        self.nonce: str | None = None  # the one requestState that may resume the call now
        self.outcome: Message | None = None  # the legacy answer, if it came while parked
        self.url: UrlRound | None = None  # the URL elicitations of a -32042, until re-sent
        self.scheduled = False  # whether a deadline of its own was ever set (most: never)
        self.gave_roots = False  # the client gave its roots in the bridge's round for it
        # Its first round as an observer filed it, while the call counts that round's
        # result itself (observe.py): given back on any move but to RUNNING.
        self.asking = None

    def move(self, to: CallStage) -> None:
        if to not in _CALL_MOVES[self.stage]:
            raise IllegalMove(f"call {self.key}", self.stage, to)
        self.stage = to
        if self.asking is not None and to is not CALL_RUNNING:
            self.give_back(self.parking.ctx)

    def counted(self) -> None:
        """Its first round's result relayed: counted, once, if it was claimed."""
        self.count_result(self.parking.ctx)
        self.asking = None

    def give_back(self, ctx: Context) -> None:
        """Its first round ends otherwise than with its result: filed again under that
        round's id (the call's origin is none), for the observer to count the answer."""
        asking, self.asking = self.asking, None
        if asking is not None and ctx.observer is not None:
            ctx.observer.give_back(self.round_ids[0][1], asking)

    @property
    def serving(self) -> WireId | None:
        # §9.3: progress and logs follow the round in progress; none while parked.
        return self.owner

    def identity(self) -> str:
        """The digest a requestState binds the call to, computed when the call first parks:
        most calls never park, and hashing canonical JSON was a third of their cost."""
        if self.digest is None:
            self.digest = request_digest(self.method, self.params)
        return self.digest

    def next_key(self) -> str:
        self.asked += 1
        return f"q{self.asked}"

    def answered(self, message: Message, line: bytes | None) -> None:
        self.parking.call_answered(self, message)

    def expired(self, ctx: Context) -> None:
        self.parking.call_expired(self)

    # lost(): nothing here; Parking.fail_all answers every round, at the server or not.
