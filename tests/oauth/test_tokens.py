import base64

import pytest

from bridge.oauth.errors import GrantRefused, OAuthError
from bridge.oauth.registration import ClientIdentity
from bridge.oauth.tokens import Grant, authenticate, code_form, refresh_form, token_answer

PUBLIC = ClientIdentity("c1", issuer="https://as")
SECRET = ClientIdentity("c:1", "s&t", "client_secret_basic", "https://as")


def test_the_code_exchange_carries_the_verifier_and_resource():
    assert code_form(PUBLIC, "c0de", "ver", "http://127.0.0.1:9/callback",
                     "https://mcp/mcp") == {
        "grant_type": "authorization_code", "code": "c0de", "code_verifier": "ver",
        "redirect_uri": "http://127.0.0.1:9/callback", "resource": "https://mcp/mcp",
        "client_id": "c1"}


def test_the_refresh_carries_the_resource():
    assert refresh_form(PUBLIC, "r1", "https://mcp/mcp", ("a",)) == {
        "grant_type": "refresh_token", "refresh_token": "r1", "resource": "https://mcp/mcp",
        "client_id": "c1", "scope": "a"}


def test_a_public_client_sends_its_id_in_the_form():
    assert authenticate(PUBLIC, {"client_id": "c1"}) == ({}, {"client_id": "c1"})


def test_basic_authentication_form_encodes_id_and_secret():
    headers, form = authenticate(SECRET, {"client_id": "c:1", "x": "y"})
    assert base64.b64decode(headers["Authorization"].removeprefix("Basic ")) == b"c%3A1:s%26t"
    assert form == {"x": "y"}


def test_post_authentication_puts_the_secret_in_the_form():
    post = ClientIdentity("c1", "s", "client_secret_post", "https://as")
    assert authenticate(post, {"client_id": "c1"}) == (
        {}, {"client_id": "c1", "client_secret": "s"})


def test_a_grant_is_read_with_its_expiry():
    grant = token_answer(200, {"access_token": "at", "token_type": "bearer", "expires_in": 3600,
                               "refresh_token": "rt", "scope": "a b"}, 1000.0, "https://as")
    assert grant == Grant("at", "rt", 4600.0, ("a", "b"))
    assert not grant.due(4539.0) and grant.due(4540.0)


def test_a_refresh_without_a_new_refresh_token_keeps_the_old_one():
    old = Grant("at", "rt", 1.0, ("a",))
    assert token_answer(200, {"access_token": "at2", "token_type": "Bearer"}, 5.0, "https://as",
                        previous=old) == Grant("at2", "rt", None, ("a",))


def test_invalid_grant_says_a_new_sign_in_is_due_without_the_token():
    with pytest.raises(GrantRefused, match="invalid_grant") as caught:
        token_answer(400, {"error": "invalid_grant"}, 0.0, "https://as")
    assert "rt" not in str(caught.value)


def test_other_refusals_and_non_bearer_tokens_are_errors():
    with pytest.raises(OAuthError, match="invalid_client"):
        token_answer(401, {"error": "invalid_client"}, 0.0, "https://as")
    with pytest.raises(OAuthError, match="DPoP"):
        token_answer(200, {"access_token": "x", "token_type": "DPoP"}, 0.0, "https://as")


def test_a_grant_never_shows_its_tokens():
    assert "secret-token" not in repr(Grant("secret-token", "secret-refresh"))
