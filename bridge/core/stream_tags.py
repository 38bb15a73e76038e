"""The tag a 2026-07-28 listen stream's notifications carry: `_meta`'s subscriptionId, naming
the `subscriptions/listen` request whose stream they go on (§Receiving Notifications), put on
for a modern client and taken off for a legacy one or for another stream.

Must not decide which stream a notification goes on (each mode's listen module does).
"""

from __future__ import annotations

from bridge.core.codec import Message
from bridge.core.eras import META_SUBSCRIPTION_ID
from bridge.core.jsonrpc import WireId


def tagged(params: Message | None, subscription_id: WireId) -> Message:
    """`params` tagged with the stream they go on (basic/index.mdx: a MUST on streams)."""
    params = params or {}
    meta = params.get("_meta")
    return {**params, "_meta": {**(meta if isinstance(meta, dict) else {}),
                                META_SUBSCRIPTION_ID: subscription_id}}


def untagged(params: Message) -> Message | None:
    """Notification params without the stream tag (and without a `_meta` it emptied)."""
    meta = params.get("_meta")
    out = {key: value for key, value in params.items() if key != "_meta"}
    if isinstance(meta, dict):
        kept = {key: value for key, value in meta.items() if key != META_SUBSCRIPTION_ID}
        if kept:
            out["_meta"] = kept
    return out or None
