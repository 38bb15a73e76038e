"""Well-behaved peers of both eras for the fuzz tests: a session and the valid messages each
side could send next, of every method, made from what the bridge sent so far.

The fuzz tests (test_fuzz.py) mutate what one side sends; the other side stays valid, so the
session keeps moving through realistic states (calls in flight, input rounds, listen streams).
"""

from __future__ import annotations

import random
from typing import Any

from bridge.core.codec import DecodeError, RawNumber, TooDeep, decode, decode_spelled, encode
from bridge.core.config import CoreConfig
from bridge.core.eras import LATEST_LEGACY_VERSION, LEGACY_PROTOCOL_VERSIONS, META_SUBSCRIPTION_ID
from bridge.core.events import Action, RestartChild, Send, Stop
from bridge.core.jsonrpc import is_request_id, typed_id
from bridge.core.salvage import top_level
from tests.core.harness import LEGACY_INIT_RESULT, SECRET, Harness, modern_meta

Message = dict[str, Any]

CLIENT_INFO = {"name": "FuzzClient", "version": "1.0", "title": "Fuzz"}
LEGACY_CAPS: Message = {"elicitation": {"form": {}, "url": {}}, "sampling": {"tools": {}},
                        "roots": {"listChanged": True}}
MODERN_CAPS: Message = {"elicitation": {"form": {}, "url": {}}, "sampling": {}, "roots": {}}
DISCOVER: Message = {
    "resultType": "complete", "supportedVersions": ["2026-07-28"],
    "capabilities": {"tools": {"listChanged": True}, "prompts": {"listChanged": True},
                     "resources": {"subscribe": True, "listChanged": True}, "logging": {},
                     "completions": {}},
    "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "ModernSrv", "version": "2.0"}},
    "instructions": "Use the tools.", "ttlMs": 60000, "cacheScope": "public"}
SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
FORM = {"method": "elicitation/create",
        "params": {"mode": "form", "message": "Username?", "requestedSchema": SCHEMA}}
URL = {"method": "elicitation/create",
       "params": {"mode": "url", "message": "Sign in", "url": "https://example.com/login",
                  "elicitationId": "e-1"}}
SAMPLING = {"method": "sampling/createMessage",
            "params": {"messages": [{"role": "user",
                                     "content": [{"type": "text", "text": "Capital?"}]}],
                       "maxTokens": 100, "systemPrompt": "Be brief."}}
ROOTS = {"method": "roots/list"}
TOOL = {"name": "login", "title": "Log in", "description": "Logs in",
        "inputSchema": {"type": "object", "properties": {"team": {"type": "string"}}},
        "outputSchema": {"type": "object"}, "icons": [{"src": "https://x/i.png"}],
        "annotations": {"readOnlyHint": True}, "execution": {"taskSupport": "optional"}}
CONTENT = [{"type": "text", "text": "hi"}, {"type": "audio", "data": "AAAA", "mimeType": "a/b"},
           {"type": "resource_link", "uri": "file:///a.txt", "name": "a"}]
URI = "file:///project/a.txt"


def _legacy_result(method: str, params: Any = None) -> Message:
    """A legacy server's answer to `method`."""
    if method == "initialize":  # lifecycle.mdx: the version asked if supported, else its own
        asked = params.get("protocolVersion") if isinstance(params, dict) else None
        version = asked if asked in LEGACY_PROTOCOL_VERSIONS else LATEST_LEGACY_VERSION
        return {**LEGACY_INIT_RESULT, "protocolVersion": version}
    return {
        "tools/list": {"tools": [TOOL], "nextCursor": "c2"},
        "tools/call": {"content": CONTENT, "structuredContent": {"ok": True}, "isError": False},
        "resources/list": {"resources": [{"uri": URI, "name": "a", "title": "A"}]},
        "resources/templates/list": {"resourceTemplates": [{"uriTemplate": "file:///{p}",
                                                            "name": "t"}]},
        "resources/read": {"contents": [{"uri": URI, "text": "hello"}]},
        "prompts/list": {"prompts": [{"name": "greet", "arguments": [{"name": "who"}]}]},
        "prompts/get": {"messages": [{"role": "user", "content": CONTENT[2]}]},
        "completion/complete": {"completion": {"values": ["a"], "total": 1, "hasMore": False}},
    }.get(method, {})


