"""The metrics' shell: bounded series, the Prometheus text, the scrape endpoint and its
guard, and the spans made of answered requests."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import TextIO

import h11
import pytest
import structlog
import trio

from bridge.core.events import Answered
from bridge.shell import logs
from bridge.shell.http.auth import Tokens
from bridge.shell.metrics import wanted
from bridge.shell.metrics.exposition import OPERATION_LABELS, Exposition
from bridge.shell.metrics.listener import Exposed, check_reach, serve_scrapes
from bridge.shell.metrics.series import MAX_TOOLS, Series
from bridge.shell.metrics.spans import Spans


def answered(series: Series, tool: str = "echo", error_type: str | None = None,
             seconds: float = 0.3) -> None:
    """As a session's core counts a call it answered."""
    series.tally.count(("tools/call", tool, error_type, ("B", "modern", "legacy")), seconds)


def test_an_answer_counts_in_its_histogram_and_an_error_by_its_class() -> None:
    series = Series()
    answered(series, seconds=0.3)
    answered(series, error_type="timeout", seconds=0.02)
    text = Exposition(series).render().decode()
    assert ('mcp_server_operation_duration_seconds_bucket{client_era="modern",error_type="",'
            'gen_ai_tool_name="echo",le="0.5",mcp_method_name="tools/call",mode="B",'
            'server_era="legacy"} 1.0') in text
    assert ('mcp_server_operation_duration_seconds_bucket{client_era="modern",'
            'error_type="timeout",gen_ai_tool_name="echo",le="0.02",mcp_method_name="tools/call",'
            'mode="B",server_era="legacy"} 1.0') in text
    assert 'mcp_rosetta_errors_total{error_type="timeout"} 1.0' in text
    assert 'mcp_rosetta_errors_total{error_type="server"} 0.0' in text
    assert "mcp_rosetta_server_up 1.0" in text
    assert "mcp_rosetta_pool_processes 0.0" in text
    series.pool_processes = lambda: 3
    assert "mcp_rosetta_pool_processes 3.0" in Exposition(series).render().decode()


def test_tool_names_are_bounded_in_number_and_form() -> None:
    series = Series()
    for n in range(MAX_TOOLS + 50):
        answered(series, f"tool{n}")
    answered(series, "bad name\n{}")
    answered(series, "x" * 65)
    tools = {key[1] for key in series.operations()}
    assert len(tools) == MAX_TOOLS + 1 and "other" in tools
    assert "tool0" in tools and f"tool{MAX_TOOLS}" not in tools
    answered(series, "tool0")  # a name seen before keeps its label
    assert series.operations()[("tools/call", "tool0", "", "B", "modern", "legacy")][5] == 2


def test_metrics_off_loopback_need_a_token() -> None:
    check_reach("http://127.0.0.1:9464/metrics", None)
    check_reach("http://0.0.0.0:9464/metrics", Tokens((b"t",)))
    with pytest.raises(Exposed, match="token_file"):
        check_reach("http://0.0.0.0:9464/metrics", None)


async def get(port: int, path: str, token: str | None = None) -> tuple[int, bytes]:
    stream = await trio.open_tcp_stream("127.0.0.1", port)
    conn = h11.Connection(h11.CLIENT)
    headers = [("host", "127.0.0.1")]
    if token is not None:
        headers.append(("authorization", f"Bearer {token}"))
    await stream.send_all(conn.send(h11.Request(method="GET", target=path, headers=headers))
                          + conn.send(h11.EndOfMessage()))
    status, body = 0, b""
    while True:
        event = conn.next_event()
        if event is h11.NEED_DATA:
            conn.receive_data(await stream.receive_some(65536))
        elif isinstance(event, h11.Response):
            status = event.status_code
        elif isinstance(event, h11.Data):
            body += event.data
        elif isinstance(event, h11.EndOfMessage):
            await stream.aclose()
            return status, body


@pytest.fixture
def stream(tmp_path: Path) -> Iterator[TextIO]:
    """Where the logs go (structlog's defaults are restored after)."""
    with open(tmp_path / "stderr", "w+") as file:
        yield file
    structlog.reset_defaults()


async def test_the_endpoint_serves_its_path_to_those_with_a_token(stream: TextIO) -> None:
    series = Series()
    answered(series)
    log = logs.configure("info", "json", stream)
    async with trio.open_nursery() as nursery:
        port = await nursery.start(serve_scrapes, "http://127.0.0.1:0/metrics",
                                   Exposition(series), Tokens((b"secret",)), log)
        assert await get(port, "/metrics") == (401, b"no Authorization header: send "
                                                     b"Authorization: Bearer <token>\n")
        status, body = await get(port, "/metrics", "secret")
        assert status == 200 and b'gen_ai_tool_name="echo"' in body
        assert (await get(port, "/other", "secret"))[0] == 404
        nursery.cancel_scope.cancel()


