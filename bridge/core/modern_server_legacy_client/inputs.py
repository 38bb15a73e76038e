"""Mode B's parking: a legacy server's input requests during a call become input_required rounds.

Must not attach a question to a call that cannot have asked it, nor send the modern client a
JSON-RPC request: legacy server requests carry no link to the call behind them, so only one
call that may be asked for input runs at the legacy server at a time, and every question
without such an owner is answered by the bridge itself (questions.py). Rules: mrtr.mdx;
TRANSLATION.md §5.5, §5.8, §5.9, §9.2-9.3, §11.4-7.

Attribution. Eligible calls (tools/call, resources/read, prompts/get) are of two kinds.
An *exclusive* call declares an input capability (roots, sampling or elicitation): it runs
alone among eligible calls, from its send until its legacy answer (parked time included,
since a parked call can still ask more), so whatever the server asks meanwhile is its own.
A *shared* call declares none: any question during it is refused the same way whichever call
asked, so shared calls run side by side. Non-eligible requests (tools/list, ...) are never
held back (§5.8.3 lets them run concurrently).

A question its call cannot take (undeclared) is refused at the legacy server as a client
without the capability would, and the call, when it can be named (the exclusive call, or
the only shared call at the server), is answered -32021 and cancelled at the server: a modern
server needing an undeclared capability says so (§5.8.3). Of several shared calls, none can
be named: the refusal alone answers, and they go on.
"""

from __future__ import annotations

from collections import deque
from typing import Protocol

from bridge.core import errors
from bridge.core.codec import Message
from bridge.core.context import Context
from bridge.core.envelope import legacy_context
from bridge.core.eras import LEGACY_URL_ELICITATION_REQUIRED
from bridge.core.events import CLIENT, SERVER
from bridge.core.jsonrpc import TypedId, WireId, is_request_id
from bridge.core.jsonrpc import typed_id as typed
from bridge.core.modern_server_legacy_client.own_rounds import OwnRounds
from bridge.core.modern_server_legacy_client.parked_call import (
    CALL_ENDED,
    CALL_PARKED,
    CALL_RUNNING,
    CallDue,
    CallStage,
    ParkedCall,
)
from bridge.core.modern_server_legacy_client.progress import ProgressRelay
from bridge.core.modern_server_legacy_client.questions import (
    LocalAnswers,
    Question,
    allowed,
    legacy_answer,
)
from bridge.core.modern_server_legacy_client.redeem import StateProblem, redeem, reject_state
from bridge.core.modern_server_legacy_client.request_meta import RequestMeta
from bridge.core.modern_server_legacy_client.request_state import seal
from bridge.core.modern_server_legacy_client.roots import Resync, Roots
from bridge.core.modern_server_legacy_client.roots_sync import RootsSync
from bridge.core.router import Router
from bridge.core.timers import Deadline

# Read for every call: a global, since an Enum class attribute costs five times as much.
_RESYNC_IDLE = Resync.IDLE
_UNOWNED = ""
"""The inputRequests key of a question no call owns: it is refused, never asked."""


class ParkingHost(Protocol):
    """What parking needs of mode B: its legacy server, and its modern face."""

    ctx: Context
    router: Router
    progress: ProgressRelay
    secret: bytes  # keys the requestState HMAC
    version: str  # the legacy server's revision

    def prepare_logs(self, meta: RequestMeta) -> None: ...
    def modern_result(self, method: str, result: Message, *, retried: bool = False) -> Message:
        ...
    def with_server_info(self, result: Message) -> Message: ...
    def relay_error(self, request_id: WireId | None, error: Message) -> None: ...


