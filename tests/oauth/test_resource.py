"""The front as an OAuth protected resource: its metadata, its challenges, and which access
tokens it takes (bridge/oauth/resource.py, and the signature check of signed.py)."""

from __future__ import annotations

import json
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from bridge.oauth import signed
from bridge.oauth.resource import (
    CLOCK_SKEW,
    Identity,
    Rejected,
    challenge,
    checked_header,
    identity_of_claims,
    identity_of_introspection,
    key_for,
    looks_like_jwt,
    missing_scopes,
    policy,
    resource_metadata,
    server_endpoints,
)

ISSUER = "https://auth.example.com"
FRONT = "https://MCP.example.com/mcp/"
NOW = 1_800_000_000.0
RULES = policy(FRONT, ISSUER, ("mcp", "files:read"))


def claims(**changed: Any) -> dict[str, Any]:
    base = {"iss": ISSUER, "aud": "https://mcp.example.com/mcp", "sub": "alice",
            "exp": NOW + 300, "iat": NOW, "scope": "mcp files:read"}
    base.update(changed)
    return {k: v for k, v in base.items() if v is not None}


def test_the_policy_names_the_front_by_its_canonical_url_and_its_metadata_beside_it():
    assert RULES.resource == "https://mcp.example.com/mcp"
    assert RULES.metadata_url == \
        "https://mcp.example.com/.well-known/oauth-protected-resource/mcp"


def test_the_metadata_lists_the_issuer_and_the_scopes():
    assert resource_metadata(RULES) == {
        "resource": "https://mcp.example.com/mcp", "authorization_servers": [ISSUER],
        "bearer_methods_supported": ["header"], "resource_name": "mcp-rosetta",
        "scopes_supported": ["mcp", "files:read"]}
    assert "scopes_supported" not in resource_metadata(policy(FRONT, ISSUER))


def test_the_challenges_name_the_metadata_the_scopes_and_the_error():
    meta = 'resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp"'
    assert challenge(RULES) == f'Bearer {meta}, scope="mcp files:read"'
    assert challenge(RULES, "invalid_token", 'the "token" expired') == (
        f'Bearer {meta}, scope="mcp files:read", error="invalid_token", '
        "error_description=\"the 'token' expired\"")
    assert challenge(policy(FRONT, ISSUER), "insufficient_scope") == \
        f'Bearer {meta}, error="insufficient_scope"'


def test_a_good_token_names_its_issuer_subject_and_scopes():
    identity = identity_of_claims(claims(), RULES, NOW)
    assert identity == Identity(ISSUER, "alice", frozenset({"mcp", "files:read"}))
    assert identity.key == b'["oauth","https://auth.example.com","alice"]'
    assert missing_scopes(identity, RULES) == ()
    assert identity_of_claims(claims(aud=["other", FRONT], scope=None,
                                     scp=["mcp"]), RULES, NOW).scopes == {"mcp"}


def test_two_subjects_or_two_issuers_are_two_identities():
    alice = identity_of_claims(claims(), RULES, NOW)
    bob = identity_of_claims(claims(sub="bob"), RULES, NOW)
    assert alice.key != bob.key
    assert Identity("https://a", "x\0y").key != Identity("https://a\0x", "y").key


@pytest.mark.parametrize(("changed", "why"), [
    ({"iss": "https://evil.example.com"}, "issued by 'https://evil.example.com'"),
    ({"aud": "https://other.example.com/mcp"}, "for another server"),
    ({"aud": None}, "names no audience"),
    ({"exp": NOW - CLOCK_SKEW - 1}, "has expired"),
    ({"exp": None}, "no expiry"),
    ({"exp": "soon"}, "no expiry"),
    ({"nbf": NOW + CLOCK_SKEW + 1}, "not valid yet"),
    ({"sub": None}, "no subject"),
])
def test_a_token_of_another_issuer_audience_or_time_is_rejected(changed, why):
    with pytest.raises(Rejected, match=why):
        identity_of_claims(claims(**changed), RULES, NOW)


def test_a_small_clock_skew_is_allowed():
    identity_of_claims(claims(exp=NOW - CLOCK_SKEW + 1, nbf=NOW + CLOCK_SKEW - 1), RULES, NOW)


def test_a_missing_scope_is_named():
    identity = identity_of_claims(claims(scope="mcp"), RULES, NOW)
    assert missing_scopes(identity, RULES) == ("files:read",)


@pytest.mark.parametrize("alg", ["none", "HS256", "HS512", None, "RSA-OAEP"])
def test_none_and_symmetric_algorithms_are_refused(alg):
    with pytest.raises(Rejected, match="only an authorization server's asymmetric"):
        checked_header({"alg": alg} if alg else {})


