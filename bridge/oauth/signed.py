"""A JWT access token's signature (RFC 7515), checked with PyJWT against one key of the
authorization server's key set. No I/O, and imported only when the front takes OAuth tokens
(PyJWT and its cryptography are not small to import).

The claims are checked by `resource.identity_of_claims`, not here: PyJWT is asked for the
signature alone, so every claim rule is in one place, with its transcript tests.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import jwt

if TYPE_CHECKING:
    from jwt.types import Options

from bridge.oauth.resource import Rejected

_SIGNATURE_ONLY: Options = {"verify_signature": True, "verify_exp": False, "verify_nbf": False,
                   "verify_iat": False, "verify_aud": False, "verify_iss": False}


def header_of(token: str) -> Mapping[str, Any]:
    """The JOSE header of `token`, not yet trusted."""
    try:
        return jwt.get_unverified_header(token)
    except jwt.PyJWTError:
        raise Rejected("the token is not a well-formed JWT") from None


def verified_claims(token: str, jwk: Mapping[str, Any], alg: str) -> dict[str, Any]:
    """The claims of `token`, its signature made with `jwk` by `alg`; Rejected otherwise."""
    try:
        key = jwt.PyJWK(dict(jwk), algorithm=alg)
        claims = jwt.decode(token, key=key.key, algorithms=[alg], options=_SIGNATURE_ONLY)
    except jwt.PyJWTError:
        raise Rejected("the token's signature is not the authorization server's") from None
    if not isinstance(claims, dict):
        raise Rejected("the token's claims are not a JSON object")
    return claims
