"""Transcripts of mode A's input loop: `input_required` becomes legacy server requests.

Rules: mrtr.mdx; TRANSLATION.md §5.5-5.7, §5.9, §9.2-9.3, Appendix A.
"""

from __future__ import annotations

from typing import Any

import pytest

from bridge.core.config import CoreConfig
from bridge.core.eras import (
    META_CLIENT_CAPABILITIES,
    META_CLIENT_INFO,
    META_LOG_LEVEL,
    META_PROTOCOL_VERSION,
    MODERN_PROTOCOL_VERSION,
)
from tests.core.harness import Harness, answer, fail, mode_a, one, request, sent

Message = dict[str, Any]

CLIENT_INFO = {"name": "OldClient", "version": "1.0"}
# Everything a 2025-11-25 client can declare for input, roots with change notifications.
ALL_CAPS: Message = {"elicitation": {"form": {}, "url": {}}, "sampling": {},
                     "roots": {"listChanged": True}}
# What the server is told: roots loses listChanged in the modern era (client/roots.mdx).
ALL_CAPS_MODERN: Message = {"elicitation": {"form": {}, "url": {}}, "sampling": {}, "roots": {}}

FORM = {"method": "elicitation/create",
        "params": {"mode": "form", "message": "Username?",
                   "requestedSchema": {"type": "object",
                                       "properties": {"name": {"type": "string"}},
                                       "required": ["name"]}}}
FORM_2 = {"method": "elicitation/create",
          "params": {"mode": "form", "message": "Proceed?",
                     "requestedSchema": {"type": "object",
                                         "properties": {"ok": {"type": "boolean"}}}}}
SAMPLING = {"method": "sampling/createMessage",
            "params": {"messages": [{"role": "user", "content": {"type": "text",
                                                                  "text": "Capital of France?"}}],
                       "systemPrompt": "Be brief.", "maxTokens": 100}}
SAMPLED = {"role": "assistant", "content": {"type": "text", "text": "Paris."},
           "model": "claude-3-sonnet-20240307", "stopReason": "endTurn"}
ROOTS = {"method": "roots/list"}
ROOTS_1 = {"roots": [{"uri": "file:///home/user/project", "name": "project"}]}
ROOTS_2 = {"roots": [{"uri": "file:///home/user/other", "name": "other"}]}
ACCEPTED = {"action": "accept", "content": {"name": "octocat"}}
DONE = {"resultType": "complete", "content": [{"type": "text", "text": "done"}],
        "isError": False, "ttlMs": 0, "cacheScope": "private"}
DONE_LEGACY = {"content": [{"type": "text", "text": "done"}], "isError": False}


def stamped(params: Message, caps: Message = ALL_CAPS_MODERN, level: str | None = None) -> Message:
    """`params` as the modern server must receive them: the client's own plus the envelope."""
    meta = dict(params.get("_meta") or {})
    meta.update({META_PROTOCOL_VERSION: MODERN_PROTOCOL_VERSION,
                 META_CLIENT_CAPABILITIES: caps, META_CLIENT_INFO: CLIENT_INFO})
    if level is not None:
        meta[META_LOG_LEVEL] = level
    return {**params, "_meta": meta}


def input_required(requests: Message | None = None, state: str | None = None) -> Message:
    result: Message = {"resultType": "input_required"}
    if requests is not None:
        result["inputRequests"] = requests
    if state is not None:
        result["requestState"] = state
    return result


def tool_call(h: Harness, id: Any = 5, name: str = "login", arguments: Message | None = None,
              meta: Message | None = None) -> tuple[Message, Message]:
    """The client calls a tool; returns its params and what the server received."""
    params: Message = {"name": name, "arguments": arguments or {}}
    if meta is not None:
        params["_meta"] = meta
    forwarded = one(h.client(request(id, "tools/call", params)), "server")
    assert forwarded["method"] == "tools/call"
    return params, forwarded


def expect_round(h: Harness, actions: list[Any], original: Message, caps: Message = ALL_CAPS_MODERN,
                 responses: Message | None = None, state: str | None = None,
                 level: str | None = None, method: str = "tools/call") -> Message:
    """The one retry the server got: same method and params, answers, state, fresh envelope."""
    assert sent(actions, "client") == []
    retry = one(actions, "server")
    params = dict(original)
    if responses is not None:
        params["inputResponses"] = responses
    if state is not None:
        params["requestState"] = state
    assert retry == {"jsonrpc": "2.0", "id": retry["id"], "method": method,
                     "params": stamped(params, caps, level)}
    return retry


def asked(actions: list[Any]) -> list[Message]:
    """The input requests the client was sent, checked to be bridge-minted requests."""
    messages = sent(actions, "client")
    for message in messages:
        assert isinstance(message["id"], str) and message["jsonrpc"] == "2.0", message
    return messages


def done(h: Harness, retry: Message, id: Any = 5) -> None:
    """The server completes the call; the client gets the legacy result under its own id."""
    actions = h.server(answer(retry, DONE))
    assert sent(actions, "client") == [{"jsonrpc": "2.0", "id": id, "result": DONE_LEGACY}]
    assert sent(actions, "server") == []


# Elicitation ------------------------------------------------------------------------------


def test_elicitation_accept_is_the_appendix_a_transcript() -> None:
    h, _ = mode_a(caps=ALL_CAPS)
    original, first = tool_call(h, meta={"progressToken": 7})
    assert first["params"] == stamped(original)

    actions = h.server(answer(first, input_required({"user": FORM}, state="xyz")))
    assert sent(actions, "server") == []
    question = one(actions, "client")
    assert question == {"jsonrpc": "2.0", "id": question["id"], "method": "elicitation/create",
                        "params": FORM["params"]}
    assert question["id"] != first["id"]

    retry = expect_round(h, h.client(answer(question, ACCEPTED)), original,
                         responses={"user": ACCEPTED}, state="xyz")
    # mrtr.mdx §Client Requirements: the retry is an independent request with a new id.
    assert retry["id"] not in (first["id"], question["id"])
    assert retry["params"]["_meta"]["progressToken"] == 7
    done(h, retry)


