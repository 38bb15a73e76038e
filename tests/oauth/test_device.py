"""Device authorization (RFC 8628): the request, the response checked, and each answer to a
poll (pending, slow down, denied, expired, the grant)."""

from __future__ import annotations

import pytest

from bridge.oauth.device import (
    DEFAULT_INTERVAL,
    DeviceAuthorization,
    Wait,
    device_answer,
    device_form,
    poll_answer,
    poll_form,
)
from bridge.oauth.errors import OAuthError
from bridge.oauth.registration import DEVICE_GRANT, ClientIdentity, registration_request
from bridge.oauth.tokens import Grant

AS = "https://as.example.com"
MCP = "https://mcp.example.com/mcp"
CLIENT = ClientIdentity("dyn-1", issuer=AS)
STARTED = {"device_code": "dev-secret", "user_code": "WDJB-MJHT",
           "verification_uri": f"{AS}/device",
           "verification_uri_complete": f"{AS}/device?user_code=WDJB-MJHT",
           "expires_in": 600, "interval": 5}


def test_the_request_names_the_client_resource_and_scope():
    assert device_form(CLIENT, MCP, "mcp:read") == {
        "client_id": "dyn-1", "resource": MCP, "scope": "mcp:read"}
    assert "scope" not in device_form(CLIENT, MCP, None)


def test_the_response_gives_the_code_and_the_page_and_hides_the_device_code():
    started = device_answer(200, STARTED, AS)
    assert started == DeviceAuthorization("dev-secret", "WDJB-MJHT", f"{AS}/device",
                                           f"{AS}/device?user_code=WDJB-MJHT", 600.0, 5.0)
    told = started.instructions(MCP)
    assert "WDJB-MJHT" in told and f"{AS}/device?user_code=WDJB-MJHT" in told
    assert "dev-secret" not in told + repr(started)


def test_a_response_without_an_interval_polls_every_five_seconds():
    bare = {k: v for k, v in STARTED.items() if k not in ("interval",
                                                          "verification_uri_complete")}
    started = device_answer(200, bare, AS)
    assert started.interval == DEFAULT_INTERVAL == 5.0
    assert f"open {AS}/device on any device" in started.instructions(MCP)


@pytest.mark.parametrize("document", [{"error": "invalid_client"}, {"user_code": "X"}, []])
def test_a_refused_or_incomplete_response_is_an_error(document):
    with pytest.raises(OAuthError, match="device authorization endpoint"):
        device_answer(400 if "error" in document else 200, document, AS)


def test_the_poll_asks_for_the_device_grant_with_the_resource():
    assert poll_form(CLIENT, "dev-secret", MCP) == {
        "grant_type": DEVICE_GRANT, "device_code": "dev-secret", "resource": MCP,
        "client_id": "dyn-1"}


def test_each_answer_to_a_poll():
    assert poll_answer(400, {"error": "authorization_pending"}, 0.0, AS, 5.0) == Wait(5.0)
    assert poll_answer(400, {"error": "slow_down"}, 0.0, AS, 5.0) == Wait(10.0)
    with pytest.raises(OAuthError, match="denied"):
        poll_answer(400, {"error": "access_denied"}, 0.0, AS, 5.0)
    with pytest.raises(OAuthError, match="expired"):
        poll_answer(400, {"error": "expired_token"}, 0.0, AS, 5.0)
    granted = poll_answer(200, {"access_token": "a", "token_type": "Bearer",
                                "expires_in": 60, "refresh_token": "r"}, 100.0, AS, 5.0)
    assert granted == Grant("a", "r", 160.0)


def test_registration_asks_for_the_device_grant_only_where_the_server_offers_it():
    assert DEVICE_GRANT not in registration_request("http://127.0.0.1:1/callback",
                                                    None)["grant_types"]
    assert DEVICE_GRANT in registration_request("http://127.0.0.1:1/callback", None,
                                                True)["grant_types"]


def test_the_servers_metadata_names_its_device_endpoint():
    from bridge.oauth.discovery import authorization_server
    document = {"issuer": AS, "authorization_endpoint": f"{AS}/authorize",
                "token_endpoint": f"{AS}/token", "code_challenge_methods_supported": ["S256"]}
    assert authorization_server(document, AS).device_authorization_endpoint is None
    offered = authorization_server({**document, "device_authorization_endpoint":
                                    f"{AS}/device"}, AS)
    assert offered.device_authorization_endpoint == f"{AS}/device"
