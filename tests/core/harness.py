"""A driver for transcript tests of the core: messages in, messages out, time by hand."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from typing import Any

from bridge.core.bridge import Bridge
from bridge.core.codec import RawNumber, decode, encode
from bridge.core.config import CoreConfig
from bridge.core.context import ID_PREFIX, counter_ids
from bridge.core.eras import (
    META_CLIENT_CAPABILITIES,
    META_PROTOCOL_VERSION,
    META_SUBSCRIPTION_ID,
    MODERN_PROTOCOL_VERSION,
)
from bridge.core.events import (
    Action,
    ChangeRelayed,
    ChildExited,
    ChildStarted,
    Log,
    MessageReceived,
    MessageTooLarge,
    PeerClosed,
    RestartChild,
    Send,
    ShutdownRequested,
    Spliced,
    TimerFired,
)
from bridge.core.jsonrpc import parse_inbound
from bridge.core.observe import Observer, Tally

Message = dict[str, Any]

DISCOVER_RESULT: Message = {
    "resultType": "complete",
    "supportedVersions": [MODERN_PROTOCOL_VERSION],
    "capabilities": {"tools": {}, "resources": {}, "prompts": {}, "logging": {},
                     "completions": {}},
    "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "ModernSrv", "version": "2.0",
                                                     "title": "Modern", "icons": []}},
    "instructions": "Use the tools.",
    "ttlMs": 60000,
    "cacheScope": "public",
}


def modern_meta(caps: Message | None = None) -> Message:
    return {META_PROTOCOL_VERSION: MODERN_PROTOCOL_VERSION, META_CLIENT_CAPABILITIES: caps or {}}


# Placeholders for the ids the bridge mints -------------------------------------------------
#
# A test that spells out an id the bridge minted (ID_PREFIX and a number) depends on the order
# in which the bridge mints its ids, which is no behaviour of the bridge. It names the id
# instead (`h.minted("call")`), as mitmproxy's playbook tests name a flow before the layer
# creates it (test/mitmproxy/proxy/tutils.py, `Placeholder`): the first comparison binds the
# name to the id, later ones check it.

MINTED_SHAPE = re.compile(re.escape(ID_PREFIX) + "[1-9][0-9]*")


class UnboundPlaceholder(Exception):
    """A test sent a placeholder before any comparison bound it: a mistake in the test."""


class Placeholder:
    """The id the bridge minted for one purpose of the test's, named before it is known.

    Compared with a value, an unbound placeholder binds to it if it is an id this harness's
    bridge minted (ID_PREFIX and a number) that no other placeholder holds, and is equal to it;
    a bound one is equal to its id only. A comparison that fails on another member may still
    have bound it: the test fails there anyway. Where a test sends a message, the harness puts the
    bound id in the placeholder's place; `p()` is the bound id.
    """

    __slots__ = ("_ids", "name", "value")

    def __init__(self, name: str, ids: MintedIds) -> None:
        self.name = name
        self.value: str | None = None
        self._ids = ids

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Placeholder):
            return other is self
        if self.value is None:
            self._ids.bind(self, other)
        return self.value is not None and other == self.value

    __hash__ = None  # type: ignore[assignment]  # equal to a str, so never a dict key

    def __call__(self) -> str:
        if self.value is None:
            raise UnboundPlaceholder(
                f"placeholder {self.name!r} is used before it was bound: compare it with the "
                f"message that carries the id first (the bridge minted {self._ids.minted})")
        return self.value

    def __repr__(self) -> str:
        return f"<minted {self.name}={self.value!r}>" if self.value else f"<minted {self.name}>"


class MintedIds:
    """The ids one bridge minted, and the placeholders that stand for them."""

    def __init__(self, mint: Callable[[], str]) -> None:
        self._mint = mint
        self.minted: list[str] = []
        self._named: dict[str, Placeholder] = {}
        self._bound: dict[str, Placeholder] = {}

    def mint(self) -> str:
        """The bridge's `mint_id`: the wrapped factory's next id, recorded."""
        value = self._mint()
        self.minted.append(value)
        return value

    def placeholder(self, name: str) -> Placeholder:
        if name not in self._named:
            self._named[name] = Placeholder(name, self)
        return self._named[name]

    def bind(self, placeholder: Placeholder, value: object) -> None:
        if (isinstance(value, str) and MINTED_SHAPE.fullmatch(value) and value in self.minted
                and value not in self._bound):
            placeholder.value = value
            self._bound[value] = placeholder


def resolved(message: Any) -> Any:
    """`message` with each placeholder in it replaced by its id (`message` itself if none)."""
    if isinstance(message, Placeholder):
        return message()
    if isinstance(message, dict):
        values = {key: resolved(value) for key, value in message.items()}
        changed = any(values[key] is not value for key, value in message.items())
        return values if changed else message
    if isinstance(message, list):
        items = [resolved(item) for item in message]
        return items if any(a is not b for a, b in zip(items, message, strict=True)) else message
    return message


class ClientRequests:
    """The client's requests in flight, with their ids as the core's codec reads them, so each
    message to the client can be checked against them (DESIGN.md: every message to the
    client names its request): an answer names the request it answers, anything else names
    a request the client has in flight, or none."""

    def __init__(self) -> None:
        # How many requests under each id are in flight: a client may reuse an id it has in
        # flight (JSON-RPC forbids it; the fuzz's mutations do it), each answered in turn.
        self.open: Counter[tuple[type, Any]] = Counter()

    def received(self, raw: bytes) -> None:
        """Note the requests on a line the client wrote, read as the core reads them (a
        2025-03-26 batch element by element: each too deep alone is refused alone)."""
        inbound = parse_inbound(raw, batching=True)
        for item in (inbound.items or []) if inbound.kind == "batch" else [inbound]:
            if item.kind == "request":
                self.open[_typed(item.id)] += 1

    def check(self, send: Send) -> None:
        message = send.message
        if isinstance(message, list):  # a batch's answers carry their own ids
            assert send.request is None, send
            for item in message:
                if isinstance(item, dict) and _hashable(item.get("id")):
                    self._answered(item.get("id"))
        elif "method" not in message:
            assert send.request is message.get("id") or _typed(send.request) == _typed(
                message.get("id")), (
                f"an answer to {message.get('id')!r} names request {send.request!r}")
            if _hashable(message.get("id")):
                self._answered(message.get("id"))
        elif send.request is not None:
            assert self.open[_typed(send.request)] > 0, (
                f"{message['method']} names request {send.request!r}, which the client does "
                f"not have in flight")


    def _answered(self, request_id: Any) -> None:
        key = _typed(request_id)
        if self.open[key] > 1:
            self.open[key] -= 1
        else:
            self.open.pop(key, None)


def _typed(id: Any) -> tuple[type, Any]:
    return (type(id), id)


def _hashable(id: Any) -> bool:
    return id is None or isinstance(id, str | int | float | RawNumber)


class Harness:
    """One Bridge, a hand-driven clock, and the actions it produced, split by kind."""

    def __init__(self, config: CoreConfig | None = None,
                 mint_id: Callable[[], str] | None = None, *, observed: bool = False) -> None:
        self.ids = MintedIds(mint_id or counter_ids())
        observer = Observer(Tally((0.1, 1.0)), traced=True) if observed else None
        self.bridge = Bridge(config or CoreConfig(), mint_id=self.ids.mint, observer=observer)
        self.now = 0.0
        self.logs: list[Log] = []
        self._requests: dict[str, Message] = {}  # method -> the last such request to the server
        self.client_requests = ClientRequests()

    def minted(self, name: str) -> Placeholder:
        """The placeholder `name` of this bridge's minted ids (the same one on every call)."""
        return self.ids.placeholder(name)

    def sent_request(self, method: str) -> Message:
        """The last request of `method` the bridge sent to the server (to answer one the test
        has no other reason to look at, such as the settling ping)."""
        assert method in self._requests, f"the bridge sent the server no {method} request"
        return self._requests[method]

    def _run(self, event: Any) -> list[Action]:
        actions = self.bridge.handle(event, self.now)
        self.logs += [a for a in actions if isinstance(a, Log)]
        errors = [a for a in actions if isinstance(a, Log) and a.event == "bridge.error"]
        assert not errors, errors
        for action in actions:  # a line the shell writes as it is must say what the message says
            if isinstance(action, Send) and action.line is not None:
                line = whole(action.line)
                assert line.endswith(b"\n") and line.count(b"\n") == 1
                assert decode(line) == decode(encode(action.message)), action.message
            if isinstance(action, Send) and action.side == "server":
                self._note_requests(action.message)
            elif isinstance(action, Send):
                self.client_requests.check(action)
        return actions

    def _note_requests(self, message: Any) -> None:
        for item in message if isinstance(message, list) else [message]:
            if isinstance(item, dict) and "id" in item and isinstance(item.get("method"), str):
                self._requests[item["method"]] = item

    def start(self) -> list[Action]:
        return self._run(ChildStarted())

    def client(self, message: Any) -> list[Action]:
        raw = message if isinstance(message, bytes) else encode(resolved(message)).rstrip(b"\n")
        self.client_requests.received(raw)
        return self._run(MessageReceived("client", raw))

    def server(self, message: Any) -> list[Action]:
        raw = message if isinstance(message, bytes) else encode(resolved(message)).rstrip(b"\n")
        return self._run(MessageReceived("server", raw))

    def too_large(self, side: str, head: bytes, limit: int = 1024,
                  tail: bytes = b"") -> list[Action]:
        """`side` wrote a line longer than `limit` bytes that began with `head` (and ended
        with `tail`, if given)."""
        return self._run(MessageTooLarge(side, head, limit, tail))  # type: ignore[arg-type]

    def advance(self, seconds: float) -> list[Action]:
        self.now += seconds
        return self._run(TimerFired())

    def exit_child(self, code: int = 1, cause: str = "",
                   stderr_tail: tuple[str, ...] = ()) -> list[Action]:
        return self._run(ChildExited(code, cause, stderr_tail))

    def close(self, side: str, gone: bool = False) -> list[Action]:
        """`side` closed its output; `gone`: it cannot read either (closed or reset)."""
        return self._run(PeerClosed(side, gone))  # type: ignore[arg-type]

    def shutdown(self, grace: float = 0.0) -> list[Action]:
        return self._run(ShutdownRequested(grace))

    def relayed(self, change: Message) -> list[Action]:
        """Another core of the client shared a change its server raised."""
        return self._run(ChangeRelayed(change))


