"""The front's bearer tokens: where they come from, and whether a request presents one.

Must not decide which paths need a token (`router.py` and `health.py` do) nor word the 401
(`bridge/streamable/replies.py`). Tokens come from `token_file` (one a line; blank lines and
`#` comments ignored) and the environment variable MCP_ROSETTA_TOKEN, never from the command
line (every user of the machine can read a process's arguments). A token is never logged: a
request is known by its `Credential`, a keyed digest that names the token without revealing
it.
"""

from __future__ import annotations

import hmac
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from bridge.errors import ConfigError

TOKEN_ENV = "MCP_ROSETTA_TOKEN"
SCHEME = "bearer"
"""RFC 6750 §2.1: `Authorization: Bearer <token>`; the scheme is case-insensitive (RFC 9110
§11.1)."""
B64TOKEN = re.compile(rb"[A-Za-z0-9\-._~+/]+=*")
"""RFC 6750 §2.1's token68 alphabet: what a header can carry as it is."""


@dataclass(frozen=True, slots=True)
class Credential:
    """Which token a request presented: equal for the same token (across a reload too, so a
    legacy session can be bound to the credential that created it), and safe to log."""

    digest: str


class Denied(Exception):
    """No valid token: `problem` says which part is missing or wrong (never the token)."""

    def __init__(self, problem: str, *, presented: bool) -> None:
        super().__init__(problem)
        self.problem = problem
        self.presented = presented
        """A token was presented (and is wrong): RFC 6750 §3.1 `invalid_token`."""


@dataclass(frozen=True, slots=True)
class Tokens:
    """The tokens in force. `check` compares the presented one against every token with
    `hmac.compare_digest`, whatever matched earlier, so the time taken names none of them.
    Neither field is in the repr: an Access or FrontEndpoint printed names no token."""

    tokens: tuple[bytes, ...] = field(repr=False)
    key: bytes = field(default_factory=lambda: os.urandom(32), repr=False)
    """Of the Credential digests."""

    def __post_init__(self) -> None:
        if not self.tokens:
            raise ValueError("no tokens")

    def with_tokens(self, tokens: tuple[bytes, ...]) -> Tokens:
        """The same digests for the same tokens: a reload keeps every Credential."""
        return Tokens(tokens, self.key)

    def check(self, authorization: str | None) -> Credential:
        """The Credential of a good `Authorization` header; Denied otherwise."""
        if authorization is None:
            raise Denied("no Authorization header: send Authorization: Bearer <token>",
                         presented=False)
        scheme, _, presented = authorization.strip().partition(" ")
        if scheme.lower() != SCHEME or not presented.strip():
            raise Denied("the Authorization header is not Bearer <token>", presented=False)
        given = presented.strip().encode("latin-1")
        matched = False
        for token in self.tokens:
            matched |= hmac.compare_digest(given, token)
        if not matched:
            raise Denied("the bearer token is not one this server accepts", presented=True)
        return Credential(hmac.digest(self.key, given, "sha256").hex()[:16])  # the C path


def parse_tokens(text: bytes) -> tuple[bytes, ...]:
    """A token file's tokens: one a line, blank lines and `#` comments ignored."""
    lines = (line.strip() for line in text.splitlines())
    return tuple(line for line in lines if line and not line.startswith(b"#"))


def _checked(tokens: tuple[bytes, ...], where: str) -> tuple[bytes, ...]:
    if not all(B64TOKEN.fullmatch(token) for token in tokens):
        raise ConfigError(f"{where}: a token holds a character a bearer token cannot (one "
                          "token a line, of letters, digits and -._~+/ with = at the end; "
                          "e.g. from `openssl rand -base64 32`)")
    return tokens


def read_tokens(token_file: str | None, environ: Mapping[str, str] = os.environ,
                ) -> tuple[bytes, ...]:
    """Every token in force: `token_file`'s, then MCP_ROSETTA_TOKEN's; () for none.
    ConfigError naming the file for one that cannot be read or holds none."""
    tokens: tuple[bytes, ...] = ()
    if token_file is not None:
        try:
            with open(token_file, "rb") as file:
                tokens = parse_tokens(file.read())
        except OSError as exc:
            raise ConfigError(f"token_file {token_file}: cannot read it: "
                              f"{exc.strerror or exc}") from None
        if not tokens:
            raise ConfigError(f"token_file {token_file}: no token in it (one a line; blank "
                              "lines and # comments are ignored)")
        _checked(tokens, f"token_file {token_file}")
    env_token = environ.get(TOKEN_ENV, "").strip()
    if env_token:
        tokens = (*tokens, *_checked((env_token.encode("utf-8", "surrogateescape"),), TOKEN_ENV))
    return tokens


def exposed(token_file: str | None) -> str | None:
    """What to do about a token file other users may read or write (its mode grants group or
    others any access), or None: the tokens are the front's only lock."""
    if token_file is None:
        return None
    try:
        mode = os.stat(token_file).st_mode & 0o777
    except OSError:
        return None  # read_tokens has said why already
    if not mode & 0o077:
        return None
    return (f"token_file {token_file} is open to other users (mode {mode:04o}): anyone who "
            f"reads it can use the server; chmod 600 {token_file}")
