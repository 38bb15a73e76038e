"""A 2026-07-28 server's requestState across two fronts of one fleet, in process (the
fixture of `test_http_fleet.py`: real HTTP between client and fronts and between fronts).

What is checked: the state a node's server gives a modern client reaches the client in the
fleet's envelope, and the server gets its own state back on the retry, wherever the retry
lands (the node it reached forwards it to the node that holds the call, with the pass); a
retry for a node that restarted since, or is gone, is answered as a call that ended and
reaches no server; an envelope altered, or presented with another credential, is refused
where it lands; mode B's state rides the same envelope (a restarted node says "ended", not
"tampered"); outside a fleet an answer passes as the core sent it."""

from __future__ import annotations

from typing import Any

import orjson
import trio

from bridge.core.events import Action, Event, Send
from bridge.fleet import states
from bridge.shell import logs
from bridge.shell.http.auth import Tokens
from bridge.shell.http.modern import Mapping
from tests.shell.test_http_fleet import (
    KEYS,
    ParkingCore,
    ask,
    calls,
    fleet,
    retry_of,
    until,
)
from tests.shell.test_http_fleet import _host as _host  # its autouse fixture, here too
from tests.shell.test_http_front import ScriptedCore, client_message


class ModernServerCore(ScriptedCore):
    """A tenant's core in mode P before a 2026-07-28 server that keeps each call's state by
    its requestState (mrtr.mdx §Server Requirements allows it): `tools/call` of "ask" is
    answered `input_required` with a state only this server knows; its retry, with the
    name it brings if the state is one it issued and has not seen back, else -32602."""

    def __init__(self, address: str) -> None:
        super().__init__()
        self.issued: dict[str, str] = {}
        self.prefix = f"srv.{address}.{id(self)}"

    def handle(self, event: Event, now: float) -> list[Action]:
        message = client_message(event)
        if message is None or message.get("method") != "tools/call":
            return super().handle(event, now)
        self.received.append(message)
        params, rid = message["params"], message["id"]
        state = params.get("requestState")
        if state is None:
            state = f"{self.prefix}.{len(self.issued)}"
            self.issued[state] = params["name"]
            return [self._answer(rid, {
                "resultType": "input_required", "requestState": state,
                "inputRequests": {"q": {"method": "elicitation/create", "params": {}}}})]
        if self.issued.pop(state, None) is None:
            return [Send("client", {"jsonrpc": "2.0", "id": rid, "error": {
                "code": -32602, "message": f"requestState {state!r} was not minted here"}},
                request=rid)]
        name = params["inputResponses"]["q"]["content"]["name"]
        return [self._answer(rid, {"resultType": "complete",
                                   "content": [{"type": "text", "text": f"hello {name}"}]})]

    @staticmethod
    def _answer(rid: Any, result: dict[str, Any]) -> Send:
        return Send("client", {"jsonrpc": "2.0", "id": rid, "result": result}, request=rid)


def states_seen(core: ModernServerCore) -> list[str | None]:
    return [m["params"].get("requestState") for m in core.received]


async def test_a_server_s_state_reaches_the_client_wrapped_and_the_server_unwrapped() -> None:
    async with fleet(affinity="none", core=ModernServerCore) as f:
        parked = await (await f.a.client()).post(ask(1))
        [inner] = f.a.shared.issued
        envelope = parked.json["result"]["requestState"]
        assert envelope != inner and envelope.startswith(states.PREFIX)
        assert parked.json["result"]["inputRequests"] == {
            "q": {"method": "elicitation/create", "params": {}}}
        resumed = await (await f.b.client()).post(retry_of(parked, 2))
        assert (resumed.status, resumed.json) == (200, {"jsonrpc": "2.0", "id": 2, "result": {
            "resultType": "complete", "content": [{"type": "text", "text": "hello octocat"}]}})
        assert states_seen(f.a.shared) == [None, inner]  # its own state, as it gave it
        assert f.b.shared.received == []  # b's server never saw a's state
        await until(lambda: f.events("http.request", "b")
                    and len(f.events("http.request", "a")) == 2)
        [at_b] = f.events("http.request", "b")
        assert (at_b["forwarded_to"], at_b["status"]) == (f.a.fleet.address, 200)
        assert [e.get("forwarded_by") for e in f.events("http.request", "a")] == [None, "b"]


async def test_a_retry_landing_at_the_node_that_holds_the_call_is_opened_there() -> None:
    async with fleet(affinity="none", core=ModernServerCore) as f:
        parked = await (await f.b.client()).post(ask(1))
        resumed = await (await f.b.client()).post(retry_of(parked, 2, "alice"))
        assert resumed.json["result"]["content"][0]["text"] == "hello alice"
        assert states_seen(f.b.shared) == [None, f"{f.b.shared.prefix}.0"]
        await until(lambda: len(f.events("http.request", "b")) == 2)
        assert not [e for e in f.logs if e.get("forwarded_to")]


