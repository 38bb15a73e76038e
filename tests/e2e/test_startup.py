"""The stdio bridge starts with what its first answer needs: up to that answer it imports no
structlog (so no structlog.stdlib and no asyncio), no module of another mode or command, no
HTTP, metrics or OAuth module, and nothing only a mistyped flag or key would use, and
starts no process but its server's (and the `ldconfig` ctypes runs for trio); its log lines
still all come.

The bridge runs under an audit hook that writes every module import and every process spawn to
fd 2, and its stdout and stderr are one pipe: what was imported before the first answer is
what the pipe holds before that answer's line, whatever the timing.

The garbage collector, paused for the start-up, runs again once it is over, in the stdio bridge
and the daemon alike: each says so in its last debug line (`collector.reported`).
"""

from __future__ import annotations

import json
import select
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
SERVERS = ROOT / "tests" / "benchmarks" / "servers.py"  # no SDK: the era's canned answers

HOOKED = textwrap.dedent("""
    import os, select, sys

    def say(data):
        while data:  # fd 2 shares the client's non-blocking pipe
            try:
                data = data[os.write(2, data):]
            except BlockingIOError:
                select.select([], [2], [])

    def hook(event, args):
        if event == "import":
            say(b"[import] " + str(args[0]).encode() + b"\\n")
        elif event == "subprocess.Popen":
            say(b"[spawn] " + repr(list(args[1])).encode() + b"\\n")

    sys.addaudithook(hook)
    from bridge.cli import main
    sys.exit(main(sys.argv[1:]))
""")

INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                         "clientInfo": {"name": "startup-test", "version": "1"}}}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
TOOLS = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "startup-test", "version": "1"}}


def modern_tools(id_: int) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": id_, "method": "tools/list", "params": {"_meta": META}}


# mode -> (the server's era, the client's first message, what it sends after the answer)
OPENINGS: dict[str, tuple[str, dict[str, Any], list[dict[str, Any]]]] = {
    "A": ("modern", INITIALIZE, [INITIALIZED, TOOLS]),
    "P": ("legacy", INITIALIZE, [INITIALIZED, TOOLS]),
    "B": ("legacy", modern_tools(1), [modern_tools(2)]),
}
CORES = {"A": "bridge.core.legacy_server_modern_client.mode", "P": "bridge.core.relay.mode",
         "B": "bridge.core.modern_server_legacy_client.mode"}


def send(proc: subprocess.Popen[bytes], message: dict[str, Any]) -> None:
    assert proc.stdin is not None
    proc.stdin.write(json.dumps(message).encode() + b"\n")
    proc.stdin.flush()


def until_answer(proc: subprocess.Popen[bytes], id_: int) -> list[bytes]:
    """The lines of the merged pipe up to and including the answer to `id_`."""
    assert proc.stdout is not None
    lines = []
    for line in proc.stdout:
        lines.append(line)
        if line.startswith(b'{"jsonrpc"') and json.loads(line).get("id") == id_:
            return lines
    raise AssertionError(f"no answer {id_}; the bridge wrote: {b''.join(lines)!r}")


def imports(lines: list[bytes]) -> list[str]:
    return [line[len(b"[import] "):].decode().strip() for line in lines
            if line.startswith(b"[import] ")]


@pytest.mark.parametrize("mode", list(OPENINGS))
def test_nothing_but_the_first_answer_is_imported_before_it(mode: str) -> None:
    server_era, first, then = OPENINGS[mode]
    proc = subprocess.Popen(
        [sys.executable, "-c", HOOKED, "--", sys.executable, str(SERVERS), server_era],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, cwd=ROOT)
    try:
        send(proc, first)
        before = until_answer(proc, 1)
        for message in then:
            send(proc, message)
        after = until_answer(proc, 2)
        assert proc.stdin is not None
        proc.stdin.close()
        assert proc.stdout is not None
        after += proc.stdout.readlines()
        assert proc.wait(timeout=60) == 0
    finally:
        proc.kill()
        proc.wait()

    early = imports(before)
    assert {"trio", "bridge.core.bridge", "bridge.shell.session.session"} <= set(early)  # hooked
    assert not [name for name in early if name.split(".")[0] in ("structlog", "asyncio", "rich")]
    # the other modes' cores, the daemon's, the HTTP front's and --url's modules
    assert CORES[mode] in early
    others = {core for other, core in CORES.items() if other != mode}
    assert not {*others, "bridge.shell.services.daemon", "bridge.shell.http",
                "bridge.shell.servers.remote",
                "bridge.check_report"} & set(early)
    # nor what only --url, the front, metrics or OAuth use, nor what only a bad flag or
    # config key (difflib's suggestion) or --stdio's one string (shlex) needs
    assert not [name for name in early if name.split(".")[0] in (
        "httpx", "httpx2", "h11", "prometheus_client", "opentelemetry", "difflib", "shlex")]
    assert not [name for name in early if name.startswith(
        ("bridge.oauth.", "bridge.streamable", "bridge.shell.metrics."))] and \
        "bridge.oauth" not in early
    everything = early + imports(after)
    assert "structlog" in everything  # loaded after the answer, for the log lines
    assert "structlog.stdlib" in everything  # (so the check above would have seen it)

    spawned = [line for line in before + after if line.startswith(b"[spawn] ")]
    servers = [line for line in spawned if str(SERVERS).encode() in line]
    assert len(servers) == 1  # the server, once
    # and besides it at most the `ldconfig -p` with which ctypes.util finds libpthread, for
    # the names trio gives its threads
    assert all(b"ldconfig" in line for line in spawned if line not in servers), spawned
    events = [json.loads(line)["event"] for line in before + after if line.startswith(b'{"')
              and b'"event"' in line]
    assert events[0] == "bridge.started" and events[-1] == "bridge.stopped"
    assert {"child.started", "era.detected", "mode.chosen"} <= set(events)