def _modern_result(method: str, params: Any, roll: float) -> Message:
    """A modern server's answer to `method`: complete, or an input round for eligible calls."""
    retried = isinstance(params, dict) and ("inputResponses" in params
                                            or "requestState" in params)
    if method in ("tools/call", "resources/read", "prompts/get") and not retried and roll < 0.5:
        asks = {"e1": FORM, "r1": ROOTS, "s1": SAMPLING, "u1": URL}
        keys = ["e1", "r1", "s1", "u1"][: 1 + int(roll * 8)]
        return {"resultType": "input_required", "inputRequests": {k: asks[k] for k in keys},
                "requestState": f"state-{roll}"}
    if method == "server/discover":
        return DISCOVER
    out = {"resultType": "complete", **_legacy_result(method)}
    if method == "tools/call":
        out["structuredContent"] = [1, 2] if roll < 0.7 else {"ok": True}
    return out


def _input_answer(method: Any, params: Any) -> Message:
    """A client's answer to an input request: accept, a sample, or its roots."""
    if method == "sampling/createMessage":
        return {"role": "assistant", "content": {"type": "text", "text": "Paris"},
                "model": "m", "stopReason": "endTurn"}
    if method == "roots/list":
        return {"roots": [{"uri": "file:///project", "name": "project"}]}
    if method == "ping":
        return {}
    return {"action": "accept", "content": {"name": "octocat"}}


def _ids_of(value: Any) -> list[Any]:
    """The ids of the requests a line from the client carries, as the bridge reads them:
    every object with a usable id that is not response-shaped (result or error, no method),
    valid or not."""
    items = value if isinstance(value, list) else [value]
    return [m["id"] for m in items if isinstance(m, dict) and is_request_id(m.get("id"))
            and ("method" in m or not ("result" in m or "error" in m))]


def as_bridge_reads(line: bytes) -> Any:
    """The value the bridge makes of `line`: its top-level members only, if it is too deep
    or not JSON (an id the line shows before its first unreadable byte counts, as does one
    untouched by bytes that are not UTF-8); number ids as their text, as they came."""
    try:
        return _spelled_ids(line, decode(line))
    except TooDeep as exc:
        return _spelled_ids(line, exc.value) if exc.value is not None else top_level(line)
    except ValueError:
        pass
    try:
        repaired = decode(line.decode(errors="replace").encode())
    except (DecodeError, UnicodeDecodeError):
        return top_level(line[:4096])
    if not isinstance(repaired, dict):
        return {}
    if "\ufffd" in str(repaired.get("id")):
        repaired.pop("id")
    elif type(repaired.get("id")) is float:
        repaired["id"] = top_level(line[:4096]).get("id", repaired["id"])
    return repaired


def _spelled_ids(line: bytes, value: Any) -> Any:
    """`value` with each id the line writes with a fraction or an exponent as its text."""
    spelled = decode_spelled(line)
    pairs = zip(value, spelled, strict=False) if isinstance(value, list) \
        and isinstance(spelled, list) else [(value, spelled)]
    for item, original in pairs:
        if isinstance(item, dict) and isinstance(original, dict) \
                and type(original.get("id")) is RawNumber:
            item["id"] = original["id"]
    return value