def restarted(h: Harness) -> Message | None:
    """After the server was lost: wait out the back-off (and, after a closed output, the wait
    for its exit status first), then start the new server; the probe it gets (None if it gets
    none)."""
    for _ in range(2):
        deadline = h.bridge.next_deadline()
        assert deadline is not None, "no restart is scheduled"
        actions = h.advance(deadline - h.now)
        if any(isinstance(a, RestartChild) for a in actions):
            break
    assert [a for a in actions if isinstance(a, RestartChild)] == [RestartChild()], actions
    probe = sent(h.start(), "server")
    return probe[0] if probe else None


def lines(actions: list[Action], side: str) -> list[bytes | None]:
    """The pre-encoded line of each message sent to `side` (None: the shell encodes it)."""
    return [None if a.line is None else whole(a.line)
            for a in actions if isinstance(a, Send) and a.side == side]


def whole(line: bytes | Spliced) -> bytes:
    """A pre-encoded line as the peer reads it (a spliced one's pieces joined)."""
    return line if isinstance(line, bytes) else line.joined()


def sent(actions: list[Action], side: str) -> list[Any]:
    return [a.message for a in actions if isinstance(a, Send) and a.side == side]


def one(actions: list[Action], side: str) -> Any:
    messages = sent(actions, side)
    assert len(messages) == 1, messages
    return messages[0]


