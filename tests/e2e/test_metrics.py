"""What an operator sees, as a process shows it: the real SDK clients of both eras (mcp 1.x
and 2.x) run through the HTTP front and through the Unix daemon, then `/metrics` is scraped
over real HTTP and checked by Prometheus' own `promtool check metrics`; a span made by the
bridge under an OpenTelemetry SDK carries the trace id the client's `_meta` named.

Must not fake the server: it is the legacy SDK peer, killed for real (by the pid its `pid`
tool gives) to see a restart counted and the server up again.
"""

from __future__ import annotations

import http.client
import json
import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import checks
import conformance_suite as cs
import venvs
from test_http_ops import ask, call_pid, ready, until

WAIT = 60.0
META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "e2e", "version": "1"}}
TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
TRACEPARENT = f"00-{TRACE_ID}-00f067aa0ba902b7-01"
CONFIG = venvs.REPO_ROOT / "config"
_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$")


def scrape(port: int, path: str = "/metrics") -> str:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=WAIT)
    try:
        conn.request("GET", path)
        response = conn.getresponse()
        body = response.read().decode()
        assert response.status == 200, body
        assert response.getheader("content-type", "").startswith("text/plain; version=")
        return body
    finally:
        conn.close()


def listening_scrape(port: int) -> str | None:
    """A scrape, or None while nothing listens on `port` yet."""
    try:
        return scrape(port)
    except ConnectionRefusedError:
        return None


def promtool_passes(text: str) -> None:
    promtool = shutil.which("promtool")
    assert promtool is not None, "promtool is needed (Debian: package prometheus)"
    done = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True,
                          text=True, timeout=WAIT)
    assert done.returncode == 0, done.stdout + done.stderr


def total(text: str, name: str, **labels: str) -> float:
    """The sum of `name`'s samples whose labels include `labels`."""
    found = 0.0
    for line in text.splitlines():
        match = _SAMPLE.match(line)
        if match is None or match[1] != name:
            continue
        have = dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', match[2] or ""))
        if all(have.get(key) == value for key, value in labels.items()):
            found += float(match[3])
    return found


def calls(text: str, method: str, client_era: str) -> float:
    return total(text, "mcp_server_operation_duration_seconds_count", mcp_method_name=method,
                 client_era=client_era)


def ended(text: str) -> str | None:
    """The scrape, once no session is open."""
    return text if total(text, "mcp_rosetta_sessions") == 0 else None


def kill_and_wait_ready(port: int) -> None:
    """Kill the front's shared server, then wait until its successor serves."""
    old = pid_of(port)
    assert old is not None
    os.kill(old, signal.SIGKILL)
    until(lambda: ready(port) == (200, "ready") and pid_of(port) not in (None, old),
          "the restarted server serves")


def pid_of(port: int) -> int | None:
    """The pid of the server that answers a modern request now (None: an error)."""
    status, answer = call_pid(port, None)
    result = answer.get("result") if status == 200 else None
    return None if result is None else int(result["structuredContent"]["pid"])


def test_the_front_counts_both_eras_errors_by_class_and_a_restart(
        legacy_python: venvs.SdkPython, modern_python: venvs.SdkPython,
        run_client: Any) -> None:
    port = cs.free_port()
    cmd = [sys.executable, "-m", "bridge", "serve", "--listen", f"http://127.0.0.1:{port}/mcp",
           "--request-timeout", "1s", "--", *legacy_python.peer("legacy_server")]
    with cs.http_server(cmd, port) as url:
        checks.check_legacy_basic(run_client(legacy_python, "basic", [url]))
        checks.check_modern_basic(run_client(modern_python, "basic", [url]))
        slow = {"jsonrpc": "2.0", "id": 9, "method": "tools/call",
                "params": {"name": "slow", "arguments": {"steps": 40, "delay": 0.1},
                           "_meta": META}}
        _, _, answer = ask(port, "POST", "/mcp", slow)
        assert "no answer from the server within 1 s" in answer["error"]["message"], answer
        kill_and_wait_ready(port)
        assert ask(port, "GET", "/nowhere")[0] == 404  # refused by the front itself
        text = scrape(port)
    promtool_passes(text)
    assert calls(text, "tools/call", "legacy") >= 2 and calls(text, "tools/call", "modern") >= 2
    assert calls(text, "initialize", "legacy") >= 1
    assert calls(text, "server/discover", "modern") >= 1
    assert total(text, "mcp_server_operation_duration_seconds_count", gen_ai_tool_name="echo",
                 mode="B") >= 1
    assert total(text, "mcp_rosetta_errors_total", error_type="timeout") >= 1
    assert total(text, "mcp_rosetta_errors_total", error_type="refused") >= 1
    assert total(text, "mcp_server_operation_duration_seconds_count", error_type="timeout",
                 gen_ai_tool_name="slow") >= 1
    assert total(text, "mcp_rosetta_server_restarts_total") >= 1
    assert total(text, "mcp_rosetta_server_up") == 1
    assert total(text, "mcp_rosetta_messages_total", direction="client_to_server") >= 10
    assert total(text, "mcp_server_session_duration_seconds_count") >= 1  # a legacy session


