"""Mode B's questions: an input request of the legacy server, as the modern client is asked
it and as its answer goes back; and the answers the bridge gives itself when no call can own
a question.

Must not park or resume calls (inputs.py does): this holds what one question is and how the
bridge answers, as a legacy client with nobody to ask would, what it cannot route (§5.8.3).
"""

from __future__ import annotations

from bridge.core import errors
from bridge.core.capabilities import declares, input_capability
from bridge.core.codec import Message
from bridge.core.context import Context
from bridge.core.events import SERVER
from bridge.core.jsonrpc import WireId
from bridge.core.modern_server_legacy_client.roots import Roots
from bridge.core.record import record

# Legacy-only fields of an input request's params; a modern one has none of them (§5.5).
_LEGACY_ONLY_PARAMS = frozenset({"task", "_meta", "elicitationId"})


@record(frozen=True)
class Question:
    """One input request of the legacy server (or of the bridge's own making), waiting for
    the modern client's answer."""

    key: str  # the inputRequests key, unique within the call
    legacy_id: WireId | None  # the legacy request's id; None for one the bridge asks itself
    method: str
    raw_params: object  # as the legacy server sent them, for capability gating
    params: Message  # as a modern input request carries them
    elicitation_id: str | None

    @classmethod
    def asked(cls, key: str, legacy_id: WireId | None, method: str, params: object) -> Question:
        eid = params.get("elicitationId") if isinstance(params, dict) else None
        return cls(key, legacy_id, method, params, _modern_input_params(params),
                   eid if isinstance(eid, str) else None)

    def need(self) -> tuple[str, ...]:
        """The capability path the question needs the client to have declared."""
        return input_capability(self.method, self.raw_params)

    def input_request(self) -> Message:
        request: Message = {"method": self.method}
        if self.params:
            request["params"] = self.params
        return request


def _modern_input_params(params: object) -> Message:
    if not isinstance(params, dict):
        return {}
    return {k: v for k, v in params.items() if k not in _LEGACY_ONLY_PARAMS}


def allowed(caps: Message, question: Question) -> bool:
    """mrtr.mdx: never send an input request the current request did not declare (§5.6)."""
    return declares(caps, question.need())


def legacy_answer(method: str, response: Message, version: str) -> Message | str:
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


class LocalAnswers:
    """The bridge's own answers to questions nobody can be asked (§5.8.3)."""

    __slots__ = ("ctx", "roots")

    def __init__(self, ctx: Context, roots: Roots) -> None:
        self.ctx = ctx
        self.roots = roots

    def unsolicited(self, message: Message) -> None:
        """No call that may ask is running: answer as a legacy client with nobody to ask."""
        method = message["method"]
        self.ctx.log("info", "input.answered_locally", method=method, reason="no eligible call")
        if method == "roots/list":
            self.ctx.reply(SERVER, message["id"], self.roots.answer())
        elif method == "elicitation/create":
            self.ctx.reply(SERVER, message["id"], {"action": "cancel"})
        else:
            self.ctx.fail(SERVER, message["id"], errors.sampling_unavailable())

    def answers_locally(self, question: Question) -> bool:
        """Whether an undeclared question is answered without a refusal: roots/list, from
        the roots the bridge knows (nobody is asked, so the call's capabilities are not
        overstepped, and a refusal would only withhold what the server was given before)."""
        if question.method != "roots/list" or not self.roots.any_known():
            return False
        self.ctx.log("info", "input.answered_locally", method=question.method,
                     reason="the request did not declare roots; the known roots")
        self.ctx.reply(SERVER, question.legacy_id, self.roots.answer())
        return True

    def refuse(self, question: Question, caps: Message) -> None:
        """The call did not declare what the question needs: answer as such a client would.

        A whole capability missing is an unknown method to a legacy client (-32601); a missing
        sub-capability (an elicitation mode, sampling tools) is invalid params (-32602, as
        2025-11-25 client/elicitation.mdx §Error Handling says for modes).
        """
        need = question.need()
        self.ctx.log("info", "input.refused", method=question.method, needs=".".join(need))
        if declares(caps, need[:1]):
            self.ctx.fail(SERVER, question.legacy_id, errors.capability_part_undeclared(need))
        else:
            self.ctx.fail(SERVER, question.legacy_id, errors.capability_undeclared(need[0]))