def test_without_an_answer_the_lines_still_come() -> None:
    """A client that says nothing has no answer to wait for: the lines come after LOG_WAIT."""
    silent = [sys.executable, str(ROOT / "tests" / "e2e" / "peers" / "plain_server.py"), "silent"]
    proc = subprocess.Popen([sys.executable, "-m", "bridge", "--", *silent], cwd=ROOT,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert proc.stderr is not None
        ready, _, _ = select.select([proc.stderr], [], [], 60)  # generous: LOG_WAIT is 1 s
        assert ready, "no log line while the client waited"
        first = json.loads(proc.stderr.readline())
        assert first["event"] == "bridge.started"
        assert proc.stdout is not None and proc.stdin is not None
        proc.stdin.close()
        assert proc.wait(timeout=60) == 0
        assert proc.stdout.read() == b""  # nothing was asked, nothing answered
    finally:
        proc.kill()
        proc.wait()


def reported(stderr: bytes, event: str) -> dict[str, Any]:
    """The fields of the process's one `event` line (`collector.reported`: one of its last
    lines, at --log-level debug)."""
    lines = [json.loads(line) for line in stderr.splitlines() if line.startswith(b"{")]
    found = [line for line in lines if line["event"] == event]
    assert len(found) == 1, f"no {event} line in {stderr!r}"
    return found[0]


def assert_collector_ran(fields: dict[str, Any]) -> None:
    assert fields["gc_enabled"] is True
    assert fields["gc_collections"] > 0  # it ran while the process served, not only at its end
    assert fields["gc_frozen"] > 10_000  # the imports' objects, frozen when start-up ended


def stdio_session(calls: int = 0, env: dict[str, str] | None = None) -> bytes:
    """A stdio session that answers initialize, then `calls` tools/list, and ends (its stdin
    closed); its stderr (--log-level debug)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "bridge", "--log-level", "debug", "--",
         sys.executable, str(SERVERS), "legacy"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT,
        env=env)
    try:
        send(proc, INITIALIZE)
        until_answer(proc, 1)
        if calls:
            send(proc, INITIALIZED)
        for id_ in range(2, 2 + calls):
            send(proc, {**TOOLS, "id": id_})
            until_answer(proc, id_)
        _, stderr = proc.communicate(timeout=60)
        assert proc.returncode == 0
    finally:
        proc.kill()
        proc.wait()
    return stderr


def test_the_stdio_bridge_collects_garbage_after_its_start() -> None:
    """Paused for the start-up (bridge/collector.py), the collector runs once it is over."""
    assert_collector_ran(reported(stdio_session(calls=10), "collector.reported"))


def test_the_daemon_collects_garbage_while_it_serves(tmp_path: Path) -> None:
    path = tmp_path / "bridge.sock"
    proc = subprocess.Popen(
        [sys.executable, "-m", "bridge", "serve", "--listen", f"unix:{path}",
         "--log-level", "debug", "--", sys.executable, str(SERVERS), "legacy"],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=ROOT)
    try:
        for _ in range(600):
            if path.exists():
                break
            assert proc.poll() is None, "the daemon ended before it listened"
            time.sleep(0.1)
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.connect(str(path))
            sock.sendall(json.dumps(INITIALIZE).encode() + b"\n")
            answer = sock.makefile("rb").readline()
        assert json.loads(answer)["id"] == 1
        proc.send_signal(signal.SIGTERM)
        _, stderr = proc.communicate(timeout=60)
        assert proc.returncode == 0
    finally:
        proc.kill()
        proc.wait()
    assert_collector_ran(reported(stderr, "collector.reported"))
