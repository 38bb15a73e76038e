"""Transcripts of mode A asking a legacy client for input its revision must be able to hold:
titled and multi-select elicitation enums, defaults, and sampling content arrays.

What the client receives is validated against its revision's schema (tests/fixtures/spec/);
what no older form can hold fails the call with a reason the client can read.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.core.harness import Harness, answer, mode_a, one, request, sent
from tests.core.test_golden import _schema

Message = dict[str, Any]

COLOR_TITLED = {"type": "string", "title": "Color", "description": "Pick one",
                "oneOf": [{"const": "#FF0000", "title": "Red"},
                          {"const": "#00FF00", "title": "Green"}],
                "default": "#FF0000"}
COLOR_LEGACY = {"type": "string", "title": "Color", "description": "Pick one",
                "enum": ["#FF0000", "#00FF00"], "enumNames": ["Red", "Green"]}
MULTI = {"type": "array", "title": "Colors", "minItems": 1,
         "items": {"type": "string", "enum": ["Red", "Green", "Blue"]}, "default": ["Red"]}
MULTI_TITLED = {"type": "array",
                "items": {"anyOf": [{"const": "r", "title": "Red"}, {"const": "g", "title": "G"}]}}


def elicitation(properties: Message) -> Message:
    return {"method": "elicitation/create",
            "params": {"mode": "form", "message": "Your preferences?",
                       "requestedSchema": {"type": "object", "properties": properties}}}


def sampling(*messages: Message, **extra: Any) -> Message:
    return {"method": "sampling/createMessage",
            "params": {"messages": list(messages), "maxTokens": 50, **extra}}


def ask(version: str, input_request: Message, caps: Message) -> tuple[Harness, list[Any]]:
    """A legacy client of `version` calls a tool; the server answers with one input request.
    Returns the bridge and its actions."""
    h, _ = mode_a(version, caps=caps)
    forwarded = one(h.client(request(5, "tools/call", {"name": "t", "arguments": {}})), "server")
    return h, h.server(answer(forwarded, {"resultType": "input_required",
                                          "inputRequests": {"k": input_request}}))


def asked(actions: list[Any], version: str, definition: str) -> Message:
    """The one request the client was sent, valid for its revision's schema."""
    message = one(actions, "client")
    _schema(version, definition).validate(message)
    return message


def call_failed(actions: list[Any], reason: str) -> None:
    assert sent(actions, "server") == []
    assert sent(actions, "client") == [{"jsonrpc": "2.0", "id": 5, "error": {
        "code": -32603, "message": f"mcp-rosetta: input request 'k': {reason}",
        "data": {"source": "mcp-rosetta"}}}]


# Elicitation -----------------------------------------------------------------------------


def test_a_titled_single_select_becomes_enum_and_enum_names_for_2025_06_18() -> None:
    _, actions = ask("2025-06-18", elicitation({"color": COLOR_TITLED}), {"elicitation": {}})
    message = asked(actions, "2025-06-18", "ElicitRequest")
    assert message["params"] == {"message": "Your preferences?", "requestedSchema": {
        "type": "object", "properties": {"color": COLOR_LEGACY}}}


def test_defaults_go_but_a_booleans_stays_for_2025_06_18() -> None:
    fields = {"name": {"type": "string", "default": "octocat", "maxLength": 9},
              "age": {"type": "integer", "minimum": 0, "default": 30},
              "ok": {"type": "boolean", "default": True},
              "size": {"type": "string", "enum": ["S", "M"], "default": "M"},
              "old": {"type": "string", "enum": ["a", "b"], "enumNames": ["A", "B"],
                      "default": "a"}}
    _, actions = ask("2025-06-18", elicitation(fields), {"elicitation": {}})
    properties = asked(actions, "2025-06-18", "ElicitRequest")["params"]["requestedSchema"][
        "properties"]
    assert properties == {"name": {"type": "string", "maxLength": 9},
                          "age": {"type": "integer", "minimum": 0},
                          "ok": {"type": "boolean", "default": True},
                          "size": {"type": "string", "enum": ["S", "M"]},
                          "old": {"type": "string", "enum": ["a", "b"], "enumNames": ["A", "B"]}}


def test_the_same_elicitation_reaches_a_2025_11_25_client_as_it_came() -> None:
    fields = {"color": COLOR_TITLED, "colors": MULTI, "tags": MULTI_TITLED}
    _, actions = ask("2025-11-25", elicitation(fields), {"elicitation": {}})
    message = asked(actions, "2025-11-25", "ElicitRequest")
    assert message["params"] == elicitation(fields)["params"]


@pytest.mark.parametrize("field", [MULTI, MULTI_TITLED])
def test_a_multi_select_fails_the_call_for_2025_06_18(field: Message) -> None:
    h, actions = ask("2025-06-18", elicitation({"color": COLOR_TITLED, "colors": field}),
                     {"elicitation": {}})
    call_failed(actions, "elicitation field 'colors' is a multi-select list, which revision "
                         "2025-06-18 cannot ask for (its EnumSchema holds one choice)")
    assert [log.fields["problem"] for log in h.logs if log.event == "mrtr.failed"] != []


