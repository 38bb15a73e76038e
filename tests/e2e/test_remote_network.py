"""`mcp-rosetta --url` and the network: a flood of requests, a body that stops midway, TLS
with a private CA, HTTP_PROXY / HTTPS_PROXY / NO_PROXY, and a server that keeps dying.

Must not fake the bridge, the sockets or the proxy: the bridge is `python -m bridge --url`
over real loopback TCP; the server is peers/bad_http_server.py (HTTPS with a certificate
from a CA this test makes with trustme); the proxy is peers/http_proxy.py. The client is this
test writing legacy-era JSON-RPC lines to the bridge's stdin. The machine's own proxy
variables are left out of the bridge's environment (remote_peers.without_proxies).
"""

from __future__ import annotations

import json
import os
import selectors
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import trustme
import venvs
from remote_peers import INITIALIZE, INITIALIZED, Bridge, free_port, wait_listening

FLOOD = 2000
FLOOD_CONNECTIONS = 4
RSS_AT_MOST_KIB = 120 * 1024
"""The bridge's peak resident memory through the flood (it is about 40 MiB at rest)."""


@contextmanager
def process(command: list[str], port: int, **options: Any) -> Iterator[subprocess.Popen[bytes]]:
    proc = subprocess.Popen(command, stdin=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True, **{"stdout": subprocess.DEVNULL, **options})
    try:
        wait_listening(port, proc, 10.0)
        yield proc
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def bad_server(port: int, *tls: str, again: bool = False) -> list[str]:
    command = [sys.executable, str(venvs.PEERS_DIR / "bad_http_server.py"), str(port), *tls]
    if again:  # started again on the same port whenever it exits
        command = ["sh", "-c", 'while :; do "$@"; sleep 0.2; done', "again", *command]
    return command


@pytest.fixture(scope="module")
def bad_url() -> Iterator[str]:
    port = free_port()
    with process(bad_server(port), port):
        yield f"http://127.0.0.1:{port}/mcp"


@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    return trustme.CA()


