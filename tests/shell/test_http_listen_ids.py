"""The front's id mapping on a `subscriptions/listen` stream: the client meets its own id.

Must not need a socket or a core: `modern.Mapping` alone, admitting a listen request and
delivering what a core would send on its stream.
"""

from __future__ import annotations

from typing import Any

import trio

from bridge.core.codec import decode
from bridge.core.events import Send
from bridge.shell import logs
from bridge.shell.http.modern import Mapping
from bridge.streamable.renaming import SUBSCRIPTION_ID

META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}}


def listen(rid: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "method": "subscriptions/listen",
            "params": {"_meta": META, "notifications": {"toolsListChanged": True}}}


def tagged(method: str, subscription: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": method, "params": {"_meta": {SUBSCRIPTION_ID:
                                                                         subscription}}}


def received(exchange: Any) -> list[Any]:
    """The messages the exchange's route holds for the client, as they will go out."""
    if not exchange.route.queued:
        return []
    return [decode(outgoing.line) for outgoing in trio.run(exchange.route.take)]


def test_the_subscription_id_is_the_clients_listen_id_on_every_message() -> None:
    mapping = Mapping(logs.logger())
    exchange, renamed = mapping.admit(listen(7))
    wire = renamed["id"]
    assert wire != 7
    for method in ("notifications/subscriptions/acknowledged",
                   "notifications/tools/list_changed"):
        mapping.deliver(Send("client", tagged(method, wire), request=wire))
    closing = {"jsonrpc": "2.0", "id": wire, "result": {"_meta": {SUBSCRIPTION_ID: wire}}}
    mapping.deliver(Send("client", closing, request=wire))
    ack, changed, answer = received(exchange)
    assert ack["params"]["_meta"][SUBSCRIPTION_ID] == 7
    assert changed["params"]["_meta"][SUBSCRIPTION_ID] == 7
    assert (answer["id"], answer["result"]["_meta"][SUBSCRIPTION_ID]) == (7, 7)


def test_another_subscriptions_id_is_left_as_it_is() -> None:
    mapping = Mapping(logs.logger())
    exchange, renamed = mapping.admit(listen("a"))
    wire = renamed["id"]
    mapping.deliver(Send("client", tagged("notifications/tools/list_changed", "other"),
                         request=wire))
    [message] = received(exchange)
    assert message["params"]["_meta"][SUBSCRIPTION_ID] == "other"
