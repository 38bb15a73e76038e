"""Mode B's URL round: a legacy -32042 (URL elicitation required) on a call becomes a round of
URL-mode elicitations, and the call goes to the server again once the user has been there
(§5.9 (ii), §11.18).

Must not park or send: inputs.py ships the round and re-sends the call; this reads the
-32042 and keeps which elicitations are through.
"""

from __future__ import annotations

from dataclasses import field

from bridge.core.codec import Message
from bridge.core.modern_server_legacy_client.questions import Question
from bridge.core.record import record


@record(frozen=True)
class UrlRound:
    """The URL elicitations a legacy -32042 asked for: the call goes again once all are done."""

    waiting: frozenset[str]  # their elicitationIds
    error: str  # the -32042's message, for the client if the user declines
    done: set[str] = field(default_factory=set)  # those elicitation/complete named

    def finished(self) -> bool:
        return self.waiting <= self.done


def url_questions(error: Message) -> list[Question]:
    """One URL elicitation per entry of a -32042's data.elicitations; [] if any is malformed."""
    data = error.get("data")
    listed = data.get("elicitations") if isinstance(data, dict) else None
    questions = [_url_question(e) for e in listed] if isinstance(listed, list) else []
    return [] if None in questions else [q for q in questions if q is not None]


def _url_question(elicitation: object) -> Question | None:
    if not isinstance(elicitation, dict):
        return None
    eid = elicitation.get("elicitationId")
    if not all(isinstance(elicitation.get(k), str) for k in ("url", "message", "elicitationId")):
        return None
    params = {"mode": "url", "message": elicitation["message"], "url": elicitation["url"],
              "elicitationId": eid}
    return Question.asked(f"url-{eid}", None, "elicitation/create", params)
