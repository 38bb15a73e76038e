"""Mode A's input loop: a modern `input_required` result becomes legacy server requests.

Must not touch calls that never ask for input: those stay plain forwards, and a loop is
only built on the first `input_required`. Rules: mrtr.mdx; TRANSLATION.md §5.5-5.7, §5.9.
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING, Any

from bridge.core.capabilities import declares, input_capability
from bridge.core.eras import INTERNAL_ERROR
from bridge.core.events import CLIENT, SERVER
from bridge.core.legacy_server_modern_client.legacy_inputs import (
    elicitation_for,
    for_revision,
    unfit,
)
from bridge.core.normalize import normalize_result
from bridge.core.router import SOURCE, Pending

if TYPE_CHECKING:
    from bridge.core.legacy_server_modern_client.mode import ModeA

Message = dict[str, Any]

# mrtr.mdx §Supported Requests: the only requests that may answer input_required.
ELIGIBLE = frozenset({"tools/call", "resources/read", "prompts/get"})
INPUT_METHODS = frozenset({"elicitation/create", "sampling/createMessage", "roots/list"})


class Call:
    """One legacy call in its loop: the original request, and what this round still needs."""

    __slots__ = ("answers", "asked", "backoff", "key", "last_urls", "method", "origin_id",
                 "params", "pending_urls", "request_state", "round", "server_id", "started",
                 "token", "waiting_elicitations")

    def __init__(self, key: str, row: Pending, started: float) -> None:
        params, token, _ = row.data
        self.key = key
        self.origin_id = row.origin_id
        self.method = row.method
        self.params: Message = params if isinstance(params, dict) else {}
        self.token = token
        self.started = started
        self.round = 0
        self.backoff = 0
        self.server_id: str | None = None
        self.request_state: str | None = None
        self.answers: Message = {}
        self.asked: dict[str, str] = {}  # bridge id toward the client -> input key
        self.waiting_elicitations = 0
        # url -> the answer that accepted it, for URLs accepted in the previous round only
        self.last_urls: dict[str, Message] = {}
        self.pending_urls: dict[str, str] = {}  # input key -> url, for this round


class InputLoop:
    """Every call of the session that is between rounds, keyed by a bridge-minted key."""

    def __init__(self, mode: ModeA) -> None:
        self.mode = mode
        self.ctx = mode.ctx
        self.router = mode.router
        self.calls: dict[str, Call] = {}
        self.roots_cache: Message | None = None
        # Counts the client's roots/list_changed notices: an answer to a question asked
        # before the latest notice may predate the change, so it is not cached.
        self.roots_epoch = 0
        # Elicitations reach the user one at a time, whichever call asks (a dialog each).
        self.elicitations: deque[tuple[Call, str, Message]] = deque()
        self.elicitation_open = False

    # Rounds -------------------------------------------------------------------------------

    def begin(self, row: Pending, result: Message) -> None:
        """The first input_required for a forwarded call: from now on it is a loop."""
        call = Call(self.ctx.mint_id(), row, self.ctx.now)
        self.calls[call.key] = call
        self.ctx.schedule(("mrtr", "deadline", call.key), self.ctx.config.mrtr_timeout)
        self._on_input_required(call, result)

    def on_round_answer(self, row: Pending, message: Message) -> None:
        call: Call = row.data
        call.server_id = None
        if call.key not in self.calls:
            return  # cancelled or failed meanwhile: the client hears nothing more
        if "error" in message:
            self._finish(call)
            self.mode.relay_error(Pending(call.origin_id, call.method, "round", None), message)
            return
        result = message["result"]
        kind = result.get("resultType", "complete")
        if kind == "input_required":
            self._on_input_required(call, result)
        elif kind == "complete":
            self._finish(call)
            self.ctx.reply(CLIENT, call.origin_id, normalize_result(
                result, to_era="legacy", method=call.method, version=self.mode.version))
        else:
            self._fail(call, f"the server answered with unknown resultType {kind!r}")

    def _on_input_required(self, call: Call, result: Message) -> None:
        call.round += 1
        requests = result.get("inputRequests")
        state = result.get("requestState")
        problem = self._check_round(call, requests, state)
        if problem is not None:
            self._fail(call, problem)
            return
        call.request_state = state
        self.ctx.log("info", "mrtr.round", client_id=call.origin_id, round=call.round,
                     keys=sorted(requests or ()), method=call.method,
                     elapsed_ms=round((self.ctx.now - call.started) * 1000))
        call.answers = {}
        call.pending_urls = {}
        # §5.9 spares the user a URL only in consecutive rounds: what the round before this
        # one accepted is consulted, then forgotten unless this round asks for it again.
        previous, call.last_urls = call.last_urls, {}
        if not requests:
            self._retry_later(call)  # requestState only: load shedding, retry with back-off
            return
        repeated = False
        for key, request in requests.items():
            repeated |= self._dispatch(call, key, request, previous)
        self._pump_elicitations()
        if not call.asked and not call.waiting_elicitations:
            self._retry_later(call) if repeated else self._send_round(call)

    def _check_round(self, call: Call, requests: Any, state: Any) -> str | None:
        config = self.ctx.config
        if call.round > config.mrtr_max_rounds:
            return f"the server asked for input more than {config.mrtr_max_rounds} times"
        if state is not None and not isinstance(state, str):
            return "requestState must be a string"
        if requests is None:
            if state is None:
                return "input_required with neither inputRequests nor requestState"
            return None
        if not isinstance(requests, dict):
            return "inputRequests must be an object"
        if len(requests) > config.mrtr_max_requests:
            return (f"the server asked for {len(requests)} inputs in one round "
                    f"(limit {config.mrtr_max_requests})")
        for key, request in requests.items():
            problem = self._gate(request)
            if problem is not None:
                return f"input request {key!r}: {problem}"
        return None

    def _gate(self, request: Any) -> str | None:
        """Why the legacy client cannot be asked this, if it cannot (mrtr.mdx, §5.6)."""
        method = request.get("method") if isinstance(request, dict) else None
        if not isinstance(method, str) or method not in INPUT_METHODS:
            return f"{method!r} is not an input request"
        params = request.get("params")
        if params is not None and not isinstance(params, dict):
            return "params must be an object"
        needed = input_capability(method, params)
        if not declares(self.mode.client_caps_legacy, needed):
            return (f"the server asked for {method} needing capability {'.'.join(needed)}, "
                    f"which the client did not declare (a server bug)")
        return unfit(method, params or {}, self.mode.version)

    def _dispatch(self, call: Call, key: str, request: Message,
                  previous: dict[str, Message]) -> bool:
        """Ask the client for one input, or answer it from what is known. True if repeated."""
        method = request["method"]
        params = dict(request.get("params") or {})
        if method == "roots/list" and self.roots_cache is not None:
            call.answers[key] = self.roots_cache
            return False
        if method == "elicitation/create":
            url = params.get("url") if params.get("mode") == "url" else None
            url = url if isinstance(url, str) else None
            if url is not None and url in previous:
                # §5.9: the user already consented to this URL last round; do not ask again.
                call.answers[key] = call.last_urls[url] = previous[url]
                return True
            if url is not None:
                call.pending_urls[key] = url
            call.waiting_elicitations += 1
            self.elicitations.append((call, key, self._legacy_elicitation(params)))
            return False
        self._ask(call, key, method, for_revision(method, params, self.mode.version))
        return False

    def _legacy_elicitation(self, params: Message) -> Message:
        params = elicitation_for(params, self.mode.version)
        if params.get("mode") == "url":  # only a 2025-11-25 client can have declared url
            params["elicitationId"] = self.ctx.mint_id()  # required by 2025-11-25, §5.9
        return params

    def _ask(self, call: Call, key: str, method: str, params: Message) -> None:
        bid = self.router.issue(CLIENT, method, params, "input",
                                data=(call, key, self.roots_epoch))
        call.asked[bid] = key

    def _pump_elicitations(self) -> None:
        while not self.elicitation_open and self.elicitations:
            call, key, params = self.elicitations.popleft()
            if call.key in self.calls:
                self.elicitation_open = True
                self._ask(call, key, "elicitation/create", params)

    # Answers from the client --------------------------------------------------------------

    def on_client_answer(self, row: Pending, message: Message) -> None:
        call, key, epoch = row.data
        if row.method == "elicitation/create":
            self.elicitation_open = False
            call.waiting_elicitations -= 1
        call.asked.pop(message["id"], None)
        if call.key not in self.calls:
            self._pump_elicitations()
            return
        if "error" in message:
            self._abort_on_client_error(call, key, row.method, message["error"])
        else:
            self._record(call, key, row.method, message["result"], epoch)
        self._pump_elicitations()

    def _record(self, call: Call, key: str, method: str, result: Any, epoch: int) -> None:
        call.answers[key] = result
        if method == "roots/list" and epoch == self.roots_epoch \
                and _declares_roots_changes(self.mode.client_caps_legacy):
            self.roots_cache = result
        url = call.pending_urls.get(key)
        if url is not None and isinstance(result, dict) and result.get("action") == "accept":
            # Added, not replaced: a round may carry several URLs, each consented to.
            call.last_urls[url] = result
        if not call.asked and not call.waiting_elicitations:
            self._send_round(call)

    def _abort_on_client_error(self, call: Call, key: str, method: str, error: Any) -> None:
        # §11.3: inputResponses has no error channel, and retrying without the key would only
        # make the server ask again; the call fails with the client's reason instead.
        reason = error.get("message") if isinstance(error, dict) else None
        self._fail(call, f"input request {key!r} ({method}) failed: {reason}",
                   {"key": key, "method": method, "error": error})

    def roots_changed(self) -> None:
        self.roots_cache = None
        self.roots_epoch += 1

    def _send_round(self, call: Call) -> None:
        params = dict(call.params)
        if call.answers:
            params["inputResponses"] = call.answers
        if call.request_state is not None:  # echoed byte for byte, and only if sent (§11.2)
            params["requestState"] = call.request_state
        request = self.mode.modern_request(call.origin_id, call.method, params)
        call.server_id = self.router.forward(SERVER, request, "round", data=call)

    def _retry_later(self, call: Call) -> None:
        first, largest = self.ctx.config.mrtr_backoff
        delay = min(largest, first * 2**call.backoff)
        call.backoff += 1
        self.ctx.schedule(("mrtr", "retry", call.key), delay)

    # Ending -------------------------------------------------------------------------------

    def cancel(self, origin_id: Any) -> bool:
        """The client cancelled a call: stop its loop wherever it waits. False if not ours."""
        call = self._find(origin_id)
        if call is None:
            return False
        if call.server_id is not None:
            self.router.cancel(SERVER, call.server_id, "cancelled by the client")
        self._finish(call)  # first: withdrawing pumps the elicitation queue (see there)
        self._withdraw_questions(call)
        self.ctx.log("info", "mrtr.cancelled", client_id=origin_id, round=call.round)
        return True

    def _find(self, origin_id: Any) -> Call | None:
        kind = type(origin_id)
        for call in self.calls.values():
            if type(call.origin_id) is kind and call.origin_id == origin_id:
                return call
        return None

    def _withdraw_questions(self, call: Call) -> None:
        """Cancel what the client is still asked for an ended call, and free the dialog.

        The call must already be out of `self.calls`: the pump below hands the dialog to the
        next queued elicitation, and must skip this call's own queued ones, which would
        otherwise reach the user after the call was cancelled or failed.
        """
        # cancellation.mdx (legacy): the bridge, as server, may cancel its own requests.
        for bid in list(call.asked):
            row = self.router.cancel(CLIENT, bid, "the call was cancelled")
            if row is not None and row.method == "elicitation/create":
                self.elicitation_open = False
        call.asked.clear()
        self._pump_elicitations()

    def on_timer(self, key: tuple[str, str, str]) -> None:
        call = self.calls.get(key[2])
        if call is None:
            return
        if key[1] == "retry":
            self._send_round(call)
        else:
            if call.server_id is not None:
                self.router.cancel(SERVER, call.server_id, "input loop timed out")
            self._fail(call, f"the input loop took longer than {self.ctx.config.mrtr_timeout:g} s")

    def _fail(self, call: Call, problem: str, data: Any = None) -> None:
        self._finish(call)  # first: withdrawing pumps the elicitation queue (see there)
        self._withdraw_questions(call)
        self.ctx.log("warning", "mrtr.failed", client_id=call.origin_id, problem=problem)
        self.ctx.reply_error(CLIENT, call.origin_id, INTERNAL_ERROR, f"mcp-rosetta: {problem}",
                             data if data is not None else {"source": "mcp-rosetta"})

    def _finish(self, call: Call) -> None:
        self.calls.pop(call.key, None)
        self.ctx.cancel_timer(("mrtr", "deadline", call.key))
        self.ctx.cancel_timer(("mrtr", "retry", call.key))
        self.mode.forget_progress_token(call.token)

    def fail_all(self, reason: str, data: Message | None = None) -> None:
        """Every call in its loop gets an error; what the client is still asked is withdrawn."""
        calls = list(self.calls.values())
        for call in calls:
            self._finish(call)
            self.ctx.reply_error(CLIENT, call.origin_id, INTERNAL_ERROR, reason,
                                 {**(data or SOURCE), "method": call.method})
        for call in calls:
            self._withdraw_questions(call)


def _declares_roots_changes(caps: Message) -> bool:
    roots = caps.get("roots")
    return isinstance(roots, dict) and roots.get("listChanged") is True
