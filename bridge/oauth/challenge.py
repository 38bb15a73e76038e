"""What a server's `WWW-Authenticate` asks for (RFC 6750 §3, RFC 9728 §5.1).

Authorization Server Discovery §Protected Resource Metadata Discovery Requirements: a client
must parse the header of a 401 and take `resource_metadata` from it when present; Scope
Selection Strategy: its `scope` is authoritative for the current operation; Scope Challenge
Handling: a 403 with `error="insufficient_scope"` asks for a step-up.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# auth-param = token BWS "=" BWS ( token / quoted-string )  (RFC 9110 §11.2)
_PARAM = re.compile(r'\s*([!#$%&\'*+.^_`|~0-9A-Za-z-]+)\s*=\s*'
                    r'("(?:[^"\\]|\\.)*"|[^\s,]*)\s*(?:,|$)')
_SCHEME = re.compile(r'\s*([!#$%&\'*+.^_`|~0-9A-Za-z-]+)(?:\s+|$)')


@dataclass(frozen=True, slots=True)
class Challenge:
    """The Bearer challenge's parameters that steer a sign-in."""

    resource_metadata: str | None = None
    scope: tuple[str, ...] | None = None
    """None: the server named no scope (then `scopes_supported` decides)."""
    error: str | None = None

    @property
    def insufficient_scope(self) -> bool:
        return self.error == "insufficient_scope"


def parse_challenge(header: str | None) -> Challenge | None:
    """The Bearer challenge in a `WWW-Authenticate` value, None when there is none."""
    if not header:
        return None
    params = _bearer_params(header)
    if params is None:
        return None
    scope = params.get("scope")
    return Challenge(resource_metadata=params.get("resource_metadata") or None,
                     scope=tuple(scope.split()) if scope is not None else None,
                     error=params.get("error") or None)


def _bearer_params(header: str) -> dict[str, str] | None:
    """The parameters of the Bearer scheme among the header's challenges (case-insensitive
    scheme and names, quoted values unescaped)."""
    at, found = 0, None
    while at < len(header):
        scheme = _SCHEME.match(header, at)
        if scheme is None:
            break
        at = scheme.end()
        params: dict[str, str] = {}
        while (param := _PARAM.match(header, at)) is not None and param.end() > at:
            name, value = param.group(1).lower(), param.group(2)
            if value.startswith('"'):
                value = re.sub(r'\\(.)', r'\1', value[1:-1])
            params.setdefault(name, value)
            at = param.end()
        if scheme.group(1).lower() == "bearer" and found is None:
            found = params
        at = _skip_commas(header, at)
    return found


def _skip_commas(header: str, at: int) -> int:
    while at < len(header) and header[at] in ", ":
        at += 1
    return at