class Parking:
    """Every eligible call of the session: queued, at the legacy server, parked or resuming."""

    def __init__(self, mode: ParkingHost) -> None:
        self.mode = mode
        self.ctx = mode.ctx
        self.router = mode.router
        self.calls: dict[str, ParkedCall] = {}
        self.rounds: dict[TypedId, ParkedCall] = {}  # every modern id a live call used
        # The legacy request id of each question a call owns, and the question's key.
        self.asked: dict[TypedId, tuple[ParkedCall, str]] = {}
        self.queue: deque[ParkedCall] = deque()
        self.holder: ParkedCall | None = None  # the exclusive call at the legacy server
        self.shared = 0  # shared calls at the legacy server
        self.roots = Roots(self.ctx.config.roots)
        self.local = LocalAnswers(self.ctx, self.roots)
        self.sync = RootsSync(self, self.roots)
        self.own = OwnRounds(self)  # the rounds of the bridge's own asking

    # Starting calls -----------------------------------------------------------------------

    def call(self, message: Message, meta: RequestMeta) -> None:
        """An eligible request: a retry if it carries requestState, else a new call."""
        if "requestState" in message["params"]:
            self._retry(message, meta)
            return
        call = ParkedCall(self, self.ctx.mint_id(), message, meta)
        observer = self.ctx.observer
        if observer is not None:  # it counts its first round's result itself (observe.py)
            call.asking = observer.claim(message["id"])
        self.calls[call.key] = call
        self.rounds[call.round_ids[0]] = call
        if call.exclusive and self.roots.wanted(meta.capabilities, self.ctx.now,
                                                self.ctx.config.roots_refresh):
            self.own.ask_roots(call)
        elif not self.queue and self._may_start(call):
            self._send(call)  # what pump would do, without the queue's round trip
        else:
            self.queue.append(call)
            self.pump()

    def forget_round(self, request_id: WireId) -> None:
        """A new request reuses `request_id`: it no longer names an earlier round."""
        # typed(), inline: with calls in flight this runs for every request.
        self.rounds.pop((type(request_id), request_id), None)

    def pump(self) -> None:
        """Start queued calls in order while attribution stays unambiguous."""
        while self.queue and self._may_start(self.queue[0]):
            self._send(self.queue.popleft())

    def resend(self, call: ParkedCall) -> None:
        """Send the original request again now that the URL elicitations are through."""
        self.ctx.cancel_timer(Deadline(call.key, CallDue.URL))
        call.url = None
        call.move(CallStage.QUEUED)
        self.queue.append(call)
        self.pump()

    def _may_start(self, call: ParkedCall) -> bool:
        if self.holder is not None or self.roots.resync is not _RESYNC_IDLE:
            return False
        return self.shared == 0 if call.exclusive else True

    def _send(self, call: ParkedCall) -> None:
        call.move(CALL_RUNNING)
        if call.exclusive:
            self.holder = call
        else:
            self.shared += 1
        # §9.3: the legacy server gets a token of the bridge's, re-pointed at each round (and
        # only if the client asked for progress: the server sees nothing it was not sent).
        if call.meta.progress_token is not None:
            call.token = self.mode.progress.track(call)
        # Sent as mode B forwards any request (as build_request would: params are never None
        # here); the router gives it its id.
        params = legacy_context(call.params, method=call.method, version=self.mode.version,
                                progress_token=call.token)
        request = {"jsonrpc": "2.0", "id": call.key, "method": call.method, "params": params}
        if call.meta.log_level is not None:
            self.mode.prepare_logs(call.meta)
        call.legacy_id = self.router.forward(SERVER, request, call)
        if self.ctx.log_enabled:  # its fields are not even built when debug logs are off
            self.ctx.debug("request.forwarded", method=call.method, client_id=call.owner,
                           server_id=call.legacy_id, exclusive=call.exclusive)

    def _release(self, call: ParkedCall) -> None:
        """The call's legacy request is over: free its slot and its progress token."""
        if call.legacy_id is None:
            return
        call.legacy_id = None
        if self.holder is call:
            self.holder = None
        else:
            self.shared -= 1
        if call.token is not None:
            self.mode.progress.untrack(call.token)
            call.token = None

    # The legacy server's answer to a call -------------------------------------------------

    def call_answered(self, call: ParkedCall, message: Message) -> None:
        self._release(call)
        if self.calls.get(call.key) is call:
            if call.stage is CALL_PARKED:
                # §5.8.4.5: it ended while parked (say its question timed out): keep the
                # answer for the retry.
                call.outcome = message
                self.abandon_questions(call, "the call ended")
            else:
                self._deliver(call, message)
        if self.queue:
            self.pump()

    def call_expired(self, call: ParkedCall) -> None:
        """request_timeout passed while the legacy server worked on the call's round: the
        router has cancelled its legacy request, and the round gets the timeout error."""
        self._release(call)  # first: the legacy request is cancelled already
        if call.owner is not None:
            self.ctx.fail(CLIENT, call.owner,
                          errors.timed_out(self.ctx.config.request_timeout, call.method))
        self._end(call, "the request timed out")

    def _deliver(self, call: ParkedCall, message: Message) -> None:
        error = message.get("error")
        if error is not None and error.get("code") == LEGACY_URL_ELICITATION_REQUIRED:
            self.own.url_required(call, error)
            return
        if call.questions:  # most calls never ask anything
            self.abandon_questions(call, "the call ended")
        owner = call.owner
        if error is not None:
            self.mode.relay_error(owner, error)
        else:
            # caching.mdx: results of MRTR retries must not be cached (ttlMs 0). The legacy
            # answer, ours since it was decoded, carries it under the round's id, as ctx.reply
            # would send it (the answer belongs to the request it answers).
            if call.asking is not None:
                call.counted()
            message["result"] = self.mode.modern_result(call.method, message["result"],
                                                        retried=call.retried)
            message["id"] = owner
            self.ctx.send(CLIENT, message, None, owner)
        self.drop(call)

    # Questions from the legacy server -----------------------------------------------------

    def on_server_request(self, message: Message) -> None:
        """elicitation/create, sampling/createMessage or roots/list from the legacy server."""
        call = self.holder
        if message["method"] == "roots/list" and (
                self.roots.resyncing or (call is not None and call.gave_roots)):
            self.sync.answer(message["id"])  # the client's roots are fresh: no need to ask
            return
        if call is None:
            if self.shared:  # shared calls declared no input capability at all
                # §5.8.3: one shared call at the server is the one that asked; of several,
                # none can be named, so the refusal alone answers.
                lone = self._lone_shared() if self.shared == 1 else None
                self._undeclared(lone, [Question.asked(_UNOWNED, message["id"],
                                                       message["method"],
                                                       message.get("params"))], {})
            else:
                self.local.unsolicited(message)
            return
        question = Question.asked(call.next_key(), message["id"], message["method"],
                                  message.get("params"))
        parked = call.stage is CallStage.PARKED
        if not parked and not allowed(call.meta.capabilities, question):
            self._undeclared(call, [question], call.meta.capabilities)
            return
        call.questions[question.key] = question
        self.asked[typed(question.legacy_id)] = (call, question.key)
        self.ctx.log("info", "mrtr.asked", method=question.method, key=question.key,
                     parked=parked)
        if not parked:
            self._gather(call)
        # A parked call's new question waits for the retry, then goes out on its round.

    def _gather(self, call: ParkedCall) -> None:
        # A legacy server may ask several things at once: collect them for park_window, then
        # ask the client in one round.
        if call.stage is not CallStage.GATHERING:
            call.move(CallStage.GATHERING)
            self.schedule(call, CallDue.GATHER, self.ctx.config.park_window)

    def ship(self, call: ParkedCall) -> None:
        """Answer the call's current round with input_required: every question still open."""
        if call.stage is CallStage.PARKED:
            return
        self.ctx.cancel_timer(Deadline(call.key, CallDue.GATHER))
        self._regate(call)
        if call.stage is CALL_ENDED:  # it needed what the round did not declare: -32021
            return
        if not call.questions:
            if call.stage is CallStage.GATHERING:
                call.move(CallStage.RUNNING)
            return
        call.nonce = self.ctx.mint_id()
        parked_timeout = self.ctx.config.parked_timeout
        state = seal(self.mode.secret, key=call.key, nonce=call.nonce, digest=call.identity(),
                     expires=self.ctx.now + parked_timeout, route=self.ctx.config.state_route)
        result: Message = {
            "resultType": "input_required",
            "inputRequests": {k: q.input_request() for k, q in call.questions.items()},
            "requestState": state,
        }
        self.ctx.reply(CLIENT, call.owner, self.mode.with_server_info(result))
        self.ctx.log("info", "mrtr.parked", client_id=call.owner, method=call.method,
                     keys=sorted(call.questions))
        call.shipped = frozenset(call.questions)
        call.owner = None
        call.move(CallStage.PARKED)
        if call.legacy_id is not None:  # the server waits on the client now
            self.router.stop_clock(call.legacy_id)
        self.schedule(call, CallDue.PARKED, parked_timeout)

    def _regate(self, call: ParkedCall) -> None:
        """Refuse what the current round did not declare (asked while parked, or the retry
        declared less than the round before); if anything was refused, the call ends with
        -32021 naming all of it (§5.8.3)."""
        undeclared = [question for question in call.questions.values()
                      if question.legacy_id is not None
                      and not allowed(call.meta.capabilities, question)]
        for question in undeclared:
            self._forget(call, question)
        self._undeclared(call, undeclared, call.meta.capabilities)

    def _undeclared(self, call: ParkedCall | None, questions: list[Question],
                    caps: Message) -> None:
        """Answer questions `caps` did not declare: roots/list from the known roots, the
        rest refused; `call` (when it can be named) then ends with -32021 naming what was
        refused. Its cancel reaches the server before the refusals: the handler, still
        waiting for its answer, stops there, while a refusal sent first ends it with a
        result that races the cancel (an mcp 1.x server crashes when the cancel lands between
        its handler's return and its answer: python-sdk issue 2416)."""
        refused = [question for question in questions if not self.local.answers_locally(question)]
        if refused and call is not None:
            self._capability_missing(call, [question.need() for question in refused])
        for question in refused:
            self.local.refuse(question, caps)

    def _capability_missing(self, call: ParkedCall, needs: list[tuple[str, ...]]) -> None:
        """The call's legacy server needs what its round did not declare, and was refused it:
        to the modern client, a server that requires a client capability (basic/index.mdx
        §_meta: -32021 with data.requiredCapabilities). The call's round gets that error, its
        legacy request is cancelled (a late answer finds no exchange: absorbed), and its other
        open questions are answered as for any ended call."""
        self.ctx.log("info", "mrtr.capability_missing", client_id=call.owner,
                     method=call.method, needs=sorted(".".join(need) for need in needs))
        self.ctx.fail(CLIENT, call.owner, errors.capability_required(needs))
        self._end(call, "the request did not declare "
                        + ", ".join(sorted(".".join(need) for need in needs)))

    def _lone_shared(self) -> ParkedCall | None:
        """The one shared call at the legacy server (`shared` is 1)."""
        for call in self.calls.values():
            if not call.exclusive and call.legacy_id is not None:
                return call
        return None

    # The client's retry -------------------------------------------------------------------

    def _retry(self, message: Message, meta: RequestMeta) -> None:
        params = message["params"]
        responses = params.get("inputResponses", {})
        state = params["requestState"]
        if not isinstance(state, str) or not isinstance(responses, dict):
            self.ctx.fail(CLIENT, message["id"], errors.retry_fields_invalid())
            return
        call = redeem(self.mode.secret, state, message["method"], params, self.calls,
                      self.ctx.now)
        if isinstance(call, StateProblem):
            reject_state(self.ctx, message["id"], call)
            return
        call.nonce = None  # single use: this state is spent (mrtr.mdx §Server Requirements)
        self.ctx.cancel_timer(Deadline(call.key, CallDue.PARKED))
        call.move(CallStage.RESUMED)
        call.owner = message["id"]
        call.meta = meta
        call.params = params
        call.retried = True
        call.round_ids.append(typed(message["id"]))
        self.rounds[typed(message["id"])] = call
        self.ctx.log("info", "mrtr.resumed", client_id=call.owner, answered=sorted(responses))
        self._resume(call, responses)

    def _resume(self, call: ParkedCall, responses: Message) -> None:
        if call.outcome is not None:
            outcome, call.outcome = call.outcome, None
            self._deliver(call, outcome)
        elif call.legacy_id is not None:  # at the server, which has its answers now
            self._relay_answers(call, responses)
            self.router.start_clock(call.legacy_id)
            self.mode.prepare_logs(call.meta)
            if call.questions:  # unanswered or asked while parked: another round
                self._gather(call)
            else:
                call.move(CallStage.RUNNING)
        else:
            self.own.answered(call, responses)

    def _relay_answers(self, call: ParkedCall, responses: Message) -> None:
        """Answer the legacy server's shipped questions with the client's inputResponses."""
        for question in list(call.questions.values()):
            response = responses.get(question.key)
            if question.key not in call.shipped or not isinstance(response, dict):
                continue  # mrtr.mdx: missing answers are asked for again, unknown keys ignored
            self._forget(call, question)
            if question.method == "roots/list" and isinstance(response.get("roots"), list):
                self.roots.relayed(response["roots"], self.ctx.now)
            answer = legacy_answer(question.method, response, self.mode.version)
            if isinstance(answer, str):
                self.ctx.log("warning", "input.unfit_answer", method=question.method,
                             key=question.key, problem=answer)
                self.ctx.fail(SERVER, question.legacy_id, errors.answer_unfit(answer))
            else:
                self.ctx.reply(SERVER, question.legacy_id, answer)

    # Ending -------------------------------------------------------------------------------

    def on_server_cancelled(self, request_id: object) -> None:
        """The legacy server withdrew one of its questions (legacy cancellation.mdx)."""
        if not is_request_id(request_id):
            return
        entry = self.asked.pop(typed(request_id), None)
        if entry is not None:
            call, key = entry
            call.questions.pop(key, None)
            self.ctx.log("info", "mrtr.withdrawn", key=key, shipped=key in call.shipped)

    def cancel(self, request_id: object, reason: str | None) -> bool:
        """The client cancelled one of a call's rounds: end the call. False if not a round."""
        if not is_request_id(request_id):
            return False
        call = self.rounds.get(typed(request_id))
        if call is None:
            return False
        if call.owner is not None and typed(call.owner) != typed(request_id):
            # An earlier round's id names the same call; the round in progress must still
            # get its one answer.
            self.ctx.fail(CLIENT, call.owner, errors.round_cancelled(request_id))
        self.ctx.log("info", "mrtr.cancelled", client_id=request_id, method=call.method)
        self._end(call, reason or "cancelled by the client")
        return True

    def on_timer(self, key: Deadline) -> None:
        call = self.calls.get(key.owner)  # type: ignore[call-overload]  # a call's key
        if call is None:
            return
        if key.kind is CallDue.GATHER:
            self.ship(call)
        elif key.kind is CallDue.URL:
            self.resend(call)
        else:
            timeout = self.ctx.config.parked_timeout
            self.ctx.log("warning", "mrtr.expired", method=call.method, parked_s=timeout)
            self._end(call, f"the client did not retry within {timeout:g} s")

    def _end(self, call: ParkedCall, reason: str) -> None:
        """Stop a call wherever it is (§5.8.4.6): cancel it at the server, answer its questions."""
        if call.legacy_id is not None:
            self.router.cancel(SERVER, call.legacy_id, reason)
        self._release(call)
        self.abandon_questions(call, reason)
        self.drop(call)
        self.pump()

    def abandon_questions(self, call: ParkedCall, reason: str) -> None:
        if not call.questions:
            return  # most calls never ask anything
        for question in list(call.questions.values()):
            self._forget(call, question)
            if question.legacy_id is None:
                continue
            if question.method == "elicitation/create":
                self.ctx.reply(SERVER, question.legacy_id, {"action": "cancel"})
            else:
                self.ctx.fail(SERVER, question.legacy_id, errors.question_abandoned(reason))

    def _forget(self, call: ParkedCall, question: Question) -> None:
        call.questions.pop(question.key, None)
        if question.legacy_id is not None:
            self.asked.pop(typed(question.legacy_id), None)

    def schedule(self, call: ParkedCall, kind: CallDue, delay: float) -> None:
        call.scheduled = True
        self.ctx.schedule(Deadline(call.key, kind), delay)

    def drop(self, call: ParkedCall) -> None:
        call.move(CALL_ENDED)  # a call is dropped once: only live calls are in calls and rounds
        self.calls.pop(call.key, None)
        rounds = self.rounds
        for round_id in call.round_ids:
            if rounds.get(round_id) is call:
                del rounds[round_id]
        if call.questions:
            for question in list(call.questions.values()):
                self._forget(call, question)
        if call.scheduled:
            for kind in CallDue:
                self.ctx.cancel_timer(Deadline(call.key, kind))
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
                self.ctx.fail(CLIENT, call.owner, errors.server_lost(reason, data, call.method))
            self.drop(call)
        self.holder = None
        self.shared = 0
