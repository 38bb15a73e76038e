"""Mode B's parking: a legacy server's input requests during a call become input_required rounds.

Must not attach a question to a call that cannot have asked it, nor send the modern client a
JSON-RPC request: legacy server requests carry no link to the call behind them, so only one
call that may be asked for input runs at the legacy server at a time, and every question
without such an owner is answered here. Rules: mrtr.mdx; TRANSLATION.md §5.5, §5.8, §5.9,
§9.2-9.3, §11.4-7.

Attribution. Eligible calls (tools/call, resources/read, prompts/get) are of two kinds.
An *exclusive* call declares an input capability (roots, sampling or elicitation): it runs
alone among eligible calls, from its send until its legacy answer (parked time included,
since a parked call can still ask more), so whatever the server asks meanwhile is its own.
A *shared* call declares none: any question during it is refused the same way whichever call
asked, so shared calls run side by side. Non-eligible requests (tools/list, ...) are never
held back (§5.8.3 lets them run concurrently).
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING, Any

from bridge.core.capabilities import declares, input_capability
from bridge.core.envelope import legacy_context
from bridge.core.eras import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    LEGACY_URL_ELICITATION_REQUIRED,
    METHOD_NOT_FOUND,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
)
from bridge.core.events import CLIENT, SERVER
from bridge.core.jsonrpc import is_request_id, notification
from bridge.core.jsonrpc import typed_id as typed
from bridge.core.modern_server_legacy_client.request_meta import RequestMeta
from bridge.core.modern_server_legacy_client.request_state import (
    expired,
    request_digest,
    seal,
    unseal,
)
from bridge.core.modern_server_legacy_client.roots import FENCE, REASK, SETTLE, Roots
from bridge.core.router import BRIDGE, SOURCE, Pending

if TYPE_CHECKING:
    from bridge.core.modern_server_legacy_client.mode import ModeB

Message = dict[str, Any]

# mrtr.mdx §Supported Requests: the only requests that may answer input_required.
ELIGIBLE = frozenset({"tools/call", "resources/read", "prompts/get"})
INPUT_METHODS = frozenset({"elicitation/create", "sampling/createMessage", "roots/list"})
INPUT_CAPABILITIES = ("roots", "sampling", "elicitation")
_INPUT_CAPABILITY_SET = frozenset(INPUT_CAPABILITIES)  # one C-level test per call
USER_REJECTED = -1  # 2025-11-25 client/sampling.mdx §Error Handling: "User rejected sampling"
# Legacy-only fields of an input request's params; a modern one has none of them (§5.5).
_LEGACY_ONLY_PARAMS = frozenset({"task", "_meta", "elicitationId"})
ROOTS_TIMER = ("mrtr", "roots", "")


class Question:
    """One input request of the legacy server, waiting for the modern client's answer."""

    __slots__ = ("elicitation_id", "key", "legacy_id", "method", "params", "raw_params", "shipped")

    def __init__(self, key: str, legacy_id: Any, method: str, params: Any) -> None:
        self.key = key  # the inputRequests key, unique within the call
        self.legacy_id = legacy_id  # None for a URL elicitation taken from a -32042 error
        self.method = method
        self.raw_params = params  # as the legacy server sent them, for capability gating
        self.params = _modern_input_params(params)
        eid = params.get("elicitationId") if isinstance(params, dict) else None
        self.elicitation_id = eid if isinstance(eid, str) else None
        self.shipped = False  # sent to the client in an input_required result

    def input_request(self) -> Message:
        request: Message = {"method": self.method}
        if self.params:
            request["params"] = self.params
        return request


