"""The server's era, found by the stdio probe: `server/discover` first, with a timeout.

Must not decide the bridge's mode: it only answers "modern or legacy" and keeps the
DiscoverResult (or the modern error) it got. Rules: stdio.mdx §Backward Compatibility.
"""

from __future__ import annotations

from typing import Any, TypeGuard

from bridge.core.context import Context
from bridge.core.envelope import build_request
from bridge.core.eras import Era, is_modern_error
from bridge.core.events import SERVER
from bridge.core.jsonrpc import Inbound
from bridge.core.timers import Timers


def is_discover_result(result: Any) -> TypeGuard[dict[str, Any]]:
    versions = result.get("supportedVersions") if isinstance(result, dict) else None
    return isinstance(versions, list) and all(isinstance(v, str) for v in versions)


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

    def start(self, *, skip: bool) -> None:
        """Probe the freshly started server, unless its era is pinned, or `skip`: the one
        started before it exited or closed its output on the probe (taken as legacy)."""
        pinned = self.ctx.config.server_era
        if skip or pinned == "legacy":
            self._settle("legacy", "the server before it failed on the probe" if skip
                         else "pinned")
            return
        self.id = self.ctx.mint_id()
        # The probe carries the bridge's own identity: no client may have spoken yet, and
        # discover depends on neither (server/discover.mdx).
        probe = build_request(
            self.id,
            "server/discover",
            None,
            era="modern",
            client_info=self.ctx.config.bridge_info,
            client_capabilities={},
        )
        self.ctx.send(SERVER, probe)
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
        else:
            self.error = message.get("error")
            self._settle(self._fallback(), "not a DiscoverResult")

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

    def _settle(self, era: Era, reason: str) -> None:
        self.era = era
        self.ctx.log("info", "era.detected", side=SERVER, era=era, reason=reason)
