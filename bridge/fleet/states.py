"""A requestState in a fleet: the state a node's server (or core) gave a modern client, in an
envelope that names the node holding the call and that node's life, signed with the fleet's
key, so a retry that the balancer hands to any node finds the call, or is told it ended.

Must not read the key, the node's address or its life (the shell gives them: the life is
drawn once per process) nor move the retry (the shell forwards it, unwraps it, or answers).

mrtr.mdx §Basic Workflow: a server answers a call with an `InputRequiredResult` whose
`requestState` is "an opaque string meaningful only to the server", which the client MUST
echo back exactly on its retry (§Client Requirements); the server may keep the call's state
keyed by it (§Server Requirements: single use is enforced server-side). Behind a fleet the
server is one node's process: only it can open its state, so the front wraps every such
state and opens the envelope on the retry, before any server sees it. The client echoes the
envelope as the opaque string it is.

Format: PREFIX + base64url(node address) + "." + life + "." + tag + "." + the state as the
server gave it (last, so it may hold any character). The tag, 16 bytes of HMAC-SHA256 under
the fleet's states key, covers the node, its life, the credential the state was issued to
(mrtr.mdx §Server Requirements 5: bind the state to the authenticated principal) and the
state: an envelope altered, of another fleet, or presented with another credential is
refused as tampered with. One whose node is this node but whose life is not this process's
was issued before the node restarted: the call ended with that process.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
from dataclasses import dataclass
from enum import Enum
from typing import Any

PREFIX = "rf1."
SEPARATOR = "."
TAG_BYTES = 16
NO_CREDENTIAL = "-"
INPUT_REQUIRED = "input_required"


@dataclass(frozen=True, slots=True)
class Here:
    """The call is held by this node in this life: the state as its server gave it."""

    state: str


@dataclass(frozen=True, slots=True)
class Elsewhere:
    """The call is held by the node at address `node`: the retry goes there."""

    node: str


class Lost(Enum):
    """Why an envelope resumes no call (the value: the `reason` the client is given)."""

    TAMPERED = "tampered"
    """Not signed by this fleet, altered, or issued to another credential."""
    RESTARTED = "ended"
    """Issued by this node in an earlier life: the call ended when it restarted."""


Place = Here | Elsewhere | Lost


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _tag(key: bytes, node: str, life: str, credential: str | None, state: str) -> str:
    fields = (node, life, credential or NO_CREDENTIAL, state)
    message = "\n".join(f"{len(part)}:{part}" for part in fields)  # lengths keep parts apart
    return _b64(hmac.digest(key, message.encode("utf-8", "surrogatepass"),
                            hashlib.sha256)[:TAG_BYTES])


def wrap(key: bytes, node: str, life: str, credential: str | None, state: str) -> str:
    """`state`, issued to `credential` by the node at address `node` in its life `life`."""
    return SEPARATOR.join((PREFIX + _b64(node.encode("utf-8")), life,
                           _tag(key, node, life, credential, state), state))


def place(key: bytes, value: str, credential: str | None, node: str,
          life: str) -> Place | None:
    """Where the call an envelope resumes is held, seen from the node at address `node` in
    its life `life` for a retry of `credential`; or why it is held nowhere. None: `value`
    is no envelope (a state from outside a fleet: it is handed on as it is)."""
    if not value.startswith(PREFIX):
        return None
    parts = value[len(PREFIX):].split(SEPARATOR, 3)
    if len(parts) != 4:
        return Lost.TAMPERED
    name, given_life, tag, state = parts
    try:
        holder = base64.b64decode(name + "=" * (-len(name) % 4), altchars=b"-_",
                                  validate=True).decode("utf-8")
    except (binascii.Error, ValueError):
        return Lost.TAMPERED
    if not hmac.compare_digest(tag.encode("utf-8", "surrogatepass"), _tag(
            key, holder, given_life, credential, state).encode("ascii")):
        return Lost.TAMPERED
    if holder != node:
        return Elsewhere(holder)
    return Here(state) if given_life == life else Lost.RESTARTED


# Where a state is in a message -------------------------------------------------------------

def issued(message: dict[str, Any]) -> str | None:
    """The requestState an answer gives the client: that of an `InputRequiredResult`
    (mrtr.mdx §InputRequiredResult); None for any other answer."""
    result = message.get("result")
    if type(result) is not dict or result.get("resultType") != INPUT_REQUIRED:
        return None
    state = result.get("requestState")
    return state if type(state) is str else None


def reissued(message: dict[str, Any], state: str) -> dict[str, Any]:
    """The answer `message` giving `state` in place of its own (a copy: the original may be
    held elsewhere, as the core's record of what it sent)."""
    return {**message, "result": {**message["result"], "requestState": state}}


def echoed(message: dict[str, Any]) -> str | None:
    """The requestState a client's request echoes (its retry); None for none."""
    params = message.get("params")
    state = params.get("requestState") if type(params) is dict else None
    return state if type(state) is str else None


def unwrapped(message: dict[str, Any], state: str) -> None:
    """`message` (the front's own decoding of a request) carrying `state` in place of the
    envelope it echoed: what the server gets is the state it gave."""
    message["params"]["requestState"] = state