@pytest.fixture(scope="module")
def tls_url(ca: trustme.CA, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    folder = tmp_path_factory.mktemp("tls")
    cert = ca.issue_cert("127.0.0.1")
    cert.private_key_and_cert_chain_pem.write_to_path(str(folder / "server.pem"))
    port = free_port()
    pem = str(folder / "server.pem")
    with process(bad_server(port, pem, pem), port):
        yield f"https://127.0.0.1:{port}/mcp"


@pytest.fixture(scope="module")
def ca_file(ca: trustme.CA, tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("ca") / "ca.pem"
    ca.cert_pem.write_to_path(str(path))
    return str(path)


class Proxy:
    """peers/http_proxy.py, and the request lines it printed (one per connection)."""

    def __init__(self, proc: subprocess.Popen[bytes], port: int) -> None:
        self.url = f"http://127.0.0.1:{port}"
        self.seen: list[str] = []
        self._thread = threading.Thread(target=self._read, args=(proc,), daemon=True)
        self._thread.start()

    def _read(self, proc: subprocess.Popen[bytes]) -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            self.seen.append(line.decode().strip())


@pytest.fixture(scope="module")
def proxy() -> Iterator[Proxy]:
    port = free_port()
    command = [sys.executable, str(venvs.PEERS_DIR / "http_proxy.py"), str(port)]
    with process(command, port, stdout=subprocess.PIPE) as proc:
        yield Proxy(proc, port)


def call(request_id: int, name: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call",
            "params": {"name": name, "arguments": {}}}


def text(answer: dict[str, Any]) -> str:
    content: str = answer["result"]["content"][0]["text"]
    return content


def echo_through(url: str, env: dict[str, str]) -> tuple[dict[int, list[Any]],
                                                         list[dict[str, Any]]]:
    bridge = Bridge(url, env=env)
    try:
        bridge.send(INITIALIZE, INITIALIZED, call(1, "echo"))
        got = bridge.answers({0, 1})
    finally:
        logs = bridge.stop()
    return got, logs


# --- back-pressure --------------------------------------------------------------------------


def peak_rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise AssertionError("no VmHWM")


def answers_by_id(bridge: Bridge, count: int, timeout: float) -> dict[int, list[Any]]:
    """Every answer the bridge writes until `count` ids have one and a quiet moment passed
    (a second answer would come then): by id. Linear, unlike Bridge.answers."""
    assert bridge.proc.stdout is not None
    got: dict[int, list[Any]] = {}
    deadline, quiet_until, rest = time.monotonic() + timeout, None, b""
    with selectors.DefaultSelector() as selector:
        selector.register(bridge.proc.stdout.fileno(), selectors.EVENT_READ)
        while time.monotonic() < (quiet_until or deadline):
            if not selector.select(0.1):
                continue
            chunk = os.read(bridge.proc.stdout.fileno(), 1 << 16)
            if not chunk:
                break
            *lines, rest = (rest + chunk).split(b"\n")
            for message in map(json.loads, filter(None, lines)):
                if "id" in message and "method" not in message:
                    got.setdefault(message["id"], []).append(message)
            if quiet_until is None and len(got) >= count:
                quiet_until = time.monotonic() + 0.5
    return got


def test_a_flood_of_requests_is_answered_once_each_with_bounded_connections(
        bad_url: str) -> None:
    """2000 calls written at once: every one answered exactly once, never more than
    --max-upstream-connections under way at the server, and the bridge's memory bounded."""
    bridge = Bridge(bad_url, "--max-upstream-connections", str(FLOOD_CONNECTIONS))
    started = time.monotonic()
    try:
        bridge.send(INITIALIZE, INITIALIZED)
        assert bridge.answers({0})[0][0]["result"]
        ids = range(1, FLOOD + 1)
        writer = threading.Thread(  # the bridge reads its stdin as fast as it can send on
            target=bridge.send, args=[call(i, "slow") for i in ids], daemon=True)
        writer.start()
        got = answers_by_id(bridge, FLOOD, timeout=120)
        writer.join(10)
        bridge.send(call(FLOOD + 1, "peak"))
        peak = text(bridge.answers({FLOOD + 1})[FLOOD + 1][0])
        rss = peak_rss_kib(bridge.proc.pid)
    finally:
        bridge.stop()
    took = time.monotonic() - started
    assert {i: len(answers) for i, answers in got.items()} == {i: 1 for i in ids}
    assert all(text(answers[0]) == "ok" for answers in got.values())
    assert int(peak) <= FLOOD_CONNECTIONS, peak
    assert rss < RSS_AT_MOST_KIB, rss
    print(f"flood: {FLOOD} calls in {took:.1f}s, server peak {peak} at once, "
          f"bridge peak RSS {rss / 1024:.0f} MiB")


def test_a_json_answer_that_stops_midway_fails_after_the_read_timeout(bad_url: str) -> None:
    bridge = Bridge(bad_url, "--read-timeout", "500ms")
    try:
        bridge.send(INITIALIZE, INITIALIZED, call(1, "stall"), call(2, "echo"))
        got = bridge.answers({0, 1, 2})
    finally:
        logs = bridge.stop()
    assert got[1][0]["error"]["message"] == (
        f"{bad_url} stopped sending its answer midway: no byte in 0.5s (read_timeout)")
    assert text(got[2][0]) == "ok"  # the session goes on
    failed = [line for line in logs if line["event"] == "upstream.failed"]
    assert len(failed) == 1 and failed[0]["url"] == bad_url


# --- TLS ------------------------------------------------------------------------------------


def test_https_with_a_private_ca_trusted_through_ssl_cert_file(tls_url: str,
                                                                ca_file: str) -> None:
    got, _ = echo_through(tls_url, {"SSL_CERT_FILE": ca_file})
    assert got[0][0]["result"]["serverInfo"]["name"] == "bad-http-server"
    assert text(got[1][0]) == "ok"


def test_an_untrusted_certificate_is_one_error_naming_the_url_and_the_fix(tls_url: str) -> None:
    got, logs = echo_through(tls_url, {})
    assert len(got[0]) == 1
    message = got[0][0]["error"]["message"]
    assert f"cannot connect to {tls_url}: its TLS certificate is not trusted" in message
    assert "SSL_CERT_FILE=/path/to/ca.pem" in message
    failed = [line for line in logs if line["event"] == "upstream.failed"]
    assert failed and all(tls_url in line["error"] for line in failed)


# --- proxies --------------------------------------------------------------------------------


def test_http_proxy_carries_the_requests(bad_url: str, proxy: Proxy) -> None:
    before = len(proxy.seen)
    got, _ = echo_through(bad_url, {"HTTP_PROXY": proxy.url})
    assert text(got[1][0]) == "ok"
    assert f"POST {bad_url} HTTP/1.1" in proxy.seen[before:]


def test_https_proxy_tunnels_tls(tls_url: str, ca_file: str, proxy: Proxy) -> None:
    before = len(proxy.seen)
    got, _ = echo_through(tls_url, {"HTTPS_PROXY": proxy.url, "SSL_CERT_FILE": ca_file})
    assert text(got[1][0]) == "ok"
    host_port = tls_url.removeprefix("https://").removesuffix("/mcp")
    assert f"CONNECT {host_port} HTTP/1.1" in proxy.seen[before:]


def test_no_proxy_bypasses_the_proxy(bad_url: str, proxy: Proxy) -> None:
    before = len(proxy.seen)
    got, _ = echo_through(bad_url, {"HTTP_PROXY": proxy.url, "NO_PROXY": "127.0.0.1"})
    assert text(got[1][0]) == "ok"
    time.sleep(0.2)
    assert proxy.seen[before:] == []


# --- a server that keeps failing ------------------------------------------------------------


def test_a_server_that_keeps_dying_uses_up_the_restart_budget(tmp_path: Path) -> None:
    """Each `die` call crashes the server (a `sh` loop starts it again): the first two are
    restarts, as for a crashed child; the third exceeds max_restarts = 2, and the client
    gets the same "gives up" error a crash-looping child gives, naming the URL."""
    config = tmp_path / "budget.toml"
    config.write_text('max_restarts = 2\nrestart_window = "60s"\n'
                      'restart_backoff = ["100ms", "200ms"]\n')
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    with process(bad_server(port, again=True), port):
        bridge = Bridge(url, "--config", str(config))
        try:
            bridge.send(INITIALIZE, INITIALIZED)
            assert bridge.answers({0})[0][0]["result"]
            errors = []
            for attempt in (1, 2, 3):
                bridge.send(call(attempt, "die"))
                errors.append(bridge.answers({attempt})[attempt][0]["error"]["message"])
            code = bridge.proc.wait(timeout=15)
        finally:
            logs = bridge.stop()
    assert all(f"at {url} went away" in error for error in errors), errors
    assert "is being restarted" in errors[0] and "is being restarted" in errors[1], errors
    assert errors[2].startswith(f"mcp-rosetta: the server at {url} went away"), errors[2]
    assert errors[2].endswith("after 2 restarts within 60 s; mcp-rosetta gives up"), errors[2]
    assert code == 69
    events = [line["event"] for line in logs]
    assert events.count("child.restarted") == 2 and events.count("child.gave_up") == 1
