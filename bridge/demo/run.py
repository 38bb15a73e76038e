"""`mcp-rosetta demo`: a scripted legacy client drives the real bridge in front of a modern server.

Must not reach into the bridge: it runs `python -m bridge` as a subprocess over pipes, exactly
as an MCP host would, and shows what each side sent and saw.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import bridge
from bridge.demo.peer import DemoFailed, PipedPeer, ServerTranscript
from bridge.demo.show import heading, hop, note

VERSION = "2025-06-18"
Message = dict[str, Any]
Check = Callable[[Message], bool]

INTRO = f"""\
mcp-rosetta demo
A legacy MCP client (it opens with `initialize`, revision {VERSION}) uses a
server that speaks only 2026-07-28 (no handshake, a `_meta` envelope on every
request), through the bridge. Keys `io.modelcontextprotocol/…` are shown as
`…/`; `mcp-rosetta demo --full` prints whole messages."""

HELP = """\
usage: mcp-rosetta demo [--full | --server]

A scripted legacy MCP client (it opens with `initialize`) uses a server that
speaks only 2026-07-28, first without the bridge (refused), then through it:
every message is shown as it crosses, one line each. Exits 0 if every step did
what a legacy client expects, 1 if not.

options:
  --full      print whole messages, not one line each cut to the terminal
  --server    be the demo's modern-only server on stdin and stdout instead,
              to try by hand: mcp-rosetta -- mcp-rosetta demo --server
  -h, --help  show this help and exit"""
USAGE = "usage: mcp-rosetta demo [--full | --server]"


def request(ident: int, method: str, params: Message | None = None) -> Message:
    message: Message = {"jsonrpc": "2.0", "id": ident, "method": method}
    if params is not None:
        message["params"] = params
    return message


INITIALIZE = request(1, "initialize", {
    "protocolVersion": VERSION, "capabilities": {},
    "clientInfo": {"name": "demo-legacy-client", "version": "1.0.0"}})


@dataclass(frozen=True)
class Step:
    title: str
    message: Message
    check: Check | None = None
    """For requests: True if the result is what a legacy client expects."""


def _result(path: list[Any], expected: Any) -> Check:
    def check(result: Message) -> bool:
        value: Any = result
        for key in path:
            value = value[key] if isinstance(value, dict | list) else None
        return bool(value == expected)

    return check


STEPS = [
    Step("the legacy handshake, answered from the bridge's server/discover",
         INITIALIZE, _result(["protocolVersion"], VERSION)),
    Step("the client confirms; a modern server has no use for it",
         {"jsonrpc": "2.0", "method": "notifications/initialized"}),
    Step("list tools: the bridge adds the envelope, strips resultType, ttlMs...",
         request(2, "tools/list"), _result(["tools", 0, "name"], "greet")),
    Step("logging/setLevel: answered here, then sent as …/logLevel each time",
         request(3, "logging/setLevel", {"level": "info"}), lambda r: r == {}),
    Step("call a tool; its log message reaches the client as a notification",
         request(4, "tools/call", {"name": "greet", "arguments": {"name": "newcomer"}}),
         _result(["structuredContent", "greeting"], "Hello, newcomer!")),
    Step("another tool, structuredContent kept (the client speaks 2025-06-18)",
         request(5, "tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}}),
         _result(["structuredContent", "sum"], 5)),
    Step("read a resource", request(6, "resources/read", {"uri": "demo://readme"}),
         _result(["contents", 0, "uri"], "demo://readme")),
    Step("get a prompt",
         request(7, "prompts/get", {"name": "haiku", "arguments": {"topic": "bridges"}}),
         _result(["messages", 0, "role"], "user")),
    Step("ping: legacy only, answered by the bridge", request(8, "ping"), lambda r: r == {}),
]
MODERN_ONLY = ("resultType", "ttlMs", "cacheScope")


class OutputClosed(Exception):
    """Whoever read the demo's output stopped reading (`mcp-rosetta demo | head -1`)."""