def test_the_daemon_serves_metrics_of_its_sessions_with_a_restart(
        tmp_path: Path, legacy_python: venvs.SdkPython, modern_python: venvs.SdkPython,
        run_client: Any) -> None:
    sock = tmp_path / "bridge.sock"
    port = cs.free_port()
    cmd = [sys.executable, "-m", "bridge", "serve", "--listen", f"unix:{sock}",
           "--metrics", f"http://127.0.0.1:{port}/metrics", "--",
           *legacy_python.peer("legacy_server")]
    connect = [sys.executable, "-m", "bridge", "connect", str(sock)]
    with cs.http_server(cmd, port, "/metrics"):
        checks.check_legacy_restart(run_client(legacy_python, "restart", connect))
        checks.check_modern_basic(run_client(modern_python, "basic", connect))
        text = until(lambda: ended(scrape(port)), "both sessions ended")
    promtool_passes(text)
    assert calls(text, "tools/call", "legacy") >= 1 and calls(text, "tools/call", "modern") >= 1
    assert total(text, "mcp_rosetta_server_restarts_total") >= 1
    assert total(text, "mcp_rosetta_errors_total", error_type="transport") >= 1
    assert total(text, "mcp_rosetta_server_up") == 1
    assert total(text, "mcp_server_session_duration_seconds_count") == 2


def test_a_span_names_the_call_in_the_clients_trace(
        tmp_path: Path, legacy_python: venvs.SdkPython) -> None:
    spans = tmp_path / "spans.jsonl"
    port = cs.free_port()
    # As `opentelemetry-instrument` would start it: an SDK set up, then the bridge.
    cmd = [sys.executable, str(venvs.PEERS_DIR / "traced_bridge.py"), str(spans), "serve",
           "--listen", f"http://127.0.0.1:{port}/mcp", "--",
           *legacy_python.peer("legacy_server")]
    with cs.http_server(cmd, port):
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                "params": {"name": "echo", "arguments": {"text": "traced"},
                           "_meta": {**META, "traceparent": TRACEPARENT}}}
        status, _, answer = ask(port, "POST", "/mcp", body)
        assert status == 200 and answer["result"]["content"][0]["text"] == "traced"
        until(lambda: spans.exists() and "tools/call echo" in spans.read_text(),
              "the call's span is written")
    span = next(s for s in map(json.loads, spans.read_text().splitlines())
                if s["name"] == "tools/call echo")
    assert span["context"]["trace_id"] == f"0x{TRACE_ID}"
    assert span["parent_id"] == "0x00f067aa0ba902b7"
    assert span["kind"] == "SpanKind.SERVER"
    assert span["attributes"]["mcp.method.name"] == "tools/call"
    assert span["attributes"]["gen_ai.tool.name"] == "echo"
    assert span["attributes"]["network.transport"] == "tcp"



def test_the_example_alerts_and_dashboard_pass_promtool(tmp_path: Path) -> None:
    """The alert rules check and their unit tests pass; every query of the dashboard parses
    as PromQL (each made a recording rule, Grafana's variables given values)."""
    promtool = shutil.which("promtool")
    assert promtool is not None, "promtool is needed (Debian: package prometheus)"
    rules = CONFIG / "prometheus"
    for args in (["check", "rules", "mcp-rosetta-alerts.yml"],
                 ["test", "rules", "mcp-rosetta-alerts.test.yml"]):
        done = subprocess.run([promtool, *args], cwd=rules, capture_output=True, text=True,
                              timeout=WAIT)
        assert done.returncode == 0, done.stdout + done.stderr
    dashboard = json.loads((CONFIG / "grafana" / "mcp-rosetta-dashboard.json").read_text())
    exprs = [target["expr"] for panel in dashboard["panels"] for target in panel["targets"]]
    lines = ["groups:", "  - name: dashboard", "    rules:"]
    for n, expr in enumerate(exprs):
        query = (expr.replace("$__rate_interval", "5m").replace("$__range", "1h")
                 .replace("$instance", ".*"))
        lines += [f"      - record: dashboard:query{n}", f"        expr: {json.dumps(query)}"]
    recorded = tmp_path / "dashboard.yml"
    recorded.write_text("\n".join(lines) + "\n")
    done = subprocess.run([promtool, "check", "rules", str(recorded)], capture_output=True,
                          text=True, timeout=WAIT)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"SUCCESS: {len(exprs)} rules found" in done.stdout


def test_the_stdio_bridge_serves_metrics_while_it_runs(legacy_python: venvs.SdkPython) -> None:
    port = cs.free_port()
    cmd = [sys.executable, "-m", "bridge", "--metrics", f"http://127.0.0.1:{port}/metrics",
           "--", *legacy_python.peer("legacy_server")]
    bridge = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, cwd=venvs.REPO_ROOT)
    assert bridge.stdin is not None and bridge.stdout is not None

    def ask_stdio(message: dict[str, Any]) -> dict[str, Any]:
        assert bridge.stdin is not None and bridge.stdout is not None
        bridge.stdin.write(json.dumps(message).encode() + b"\n")
        bridge.stdin.flush()
        answer: dict[str, Any] = json.loads(bridge.stdout.readline())
        return answer

    try:
        ask_stdio({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                   "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                              "clientInfo": {"name": "e2e", "version": "1"}}})
        answer = ask_stdio({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                            "params": {"name": "echo", "arguments": {"text": "hi"}}})
        assert answer["result"]["content"][0]["text"] == "hi"
        text = until(lambda: listening_scrape(port), "the metrics endpoint listens")
    finally:
        bridge.stdin.close()
        bridge.wait(timeout=WAIT)
    promtool_passes(text)
    assert total(text, "mcp_server_operation_duration_seconds_count", gen_ai_tool_name="echo",
                 mode="P", client_era="legacy") == 1
    assert total(text, "mcp_rosetta_sessions") == 1 and total(text, "mcp_rosetta_server_up") == 1
