"""JSON-RPC 2.0 framing: classify what a peer sent, and build responses and errors.

Must not raise on anything a peer sends, and must not know MCP methods or eras.
"""

from __future__ import annotations

from typing import Any, Final, Literal, TypeGuard

from bridge.core.codec import (
    MAX_DEPTH,
    DecodeError,
    Message,
    RawNumber,
    TooDeep,
    decode,
    decode_spelled,
    depth_of,
)
from bridge.core.eras import INVALID_PARAMS, INVALID_REQUEST, PARSE_ERROR
from bridge.core.salvage import both_ends, top_level

Kind = Literal["request", "notification", "response", "batch", "invalid", "refused"]
RequestId = str | int
# A request id as the bridge receives and keeps it: MCP's RequestId, or a number id kept with
# its spelling (RawNumber) or as a float, which an error answer echoes (JSON-RPC 2.0 §5).
WireId = str | int | float | RawNumber
# A request id as a dict key that keeps its JSON type (see typed_id).
TypedId = tuple[type, WireId | None]

TOO_DEEP = f"nested deeper than {MAX_DEPTH} levels (mcp-rosetta's limit)"
# How much of a line too deep to be read at all is searched for its top-level members: enough
# for any id written before the params, and a bounded cost whatever the line's length.
_SALVAGE_BYTES = 65536

# A member's default in `message.get`, told apart from any JSON value (null included).
ABSENT: Final = object()


class Inbound:
    """One classified message: its kind, the decoded object, and why it is invalid if it is.

    For `invalid`, `id` holds the request id when one could be recovered, and `code` the
    JSON-RPC error code to answer with (JSON-RPC 2.0 §5: id null when unknown), or None
    when nothing may be answered (a malformed response is never answered).

    `refused` is a message the bridge will not carry (too deep, too long, or not JSON: see
    limits.py): `message` holds its top-level members as far as they could be read
    (salvage.py), `id` its request id or None, `reason` why it was refused, and `code` the
    error it is answered with (-32700 for what is not JSON, else -32600), or None for a
    notification read whole, which is never answered.

    A number id (`2.0`, `2.5`) is a RawNumber holding its text, so that an answer carries the
    id spelled as it came.

    `line` is the bytes the message was decoded from (set by `parse_inbound` for one message
    read whole), for a handler that forwards it with only its id changed.
    """

    __slots__ = ("code", "id", "items", "kind", "line", "message", "reason")

    def __init__(
        self,
        kind: Kind,
        message: Any,
        id: Any = None,
        line: bytes | None = None,
        *,
        reason: str = "",
        code: int | None = INVALID_REQUEST,
        items: list[Inbound] | None = None,
    ) -> None:
        # `id` and `line` positional: parse_inbound's common case passes nothing by keyword.
        self.kind = kind
        self.message = message
        self.id = id
        self.line = line
        self.reason = reason
        self.code = code
        self.items = items

    def __repr__(self) -> str:
        return f"Inbound({self.kind!r}, {self.message!r}, reason={self.reason!r})"


def is_request_id(value: object) -> TypeGuard[WireId]:
    """MCP's RequestId is a string or an integer (of any size); a bool is neither.

    An integer as JSON Schema counts one: `2.0` is one (a float, or a RawNumber with its
    text), `2.5` is not.
    """
    kind = type(value)
    if kind is str or kind is int:
        return True
    if type(value) is float:
        return value.is_integer()
    return type(value) is RawNumber and value.is_integer


def _answerable_id(value: object) -> WireId | None:
    """The id an error about an invalid message goes under: a request id, or any other number
    (JSON-RPC 2.0 §5: the id is echoed when it could be detected); else None (id null)."""
    if is_request_id(value):
        return value
    if type(value) is float or type(value) is RawNumber:
        return value
    return None


def typed_id(value: WireId | None) -> TypedId:
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
        return _not_json(line, exc)
    if type(message) is dict:  # nearly every line: classified with no call in between
        id_ = message.get("id", ABSENT)
        id_kind = type(id_)
        if id_kind is not float and message.get("jsonrpc") == "2.0":
            # The three shapes nearly every line has, each given the verdict _classify_object
            # would give it: a call whose method is a string, whose params (if any) are an
            # object and whose id (if any) a string or an integer (a bool's type is not int);
            # a result (an object) with an id and no method or error. Anything else goes
            # the whole way (`classified`). relay/lane.py reads the same shapes.
            method = message.get("method", ABSENT)
            if type(method) is str:
                params = message.get("params", ABSENT)
                if params is ABSENT or type(params) is dict:
                    bytes_line = line if type(line) is bytes else None
                    if id_kind is str or id_kind is int:
                        return Inbound("request", message, id_, bytes_line)
                    if id_ is ABSENT:
                        return Inbound("notification", message, None, bytes_line)
            elif method is ABSENT and id_ is not ABSENT and type(message.get("result")) is dict \
                    and "error" not in message:
                return Inbound("response", message, id_, line if type(line) is bytes else None)
    return classified(line, message, batching)


