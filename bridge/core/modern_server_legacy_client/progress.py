"""Mode B's progress: the legacy server is given a token of the bridge's, and each of its
notifications is re-pointed at the client request the work is for now (§9.3).

Must not decide whose work a token is: the owner of each token says which client request it
serves at this moment (a parked call serves none, so its progress is dropped).
"""

from __future__ import annotations

from typing import Protocol

from bridge.core.codec import Message
from bridge.core.context import Context
from bridge.core.events import CLIENT
from bridge.core.jsonrpc import WireId, notification
from bridge.core.modern_server_legacy_client.request_meta import RequestMeta


class WorkForClient(Protocol):
    """Work the legacy server does for the modern client: a forwarded request or a call."""

    @property
    def meta(self) -> RequestMeta:
        """The envelope of the client request it serves now (progressToken, logLevel)."""

    @property
    def serving(self) -> WireId | None:
        """The id of the client request it serves now, as the client spelled it; None while
        no request waits for it (a parked call)."""


class ProgressRelay:
    """The bridge's progress tokens at the legacy server, each with the work it stands for."""

    __slots__ = ("ctx", "owners")

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.owners: dict[str, WorkForClient] = {}

    def track(self, owner: WorkForClient) -> str:
        token = self.ctx.mint_id()
        self.owners[token] = owner
        return token

    def untrack(self, token: str | None) -> None:
        if token is not None:
            self.owners.pop(token, None)

    def relay(self, params: Message) -> None:
        """A legacy notifications/progress: sent on as the progress of the request the work
        serves now, with that request's own token; dropped if it serves none."""
        token = params.get("progressToken")
        owner = self.owners.get(token) if isinstance(token, str) else None
        request = owner.serving if owner is not None else None
        target = owner.meta.progress_token if owner is not None and request is not None else None
        if target is None:
            self.ctx.debug("progress.dropped", token=token)
            return
        self.ctx.send(CLIENT, notification("notifications/progress",
                                           {**params, "progressToken": target}),
                      request=request)