async def test_a_retry_for_a_node_that_restarted_since_is_answered_as_a_call_that_ended() -> None:
    async with fleet(affinity="none", core=ModernServerCore) as f:
        parked = await (await f.a.client()).post(ask(1))
        f.a.fleet.life = "a-later-life"  # a new process at the same address
        for rid, node in ((2, f.b), (3, f.a)):
            ended = await (await node.client()).post(retry_of(parked, rid))
            assert (ended.status, ended.json) == (200, {"jsonrpc": "2.0", "id": rid, "error": {
                "code": -32602, "message": "Invalid requestState: the call it resumes has "
                "ended: the node that held it restarted; make the call again",
                "data": {"reason": "ended"}}})
        assert states_seen(f.a.shared) == [None]  # no server saw the old life's state
        await until(lambda: len(f.events("http.request", "a")) == 3)
        assert [e.get("reason") for e in f.events("http.request", "a")] == [
            None, "its node restarted since", "its node restarted since"]


async def test_a_retry_whose_node_is_gone_is_answered_as_ended_and_reaches_no_server() -> None:
    absent = "http://127.0.0.1:9"
    async with fleet(absent=absent, affinity="none", core=ModernServerCore) as f:
        lost = ask(1, requestState=states.wrap(KEYS.states, absent, "its-life", None, "s.1"),
                   inputResponses={"q": {"action": "accept", "content": {"name": "x"}}})
        ended = await (await f.b.client()).post(lost)
        assert (ended.json["error"]["code"], ended.json["error"]["data"]) == (
            -32602, {"reason": "ended"})
        assert "has ended" in ended.json["error"]["message"]
        await until(lambda: f.events("http.request", "b"))
        assert f.events("http.request", "b")[0]["reason"] == f"its node {absent} cannot be " \
                                                              "reached"
        assert (f.a.shared.received, f.b.shared.received) == ([], [])


async def test_an_altered_envelope_is_refused_where_it_lands_and_forwarded_nowhere() -> None:
    async with fleet(affinity="none", core=ModernServerCore) as f:
        parked = await (await f.a.client()).post(ask(1))
        retry = retry_of(parked, 2)
        altered = retry["params"]["requestState"].replace(".0", ".1")
        for state in (altered, states.wrap(b"k" * 32, f.a.fleet.address, f.a.fleet.life,
                                            None, f"{f.a.shared.prefix}.0")):
            retry["params"]["requestState"] = state
            refused = await (await f.b.client()).post(retry)
            assert refused.json["error"]["data"] == {"reason": "tampered"}
            assert "not issued by this fleet" in refused.json["error"]["message"]
        await until(lambda: len(f.events("http.request", "b")) == 2)
        assert not [e for e in f.logs if e.get("forwarded_to")]
        assert states_seen(f.a.shared) == [None]


async def test_an_envelope_opens_for_the_credential_it_was_issued_to_alone() -> None:
    tokens = Tokens((b"token-one", b"token-two"), KEYS.credentials)
    async with fleet(tokens, affinity="none", core=ModernServerCore) as f:
        one = {"authorization": "Bearer token-one"}
        parked = await (await f.a.client()).post(ask(1), **one)
        other = await (await f.b.client()).post(retry_of(parked, 2, "mallory"),
                                                authorization="Bearer token-two")
        assert other.json["error"]["data"] == {"reason": "tampered"}
        assert f.b.cores == []  # refused before any tenant: none started for token-two
        resumed = await (await f.b.client()).post(retry_of(parked, 3), **one)
        assert resumed.json["result"]["content"][0]["text"] == "hello octocat"
        [tenant] = f.a.cores
        assert len(tenant.received) == 2


async def test_mode_b_s_retry_for_a_node_that_restarted_since_reads_ended() -> None:
    async with fleet(affinity="none", core=ParkingCore) as f:
        parked = await (await f.a.client()).post(ask(1))
        f.a.fleet.life = "a-later-life"
        ended = await (await f.b.client()).post(retry_of(parked, 2))
        assert ended.json["error"]["data"] == {"reason": "ended"}
        assert "restarted" in ended.json["error"]["message"]
        assert calls(f.a.shared) == ["call"]


async def test_outside_a_fleet_an_answer_passes_as_the_core_sent_it() -> None:
    answer = {"resultType": "input_required", "requestState": "s.1"}
    lines: list[Any] = []
    for seal in (None, lambda m: states.reissued(m, "wrapped")):
        mapping = Mapping(logs.logger(), seal=seal)
        exchange, renamed = mapping.admit({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                                           "params": {"name": "ask"}})
        send = Send("client", {"jsonrpc": "2.0", "id": renamed["id"], "result": answer},
                    request=renamed["id"])
        assert mapping.deliver(send)
        with trio.fail_after(1):
            lines.append(await exchange.route.get())
    plain, sealed = lines
    assert orjson.loads(plain.line) == {"jsonrpc": "2.0", "id": 7, "result": answer}
    assert orjson.loads(sealed.line) == {"jsonrpc": "2.0", "id": 7, "result": {
        **answer, "requestState": "wrapped"}}