class Call:
    """One eligible modern request, across all its rounds, and its one legacy request."""

    __slots__ = ("asked", "at_server", "digest", "exclusive", "gave_roots", "key", "legacy_id",
                 "meta", "method", "nonce", "outcome", "owner", "params", "questions",
                 "retried", "round_ids", "timed", "token", "url")

    def __init__(self, key: str, message: Message, meta: RequestMeta) -> None:
        self.key = key  # names the call in its requestState
        self.method: str = message["method"]
        self.params: Message = message["params"]  # the current round's, re-sent after -32042
        self.digest: str | None = None  # see identity()
        self.meta = meta  # the current round's envelope: capabilities, logLevel, progressToken
        owner = message["id"]
        self.owner: Any = owner  # the modern id waiting for this call; None if parked
        self.round_ids = [(type(owner), owner)]  # typed(), without the call
        self.exclusive = not _INPUT_CAPABILITY_SET.isdisjoint(meta.capabilities)
        self.retried = False
        self.at_server = False
        self.legacy_id: str | None = None
        self.token: str | None = None  # the progress token the legacy server was given
        self.questions: dict[str, Question] = {}
        self.asked = 0
        self.nonce: str | None = None  # the one requestState that may resume the call now
        self.outcome: Message | None = None  # the legacy answer, if it came while parked
        self.url: UrlRound | None = None  # the URL elicitations of a -32042, until re-sent
        self.timed = False  # whether an MRTR timer was ever set for it (most calls: never)
        self.gave_roots = False  # the client gave its roots in the bridge's round for it

    def identity(self) -> str:
        """The digest a requestState binds the call to, computed when the call first parks:
        most calls never park, and hashing canonical JSON was a third of their cost."""
        if self.digest is None:
            self.digest = request_digest(self.method, self.params)
        return self.digest

    @property
    def progress_target(self) -> Any:
        # §9.3: progress follows the round in progress, and is dropped while parked.
        return self.meta.progress_token if self.owner is not None else None

    def next_key(self) -> str:
        self.asked += 1
        return f"q{self.asked}"


class UrlRound:
    """The URL elicitations a legacy -32042 asked for: the call goes again once all are done."""

    __slots__ = ("done", "error", "waiting")

    def __init__(self, waiting: set[str], error: str) -> None:
        self.waiting = waiting  # their elicitationIds
        self.done: set[str] = set()  # those notifications/elicitation/complete named
        self.error = error  # the -32042's message, for the client if the user declines

    def finished(self) -> bool:
        return self.waiting <= self.done