@pytest.mark.parametrize("choice", [{"action": "decline"}, {"action": "cancel"}])
def test_elicitation_decline_and_cancel_are_answers_not_errors(choice: Message) -> None:
    # TRANSLATION.md §5.4.6: declining an elicitation is expressible, so the loop goes on.
    h, _ = mode_a(caps=ALL_CAPS)
    original, first = tool_call(h)
    question = one(h.server(answer(first, input_required({"user": FORM}, state="s1"))), "client")
    retry = expect_round(h, h.client(answer(question, choice)), original,
                         responses={"user": choice}, state="s1")
    refused = {"resultType": "complete", "isError": True,
               "content": [{"type": "text", "text": "login needs a user"}]}
    actions = h.server(answer(retry, refused))
    assert sent(actions, "client") == [{"jsonrpc": "2.0", "id": 5, "result": {
        "isError": True, "content": [{"type": "text", "text": "login needs a user"}]}}]


def test_elicitations_reach_the_user_one_at_a_time() -> None:
    h, _ = mode_a(caps=ALL_CAPS)
    original, first = tool_call(h)
    actions = h.server(answer(first, input_required({"a": FORM, "b": FORM_2}, state="s")))
    question_a = one(actions, "client")
    assert question_a["params"] == FORM["params"]
    actions = h.client(answer(question_a, ACCEPTED))
    assert sent(actions, "server") == []  # not retried before every answer is in
    question_b = one(actions, "client")
    assert question_b["method"] == "elicitation/create"
    assert question_b["params"] == FORM_2["params"]
    assert question_b["id"] != question_a["id"]
    yes = {"action": "accept", "content": {"ok": True}}
    retry = expect_round(h, h.client(answer(question_b, yes)), original, state="s",
                         responses={"a": ACCEPTED, "b": yes})
    done(h, retry)


def test_a_2025_06_18_client_gets_no_mode() -> None:
    caps = {"elicitation": {}}
    h, _ = mode_a(version="2025-06-18", caps=caps)
    original, first = tool_call(h)
    question = one(h.server(answer(first, input_required({"user": FORM}))), "client")
    params = {k: v for k, v in FORM["params"].items() if k != "mode"}
    assert question == {"jsonrpc": "2.0", "id": question["id"], "method": "elicitation/create",
                        "params": params}
    retry = expect_round(h, h.client(answer(question, ACCEPTED)), original, caps=caps,
                         responses={"user": ACCEPTED})
    done(h, retry)


def test_a_2025_11_25_client_keeps_mode_form_and_gets_no_elicitation_id() -> None:
    h, _ = mode_a(caps={"elicitation": {}})
    _, first = tool_call(h)
    question = one(h.server(answer(first, input_required({"user": FORM}))), "client")
    assert question["params"] == FORM["params"]


# URL-mode elicitation (§5.9) --------------------------------------------------------------


def url_elicitation(url: str, message: str = "Sign in to GitHub") -> Message:
    return {"method": "elicitation/create", "params": {"mode": "url", "message": message,
                                                       "url": url}}


LOGIN_URL = "https://github.com/login/oauth/authorize?state=abc"
OTHER_URL = "https://example.com/consent"


def test_url_elicitation_gets_an_elicitation_id_and_is_not_asked_twice_in_a_row() -> None:
    h, _ = mode_a(caps=ALL_CAPS)
    original, first = tool_call(h)
    actions = h.server(answer(first, input_required({"login": url_elicitation(LOGIN_URL)}, "s1")))
    question = one(actions, "client")
    elicitation_id = question["params"]["elicitationId"]
    assert isinstance(elicitation_id, str) and elicitation_id
    assert question == {"jsonrpc": "2.0", "id": question["id"], "method": "elicitation/create",
                        "params": {"mode": "url", "message": "Sign in to GitHub",
                                   "url": LOGIN_URL, "elicitationId": elicitation_id}}
    # accept is consent, not completion: retry at once and let the server say (§5.9).
    consent = {"action": "accept"}
    retry = expect_round(h, h.client(answer(question, consent)), original,
                         responses={"login": consent}, state="s1")

    # Not done yet: the same URL again. The user is not asked; the bridge backs off and
    # retries with the same answer.
    actions = h.server(answer(retry, input_required({"login": url_elicitation(LOGIN_URL)}, "s2")))
    assert sent(actions, "client") == [] and sent(actions, "server") == []
    assert h.advance(0.04) == []
    retry_2 = expect_round(h, h.advance(0.01), original, responses={"login": consent}, state="s2")
    assert retry_2["id"] != retry["id"]
    done(h, retry_2)


def test_url_elicitations_accepted_together_are_all_remembered() -> None:
    h, _ = mode_a(caps=ALL_CAPS)
    original, first = tool_call(h)
    both = {"gh": url_elicitation(LOGIN_URL), "other": url_elicitation(OTHER_URL, "Consent")}
    question_1 = one(h.server(answer(first, input_required(both, "s1"))), "client")
    question_2 = one(h.client(answer(question_1, {"action": "accept"})), "client")
    assert {question_1["params"]["url"], question_2["params"]["url"]} == {LOGIN_URL, OTHER_URL}
    assert question_1["params"]["elicitationId"] != question_2["params"]["elicitationId"]
    consent = {"action": "accept"}
    retry = expect_round(h, h.client(answer(question_2, consent)), original,
                         responses={"gh": consent, "other": consent}, state="s1")
    # Both URLs again in the next round: neither is asked again.
    actions = h.server(answer(retry, input_required(both, "s2")))
    assert sent(actions, "client") == []
    retry_2 = expect_round(h, h.advance(0.05), original,
                           responses={"gh": consent, "other": consent}, state="s2")
    done(h, retry_2)


