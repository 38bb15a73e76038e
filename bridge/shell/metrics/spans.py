"""OpenTelemetry spans of the requests the bridge answered, when OpenTelemetry's SDK is
installed: one SERVER span per request, named and attributed as the semantic conventions for
MCP say (`{mcp.method.name} {target}`; `mcp.method.name`, `gen_ai.tool.name`, `error.type`,
`network.transport`), a child of the trace the client's `_meta.traceparent` names.

Must not cost anything without the SDK: only the API is a dependency, and without an SDK
(or with its no-op provider) no span is made at all. A span is made after the answer, from
the times the core reported (its clock is trio's, so they are moved onto the wall clock).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import trio

from bridge.core.events import Answered

Traced = Callable[[Answered], None]
SCOPE = "mcp-rosetta"


def tracer_of(transport: str) -> Traced | None:
    """What makes a span of each answered request reaching the bridge over `transport`
    (`network.transport`: pipe, unix, tcp), or None when no SDK is installed."""
    try:
        from opentelemetry import trace
        from opentelemetry.sdk.trace import TracerProvider
    except ImportError:
        return None
    if not isinstance(trace.get_tracer_provider(), TracerProvider):
        return None  # the API's no-op (or proxy) provider: nobody collects spans
    return Spans(trace.get_tracer(SCOPE), transport).record


class Spans:
    """Spans of answered requests, through `tracer`."""

    def __init__(self, tracer: Any, transport: str) -> None:
        from opentelemetry.trace import SpanKind, Status, StatusCode
        from opentelemetry.trace.propagation.tracecontext import (
            TraceContextTextMapPropagator,
        )

        self._tracer = tracer
        self._transport = transport
        self._kind = SpanKind.SERVER
        self._error = Status(StatusCode.ERROR)
        self._propagator = TraceContextTextMapPropagator()

    def record(self, fact: Answered) -> None:
        # The core's times are trio's clock; the span's, nanoseconds of the wall clock.
        offset = time.time() - trio.current_time()
        method, tool = fact.request[0], fact.request[1]
        parent = None
        if fact.trace is not None:
            carrier = {"traceparent": fact.trace[0]}
            if fact.trace[1] is not None:
                carrier["tracestate"] = fact.trace[1]
            parent = self._propagator.extract(carrier)
        name = f"{method} {tool}" if tool else method
        attributes: dict[str, str] = {"mcp.method.name": method,
                                      "network.transport": self._transport}
        if tool:
            attributes["gen_ai.tool.name"] = tool
        if fact.error_type is not None:
            attributes["error.type"] = fact.error_type
        span = self._tracer.start_span(name, context=parent, kind=self._kind,
                                       attributes=attributes,
                                       start_time=int((fact.started + offset) * 1e9))
        if fact.error_type is not None:
            span.set_status(self._error)
        span.end(end_time=int((fact.ended + offset) * 1e9))
