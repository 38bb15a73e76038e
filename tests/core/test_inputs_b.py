"""Mode B parking: legacy input requests during a call become input_required rounds.

A call mints its key, then its progress token (if the client asked for progress), then its
legacy request id; each round's requestState mints a nonce. The tests name these ids with
placeholders (`h.minted(...)`, tests/core/harness.py), not by the order they are minted in.
"""

from __future__ import annotations

from typing import Any

import pytest

from bridge.core.config import CoreConfig
from bridge.core.modern_server_legacy_client.request_state import (
    PREFIX,
    request_digest,
    seal,
    unseal,
)
from tests.core.harness import (
    LEGACY_INIT_RESULT,
    OLD_SRV,
    SECRET,
    Harness,
    answer,
    fail,
    mode_b,
    modern,
    no_requests_to,
    one,
    request,
    sent,
)
from tests.core.test_golden import _schema

SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
ELICIT = {"message": "Username?", "requestedSchema": SCHEMA}
ELICIT_LEGACY = {**ELICIT, "mode": "form", "_meta": {"progressToken": 3}, "task": {"ttl": 5}}
SAMPLE = {"messages": [{"role": "user", "content": {"type": "text", "text": "Capital?"}}],
          "maxTokens": 100}
SAMPLED = {"role": "assistant", "content": {"type": "text", "text": "Paris"}, "model": "m",
           "stopReason": "endTurn"}
ACCEPT = {"action": "accept", "content": {"name": "octocat"}}
ALL_INPUTS = {"elicitation": {"form": {}, "url": {}}, "sampling": {}, "roots": {}}
DONE = {"content": [{"type": "text", "text": "hi octocat"}]}
CALL_PARAMS = {"name": "login", "arguments": {"team": "core"}}


def call(id: Any, caps: Any = None, meta: Any = None, **extra: Any) -> dict[str, Any]:
    return modern(id, "tools/call", {**CALL_PARAMS, **extra},
                  caps=ALL_INPUTS if caps is None else caps, meta=meta)