def test_the_same_url_is_asked_again_when_not_in_a_row() -> None:
    h, _ = mode_a(caps=ALL_CAPS)
    original, first = tool_call(h)
    question = one(h.server(answer(first, input_required({"login": url_elicitation(LOGIN_URL)}))),
                   "client")
    consent = {"action": "accept"}
    retry = expect_round(h, h.client(answer(question, consent)), original,
                         responses={"login": consent})
    form = one(h.server(answer(retry, input_required({"user": FORM}))), "client")
    assert form["params"] == FORM["params"]
    retry_2 = expect_round(h, h.client(answer(form, ACCEPTED)), original,
                           responses={"user": ACCEPTED})
    # A round without it came in between: this is a new request for consent (§5.9 only
    # spares the user the same URL in consecutive rounds).
    again = one(h.server(answer(retry_2, input_required({"login": url_elicitation(LOGIN_URL)}))),
                "client")
    assert again["params"]["url"] == LOGIN_URL
    assert again["params"]["elicitationId"] != question["params"]["elicitationId"]


def test_a_declined_url_is_asked_again() -> None:
    h, _ = mode_a(caps=ALL_CAPS)
    original, first = tool_call(h)
    question = one(h.server(answer(first, input_required({"login": url_elicitation(LOGIN_URL)}))),
                   "client")
    retry = expect_round(h, h.client(answer(question, {"action": "decline"})), original,
                         responses={"login": {"action": "decline"}})
    again = one(h.server(answer(retry, input_required({"login": url_elicitation(LOGIN_URL)}))),
                "client")
    assert again["method"] == "elicitation/create" and again["params"]["url"] == LOGIN_URL


# Sampling and roots -----------------------------------------------------------------------


def test_sampling_is_asked_and_its_result_sent_back_verbatim() -> None:
    h, _ = mode_a(caps=ALL_CAPS)
    original, first = tool_call(h, name="quiz")
    question = one(h.server(answer(first, input_required({"capital": SAMPLING}, "st"))), "client")
    assert question == {"jsonrpc": "2.0", "id": question["id"],
                        "method": "sampling/createMessage", "params": SAMPLING["params"]}
    result = {**SAMPLED, "_meta": {"note": "kept"}}  # CreateMessageResult._meta is kept (§5.5)
    retry = expect_round(h, h.client(answer(question, result)), original,
                         responses={"capital": result}, state="st")
    done(h, retry)


def test_sampling_content_arrays_become_objects_for_older_clients() -> None:
    caps = {"sampling": {}}
    h, _ = mode_a(version="2025-06-18", caps=caps)
    _, first = tool_call(h)
    arrayed = {"method": "sampling/createMessage",
               "params": {"messages": [{"role": "user",
                                        "content": [{"type": "text", "text": "Hi"}]}],
                          "maxTokens": 10}}
    question = one(h.server(answer(first, input_required({"s": arrayed}))), "client")
    assert question["params"] == {"messages": [{"role": "user",
                                                "content": {"type": "text", "text": "Hi"}}],
                                  "maxTokens": 10}


def roots_round(h: Harness, id: Any) -> tuple[Message, list[Any]]:
    original, first = tool_call(h, id=id, name="scan")
    return original, h.server(answer(first, input_required({"roots": ROOTS})))


def test_roots_are_cached_until_the_client_says_they_changed() -> None:
    h, _ = mode_a(caps=ALL_CAPS)
    original, actions = roots_round(h, 1)
    question = one(actions, "client")
    assert question == {"jsonrpc": "2.0", "id": question["id"], "method": "roots/list",
                        "params": {}}
    retry = expect_round(h, h.client(answer(question, ROOTS_1)), original,
                         responses={"roots": ROOTS_1})
    done(h, retry, id=1)

    # Second call: answered from the cache, the client is not asked, the retry goes at once.
    original, actions = roots_round(h, 2)
    retry = expect_round(h, actions, original, responses={"roots": ROOTS_1})
    done(h, retry, id=2)

    # The client's roots changed: the cache is gone and the client is asked again.
    assert h.client({"jsonrpc": "2.0", "method": "notifications/roots/list_changed"}) == []
    original, actions = roots_round(h, 3)
    question = one(actions, "client")
    assert question["method"] == "roots/list"
    retry = expect_round(h, h.client(answer(question, ROOTS_2)), original,
                         responses={"roots": ROOTS_2})
    done(h, retry, id=3)
    # ... and the fresh answer is what is cached now.
    original, actions = roots_round(h, 4)
    expect_round(h, actions, original, responses={"roots": ROOTS_2})


def test_roots_are_not_cached_without_list_changed() -> None:
    # A client that cannot say its roots changed must be asked every time.
    caps = {"roots": {}}
    h, _ = mode_a(caps=caps)
    for id, roots in ((1, ROOTS_1), (2, ROOTS_2)):
        original, actions = roots_round(h, id)
        question = one(actions, "client")
        assert question["method"] == "roots/list"
        retry = expect_round(h, h.client(answer(question, roots)), original, caps={"roots": {}},
                             responses={"roots": roots})
        done(h, retry, id=id)


# Rounds -----------------------------------------------------------------------------------


