"""The HTTP upstream's decisions, without sockets: a line the core sends → its POST's headers,
an HTTP answer → the one line the core gets for the request."""

from __future__ import annotations

import base64
import json
from typing import Any

from bridge.core.codec import encode
from bridge.core.config import CoreConfig
from bridge.core.eras import META_PROTOCOL_VERSION, METHOD_NOT_FOUND
from bridge.core.errors import SERVER_ERROR
from bridge.core.probe import discover_request
from bridge.streamable.headers import ParamHeaders, encoded
from bridge.streamable.media import media_type
from bridge.streamable.outbound import (
    Handling,
    Kind,
    ServerSession,
    handling,
    json_answer,
    logs_refusal,
    opens_session,
    post_headers,
    read_outgoing,
    status_answer,
)

URL = "http://127.0.0.1:9/mcp"
META = {META_PROTOCOL_VERSION: "2026-07-28"}


def line(message: dict[str, Any]) -> bytes:
    return encode(message).rstrip(b"\n")


def answer(data: bytes) -> dict[str, Any]:
    assert data.endswith(b"\n") and data.count(b"\n") == 1  # one line
    value: dict[str, Any] = json.loads(data)
    return value


def test_a_modern_tools_call_carries_its_version_method_and_name() -> None:
    out = read_outgoing(line({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                              "params": {"name": "get_weather", "_meta": META}}))
    assert out is not None and out.kind is Kind.REQUEST and out.id == 7
    assert post_headers(out, None) == {
        "Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2026-07-28",
        "Mcp-Method": "tools/call", "Mcp-Name": "get_weather"}


def test_resources_read_names_its_uri_and_a_list_names_nothing() -> None:
    read = read_outgoing(line({"jsonrpc": "2.0", "id": 1, "method": "resources/read",
                               "params": {"uri": "file:///a b", "_meta": META}}))
    listing = read_outgoing(line({"jsonrpc": "2.0", "id": 2, "method": "tools/list",
                                  "params": {"_meta": META}}))
    assert read is not None and post_headers(read, None)["Mcp-Name"] == "file:///a b"
    assert listing is not None and "Mcp-Name" not in post_headers(listing, None)


def test_a_name_that_is_no_plain_header_value_is_sent_in_base64() -> None:
    for value in ("Hello, 世界", " padded ", "line1\nline2", "=?base64?literal?="):
        sent = encoded(value)
        assert sent.startswith("=?base64?") and sent.endswith("?=")
        assert base64.b64decode(sent[9:-2]).decode() == value
    assert encoded("us-west1") == "us-west1"


def test_a_listed_tools_annotated_arguments_become_param_headers() -> None:
    known = ParamHeaders()
    known.learn({"tools": [{"name": "weather", "inputSchema": {"type": "object", "properties": {
        "region": {"type": "string", "x-mcp-header": "Region"},
        "limit": {"type": "integer", "x-mcp-header": "Limit"},
        "opts": {"type": "object", "properties": {"dry": {"type": "boolean",
                                                          "x-mcp-header": "Dry"}}}}}}]})
    params = {"name": "weather", "arguments": {"region": "Zürich", "limit": 3,
                                               "opts": {"dry": True}}}
    assert known.headers_for(params) == {
        "Mcp-Param-Region": encoded("Zürich"), "Mcp-Param-Limit": "3", "Mcp-Param-Dry": "true"}
    assert known.headers_for({"name": "weather", "arguments": {}}) == {}  # absent: none
    assert known.headers_for({"name": "unlisted", "arguments": {"region": "x"}}) == {}
    assert known.problem({k.lower(): v for k, v in known.headers_for(params).items()},
                         params) == ""  # what the front checks, the upstream sends


def test_a_legacy_request_carries_the_session_and_its_version() -> None:
    out = read_outgoing(line({"jsonrpc": "2.0", "id": 3, "method": "tools/list"}))
    assert out is not None and out.version is None
    assert post_headers(out, ServerSession("abc", "2025-11-25")) == {
        "Accept": "application/json, text/event-stream", "Mcp-Session-Id": "abc",
        "MCP-Protocol-Version": "2025-11-25"}
    assert post_headers(out, ServerSession()) == {
        "Accept": "application/json, text/event-stream"}  # initialize: neither yet


def test_notifications_and_responses_are_told_apart() -> None:
    cancel = read_outgoing(line({"jsonrpc": "2.0", "method": "notifications/cancelled",
                                 "params": {"requestId": "rosetta-4"}}))
    response = read_outgoing(line({"jsonrpc": "2.0", "id": 0, "result": {}}))
    assert cancel is not None and cancel.kind is Kind.NOTIFICATION
    assert cancel.cancels == "rosetta-4"
    assert response is not None and response.kind is Kind.RESPONSE
    assert read_outgoing(b"[1, 2]") is None


def request(method: str = "tools/list", request_id: str = "rosetta-3") -> Any:
    out = read_outgoing(line({"jsonrpc": "2.0", "id": request_id, "method": method,
                              "params": {"_meta": META}}))
    assert out is not None
    return out


def test_a_json_answer_is_passed_on_as_it_is() -> None:
    body = b'{"jsonrpc":"2.0","id":"rosetta-3","result":{"tools":[]}}'
    assert json_answer(request(), body, URL) == body + b"\n"