def test_the_key_is_found_by_kid_and_type():
    keys = {"keys": [{"kty": "RSA", "kid": "r1"}, {"kty": "EC", "kid": "e1"},
                     {"kty": "RSA", "kid": "enc", "use": "enc"}]}
    assert key_for(keys, "r1", "RS256") == {"kty": "RSA", "kid": "r1"}
    assert key_for(keys, "e1", "RS256") is None  # an EC key for an RSA algorithm
    assert key_for(keys, "enc", "RS256") is None  # an encryption key
    assert key_for(keys, "r2", "RS256") is None
    assert key_for(keys, None, "ES256") == {"kty": "EC", "kid": "e1"}
    assert key_for({"keys": [{"kty": "RSA"}, {"kty": "RSA"}]}, None, "RS256") is None
    assert key_for("junk", "r1", "RS256") is None


def test_introspection_takes_an_active_token_of_the_issuer_for_the_front():
    answer = {"active": True, "sub": "svc", "scope": "mcp", "iss": ISSUER,
              "aud": FRONT, "exp": NOW + 10}
    assert identity_of_introspection(answer, RULES, NOW) == \
        Identity(ISSUER, "svc", frozenset({"mcp"}))
    assert identity_of_introspection({"active": True, "sub": "svc"}, RULES, NOW).subject \
        == "svc"
    for bad, why in [({"active": False}, "not active"), ({}, "not active"),
                     ({**answer, "aud": "https://x.example"}, "another server"),
                     ({**answer, "iss": "https://x.example"}, "issued by"),
                     ({**answer, "exp": NOW - 600}, "expired")]:
        with pytest.raises(Rejected, match=why):
            identity_of_introspection(bad, RULES, NOW)


def test_a_jwt_is_told_from_an_opaque_token():
    assert looks_like_jwt("eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJhIn0.c2ln")
    assert looks_like_jwt("eyJhbGciOiJub25lIn0.eyJzdWIiOiJhIn0.")
    assert not looks_like_jwt("2YotnFZFEjr1zCsicMWpAA")
    assert not looks_like_jwt("a.b")


def test_the_servers_metadata_gives_its_keys_and_introspection():
    document = {"issuer": ISSUER, "jwks_uri": f"{ISSUER}/jwks",
                "introspection_endpoint": f"{ISSUER}/introspect"}
    assert server_endpoints(document, ISSUER) == (f"{ISSUER}/jwks", f"{ISSUER}/introspect")
    assert server_endpoints({**document, "introspection_endpoint": None}, ISSUER)[1] is None
    with pytest.raises(Rejected, match="names another issuer"):
        server_endpoints({**document, "issuer": "https://x"}, ISSUER)
    with pytest.raises(Rejected, match="no jwks_uri"):
        server_endpoints({"issuer": ISSUER}, ISSUER)


# The signature (signed.py), with keys made here -----------------------------------------------

RSA_KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)
EC_KEY = ec.generate_private_key(ec.SECP256R1())


def public_jwk(key: Any, kid: str) -> dict[str, Any]:
    algorithm = jwt.algorithms.RSAAlgorithm if isinstance(key, rsa.RSAPrivateKey) \
        else jwt.algorithms.ECAlgorithm
    jwk: dict[str, Any] = json.loads(algorithm.to_jwk(key.public_key()))
    return {**jwk, "kid": kid}


def test_a_signature_by_the_key_verifies_and_gives_the_claims():
    token = jwt.encode(claims(), RSA_KEY, "RS256", headers={"kid": "r1"})
    header = signed.header_of(token)
    alg = checked_header(header)
    assert (alg, header["kid"]) == ("RS256", "r1")
    assert signed.verified_claims(token, public_jwk(RSA_KEY, "r1"), alg)["sub"] == "alice"
    ec_token = jwt.encode(claims(), EC_KEY, "ES256")
    assert signed.verified_claims(ec_token, public_jwk(EC_KEY, "e1"), "ES256")["sub"] == "alice"


def test_a_signature_by_another_key_or_a_changed_token_is_refused():
    other = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    token = jwt.encode(claims(), other, "RS256", headers={"kid": "r1"})
    with pytest.raises(Rejected, match="signature"):
        signed.verified_claims(token, public_jwk(RSA_KEY, "r1"), "RS256")
    good = jwt.encode(claims(), RSA_KEY, "RS256")
    head, _, sig = good.split(".")
    forged = jwt.encode(claims(sub="mallory"), RSA_KEY, "RS256").split(".")[1]
    with pytest.raises(Rejected, match="signature"):
        signed.verified_claims(f"{head}.{forged}.{sig}", public_jwk(RSA_KEY, "r1"), "RS256")


def test_an_hmac_token_keyed_with_the_public_key_is_refused_before_verifying():
    token = jwt.encode(claims(), "the public key taken as an HMAC secret", "HS256")
    with pytest.raises(Rejected, match="asymmetric"):
        checked_header(signed.header_of(token))
    with pytest.raises(Rejected, match="signature"):  # and the key would not take it
        signed.verified_claims(token, public_jwk(RSA_KEY, "r1"), "HS256")


def test_a_token_that_is_not_a_jwt_is_rejected():
    with pytest.raises(Rejected, match="well-formed"):
        signed.header_of("not.a.jwt")
