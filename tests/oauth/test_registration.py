import pytest

from bridge.oauth.discovery import AuthorizationServer
from bridge.oauth.errors import OAuthError
from bridge.oauth.registration import (
    ClientIdentity,
    Preregistered,
    Register,
    choose_identity,
    registered_identity,
    registration_request,
)

REDIRECT = "http://127.0.0.1:33418/callback"
FULL = AuthorizationServer("https://as", "https://as/a", "https://as/t",
                           registration_endpoint="https://as/r",
                           client_id_metadata_document_supported=True)
BARE = AuthorizationServer("https://as", "https://as/a", "https://as/t")
CIMD = "https://app.example/client.json"


def test_a_preregistered_client_comes_first():
    given = Preregistered("id", "secret", CIMD)
    assert choose_identity(given, FULL, REDIRECT) == ClientIdentity(
        "id", "secret", "client_secret_basic", "https://as")


def test_a_metadata_document_comes_next_where_the_server_supports_them():
    assert choose_identity(Preregistered(metadata_url=CIMD), FULL, REDIRECT) == \
        ClientIdentity(CIMD, None, "none", "https://as")


def test_dynamic_registration_comes_last():
    no_cimd = AuthorizationServer("https://as", "https://as/a", "https://as/t",
                                  registration_endpoint="https://as/r")
    assert isinstance(choose_identity(Preregistered(metadata_url=CIMD), no_cimd, REDIRECT),
                      Register)


def test_with_none_of_them_the_user_is_told_what_to_register_and_how_to_give_it():
    with pytest.raises(OAuthError) as caught:
        choose_identity(Preregistered(), BARE, REDIRECT)
    text = str(caught.value)
    assert REDIRECT in text and "--oauth-client-id" in text
    assert "--oauth-client-secret-file" in text


def test_a_secret_goes_in_the_form_when_the_server_takes_only_that():
    post_only = AuthorizationServer("https://as", "https://as/a", "https://as/t",
                                    token_endpoint_auth_methods=("client_secret_post",))
    assert choose_identity(Preregistered("id", "s"), post_only, REDIRECT).auth_method \
        == "client_secret_post"


def test_the_registration_asks_for_a_native_app_with_refresh_tokens():
    body = registration_request(REDIRECT, "a b")
    assert body["application_type"] == "native"
    assert body["redirect_uris"] == [REDIRECT]
    assert body["grant_types"] == ["authorization_code", "refresh_token"]
    assert body["scope"] == "a b"


def test_the_registered_identity_keeps_its_secret_and_method():
    assert registered_identity({"client_id": "c", "client_secret": "s",
                                "token_endpoint_auth_method": "client_secret_post"}, FULL) \
        == ClientIdentity("c", "s", "client_secret_post", "https://as")
    assert registered_identity({"client_id": "c"}, FULL) == ClientIdentity(
        "c", None, "none", "https://as")


def test_a_registration_answer_without_client_id_is_an_error():
    with pytest.raises(OAuthError, match="client_id"):
        registered_identity({"error": "invalid_client_metadata"}, FULL)