def test_several_input_requests_in_one_round() -> None:
    h, _ = mode_a(caps=ALL_CAPS)
    original, first = tool_call(h)
    actions = h.server(answer(first, input_required(
        {"user": FORM, "capital": SAMPLING, "roots": ROOTS}, state="many")))
    assert sent(actions, "server") == []
    questions = {m["method"]: m for m in asked(actions)}
    # sampling and roots go at once, beside the one elicitation (TRANSLATION.md §5.7).
    assert sorted(questions) == ["elicitation/create", "roots/list", "sampling/createMessage"]
    assert len({m["id"] for m in questions.values()}) == 3
    assert questions["sampling/createMessage"]["params"] == SAMPLING["params"]
    # Answered out of order; nothing goes to the server until the last one.
    assert h.client(answer(questions["roots/list"], ROOTS_1)) == []
    assert h.client(answer(questions["elicitation/create"], ACCEPTED)) == []
    retry = expect_round(h, h.client(answer(questions["sampling/createMessage"], SAMPLED)),
                         original, state="many",
                         responses={"user": ACCEPTED, "capital": SAMPLED, "roots": ROOTS_1})
    done(h, retry)


def test_several_rounds_each_retry_carries_only_its_rounds_answers() -> None:
    h, _ = mode_a(caps=ALL_CAPS)
    original, first = tool_call(h, arguments={"repo": "rosetta"})
    question_1 = one(h.server(answer(first, input_required({"user": FORM}, "s1"))), "client")
    retry_1 = expect_round(h, h.client(answer(question_1, ACCEPTED)), original,
                           responses={"user": ACCEPTED}, state="s1")
    question_2 = one(h.server(answer(retry_1, input_required({"capital": SAMPLING}, "s2"))),
                     "client")
    assert question_2["method"] == "sampling/createMessage"
    retry_2 = expect_round(h, h.client(answer(question_2, SAMPLED)), original,
                           responses={"capital": SAMPLED}, state="s2")
    # A round without requestState: the next retry carries none (mrtr.mdx §Client Req. 2).
    question_3 = one(h.server(answer(retry_2, input_required({"ok": FORM_2}))), "client")
    retry_3 = expect_round(h, h.client(answer(question_3, {"action": "decline"})), original,
                           responses={"ok": {"action": "decline"}})
    ids = [first["id"], retry_1["id"], retry_2["id"], retry_3["id"],
           question_1["id"], question_2["id"], question_3["id"]]
    assert len(set(ids)) == len(ids)
    done(h, retry_3)
    rounds = [log.fields for log in h.logs if log.event == "mrtr.round"]
    assert [(r["client_id"], r["round"], r["keys"]) for r in rounds] == [
        (5, 1, ["user"]), (5, 2, ["capital"]), (5, 3, ["ok"])]


def test_request_state_is_echoed_byte_for_byte() -> None:
    state = 'eyJ0IjoiXHUwMGU5In0=.  "quoted" \\ \u00e9\u4e2d\U0001f600'
    h, _ = mode_a(caps=ALL_CAPS)
    original, first = tool_call(h)
    question = one(h.server(answer(first, input_required({"user": FORM}, state))), "client")
    retry = expect_round(h, h.client(answer(question, ACCEPTED)), original,
                         responses={"user": ACCEPTED}, state=state)
    assert retry["params"]["requestState"] == state


def test_request_state_absent_is_not_sent() -> None:
    h, _ = mode_a(caps=ALL_CAPS)
    original, first = tool_call(h)
    question = one(h.server(answer(first, input_required({"user": FORM}))), "client")
    retry = expect_round(h, h.client(answer(question, ACCEPTED)), original,
                         responses={"user": ACCEPTED})
    assert "requestState" not in retry["params"]


def test_request_state_alone_is_retried_with_back_off() -> None:
    # Binary fractions, so the hand-driven clock lands exactly on each deadline.
    h, _ = mode_a(caps=ALL_CAPS, config=CoreConfig(mrtr_backoff=(0.25, 1.0)))
    original, first = tool_call(h)
    # Load shedding: no inputRequests, so nothing for the client, and no hot loop.
    actions = h.server(answer(first, input_required(state="busy-1")))
    assert sent(actions, "client") == [] and sent(actions, "server") == []
    assert h.advance(0.125) == []
    retry_1 = expect_round(h, h.advance(0.125), original, state="busy-1")
    assert "inputResponses" not in retry_1["params"]

    assert sent(h.server(answer(retry_1, input_required(state="busy-2"))), "server") == []
    assert h.advance(0.375) == []  # the delay doubled
    retry_2 = expect_round(h, h.advance(0.125), original, state="busy-2")

    h.server(answer(retry_2, input_required(state="busy-3")))
    assert h.advance(0.875) == []
    retry_3 = expect_round(h, h.advance(0.125), original, state="busy-3")
    h.server(answer(retry_3, input_required(state="busy-4")))
    assert h.advance(0.875) == []  # and stops growing at the largest delay
    retry_4 = expect_round(h, h.advance(0.125), original, state="busy-4")
    done(h, retry_4)


def test_inputs_required_on_resources_read_and_prompts_get() -> None:
    h, _ = mode_a(caps=ALL_CAPS)
    read = {"uri": "file:///secret.txt"}
    first = one(h.client(request(8, "resources/read", read)), "server")
    question = one(h.server(answer(first, input_required({"ok": FORM_2}, "r"))), "client")
    yes = {"action": "accept", "content": {"ok": True}}
    retry = expect_round(h, h.client(answer(question, yes)), read, method="resources/read",
                         responses={"ok": yes}, state="r")
    contents = {"contents": [{"uri": "file:///secret.txt", "text": "s3cr3t"}]}
    actions = h.server(answer(retry, {"resultType": "complete", **contents, "ttlMs": 0}))
    assert sent(actions, "client") == [{"jsonrpc": "2.0", "id": 8, "result": contents}]

    prompt = {"name": "greet", "arguments": {"lang": "fr"}}
    first = one(h.client(request("p", "prompts/get", prompt)), "server")
    question = one(h.server(answer(first, input_required({"capital": SAMPLING}))), "client")
    retry = expect_round(h, h.client(answer(question, SAMPLED)), prompt, method="prompts/get",
                         responses={"capital": SAMPLED})
    messages = {"messages": [{"role": "user", "content": {"type": "text", "text": "Bonjour"}}]}
    actions = h.server(answer(retry, {"resultType": "complete", **messages}))
    assert sent(actions, "client") == [{"jsonrpc": "2.0", "id": "p", "result": messages}]