def test_the_answer_to_a_translated_enum_goes_back_as_it_came() -> None:
    h, actions = ask("2025-06-18", elicitation({"color": COLOR_TITLED}), {"elicitation": {}})
    question = one(actions, "client")
    retry = one(h.client(answer(question, {"action": "accept",
                                           "content": {"color": "#00FF00"}})), "server")
    assert retry["params"]["inputResponses"] == {
        "k": {"action": "accept", "content": {"color": "#00FF00"}}}


# Sampling --------------------------------------------------------------------------------

TEXT_1 = {"type": "text", "text": "Look at this:"}
IMAGE = {"type": "image", "data": "aGk=", "mimeType": "image/png"}
TEXT_2 = {"type": "text", "text": "What is it?"}
AUDIO = {"type": "audio", "data": "aGk=", "mimeType": "audio/wav"}
TOOL_USE = {"type": "tool_use", "id": "c1", "name": "weather", "input": {"city": "Paris"}}
TOOL_RESULT = {"type": "tool_result", "toolUseId": "c1",
               "content": [{"type": "text", "text": "18°C"}]}


@pytest.mark.parametrize("version", ["2024-11-05", "2025-03-26", "2025-06-18"])
def test_a_content_array_becomes_one_message_per_block_with_the_same_role(version: str) -> None:
    _, actions = ask(version, sampling(
        {"role": "user", "content": [TEXT_1, IMAGE, TEXT_2], "_meta": {"k": 1}},
        {"role": "assistant", "content": [{"type": "text", "text": "A cat."}]},
        {"role": "user", "content": TEXT_2}), {"sampling": {}})
    message = asked(actions, version, "CreateMessageRequest")
    assert message["params"]["messages"] == [
        {"role": "user", "content": TEXT_1}, {"role": "user", "content": IMAGE},
        {"role": "user", "content": TEXT_2}, {"role": "assistant", "content":
                                              {"type": "text", "text": "A cat."}},
        {"role": "user", "content": TEXT_2}]
    assert message["params"]["maxTokens"] == 50


def test_content_arrays_reach_a_2025_11_25_client_as_they_came() -> None:
    messages = [{"role": "user", "content": [TEXT_1, IMAGE]},
                {"role": "assistant", "content": [TOOL_USE]},
                {"role": "user", "content": [TOOL_RESULT]}]
    _, actions = ask("2025-11-25", sampling(*messages), {"sampling": {}})
    assert asked(actions, "2025-11-25", "CreateMessageRequest")["params"]["messages"] == messages


@pytest.mark.parametrize(("block", "kind"), [(TOOL_USE, "tool_use"),
                                             (TOOL_RESULT, "tool_result")])
@pytest.mark.parametrize("as_array", [True, False])
def test_tool_use_content_fails_the_call_before_2025_11_25(
        block: Message, kind: str, as_array: bool) -> None:
    _, actions = ask("2025-06-18", sampling({"role": "user", "content": TEXT_1},
                                            {"role": "assistant",
                                             "content": [block] if as_array else block}),
                     {"sampling": {}})
    call_failed(actions, f"sampling message 1 holds {kind} content, which revision "
                         "2025-06-18 has no form for (it arrived in 2025-11-25)")


def test_audio_fails_the_call_for_2024_11_05_only() -> None:
    _, actions = ask("2024-11-05", sampling({"role": "user", "content": [TEXT_1, AUDIO]}),
                     {"sampling": {}})
    call_failed(actions, "sampling message 0 holds audio content, which revision "
                         "2024-11-05 has no form for (it arrived in 2025-03-26)")
    _, actions = ask("2025-03-26", sampling({"role": "user", "content": [AUDIO]}),
                     {"sampling": {}})
    assert asked(actions, "2025-03-26", "CreateMessageRequest")["params"]["messages"] == [
        {"role": "user", "content": AUDIO}]


def test_an_empty_content_array_fails_the_call_before_2025_11_25() -> None:
    _, actions = ask("2025-06-18", sampling({"role": "user", "content": []}), {"sampling": {}})
    call_failed(actions, "sampling message 0 has no content")


def test_sampling_with_tools_fails_the_call_before_2025_11_25() -> None:
    # A 2025-06-18 client has no sampling.tools to declare; one that declares it anyway still
    # cannot be sent a request its schema has no tools for.
    tools = [{"name": "weather", "inputSchema": {"type": "object"}}]
    _, actions = ask("2025-06-18", sampling({"role": "user", "content": TEXT_1}, tools=tools),
                     {"sampling": {"tools": {}}})
    call_failed(actions, "sampling with tools needs revision 2025-11-25; the client speaks "
                         "2025-06-18")
