"""The server's era, found by the stdio probe: `server/discover` first, with a timeout.

Must not decide the bridge's mode: it only answers "modern or legacy" and keeps the
DiscoverResult (or the modern error) it got. Rules: stdio.mdx §Backward Compatibility.
"""

from __future__ import annotations

from typing import Any, TypeGuard

from bridge.core.codec import encode
from bridge.core.config import CoreConfig
from bridge.core.context import Context
from bridge.core.envelope import build_request
from bridge.core.eras import Era, is_modern_error
from bridge.core.events import SERVER
from bridge.core.jsonrpc import Inbound
from bridge.core.provisional import Overturn, names_modern_version
from bridge.core.timers import Timers

# How much of an answer a log line or an error quotes.
QUOTE_CHARS = 200


def is_discover_result(result: Any) -> TypeGuard[dict[str, Any]]:
    versions = result.get("supportedVersions") if isinstance(result, dict) else None
    return isinstance(versions, list) and all(isinstance(v, str) for v in versions)


def discover_request(request_id: str | int, config: CoreConfig) -> dict[str, Any]:
    """The probe: `server/discover` with the bridge's own identity, since no client may have
    spoken yet and discover depends on neither (server/discover.mdx)."""
    return build_request(request_id, "server/discover", None, era="modern",
                         client_info=config.bridge_info, client_capabilities={})


class Probe:
    """One probe per server process; `era` stays None until it is known."""

    TIMER = ("probe",)

    def __init__(self, ctx: Context, timers: Timers) -> None:
        self.ctx = ctx
        self.timers = timers  # the lifecycle's: no mode handler exists while it runs
        self.era: Era | None = None
        self.discover: dict[str, Any] | None = None
        self.error: dict[str, Any] | None = None
        self.waiting = False
        self.id: str | None = None
        # Set when server_era is pinned to modern and the server answered like a legacy one:
        # what it answered, and how to fix the pin.
        self.contradiction: str | None = None

    def start(self, *, skip: bool) -> None:
        """Probe the freshly started server, unless its era is pinned, or `skip`: the one
        started before it exited or closed its output on the probe (taken as legacy)."""
        pinned = self.ctx.config.server_era
        if skip or pinned == "legacy":
            self._settle("legacy", "the server before it failed on the probe" if skip
                         else "pinned")
            return
        self.id = self.ctx.mint_id()
        self.ctx.send(SERVER, discover_request(self.id, self.ctx.config))
        self.waiting = True
        self.timers.schedule(self.TIMER, self.ctx.now + self.ctx.config.probe_timeout)

    def on_server(self, inbound: Inbound) -> None:
        message = inbound.message
        if inbound.kind != "response" or message.get("id") != self.id:
            self.ctx.log("info", "message.dropped", side=SERVER, reason="before the probe's answer")
            return
        self.waiting = False
        self.timers.cancel(self.TIMER)
        if "result" in message and is_discover_result(message["result"]):
            self.discover = message["result"]
            self._settle("modern", "DiscoverResult")
        elif "error" in message and is_modern_error(message["error"]):
            self.error = message["error"]
            self._settle("modern", f"modern error {message['error'].get('code')}")
        elif self.ctx.config.server_era == "modern":
            self.error = message.get("error")
            self.contradiction = pin_contradicted(message)
            self._settle("modern", self.contradiction, level="warning")
        else:
            self.error = message.get("error")
            self._settle("legacy", "not a DiscoverResult")

    def late(self, message: dict[str, Any]) -> Overturn | None:
        """What an answer to this probe that came after the fallback to legacy shows: that
        the server is modern after all, or (None) nothing new."""
        result, error = message.get("result"), message.get("error")
        if is_discover_result(result):
            return Overturn("a DiscoverResult arrived after the probe's timeout", discover=result)
        if not is_modern_error(error):
            return None
        assert isinstance(error, dict)
        code = error.get("code")
        if names_modern_version(error):  # supported, yet refused: ask again to learn more
            return Overturn(f"the probe was answered late with error {code}")
        return Overturn(f"the probe was answered late with modern error {code}", error=error)

    def on_timeout(self) -> None:
        self.waiting = False
        self._settle(self._fallback(), "no answer in time")

    def abandon(self) -> None:
        self.waiting = False
        self.timers.cancel(self.TIMER)

    def is_late_answer(self, inbound: Inbound) -> bool:
        return (
            inbound.kind == "response" and self.id is not None and inbound.message["id"] == self.id
        )

    def _fallback(self) -> Era:
        # "any other error, or no response within a reasonable timeout" means legacy.
        return "modern" if self.ctx.config.server_era == "modern" else "legacy"

    def _settle(self, era: Era, reason: str, level: str = "info") -> None:
        self.era = era
        self.ctx.log(level, "era.detected", side=SERVER, era=era, reason=reason)


def pin_contradicted(answer: dict[str, Any]) -> str:
    """Why a pin to modern is wrong, quoting what the server answered the probe, and the fix."""
    error = answer.get("error")
    if isinstance(error, dict):
        what = f"error {error.get('code')}: {str(error.get('message'))[:QUOTE_CHARS]!r}"
    else:
        shown = encode(answer.get("result")).rstrip(b"\n")[:QUOTE_CHARS]
        what = f"a result that is no DiscoverResult: {shown.decode('utf-8', 'replace')}"
    return (f"server_era is pinned to modern, but the server answered server/discover like a "
            f"legacy server ({what}); remove --server-era modern (or set server_era = "
            f'"auto") to let mcp-rosetta detect the era')
