"""Profile the core's message path in process: `python profile_core.py A|P-legacy|P-modern [N]`.

Must not touch the shell or pipes: it drives bridge.core.bridge.Bridge with the benchmark's own
messages (a tools/call echo round trip, encoded as the shell's writer would encode it), prints
µs per round trip, and with `--profile` a pyinstrument tree of where that time goes. With
`--metrics` the core is given an observer (bridge.core.observe) counting into the shell's
series, each message read is counted as the driver counts it, and the series are read once
at the end as a scrape reads them: the cost of metrics per call (without spans). With
`--listen` (B, P-modern) the client holds a `subscriptions/listen` open through the calls.
"""

from __future__ import annotations

import sys
import time
from typing import Any

from clients import CLIENT_INFO, ECHO, ELICITATION, LEGACY, META, MODERN

from bridge.core.bridge import Bridge
from bridge.core.codec import encode
from bridge.core.events import ChildStarted, MessageReceived, Send

Message = dict[str, Any]
DISCOVER = {"resultType": "complete", "supportedVersions": [MODERN],
            "capabilities": {"tools": {}}, "ttlMs": 60000, "cacheScope": "public",
            "_meta": {META + "serverInfo": {"name": "bench-server", "version": "1.0.0"}}}
TEXT = [{"type": "text", "text": "hello, bridge"}]


def line(message: Message) -> bytes:
    return encode(message).rstrip(b"\n")


def sends(actions: list[Any], side: str) -> list[bytes]:
    """What the shell would write to `side`, encoded: the codec is part of the path."""
    return [encode(a.message) if a.line is None else a.line
            for a in actions if type(a) is Send and a.side == side]


def request(id_: int, era: str, method: str, params: Message) -> Message:
    if era == "modern":
        params = {**params, "_meta": {META + "protocolVersion": MODERN,
                                      META + "clientCapabilities": {},
                                      META + "clientInfo": CLIENT_INFO}}
    return {"jsonrpc": "2.0", "id": id_, "method": method, "params": params}


def echo_result(era: str) -> Message:
    if era == "modern":
        return {"resultType": "complete", "content": TEXT, "isError": False,
                "_meta": {META + "serverInfo": {"name": "bench-server", "version": "1.0.0"}}}
    return {"content": TEXT, "isError": False}


class Rig:
    """One Bridge wired to a scripted client and server of the given eras."""

    def __init__(self, client_era: str, server_era: str, metrics: bool = False,
                 listen: bool = False) -> None:
        self.series = None
        if metrics:
            from bridge.core.observe import Observer
            from bridge.shell.metrics.series import Series

            self.series = Series()
            self.bridge = Bridge(observer=Observer(self.series.tally))
        else:
            self.bridge = Bridge()
        self.now = 0.0
        self.client_era, self.server_era = client_era, server_era
        probe = self.feed("server", None, ChildStarted())
        probe_id = __import__("orjson").loads(probe[0])["id"]
        reply: Message = ({"result": DISCOVER} if server_era == "modern" else
                          {"error": {"code": -32601, "message": "Method not found"}})
        self.feed("server", {"jsonrpc": "2.0", "id": probe_id, **reply})
        if client_era == "legacy":
            self.feed("client", request(0, "legacy", "initialize", {
                "protocolVersion": LEGACY, "capabilities": ELICITATION,
                "clientInfo": CLIENT_INFO}))
            self.answer_server_requests()  # mode P relays it: the server answers, as a real one
            self.feed("client", {"jsonrpc": "2.0", "method": "notifications/initialized"})
        else:
            self.feed("client", request(0, "modern", "tools/list", {}))
        self.answer_server_requests()
        if listen:
            self.open_listen()

    def open_listen(self) -> None:
        """A modern client's subscriptions/listen, held open for the session (as SDK clients
        keep one for list changes), acknowledged by a modern server if it was sent one."""
        import orjson

        wanted = {"toolsListChanged": True}
        out = self.feed("client", request("listen", "modern", "subscriptions/listen",
                                          {"notifications": wanted}))
        if self.server_era == "modern":
            sid = orjson.loads(out[0])["id"]
            self.feed("server", {"jsonrpc": "2.0",
                                 "method": "notifications/subscriptions/acknowledged",
                                 "params": {"notifications": wanted,
                                            "_meta": {META + "subscriptionId": sid}}})

    def feed(self, side: str, message: Message | None, event: Any = None) -> list[bytes]:
        event = event or MessageReceived(side, line(message or {}))  # type: ignore[arg-type]
        self.now += 1e-4
        actions = self.bridge.handle(event, self.now)
        if self.series is not None:  # as the driver counts each read's lines
            self.series.messages[side] += 1
        self.pending = sends(actions, "server")
        return self.pending

    def answer_server_requests(self) -> None:
        """The legacy handshake the bridge runs with a legacy child in mode B (or P's own)."""
        import orjson

        queue = list(self.pending)
        while queue:
            msg = orjson.loads(queue.pop(0))
            if "id" not in msg:
                continue
            result: Message = {"tools": []}
            if msg.get("method") == "initialize":
                result = {"protocolVersion": msg["params"]["protocolVersion"],
                          "capabilities": {"tools": {}}, "serverInfo": CLIENT_INFO}
            queue += self.feed("server", {"jsonrpc": "2.0", "id": msg["id"], "result": result})

    def round_trip(self, id_: int) -> None:
        import orjson

        forwarded = self.feed("client", request(id_, self.client_era, "tools/call", ECHO))
        server_id = orjson.loads(forwarded[0])["id"]
        self.feed("server", {"jsonrpc": "2.0", "id": server_id,
                             "result": echo_result(self.server_era)})


ERAS = {"A": ("legacy", "modern"), "B": ("modern", "legacy"),
        "P-legacy": ("legacy", "legacy"), "P-modern": ("modern", "modern")}


def main(argv: list[str]) -> int:
    mode = argv[0] if argv else "A"
    count = int(argv[1]) if len(argv) > 1 and argv[1].isdigit() else 20000
    client_era, server_era = ERAS[mode]
    if "--listen" in argv and client_era != "modern":
        print("--listen: only a modern client (B, P-modern) opens a listen stream",
              file=sys.stderr)
        return 2
    rig = Rig(client_era, server_era, metrics="--metrics" in argv, listen="--listen" in argv)
    assert rig.bridge.mode is not None, "the bridge did not choose a mode"
    profiler = None
    if "--profile" in argv:
        from pyinstrument import Profiler

        profiler = Profiler(interval=0.0001)
        profiler.start()
    started = time.perf_counter()
    for i in range(1, count + 1):
        rig.round_trip(i)
    elapsed = time.perf_counter() - started
    if profiler is not None:
        profiler.stop()
        print(profiler.output_text(unicode=True, color=False, show_all=False))
    print(f"{mode} (bridge mode {rig.bridge.mode}): {elapsed / count * 1e6:.1f} µs per "
          f"tools/call round trip in the core, codec included")
    if rig.series is not None:  # read once, as a scrape reads them (the buckets are found then)
        rig.series.operations()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
