"""Mode A's input loop: a modern `input_required` result becomes legacy server requests.

Must not touch calls that never ask for input: those stay plain forwards, and a loop is
only built on the first `input_required`. Rules: mrtr.mdx; TRANSLATION.md §5.5-5.7, §5.9.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import Final, Protocol

from bridge.core import errors
from bridge.core.capabilities import declares, input_capability
from bridge.core.codec import Message
from bridge.core.context import Context
from bridge.core.eras import ProgressToken
from bridge.core.events import CLIENT, SERVER
from bridge.core.exchange import Exchange
from bridge.core.jsonrpc import WireId
from bridge.core.legacy_server_modern_client.legacy_inputs import (
    elicitation_for,
    for_revision,
    unfit,
)
from bridge.core.methods import INPUT_METHODS
from bridge.core.normalize import normalize_result
from bridge.core.router import Router
from bridge.core.states import IllegalMove
from bridge.core.timers import Deadline


class LoopHost(Protocol):
    """What an input loop needs of its mode: the server and the client it speaks between,
    the client's revision and capabilities, and how the mode relays a server's error."""

    ctx: Context
    router: Router
    version: str
    client_caps_legacy: Message

    def modern_request(self, id: WireId, method: str, params: Message | None) -> Message: ...
    def relay_error(self, origin: WireId, method: str, message: Message) -> None: ...
    def forget_progress_token(self, token: ProgressToken | None) -> None: ...


class LoopDue(Enum):
    """The input loop's deadlines, owned by a call's key."""

    DEADLINE = "input loop deadline"  # mrtr_timeout since the first input_required
    RETRY = "input round retry"  # the back-off before a round is sent again


class LoopStep(Enum):
    """Where a call in its input loop waits."""

    ROUND = "round"  # the server has the call (the first request, or a round since)
    ASKING = "asking"  # questions are out to the client (or queued for its one dialog)
    RETRYING = "retrying"  # the back-off before the round is sent again
    ENDED = "ended"  # answered, failed or cancelled: nothing more reaches the client


_LOOP_MOVES: Final[dict[LoopStep, frozenset[LoopStep]]] = {
    # A round whose inputs are all known already (cached, or consented to last round) is
    # sent again at once.
    LoopStep.ROUND: frozenset({LoopStep.ROUND, LoopStep.ASKING, LoopStep.RETRYING,
                               LoopStep.ENDED}),
    LoopStep.ASKING: frozenset({LoopStep.ROUND, LoopStep.ENDED}),
    LoopStep.RETRYING: frozenset({LoopStep.ROUND, LoopStep.ENDED}),
    LoopStep.ENDED: frozenset(),
}


class LoopedCall:
    """One legacy call in its loop: the original request, and what this round still needs."""

    __slots__ = ("answers", "asked", "backoff", "key", "last_urls", "method", "origin",
                 "params", "pending_urls", "request_state", "round", "server_id", "started",
                 "step", "token", "waiting_elicitations")

    def __init__(self, key: str, origin: WireId, method: str, params: Message | None,
                 token: ProgressToken | None, started: float) -> None:
        self.key = key
        self.origin = origin  # the client's id for the call
        self.method = method
        self.params: Message = params if isinstance(params, dict) else {}
        self.token = token  # its progress token, if it asked for progress
        self.started = started
        self.step = LoopStep.ROUND
        self.round = 0
        self.backoff = 0
        self.server_id: str | None = None  # the round in flight, if the loop sent one
        self.request_state: str | None = None
        self.answers: Message = {}
        self.asked: dict[str, str] = {}  # bridge id toward the client -> input key
        self.waiting_elicitations = 0
        # url -> the answer that accepted it, for URLs accepted in the previous round only
        self.last_urls: dict[str, Message] = {}
        self.pending_urls: dict[str, str] = {}  # input key -> url, for this round

    @property
    def ended(self) -> bool:
        return self.step is LoopStep.ENDED

    def move(self, step: LoopStep) -> None:
        if step not in _LOOP_MOVES[self.step]:
            raise IllegalMove(f"input loop {self.key}", self.step, step)
        self.step = step


@dataclass(frozen=True, slots=True)
class QueuedElicitation:
    """An elicitation waiting for the client's one dialog: the call and input key it is for,
    and its params as the client's revision holds them."""

    call: LoopedCall
    key: str
    params: Message


