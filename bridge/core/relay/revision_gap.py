"""Mode P after a restart: what a legacy server of a newer revision than the client's sends,
shaped for the revision the client negotiated (TRANSLATION.md §11.25).

Must not touch what the client sends, nor anything when the new server's revision is the
client's or older: older revisions' messages are valid in newer ones, since each revision
only added to the last, but for batches, which the bridge never relays as such.
"""

from __future__ import annotations

from bridge.core.codec import Message
from bridge.core.downgrade import progress_for_legacy, result_for_legacy
from bridge.core.eras import LEGACY_PROTOCOL_VERSIONS
from bridge.core.legacy_server_modern_client.legacy_inputs import for_revision, unfit

# Notifications a client of an older revision has no form for, by the revision that added them.
_ADDED = {"notifications/elicitation/complete": "2025-11-25",
          "notifications/tasks/status": "2025-11-25"}


def needs_shaping(client: str, server: object) -> bool:
    """Whether what a server answering `server` to the client's own initialize sends must be
    shaped for the client's revision: a newer one, or one the bridge does not know."""
    if server == client:
        return False
    return not (isinstance(server, str) and server in LEGACY_PROTOCOL_VERSIONS
                and server < client)


class RevisionGap:
    """Shapes the server's messages for the client's revision `version`."""

    __slots__ = ("version",)

    def __init__(self, version: str) -> None:
        self.version = version

    def result(self, method: str, result: object) -> object:
        return result_for_legacy(result, method, self.version) if type(result) is dict \
            else result

    def notification(self, message: Message) -> Message | None:
        """The notification as the client's revision has it; None if it has none."""
        method = message["method"]
        added = _ADDED.get(method)
        if added is not None and self.version < added:
            return None
        params = message.get("params")
        if method == "notifications/progress" and type(params) is dict:
            return {**message, "params": progress_for_legacy(params, self.version)}
        return message

    def request_problem(self, message: Message) -> str | None:
        """Why the client cannot be asked the server's request, or None (legacy_inputs.py)."""
        params = message.get("params")
        return unfit(message["method"], params if type(params) is dict else {}, self.version)

    def request(self, message: Message) -> Message:
        params = message.get("params")
        if type(params) is not dict:
            return message
        return {**message, "params": for_revision(message["method"], params, self.version)}
