"""The series in Prometheus' text format, written by the official client library
(`prometheus_client`), named after OpenTelemetry's semantic conventions for MCP in their
Prometheus form (`mcp.server.operation.duration` is `mcp_server_operation_duration_seconds`,
`mcp.method.name` the label `mcp_method_name`).

Must not keep state: each scrape reads `series.Series` as it is then (a collector, so the
per-call path never touches the library), and the process's own series (CPU, memory, fds)
come from the library's collectors.
"""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.process_collector import ProcessCollector

from bridge.core.observe import ERROR_TYPES
from bridge.shell.metrics.series import Series

CONTENT_TYPE = CONTENT_TYPE_LATEST
OPERATION_LABELS = ("mcp_method_name", "gen_ai_tool_name", "error_type", "mode",
                    "client_era", "server_era")


class SeriesCollector:
    """A collector (prometheus_client's protocol: `collect`) of one `Series`."""

    def __init__(self, series: Series) -> None:
        self._series = series

    def collect(self) -> Iterator[Metric]:
        series = self._series
        operations = HistogramMetricFamily(
            "mcp_server_operation_duration_seconds",
            "Client requests the bridge answered, by method, tool, error class, mode and eras",
            labels=OPERATION_LABELS)
        for key, counts in series.operations().items():
            operations.add_metric(list(key), _buckets(series.tally.bounds, counts[:-1]),
                                  counts[-1])
        yield operations
        sessions = HistogramMetricFamily(
            "mcp_server_session_duration_seconds", "Bridge sessions that ended, by duration")
        sessions.add_metric([], _buckets(series.sessions.bounds, series.sessions.counts),
                            series.sessions.total)
        yield sessions
        yield GaugeMetricFamily("mcp_rosetta_sessions", "Bridge sessions open now",
                                value=len(series.live))
        yield GaugeMetricFamily("mcp_rosetta_tenants",
                                "Credentials (tenants) the HTTP front serves now",
                                value=series.tenants())
        yield GaugeMetricFamily("mcp_rosetta_pool_processes",
                                "Server processes run by pools beyond each one's first",
                                value=series.pool_processes())
        yield GaugeMetricFamily("mcp_rosetta_parked_calls",
                                "Calls parked awaiting the client's retry (mode B)",
                                value=series.parked())
        yield from self._servers(series)
        restarts = CounterMetricFamily("mcp_rosetta_server_restarts",
                                       "Servers restarted after they were lost")
        restarts.add_metric([], series.restarts)
        yield restarts
        messages = CounterMetricFamily(
            "mcp_rosetta_messages", "Messages read from a peer, to carry to the other",
            labels=("direction",))
        messages.add_metric(["client_to_server"], series.messages["client"])
        messages.add_metric(["server_to_client"], series.messages["server"])
        yield messages
        errors = CounterMetricFamily("mcp_rosetta_errors",
                                     "Error answers clients got, by class",
                                     labels=("error_type",))
        counted = series.errors()
        for error_type in ERROR_TYPES:
            errors.add_metric([error_type], counted.get(error_type, 0))
        yield errors

    @staticmethod
    def _servers(series: Series) -> Iterator[Metric]:
        states = series.servers()
        by_state = GaugeMetricFamily("mcp_rosetta_servers", "Live sessions' servers by state",
                                     labels=("state",))
        for state, count in states.items():
            by_state.add_metric([state], count)
        yield by_state
        down = sum(count for state, count in states.items() if state != "serving")
        yield GaugeMetricFamily(
            "mcp_rosetta_server_up",
            "1 while every live session's server serves (none open counts as up), else 0",
            value=0 if down else 1)


def _buckets(bounds: tuple[float, ...], counts: list[int] | list[float]
             ) -> list[tuple[str, float]]:
    """Cumulative counts by upper bound (`counts`: per bucket, the last past every bound), as
    the exposition wants them, +Inf last."""
    buckets: list[tuple[str, float]] = []
    running = 0.0
    for bound, count in zip(bounds, counts, strict=False):
        running += count
        buckets.append((_bound(bound), running))
    buckets.append(("+Inf", running + counts[-1]))
    return buckets


def _bound(value: float) -> str:
    return repr(float(value))


class Exposition:
    """One process's registry: its series and the process's own."""

    def __init__(self, series: Series) -> None:
        self.series = series
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(SeriesCollector(series))
        ProcessCollector(registry=self.registry)

    def render(self) -> bytes:
        """The text a scrape gets."""
        return generate_latest(self.registry)
