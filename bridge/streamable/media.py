"""Media types of Streamable HTTP, and what a client's `Accept` header lets the server send.

Must not decide the shape of an answer (`headers.takes_stream` and the router do); it only
reads headers.
"""

from __future__ import annotations

from typing import Final

JSON: Final = "application/json"
EVENT_STREAM: Final = "text/event-stream"
ACCEPT: Final = f"{JSON}, {EVENT_STREAM}"
"""streamable-http.mdx §Sending Messages 2: what a client lists, both."""


def media_type(header: str | None) -> str:
    """A Content-Type's media type alone, lower-cased ("" if none)."""
    return (header or "").partition(";")[0].strip().lower()


def accepts(accept: str | None, media: str) -> bool:
    """Whether an `Accept` header admits `media` (RFC 9110 §12.5.1): no header admits
    anything; a range admits it by its exact type, `type/*` or `*/*`, unless its `q` is 0."""
    if accept is None:
        return True
    kind = media.partition("/")[0]
    for part in accept.split(","):
        name, _, parameters = part.partition(";")
        name = name.strip().lower()
        if name in (media, f"{kind}/*", "*/*") and not _refused(parameters):
            return True
    return False


def _refused(parameters: str) -> bool:
    """A media range's `q=0` (RFC 9110 §12.4.2: not acceptable)."""
    for parameter in parameters.split(";"):
        key, _, value = parameter.partition("=")
        if key.strip().lower() == "q":
            try:
                return float(value.strip()) == 0
            except ValueError:
                return False
    return False
