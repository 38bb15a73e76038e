"""Mode B's rounds of the bridge's own asking: the URL elicitations a legacy -32042 asks for
(§5.9 (ii), url_round.py) and the client's roots before a call that declares them (§5.8.5);
then what the client answered, after which the call goes (again) to the legacy server.

Must not park, ship, re-send or end a call itself: the parking (inputs.py, `OwnRoundsHost`)
does; this decides what the bridge asks, and what the client's answers mean.
"""

from __future__ import annotations

from typing import Protocol

from bridge.core import errors
from bridge.core.capabilities import declares
from bridge.core.codec import Message
from bridge.core.context import Context
from bridge.core.events import CLIENT
from bridge.core.modern_server_legacy_client.parked_call import CallDue, CallStage, ParkedCall
from bridge.core.modern_server_legacy_client.questions import Question
from bridge.core.modern_server_legacy_client.roots import Roots
from bridge.core.modern_server_legacy_client.roots_sync import RootsSync
from bridge.core.modern_server_legacy_client.url_round import UrlRound, url_questions


class OwnRoundsHost(Protocol):
    """What the bridge's own rounds need of the parking."""

    ctx: Context
    calls: dict[str, ParkedCall]
    roots: Roots
    sync: RootsSync

    def ship(self, call: ParkedCall) -> None:
        """Answer the call's round with input_required: every question still open."""
    def resend(self, call: ParkedCall) -> None:
        """Send the call to the legacy server again."""
    def drop(self, call: ParkedCall) -> None: ...
    def abandon_questions(self, call: ParkedCall, reason: str) -> None: ...
    def schedule(self, call: ParkedCall, kind: CallDue, delay: float) -> None: ...


class OwnRounds:
    """The questions the bridge asks the client itself, for the calls of one parking."""

    __slots__ = ("ctx", "parking")

    def __init__(self, parking: OwnRoundsHost) -> None:
        self.parking = parking
        self.ctx = parking.ctx

    def ask_roots(self, call: ParkedCall) -> None:
        """Before the call goes to the server: one round asking the client for its roots."""
        question = Question.asked(call.next_key(), None, "roots/list", None)
        call.questions[question.key] = question
        self.ctx.log("info", "roots.asked", client_id=call.owner,
                     known=self.parking.roots.known is not None)
        self.parking.ship(call)

    def roots_changed(self) -> None:
        """The client said its roots changed: the next call that declares roots asks."""
        self.parking.roots.stale = True
        self.ctx.log("info", "roots.stale")

    def url_required(self, call: ParkedCall, error: Message) -> None:
        """A legacy -32042 on an eligible call: ask for its URL elicitations as a round."""
        parking = self.parking
        parking.abandon_questions(call, "the call ended")
        if not declares(call.meta.capabilities, ("elicitation", "url")):
            self.ctx.fail(CLIENT, call.owner, errors.url_elicitation_undeclared())
            parking.drop(call)
            return
        questions = url_questions(error)
        if not questions:
            self.ctx.fail(CLIENT, call.owner, errors.url_elicitation_malformed(error))
            parking.drop(call)
            return
        for question in questions:
            call.questions[question.key] = question
        call.url = UrlRound(frozenset(q.elicitation_id or "" for q in questions),
                            str(error.get("message", "")))
        parking.ship(call)

    def answered(self, call: ParkedCall, responses: Message) -> None:
        """The client answered the bridge's own questions: the URL elicitations of a -32042,
        or the roots round; then the call goes (again) to the server."""
        parking = self.parking
        answered = {k: responses[k] for k in call.questions if isinstance(responses.get(k), dict)}
        declined = sorted(k for k, r in answered.items()
                          if call.questions[k].method == "elicitation/create"
                          and r.get("action") != "accept")
        if declined:
            self.ctx.fail(CLIENT, call.owner, errors.url_elicitation_declined(
                call.url.error if call.url else "", declined))
            parking.drop(call)
            return
        for key, response in answered.items():
            if call.questions.pop(key).method == "roots/list":
                call.gave_roots = True
                parking.sync.learn(response)
        for key in [k for k, q in call.questions.items() if q.method == "roots/list"]:
            del call.questions[key]  # the bridge's own curiosity: never insisted on
        if call.questions:
            parking.ship(call)  # some not answered: ask for them again
        elif call.url is None or call.url.finished() \
                or self.ctx.config.url_elicitation_wait <= 0:
            parking.resend(call)
        else:
            # accept means consent, not completion (§11.18): give the user time to finish,
            # unless the server says notifications/elicitation/complete first.
            call.move(CallStage.AWAITING_URL)
            parking.schedule(call, CallDue.URL, self.ctx.config.url_elicitation_wait)

    def elicitation_complete(self, elicitation_id: object) -> None:
        """The legacy server says a URL elicitation is through: a call that waited only for
        it goes again."""
        if not isinstance(elicitation_id, str):
            return
        for call in list(self.parking.calls.values()):
            url = call.url
            if url is not None and elicitation_id in url.waiting:
                url.done.add(elicitation_id)
                if call.stage is CallStage.AWAITING_URL and url.finished():
                    self.parking.resend(call)