class Session:
    """One bridge between a client of `client_era` and a server of `server_era`, both valid
    unless the test mutates what they send; and the bookkeeping of every client request."""

    def __init__(self, client_era: str, server_era: str, version: str, seed: int) -> None:
        # Every other session counts what it answers too (an observer changes nothing sent),
        # half of those for spans as well (a traced observer meets every answer in the
        # actions; an untraced one lets the exchanges count their results).
        self.h = Harness(CoreConfig(request_timeout=30.0), observed=seed % 2 == 0)
        if self.h.bridge.observer is not None:
            self.h.bridge.observer.traced = seed % 4 == 0
        self.h.bridge.secret = SECRET
        self.client_era, self.server_era, self.version = client_era, server_era, version
        self.rng = random.Random(seed)
        self.next_id = 0
        self.to_server: dict[Any, Message] = {}  # the bridge's requests the server may answer
        self.to_client: dict[Any, Message] = {}  # the bridge's requests the client may answer
        self.listens: list[Any] = []  # listen requests the modern server acknowledged
        self.rounds: list[tuple[Message, Message]] = []  # (request, input_required) for retries
        self.sent_requests: list[Message] = []  # the client's valid requests, for retries
        self.asked: dict[tuple[type, Any], int] = {}
        self.answered: dict[tuple[type, Any], int] = {}
        self.cancelled: set[tuple[type, Any]] = set()
        self.batches: list[dict[tuple[type, Any], int]] = []
        self.responses = 0  # responses to the client naming a request id (batch items too)
        self.stopped = False
        self.client_closed = False  # the client sends nothing more
        self.restarting = False  # the bridge asked for a new server, not started yet

    # Feeding ------------------------------------------------------------------------------

    def feed(self, side: str, message: Any) -> None:
        self.feed_line(side, encode(message).rstrip(b"\n"))

    def feed_line(self, side: str, line: bytes) -> None:
        if side == "client":
            self._note_client_line(as_bridge_reads(line))
            self.observe(self.h.client(line))
        else:
            self.observe(self.h.server(line))

    def feed_too_large(self, side: str, message: Any, cut: float) -> None:
        """`side` writes `message` as a line too long to be read: the bridge sees its head."""
        line = encode(message).rstrip(b"\n")
        head = line[: int(len(line) * cut)]
        if side == "client":
            self._note_client_line(top_level(head))
            self.observe(self.h.too_large("client", head, len(line) - 1))
        else:
            self.observe(self.h.too_large("server", head, len(line) - 1))

    def _note_client_line(self, value: Any) -> None:
        if self.stopped:
            return  # a stopped bridge reads nothing more
        handler = self.h.bridge.handler
        if isinstance(value, list) and not (handler is not None and handler.client_batching):
            return  # one invalid message: an array is not a request (JSON-RPC 2.0 §4)
        ids = _ids_of(value)
        for request_id in ids:
            key = typed_id(request_id)
            self.asked[key] = self.asked.get(key, 0) + 1
        if isinstance(value, list):
            batch: dict[tuple[type, Any], int] = {}
            for request_id in ids:
                batch[typed_id(request_id)] = batch.get(typed_id(request_id), 0) + 1
            self.batches.append(batch)
        for item in value if isinstance(value, list) else [value]:
            if _is_cancel(item):
                self.cancelled.add(typed_id(item["params"]["requestId"]))

    def observe(self, actions: list[Action]) -> None:
        """Record what the bridge sent: requests to answer, answers owed to the client."""
        for action in actions:
            self.stopped |= isinstance(action, Stop)
            self.restarting |= isinstance(action, RestartChild)
            if not isinstance(action, Send):
                continue
            encode(action.message)  # whatever the bridge sends, the shell can write
            assert _depth(action.message) <= 254, "orjson writes at most 254 levels"
            if action.side == "server":
                self._from_bridge_to_server(action.message)
            elif isinstance(action.message, list):
                self._batch_answer(action.message)
            else:
                self._from_bridge_to_client(action.message)

    def _from_bridge_to_server(self, message: Message) -> None:
        if "method" in message and "id" in message:
            self.to_server[message["id"]] = message

    def _from_bridge_to_client(self, message: Message) -> None:
        if "method" in message:
            if "id" in message:
                self.to_client[message["id"]] = message
            elif message["method"] == "notifications/cancelled" and self.client_era == "modern":
                # a stream the server ended (to a legacy client, the bridge withdraws a
                # request of its own)
                self._answer(message["params"]["requestId"])
            return
        self._answer(message["id"])
        self.responses += is_request_id(message["id"])
        result = message.get("result")
        if isinstance(result, dict) and result.get("resultType") == "input_required":
            original = next((r for r in self.sent_requests
                             if typed_id(r["id"]) == typed_id(message["id"])), None)
            if original is not None:
                self.rounds.append((original, result))

    def _batch_answer(self, answers: list[Message]) -> None:
        ids: dict[tuple[type, Any], int] = {}
        for answer in answers:
            if is_request_id(answer.get("id")):
                ids[typed_id(answer["id"])] = ids.get(typed_id(answer["id"]), 0) + 1
        # One array per batch, answering exactly its requests (those cancelled may be left out).
        owner = next((b for b in self.batches if ids == b), None) or next(
            (b for b in self.batches if all(
                ids.get(k, 0) == b.get(k, 0)
                or (k in self.cancelled and ids.get(k, 0) <= b.get(k, 0)) for k in {*ids, *b})),
            None)
        assert owner is not None, f"an array answering no batch the client sent: {answers}"
        self.batches.remove(owner)
        for answer in answers:
            self._from_bridge_to_client(answer)

    def _answer(self, request_id: Any) -> None:
        if is_request_id(request_id):
            key = typed_id(request_id)
            self.answered[key] = self.answered.get(key, 0) + 1

    # The oracle ---------------------------------------------------------------------------

    def unanswered(self) -> dict[Any, tuple[int, int]]:
        """Client requests (not cancelled) whose count of answers is not their count asked."""
        keys = (set(self.asked) | set(self.answered)) - self.cancelled
        return {k: (self.asked.get(k, 0), self.answered.get(k, 0)) for k in keys
                if self.asked.get(k, 0) and self.asked.get(k, 0) != self.answered.get(k, 0)}

    def miscounted(self, every: bool) -> tuple[int, int] | None:
        """With an observer: the responses to client requests and the requests its tally
        counted, when they differ (`every`: each request answered is counted once) or
        when more were counted than answered.

        An observer counts the requests a mode handler or the bridge's lifecycle took (one
        before the mode is known, held while a server restarts, refused while closing), but
        not an invalid message with a usable id; and a request counted in one mode may be
        answered by the next. So each answer is counted in a session whose client sent only
        valid messages, in one mode.
        """
        observer = self.h.bridge.observer
        if observer is None:
            return None
        counted = sum(sum(counts[:-1]) for counts in observer.tally.counts().values())
        wrong = counted != self.responses if every else counted > self.responses
        return (self.responses, counted) if wrong else None

    # Valid moves --------------------------------------------------------------------------

    def new_id(self) -> Any:
        self.next_id += 1
        return self.next_id if self.next_id % 3 else f"c-{self.next_id}"

    def opening(self) -> Message:
        """The client's first request: initialize (legacy) or any modern request."""
        if self.client_era == "legacy":
            return {"jsonrpc": "2.0", "id": 0, "method": "initialize",
                    "params": {"protocolVersion": self.version, "capabilities": LEGACY_CAPS,
                               "clientInfo": CLIENT_INFO}}
        return self.client_request("tools/list")

    def probe_answer(self) -> Message | None:
        probe = next((m for m in self.to_server.values() if m["method"] == "server/discover"
                      and "_meta" in (m.get("params") or {})), None)
        if probe is None:
            return None
        del self.to_server[probe["id"]]
        if self.server_era == "modern":
            return {"jsonrpc": "2.0", "id": probe["id"], "result": DISCOVER}
        return {"jsonrpc": "2.0", "id": probe["id"],
                "error": {"code": -32601, "message": "Method not found"}}

    def client_request(self, method: str) -> Message:
        params: Message = {
            "tools/call": {"name": "login", "arguments": {"team": "core"}},
            "resources/read": {"uri": URI}, "resources/subscribe": {"uri": URI},
            "resources/unsubscribe": {"uri": URI}, "prompts/get": {"name": "greet",
                                                                  "arguments": {"who": "you"}},
            "completion/complete": {"ref": {"type": "ref/prompt", "name": "greet"},
                                    "argument": {"name": "who", "value": "y"},
                                    "context": {"arguments": {}}},
            "logging/setLevel": {"level": "debug"}, "tools/list": {"cursor": "c1"},
            "subscriptions/listen": {"notifications": {"toolsListChanged": True,
                                                       "resourceSubscriptions": [URI]}},
            "initialize": {"protocolVersion": self.version, "capabilities": {},
                           "clientInfo": CLIENT_INFO},
        }.get(method, {})
        request_id = self.new_id()
        params = dict(params)
        if self.client_era == "modern":
            meta = modern_meta(MODERN_CAPS)
            meta["io.modelcontextprotocol/clientInfo"] = CLIENT_INFO
            if self.rng.random() < 0.5:
                meta["io.modelcontextprotocol/logLevel"] = "info"
            if self.rng.random() < 0.5:
                meta["progressToken"] = f"p-{request_id}"
            params["_meta"] = meta
        elif self.rng.random() < 0.5:
            params["_meta"] = {"progressToken": request_id}
        message = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
        self.sent_requests.append(message)
        return message

    def client_methods(self) -> list[str]:
        shared = ["tools/list", "tools/call", "resources/list", "resources/templates/list",
                  "resources/read", "prompts/list", "prompts/get", "completion/complete",
                  "tasks/list"]
        if self.client_era == "legacy":
            return [*shared, "ping", "logging/setLevel", "resources/subscribe",
                    "resources/unsubscribe", "initialize"]
        return [*shared, "server/discover", "subscriptions/listen"]

    def client_moves(self) -> list[Any]:
        """Every valid message the client could send now (built when chosen)."""
        moves: list[Any] = [lambda m=m: self.client_request(m) for m in self.client_methods()]
        moves.append(self._client_cancel)
        if self.client_era == "legacy":
            moves += [lambda: _note("notifications/initialized"),
                      lambda: _note("notifications/roots/list_changed")]
            moves += [lambda i=i: self._client_answer(i) for i in list(self.to_client)[:3]]
        else:
            moves += [lambda r=r: self._retry(*r) for r in self.rounds[-2:]]
        return moves

    def _client_cancel(self) -> Message:
        target = self.sent_requests[-1]["id"] if self.sent_requests else 0
        return _note("notifications/cancelled", {"requestId": target, "reason": "changed mind"})

    def _client_answer(self, bid: Any) -> Message:
        asked = self.to_client.pop(bid, {"method": "ping"})  # answered twice in one batch
        return {"jsonrpc": "2.0", "id": bid,
                "result": _input_answer(asked["method"], asked.get("params"))}

    def _retry(self, original: Message, round_: Message) -> Message:
        requests = round_.get("inputRequests")
        if not isinstance(requests, dict):  # a mutated server's round, relayed as it came
            requests = {}
        params = {**original["params"],
                  "inputResponses": {k: _input_answer(r.get("method"), r.get("params"))
                                     for k, r in requests.items() if isinstance(r, dict)},
                  "requestState": round_.get("requestState")}
        retry = {**original, "id": self.new_id(), "params": params}
        self.sent_requests.append(retry)
        return retry

    def server_moves(self) -> list[Any]:
        """Every valid message the server could send now."""
        moves: list[Any] = [lambda i=i: self._server_answer(i) for i in list(self.to_server)[:4]]
        tokens = [t for t in map(_progress_token, self.to_server.values()) if t is not None]
        moves += [lambda t=t: _note("notifications/progress", {
            "progressToken": t, "progress": self.rng.random(), "total": 1.0, "message": "m"})
            for t in tokens[:2]]
        moves.append(lambda: _note("notifications/message", {"level": "warning", "data": "x"}))
        if self.server_era == "modern":
            moves += [lambda t=t, m=m, p=p: _note(m, {"_meta": {META_SUBSCRIPTION_ID: t}, **p})
                      for t in self.listens[-1:]
                      for m, p in (("notifications/tools/list_changed", {}),
                                   ("notifications/resources/updated", {"uri": URI}),
                                   ("notifications/cancelled", {"requestId": t}))]
        else:
            moves += [lambda m=m: {"jsonrpc": "2.0", "id": f"s-{self.rng.random()}", **m}
                      for m in (FORM, SAMPLING, ROOTS, {"method": "ping"})]
            moves += [lambda: _note("notifications/tools/list_changed"),
                      lambda: _note("notifications/resources/updated", {"uri": URI}),
                      lambda: _note("notifications/elicitation/complete",
                                    {"elicitationId": "e-1"})]
        return moves

    def _server_answer(self, bid: Any) -> Message:
        asked = self.to_server.pop(bid)
        method, params = asked["method"], asked.get("params")
        roll = self.rng.random()
        if method == "subscriptions/listen" and bid not in self.listens:
            self.listens.append(bid)
            self.to_server[bid] = asked  # the stream stays open after its acknowledgement
            wanted = params.get("notifications") if isinstance(params, dict) else None
            return _note("notifications/subscriptions/acknowledged",
                         {"_meta": {META_SUBSCRIPTION_ID: bid}, "notifications": wanted})
        if method in (("initialize", "ping", "logging/setLevel") if self.server_era == "modern"
                      else ("server/discover", "subscriptions/listen")):
            return {"jsonrpc": "2.0", "id": bid,
                    "error": {"code": -32601, "message": "Method not found"}}
        if roll < 0.15:
            error = {"code": -32602, "message": "Resource not found", "data": {"uri": URI}} \
                if self.server_era == "modern" else \
                {"code": -32042, "message": "Sign in", "data": {"elicitations": [
                    {"mode": "url", "elicitationId": "e-1", "url": "https://x/y",
                     "message": "Sign in"}]}}
            return {"jsonrpc": "2.0", "id": bid, "error": error}
        result = _modern_result(method, params, roll) if self.server_era == "modern" \
            else _legacy_result(method, params)
        return {"jsonrpc": "2.0", "id": bid, "result": result}

    # The server process ------------------------------------------------------------------

    def lose_server(self, how: str, other_era: bool) -> None:
        """The server exits or closes its output, or both in either order ("exit+close"),
        mid-session; the one started next speaks the other era if `other_era`."""
        self.to_server.clear()  # what the lost server was asked, it will never answer
        self.listens.clear()
        if other_era:
            self.server_era = "legacy" if self.server_era == "modern" else "modern"
        for word in how.split("+"):
            self.observe(self.h.exit_child(1) if word == "exit" else self.h.close("server"))

    def start_server(self) -> None:
        """The server the bridge asked for is up (the shell's ChildStarted)."""
        if self.restarting and not self.stopped:
            self.restarting = False
            self.observe(self.h.start())

    def settle(self, rounds: int = 30) -> None:
        """Let both valid peers answer everything asked of them, for a while."""
        for _ in range(rounds):
            if self.restarting:
                self.start_server()
                continue
            probe = self.probe_answer()
            if probe is not None:
                self.observe(self.h.server(encode(probe).rstrip(b"\n")))
            elif self.to_client and not self.client_closed:
                self.observe(self.h.client(
                    encode(self._client_answer(next(iter(self.to_client)))).rstrip(b"\n")))
            elif self.to_server:
                bid = next(iter(self.to_server))
                if self.to_server[bid]["method"] == "subscriptions/listen" \
                        and bid in self.listens:
                    self.to_server.pop(bid)  # leave open streams open
                    continue
                self.observe(self.h.server(encode(self._server_answer(bid)).rstrip(b"\n")))
            else:
                self.observe(self.h.advance(0.05))
                if not (self.to_client or self.to_server):
                    return


def _is_cancel(message: Any) -> bool:
    """Whether `message` is a valid notifications/cancelled naming a request id."""
    params = message.get("params") if isinstance(message, dict) else None
    return isinstance(params, dict) and message.get("jsonrpc") == "2.0" \
        and "id" not in message and message.get("method") == "notifications/cancelled" \
        and is_request_id(params.get("requestId"))


def _progress_token(request: Message) -> Any:
    params = request.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    return meta.get("progressToken") if isinstance(meta, dict) else None


def _note(method: str, params: Message | None = None) -> Message:
    message: Message = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        message["params"] = params
    return message


def _depth(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + max(map(_depth, value.values()), default=0)
    if isinstance(value, list):
        return 1 + max(map(_depth, value), default=0)
    return 0
