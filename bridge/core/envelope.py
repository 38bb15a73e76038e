"""Requests for each era: the modern per-request `_meta` envelope stamped on, or stripped off
with the rest a legacy revision lacks.

Must not decide when to stamp or strip: callers (the mode handlers) decide; this only edits,
by shallow copy, so fields the bridge does not know pass through unchanged.
"""

from __future__ import annotations

from bridge.core.codec import Message
from bridge.core.eras import (
    ENVELOPE_KEYS,
    LATEST_LEGACY_VERSION,
    META_CLIENT_CAPABILITIES,
    META_CLIENT_INFO,
    META_LOG_LEVEL,
    META_PROTOCOL_VERSION,
    MODERN_PROTOCOL_VERSION,
    Era,
)
from bridge.core.jsonrpc import WireId
from bridge.core.record import record

# mrtr.mdx §Client Requirements: retries carry these beside the method's own params.
MRTR_PARAMS = ("inputResponses", "requestState")
# The `_meta` keys a legacy peer does not get when the bridge gives it its own progress token.
_REPLACED = ENVELOPE_KEYS | {"progressToken"}


@record(frozen=True)
class EnvelopeStamp:
    """The modern envelope one session stamps on its requests, built once: the protocol
    version, capabilities, client info and log level a legacy session sends are the same for
    each of its requests until the session changes them (basic/index.mdx §_meta "Per-request
    protocol fields"), so each request costs one copy of `members`, not a `_meta` built key by
    key. Build one with `envelope_stamp`."""

    members: Message  # the envelope's `_meta` members, in the order they are stamped
    keeps_level: bool  # whether a log level is stamped; if not, a client's own one goes

    def stamp(self, params: Message | None) -> Message:
        """`params` (created if absent, never changed) with a `_meta` that carries the envelope.

        The client's own `_meta` keys (progressToken, trace context) are kept; envelope keys it
        sent are replaced, since the bridge is the modern client here (basic/index.mdx §_meta).
        """
        if params is None:
            return {"_meta": self.members.copy()}
        new_params = params.copy()
        old_meta = params.get("_meta")
        if isinstance(old_meta, dict):  # an envelope key the client sent keeps its place
            meta = {**old_meta, **self.members}
            if not self.keeps_level:
                meta.pop(META_LOG_LEVEL, None)
            new_params["_meta"] = meta
        else:  # most legacy requests carry no `_meta`
            new_params["_meta"] = self.members.copy()
        return new_params


def envelope_stamp(
    *,
    client_capabilities: Message,
    client_info: Message | None = None,
    log_level: str | None = None,
    version: str = MODERN_PROTOCOL_VERSION,
) -> EnvelopeStamp:
    """The envelope of requests from a client with these capabilities, info and log level."""
    members: Message = {META_PROTOCOL_VERSION: version,
                        META_CLIENT_CAPABILITIES: client_capabilities}
    if client_info is not None:
        members[META_CLIENT_INFO] = client_info
    if log_level is not None:
        members[META_LOG_LEVEL] = log_level
    return EnvelopeStamp(members, log_level is not None)


def stamp_envelope(
    params: Message | None,
    *,
    client_capabilities: Message,
    client_info: Message | None = None,
    log_level: str | None = None,
    version: str = MODERN_PROTOCOL_VERSION,
) -> Message:
    """`params` (created if absent) with a `_meta` that carries the modern envelope, as
    `EnvelopeStamp.stamp` gives it (for a request whose session keeps no stamp)."""
    return envelope_stamp(client_capabilities=client_capabilities, client_info=client_info,
                          log_level=log_level, version=version).stamp(params)


def legacy_context(
    params: Message | None,
    *,
    method: str | None = None,
    version: str = LATEST_LEGACY_VERSION,
    progress_token: str | int | None = None,
) -> Message | None:
    """Request `params` made fit for a legacy peer that negotiated revision `version`.

    The modern envelope and the MRTR fields go; `progress_token`, if given, replaces the
    request's own `_meta.progressToken` (the bridge's token stands for the client's, §9.3);
    a `completion/complete` (`method`) loses the `context` argument 2025-06-18 added.
    One copy of params and one of `_meta`, whatever changes: this runs on every request.
    """
    if params is None:
        return None if progress_token is None else {"_meta": {"progressToken": progress_token}}
    new_params = params.copy()
    if "requestState" in new_params or "inputResponses" in new_params:  # only MRTR retries
        for key in MRTR_PARAMS:
            new_params.pop(key, None)
    meta = new_params.get("_meta")
    if isinstance(meta, dict):  # a modern request always has one
        dropped = ENVELOPE_KEYS if progress_token is None else _REPLACED
        if dropped.issuperset(meta):  # most often the envelope alone: no copy to build
            del new_params["_meta"]
        else:
            new_params["_meta"] = {k: v for k, v in meta.items() if k not in dropped}
    if progress_token is not None:
        meta = new_params.get("_meta")
        if isinstance(meta, dict):
            meta["progressToken"] = progress_token  # the copy made above
        else:
            new_params["_meta"] = {"progressToken": progress_token}
    if method == "completion/complete" and version < "2025-06-18":
        new_params.pop("context", None)  # TRANSLATION.md §10.2
    return new_params


def build_request(
    id: WireId,
    method: str,
    params: Message | None,
    *,
    era: Era,
    client_info: Message | None = None,
    client_capabilities: Message | None = None,
    log_level: str | None = None,
    version: str = LATEST_LEGACY_VERSION,
    progress_token: str | int | None = None,
) -> Message:
    """A request that a server will classify into `era`; `params` are not changed.

    modern: `params._meta` carries protocol version, capabilities ({} if none given), client
    info and log level (`stamp_envelope`). legacy: params as `legacy_context` makes them for
    revision `version`, with `progress_token` in place of the request's own.
    """
    if era == "modern":
        new_params: Message | None = stamp_envelope(
            params,
            client_capabilities=client_capabilities or {},
            client_info=client_info,
            log_level=log_level,
        )
    else:
        new_params = legacy_context(params, method=method, version=version,
                                    progress_token=progress_token)
    if new_params is None:
        return {"jsonrpc": "2.0", "id": id, "method": method}
    return {"jsonrpc": "2.0", "id": id, "method": method, "params": new_params}
