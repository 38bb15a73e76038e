"""The era of a request on an endpoint that serves both: headers and a decoded body in, the
path it takes out."""

from __future__ import annotations

from typing import Any

import pytest

from bridge.streamable.era import SESSION_HEADER, Era, era_of

SESSION = SESSION_HEADER


@pytest.mark.parametrize(("heads", "body", "era"), [
    ({}, {"method": "initialize", "id": 1}, Era.LEGACY),
    ({SESSION: "x"}, {"method": "tools/list", "id": 1}, Era.LEGACY),
    ({SESSION: "x"}, None, Era.LEGACY),  # a GET or DELETE of a session
    ({"mcp-protocol-version": "2025-03-26"}, {"method": "tools/list", "id": 1}, Era.LEGACY),
    ({"mcp-protocol-version": "2025-06-18"}, {"method": "ping", "id": 1}, Era.LEGACY),
    ({}, {"method": "tools/list", "id": 1}, Era.MODERN),  # refused there: no _meta
    ({}, None, Era.MODERN),  # a GET without a session: 405 there
    ({"mcp-protocol-version": "2026-07-28"}, {"method": "initialize", "id": 1}, Era.MODERN),
    ({SESSION: "x"}, {"method": "tools/list", "id": 1, "params": {"_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28"}}}, Era.MODERN),
    ({"mcp-protocol-version": "v999"}, {"method": "tools/list", "id": 1}, Era.MODERN),
    ({}, [{"method": "initialize", "id": 1}], Era.MODERN),  # a batch with no session
])
def test_the_era_of_a_request(heads: dict[str, str], body: Any, era: Era) -> None:
    assert era_of(heads, body) is era