def classified(line: bytes | str | None, message: object, batching: bool = False) -> Inbound:
    """The whole classification of `message`, decoded from `line` (parse_inbound's verdict
    on any value, common shape or not); None: no line spells it (a float id stays a float)."""
    if type(message) is dict:
        if type(message.get("id")) is float and line is not None:
            message = _spelled_object(line, message)
        inbound = _classify_object(message)
    else:
        if line is not None and _has_float_id(message):
            message = _spell_ids(line, message)
        inbound = classify(message, batching=batching)
    if type(line) is bytes:
        inbound.line = line
    return inbound


def refused(members: Message, reason: str, code: int = INVALID_REQUEST) -> Inbound:
    """A message the bridge will not carry, known by its top-level `members`."""
    return Inbound("refused", members, reason=reason, id=_answerable_id(members.get("id")),
                   code=code)


# The bytes a JSON text may begin with (RFC 8259 §2, after whitespace).
_JSON_STARTS = frozenset(b'{["-0123456789tfn')


def too_long(head: bytes, tail: bytes, limit: int) -> Inbound:
    """A line over `limit` bytes, known by its first and last bytes: refused with -32600, or
    with -32700 when its first bytes cannot begin any JSON text."""
    first = head.lstrip(b" \t\n\r")[:1]
    code = INVALID_REQUEST if not first or first[0] in _JSON_STARTS else PARSE_ERROR
    return refused(both_ends(head, tail),
                   f"longer than {limit} bytes (mcp-rosetta's max_message_bytes)", code)


def _has_float_id(value: object) -> bool:
    if type(value) is dict:
        return type(value.get("id")) is float
    return type(value) is list and any(
        type(item) is dict and type(item.get("id")) is float for item in value)


def _spell_ids(line: bytes | str, value: object) -> object:
    """`value` with its number ids (`2.0`) as their text, read again from `line`: as floats
    they would come back spelled otherwise (`2.00` as `2.0`), and be taken for integers they
    are not (`2.0000000000000001`). Rare: one more parse of the line, by the stdlib."""
    spelled = decode_spelled(line)
    if type(value) is dict:
        return _with_id_of(value, spelled)
    if type(value) is not list or type(spelled) is not list or len(spelled) != len(value):
        return value
    return [_with_id_of(item, original) for item, original in zip(value, spelled, strict=True)]


def _spelled_object(line: bytes | str, message: Message) -> Message:
    """One message's float id as its text (see `_spell_ids`)."""
    original = decode_spelled(line)
    if type(original) is dict and type(original.get("id")) is RawNumber:
        return {**message, "id": original["id"]}
    return message


def _with_id_of(message: object, original: object) -> object:
    if type(message) is dict and type(message.get("id")) is float and type(original) is dict \
            and type(original.get("id")) is RawNumber:
        return {**message, "id": original["id"]}
    return message


# How much of a line that is not JSON is searched for its top-level members: enough for any
# id written before the params, at a bounded cost whatever the line's length. Its last bytes
# are not searched: in a broken line the last "}" may close a nested object, not the message.
_UNREADABLE_BYTES = 4096


def _not_json(line: bytes | str, error: DecodeError) -> Inbound:
    """A line that is not JSON, refused with -32700: under its id when one can be read, since
    JSON-RPC 2.0 §5 asks for id null only when the id could not be detected."""
    data = line if isinstance(line, bytes) else line.encode(errors="surrogatepass")
    head = data[:_UNREADABLE_BYTES]
    members = _utf8_repaired(data)
    if members is None:
        return refused(top_level(head), f"not JSON: {error}", PARSE_ERROR)
    if type(members.get("id")) is float:
        members = _with_spelled_id(members, head)
    return refused(members, "not JSON: not valid UTF-8 (RFC 8259 §8.1)", PARSE_ERROR)


_REPLACEMENT = "\ufffd"


def _utf8_repaired(data: bytes) -> Message | None:
    """The top-level members of `data` if its only fault is invalid UTF-8 (inside strings),
    read with each bad byte replaced; an id the bytes touched is not kept. None otherwise."""
    try:
        data.decode("utf-8")
        return None  # valid UTF-8: the fault lies elsewhere
    except UnicodeDecodeError:
        pass
    try:
        value = decode(data.decode("utf-8", errors="replace").encode())
    except DecodeError:
        return None
    if not isinstance(value, dict):
        return {}
    raw_id = value.get("id")
    if type(raw_id) is str and _REPLACEMENT in raw_id:
        value = {k: v for k, v in value.items() if k != "id"}
    return value