def notify(method: str, params: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": method, "params": params}


def parked(h: Any, first: dict[str, Any], *questions: dict[str, Any]) -> tuple[Any, Any]:
    """Send `first`, let the server ask `questions`, return (legacy request, input_required)."""
    legacy = one(h.client(first), "server")
    for question in questions:
        assert sent(h.server(question), "client") == []
    reply = one(h.advance(0.05), "client")
    assert reply["result"]["resultType"] == "input_required", reply
    return legacy, reply


# One round and more -----------------------------------------------------------------------


def test_an_elicitation_during_a_call_becomes_a_round_and_the_retry_resumes_it() -> None:
    h, _ = mode_b()
    legacy = one(h.client(call(1)), "server")
    assert legacy == {"jsonrpc": "2.0", "id": h.minted("call"), "method": "tools/call",
                      "params": CALL_PARAMS}
    assert sent(h.server(request(42, "elicitation/create", ELICIT_LEGACY)), "client") == []
    assert sent(h.advance(0.004), "client") == []  # the park window gathers for 5 ms
    reply = one(h.advance(0.001), "client")
    state = reply["result"]["requestState"]
    assert reply == {"jsonrpc": "2.0", "id": 1, "result": {
        "resultType": "input_required",
        "inputRequests": {"q1": {"method": "elicitation/create",
                                 "params": {**ELICIT, "mode": "form"}}},
        "requestState": state, "_meta": OLD_SRV}}
    assert state.startswith(PREFIX)
    assert unseal(SECRET, state) == {"k": h.minted("key"), "n": h.minted("nonce"),
                                     "d": request_digest("tools/call", CALL_PARAMS), "x": 900005}
    actions = h.client(call(2, inputResponses={"q1": ACCEPT}, requestState=state))
    assert sent(actions, "client") == []
    assert one(actions, "server") == {"jsonrpc": "2.0", "id": 42, "result": ACCEPT}
    final = one(h.server(answer(legacy, DONE)), "client")
    assert final == {"jsonrpc": "2.0", "id": 2, "result": {**DONE, "resultType": "complete",
                                                           "_meta": OLD_SRV}}


def test_concurrent_questions_are_gathered_into_one_round() -> None:
    h, _ = mode_b()
    legacy, reply = parked(h, call(1), request(7, "sampling/createMessage", SAMPLE),
                           request("r", "roots/list"))
    assert reply["result"]["inputRequests"] == {
        "q1": {"method": "sampling/createMessage", "params": SAMPLE},
        "q2": {"method": "roots/list"}}
    roots = {"roots": [{"uri": "file:///work", "name": "work"}]}
    actions = h.client(call(2, inputResponses={"q1": SAMPLED, "q2": roots, "zz": {}},
                            requestState=reply["result"]["requestState"]))
    assert sent(actions, "server") == [{"jsonrpc": "2.0", "id": 7, "result": SAMPLED},
                                       {"jsonrpc": "2.0", "id": "r", "result": roots}]
    assert one(h.server(answer(legacy, DONE)), "client")["id"] == 2


def test_a_question_after_the_retry_is_a_new_round_and_the_result_goes_to_the_latest() -> None:
    h, _ = mode_b()
    legacy, first = parked(h, call(1), request(1, "elicitation/create", ELICIT))
    h.client(call(2, inputResponses={"q1": ACCEPT}, requestState=first["result"]["requestState"]))
    h.server(request(2, "sampling/createMessage", SAMPLE))
    second = one(h.advance(0.05), "client")
    assert second["id"] == 2
    assert second["result"]["inputRequests"] == {
        "q2": {"method": "sampling/createMessage", "params": SAMPLE}}
    assert second["result"]["requestState"] != first["result"]["requestState"]
    actions = h.client(call(3, inputResponses={"q2": SAMPLED},
                            requestState=second["result"]["requestState"]))
    assert one(actions, "server") == {"jsonrpc": "2.0", "id": 2, "result": SAMPLED}
    assert one(h.server(answer(legacy, DONE)), "client")["id"] == 3


def test_a_retry_missing_an_answer_is_asked_again_for_just_that_one() -> None:
    h, _ = mode_b()
    _legacy, reply = parked(h, call(1), request(1, "elicitation/create", ELICIT),
                           request(2, "roots/list"))
    actions = h.client(call(2, inputResponses={"q2": {"roots": []}},
                            requestState=reply["result"]["requestState"]))
    assert one(actions, "server") == {"jsonrpc": "2.0", "id": 2, "result": {"roots": []}}
    again = one(h.advance(0.05), "client")
    assert again["id"] == 2
    assert again["result"]["inputRequests"] == {
        "q1": {"method": "elicitation/create", "params": ELICIT}}


def test_a_question_asked_while_parked_goes_out_on_the_retrys_round() -> None:
    h, _ = mode_b()
    _legacy, reply = parked(h, call(1), request(1, "elicitation/create", ELICIT))
    assert sent(h.server(request(2, "roots/list")), "client") == []
    assert sent(h.advance(60), "client") == []
    actions = h.client(call(2, inputResponses={"q1": ACCEPT},
                            requestState=reply["result"]["requestState"]))
    assert one(actions, "server")["id"] == 1
    again = one(h.advance(0.05), "client")
    assert again["id"] == 2
    assert again["result"]["inputRequests"] == {"q2": {"method": "roots/list"}}


def test_a_read_resumed_by_a_retry_is_not_cacheable() -> None:
    h, _ = mode_b(config=CoreConfig(cache_ttl_ms=60000))
    plain = one(h.client(modern(1, "resources/read", {"uri": "file:///a"}, caps={})), "server")
    reply = one(h.server(answer(plain, {"contents": []})), "client")
    assert reply["result"] == {"contents": [], "resultType": "complete", "ttlMs": 60000,
                               "cacheScope": "private", "_meta": OLD_SRV}
    read = modern(2, "resources/read", {"uri": "file:///b"}, caps={"roots": {}})
    legacy, round1 = parked(h, read, request(1, "roots/list"))
    assert "ttlMs" not in round1["result"]  # caching.mdx: input_required carries no hints
    retry = modern(3, "resources/read", {"uri": "file:///b", "inputResponses": {
        "q1": {"roots": []}}, "requestState": round1["result"]["requestState"]},
                   caps={"roots": {}})
    h.client(retry)
    final = one(h.server(answer(legacy, {"contents": []})), "client")
    assert final["result"] == {"contents": [], "resultType": "complete", "ttlMs": 0,
                               "cacheScope": "private", "_meta": OLD_SRV}


def test_a_call_that_ends_while_parked_delivers_its_result_on_the_retry() -> None:
    h, _ = mode_b()
    legacy, reply = parked(h, call(1), request(1, "elicitation/create", ELICIT),
                           request(2, "roots/list"))
    actions = h.server(answer(legacy, {"content": [], "isError": True}))
    assert sent(actions, "client") == []
    assert sent(actions, "server") == [  # its questions are moot now
        {"jsonrpc": "2.0", "id": 1, "result": {"action": "cancel"}},
        {"jsonrpc": "2.0", "id": 2, "error": {"code": -32603,
                                              "message": "mcp-rosetta: the call ended"}}]
    actions = h.client(call(2, inputResponses={"q1": ACCEPT},
                            requestState=reply["result"]["requestState"]))
    assert sent(actions, "server") == []
    assert one(actions, "client") == {"jsonrpc": "2.0", "id": 2, "result": {
        "content": [], "isError": True, "resultType": "complete", "_meta": OLD_SRV}}


def test_an_error_while_parked_is_delivered_on_the_retry_mapped() -> None:
    h, _ = mode_b()
    legacy, reply = parked(h, call(1), request(1, "elicitation/create", ELICIT))
    h.server(fail(legacy, -32002, "gone"))
    actions = h.client(call(2, inputResponses={"q1": ACCEPT},
                            requestState=reply["result"]["requestState"]))
    assert one(actions, "client") == {"jsonrpc": "2.0", "id": 2,
                                      "error": {"code": -32602, "message": "gone"}}


def test_sampling_answers_go_to_older_servers_as_one_content_block() -> None:
    h, _ = mode_b(init={**LEGACY_INIT_RESULT, "protocolVersion": "2025-06-18"})
    _, reply = parked(h, call(1), request(1, "sampling/createMessage", SAMPLE))
    block = {"type": "text", "text": "Paris"}
    actions = h.client(call(2, inputResponses={"q1": {**SAMPLED, "content": [block],
                                                      "resultType": "complete"}},
                            requestState=reply["result"]["requestState"]))
    assert one(actions, "server")["result"] == {**SAMPLED, "content": block}


def test_several_text_blocks_go_to_older_servers_as_one_text_block() -> None:
    # 2025-06-18 CreateMessageResult holds one content block: the texts are joined.
    h, _ = mode_b(init={**LEGACY_INIT_RESULT, "protocolVersion": "2025-06-18"})
    _, reply = parked(h, call(1), request(1, "sampling/createMessage", SAMPLE))
    blocks = [{"type": "text", "text": "Paris."}, {"type": "text", "text": "It is the capital."}]
    actions = h.client(call(2, inputResponses={"q1": {**SAMPLED, "content": blocks}},
                            requestState=reply["result"]["requestState"]))
    result = one(actions, "server")["result"]
    assert result == {**SAMPLED, "content": {"type": "text",
                                             "text": "Paris.\n\nIt is the capital."}}
    _schema("2025-06-18", "CreateMessageResult").validate(result)


def test_blocks_an_older_server_cannot_hold_answer_its_question_with_an_error() -> None:
    h, _ = mode_b(init={**LEGACY_INIT_RESULT, "protocolVersion": "2025-06-18"})
    _, reply = parked(h, call(1), request(1, "sampling/createMessage", SAMPLE))
    blocks = [{"type": "text", "text": "A cat:"},
              {"type": "image", "data": "aGk=", "mimeType": "image/png"}]
    actions = h.client(call(2, inputResponses={"q1": {**SAMPLED, "content": blocks}},
                            requestState=reply["result"]["requestState"]))
    assert one(actions, "server") == {"jsonrpc": "2.0", "id": 1, "error": {
        "code": -32603, "message": "mcp-rosetta: the client's sampling answer has 2 content "
        "blocks, not all text; revision 2025-06-18 holds one block",
        "data": {"source": "mcp-rosetta"}}}


# requestState: integrity, expiry, binding, single use (mrtr.mdx §Server Requirements) -------


def _parked_call() -> tuple[Any, Any, str]:
    h, _ = mode_b()
    legacy, reply = parked(h, call(1), request(1, "elicitation/create", ELICIT))
    return h, legacy, reply["result"]["requestState"]


def _rejected(actions: Any, id: Any, reason: str, text: str) -> None:
    assert sent(actions, "server") == []
    assert one(actions, "client") == {"jsonrpc": "2.0", "id": id, "error": {
        "code": -32602, "message": f"Invalid requestState: {text}", "data": {"reason": reason}}}


def _tamper(state: str) -> str:
    body, mac = state[len(PREFIX):].split(".")
    return f"{PREFIX}{body[:-1]}{'A' if body[-1] != 'A' else 'B'}.{mac}"


def _sealed_elsewhere(state: str) -> str:
    """The same round's key and nonce, sealed by a bridge with another secret."""
    payload = unseal(SECRET, state)
    assert payload is not None
    return seal(b"another secret", key=payload["k"], nonce=payload["n"],
                digest=request_digest("tools/call", CALL_PARAMS), expires=10**6)


@pytest.mark.parametrize("forge", [
    _tamper,
    _sealed_elsewhere,
    lambda s: s.replace(PREFIX, "rs2."),
    lambda s: "eyJsb2NhdGlvbiI6Ik5ldyBZb3JrIn0",
    lambda s: s + "x",
])
def test_a_tampered_or_foreign_request_state_is_rejected(forge: Any) -> None:
    h, _legacy, state = _parked_call()
    actions = h.client(call(2, inputResponses={"q1": ACCEPT}, requestState=forge(state)))
    _rejected(actions, 2, "tampered", "it was not issued by this bridge, or it was altered")
    # the call is still parked: the genuine state still resumes it
    assert one(h.client(call(3, inputResponses={"q1": ACCEPT}, requestState=state)),
               "server")["id"] == 1


def test_an_expired_request_state_is_rejected() -> None:
    h, _legacy, state = _parked_call()
    h.now += 900.001  # the retry arrives before the parked timer had its turn
    actions = h.client(call(2, inputResponses={"q1": ACCEPT}, requestState=state))
    _rejected(actions, 2, "expired", "it has expired")


def test_a_request_state_is_single_use() -> None:
    h, legacy, state = _parked_call()
    assert one(h.client(call(2, inputResponses={"q1": ACCEPT}, requestState=state)),
               "server")["id"] == 1
    actions = h.client(call(3, inputResponses={"q1": ACCEPT}, requestState=state))
    _rejected(actions, 3, "replayed",
              "it was already used; retry with the requestState of the latest round")
    assert one(h.server(answer(legacy, DONE)), "client")["id"] == 2
    actions = h.client(call(4, inputResponses={"q1": ACCEPT}, requestState=state))
    _rejected(actions, 4, "ended",
              "the call it resumes has ended (answered, cancelled or timed out)")


@pytest.mark.parametrize(("method", "params"), [
    ("tools/call", {"name": "login", "arguments": {"team": "other"}}),
    ("tools/call", {"name": "logout", "arguments": {"team": "core"}}),
    ("prompts/get", CALL_PARAMS),
])
def test_a_request_state_presented_on_another_request_is_rejected(method: str, params: Any) -> None:
    h, _legacy, state = _parked_call()
    other = modern(2, method, {**params, "inputResponses": {"q1": ACCEPT}, "requestState": state},
                   caps=ALL_INPUTS)
    _rejected(h.client(other), 2, "mismatch",
              "it belongs to another request (the method or params differ)")


def test_the_state_binds_params_not_the_envelope() -> None:
    h, _legacy, state = _parked_call()
    retry = call(2, caps={"elicitation": {}}, meta={"traceparent": "00-1-2-01"},
                 inputResponses={"q1": ACCEPT}, requestState=state)
    assert one(h.client(retry), "server")["id"] == 1


@pytest.mark.parametrize("extra", [{"requestState": 5},
                                   {"requestState": "x", "inputResponses": []}])
def test_malformed_mrtr_fields_are_invalid_params(extra: Any) -> None:
    h, _legacy, _state = _parked_call()
    reply = one(h.client(call(2, **extra)), "client")
    assert reply["error"] == {"code": -32602, "message": "requestState must be a string and "
                                                         "inputResponses an object"}


def test_input_responses_without_request_state_start_a_fresh_call() -> None:
    h, _ = mode_b()
    legacy = one(h.client(call(1, caps={}, inputResponses={"q1": ACCEPT})), "server")
    assert legacy["params"] == CALL_PARAMS


# Capability gating, per request (§5.6, §5.8.3) --------------------------------------------


@pytest.mark.parametrize(("caps", "question", "error", "required"), [
    ({"elicitation": {}}, request(5, "elicitation/create", {
        "mode": "url", "message": "m", "url": "https://x", "elicitationId": "e"}),
     {"code": -32602, "message": "The request did not declare the elicitation.url capability"},
     {"elicitation": {"url": {}}}),
    ({"elicitation": {"url": {}}}, request(5, "elicitation/create", ELICIT),
     {"code": -32602, "message": "The request did not declare the elicitation.form capability"},
     {"elicitation": {"form": {}}}),
    ({"elicitation": {}}, request(5, "roots/list"),
     {"code": -32601, "message": "Method not found: the request did not declare roots"},
     {"roots": {}}),
    ({"roots": {}}, request(5, "sampling/createMessage", SAMPLE),
     {"code": -32601, "message": "Method not found: the request did not declare sampling"},
     {"sampling": {}}),
    ({"sampling": {}}, request(5, "sampling/createMessage", {**SAMPLE, "tools": []}),
     {"code": -32602, "message": "The request did not declare the sampling.tools capability"},
     {"sampling": {"tools": {}}}),
    ({"sampling": {}}, request(5, "sampling/createMessage",
                               {**SAMPLE, "includeContext": "allServers"}),
     {"code": -32602, "message": "The request did not declare the sampling.context capability"},
     {"sampling": {"context": {}}}),
], ids=["elicitation.url", "elicitation.form", "roots", "sampling", "sampling.tools",
        "sampling.context"])
def test_an_exclusive_calls_undeclared_question_fails_the_call_with_32021(
        caps: Any, question: Any, error: Any, required: Any) -> None:
    """§5.8.3: the legacy call is cancelled, then the server's question gets the answer of a
    legacy client without the capability (the cancel first: the handler stops while it
    waits, and no result of its own races the cancel); the call's round gets -32021 naming
    what was asked for, and the call's late answer is absorbed."""
    h, _ = mode_b()
    legacy = one(h.client(call(1, caps=caps)), "server")
    actions = h.server(question)
    need = ".".join([*required, *next(iter(required.values()))])  # one path in these cases
    assert sent(actions, "server") == [
        {"jsonrpc": "2.0", "method": "notifications/cancelled",
         "params": {"requestId": legacy["id"], "reason": f"the request did not declare {need}"}},
        {"jsonrpc": "2.0", "id": 5, "error": error}]
    assert one(actions, "client") == {"jsonrpc": "2.0", "id": 1, "error": {
        "code": -32021, "message": f"The server requires the {need} capability for this request",
        "data": {"requiredCapabilities": required}}}
    _schema("2026-07-28", "MissingRequiredClientCapabilityError").validate(
        one(actions, "client"))
    assert sent(h.server(answer(legacy, DONE)), "client") == []  # absorbed
    assert sent(h.advance(1000), "client") == []


def test_an_undeclared_question_while_gathering_ends_the_round_and_its_other_questions() -> None:
    h, _ = mode_b()
    legacy = one(h.client(call(1, caps={"elicitation": {}})), "server")
    assert sent(h.server(request(4, "elicitation/create", ELICIT)), "client") == []
    actions = h.server(request(5, "sampling/createMessage", SAMPLE))
    assert sent(actions, "server") == [
        {"jsonrpc": "2.0", "method": "notifications/cancelled",
         "params": {"requestId": legacy["id"], "reason": "the request did not declare sampling"}},
        {"jsonrpc": "2.0", "id": 4, "result": {"action": "cancel"}},
        {"jsonrpc": "2.0", "id": 5, "error": {
            "code": -32601, "message": "Method not found: the request did not declare sampling"}}]
    assert one(actions, "client")["error"]["data"] == {"requiredCapabilities": {"sampling": {}}}
    assert sent(h.advance(1), "client") == []  # no round ships after the park window


def test_the_one_shared_call_at_the_server_owns_the_question_and_gets_32021() -> None:
    h, _ = mode_b()
    legacy = one(h.client(call(1, caps={})), "server")
    assert one(h.client(modern(2, "tools/list")), "server")["method"] == "tools/list"
    actions = h.server(request(5, "sampling/createMessage", SAMPLE))
    assert sent(actions, "server") == [
        {"jsonrpc": "2.0", "method": "notifications/cancelled",
         "params": {"requestId": legacy["id"], "reason": "the request did not declare sampling"}},
        {"jsonrpc": "2.0", "id": 5, "error": {
            "code": -32601, "message": "Method not found: the request did not declare sampling"}}]
    assert one(actions, "client") == {"jsonrpc": "2.0", "id": 1, "error": {
        "code": -32021, "message": "The server requires the sampling capability for this request",
        "data": {"requiredCapabilities": {"sampling": {}}}}}
    # the slot is free: a call that may ask goes at once
    assert one(h.client(call(3)), "server")["method"] == "tools/call"
    assert sent(h.server(answer(legacy, DONE)), "client") == []  # absorbed


def test_with_several_shared_calls_the_question_is_refused_and_the_calls_go_on() -> None:
    """No call can be named: today's answer alone (§5.8.3)."""
    h, _ = mode_b()
    a = one(h.client(call(1, caps={})), "server")
    b = one(h.client(call(2, caps={"experimental": {}})), "server")
    actions = h.server(request(5, "elicitation/create", ELICIT))
    assert sent(actions, "client") == []
    assert sent(actions, "server") == [{"jsonrpc": "2.0", "id": 5, "error": {
        "code": -32601, "message": "Method not found: the request did not declare elicitation"}}]
    assert one(h.server(answer(a, DONE)), "client")["result"]["resultType"] == "complete"
    # one shared call left at the server: now the question is its own
    actions = h.server(request(6, "elicitation/create", ELICIT))
    assert one(actions, "client")["id"] == 2
    assert one(actions, "client")["error"]["code"] == -32021
    assert sent(h.server(answer(b, DONE)), "client") == []


def test_url_mode_elicitation_is_asked_without_its_elicitation_id() -> None:
    h, _ = mode_b()
    url = {"mode": "url", "message": "Sign in", "url": "https://x/auth", "elicitationId": "e1"}
    _legacy, reply = parked(h, call(1, caps={"elicitation": {"url": {}}}),
                           request(5, "elicitation/create", url))
    assert reply["result"]["inputRequests"] == {"q1": {"method": "elicitation/create", "params": {
        "mode": "url", "message": "Sign in", "url": "https://x/auth"}}}
    actions = h.client(call(2, caps={"elicitation": {"url": {}}},
                            inputResponses={"q1": {"action": "accept"}},
                            requestState=reply["result"]["requestState"]))
    assert one(actions, "server") == {"jsonrpc": "2.0", "id": 5, "result": {"action": "accept"}}
    assert sent(h.server(notify("notifications/elicitation/complete", {"elicitationId": "e1"})),
                "client") == []


def test_a_retry_declaring_less_than_the_server_asked_fails_with_32021() -> None:
    h, _ = mode_b()
    legacy, reply = parked(h, call(1), request(1, "elicitation/create", ELICIT))
    h.server(request(2, "sampling/createMessage", SAMPLE))  # asked while parked
    h.server(request(3, "roots/list"))  # asked while parked
    actions = h.client(call(2, caps={"elicitation": {}}, inputResponses={"q1": ACCEPT},
                            requestState=reply["result"]["requestState"]))
    assert one(actions, "server") == {"jsonrpc": "2.0", "id": 1, "result": ACCEPT}
    actions = h.advance(0.05)
    assert sent(actions, "server") == [
        {"jsonrpc": "2.0", "method": "notifications/cancelled",
         "params": {"requestId": legacy["id"],
                    "reason": "the request did not declare roots, sampling"}},
        {"jsonrpc": "2.0", "id": 2, "error": {
            "code": -32601, "message": "Method not found: the request did not declare sampling"}},
        {"jsonrpc": "2.0", "id": 3, "error": {
            "code": -32601, "message": "Method not found: the request did not declare roots"}}]
    assert one(actions, "client") == {"jsonrpc": "2.0", "id": 2, "error": {
        "code": -32021,
        "message": "The server requires the roots and sampling capabilities for this request",
        "data": {"requiredCapabilities": {"sampling": {}, "roots": {}}}}}
    assert sent(h.server(answer(legacy, DONE)), "client") == []


# Questions with no call to carry them (§11.5) ---------------------------------------------


def test_an_unsolicited_roots_list_right_after_the_handshake_is_answered_locally() -> None:
    h = Harness()
    h.bridge.secret = SECRET
    probe = one(h.start(), "server")
    h.client(call(1, caps={"elicitation": {}}))  # (one declaring roots: see test_roots_b.py)
    init = one(h.server(fail(probe, -32601, "Method not found")), "server")
    h.server(answer(init, LEGACY_INIT_RESULT))  # initialized + the settling ping go out
    actions = h.server(request(0, "roots/list"))  # the server asks as soon as it is initialized
    assert sent(actions, "client") == []
    assert one(actions, "server") == {"jsonrpc": "2.0", "id": 0, "result": {"roots": []}}
    actions = h.server(answer(h.sent_request("ping"), {}))
    assert one(actions, "server") == {"jsonrpc": "2.0", "id": h.minted("call"),
                                      "method": "tools/call", "params": CALL_PARAMS}
    no_requests_to(actions)


def test_unsolicited_questions_get_the_answers_of_a_client_with_nobody_to_ask() -> None:
    h, _ = mode_b()
    assert one(h.server(request(1, "elicitation/create", ELICIT)), "server") == {
        "jsonrpc": "2.0", "id": 1, "result": {"action": "cancel"}}
    assert one(h.server(request(2, "sampling/createMessage", SAMPLE)), "server") == {
        "jsonrpc": "2.0", "id": 2, "error": {
            "code": -1, "message": "Sampling request rejected: no request in flight can carry it"}}
    # during a request that cannot carry input (§11.5), the same
    one(h.client(modern(3, "tools/list", caps=ALL_INPUTS)), "server")
    assert one(h.server(request(3, "roots/list")), "server")["result"] == {"roots": []}


def test_unsolicited_roots_are_the_roots_the_client_gave_last() -> None:
    h, _ = mode_b()
    roots = {"roots": [{"uri": "file:///work"}]}
    legacy, reply = parked(h, call(1), request(1, "roots/list"))
    h.client(call(2, inputResponses={"q1": roots}, requestState=reply["result"]["requestState"]))
    h.server(answer(legacy, DONE))
    assert one(h.server(request(9, "roots/list")), "server") == {"jsonrpc": "2.0", "id": 9,
                                                                 "result": roots}


# Attribution: which calls run together (§11.4) --------------------------------------------


def test_two_concurrent_calls_that_may_ask_run_one_after_the_other() -> None:
    h, _ = mode_b()
    first = one(h.client(call(1)), "server")
    assert sent(h.client(call(2, caps={"sampling": {}}, arguments={"n": 2})), "server") == []
    # a request that cannot carry input is never held back
    assert one(h.client(modern(3, "tools/list")), "server")["method"] == "tools/list"
    h.server(request(10, "elicitation/create", ELICIT))
    reply = one(h.advance(0.05), "client")
    assert reply["id"] == 1  # the question is the running call's
    assert sent(h.advance(100), "server") == []  # parked, the first call still holds its turn
    h.client(call(4, inputResponses={"q1": ACCEPT}, requestState=reply["result"]["requestState"]))
    actions = h.server(answer(first, DONE))
    assert one(actions, "client")["id"] == 4
    second = one(actions, "server")
    assert second == {"jsonrpc": "2.0", "id": h.minted("second call"), "method": "tools/call",
                      "params": {"name": "login", "arguments": {"n": 2}}}
    h.server(request(11, "sampling/createMessage", SAMPLE))
    assert one(h.advance(0.05), "client")["id"] == 2


def test_calls_that_declare_no_input_run_side_by_side_and_questions_are_refused() -> None:
    h, _ = mode_b()
    a = one(h.client(call(1, caps={})), "server")
    b = one(h.client(call(2, caps={"experimental": {}})), "server")
    assert a["id"] != b["id"]
    actions = h.server(request(5, "roots/list"))  # two shared calls: nobody to fail
    assert one(actions, "server")["error"]["code"] == -32601
    assert sent(actions, "client") == []
    # one that may ask waits for both, and later shared calls queue behind it (in order)
    assert sent(h.client(call(3)), "server") == []
    assert sent(h.client(call(4, caps={})), "server") == []
    h.server(answer(a, DONE))
    actions = h.server(answer(b, DONE))
    assert [m["id"] for m in sent(actions, "client")] == [2]
    assert [m["method"] for m in sent(actions, "server")] == ["tools/call"]
    third = sent(actions, "server")[0]
    actions = h.server(answer(third, DONE))
    assert [m["method"] for m in sent(actions, "server")] == ["tools/call"]


# Parked timeout (§5.8.4.6, §11.7) ---------------------------------------------------------


def test_a_parked_call_whose_client_never_retries_is_cancelled_at_the_server() -> None:
    h, _ = mode_b(config=CoreConfig(parked_timeout=60.0))
    legacy, reply = parked(h, call(1), request(1, "elicitation/create", ELICIT),
                           request(2, "sampling/createMessage", SAMPLE))
    waiting = h.client(call(2, caps={"roots": {}}, arguments={"n": 2}))
    assert sent(waiting, "server") == []
    assert sent(h.advance(59.9), "server") == []
    actions = h.advance(0.1)
    assert sent(actions, "client") == []
    assert sent(actions, "server") == [
        {"jsonrpc": "2.0", "method": "notifications/cancelled",
         "params": {"requestId": legacy["id"],
                    "reason": "the client did not retry within 60 s"}},
        {"jsonrpc": "2.0", "id": 1, "result": {"action": "cancel"}},
        {"jsonrpc": "2.0", "id": 2, "error": {
            "code": -32603, "message": "mcp-rosetta: the client did not retry within 60 s"}},
        {"jsonrpc": "2.0", "id": h.minted("waiting call"), "method": "tools/call",
         "params": {"name": "login", "arguments": {"n": 2}}},
    ]
    assert [log.event for log in h.logs].count("mrtr.expired") == 1
    late = h.client(call(3, inputResponses={"q1": ACCEPT},
                         requestState=reply["result"]["requestState"]))
    assert one(late, "client")["error"]["data"] == {"reason": "ended"}


# request_timeout: the server's time on each round ------------------------------------------

TIMED_OUT = {"code": -32603, "message": "mcp-rosetta: no answer from the server within 5 s",
             "data": {"source": "mcp-rosetta", "method": "tools/call"}}


def test_a_call_the_server_never_answers_times_out_and_the_next_call_starts() -> None:
    h, _ = mode_b(config=CoreConfig(request_timeout=5.0))
    legacy = one(h.client(call(1)), "server")
    queued = h.client(call(2, arguments={"n": 2}))  # exclusive too: waits for the first
    assert sent(queued, "server") == []
    assert h.advance(4.9) == []
    actions = h.advance(0.1)
    assert sent(actions, "client") == [{"jsonrpc": "2.0", "id": 1, "error": TIMED_OUT}]
    assert sent(actions, "server") == [
        {"jsonrpc": "2.0", "method": "notifications/cancelled",
         "params": {"requestId": legacy["id"], "reason": "mcp-rosetta request timeout"}},
        {"jsonrpc": "2.0", "id": h.minted("second call"), "method": "tools/call",
         "params": {"name": "login", "arguments": {"n": 2}}},
    ]
    assert sent(h.server(answer(legacy, DONE)), "client") == []  # the late answer is absorbed
    assert [c.owner for c in _calls(h)] == [2]


def test_a_timed_out_call_answers_the_questions_its_server_asked() -> None:
    h, _ = mode_b(config=CoreConfig(request_timeout=5.0, park_window=10.0))
    legacy = one(h.client(call(1)), "server")
    h.server(request(9, "sampling/createMessage", SAMPLE))  # gathering for park_window
    actions = h.advance(5.0)
    assert sent(actions, "client") == [{"jsonrpc": "2.0", "id": 1, "error": TIMED_OUT}]
    assert sent(actions, "server") == [
        {"jsonrpc": "2.0", "method": "notifications/cancelled",
         "params": {"requestId": legacy["id"], "reason": "mcp-rosetta request timeout"}},
        {"jsonrpc": "2.0", "id": 9, "error": {
            "code": -32603, "message": "mcp-rosetta: the request timed out"}}]
    assert _calls(h) == []
    assert sent(h.advance(10.0), "client") == []  # no round is shipped for it


def test_the_clock_stops_while_a_call_is_parked_and_restarts_with_the_retry() -> None:
    h, _ = mode_b(config=CoreConfig(request_timeout=5.0, parked_timeout=60.0))
    legacy, reply = parked(h, call(1), request(42, "elicitation/create", ELICIT))
    assert h.advance(30.0) == []  # the user takes their time: nothing times out
    retry = h.client(call(2, inputResponses={"q1": ACCEPT},
                          requestState=reply["result"]["requestState"]))
    assert one(retry, "server") == {"jsonrpc": "2.0", "id": 42, "result": ACCEPT}
    assert h.advance(4.9) == []
    actions = h.advance(0.1)
    assert sent(actions, "client") == [{"jsonrpc": "2.0", "id": 2, "error": TIMED_OUT}]
    assert one(actions, "server")["params"]["requestId"] == legacy["id"]


def test_a_call_answered_in_time_leaves_no_clock_running() -> None:
    h, _ = mode_b(config=CoreConfig(request_timeout=5.0))
    legacy = one(h.client(call(1, caps={})), "server")
    assert one(h.server(answer(legacy, DONE)), "client")["result"]["content"] == DONE["content"]
    assert h.advance(60.0) == []


def _calls(h: Harness) -> list[Any]:
    return list(h.bridge.handler.parking.calls.values())  # type: ignore[union-attr]


# Cancellation of any round (§9.2) ---------------------------------------------------------


def test_cancelling_the_running_round_cancels_the_call_and_answers_its_questions() -> None:
    h, _ = mode_b()
    legacy = one(h.client(call("a")), "server")
    h.server(request(1, "elicitation/create", ELICIT))  # still gathering
    actions = h.client(notify("notifications/cancelled", {"requestId": "a"}))
    assert sent(actions, "client") == []
    assert sent(actions, "server") == [
        {"jsonrpc": "2.0", "method": "notifications/cancelled",
         "params": {"requestId": legacy["id"], "reason": "cancelled by the client"}},
        {"jsonrpc": "2.0", "id": 1, "result": {"action": "cancel"}}]
    assert sent(h.advance(1), "client") == []
    assert sent(h.server(answer(legacy, DONE)), "client") == []


def test_cancelling_a_parked_rounds_id_cancels_the_legacy_call() -> None:
    h, _ = mode_b()
    legacy, reply = parked(h, call(1), request(1, "roots/list"))
    actions = h.client(notify("notifications/cancelled", {"requestId": 1, "reason": "user"}))
    assert sent(actions, "client") == []
    assert sent(actions, "server") == [
        {"jsonrpc": "2.0", "method": "notifications/cancelled",
         "params": {"requestId": legacy["id"], "reason": "user"}},
        {"jsonrpc": "2.0", "id": 1, "error": {"code": -32603, "message": "mcp-rosetta: user"}}]
    late = h.client(call(2, inputResponses={"q1": {"roots": []}},
                         requestState=reply["result"]["requestState"]))
    assert one(late, "client")["error"]["data"] == {"reason": "ended"}


def test_cancelling_an_earlier_round_while_a_later_one_runs_ends_both() -> None:
    h, _ = mode_b()
    legacy, reply = parked(h, call(1), request(1, "roots/list"))
    h.client(call(2, inputResponses={"q1": {"roots": []}},
                  requestState=reply["result"]["requestState"]))
    actions = h.client(notify("notifications/cancelled", {"requestId": 1}))
    assert one(actions, "client") == {"jsonrpc": "2.0", "id": 2, "error": {
        "code": -32603, "message": "mcp-rosetta: the call was cancelled (its round 1 was "
                                   "cancelled)", "data": {"source": "mcp-rosetta"}}}
    assert one(actions, "server")["params"]["requestId"] == legacy["id"]


def test_a_reused_id_no_longer_names_the_old_round() -> None:
    h, _ = mode_b()
    _legacy, _reply = parked(h, call(1), request(1, "roots/list"))
    other = one(h.client(modern(1, "tools/list")), "server")
    actions = h.client(notify("notifications/cancelled", {"requestId": 1}))
    assert one(actions, "server")["params"] == {"requestId": other["id"]}


def test_cancelling_a_queued_call_means_it_is_never_sent() -> None:
    h, _ = mode_b()
    first = one(h.client(call(1)), "server")
    h.client(call(2))
    assert sent(h.client(notify("notifications/cancelled", {"requestId": 2})), "server") == []
    actions = h.server(answer(first, DONE))
    assert sent(actions, "server") == [] and one(actions, "client")["id"] == 1


def test_the_server_withdrawing_a_question_removes_it_from_the_round() -> None:
    h, _ = mode_b()
    _legacy, reply = parked(h, call(1), request(1, "elicitation/create", ELICIT),
                           request(2, "roots/list"))
    h.server(notify("notifications/cancelled", {"requestId": 1, "reason": "timeout"}))
    actions = h.client(call(2, inputResponses={"q1": ACCEPT, "q2": {"roots": []}},
                            requestState=reply["result"]["requestState"]))
    assert sent(actions, "server") == [{"jsonrpc": "2.0", "id": 2, "result": {"roots": []}}]
    h.server(request(3, "roots/list"))
    h.server(notify("notifications/cancelled", {"requestId": 3}))
    assert sent(h.advance(0.05), "client") == []  # nothing left to ask


# Progress and logs across rounds (§9.3, §8) -----------------------------------------------


def test_progress_follows_the_round_in_progress_and_is_dropped_while_parked() -> None:
    h, _ = mode_b()
    legacy = one(h.client(call(1, meta={"progressToken": "p1"})), "server")
    assert legacy["params"] == {**CALL_PARAMS, "_meta": {"progressToken": h.minted("token")}}

    def progress(n: int) -> Any:
        return sent(h.server(notify("notifications/progress",
                                    {"progressToken": h.minted("token"), "progress": n})), "client")

    assert progress(1) == [notify("notifications/progress", {"progressToken": "p1", "progress": 1})]
    h.server(request(1, "roots/list"))
    reply = one(h.advance(0.05), "client")
    assert progress(2) == []
    h.client(call(2, meta={"progressToken": 99}, inputResponses={"q1": {"roots": []}},
                  requestState=reply["result"]["requestState"]))
    assert progress(3) == [notify("notifications/progress", {"progressToken": 99, "progress": 3})]
    h.server(answer(legacy, DONE))
    assert progress(4) == []


def test_a_retry_with_a_log_level_receives_the_calls_logs() -> None:
    h, _ = mode_b()
    message = notify("notifications/message", {"level": "info", "data": "working"})
    _legacy, reply = parked(h, call(1), request(1, "roots/list"))
    assert sent(h.server(message), "client") == []
    actions = h.client(call(2, meta={"io.modelcontextprotocol/logLevel": "info"},
                            inputResponses={"q1": {"roots": []}},
                            requestState=reply["result"]["requestState"]))
    assert sent(actions, "server") == [
        {"jsonrpc": "2.0", "id": 1, "result": {"roots": []}},
        {"jsonrpc": "2.0", "id": h.minted("setLevel"), "method": "logging/setLevel",
         "params": {"level": "info"}}]
    assert sent(h.server(message), "client") == [message]


# URL elicitation required (-32042), §5.9 (ii) ---------------------------------------------

URL_ERROR = {"code": -32042, "message": "Authorization required", "data": {"elicitations": [
    {"mode": "url", "elicitationId": "e-1", "url": "https://x/connect?e=1",
     "message": "Connect your account"}]}}
URL_CAPS = {"elicitation": {"url": {}}}


def _url_round(config: CoreConfig | None = None) -> tuple[Any, Any, Any]:
    h, _ = mode_b(config=config)
    legacy = one(h.client(call(1, caps=URL_CAPS, meta={"traceparent": "t1"})), "server")
    reply = one(h.server({"jsonrpc": "2.0", "id": legacy["id"], "error": URL_ERROR}), "client")
    return h, legacy, reply


def test_url_elicitation_required_becomes_a_round_and_the_call_is_sent_again() -> None:
    h, _legacy, reply = _url_round()
    assert reply["result"]["inputRequests"] == {"url-e-1": {
        "method": "elicitation/create",
        "params": {"mode": "url", "message": "Connect your account",
                   "url": "https://x/connect?e=1"}}}
    retry = call(2, caps=URL_CAPS, meta={"traceparent": "t2"},
                 inputResponses={"url-e-1": {"action": "accept"}},
                 requestState=reply["result"]["requestState"])
    assert sent(h.client(retry), "server") == []  # waits for the out-of-band completion
    actions = h.server(notify("notifications/elicitation/complete", {"elicitationId": "e-1"}))
    assert one(actions, "server") == {"jsonrpc": "2.0", "id": h.minted("again"),
                                      "method": "tools/call",
                                      "params": {**CALL_PARAMS, "_meta": {"traceparent": "t2"}}}
    final = one(h.server(answer({"id": h.minted("again")}, DONE)), "client")
    assert final == {"jsonrpc": "2.0", "id": 2, "result": {**DONE, "resultType": "complete",
                                                           "_meta": OLD_SRV}}


def test_a_completion_before_the_retry_sends_the_call_again_at_once() -> None:
    h, _legacy, reply = _url_round()
    h.server(notify("notifications/elicitation/complete", {"elicitationId": "e-1"}))
    retry = call(2, caps=URL_CAPS, inputResponses={"url-e-1": {"action": "accept"}},
                 requestState=reply["result"]["requestState"])
    assert one(h.client(retry), "server")["method"] == "tools/call"


def test_without_a_completion_the_call_is_sent_again_after_the_wait() -> None:
    h, _legacy, reply = _url_round(CoreConfig(url_elicitation_wait=10.0))
    h.client(call(2, caps=URL_CAPS, inputResponses={"url-e-1": {"action": "accept"}},
                  requestState=reply["result"]["requestState"]))
    assert sent(h.advance(9.9), "server") == []
    again = one(h.advance(0.1), "server")
    # the server still wants it: another round, on the retry's id
    reply = one(h.server({"jsonrpc": "2.0", "id": again["id"], "error": URL_ERROR}), "client")
    assert reply["id"] == 2 and reply["result"]["resultType"] == "input_required"


def test_declining_a_required_url_elicitation_fails_the_call() -> None:
    h, _legacy, reply = _url_round()
    actions = h.client(call(2, caps=URL_CAPS, inputResponses={"url-e-1": {"action": "decline"}},
                            requestState=reply["result"]["requestState"]))
    assert sent(actions, "server") == []
    assert one(actions, "client") == {"jsonrpc": "2.0", "id": 2, "error": {
        "code": -32603, "message": "mcp-rosetta: the server requires URL elicitation the user "
                                   "did not accept (Authorization required)",
        "data": {"declined": ["url-e-1"]}}}


def test_url_elicitation_required_without_the_capability_is_32021() -> None:
    h, _ = mode_b()
    legacy = one(h.client(call(1, caps={"elicitation": {}})), "server")
    reply = one(h.server({"jsonrpc": "2.0", "id": legacy["id"], "error": URL_ERROR}), "client")
    assert reply == {"jsonrpc": "2.0", "id": 1, "error": {
        "code": -32021, "message": "The server requires URL mode elicitation for this request",
        "data": {"requiredCapabilities": {"elicitation": {"url": {}}}}}}


def test_a_malformed_url_elicitation_required_is_an_internal_error() -> None:
    h, _ = mode_b()
    legacy = one(h.client(call(1, caps=URL_CAPS)), "server")
    bad = {"code": -32042, "message": "x", "data": {"elicitations": [{"url": "u"}]}}
    reply = one(h.server({"jsonrpc": "2.0", "id": legacy["id"], "error": bad}), "client")
    assert reply["error"]["code"] == -32603
    assert reply["error"]["data"] == {"legacyError": bad}


def test_a_parked_call_does_not_hold_the_bridge_open_after_client_eof() -> None:
    from bridge.core.events import Stop

    h, _ = mode_b()
    parked(h, call(1), request(1, "roots/list"))
    actions = h.close("client")
    assert any(isinstance(a, Stop) and a.code == 0 for a in actions)
    assert sent(actions, "client") == []