def test_a_server_error_on_a_retry_reaches_the_client_under_its_id() -> None:
    h, _ = mode_a(caps=ALL_CAPS)
    original, first = tool_call(h)
    question = one(h.server(answer(first, input_required({"user": FORM}, "s"))), "client")
    retry = expect_round(h, h.client(answer(question, ACCEPTED)), original,
                         responses={"user": ACCEPTED}, state="s")
    actions = h.server(fail(retry, -32602, "Invalid requestState"))
    assert sent(actions, "client") == [{"jsonrpc": "2.0", "id": 5, "error": {
        "code": -32602, "message": "Invalid requestState"}}]


def test_an_unknown_result_type_on_a_retry_fails_the_call() -> None:
    h, _ = mode_a(caps=ALL_CAPS)
    original, first = tool_call(h)
    question = one(h.server(answer(first, input_required({"user": FORM}))), "client")
    retry = expect_round(h, h.client(answer(question, ACCEPTED)), original,
                         responses={"user": ACCEPTED})
    error = one(h.server(answer(retry, {"resultType": "task", "task": {}})), "client")
    assert error["id"] == 5 and error["error"]["code"] == -32603
    assert "'task'" in error["error"]["message"]


# Failures ---------------------------------------------------------------------------------


def test_a_client_error_aborts_the_call_without_a_retry() -> None:
    h, _ = mode_a(caps=ALL_CAPS)
    _, first = tool_call(h)
    actions = h.server(answer(first, input_required({"capital": SAMPLING, "roots": ROOTS}, "s")))
    questions = {m["method"]: m for m in asked(actions)}
    sampling, roots = questions["sampling/createMessage"], questions["roots/list"]
    refusal = {"code": -1, "message": "User rejected sampling request"}
    actions = h.client(fail(sampling, -1, "User rejected sampling request"))
    # §11.3: no error channel in inputResponses; the call fails with the client's reason.
    assert sent(actions, "server") == []
    assert sent(actions, "client") == [
        {"jsonrpc": "2.0", "method": "notifications/cancelled",
         "params": {"requestId": roots["id"], "reason": "the call was cancelled"}},
        {"jsonrpc": "2.0", "id": 5, "error": {
            "code": -32603,
            "message": "mcp-rosetta: input request 'capital' (sampling/createMessage) failed: "
                       "User rejected sampling request",
            "data": {"key": "capital", "method": "sampling/createMessage", "error": refusal}}}]
    # The withdrawn question's late answer changes nothing.
    actions = h.client(answer(roots, ROOTS_1))
    assert sent(actions, "client") == [] and sent(actions, "server") == []
    assert any(log.event == "mrtr.failed" for log in h.logs)


@pytest.mark.parametrize(("caps", "request_", "needed"), [
    ({"elicitation": {}}, SAMPLING, "sampling"),
    ({"sampling": {}}, FORM, "elicitation.form"),
    ({"sampling": {}}, ROOTS, "roots"),
    ({"elicitation": {"form": {}}}, url_elicitation(LOGIN_URL), "elicitation.url"),
    ({"sampling": {}}, {"method": "sampling/createMessage",
                        "params": {**SAMPLING["params"], "tools": [{"name": "t",
                                                                    "inputSchema": {}}]}},
     "sampling.tools"),
])
def test_an_input_request_for_an_undeclared_capability_fails_the_call(
        caps: Message, request_: Message, needed: str) -> None:
    h, _ = mode_a(caps=caps)
    _, first = tool_call(h)
    actions = h.server(answer(first, input_required({"q": request_}, "s")))
    assert sent(actions, "server") == []
    error = one(actions, "client")
    assert error["id"] == 5 and error["error"]["code"] == -32603
    text = error["error"]["message"]
    assert f"capability {needed}" in text and "did not declare" in text and "'q'" in text
    warnings = [log for log in h.logs if log.event == "mrtr.failed"]
    assert len(warnings) == 1 and warnings[0].level == "warning"
    assert warnings[0].fields["client_id"] == 5


def test_an_undeclared_request_fails_the_whole_round_before_anything_is_asked() -> None:
    h, _ = mode_a(caps={"elicitation": {}})
    _, first = tool_call(h)
    actions = h.server(answer(first, input_required({"user": FORM, "capital": SAMPLING})))
    assert [m.get("method") for m in sent(actions, "client")] == [None]  # only the error


def test_the_round_limit_ends_the_loop_with_an_error() -> None:
    h, _ = mode_a(caps=ALL_CAPS, config=CoreConfig(mrtr_max_rounds=3))
    original, current = tool_call(h)
    for n in range(1, 4):
        question = one(h.server(answer(current, input_required({"user": FORM}, f"s{n}"))),
                       "client")
        current = expect_round(h, h.client(answer(question, ACCEPTED)), original,
                               responses={"user": ACCEPTED}, state=f"s{n}")
    actions = h.server(answer(current, input_required({"user": FORM}, "s4")))
    assert sent(actions, "server") == []
    assert sent(actions, "client") == [{"jsonrpc": "2.0", "id": 5, "error": {
        "code": -32603, "message": "mcp-rosetta: the server asked for input more than 3 times",
        "data": {"source": "mcp-rosetta"}}}]