def initialize(version: str = "2025-11-25", caps: Message | None = None, id: Any = 0) -> Message:
    return {"jsonrpc": "2.0", "id": id, "method": "initialize",
            "params": {"protocolVersion": version, "capabilities": caps or {},
                       "clientInfo": {"name": "OldClient", "version": "1.0"}}}


def mode_a(version: str = "2025-11-25", caps: Message | None = None,
           discover: Message | None = None, config: CoreConfig | None = None,
           ack: Message | None = None) -> tuple[Harness, Message]:
    """A bridge in mode A after initialize; returns it and the InitializeResult.

    If the server's capabilities ask for a listen stream (its id: `h.minted("listen")`), it is
    acknowledged with `ack` (default: everything asked).
    """
    h = Harness(config)
    probe = one(h.start(), "server")
    h.client(initialize(version, caps))
    actions = h.server({"jsonrpc": "2.0", "id": probe["id"], "result": discover or DISCOVER_RESULT})
    to_client = sent(actions, "client")
    if not to_client:
        listen = one(actions, "server")
        assert listen["method"] == "subscriptions/listen"
        assert listen["id"] == h.minted("listen"), listen
        honored = ack if ack is not None else listen["params"]["notifications"]
        actions = h.server({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
                            "params": {"_meta": {META_SUBSCRIPTION_ID: listen["id"]},
                                       "notifications": honored}})
        to_client = sent(actions, "client")
    assert len(to_client) == 1 and "result" in to_client[0], to_client
    h.client({"jsonrpc": "2.0", "method": "notifications/initialized"})
    return h, to_client[0]["result"]


