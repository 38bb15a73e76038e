"""Device authorization (RFC 8628), for a machine with no browser: the request that gives a
user code and the page where the user enters it on another device, then the token
endpoint polled until the user approved, denied, or the code expired.

Must not put the device code or a token in an error's text (the user code is shown to the
user on purpose: it is useless without the device code).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from bridge.oauth.errors import OAuthError
from bridge.oauth.registration import DEVICE_GRANT, ClientIdentity
from bridge.oauth.tokens import Grant, token_answer

DEFAULT_INTERVAL = 5.0
"""Seconds between polls when the server names none (RFC 8628 §3.2)."""
SLOW_DOWN = 5.0
"""Seconds added to the interval on each `slow_down` (RFC 8628 §3.5)."""


@dataclass(frozen=True, slots=True)
class DeviceAuthorization:
    """The device authorization response (RFC 8628 §3.2)."""

    device_code: str
    user_code: str
    verification_uri: str
    verification_uri_complete: str | None
    expires_in: float
    interval: float

    def __repr__(self) -> str:  # never the device code in a log or a traceback
        return f"DeviceAuthorization(user_code={self.user_code!r})"

    def instructions(self, server: str) -> str:
        """What the user is told: the page, and the code to enter there."""
        page = self.verification_uri_complete or self.verification_uri
        return (f"mcp-rosetta: to sign in to {server}, open {page} on any device and "
                f"enter the code {self.user_code} (within {self.expires_in:g}s)")


@dataclass(frozen=True, slots=True)
class Wait:
    """Not yet: poll again after `interval` seconds."""

    interval: float


def device_form(client: ClientIdentity, resource: str, scope: str | None) -> dict[str, str]:
    """The device authorization request (RFC 8628 §3.1), `resource` included (RFC 8707)."""
    form = {"client_id": client.client_id, "resource": resource}
    if scope:
        form["scope"] = scope
    return form


def device_answer(status: int, document: Any, issuer: str) -> DeviceAuthorization:
    """The device authorization response, checked (RFC 8628 §3.2)."""
    if status != 200 or not isinstance(document, Mapping) or "error" in document:
        error = document.get("error") if isinstance(document, Mapping) else None
        raise OAuthError(f"the device authorization endpoint of {issuer} refused ({status} "
                         f"{error or 'no error code'})")
    fields = [document.get(k) for k in ("device_code", "user_code", "verification_uri")]
    if not all(isinstance(f, str) and f for f in fields):
        raise OAuthError(f"the device authorization endpoint of {issuer} gave no "
                         "device_code, user_code or verification_uri")
    complete = document.get("verification_uri_complete")
    expires, interval = document.get("expires_in"), document.get("interval")
    return DeviceAuthorization(
        str(fields[0]), str(fields[1]), str(fields[2]),
        complete if isinstance(complete, str) and complete else None,
        _seconds(expires, 600.0), _seconds(interval, DEFAULT_INTERVAL))


def poll_form(client: ClientIdentity, device_code: str, resource: str) -> dict[str, str]:
    """The device access token request (RFC 8628 §3.4)."""
    return {"grant_type": DEVICE_GRANT, "device_code": device_code, "resource": resource,
            "client_id": client.client_id}


def poll_answer(status: int, document: Any, now: float, issuer: str,
                interval: float) -> Grant | Wait:
    """The token endpoint's answer to a poll (RFC 8628 §3.5): the grant, or a Wait while
    the user has not answered (longer after `slow_down`); denied or expired is an error."""
    error = document.get("error") if isinstance(document, Mapping) else None
    if error == "authorization_pending":
        return Wait(interval)
    if error == "slow_down":
        return Wait(interval + SLOW_DOWN)
    if error == "access_denied":
        raise OAuthError(f"the sign-in at {issuer} was denied")
    if error == "expired_token":
        raise OAuthError(f"the code to sign in at {issuer} expired before it was entered")
    return token_answer(status, document, now, issuer)


def _seconds(value: Any, default: float) -> float:
    """A positive number of seconds the server gave, else `default`."""
    if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
        return float(value)
    return default