def test_the_requests_per_round_limit() -> None:
    h, _ = mode_a(caps=ALL_CAPS, config=CoreConfig(mrtr_max_requests=2))
    _, first = tool_call(h)
    actions = h.server(answer(first, input_required({"a": FORM, "b": SAMPLING, "c": ROOTS})))
    error = one(actions, "client")
    assert error["id"] == 5 and error["error"]["code"] == -32603
    assert "3 inputs in one round (limit 2)" in error["error"]["message"]


def test_the_loop_time_limit_withdraws_questions_and_fails_the_call() -> None:
    h, _ = mode_a(caps=ALL_CAPS, config=CoreConfig(mrtr_timeout=30.0))
    _, first = tool_call(h)
    question = one(h.server(answer(first, input_required({"capital": SAMPLING}))), "client")
    assert h.advance(29.9) == []
    actions = h.advance(0.1)
    assert sent(actions, "server") == []
    assert sent(actions, "client") == [
        {"jsonrpc": "2.0", "method": "notifications/cancelled",
         "params": {"requestId": question["id"], "reason": "the call was cancelled"}},
        {"jsonrpc": "2.0", "id": 5, "error": {
            "code": -32603, "message": "mcp-rosetta: the input loop took longer than 30 s",
            "data": {"source": "mcp-rosetta"}}}]


def test_the_loop_time_limit_cancels_the_servers_round() -> None:
    h, _ = mode_a(caps=ALL_CAPS, config=CoreConfig(mrtr_timeout=30.0))
    original, first = tool_call(h)
    question = one(h.server(answer(first, input_required({"user": FORM}))), "client")
    h.advance(10)
    retry = expect_round(h, h.client(answer(question, ACCEPTED)), original,
                         responses={"user": ACCEPTED})
    actions = h.advance(20)  # counted from the start of the loop, not of the round
    assert sent(actions, "server") == [{"jsonrpc": "2.0", "method": "notifications/cancelled",
                                        "params": {"requestId": retry["id"],
                                                   "reason": "input loop timed out"}}]
    assert [m["id"] for m in sent(actions, "client")] == [5]
    assert sent(h.server(answer(retry, DONE)), "client") == []


def test_request_timeout_ends_a_round_the_server_does_not_answer() -> None:
    h, _ = mode_a(caps=ALL_CAPS, config=CoreConfig(request_timeout=5.0, mrtr_timeout=30.0))
    original, first = tool_call(h)
    question = one(h.server(answer(first, input_required({"user": FORM}))), "client")
    assert h.advance(20.0) == []  # the user takes their time: no round is at the server
    retry = expect_round(h, h.client(answer(question, ACCEPTED)), original,
                         responses={"user": ACCEPTED})
    assert h.advance(4.9) == []
    actions = h.advance(0.1)
    assert sent(actions, "server") == [{"jsonrpc": "2.0", "method": "notifications/cancelled",
                                        "params": {"requestId": retry["id"],
                                                   "reason": "mcp-rosetta request timeout"}}]
    assert sent(actions, "client") == [{"jsonrpc": "2.0", "id": 5, "error": {
        "code": -32603, "message": "mcp-rosetta: no answer from the server within 5 s",
        "data": {"source": "mcp-rosetta", "method": "tools/call"}}}]
    assert sent(h.server(answer(retry, DONE)), "client") == []  # the late answer is absorbed
    assert h.advance(30.0) == []  # the loop's own deadline went with the call


# Cancellation -----------------------------------------------------------------------------


def cancelled(id: Any, reason: str = "User requested cancellation") -> Message:
    return {"jsonrpc": "2.0", "method": "notifications/cancelled",
            "params": {"requestId": id, "reason": reason}}


def test_cancellation_while_waiting_on_the_server() -> None:
    h, _ = mode_a(caps=ALL_CAPS)
    original, first = tool_call(h)
    question = one(h.server(answer(first, input_required({"user": FORM}, "s"))), "client")
    retry = expect_round(h, h.client(answer(question, ACCEPTED)), original,
                         responses={"user": ACCEPTED}, state="s")
    actions = h.client(cancelled(5))
    # §9.2: the cancellation targets the current round's id, not the first one.
    assert sent(actions, "server") == [{"jsonrpc": "2.0", "method": "notifications/cancelled",
                                        "params": {"requestId": retry["id"],
                                                   "reason": "cancelled by the client"}}]
    assert sent(actions, "client") == []
    # Whatever the server still says about it, the client hears nothing more.
    assert sent(h.server(answer(retry, input_required({"user": FORM}))), "client") == []
    assert sent(h.server(answer(retry, DONE)), "client") == []
    assert h.advance(1000) == []


def test_cancellation_while_waiting_on_the_client() -> None:
    h, _ = mode_a(caps=ALL_CAPS)
    _, first = tool_call(h)
    actions = h.server(answer(first, input_required(
        {"a": FORM, "b": FORM_2, "capital": SAMPLING}, "s")))
    questions = {m["params"].get("message", m["method"]): m for m in asked(actions)}
    open_form, sampling = questions["Username?"], questions["sampling/createMessage"]
    assert "Proceed?" not in questions  # queued behind the first elicitation

    actions = h.client(cancelled(5))
    assert sent(actions, "server") == []  # no round is in flight on the server
    # The bridge, as legacy server, withdraws its own open requests; the queued elicitation
    # is never shown, and the call gets no answer (cancellation.mdx).
    notes = sent(actions, "client")
    assert sorted(notes, key=lambda m: m["params"]["requestId"]) == sorted([
        {"jsonrpc": "2.0", "method": "notifications/cancelled",
         "params": {"requestId": open_form["id"], "reason": "the call was cancelled"}},
        {"jsonrpc": "2.0", "method": "notifications/cancelled",
         "params": {"requestId": sampling["id"], "reason": "the call was cancelled"}},
    ], key=lambda m: m["params"]["requestId"])
    # Late answers to the withdrawn questions lead nowhere.
    for question, result in ((open_form, ACCEPTED), (sampling, SAMPLED)):
        late = h.client(answer(question, result))
        assert sent(late, "client") == [] and sent(late, "server") == []
    assert h.advance(1000) == []