class Demo:
    def __init__(self, tmp: Path, full: bool) -> None:
        self.full = full
        self.transcript = ServerTranscript(tmp / "server-transcript.txt")
        self.stderr_path = tmp / "bridge-stderr.txt"
        self.env = dict(os.environ, MCP_ROSETTA_DEMO_TRANSCRIPT=str(self.transcript.path))
        # The subprocesses must import this very copy of the package, installed or not.
        root = str(Path(bridge.__file__).resolve().parent.parent)
        self.env["PYTHONPATH"] = os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")]))
        self.server = [sys.executable, "-m", "bridge", "demo", "--server"]

    def out(self, text: str) -> None:
        # The demo is a program of its own, not the bridge: its stdout is the user's terminal.
        try:
            sys.stdout.write(text + "\n")
            sys.stdout.flush()
        except BrokenPipeError:
            raise OutputClosed from None

    def run(self) -> None:
        self.out(INTRO)
        self.without_bridge()
        self.out("\nWith the bridge: mcp-rosetta -- mcp-rosetta demo --server")
        argv = [sys.executable, "-m", "bridge", "--log-level", "warning", "--log-format", "json",
                "--", *self.server]
        with open(self.stderr_path, "wb") as stderr:
            peer = PipedPeer(argv, self.env, stderr)
            try:
                for number, step in enumerate(STEPS, start=1):
                    self.step(number, step, peer)
                self.finish(peer)
            finally:
                peer.kill()

    def without_bridge(self) -> None:
        self.out(heading(0, "Without the bridge, the server refuses the legacy handshake"))
        with open(os.devnull, "wb") as devnull:
            peer = PipedPeer(self.server, dict(self.env, MCP_ROSETTA_DEMO_TRANSCRIPT=""), devnull)
            try:
                peer.send(INITIALIZE)
                self.out(hop("client → server", INITIALIZE, full=self.full))
                answer = peer.receive_response(INITIALIZE["id"])[-1]
                self.out(hop("server → client", answer, full=self.full))
                if "error" not in answer:
                    raise DemoFailed("the modern-only server accepted initialize")
                peer.close()
            finally:
                peer.kill()

    def step(self, number: int, step: Step, peer: PipedPeer) -> None:
        self.out(heading(number, step.title))
        self.out(hop("client → bridge", step.message, full=self.full))
        peer.send(step.message)
        if "id" not in step.message:
            time.sleep(0.3)  # a notification has no answer to wait for: give it time to pass
            seen: list[Message] = []
        else:
            seen = peer.receive_response(step.message["id"])
        self.show_server_side(step)
        for message in seen:
            self.out(hop("bridge → client", message, full=self.full))
        if "id" in step.message:
            self.verify(step, seen[-1])

    def show_server_side(self, step: Step) -> None:
        lines = self.transcript.take()
        for direction, message in lines:
            arrow = "bridge → server" if direction == "in" else "server → bridge"
            self.out(hop(arrow, message, full=self.full))
        if not lines:
            what = "answered" if "id" in step.message else "absorbed"
            self.out(note(f"{what} by the bridge; nothing reached the server"))

    def verify(self, step: Step, response: Message) -> None:
        result = response.get("result")
        if not isinstance(result, dict):
            raise DemoFailed(f"{step.message['method']} failed: {json.dumps(response)}")
        leaked = [key for key in MODERN_ONLY if key in result]
        if leaked:
            raise DemoFailed(f"modern-only fields reached the legacy client: {leaked}")
        if step.check is not None and not step.check(result):
            raise DemoFailed(f"unexpected {step.message['method']} result: {json.dumps(result)}")

    def finish(self, peer: PipedPeer) -> None:
        self.out(heading(len(STEPS) + 1, "The client closes stdin; the bridge stops the server"))
        code = peer.close()
        if code != 0:
            raise DemoFailed(f"the bridge exited with status {code}")
        self.out(note("bridge exited with status 0; no process left behind"))
        self.out("\nThe legacy client never saw the modern era and lost nothing the server offers.")

    def bridge_stderr(self) -> str:
        try:
            lines = self.stderr_path.read_text(errors="replace").splitlines()
        except OSError:
            return ""
        return "\n".join(lines[-20:])


def main(argv: list[str]) -> int:
    """Run the demo; 0 if every step did what it should."""
    if "-h" in argv or "--help" in argv:
        sys.stdout.write(HELP + "\n")
        return 0
    unknown = [arg for arg in argv if arg not in ("--full", "--server")]
    if unknown or len(argv) > 1:
        what = f"unknown argument {unknown[0]}" if unknown else "--full or --server, not both"
        sys.stderr.write(f"mcp-rosetta demo: {what} ({USAGE})\n")
        return 64
    if argv == ["--server"]:
        from bridge.demo.modern_server import main as serve

        serve()
        return 0
    with tempfile.TemporaryDirectory(prefix="mcp-rosetta-demo-") as tmp:
        demo = Demo(Path(tmp), "--full" in argv)
        try:
            demo.run()
        except OutputClosed:
            return _stop_quietly()
        except (DemoFailed, OSError, subprocess.SubprocessError) as exc:
            sys.stderr.write(f"\nmcp-rosetta demo failed: {exc}\n")
            if log := demo.bridge_stderr():
                sys.stderr.write(f"bridge stderr (last lines):\n{log}\n")
            return 1
    return 0


def _stop_quietly() -> int:
    """Stop as a Unix filter does when its reader goes: no message, status 128 + SIGPIPE.

    stdout is pointed at /dev/null first, so the interpreter's flush at exit does not fail
    on the closed pipe again (and print "Exception ignored ... BrokenPipeError").
    """
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    return 128 + signal.SIGPIPE
