"""What an operator sees: the series of a process's sessions (`series.py`), their Prometheus
exposition (`exposition.py`, on the HTTP front's `/metrics` or `--metrics`' own listener,
`listener.py`) and OpenTelemetry spans (`spans.py`)."""

from __future__ import annotations

import sys


def wanted(address: str | None) -> bool:
    """Whether this process keeps metrics: an address to serve them on, or OpenTelemetry's
    SDK already loaded (by `opentelemetry-instrument`, which sets up where spans go)."""
    return address is not None or "opentelemetry.sdk.trace" in sys.modules