def test_cancellation_frees_the_elicitation_slot_for_another_call() -> None:
    h, _ = mode_a(caps=ALL_CAPS)
    _, first_a = tool_call(h, id=1)
    _, first_b = tool_call(h, id=2)
    question_a = one(h.server(answer(first_a, input_required({"user": FORM}))), "client")
    assert sent(h.server(answer(first_b, input_required({"ok": FORM_2}))), "client") == []
    actions = h.client(cancelled(1))
    withdrawn, question_b = sent(actions, "client")
    assert withdrawn["params"]["requestId"] == question_a["id"]
    assert question_b["method"] == "elicitation/create"
    assert question_b["params"] == FORM_2["params"]


def test_cancellation_during_the_back_off() -> None:
    h, _ = mode_a(caps=ALL_CAPS)
    _, first = tool_call(h)
    h.server(answer(first, input_required(state="busy")))
    actions = h.client(cancelled(5))
    assert sent(actions, "server") == [] and sent(actions, "client") == []
    assert h.advance(60) == []


def test_cancelling_an_unknown_id_touches_no_loop() -> None:
    h, _ = mode_a(caps=ALL_CAPS)
    original, first = tool_call(h)
    question = one(h.server(answer(first, input_required({"user": FORM}))), "client")
    assert sent(h.client(cancelled(6)), "server") == []
    assert sent(h.client(cancelled("5")), "server") == []  # "5" is not 5
    expect_round(h, h.client(answer(question, ACCEPTED)), original, responses={"user": ACCEPTED})


# Progress ---------------------------------------------------------------------------------


def progress(token: Any, value: float, total: float | None = None) -> Message:
    params: Message = {"progressToken": token, "progress": value}
    if total is not None:
        params["total"] = total
    return {"jsonrpc": "2.0", "method": "notifications/progress", "params": params}


def test_progress_across_rounds_never_goes_backwards() -> None:
    h, _ = mode_a(caps=ALL_CAPS)
    original, first = tool_call(h, meta={"progressToken": "tok"})
    assert sent(h.server(progress("tok", 0.2, 1)), "client") == [progress("tok", 0.2, 1)]
    assert sent(h.server(progress("tok", 0.4, 1)), "client") == [progress("tok", 0.4, 1)]
    question = one(h.server(answer(first, input_required({"user": FORM}, "s"))), "client")
    retry = expect_round(h, h.client(answer(question, ACCEPTED)), original,
                         responses={"user": ACCEPTED}, state="s")
    # The same token is valid on every round (§9.3) ...
    assert retry["params"]["_meta"]["progressToken"] == "tok"
    # ... and a round that starts over does not make the client's bar go back.
    assert sent(h.server(progress("tok", 0.1, 1)), "client") == []
    assert sent(h.server(progress("tok", 0.4, 1)), "client") == []
    assert sent(h.server(progress("tok", 0.7, 1)), "client") == [progress("tok", 0.7, 1)]
    question = one(h.server(answer(retry, input_required({"capital": SAMPLING}))), "client")
    retry_2 = expect_round(h, h.client(answer(question, SAMPLED)), original,
                           responses={"capital": SAMPLED})
    assert retry_2["params"]["_meta"]["progressToken"] == "tok"
    assert sent(h.server(progress("tok", 0.5, 1)), "client") == []
    assert sent(h.server(progress("tok", 1.0, 1)), "client") == [progress("tok", 1.0, 1)]
    done(h, retry_2)


def test_progress_of_two_calls_is_tracked_apart() -> None:
    h, _ = mode_a(caps=ALL_CAPS)
    tool_call(h, id=1, meta={"progressToken": 1})
    tool_call(h, id=2, meta={"progressToken": "1"})
    assert sent(h.server(progress(1, 5)), "client") == [progress(1, 5)]
    assert sent(h.server(progress("1", 2)), "client") == [progress("1", 2)]


# Concurrency ------------------------------------------------------------------------------


def test_two_concurrent_calls_each_in_its_own_loop() -> None:
    h, _ = mode_a(caps=ALL_CAPS)
    original_1, first_1 = tool_call(h, id=1, name="one", meta={"progressToken": "p1"})
    original_a, first_a = tool_call(h, id="1", name="two")
    question_1 = one(h.server(answer(first_1, input_required({"user": FORM}, "one-1"))), "client")
    actions = h.server(answer(first_a, input_required({"user": FORM_2, "capital": SAMPLING},
                                                       "two-1")))
    # Call "1"'s elicitation waits for call 1's: one dialog at a time, whoever asks.
    sampling_a = one(actions, "client")
    assert sampling_a["method"] == "sampling/createMessage"

    assert sent(h.client(answer(sampling_a, SAMPLED)), "server") == []
    actions = h.client(answer(question_1, ACCEPTED))
    retry_1 = one(actions, "server")
    question_a = one(actions, "client")
    assert question_a["params"] == FORM_2["params"]
    assert retry_1 == {"jsonrpc": "2.0", "id": retry_1["id"], "method": "tools/call",
                       "params": stamped({**original_1, "inputResponses": {"user": ACCEPTED},
                                          "requestState": "one-1"})}
    no = {"action": "decline"}
    retry_a = expect_round(h, h.client(answer(question_a, no)), original_a, state="two-1",
                           responses={"user": no, "capital": SAMPLED})
    # Second round of call 1 while call "1" is with the server.
    question_1b = one(h.server(answer(retry_1, input_required({"again": FORM}, "one-2"))),
                      "client")
    retry_1b = expect_round(h, h.client(answer(question_1b, {"action": "cancel"})), original_1,
                            responses={"again": {"action": "cancel"}}, state="one-2")
    # Results go to their own ids, with their JSON types.
    assert sent(h.server(answer(retry_a, DONE)), "client") == [
        {"jsonrpc": "2.0", "id": "1", "result": DONE_LEGACY}]
    assert sent(h.server(answer(retry_1b, DONE)), "client") == [
        {"jsonrpc": "2.0", "id": 1, "result": DONE_LEGACY}]


