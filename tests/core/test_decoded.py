"""A client message the shell decoded itself (`MessageDecoded`: the HTTP front reads a POST's
body to check its headers) is taken as its line would be: on generated scripts in every mode,
a Bridge fed each client line and one fed the same messages decoded produce the same actions
at every step, and are left with the same requests in flight."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from bridge.core.codec import DecodeError, decode
from bridge.core.config import CoreConfig
from bridge.core.events import MessageDecoded, MessageReceived
from tests.core.test_lanes import _STEPS, Step, _normal, _opened, _Pair


class _Decoded(_Pair):
    """`lane` takes every line; `full` takes each client line that is one JSON object as a
    `MessageDecoded`, with its line kept or not (`keep_line`)."""

    keep_line = True

    def feed(self, event: Any) -> list[tuple[object, ...]]:
        other = event
        if type(event) is MessageReceived and event.side == "client" \
                and type(event.message) is bytes:
            try:
                value = decode(event.message)
            except DecodeError:
                value = None
            if type(value) is dict:  # a float id is read from its line (its contract)
                kept = self.keep_line or type(value.get("id")) is float
                other = MessageDecoded("client", value, event.message if kept else None)
        got = _normal(self.lane.handle(event, self.now))
        want = _normal(self.full.handle(other, self.now))
        if other is not event and other.line is None:  # no line to forward as it came
            got, want = _unlined(got), _unlined(want)
        assert got == want, (event, got, want)
        self.told += [sent[2] for sent in got if sent[:2] == ("send", "client")]
        return got


class _Unlined(_Decoded):
    keep_line = False


def _unlined(actions: list[tuple[object, ...]]) -> list[tuple[object, ...]]:
    return [(*a[:3], None, *a[4:]) if a[0] == "send" else a for a in actions]


@settings(max_examples=300, deadline=None)
@given(mode=st.sampled_from(["P-legacy", "P-modern", "A", "B"]),
       timeout=st.sampled_from([0.0, 2.0]), keep_line=st.booleans(), steps=_STEPS)
def test_a_decoded_message_is_taken_as_its_line(mode: str, timeout: float, keep_line: bool,
                                                steps: list[Step]) -> None:
    pair = _opened(mode, CoreConfig(request_timeout=timeout), _Decoded if keep_line
                   else _Unlined)
    for step in steps:
        pair.step(step)
    assert pair.in_flight(pair.lane) == pair.in_flight(pair.full)