def _too_deep(line: bytes | str, value: object, batching: bool) -> Inbound:
    if _has_float_id(value):
        value = _spell_ids(line, value)
    if batching and isinstance(value, list) and value:
        # Elements travel one by one: only those too deep themselves are refused.
        return Inbound("batch", value, items=[
            _refused_whole(m) if type(m) is dict and depth_of(m) > MAX_DEPTH
            else _classify_element(m) for m in value])
    if value is None:  # too deep even to be read: its members come from its first bytes
        head = line[:_SALVAGE_BYTES]
        value = top_level(head if isinstance(head, bytes) else head.encode(errors="replace"))
    elif isinstance(value, dict):
        return _refused_whole(value)
    return refused(value if isinstance(value, dict) else {}, TOO_DEEP)


def _refused_whole(message: Message) -> Inbound:
    """A message too deep but read whole. One with no id is a notification (or a response),
    never answered (JSON-RPC 2.0 §4.1), even when the bridge refuses it."""
    if "id" in message:
        return refused(message, TOO_DEEP)
    return Inbound("refused", message, reason=TOO_DEEP, code=None)


def _with_spelled_id(members: Message, head: bytes) -> Message:
    """`members` with a float id replaced by its text as the line's head shows it (if it does)."""
    spelled = top_level(head).get("id")
    return {**members, "id": spelled} if type(spelled) is RawNumber else members


def classify(message: object, *, batching: bool = False) -> Inbound:
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


def _classify_element(message: object) -> Inbound:
    if isinstance(message, dict):
        return _classify_object(message)
    return Inbound("invalid", message, reason="a batch element must be a JSON object")


def _classify_object(message: Message) -> Inbound:
    # Response-shaped (result or error, no method): never answered, even when malformed.
    # Every other malformed object is an Invalid Request, answered under its id if it has one.
    method = message.get("method", ABSENT)
    if method is ABSENT:
        if "result" in message or "error" in message:
            if message.get("jsonrpc") != "2.0":
                return _bad_response(message, 'missing "jsonrpc": "2.0"')
            return _classify_response(message)
        if message.get("jsonrpc") != "2.0":
            return _invalid(message, 'missing "jsonrpc": "2.0"')
        return _invalid(message, "neither method nor result nor error")
    if message.get("jsonrpc") != "2.0":
        return _invalid(message, 'missing "jsonrpc": "2.0"')
    return _classify_call(message, method)


def _classify_call(message: Message, method: object) -> Inbound:
    if type(method) is not str:
        return _invalid(message, "method must be a string")
    params = message.get("params", ABSENT)
    if params is not ABSENT and type(params) is not dict:
        # JSON-RPC allows an array, MCP only an object: invalid params; else invalid request.
        code = INVALID_PARAMS if isinstance(params, list) else INVALID_REQUEST
        return _invalid(message, "params must be an object", code)
    id_ = message.get("id", ABSENT)
    if id_ is ABSENT:
        return Inbound("notification", message)
    kind = type(id_)
    if kind is not str and kind is not int and not is_request_id(id_):
        return _invalid(message, "id must be a string or an integer (a number with no fraction)")
    return Inbound("request", message, id=id_)


def _classify_response(message: Message) -> Inbound:
    result = message.get("result", ABSENT)
    if result is not ABSENT:
        if "error" in message:
            return _bad_response(message, "a response needs exactly one of result, error")
        if type(result) is not dict:
            return _bad_response(message, "result must be an object") if "id" in message \
                else _bad_response(message, "a response needs an id")
    elif not _is_error_object(message["error"]):
        return _bad_response(message, "error must be an object with an integer code") \
            if "id" in message else _bad_response(message, "a response needs an id")
    id_ = message.get("id", ABSENT)
    if id_ is ABSENT:
        return _bad_response(message, "a response needs an id")
    return Inbound("response", message, id=id_)


def _bad_response(message: Message, reason: str) -> Inbound:
    return Inbound("invalid", message, reason=reason, code=None)


def _is_error_object(error: object) -> bool:
    code = error.get("code") if isinstance(error, dict) else None
    return isinstance(code, int) and not isinstance(code, bool)


def _invalid(message: Message, reason: str, code: int = INVALID_REQUEST) -> Inbound:
    # Keep the id when it can be read, so the sender can get an error it can correlate.
    return Inbound("invalid", message, reason=reason, id=_answerable_id(message.get("id")),
                   code=code)


def result_response(id: WireId | None, result: Message) -> Message:
    return {"jsonrpc": "2.0", "id": id, "result": result}


def error_response(id: WireId | None, code: int, message: str, data: object = None) -> Message:
    error: Message = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return {"jsonrpc": "2.0", "id": id, "error": error}


def request(id: RequestId, method: str, params: Message | None) -> Message:
    message: Message = {"jsonrpc": "2.0", "id": id, "method": method}
    if params is not None:
        message["params"] = params
    return message


def notification(method: str, params: Message | None = None) -> Message:
    message: Message = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        message["params"] = params
    return message