# Logging ----------------------------------------------------------------------------------


def test_the_log_level_is_stamped_on_every_round() -> None:
    h, _ = mode_a(caps=ALL_CAPS)
    assert sent(h.client(request(1, "logging/setLevel", {"level": "warning"})), "client") == [
        {"jsonrpc": "2.0", "id": 1, "result": {}}]
    original, first = tool_call(h)
    assert first["params"] == stamped(original, level="warning")
    question = one(h.server(answer(first, input_required({"user": FORM}, "s"))), "client")
    retry = expect_round(h, h.client(answer(question, ACCEPTED)), original, level="warning",
                         responses={"user": ACCEPTED}, state="s")
    # The client changes its level mid-loop: the next round carries the new one.
    h.client(request(2, "logging/setLevel", {"level": "debug"}))
    question = one(h.server(answer(retry, input_required({"user": FORM}, "s2"))), "client")
    retry = expect_round(h, h.client(answer(question, ACCEPTED)), original, level="debug",
                         responses={"user": ACCEPTED}, state="s2")
    h.server(answer(retry, input_required(state="s3")))
    expect_round(h, h.advance(1), original, level="debug", state="s3")


def test_the_configured_log_level_is_stamped_on_rounds_before_any_set_level() -> None:
    h, _ = mode_a(caps=ALL_CAPS, config=CoreConfig(default_log_level="notice"))
    original, first = tool_call(h)
    assert first["params"] == stamped(original, level="notice")
    question = one(h.server(answer(first, input_required({"user": FORM}))), "client")
    expect_round(h, h.client(answer(question, ACCEPTED)), original, level="notice",
                 responses={"user": ACCEPTED})


def test_roots_answered_across_a_change_notice_are_not_cached() -> None:
    # The client said its roots changed while the question was out: the answer may predate
    # the change, so it serves this call but is not kept.
    h, _ = mode_a(caps=ALL_CAPS)
    original, actions = roots_round(h, 1)
    question = one(actions, "client")
    h.client({"jsonrpc": "2.0", "method": "notifications/roots/list_changed"})
    retry = expect_round(h, h.client(answer(question, ROOTS_1)), original,
                         responses={"roots": ROOTS_1})
    done(h, retry, id=1)
    _, actions = roots_round(h, 2)
    assert one(actions, "client")["method"] == "roots/list"


def test_each_round_is_logged() -> None:
    h, _ = mode_a(caps=ALL_CAPS)
    original, first = tool_call(h)
    h.advance(1)  # before the first input_required: not part of the loop
    actions = h.server(answer(first, input_required({"user": FORM, "capital": SAMPLING})))
    questions = {m["method"]: m for m in asked(actions)}
    h.advance(2.5)
    h.client(answer(questions["sampling/createMessage"], SAMPLED))
    retry = expect_round(h, h.client(answer(questions["elicitation/create"], ACCEPTED)),
                         original, responses={"user": ACCEPTED, "capital": SAMPLED})
    h.server(answer(retry, input_required(state="s")))
    rounds = [(log.level, log.fields) for log in h.logs if log.event == "mrtr.round"]
    assert rounds == [
        ("info", {"client_id": 5, "round": 1, "keys": ["capital", "user"],
                  "method": "tools/call", "elapsed_ms": 0}),
        ("info", {"client_id": 5, "round": 2, "keys": [], "method": "tools/call",
                  "elapsed_ms": 2500})]


def test_shutdown_answers_every_call_in_its_loop() -> None:
    h, _ = mode_a(caps=ALL_CAPS)
    _, first_1 = tool_call(h, id=1)
    _, first_2 = tool_call(h, id=2)
    h.server(answer(first_1, input_required({"user": FORM})))
    h.server(answer(first_2, input_required(state="busy")))
    replies = sent(h.shutdown(), "client")
    assert sorted((r["id"], r["error"]["code"]) for r in replies if "id" in r) == [
        (1, -32603), (2, -32603)]


def test_nothing_more_reaches_the_client_for_a_cancelled_call() -> None:
    """After the client cancels, the bridge sends nothing more for that call.

    Needs the mode module (not this one): `_relay_progress` forwards progress for any token,
    and `forget_progress_token` (called when a loop ends) makes a finished token look new.
    """
    h, _ = mode_a(caps=ALL_CAPS)
    original, first = tool_call(h, meta={"progressToken": "tok"})
    assert sent(h.server(progress("tok", 0.5)), "client") == [progress("tok", 0.5)]
    question = one(h.server(answer(first, input_required({"user": FORM}))), "client")
    retry = expect_round(h, h.client(answer(question, ACCEPTED)), original,
                         responses={"user": ACCEPTED})
    h.client(cancelled(5))
    # The server had not yet seen the cancellation when it reported this.
    assert sent(h.server(progress("tok", 0.1)), "client") == []
    assert sent(h.server(answer(retry, DONE)), "client") == []
