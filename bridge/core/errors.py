"""Every error the bridge answers with itself, as opposed to one a peer sent and it relays.

Must not send: each builder returns an `OwnError`, and `Context.fail(side, id, error)` answers
with it, so a reader finds every word the bridge says about itself here, and what says it.
Codes: JSON-RPC 2.0 §5.1 and the revision's `schema.ts` (`eras.py` names them).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from bridge.core.eras import INTERNAL_ERROR

# The `data` of an error the bridge makes itself (TRANSLATION.md §3.4).
SOURCE: dict[str, Any] = {"source": "mcp-rosetta"}


@dataclass(frozen=True, slots=True)
class OwnError:
    """A JSON-RPC error object of the bridge's own making."""

    code: int
    message: str
    data: Any = None


def server_lost(reason: str, data: dict[str, Any] | None, method: str) -> OwnError:
    """A client request the server took and never answered: it crashed, or the bridge stops.
    `reason` says which (restarts.Outage); `data` (default: the bridge as the source) gains
    the method."""
    return OwnError(INTERNAL_ERROR, reason, {**(data if data is not None else SOURCE),
                                             "method": method})


def timed_out(seconds: float, method: str) -> OwnError:
    """A client request request_timeout ended before the server answered."""
    return OwnError(INTERNAL_ERROR,
                    f"mcp-rosetta: no answer from the server within {seconds:g} s",
                    {"source": "mcp-rosetta", "method": method})


# Relay and lifecycle ----------------------------------------------------------------------


def unfit_for_client(version: str, problem: str) -> OwnError:
    """Mode P behind a revision gap: a server request the client's revision has no form for."""
    return OwnError(INTERNAL_ERROR, f"mcp-rosetta: the client speaks {version}: {problem}",
                    SOURCE)