class Inputs:
    """Every eligible call of the session: queued, at the legacy server, parked or resuming."""

    def __init__(self, mode: ModeB) -> None:
        self.mode = mode
        self.ctx = mode.ctx
        self.router = mode.router
        self.calls: dict[str, Call] = {}
        self.rounds: dict[tuple[type, Any], Call] = {}  # every modern id a live call used
        self.asked: dict[tuple[type, Any], tuple[Call, Question]] = {}  # legacy request id
        self.queue: deque[Call] = deque()
        self.holder: Call | None = None  # the exclusive call at the legacy server
        self.shared = 0  # shared calls at the legacy server
        self.roots = Roots(self.ctx.config.roots)

    # Starting calls -----------------------------------------------------------------------

    def call(self, message: Message, meta: RequestMeta) -> None:
        """An eligible request: a retry if it carries requestState, else a new call."""
        if "requestState" in message["params"]:
            self._retry(message, meta)
            return
        call = Call(self.ctx.mint_id(), message, meta)
        self.calls[call.key] = call
        self.rounds[call.round_ids[0]] = call
        if call.exclusive and self.roots.wanted(meta.capabilities, self.ctx.now,
                                                self.ctx.config.roots_refresh):
            self._ask_roots(call)
        elif not self.queue and self._may_start(call):
            self._send(call)  # what _pump would do, without the queue's round trip
        else:
            self.queue.append(call)
            self._pump()

    def forget_round(self, request_id: Any) -> None:
        """A new request reuses `request_id`: it no longer names an earlier round."""
        self.rounds.pop(typed(request_id), None)

    def _pump(self) -> None:
        """Start queued calls in order while attribution stays unambiguous."""
        while self.queue and self._may_start(self.queue[0]):
            self._send(self.queue.popleft())

    def _may_start(self, call: Call) -> bool:
        if self.holder is not None or self.roots.resync is not None:
            return False
        return self.shared == 0 if call.exclusive else True

    def _send(self, call: Call) -> None:
        if call.exclusive:
            self.holder = call
        else:
            self.shared += 1
        call.at_server = True
        # §9.3: the legacy server gets a token of the bridge's, re-pointed at each round (and
        # only if the client asked for progress: the server sees nothing it was not sent).
        if call.meta.progress_token is not None:
            call.token = self.mode.track_progress(call)
        # Sent as mode B forwards any request (as build_request would: params are never None
        # here); the router gives it its id, and no client id is its origin: the call's
        # rounds change owner (call.owner).
        params = legacy_context(call.params, method=call.method, version=self.mode.version,
                                progress_token=call.token)
        request = {"jsonrpc": "2.0", "id": call.key, "method": call.method, "params": params}
        if call.meta.log_level is not None:
            self.mode.prepare_logs(call.meta)
        call.legacy_id = self.router.forward(SERVER, request, "call", call, origin_id=BRIDGE)
        if self.ctx.log_enabled:  # its fields are not even built when debug logs are off
            self.ctx.debug("request.forwarded", method=call.method, client_id=call.owner,
                           server_id=call.legacy_id, exclusive=call.exclusive)

    def _release(self, call: Call) -> None:
        """The call's legacy request is over: free its slot and its progress token."""
        if not call.at_server:
            return
        call.at_server = False
        call.legacy_id = None
        if self.holder is call:
            self.holder = None
        else:
            self.shared -= 1
        if call.token is not None:
            self.mode.untrack_progress(call.token)
            call.token = None

    # The legacy server's answer to a call -------------------------------------------------

    def on_answer(self, row: Pending, message: Message) -> None:
        call: Call = row.data
        self._release(call)
        if self.calls.get(call.key) is call:
            if call.owner is None:
                # §5.8.4.5: it ended while parked (say its question timed out): keep the
                # answer for the retry.
                call.outcome = message
                self._abandon_questions(call, "the call ended")
            else:
                self._deliver(call, message)
        if self.queue:
            self._pump()

    def _deliver(self, call: Call, message: Message) -> None:
        error = message.get("error")
        if error is not None and error.get("code") == LEGACY_URL_ELICITATION_REQUIRED:
            self._url_required(call, error)
            return
        if call.questions:  # most calls never ask anything
            self._abandon_questions(call, "the call ended")
        if error is not None:
            self.mode.reply_error(call.owner, error)
        else:
            # caching.mdx: results of MRTR retries must not be cached (ttlMs 0).
            self.ctx.reply(CLIENT, call.owner,
                           self.mode.modern_result(call.method, message["result"],
                                                   retried=call.retried))
        self._drop(call)

    # Questions from the legacy server -----------------------------------------------------

    def on_server_request(self, message: Message) -> None:
        """elicitation/create, sampling/createMessage or roots/list from the legacy server."""
        call = self.holder
        if message["method"] == "roots/list" and (
                self.roots.resync is not None or (call is not None and call.gave_roots)):
            self._answer_roots(message["id"])  # the client's roots are fresh: no need to ask
            return
        if call is None:
            if self.shared:  # shared calls declared no input capability at all
                self._refuse_or_answer(message["id"], message["method"],
                                       message.get("params"), {})
            else:
                self._answer_unsolicited(message)
            return
        question = Question(call.next_key(), message["id"], message["method"],
                            message.get("params"))
        if call.owner is not None and not self._allowed(call, question):
            self._refuse_or_answer(question.legacy_id, question.method, question.raw_params,
                                   call.meta.capabilities)
            return
        call.questions[question.key] = question
        self.asked[typed(question.legacy_id)] = (call, question)
        self.ctx.log("info", "mrtr.asked", method=question.method, key=question.key,
                     parked=call.owner is None)
        if call.owner is not None:
            self._gather(call)
        # A parked call's new question waits for the retry, then goes out on its round.

    def _allowed(self, call: Call, question: Question) -> bool:
        # mrtr.mdx: never send an input request the current request did not declare (§5.6).
        need = input_capability(question.method, question.raw_params)
        return declares(call.meta.capabilities, need)

    def _gather(self, call: Call) -> None:
        # A legacy server may ask several things at once: collect them for park_window, then
        # ask the client in one round.
        if ("mrtr", "park", call.key) not in self.ctx.timers:
            self._schedule(call, "park", self.ctx.config.park_window)

    def _ship(self, call: Call) -> None:
        """Answer the call's current round with input_required: every question still open."""
        if call.owner is None:
            return
        self.ctx.cancel_timer(("mrtr", "park", call.key))
        self._regate(call)
        if not call.questions:
            return
        call.nonce = self.ctx.mint_id()
        parked_timeout = self.ctx.config.parked_timeout
        state = seal(self.mode.secret, key=call.key, nonce=call.nonce, digest=call.identity(),
                     expires=self.ctx.now + parked_timeout)
        result: Message = {
            "resultType": "input_required",
            "inputRequests": {k: q.input_request() for k, q in call.questions.items()},
            "requestState": state,
        }
        self.ctx.reply(CLIENT, call.owner, self.mode.with_server_info(result))
        self.ctx.log("info", "mrtr.parked", client_id=call.owner, method=call.method,
                     keys=sorted(call.questions))
        for question in call.questions.values():
            question.shipped = True
        call.owner = None
        self._schedule(call, "parked", parked_timeout)

    def _regate(self, call: Call) -> None:
        """Refuse what the current round did not declare (asked while parked, or the retry
        declared less than the round before)."""
        for question in list(call.questions.values()):
            if question.legacy_id is not None and not self._allowed(call, question):
                self._forget(call, question)
                self._refuse_or_answer(question.legacy_id, question.method,
                                       question.raw_params, call.meta.capabilities)

    # The client's retry -------------------------------------------------------------------

    def _retry(self, message: Message, meta: RequestMeta) -> None:
        params = message["params"]
        responses = params.get("inputResponses", {})
        state = params["requestState"]
        if not isinstance(state, str) or not isinstance(responses, dict):
            self.ctx.reply_error(CLIENT, message["id"], INVALID_PARAMS,
                                 "requestState must be a string and inputResponses an object")
            return
        call, reason = self._redeem(state, message["method"], params)
        if call is None:
            self._reject_state(message["id"], reason)
            return
        call.nonce = None  # single use: this state is spent (mrtr.mdx §Server Requirements)
        self.ctx.cancel_timer(("mrtr", "parked", call.key))
        call.owner = message["id"]
        call.meta = meta
        call.params = params
        call.retried = True
        call.round_ids.append(typed(message["id"]))
        self.rounds[typed(message["id"])] = call
        self.ctx.log("info", "mrtr.resumed", client_id=call.owner, answered=sorted(responses))
        self._resume(call, responses)

    def _resume(self, call: Call, responses: Message) -> None:
        if call.outcome is not None:
            outcome, call.outcome = call.outcome, None
            self._deliver(call, outcome)
        elif call.at_server:
            self._relay_answers(call, responses)
            self.mode.prepare_logs(call.meta)
            if call.questions:  # unanswered or asked while parked: another round
                self._gather(call)
        else:
            self._on_own_answers(call, responses)

    def _redeem(self, state: str, method: str, params: Message) -> tuple[Call | None, str]:
        """The parked call a requestState resumes, or why it resumes none."""
        payload = unseal(self.mode.secret, state)
        if payload is None:
            return None, "tampered"
        if expired(payload, self.ctx.now):
            return None, "expired"
        if payload["d"] != request_digest(method, params):
            return None, "mismatch"
        call = self.calls.get(payload["k"])
        if call is None:
            return None, "ended"
        if call.nonce != payload["n"]:
            return None, "replayed"
        return call, ""

    def _reject_state(self, request_id: Any, reason: str) -> None:
        self.ctx.log("warning", "mrtr.state_rejected", client_id=request_id, reason=reason)
        self.ctx.reply_error(CLIENT, request_id, INVALID_PARAMS,
                             f"Invalid requestState: {_STATE_PROBLEMS[reason]}",
                             {"reason": reason})

    def _relay_answers(self, call: Call, responses: Message) -> None:
        """Answer the legacy server's shipped questions with the client's inputResponses."""
        for question in list(call.questions.values()):
            response = responses.get(question.key)
            if not question.shipped or not isinstance(response, dict):
                continue  # mrtr.mdx: missing answers are asked for again, unknown keys ignored
            self._forget(call, question)
            if question.method == "roots/list" and isinstance(response.get("roots"), list):
                self.roots.relayed(response["roots"], self.ctx.now)
            answer = _legacy_answer(question.method, response, self.mode.version)
            if isinstance(answer, str):
                self.ctx.log("warning", "input.unfit_answer", method=question.method,
                             key=question.key, problem=answer)
                self.ctx.reply_error(SERVER, question.legacy_id, INTERNAL_ERROR,
                                     f"mcp-rosetta: {answer}", SOURCE)
            else:
                self.ctx.reply(SERVER, question.legacy_id, answer)

    # URL elicitation required (-32042), §5.9 (ii) -----------------------------------------

    def _url_required(self, call: Call, error: Message) -> None:
        """A legacy -32042 on an eligible call: ask for its URL elicitations as a round."""
        self._abandon_questions(call, "the call ended")
        if not declares(call.meta.capabilities, ("elicitation", "url")):
            self.ctx.reply_error(CLIENT, call.owner, MISSING_REQUIRED_CLIENT_CAPABILITY,
                                 "The server requires URL mode elicitation for this request",
                                 {"requiredCapabilities": {"elicitation": {"url": {}}}})
            self._drop(call)
            return
        questions = _url_questions(error)
        if not questions:
            self.ctx.reply_error(CLIENT, call.owner, INTERNAL_ERROR,
                                 "mcp-rosetta: the server asked for URL elicitation (-32042) "
                                 "without a valid data.elicitations list", {"legacyError": error})
            self._drop(call)
            return
        for question in questions:
            call.questions[question.key] = question
        call.url = UrlRound({q.elicitation_id or "" for q in questions},
                            str(error.get("message", "")))
        self._ship(call)

    def _on_own_answers(self, call: Call, responses: Message) -> None:
        """The client answered the bridge's own questions: the URL elicitations of a -32042,
        or the roots round; then the call goes (again) to the server."""
        answered = {k: responses[k] for k in call.questions if isinstance(responses.get(k), dict)}
        declined = sorted(k for k, r in answered.items()
                          if call.questions[k].method == "elicitation/create"
                          and r.get("action") != "accept")
        if declined:
            self.ctx.reply_error(CLIENT, call.owner, INTERNAL_ERROR,
                                 f"mcp-rosetta: the server requires URL elicitation the user "
                                 f"did not accept ({call.url.error if call.url else ''})",
                                 {"declined": declined})
            self._drop(call)
            return
        for key, response in answered.items():
            if call.questions.pop(key).method == "roots/list":
                call.gave_roots = True
                self._learn_roots(response)
        for key in [k for k, q in call.questions.items() if q.method == "roots/list"]:
            del call.questions[key]  # the bridge's own curiosity: never insisted on
        if call.questions:
            self._ship(call)  # some not answered: ask for them again
        elif call.url is None or call.url.finished() \
                or self.ctx.config.url_elicitation_wait <= 0:
            self._resend(call)
        else:
            # accept means consent, not completion (§11.18): give the user time to finish,
            # unless the server says notifications/elicitation/complete first.
            self._schedule(call, "url", self.ctx.config.url_elicitation_wait)

    def on_elicitation_complete(self, elicitation_id: Any) -> None:
        if not isinstance(elicitation_id, str):
            return
        for call in list(self.calls.values()):
            url = call.url
            if url is not None and elicitation_id in url.waiting:
                url.done.add(elicitation_id)
                if ("mrtr", "url", call.key) in self.ctx.timers and url.finished():
                    self._resend(call)

    def _resend(self, call: Call) -> None:
        """Send the original request again now that the URL elicitations are through."""
        self.ctx.cancel_timer(("mrtr", "url", call.key))
        call.url = None
        self.queue.append(call)
        self._pump()

    # Roots of the bridge's own asking (roots.py, §5.8.5) ----------------------------------

    def _ask_roots(self, call: Call) -> None:
        """Before the call goes to the server: one round asking the client for its roots."""
        question = Question(call.next_key(), None, "roots/list", None)
        call.questions[question.key] = question
        self.ctx.log("info", "roots.asked", client_id=call.owner,
                     known=self.roots.known is not None)
        self._ship(call)

    def _learn_roots(self, response: Message) -> None:
        roots = response.get("roots")
        if not isinstance(roots, list) or not self.roots.learn(roots, self.ctx.now):
            return
        # client/roots.mdx (2025-11-25) §Root List Changes: the server asks again. Calls wait
        # for that, so they reach a server that knows the roots they were made with.
        self.ctx.send(SERVER, notification("notifications/roots/list_changed"))
        self.ctx.log("info", "roots.changed", roots=len(roots))
        self.roots.resync = REASK
        self.ctx.schedule(ROOTS_TIMER, self.ctx.config.roots_wait)

    def _answer_roots(self, legacy_id: Any) -> None:
        """The roots just learned; if the server asks after roots/list_changed, then a ping to
        know it has read them."""
        self.ctx.reply(SERVER, legacy_id, self.roots.answer())
        if self.roots.resync == REASK:
            self.roots.resync = FENCE
            self.router.issue(SERVER, "ping", None, "roots")

    def on_roots_fence(self, row: Pending, message: Message) -> None:
        if self.roots.resync != FENCE:
            return
        settle = self.ctx.config.roots_settle
        if settle > 0:
            self.roots.resync = SETTLE
            self.ctx.schedule(ROOTS_TIMER, settle)
        else:
            self._resynced()

    def _resynced(self) -> None:
        self.ctx.cancel_timer(ROOTS_TIMER)
        self.roots.resync = None
        self._pump()

    # Local answers (§5.8.3) ---------------------------------------------------------------

    def _answer_unsolicited(self, message: Message) -> None:
        """No call that may ask is running: answer as a legacy client with nobody to ask."""
        method = message["method"]
        self.ctx.log("info", "input.answered_locally", method=method, reason="no eligible call")
        if method == "roots/list":
            self.ctx.reply(SERVER, message["id"], self.roots.answer())
        elif method == "elicitation/create":
            self.ctx.reply(SERVER, message["id"], {"action": "cancel"})
        else:
            self.ctx.reply_error(SERVER, message["id"], USER_REJECTED,
                                 "Sampling request rejected: no request in flight can carry it")

    def _refuse_or_answer(self, legacy_id: Any, method: str, params: Any,
                          caps: Message) -> None:
        """A question the call did not declare: roots/list is answered from the roots the
        bridge knows (nobody is asked, so the call's capabilities are not overstepped, and a
        refusal would only withhold what the server was given before); the rest is refused."""
        if method == "roots/list" and self.roots.any_known():
            self.ctx.log("info", "input.answered_locally", method=method,
                         reason="the request did not declare roots; the known roots")
            self.ctx.reply(SERVER, legacy_id, self.roots.answer())
        else:
            self._refuse(legacy_id, method, params, caps)

    def roots_changed(self) -> None:
        """The client said its roots changed: the next call that declares roots asks."""
        self.roots.stale = True
        self.ctx.log("info", "roots.stale")

    def _refuse(self, legacy_id: Any, method: str, params: Any, caps: Message) -> None:
        """The call did not declare what the question needs: answer as such a client would.

        A whole capability missing is an unknown method to a legacy client (-32601); a missing
        sub-capability (an elicitation mode, sampling tools) is invalid params (-32602, as
        2025-11-25 client/elicitation.mdx §Error Handling says for modes).
        """
        need = input_capability(method, params)
        self.ctx.log("info", "input.refused", method=method, needs=".".join(need))
        if declares(caps, need[:1]):
            self.ctx.reply_error(SERVER, legacy_id, INVALID_PARAMS,
                                 f"The request did not declare the {'.'.join(need)} capability")
        else:
            self.ctx.reply_error(SERVER, legacy_id, METHOD_NOT_FOUND,
                                 f"Method not found: the request did not declare {need[0]}")

    # Ending -------------------------------------------------------------------------------

    def on_server_cancelled(self, request_id: Any) -> None:
        """The legacy server withdrew one of its questions (legacy cancellation.mdx)."""
        if not is_request_id(request_id):
            return
        entry = self.asked.pop(typed(request_id), None)
        if entry is not None:
            call, question = entry
            call.questions.pop(question.key, None)
            self.ctx.log("info", "mrtr.withdrawn", key=question.key, shipped=question.shipped)

    def cancel(self, request_id: Any, reason: str | None) -> bool:
        """The client cancelled one of a call's rounds: end the call. False if not a round."""
        call = self.rounds.get(typed(request_id)) if is_request_id(request_id) else None
        if call is None:
            return False
        if call.owner is not None and typed(call.owner) != typed(request_id):
            # An earlier round's id names the same call; the round in progress must still
            # get its one answer.
            self.ctx.reply_error(CLIENT, call.owner, INTERNAL_ERROR,
                                 f"mcp-rosetta: the call was cancelled (its round "
                                 f"{request_id!r} was cancelled)", {"source": "mcp-rosetta"})
        self.ctx.log("info", "mrtr.cancelled", client_id=request_id, method=call.method)
        self._end(call, reason or "cancelled by the client")
        return True

    def on_timer(self, key: tuple[str, str, str]) -> None:
        if key == ROOTS_TIMER:
            if self.roots.resync != SETTLE:
                self.ctx.log("warning", "roots.not_caught_up", stage=self.roots.resync,
                             waited_s=self.ctx.config.roots_wait)
            self._resynced()
            return
        call = self.calls.get(key[2])
        if call is None:
            return
        if key[1] == "park":
            self._ship(call)
        elif key[1] == "url":
            self._resend(call)
        else:
            timeout = self.ctx.config.parked_timeout
            self.ctx.log("warning", "mrtr.expired", method=call.method, parked_s=timeout)
            self._end(call, f"the client did not retry within {timeout:g} s")

    def _end(self, call: Call, reason: str) -> None:
        """Stop a call wherever it is (§5.8.4.6): cancel it at the server, answer its questions."""
        if call.at_server and call.legacy_id is not None:
            self.router.cancel(SERVER, call.legacy_id, reason)
        self._release(call)
        self._abandon_questions(call, reason)
        self._drop(call)
        self._pump()

    def _abandon_questions(self, call: Call, reason: str) -> None:
        if not call.questions:
            return  # most calls never ask anything
        for question in list(call.questions.values()):
            self._forget(call, question)
            if question.legacy_id is None:
                continue
            if question.method == "elicitation/create":
                self.ctx.reply(SERVER, question.legacy_id, {"action": "cancel"})
            else:
                self.ctx.reply_error(SERVER, question.legacy_id, INTERNAL_ERROR,
                                     f"mcp-rosetta: {reason}")

    def _forget(self, call: Call, question: Question) -> None:
        call.questions.pop(question.key, None)
        if question.legacy_id is not None:
            self.asked.pop(typed(question.legacy_id), None)

    def _schedule(self, call: Call, timer: str, delay: float) -> None:
        call.timed = True
        self.ctx.schedule(("mrtr", timer, call.key), delay)

    def _drop(self, call: Call) -> None:
        self.calls.pop(call.key, None)
        for round_id in call.round_ids:
            if self.rounds.get(round_id) is call:
                del self.rounds[round_id]
        if call.questions:
            for question in list(call.questions.values()):
                self._forget(call, question)
        if call.timed:
            for timer in ("park", "parked", "url"):
                self.ctx.cancel_timer(("mrtr", timer, call.key))
        if self.queue and call in self.queue:
            self.queue.remove(call)

    def busy(self) -> bool:
        """Whether a round waits for its answer (a parked call's round was answered)."""
        return any(call.owner is not None for call in self.calls.values())

    def fail_all(self, reason: str, data: Message | None = None) -> None:
        """The server is going away: every round still waiting gets an error, and every call
        ends (a parked call's requestState resumes nothing any more)."""
        for call in list(self.calls.values()):
            if call.owner is not None:
                self.ctx.reply_error(CLIENT, call.owner, INTERNAL_ERROR, reason,
                                     {**(data or SOURCE), "method": call.method})
            self._drop(call)
        self.holder = None
        self.shared = 0


