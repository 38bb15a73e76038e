"""JSON-RPC 2.0 framing: classify what a peer sent, and build responses and errors.

Must not raise on anything a peer sends, and must not know MCP methods or eras.
"""

from __future__ import annotations

from typing import Any, Final, Literal

from bridge.core.codec import MAX_DEPTH, DecodeError, RawNumber, TooDeep, decode, depth_of
from bridge.core.eras import INVALID_PARAMS, INVALID_REQUEST, PARSE_ERROR
from bridge.core.salvage import top_level

Kind = Literal["request", "notification", "response", "batch", "invalid", "refused"]
RequestId = str | int

TOO_DEEP = f"nested deeper than {MAX_DEPTH} levels (mcp-rosetta's limit)"
# How much of a line too deep to be read at all is searched for its top-level members: enough
# for any id written before the params, and a bounded cost whatever the line's length.
_SALVAGE_BYTES = 65536

_NO_ID: Final = object()


class Inbound:
    """One classified message: its kind, the decoded object, and why it is invalid if it is.

    For `invalid`, `id` holds the request id when one could be recovered, and `code` the
    JSON-RPC error code to answer with (JSON-RPC 2.0 §5: id null when unknown), or None
    when nothing may be answered (a malformed response is never answered).

    `refused` is a message the bridge will not carry (too deep, or too long: see limits.py):
    `message` holds its top-level members as far as they could be read (salvage.py), `id` its
    usable request id or None, and `reason` why it was refused.
    """

    __slots__ = ("code", "id", "items", "kind", "message", "reason")

    def __init__(
        self,
        kind: Kind,
        message: Any,
        *,
        reason: str = "",
        id: Any = None,
        code: int | None = INVALID_REQUEST,
        items: list[Inbound] | None = None,
    ) -> None:
        self.kind = kind
        self.message = message
        self.reason = reason
        self.id = id
        self.code = code
        self.items = items

    def __repr__(self) -> str:
        return f"Inbound({self.kind!r}, {self.message!r}, reason={self.reason!r})"


def is_request_id(value: Any) -> bool:
    """MCP's RequestId is a string or an integer (of any size); a bool is neither, nor a float."""
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool)) \
        or (type(value) is RawNumber and value.is_integer)


def typed_id(value: Any) -> tuple[type, Any]:
    """A request id as a dict key that keeps its JSON type: 1 and "1" are different ids.

    Only for values that passed `is_request_id` (an unhashable value would raise).
    """
    return (type(value), value)


def parse_inbound(line: bytes | str, *, batching: bool = False) -> Inbound:
    """Classify one line from a peer; never raises.

    Returns `request`, `notification`, `response`, `batch` (only when `batching`, for a
    2025-03-26 peer: its `items` are the classified elements) or `invalid` with a reason.
    """
    try:
        message = decode(line)
    except TooDeep as exc:
        return _too_deep(line, exc.value, batching)
    except DecodeError as exc:
        return Inbound("invalid", None, reason=f"not JSON: {exc}", code=PARSE_ERROR)
    return classify(message, batching=batching)


def refused(members: dict[str, Any], reason: str) -> Inbound:
    """A message the bridge will not carry, known by its top-level `members`."""
    raw_id = members.get("id")
    return Inbound("refused", members, reason=reason, id=raw_id if is_request_id(raw_id) else None)


def _too_deep(line: bytes | str, value: Any, batching: bool) -> Inbound:
    if batching and isinstance(value, list) and value:
        # Elements travel one by one: only those too deep themselves are refused.
        return Inbound("batch", value, items=[
            refused(m, TOO_DEEP) if type(m) is dict and depth_of(m) > MAX_DEPTH
            else _classify_element(m) for m in value])
    if value is None:  # too deep even to be read: its members come from its first bytes
        head = line[:_SALVAGE_BYTES]
        value = top_level(head if isinstance(head, bytes) else head.encode(errors="replace"))
    return refused(value if isinstance(value, dict) else {}, TOO_DEEP)


def classify(message: Any, *, batching: bool = False) -> Inbound:
    """Classify one decoded JSON value (see `parse_inbound`)."""
    if isinstance(message, dict):
        return _classify_object(message)
    if isinstance(message, list):
        if not batching:
            return Inbound("invalid", message, reason="JSON-RPC batches need revision 2025-03-26")
        if not message:
            return Inbound("invalid", message, reason="empty batch")
        return Inbound("batch", message, items=[_classify_element(m) for m in message])
    return Inbound("invalid", message, reason="a message must be a JSON object")


def _classify_element(message: Any) -> Inbound:
    if isinstance(message, dict):
        return _classify_object(message)
    return Inbound("invalid", message, reason="a batch element must be a JSON object")


def _classify_object(message: dict[str, Any]) -> Inbound:
    # Response-shaped (result or error, no method): never answered, even when malformed. Any
    # other malformed object is an Invalid Request, answered under its id if it has one.
    if "method" not in message and ("result" in message or "error" in message):
        if message.get("jsonrpc") != "2.0":
            return _bad_response(message, 'missing "jsonrpc": "2.0"')
        return _classify_response(message)
    if message.get("jsonrpc") != "2.0":
        return _invalid(message, 'missing "jsonrpc": "2.0"')
    if "method" not in message:
        return _invalid(message, "neither method nor result nor error")
    return _classify_call(message)


def _classify_call(message: dict[str, Any]) -> Inbound:
    if not isinstance(message["method"], str):
        return _invalid(message, "method must be a string")
    params = message.get("params", _NO_ID)
    if params is not _NO_ID and not isinstance(params, dict):
        # JSON-RPC allows an array, MCP only an object: invalid params; else invalid request.
        code = INVALID_PARAMS if isinstance(params, list) else INVALID_REQUEST
        return _invalid(message, "params must be an object", code)
    if "id" not in message:
        return Inbound("notification", message)
    if not is_request_id(message["id"]):
        return _invalid(message, "id must be a string or an integer")
    return Inbound("request", message, id=message["id"])


def _classify_response(message: dict[str, Any]) -> Inbound:
    has_result = "result" in message
    if has_result and "error" in message:
        return _bad_response(message, "a response needs exactly one of result, error")
    if "id" not in message:
        return _bad_response(message, "a response needs an id")
    if not has_result and not _is_error_object(message["error"]):
        return _bad_response(message, "error must be an object with an integer code")
    if has_result and not isinstance(message["result"], dict):
        return _bad_response(message, "result must be an object")
    return Inbound("response", message, id=message["id"])


def _bad_response(message: dict[str, Any], reason: str) -> Inbound:
    return Inbound("invalid", message, reason=reason, code=None)


def _is_error_object(error: Any) -> bool:
    code = error.get("code") if isinstance(error, dict) else None
    return isinstance(code, int) and not isinstance(code, bool)


def _invalid(message: dict[str, Any], reason: str, code: int = INVALID_REQUEST) -> Inbound:
    # Keep the id when it is a usable one, so the sender can get an error it can correlate.
    raw_id = message.get("id")
    return Inbound("invalid", message, reason=reason, id=raw_id if is_request_id(raw_id) else None,
                   code=code)


def result_response(id: Any, result: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": id, "result": result}


def error_response(id: Any, code: int, message: str, data: Any = None) -> dict[str, Any]:
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return {"jsonrpc": "2.0", "id": id, "error": error}


def request(id: RequestId, method: str, params: dict[str, Any] | None) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": id, "method": method}
    if params is not None:
        message["params"] = params
    return message


def notification(method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        message["params"] = params
    return message
