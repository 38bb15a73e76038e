import pytest

from bridge.oauth.discovery import (
    authorization_server,
    authorization_server_urls,
    protected_resource,
    protected_resource_urls,
)
from bridge.oauth.errors import OAuthError

AS = {"issuer": "https://auth.example.com", "authorization_endpoint": "https://auth.example.com/a",
      "token_endpoint": "https://auth.example.com/t", "code_challenge_methods_supported": ["S256"]}


def test_the_headers_resource_metadata_is_the_only_url_tried():
    assert protected_resource_urls("https://example.com/public/mcp", "https://m.example/prm") \
        == ["https://m.example/prm"]


def test_without_it_the_endpoints_path_comes_before_the_root():
    assert protected_resource_urls("https://example.com/public/mcp", None) == [
        "https://example.com/.well-known/oauth-protected-resource/public/mcp",
        "https://example.com/.well-known/oauth-protected-resource"]


def test_a_server_at_the_root_has_one_well_known_url():
    assert protected_resource_urls("https://example.com/", None) == [
        "https://example.com/.well-known/oauth-protected-resource"]


def test_an_issuer_with_a_path_is_tried_in_the_three_spec_orders():
    assert authorization_server_urls("https://auth.example.com/tenant1") == [
        "https://auth.example.com/.well-known/oauth-authorization-server/tenant1",
        "https://auth.example.com/.well-known/openid-configuration/tenant1",
        "https://auth.example.com/tenant1/.well-known/openid-configuration"]


def test_an_issuer_without_a_path_is_tried_in_two():
    assert authorization_server_urls("https://auth.example.com") == [
        "https://auth.example.com/.well-known/oauth-authorization-server",
        "https://auth.example.com/.well-known/openid-configuration"]


def test_the_protected_resource_metadata_is_read_and_checked():
    prm = protected_resource({"resource": "https://Example.com/mcp",
                              "authorization_servers": ["https://auth.example.com"],
                              "scopes_supported": ["a", "b"]}, "https://example.com/mcp")
    assert (prm.resource, prm.authorization_servers, prm.scopes_supported) == (
        "https://example.com/mcp", ("https://auth.example.com",), ("a", "b"))


def test_a_resource_above_the_server_covers_it():
    prm = protected_resource({"resource": "https://example.com",
                              "authorization_servers": ["https://a"]}, "https://example.com/mcp")
    assert prm.resource == "https://example.com"


@pytest.mark.parametrize("resource", ["https://evil.example.com/mcp", "https://example.com/mcp2",
                                      "http://example.com/mcp"])
def test_metadata_for_another_resource_is_refused(resource):
    with pytest.raises(OAuthError, match="another resource"):
        protected_resource({"resource": resource, "authorization_servers": ["https://a"]},
                           "https://example.com/mcp")


def test_metadata_without_an_authorization_server_is_refused():
    with pytest.raises(OAuthError, match="authorization_servers"):
        protected_resource({"resource": "https://example.com/mcp"}, "https://example.com/mcp")


def test_authorization_server_metadata_is_read():
    server = authorization_server({**AS, "registration_endpoint": "https://auth.example.com/r",
                                   "client_id_metadata_document_supported": True,
                                   "authorization_response_iss_parameter_supported": True,
                                   "token_endpoint_auth_methods_supported": ["none"]},
                                  "https://auth.example.com")
    assert server.registration_endpoint == "https://auth.example.com/r"
    assert server.client_id_metadata_document_supported and server.iss_parameter_supported
    assert server.token_endpoint_auth_methods == ("none",)


def test_metadata_naming_another_issuer_is_refused():
    with pytest.raises(OAuthError, match="another issuer"):
        authorization_server({**AS, "issuer": "https://honest.example"},
                             "https://auth.example.com")


def test_the_issuer_is_compared_as_a_string():
    with pytest.raises(OAuthError, match="another issuer"):
        authorization_server(AS, "https://auth.example.com/")


@pytest.mark.parametrize("methods", [None, ["plain"]])
def test_a_server_without_pkce_s256_is_refused(methods):
    document = {**AS, "code_challenge_methods_supported": methods}
    with pytest.raises(OAuthError, match="S256"):
        authorization_server(document, "https://auth.example.com")