class LoopRound(Exchange):
    """A call sent again with `inputResponses`: the client waits on it (so the drain does),
    and request_timeout ends it as it ends the call's first round (the loop's deadline
    bounds the whole loop); a lost server is answered by the loop (`InputLoop.fail_all`),
    not here."""

    __slots__ = ("call", "loop")

    origin: WireId  # the call's client id

    timed = True
    awaited = True

    def __init__(self, loop: InputLoop, call: LoopedCall) -> None:
        super().__init__(call.origin, call.method)
        self.loop = loop
        self.call = call

    def answered(self, message: Message, line: bytes | None) -> None:
        self.loop.on_round_answer(self.call, message)

    def expired(self, ctx: Context) -> None:
        self.loop.on_round_expired(self.call)


class LoopQuestion(Exchange):
    """A legacy request to the client for one input of a call's round (toward the client:
    no deadline of its own but the loop's; a lost server does not end it, the loop does)."""

    __slots__ = ("call", "epoch", "key", "loop")

    def __init__(self, loop: InputLoop, call: LoopedCall, key: str, method: str,
                 epoch: int) -> None:
        super().__init__(call.origin, method)
        self.loop = loop
        self.call = call
        self.key = key  # the input key the server asked under
        self.epoch = epoch  # the roots epoch it was asked in (a roots/list answer's age)

    def answered(self, message: Message, line: bytes | None) -> None:
        self.loop.on_client_answer(self, message)