def test_json_that_is_no_answer_becomes_an_error_for_the_request() -> None:
    got = answer(json_answer(request(), b'{"hello": "world"}', URL))
    assert got["id"] == "rosetta-3" and got["error"]["code"] == SERVER_ERROR
    assert URL in got["error"]["message"] and "MCP endpoint" in got["error"]["message"]


def test_an_error_without_an_id_is_given_the_requests_id() -> None:
    body = b'{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Bad Request"}}'
    got = answer(status_answer(request(), 400, "application/json", body, URL))
    assert got == {"jsonrpc": "2.0", "id": "rosetta-3",
                   "error": {"code": -32600, "message": "Bad Request"}}


def test_a_modern_error_on_a_status_is_the_servers_answer() -> None:
    error = {"code": -32022, "message": "unsupported", "data": {"supported": ["2026-07-28"]}}
    body = encode({"jsonrpc": "2.0", "id": "rosetta-1", "error": error})
    got = answer(status_answer(request("server/discover", "rosetta-1"), 400,
                               "application/json", body, URL))
    assert got["error"] == error  # the probe sees a modern error: no fallback


def test_a_legacy_endpoints_status_to_the_probe_is_method_not_found() -> None:
    probe = read_outgoing(line(discover_request("rosetta-1", CoreConfig())))
    assert probe is not None and probe.method == "server/discover"
    for status in (400, 404, 405):
        got = answer(status_answer(probe, status, "text/plain", b"Not Found", URL))
        assert got["id"] == "rosetta-1" and got["error"]["code"] == METHOD_NOT_FOUND


def test_an_auth_refusal_names_the_url_the_challenge_and_the_fix() -> None:
    got = answer(status_answer(request(), 401, "", b"", URL, 'Bearer realm="mcp"'))
    message = got["error"]["message"]
    assert URL in message and 'Bearer realm="mcp"' in message and "--header" in message
    assert got["error"]["data"] == {"httpStatus": 401}


def test_html_a_5xx_and_a_redirect_each_say_what_happened() -> None:
    html = answer(status_answer(request(), 200, "text/html", b"<html>login</html>", URL))
    failed = answer(status_answer(request(), 503, "text/plain", b"busy", URL))
    moved = answer(status_answer(request(), 307, "", b"", URL))
    assert "text/html" in html["error"]["message"] and "<html>" in html["error"]["message"]
    assert "HTTP 503" in failed["error"]["message"]
    assert "redirect" in moved["error"]["message"]
    assert {html["id"], failed["id"], moved["id"]} == {"rosetta-3"}


def test_media_type_drops_parameters() -> None:
    assert media_type("Application/JSON; charset=utf-8") == "application/json"
    assert media_type(None) == ""



# What the upstream does with each line: the lines a session sends, in order, each with how
# it is carried to a legacy server and to a modern one.
SESSION = [
    ({"id": "rosetta-1", "method": "initialize", "params": {}},
     Handling.OPEN_SESSION, Handling.OPEN_SESSION),
    ({"method": "notifications/initialized"}, Handling.OPEN_LISTENING, Handling.POST),
    ({"id": "rosetta-2", "method": "tools/call", "params": {"name": "a"}},
     Handling.TAKE_TURN, Handling.TAKE_TURN),
    ({"id": "rosetta-3", "method": "subscriptions/listen", "params": {"_meta": META}},
     Handling.LISTEN, Handling.LISTEN),
    ({"method": "notifications/cancelled", "params": {"requestId": "rosetta-2"}},
     Handling.POST_THEN_CLOSE, Handling.CLOSE_STREAM),
    ({"method": "notifications/roots/list_changed"}, Handling.POST, Handling.POST),
    ({"id": 0, "result": {}}, Handling.POST, Handling.DROP),
    ({"id": 1, "error": {"code": -32601, "message": "no"}}, Handling.POST, Handling.DROP),
]


def test_each_line_of_a_session_is_handled_as_its_kind_method_and_era_say() -> None:
    legacy, modern = [], []
    for message, _, _ in SESSION:
        out = read_outgoing(line({"jsonrpc": "2.0", **message}))
        assert out is not None
        legacy.append(handling(out, legacy=True))
        modern.append(handling(out, legacy=False))
    assert legacy == [want for _, want, _ in SESSION]
    assert modern == [want for _, _, want in SESSION]


def test_only_a_cancellation_waits_on_whether_its_request_left() -> None:
    assert {how for how in Handling if how.cancels} == {
        Handling.CLOSE_STREAM, Handling.POST_THEN_CLOSE}


def test_the_initialize_answer_opens_a_session_and_nothing_else_does() -> None:
    initialize = read_outgoing(line({"jsonrpc": "2.0", "id": 1, "method": "initialize"}))
    initialized = read_outgoing(line({"jsonrpc": "2.0", "method": "notifications/initialized"}))
    assert initialize is not None and opens_session(initialize)
    assert initialized is not None and not opens_session(initialized)
    assert not opens_session(request())


def test_a_refused_probe_is_not_worth_a_warning_a_refused_request_is() -> None:
    probe = read_outgoing(line(discover_request("rosetta-1", CoreConfig())))
    assert probe is not None and not logs_refusal(probe)
    assert logs_refusal(request("tools/call"))
