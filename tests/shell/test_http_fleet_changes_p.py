"""A tool change a 2026-07-28 server makes at one node of a fleet reaches a modern client's
listen stream at the other: two fronts in process, real HTTP/1.1 over loopback, real cores
(mode P between modern peers) before a fake modern server on each node.

What is checked: each node's core keeps a listen stream of its own at its server (opened
under an id the client never sees); a change heard there reaches the listen stream another
node relays to its own server, once and framed as that server's own notification would be;
a change made at the listener's own node is heard once (from its server, not again from the
bridge's stream); and the bridge's stream ends at the server when the node stops."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
import trio

import tests.shell.test_http_front as modern
from bridge.core.bridge import Bridge
from bridge.core.config import CoreConfig
from bridge.core.modern_server_legacy_client.placement import route_for
from tests.shell.fakes import FakeChild
from tests.shell.test_http_fleet import fleet, until
from tests.shell.test_http_fleet_changes import SUB, TOOLS_CHANGED, hears_at, listening, tool_call

ACKNOWLEDGED = "notifications/subscriptions/acknowledged"
DISCOVERED = {"resultType": "complete", "supportedVersions": ["2026-07-28"],
              "capabilities": {"tools": {"listChanged": True}},
              "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "fake", "version": "1"}}}


class ModernServer(FakeChild):
    """A 2026-07-28 server on stdio, as far as listen streams go: it acknowledges each
    `subscriptions/listen` (the list changes it asks for) and keeps it open until cancelled;
    a `tools/call` of "add_tool" tells every open stream that asked for tool changes, then is
    answered; anything else is answered empty."""

    def __init__(self, nursery: trio.Nursery) -> None:
        self.listens: dict[str, dict[str, Any]] = {}
        """The open streams, by their listen request's id: the request."""
        self.cancelled: list[Any] = []
        super().__init__(nursery)

    async def _play(self, reads_stdin: bool) -> None:
        with self._scope:
            try:
                while True:
                    try:
                        line = await self._process.line(math.inf)
                    except EOFError:
                        break
                    self.seen.append(line)
                    for reply in self._answer(json.loads(line)):
                        await self._process.send(json.dumps(reply).encode())
                self.exit(0)
            finally:
                with trio.CancelScope(shield=True):
                    await self._process.aclose()

    def _answer(self, message: dict[str, Any]) -> list[dict[str, Any]]:
        method, rid = message.get("method"), message.get("id")
        if method == "notifications/cancelled":
            self.cancelled.append(message["params"]["requestId"])
            self.listens.pop(message["params"]["requestId"], None)
            return []
        if rid is None:
            return []
        if method == "server/discover":
            return [{"jsonrpc": "2.0", "id": rid, "result": DISCOVERED}]
        if method == "subscriptions/listen":
            self.listens[rid] = message
            asked = message["params"]["notifications"]
            return [{"jsonrpc": "2.0", "method": ACKNOWLEDGED, "params": {
                "_meta": {SUB: rid}, "notifications": {
                    "toolsListChanged": asked.get("toolsListChanged") is True}}}]
        told = [{**TOOLS_CHANGED, "params": {"_meta": {SUB: sid}}}
                for sid, listen in self.listens.items()
                if listen["params"]["notifications"].get("toolsListChanged")] \
            if method == "tools/call" and message["params"].get("name") == "add_tool" else []
        return [*told, {"jsonrpc": "2.0", "id": rid, "result": {"resultType": "complete",
                                                               "content": []}}]

    def own_listens(self) -> list[str]:
        """The ids of the listen requests the bridge opened itself (its own clientInfo)."""
        info = CoreConfig().bridge_info
        return [json.loads(line)["id"] for line in self.seen
                if b'"subscriptions/listen"' in line
                and json.loads(line)["params"]["_meta"].get(
                    "io.modelcontextprotocol/clientInfo") == info]


def fleet_core(address: str) -> Bridge:
    """A node's core as `http.main.core_settings` makes it in a fleet: it shares changes."""
    return Bridge(CoreConfig(share_changes=True, state_route=route_for(address, "")))


@pytest.fixture(autouse=True)
def _host() -> None:
    modern.HOST = "127.0.0.1"


async def test_a_modern_server_s_change_at_one_node_reaches_the_stream_at_the_other() -> None:
    servers: list[ModernServer] = []

    def spawn(nursery: trio.Nursery) -> ModernServer:
        servers.append(ModernServer(nursery))
        return servers[-1]

    async with fleet(affinity="none", core=fleet_core, child=spawn) as f:
        listener = await f.a.client()
        stream = await listening(listener)
        called = await (await f.b.client()).post(tool_call(1))
        assert called.status == 200, called
        assert await listener.sse_event(stream) == {**TOOLS_CHANGED,
                                                    "params": {"_meta": {SUB: "L"}}}
        await until(lambda: hears_at(f, "a"))
        # A change made at the listener's own node is heard once: from its own server.
        assert (await (await f.a.client()).post(tool_call(2))).status == 200
        assert await listener.sse_event(stream) == {**TOOLS_CHANGED,
                                                    "params": {"_meta": {SUB: "L"}}}
        await until(lambda: hears_at(f, "b"))
        with trio.move_on_after(0.3):  # and not again, from the bridge's stream
            while True:
                assert await listener.sse_event(stream) == ":"
        assert hears_at(f, "a") == [(202, "b")] and hears_at(f, "b") == [(202, "a")]
        own = [server.own_listens() for server in servers]
        assert [len(ids) for ids in own] == [1, 1]
        assert all(ids[0] in server.listens for ids, server in zip(own, servers, strict=True))
        # Each node's own stream ends at its server as the node stops.
        f.a.front.stop()
        f.b.front.stop()
        await until(lambda: all(server.cancelled for server in servers))
        assert [server.cancelled for server in servers] == own
