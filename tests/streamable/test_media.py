"""What an Accept header admits (RFC 9110 §12.5.1), and so whether an answer may stream."""

from __future__ import annotations

import pytest

from bridge.streamable.headers import takes_stream
from bridge.streamable.media import EVENT_STREAM, JSON, accepts, media_type


@pytest.mark.parametrize(("accept", "stream", "json"), [
    (None, True, True),
    ("application/json, text/event-stream", True, True),
    ("application/json", False, True),
    ("text/event-stream", True, False),
    ("*/*", True, True),
    ("text/*", True, False),
    ("Application/JSON , TEXT/EVENT-STREAM;q=0.5", True, True),
    ("application/json, text/event-stream;q=0", False, True),
    ("application/json;q=0.0, */*", True, True),
    ("text/html", False, False),
])
def test_an_accept_header_admits_the_types_it_lists(accept: str | None, stream: bool,
                                                    json: bool) -> None:
    assert (accepts(accept, EVENT_STREAM), accepts(accept, JSON)) == (stream, json)
    headers = {} if accept is None else {"accept": accept}
    assert takes_stream(headers) is stream


def test_a_content_type_s_media_type_is_lower_case_without_parameters() -> None:
    assert media_type("Application/JSON; charset=utf-8") == JSON
    assert media_type(None) == ""