_STATE_PROBLEMS = {
    "tampered": "it was not issued by this bridge, or it was altered",
    "expired": "it has expired",
    "mismatch": "it belongs to another request (the method or params differ)",
    "ended": "the call it resumes has ended (answered, cancelled or timed out)",
    "replayed": "it was already used; retry with the requestState of the latest round",
}


def _modern_input_params(params: Any) -> Message:
    if not isinstance(params, dict):
        return {}
    return {k: v for k, v in params.items() if k not in _LEGACY_ONLY_PARAMS}


def _url_questions(error: Message) -> list[Question]:
    """One URL elicitation per entry of a -32042's data.elicitations; [] if any is malformed."""
    data = error.get("data")
    listed = data.get("elicitations") if isinstance(data, dict) else None
    questions = [_url_question(e) for e in listed] if isinstance(listed, list) else []
    return [] if None in questions else [q for q in questions if q is not None]


def _url_question(elicitation: Any) -> Question | None:
    if not isinstance(elicitation, dict):
        return None
    eid = elicitation.get("elicitationId")
    if not all(isinstance(elicitation.get(k), str) for k in ("url", "message", "elicitationId")):
        return None
    params = {"mode": "url", "message": elicitation["message"], "url": elicitation["url"],
              "elicitationId": eid}
    return Question(f"url-{eid}", None, "elicitation/create", params)


def _legacy_answer(method: str, response: Message, version: str) -> Message | str:
    """A modern input response as the legacy result the server's revision expects (§5.5), or
    why that revision cannot hold it."""
    answer = {k: v for k, v in response.items() if k != "resultType"}
    content = answer.get("content")
    if method == "sampling/createMessage" and version < "2025-11-25" \
            and isinstance(content, list):
        # Content arrays arrived in 2025-11-25; before, CreateMessageResult holds one block.
        if len(content) == 1:
            answer["content"] = content[0]
        elif content and all(isinstance(b, dict) and b.get("type") == "text"
                             and isinstance(b.get("text"), str) for b in content):
            answer["content"] = {"type": "text",
                                 "text": "\n\n".join(b["text"] for b in content)}
        else:
            return (f"the client's sampling answer has {len(content)} content blocks, not all "
                    f"text; revision {version} holds one block")
    return answer
