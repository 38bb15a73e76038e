"""The bridge as `opentelemetry-instrument` starts a program: OpenTelemetry's SDK set up
first (a TracerProvider whose spans are written as JSON lines to a file), then the bridge's
own entry point with the rest of the arguments.

Usage: traced_bridge.py SPANS_FILE <mcp-rosetta arguments...>
Runs under the development environment's interpreter (which has opentelemetry-sdk).
"""

from __future__ import annotations

import runpy
import sys
from collections.abc import Sequence

from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult


class FileExporter(SpanExporter):
    """Each span, one JSON line, appended to a file."""

    def __init__(self, path: str) -> None:
        self.path = path

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        with open(self.path, "a") as file:
            for span in spans:
                file.write(span.to_json(indent=None) + "\n")
        return SpanExportResult.SUCCESS


def main() -> None:
    path, *args = sys.argv[1:]
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(FileExporter(path)))
    trace.set_tracer_provider(provider)
    sys.argv = ["mcp-rosetta", *args]
    runpy.run_module("bridge", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
