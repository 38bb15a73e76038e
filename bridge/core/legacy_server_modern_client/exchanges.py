"""Mode A's exchanges: each request it sends the modern server, and what its answer means.

Must not relay anything itself: an answer goes back to the mode (`DowngradeHost`), which
downgrades it for the legacy client or begins an input loop (mrtr.mdx).
"""

from __future__ import annotations

from typing import Protocol

from bridge.core import errors
from bridge.core.codec import Message
from bridge.core.context import Context
from bridge.core.eras import ProgressToken
from bridge.core.events import CLIENT
from bridge.core.exchange import NO_REQUEST, ClientRequest, Exchange
from bridge.core.jsonrpc import WireId
from bridge.core.legacy_server_modern_client.inputs import InputLoop
from bridge.core.methods import ELIGIBLE
from bridge.core.probe import is_discover_result


class DowngradeHost(Protocol):
    """What a request the client sent needs of its mode once the server answers it."""

    ctx: Context
    inputs: InputLoop

    def relay_result(self, call: EnvelopedRequest, message: Message, result: Message,
                     line: bytes | None) -> None: ...
    def relay_error(self, origin: WireId, method: str, message: Message,
                    call: EnvelopedRequest | None = None) -> None: ...
    def forget_progress_token(self, token: ProgressToken | None) -> None: ...
    def rediscovered(self, result: Message) -> None: ...


class EnvelopedRequest(ClientRequest):
    """A client's request forwarded with the envelope stamped on. Its answer is relayed
    downgraded, an error mapped for a legacy client; an `input_required` turns it into an
    input loop (mrtr.mdx). request_timeout or a lost server answer the client with an error.

    `params` are the client's as it sent them (a retry or a round is built from them), `token`
    its progress token, `retried` whether it is already the one retry after -32022.
    """

    __slots__ = ("host", "params", "retried", "token")

    def __init__(self, host: DowngradeHost, origin: WireId, method: str, params: Message | None,
                 token: ProgressToken | None, retried: bool) -> None:
        # Set directly, not through Exchange.__init__: one call less per request forwarded.
        self.origin = origin
        self.method = method
        self.id = ""
        self.sent = 0.0
        self.host = host
        self.params = params
        self.token = token
        self.retried = retried
        self.asking = None

    def answered(self, message: Message, line: bytes | None) -> None:
        host = self.host
        result = message.get("result")
        if result is None:
            self.give_back(host.ctx)
            self._end_progress()
            host.relay_error(self.origin, self.method, message, self)
            return
        kind = result.get("resultType", "complete")
        if kind == "complete":
            if self.asking is not None:  # claimed (observe.py)
                self.count_result(host.ctx)
            if self.token is not None:  # most requests want no progress: no call for them
                host.forget_progress_token(self.token)
            host.relay_result(self, message, result, line)
            return
        self.give_back(host.ctx)
        if kind == "input_required" and self.method in ELIGIBLE:
            # From now on an input loop: progress keeps its high-water mark over its rounds.
            host.inputs.begin(self.origin, self.method, self.params, self.token, result)
        else:
            self._end_progress()
            host.ctx.fail(CLIENT, self.origin, errors.result_type_not_carried(self.method, kind))

    def expired(self, ctx: Context) -> None:
        super().expired(ctx)
        self._end_progress()

    def _end_progress(self) -> None:
        if self.token is not None:  # most requests want no progress
            self.host.forget_progress_token(self.token)


class Rediscovery(Exchange):
    """`server/discover` again, after -32022 mid-session: its result replaces the probe's. No
    client waits on it, and neither a deadline nor a lost server means anything for it."""

    __slots__ = ("host",)

    def __init__(self, host: DowngradeHost) -> None:
        super().__init__(NO_REQUEST, "server/discover")
        self.host = host

    def answered(self, message: Message, line: bytes | None) -> None:
        result = message.get("result")
        if is_discover_result(result):
            self.host.rediscovered(result)


class ProgressWatermark:
    """A live progress token: the request it is for, and the highest progress relayed."""

    __slots__ = ("high", "origin")

    def __init__(self, origin: WireId) -> None:
        self.origin = origin
        self.high = float("-inf")
