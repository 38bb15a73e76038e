from urllib.parse import parse_qs, urlsplit

import pytest

from bridge.oauth.authorize import (
    PendingAuthorization,
    authorization_code,
    authorization_url,
    code_challenge,
    redirect_landing,
    select_scope,
)
from bridge.oauth.challenge import Challenge
from bridge.oauth.discovery import AuthorizationServer, ProtectedResource
from bridge.oauth.errors import OAuthError

SERVER = AuthorizationServer("https://as.example", "https://as.example/authorize?tenant=1",
                             "https://as.example/token")
RESOURCE = ProtectedResource("https://mcp.example/mcp", ("https://as.example",), ("a", "b"))
PENDING = PendingAuthorization("https://as.example", False, "st4te", "v" * 43,
                               "http://127.0.0.1:4000/callback", "https://mcp.example/mcp", "a")


def test_pkce_s256_matches_rfc_7636_appendix_b():
    assert code_challenge("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk") \
        == "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"


def test_the_authorization_url_carries_pkce_state_resource_and_scope():
    url = urlsplit(authorization_url(SERVER, "client-1", PENDING))
    query = {k: v[0] for k, v in parse_qs(url.query).items()}
    assert url.path == "/authorize"
    assert query == {"tenant": "1", "response_type": "code", "client_id": "client-1",
                     "redirect_uri": "http://127.0.0.1:4000/callback", "state": "st4te",
                     "code_challenge": code_challenge("v" * 43),
                     "code_challenge_method": "S256", "resource": "https://mcp.example/mcp",
                     "scope": "a"}


def test_the_challenges_scope_comes_first():
    assert select_scope(Challenge(scope=("x",)), RESOURCE, SERVER) == "x"


def test_else_every_scope_the_resource_supports():
    assert select_scope(Challenge(), RESOURCE, SERVER) == "a b"


def test_else_no_scope_at_all():
    bare = ProtectedResource("https://mcp.example/mcp", ("https://as.example",), None)
    assert select_scope(None, bare, SERVER) is None


def test_a_step_up_asks_for_the_union_with_what_was_granted():
    assert select_scope(Challenge(scope=("write",), error="insufficient_scope"), RESOURCE,
                        SERVER, granted=("read", "write")) == "read write"


def test_offline_access_is_asked_only_where_the_server_lists_it():
    offline = AuthorizationServer("https://as.example", "https://as.example/a",
                                  "https://as.example/t", scopes_supported=("a", "offline_access"))
    assert select_scope(Challenge(scope=("a",)), RESOURCE, offline) == "a offline_access"
    assert select_scope(Challenge(scope=("a",)), RESOURCE, SERVER) == "a"


def answer(**fields):
    return {"code": "c0de", "state": "st4te", **fields}


@pytest.mark.parametrize(("required", "fields", "problem"), [
    (False, {}, None),
    (False, {"iss": "https://as.example"}, None),
    (True, {"iss": "https://as.example"}, None),
    (True, {}, "has none"),
    (False, {"iss": "https://evil.example.com"}, "not 'https://as.example'"),
    (True, {"iss": "https://as.example/"}, "not 'https://as.example'"),
    (True, {"iss": "HTTPS://as.example"}, "not 'https://as.example'"),
])
def test_the_issuer_is_checked_as_rfc_9207_and_the_spec_table_say(required, fields, problem):
    pending = PendingAuthorization(PENDING.issuer, required, PENDING.state, PENDING.verifier,
                                   PENDING.redirect_uri, PENDING.resource, PENDING.scope)
    if problem is None:
        assert authorization_code(pending, answer(**fields)) == "c0de"
    else:
        with pytest.raises(OAuthError, match=problem) as caught:
            authorization_code(pending, answer(**fields))
        assert "c0de" not in str(caught.value)


def test_a_mismatched_issuers_error_is_not_shown():
    with pytest.raises(OAuthError) as caught:
        authorization_code(PENDING, {"iss": "https://evil", "state": "st4te",
                                     "error": "access_denied", "error_description": "phish"})
    assert "phish" not in str(caught.value) and "access_denied" not in str(caught.value)


def test_a_wrong_state_is_rejected():
    with pytest.raises(OAuthError, match="state"):
        authorization_code(PENDING, answer(state="other"))


def test_a_refusal_is_said():
    with pytest.raises(OAuthError, match="access_denied"):
        authorization_code(PENDING, {"state": "st4te", "error": "access_denied"})


def test_the_redirect_lands_on_the_signed_in_page_and_anything_else_is_404() -> None:
    status, page = redirect_landing(True)
    assert status == 200 and b"Signed in" in page and page.startswith(b"<!doctype html>")
    assert redirect_landing(False) == (404, b"not found")