async def test_an_address_with_no_path_serves_scrapes_at_metrics(stream: TextIO) -> None:
    log = logs.configure("info", "json", stream)
    async with trio.open_nursery() as nursery:
        port = await nursery.start(serve_scrapes, "http://127.0.0.1:0",
                                   Exposition(Series()), None, log)
        status, body = await get(port, "/metrics")
        assert status == 200 and b"mcp_rosetta_server_restarts_total 0.0" in body
        assert (await get(port, "/mcp"))[0] == 404
        nursery.cancel_scope.cancel()


async def test_an_endpoint_that_may_not_be_served_is_logged_and_skipped(
        stream: TextIO) -> None:
    log = logs.configure("info", "json", stream)
    async with trio.open_nursery() as nursery:
        port = await nursery.start(serve_scrapes, "http://0.0.0.0:0/metrics",
                                   Exposition(Series()), None, log)
    assert port == 0
    stream.seek(0)
    assert "metrics.unavailable" in stream.read()


async def test_a_span_is_a_child_of_the_clients_trace_with_the_conventions_names() -> None:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    spans = Spans(provider.get_tracer("test"), "pipe")
    now = trio.current_time()
    spans.record(Answered(("tools/call", "echo", "B", "modern", "legacy"), now - 0.5, now,
                          "server",
                          ("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "k=v")))
    spans.record(Answered(("tools/list", "", "P", "legacy", "legacy"), now, now, None))
    first, second = exporter.get_finished_spans()
    assert first.name == "tools/call echo" and second.name == "tools/list"
    assert first.context.trace_id == 0x0af7651916cd43dd8448eb211c80319c
    assert first.parent is not None and first.parent.span_id == 0xb7ad6b7169203331
    assert second.parent is None  # no trace context: a trace of its own
    assert dict(first.attributes or {}) == {
        "mcp.method.name": "tools/call", "gen_ai.tool.name": "echo", "error.type": "server",
        "network.transport": "pipe"}
    assert first.status.is_ok is False
    assert first.end_time is not None and first.start_time is not None
    assert abs(first.end_time - first.start_time - 500_000_000) < 1_000_000


# The examples in config/: every series they name is one the bridge writes -----------------

CONFIG = Path(__file__).parents[2] / "config"
DASHBOARD = CONFIG / "grafana" / "mcp-rosetta-dashboard.json"
ALERTS = CONFIG / "prometheus" / "mcp-rosetta-alerts.yml"
_NAME = re.compile(r"\b(mcp_[a-z_]+)\b")


def written_names() -> set[str]:
    """Every sample name the exposition writes."""
    series = Series()
    answered(series)
    text = Exposition(series).render().decode()
    return {line.split("{")[0].split(" ")[0] for line in text.splitlines()
            if line and not line.startswith("#")}


def dashboard_exprs() -> list[str]:
    dashboard = json.loads(DASHBOARD.read_text())
    return [target["expr"] for panel in dashboard["panels"] for target in panel["targets"]]


def test_the_dashboard_is_well_formed() -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    assert dashboard["uid"] == "mcp-rosetta" and isinstance(dashboard["schemaVersion"], int)
    variables = {v["name"] for v in dashboard["templating"]["list"]}
    assert variables == {"datasource", "instance"}
    ids = [panel["id"] for panel in dashboard["panels"]]
    assert len(ids) == len(set(ids))
    cells: set[tuple[int, int]] = set()
    for panel in dashboard["panels"]:
        grid = panel["gridPos"]
        assert grid["x"] + grid["w"] <= 24, panel["title"]
        covered = {(x, y) for x in range(grid["x"], grid["x"] + grid["w"])
                   for y in range(grid["y"], grid["y"] + grid["h"])}
        assert not covered & cells, f"{panel['title']} overlaps another panel"
        cells |= covered
        assert panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"}
        for target in panel["targets"]:
            assert 'instance=~"$instance"' in target["expr"], target["expr"]


def test_the_examples_name_only_series_the_bridge_writes() -> None:
    written = written_names()
    named = {name for expr in dashboard_exprs() for name in _NAME.findall(expr)}
    named |= set(_NAME.findall(ALERTS.read_text()))
    named -= set(OPERATION_LABELS)  # a label, not a series
    assert named and named <= written, named - written


def test_metrics_are_kept_for_an_address_or_an_sdk_set_up_as_where_spans_go() -> None:
    assert wanted("http://127.0.0.1:9464/metrics")
    assert not wanted(None)  # the SDK is loaded here, but no provider of its is set up
