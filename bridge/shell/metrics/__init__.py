"""What an operator sees: the series of a process's sessions (`series.py`), their Prometheus
exposition (`exposition.py`, on the HTTP front's `/metrics` or `--metrics`' own listener,
`listener.py`) and OpenTelemetry spans (`spans.py`)."""

from __future__ import annotations

import sys


def wanted(address: str | None) -> bool:
    """Whether this process keeps metrics: an address to serve them on, or OpenTelemetry's
    SDK already set up as where spans go (`opentelemetry-instrument` does it before the
    program runs); looked up, never imported, so a bridge without it pays nothing."""
    if address is not None:
        return True
    trace, sdk = sys.modules.get("opentelemetry.trace"), sys.modules.get("opentelemetry.sdk.trace")
    return trace is not None and sdk is not None \
        and isinstance(trace.get_tracer_provider(), sdk.TracerProvider)
