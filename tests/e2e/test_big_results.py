"""An 8 MiB result through the real bridge in every mode, compared byte for byte.

Must not fake a peer: the server (peers/big_server.py) and this client are real processes
over real pipes; "plain" text takes the bridge's splice (the line forwarded as it came but
for the id and the modern members), "mixed" text (escapes) is decoded and encoded again.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import venvs

sys.path.insert(0, str(Path(__file__).resolve().parent / "peers"))

from big_server import MODERN, text_of

SERVER = str(Path(__file__).resolve().parent / "peers" / "big_server.py")
SIZE = 8 * 1024 * 1024
MODES = {"A": ("legacy", "modern"), "B": ("modern", "legacy"),
         "P-legacy": ("legacy", "legacy"), "P-modern": ("modern", "modern")}
META = {"io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "big-client", "version": "1.0"}}


class Client:
    def __init__(self, era: str, server_era: str) -> None:
        self.era = era
        command = venvs.bridge_command([sys.executable, SERVER, server_era], "--log-level",
                                       "warning")
        self.proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE)

    def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()

    def receive(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        assert line, "the bridge closed its output"
        message: dict[str, Any] = json.loads(line)
        return message

    def call(self, ident: Any, method: str, params: dict[str, Any]) -> dict[str, Any]:
        if self.era == "modern":
            params = {**params, "_meta": META}
        self.send({"jsonrpc": "2.0", "id": ident, "method": method, "params": params})
        answer = self.receive()
        assert answer["id"] == ident and type(answer["id"]) is type(ident), answer.get("error")
        return answer

    def close(self) -> None:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.close()
        assert self.proc.wait(timeout=60) == 0
        self.proc.stdout.close()


@pytest.mark.parametrize("mode", list(MODES))
def test_an_8_mib_result_crosses_every_mode_intact(mode: str) -> None:
    client_era, server_era = MODES[mode]
    client = Client(client_era, server_era)
    try:
        if client_era == "legacy":
            client.call(0, "initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                          "clientInfo": {"name": "big-client", "version": "1"}})
            client.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        for ident, kind in ((1, "plain"), ("two", "mixed"), (2**70, "plain")):
            answer = client.call(ident, "tools/call", {
                "name": "big", "arguments": {"size": SIZE, "kind": kind}})
            result = answer["result"]
            assert result["content"] == [{"type": "text", "text": text_of(SIZE, kind)}]
            assert result["isError"] is False
            if client_era == "legacy":  # the downgrade took the modern members out
                assert {"resultType", "_meta"} & set(result) == set()
            else:
                assert result["resultType"] == "complete"
    finally:
        client.close()
