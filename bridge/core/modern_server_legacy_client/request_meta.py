"""The per-request `_meta` a modern server reads and checks before serving a request.

Must not decide what to do with a valid request: it only reads the envelope (basic/index.mdx
§_meta "Per-request protocol fields") and names the error a modern server owes a bad one.
"""

from __future__ import annotations

from bridge.core import errors
from bridge.core.codec import Message
from bridge.core.eras import (
    META_CLIENT_CAPABILITIES,
    META_CLIENT_INFO,
    META_LOG_LEVEL,
    META_PROTOCOL_VERSION,
    MODERN_PROTOCOL_VERSION,
    ProgressToken,
    is_log_level,
    is_progress_token,
)
from bridge.core.errors import OwnError
from bridge.core.record import record


# A value, but not frozen: one is made for every modern request, and a frozen record's
# __init__ costs more (a store through each slot's descriptor). Nothing mutates it.
@record()
class RequestMeta:
    """What one modern request declared about itself: capabilities, identity, opt-ins (its
    version is checked, so it need not be kept)."""

    capabilities: Message
    client_info: Message | None
    log_level: str | None
    progress_token: ProgressToken | None  # progress.mdx: a string or a number


def read_meta(message: Message) -> RequestMeta | OwnError:
    """The request's envelope, or the error a modern server must refuse the request with.

    basic/index.mdx: a missing required field is -32602; versioning.mdx: a version the
    server does not support is -32022 naming the supported ones; logging.mdx: an unknown
    logLevel SHOULD be -32602.
    """
    # Type tests rather than isinstance: a decoded object is a dict, never a subclass.
    params = message.get("params")
    meta = params.get("_meta") if type(params) is dict else None
    if type(meta) is not dict:
        return errors.envelope_missing()
    version = meta.get(META_PROTOCOL_VERSION)
    if version != MODERN_PROTOCOL_VERSION:  # one test for the common case, then which error
        if type(version) is not str:
            return errors.envelope_field_missing(META_PROTOCOL_VERSION)
        return errors.version_unsupported(version)
    caps = meta.get(META_CLIENT_CAPABILITIES)
    if type(caps) is not dict:
        return errors.envelope_field_missing(META_CLIENT_CAPABILITIES)
    info = meta.get(META_CLIENT_INFO)
    if info is not None and type(info) is not dict:
        return errors.client_info_invalid(META_CLIENT_INFO)
    level = meta.get(META_LOG_LEVEL)
    if level is not None and not is_log_level(level):
        return errors.invalid_log_level(level)
    token = meta.get("progressToken")
    if token is not None and not is_progress_token(token):
        return errors.progress_token_invalid()
    return RequestMeta(caps, info, level, token)


def usable_info(info: Message | None) -> bool:
    """Whether an Implementation has what a legacy one requires: a name and a version."""
    return isinstance(info, dict) and isinstance(info.get("name"), str) \
        and isinstance(info.get("version"), str)