class InputLoop:
    """Every call of the session that is between rounds, keyed by a bridge-minted key."""

    def __init__(self, mode: LoopHost) -> None:
        self.mode = mode
        self.ctx = mode.ctx
        self.router = mode.router
        self.calls: dict[str, LoopedCall] = {}
        self.roots_cache: Message | None = None
        # Counts the client's roots/list_changed notices: an answer to a question asked
        # before the latest notice may predate the change, so it is not cached.
        self.roots_epoch = 0
        # Elicitations reach the user one at a time, whichever call asks (a dialog each).
        self.elicitations: deque[QueuedElicitation] = deque()
        self.elicitation_open = False

    def timers(self) -> dict[Enum, Callable[[Deadline], None]]:
        """What each of the loop's deadlines does when it passes."""
        return {LoopDue.DEADLINE: self._on_deadline, LoopDue.RETRY: self._on_retry}

    # Rounds -------------------------------------------------------------------------------

    def begin(self, origin: WireId, method: str, params: Message | None,
              token: ProgressToken | None, result: Message) -> None:
        """The first input_required for a forwarded call: from now on it is a loop."""
        call = LoopedCall(self.ctx.mint_id(), origin, method, params, token, self.ctx.now)
        self.calls[call.key] = call
        self.ctx.schedule(Deadline(call.key, LoopDue.DEADLINE),
                          self.ctx.config.mrtr_timeout)
        self._on_input_required(call, result)

    def on_round_answer(self, call: LoopedCall, message: Message) -> None:
        call.server_id = None
        if call.ended:
            return  # cancelled or failed meanwhile: the client hears nothing more
        if "error" in message:
            self._finish(call)
            self.mode.relay_error(call.origin, call.method, message)
            return
        result = message["result"]
        kind = result.get("resultType", "complete")
        if kind == "input_required":
            self._on_input_required(call, result)
        elif kind == "complete":
            self._finish(call)
            self.ctx.reply(CLIENT, call.origin, normalize_result(
                result, to_era="legacy", method=call.method, version=self.mode.version))
        else:
            self._fail(call, f"the server answered with unknown resultType {kind!r}")

    def on_round_expired(self, call: LoopedCall) -> None:
        """request_timeout passed while the server worked on a round: the router has
        cancelled it, and the client gets the error its first round would have got."""
        call.server_id = None
        if call.ended:
            return
        self._finish(call)  # first: withdrawing pumps the elicitation queue (see there)
        self._withdraw_questions(call)
        self.ctx.fail(CLIENT, call.origin,
                      errors.timed_out(self.ctx.config.request_timeout, call.method))

    def _on_input_required(self, call: LoopedCall, result: Message) -> None:
        call.round += 1
        requests = result.get("inputRequests")
        state = result.get("requestState")
        problem = self._check_round(call, requests, state)
        if problem is not None:
            self._fail(call, problem)
            return
        call.request_state = state
        self.ctx.log("info", "mrtr.round", client_id=call.origin, round=call.round,
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
        if call.asked or call.waiting_elicitations:
            call.move(LoopStep.ASKING)
        elif repeated:
            self._retry_later(call)
        else:
            self._send_round(call)

    def _check_round(self, call: LoopedCall, requests: object, state: object) -> str | None:
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

    def _gate(self, request: object) -> str | None:
        """Why the legacy client cannot be asked this, if it cannot (mrtr.mdx, §5.6)."""
        method = request.get("method") if isinstance(request, dict) else None
        if not isinstance(request, dict) or not isinstance(method, str) \
                or method not in INPUT_METHODS:
            return f"{method!r} is not an input request"
        params = request.get("params")
        if params is not None and not isinstance(params, dict):
            return "params must be an object"
        needed = input_capability(method, params)
        if not declares(self.mode.client_caps_legacy, needed):
            return (f"the server asked for {method} needing capability {'.'.join(needed)}, "
                    f"which the client did not declare (a server bug)")
        return unfit(method, params or {}, self.mode.version)

    def _dispatch(self, call: LoopedCall, key: str, request: Message,
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
            self.elicitations.append(QueuedElicitation(call, key,
                                                       self._legacy_elicitation(params)))
            return False
        self._ask(call, key, method, for_revision(method, params, self.mode.version))
        return False

    def _legacy_elicitation(self, params: Message) -> Message:
        params = elicitation_for(params, self.mode.version)
        if params.get("mode") == "url":  # only a 2025-11-25 client can have declared url
            params["elicitationId"] = self.ctx.mint_id()  # required by 2025-11-25, §5.9
        return params

    def _ask(self, call: LoopedCall, key: str, method: str, params: Message) -> None:
        question = LoopQuestion(self, call, key, method, self.roots_epoch)
        # Over a transport with a stream per request, the question goes on the call's.
        bid = self.router.issue(CLIENT, method, params, question, request=call.origin)
        call.asked[bid] = key

    def _pump_elicitations(self) -> None:
        while not self.elicitation_open and self.elicitations:
            queued = self.elicitations.popleft()
            if not queued.call.ended:
                self.elicitation_open = True
                self._ask(queued.call, queued.key, "elicitation/create", queued.params)

    # Answers from the client --------------------------------------------------------------

    def on_client_answer(self, question: LoopQuestion, message: Message) -> None:
        call, key, method = question.call, question.key, question.method
        if method == "elicitation/create":
            self.elicitation_open = False
            call.waiting_elicitations -= 1
        call.asked.pop(message["id"], None)
        if call.ended:
            self._pump_elicitations()
            return
        if "error" in message:
            self._abort_on_client_error(call, key, method, message["error"])
        else:
            self._record(call, key, method, message["result"], question.epoch)
        self._pump_elicitations()

    def _record(self, call: LoopedCall, key: str, method: str, result: Message, epoch: int) -> None:
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

    def _abort_on_client_error(self, call: LoopedCall, key: str, method: str,
                               error: object) -> None:
        # §11.3: inputResponses has no error channel, and retrying without the key would only
        # make the server ask again; the call fails with the client's reason instead.
        reason = error.get("message") if isinstance(error, dict) else None
        self._fail(call, f"input request {key!r} ({method}) failed: {reason}",
                   {"key": key, "method": method, "error": error})

    def roots_changed(self) -> None:
        self.roots_cache = None
        self.roots_epoch += 1

    def _send_round(self, call: LoopedCall) -> None:
        params = dict(call.params)
        if call.answers:
            params["inputResponses"] = call.answers
        if call.request_state is not None:  # echoed byte for byte, and only if sent (§11.2)
            params["requestState"] = call.request_state
        request = self.mode.modern_request(call.origin, call.method, params)
        call.move(LoopStep.ROUND)
        call.server_id = self.router.forward(SERVER, request, LoopRound(self, call))

    def _retry_later(self, call: LoopedCall) -> None:
        first, largest = self.ctx.config.mrtr_backoff
        delay = min(largest, first * 2**call.backoff)
        call.backoff += 1
        call.move(LoopStep.RETRYING)
        self.ctx.schedule(Deadline(call.key, LoopDue.RETRY), delay)

    # Ending -------------------------------------------------------------------------------

    def cancel(self, origin: object) -> bool:
        """The client cancelled a call: stop its loop wherever it waits. False if not ours."""
        call = self._find(origin)
        if call is None:
            return False
        if call.server_id is not None:
            self.router.cancel(SERVER, call.server_id, "cancelled by the client")
        self._finish(call)  # first: withdrawing pumps the elicitation queue (see there)
        self._withdraw_questions(call)
        self.ctx.log("info", "mrtr.cancelled", client_id=origin, round=call.round)
        return True

    def _find(self, origin: object) -> LoopedCall | None:
        kind = type(origin)  # 1 and True, 1 and 1.0 are different ids
        for call in self.calls.values():
            if type(call.origin) is kind and call.origin == origin:
                return call
        return None

    def _withdraw_questions(self, call: LoopedCall) -> None:
        """Cancel what the client is still asked for an ended call, and free the dialog.

        The call must have ENDED already: the pump below hands the dialog to the next queued
        elicitation, and must skip this call's own queued ones, which would otherwise reach
        the user after the call was cancelled or failed.
        """
        # cancellation.mdx (legacy): the bridge, as server, may cancel its own requests.
        for bid in list(call.asked):
            question = self.router.cancel(CLIENT, bid, "the call was cancelled")
            if question is not None and question.method == "elicitation/create":
                self.elicitation_open = False
        call.asked.clear()
        self._pump_elicitations()

    def _on_retry(self, key: Deadline) -> None:
        call = self._owner(key)
        if call is not None:
            self._send_round(call)

    def _on_deadline(self, key: Deadline) -> None:
        call = self._owner(key)
        if call is None:
            return
        if call.server_id is not None:
            self.router.cancel(SERVER, call.server_id, "input loop timed out")
        self._fail(call, f"the input loop took longer than {self.ctx.config.mrtr_timeout:g} s")

    def _owner(self, key: Deadline) -> LoopedCall | None:
        """The live call a deadline is for (one fired with it may have ended it)."""
        return self.calls.get(key.owner) if isinstance(key.owner, str) else None

    def _fail(self, call: LoopedCall, problem: str, data: object = None) -> None:
        self._finish(call)  # first: withdrawing pumps the elicitation queue (see there)
        self._withdraw_questions(call)
        self.ctx.log("warning", "mrtr.failed", client_id=call.origin, problem=problem)
        self.ctx.fail(CLIENT, call.origin, errors.input_loop_failed(problem, data))

    def _finish(self, call: LoopedCall) -> None:
        call.move(LoopStep.ENDED)
        self.calls.pop(call.key, None)
        self.ctx.cancel_timer(Deadline(call.key, LoopDue.DEADLINE))
        self.ctx.cancel_timer(Deadline(call.key, LoopDue.RETRY))
        self.mode.forget_progress_token(call.token)

    def fail_all(self, reason: str, data: Message | None = None) -> None:
        """Every call in its loop gets an error; what the client is still asked is withdrawn."""
        calls = list(self.calls.values())
        for call in calls:
            self._finish(call)
            self.ctx.fail(CLIENT, call.origin, errors.server_lost(reason, data, call.method))
        for call in calls:
            self._withdraw_questions(call)


def _declares_roots_changes(caps: Message) -> bool:
    roots = caps.get("roots")
    return isinstance(roots, dict) and roots.get("listChanged") is True
