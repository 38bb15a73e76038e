"""requestState handles for parked calls: sealed with an HMAC, expiring, bound to one request.

Must not hold the parked calls or decide single use: it seals what the parking table gives
it and opens what a client echoes back. mrtr.mdx §Server Requirements: requestState is
attacker-controlled input; bind it to the originating method and a digest of its salient
params, give it a short expiry, protect its integrity, and reject what fails verification.

Format: "rs1." + [route "~"] + base64url(JSON payload) + "." + base64url(HMAC-SHA256(secret,
label + [route "~"] + payload)). The payload is {"k": call key, "n": nonce, "d": request
digest, "x": expiry in ms}; the nonce lets the parking table enforce single use (mrtr.mdx
warns the digest alone does not). The route, when the sealing core has one, names the server
process of a pool that holds the call, and in a fleet its node (`placement.py`; no "." or "~"
in it): it is read before the state
is opened, to find the core that can open it, and the MAC covers it, so a changed route
reaches a core that refuses the state as tampered with.
"""

from __future__ import annotations

import hmac
import json

from bridge.core.codec import Message, RawNumber

PREFIX = "rs1."
ROUTE_END = "~"  # outside base64url's alphabet: a route cannot be confused with a payload
_LABEL = b"mcp-rosetta requestState v1\x00"
# Fields that ride beside a retried request's own params and so are not part of its identity.
_NOT_SALIENT = frozenset({"_meta", "inputResponses", "requestState"})


def request_digest(method: str, params: object) -> str:
    """A digest of the method and the params that identify the request (name/arguments, uri)."""
    salient = {k: v for k, v in params.items() if k not in _NOT_SALIENT} \
        if isinstance(params, dict) else {}
    canonical = json.dumps([method, salient], sort_keys=True, separators=(",", ":"),
                           ensure_ascii=True, default=_number_text)
    return _b64(_sha256(canonical.encode("ascii")))


def _number_text(value: object) -> str:
    if type(value) is RawNumber:
        text: str = value.text  # a number Python does not hold, compared by its digits
        return text
    raise TypeError(f"{type(value).__name__} is not JSON")


def seal(secret: bytes, *, key: str, nonce: str, digest: str, expires: float,
         route: str = "") -> str:
    """A requestState for one parked round of the call `key`, valid until `expires` (seconds),
    naming `route` (the pool's server process that holds the call) when it is not empty."""
    payload = json.dumps({"k": key, "n": nonce, "d": digest, "x": round(expires * 1000)},
                         separators=(",", ":")).encode("ascii")
    body = f"{route}{ROUTE_END}{_b64(payload)}" if route else _b64(payload)
    return f"{PREFIX}{body}.{_b64(_mac(secret, body))}"


def route_of(state: str) -> str:
    """The route a requestState names ("" for none), unauthenticated: only where to take it."""
    if not state.startswith(PREFIX):
        return ""
    route, end, _ = state[len(PREFIX):].partition(ROUTE_END)
    return route if end and "." not in route else ""


def unseal(secret: bytes, state: str) -> Message | None:
    """The payload of an authentic requestState; None if it was not sealed with `secret`."""
    if not state.startswith(PREFIX) or state.count(".") != 2:
        return None
    body, _, mac = state[len(PREFIX):].partition(".")
    try:
        if not hmac.compare_digest(_unb64(mac), _mac(secret, body)):
            return None  # checked before the payload is parsed: nothing unsealed is trusted
        payload = json.loads(_unb64(body.rpartition(ROUTE_END)[2]))
    except ValueError:  # bad base64, bad UTF-8 or bad JSON all derive from ValueError
        return None
    return payload if _well_formed(payload) else None


def expired(payload: Message, now: float) -> bool:
    return bool(now * 1000 > payload["x"])


def _well_formed(payload: object) -> bool:
    return isinstance(payload, dict) and all(isinstance(payload.get(k), str) for k in "knd") \
        and isinstance(payload.get("x"), int)


def _mac(secret: bytes, body: str) -> bytes:
    return hmac.new(secret, _LABEL + body.encode("ascii"), "sha256").digest()


def _sha256(data: bytes) -> bytes:
    """SHA-256 of `data`, hashlib imported at the first call: it loads OpenSSL's libcrypto,
    which mode A's first answer does not need (the stdio bridge's start)."""
    import hashlib

    return hashlib.sha256(data).digest()


def _b64(raw: bytes) -> str:
    """base64url without padding; base64 (with binascii and struct) is imported at the first
    requestState, which mode B's first answer does not need."""
    import base64

    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    import base64

    if not text.isascii():
        raise ValueError("not base64url")
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