def legacy_pair(version: str = "2025-06-18") -> tuple[Harness, Message]:
    """A bridge in mode P between legacy peers after initialize; returns it and the answer."""
    h = Harness()
    probe = one(h.start(), "server")
    h.client(initialize(version))
    forwarded = one(h.server(fail(probe, -32601, "Method not found")), "server")
    reply = one(h.server(answer(forwarded, {"protocolVersion": version, "capabilities": {},
                                            "serverInfo": {"name": "old", "version": "1"}})),
                "client")
    return h, reply


def modern_pair() -> Harness:
    """A bridge in mode P between modern peers, after a first request and its answer (relayed
    under `h.minted("first")`)."""
    h = Harness()
    probe = one(h.start(), "server")
    h.client(request("first", "ping", {"_meta": modern_meta()}))
    forwarded = one(h.server(answer(probe, DISCOVER_RESULT)), "server")
    assert forwarded["id"] == h.minted("first"), forwarded
    one(h.server(answer(forwarded, {"resultType": "complete"})), "client")
    return h


def request(id: Any, method: str, params: Message | None = None) -> Message:
    message: Message = {"jsonrpc": "2.0", "id": id, "method": method}
    if params is not None:
        message["params"] = params
    return message


def answer(to: Message, result: Message) -> Message:
    return {"jsonrpc": "2.0", "id": to["id"], "result": result}


def fail(to: Message, code: int, text: str, data: Any = None) -> Message:
    error: Message = {"code": code, "message": text}
    if data is not None:
        error["data"] = data
    return {"jsonrpc": "2.0", "id": to["id"], "error": error}


# Mode B (modern client, legacy server) -------------------------------------------------------

SECRET = b"mode-b-test-secret"
LEGACY_INIT_RESULT: Message = {
    "protocolVersion": "2025-11-25",
    "capabilities": {"tools": {"listChanged": True}, "prompts": {"listChanged": True},
                     "resources": {"subscribe": True, "listChanged": True}, "logging": {},
                     "completions": {}, "tasks": {"list": {}}},
    "serverInfo": {"name": "OldSrv", "version": "0.9"},
    "instructions": "Legacy tools.",
}
OLD_SRV = {"io.modelcontextprotocol/serverInfo": {"name": "OldSrv", "version": "0.9"}}


def modern(id: Any, method: str, params: Message | None = None, caps: Message | None = None,
           meta: Message | None = None) -> Message:
    """A modern request: `params` with the required envelope (plus `meta` keys) in `_meta`."""
    full = dict(params or {})
    full["_meta"] = {**modern_meta(caps), **(meta or {})}
    return request(id, method, full)


def mode_b(first: Message | None = None, init: Message | None = None,
           config: CoreConfig | None = None) -> tuple[Harness, list[Action]]:
    """A bridge in mode B after its own legacy handshake (probe refused with -32601).

    `first` (default: a server/discover) is the client's first request. Returns the bridge
    and the actions that ended the handshake: the first request's answer or its forward.
    The ids minted so far are bound to `h.minted("probe")`, `"initialize"` and `"ping"` (the
    settling ping).
    """
    h = Harness(config)
    h.bridge.secret = SECRET
    probe = one(h.start(), "server")
    assert probe["id"] == h.minted("probe"), probe
    h.client(first or modern("d1", "server/discover"))
    init_request = one(h.server(fail(probe, -32601, "Method not found")), "server")
    assert init_request["method"] == "initialize", init_request
    assert init_request["id"] == h.minted("initialize"), init_request
    initialized, ping = sent(h.server(answer(init_request, init or LEGACY_INIT_RESULT)), "server")
    assert initialized == {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert ping == {"jsonrpc": "2.0", "id": h.minted("ping"), "method": "ping"}
    return h, h.server(answer(ping, {}))


def no_requests_to(actions: list[Action], side: str = "client") -> None:
    """Assert that nothing sent to `side` is a JSON-RPC request (stdio.mdx for modern peers)."""
    for message in sent(actions, side):
        assert not (isinstance(message, dict) and "method" in message and "id" in message), message
