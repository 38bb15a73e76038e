"""The bridge's memory under hostile or huge traffic: `python tests/benchmarks/limits.py [NAME...]`.

Must not judge: it measures, over real pipes, the bridge's peak resident memory (VmHWM) when
the client sends a 1 GiB line with no newline, and when the client reads nothing while the
server sends 1 GiB of notifications; then how long a 500 MiB result takes in modes A and P.
Each figure is printed beside the bound it should meet.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
MIB = 1024 * 1024
GIB = 1024 * MIB
LEGACY_INIT = {"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {},
    "clientInfo": {"name": "limits", "version": "1"}}}


def status(pid: int, key: str) -> float:
    """A /proc/PID/status figure in MiB (VmRSS now, VmHWM the peak)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1]) / 1024
    raise KeyError(key)


class Bridge:
    """`mcp-rosetta` in front of the benchmark server of `era`, driven as a legacy client
    (`direct`: the legacy server itself, with nothing in between, as the baseline)."""

    def __init__(self, era: str, *flags: str, direct: bool = False) -> None:
        server = [sys.executable, str(HERE / "servers.py"), era]
        bridge = [sys.executable, "-m", "bridge", "--log-level", "warning", *flags, "--"]
        self.proc = subprocess.Popen([*([] if direct else bridge), *server],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.stdin, self.stdout = self.proc.stdin, self.proc.stdout
        self.send(LEGACY_INIT)
        self.answer("init")
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, message: dict[str, object]) -> None:
        self.stdin.write(json.dumps(message).encode() + b"\n")
        self.stdin.flush()

    def answer(self, request_id: str) -> dict[str, object]:
        while True:
            message = json.loads(self.stdout.readline())
            if message.get("id") == request_id and "method" not in message:
                return message  # type: ignore[no-any-return]

    def call(self, request_id: str, tool: str, **arguments: object) -> None:
        self.send({"jsonrpc": "2.0", "id": request_id, "method": "tools/call",
                   "params": {"name": tool, "arguments": arguments}})

    def rss(self) -> float:
        return status(self.proc.pid, "VmRSS")

    def peak(self) -> float:
        return status(self.proc.pid, "VmHWM")

    def close(self) -> None:
        self.stdin.close()
        self.proc.wait(timeout=60)


def one_gib_line() -> None:
    bridge = Bridge("legacy")
    idle = bridge.rss()
    chunk = b"x" * MIB
    bridge.stdin.write(b'{"jsonrpc":"2.0","id":"huge","method":"tools/call","params":{"x":"')
    for _ in range(1024):
        bridge.stdin.write(chunk)
    bridge.stdin.write(b'"}}\n')
    bridge.stdin.flush()
    refusal = bridge.answer("huge")
    peak = bridge.peak()
    bridge.call("after", "echo", text="still here")
    assert "result" in bridge.answer("after")
    bridge.close()
    bound = idle + 2 * 64
    print(f"1 GiB line without newline: peak {peak:.1f} MiB (idle {idle:.1f}; bound "
          f"{bound:.1f} = idle + 2 x max_message_bytes); answered {refusal.get('error')}")


def flood_unread() -> None:
    from bridge.shell.fdio.outlet import HIGH_WATER

    bridge = Bridge("legacy")
    idle = bridge.rss()
    bridge.call("flood", "flood", total=GIB)
    time.sleep(3)  # the client reads nothing: the server fills the pipes, then the bridge
    stalled_peak = bridge.peak()
    received = 0
    while True:  # now read it all: every notification arrives
        line = bridge.stdout.readline()
        received += len(line)
        if b'"id":"flood"' in line:
            break
    bridge.close()
    bound = idle + 2 * HIGH_WATER / MIB
    print(f"1 GiB of notifications to a client reading nothing: peak {stalled_peak:.1f} MiB "
          f"while stalled (idle {idle:.1f}; bound {bound:.1f} = idle + 2 x the high-water "
          f"mark); then {received / GIB:.2f} GiB delivered")


def big_result(mode: str, era: str) -> None:
    times = {}
    for label, bridge in (("direct", Bridge("legacy", direct=True)),
                          (mode, Bridge(era, "--max-message-bytes", str(GIB)))):
        started = time.perf_counter()
        bridge.call("big", "blob", size=500 * MIB)
        answer = bridge.answer("big")
        times[label] = time.perf_counter() - started
        peak = bridge.peak()
        bridge.close()
        assert "result" in answer
    print(f"500 MiB result, mode {mode}: {times[mode]:.2f} s against {times['direct']:.2f} s "
          f"with no bridge ({times[mode] / times['direct']:.2f}x); bridge peak {peak:.0f} MiB")


MEASURES = {
    "line": one_gib_line,
    "flood": flood_unread,
    "result-A": lambda: big_result("A", "modern"),
    "result-P": lambda: big_result("P", "legacy"),
}


def main(argv: list[str]) -> int:
    for name in argv or MEASURES:
        MEASURES[name]()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
