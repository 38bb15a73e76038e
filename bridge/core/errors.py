"""Every error the bridge answers with itself, as opposed to one a peer sent and it relays.

Must not send: each builder returns an `OwnError`, and `Context.fail(side, id, error)` answers
with it, so a reader finds every word the bridge says about itself here, and what says it.
Codes: JSON-RPC 2.0 §5.1 and the revision's `schema.ts` (`eras.py` names them).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from bridge.core.eras import INTERNAL_ERROR, INVALID_PARAMS, INVALID_REQUEST, METHOD_NOT_FOUND

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


# Mode A ----------------------------------------------------------------------------------
# The legacy server a legacy client sees (legacy_server_modern_client/).


def tasks_not_bridged(method: str) -> OwnError:
    """A `tasks/…` request: tasks are not bridged and never advertised (TRANSLATION.md §4.3)."""
    return OwnError(METHOD_NOT_FOUND, f"Method not found: {method}")


def already_initialized() -> OwnError:
    """A second `initialize` (lifecycle.mdx: a session is initialized once)."""
    return OwnError(INVALID_REQUEST, "Already initialized")


def unservable(message: str, data: dict[str, Any]) -> OwnError:
    """An `initialize` the bridge cannot serve: the server speaks no revision it bridges."""
    return OwnError(INVALID_PARAMS, message, data)


def invalid_log_level(level: Any) -> OwnError:
    """`logging/setLevel` with a level logging.mdx does not name."""
    return OwnError(INVALID_PARAMS, f"Invalid log level: {level!r}")


def no_requests_on_stdio() -> OwnError:
    """A modern server's request: stdio.mdx says it "MUST NOT write JSON-RPC requests"."""
    return OwnError(METHOD_NOT_FOUND, "Modern servers must not send requests on stdio")


def result_type_not_carried(method: str, kind: Any) -> OwnError:
    """A result whose resultType the method cannot carry: input_required only answers
    tools/call, resources/read and prompts/get (mrtr.mdx)."""
    return OwnError(INTERNAL_ERROR, f"mcp-rosetta: the server answered {method} with "
                                    f"resultType {kind!r}, which this method cannot carry")


def version_withdrawn(version: str, supported: list[str]) -> OwnError:
    """The server answered -32022 mid-session and no longer lists the revision spoken."""
    return OwnError(INTERNAL_ERROR, f"mcp-rosetta: the server no longer supports {version}; "
                                    f"it supports {supported}", {"supported": supported})


def initialize_lost(reason: str, data: dict[str, Any] | None) -> OwnError:
    """An `initialize` still waiting on the session stream when the server was lost."""
    return OwnError(INTERNAL_ERROR, reason, data)


def input_loop_failed(problem: str, data: Any = None) -> OwnError:
    """A call's input loop ended without a result: `problem` says why (TRANSLATION.md §5.7);
    `data`, the client's own error when one of its answers ended it."""
    return OwnError(INTERNAL_ERROR, f"mcp-rosetta: {problem}",
                    data if data is not None else {"source": "mcp-rosetta"})


def subscriptions_not_offered() -> OwnError:
    """`resources/subscribe` to a server whose streams grant no resource subscriptions."""
    return OwnError(METHOD_NOT_FOUND,
                    "Method not found: the server offers no resource subscriptions")


def uri_not_string() -> OwnError:
    return OwnError(INVALID_PARAMS, "uri must be a string")


def updates_not_offered(uri: str | None) -> OwnError:
    """The server acknowledged a resource's listen stream without that resource."""
    return OwnError(INVALID_PARAMS, f"The server does not offer updates for {uri}")


def unsubscribed(uri: str | None) -> OwnError:
    """A `resources/subscribe` still waiting when the client unsubscribed from its URI."""
    return OwnError(INVALID_PARAMS, f"Unsubscribed from {uri}")


def subscription_refused(error: dict[str, Any]) -> OwnError:
    """The server refused a resource's listen stream: its code and message, for the
    `resources/subscribe` that waits on it."""
    return OwnError(error.get("code", INVALID_PARAMS),
                    str(error.get("message", "subscription refused")))


def subscription_unacknowledged(uri: str | None) -> OwnError:
    """A first subscription's stream got no acknowledgement within probe_timeout."""
    return OwnError(INTERNAL_ERROR, f"mcp-rosetta: the server did not acknowledge the "
                                    f"subscription to {uri}")


def subscription_lost(reason: str, data: dict[str, Any] | None) -> OwnError:
    """A `resources/subscribe` still waiting for its acknowledgement when the server was lost."""
    return OwnError(INTERNAL_ERROR, reason, data if data is not None else SOURCE)
