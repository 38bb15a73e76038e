"""The server's era, found by the stdio probe: `server/discover` first, with a timeout.

Must not decide the bridge's mode: it only answers "modern or legacy" and keeps the
DiscoverResult (or the modern error) it got. Rules: stdio.mdx §Backward Compatibility, and
versioning.mdx §Protocol Version Negotiation for a probe the server refuses with -32022.
"""

from __future__ import annotations

from enum import Enum
from typing import Final, TypeGuard

from bridge.core.codec import Message, encode
from bridge.core.config import CoreConfig
from bridge.core.context import Context
from bridge.core.envelope import build_request
from bridge.core.eras import (
    LEGACY_PROTOCOL_VERSIONS,
    MODERN_PROTOCOL_VERSION,
    UNSUPPORTED_PROTOCOL_VERSION,
    Era,
    is_modern_error,
)
from bridge.core.events import SERVER
from bridge.core.jsonrpc import Inbound
from bridge.core.provisional import Overturn, names_modern_version
from bridge.core.states import IllegalMove
from bridge.core.timers import Deadline, Timers

# How much of an answer a log line or an error quotes.
QUOTE_CHARS = 200
# How many times a probe refused with -32022 naming the modern version is sent again: a
# server that keeps refusing the version it lists is not asked forever.
RETRIES_AT_MOST = 1


PROBE_METHOD: Final = "server/discover"
PROBE_COMPLAINT = ("the server's complaint about mcp-rosetta's server/discover probe, which a "
                   "legacy server may not know (the lines at --log-level debug); --server-era "
                   'legacy (server_era = "legacy") skips the probe')
"""What the one event standing for a server's stderr burst about the probe says."""


def names_the_probe(line: str) -> bool:
    """Whether a line of the server's stderr speaks of the probe: a legacy server that logs
    each request it cannot read logs the probe so, sometimes as dozens of lines at once."""
    return PROBE_METHOD in line


def is_discover_result(result: object) -> TypeGuard[Message]:
    versions = result.get("supportedVersions") if isinstance(result, dict) else None
    return isinstance(versions, list) and all(isinstance(v, str) for v in versions)


def discover_request(request_id: str | int, config: CoreConfig) -> Message:
    """The probe: `server/discover` with the bridge's own identity, since no client may have
    spoken yet and discover depends on neither (server/discover.mdx)."""
    return build_request(request_id, PROBE_METHOD, None, era="modern",
                         client_info=config.bridge_info, client_capabilities={})


class ProbeState(Enum):
    """One probe's course (stdio.mdx §Backward Compatibility)."""

    UNSENT = "not sent yet"
    SKIPPED = ("not sent: the era is pinned or remembered, or the last server failed on the "
               "probe")
    WAITING = "sent: its answer, or probe_timeout, settles the era"
    ANSWERED = "answered in time: the era is final"
    TIMED_OUT = "unanswered in time: the fallback era (legacy, provisionally)"
    OVERTURNED = "answered after its timeout like a modern server: the era is corrected"
    ABANDONED = "the server went before it answered"


_PROBE_MOVES: dict[ProbeState, frozenset[ProbeState]] = {
    ProbeState.UNSENT: frozenset({ProbeState.WAITING, ProbeState.SKIPPED}),
    ProbeState.WAITING: frozenset({ProbeState.ANSWERED, ProbeState.TIMED_OUT,
                                   ProbeState.ABANDONED}),
    ProbeState.TIMED_OUT: frozenset({ProbeState.OVERTURNED}),
    ProbeState.SKIPPED: frozenset(),
    ProbeState.ANSWERED: frozenset(),
    ProbeState.OVERTURNED: frozenset(),
    ProbeState.ABANDONED: frozenset(),
}
# Read on every server message (an Enum member read through its class costs several times a
# module global's).
PROBE_WAITING: Final = ProbeState.WAITING


class ProbeDue(Enum):
    """The probe's deadline."""

    ANSWER = "probe_timeout"


class Probe:
    """One probe per server process; `era` stays None until it is known."""

    TIMER: Final = Deadline(None, ProbeDue.ANSWER)

    __slots__ = ("contradiction", "ctx", "discover", "era", "error", "id", "retries", "state",
                 "timers")

    def __init__(self, ctx: Context, timers: Timers) -> None:
        self.ctx = ctx
        self.timers = timers  # the lifecycle's: no mode handler exists while it runs
        self.state = ProbeState.UNSENT
        self.era: Era | None = None
        self.discover: Message | None = None
        self.error: Message | None = None
        self.id: str | None = None
        self.retries = 0
        # Set when server_era is pinned to modern and the server answered like a legacy one:
        # what it answered, and how to fix the pin.
        self.contradiction: str | None = None

    @property
    def found_legacy(self) -> bool:
        """Legacy for good: answered so in time, or pinned (not a fallback, not remembered)."""
        return self.era == "legacy" and (self.state is ProbeState.ANSWERED
                                         or self.ctx.config.server_era == "legacy")

    def _move(self, to: ProbeState) -> None:
        if to not in _PROBE_MOVES[self.state]:
            raise IllegalMove("probe", self.state, to)
        self.state = to

    def start(self, *, skip: bool, remembered: bool = False) -> None:
        """Probe the freshly started server, unless its era is pinned, or `skip`: the one
        started before it exited or closed its output on the probe (taken as legacy), or it
        is `remembered` legacy from an earlier start of its command."""
        pinned = self.ctx.config.server_era
        if skip or pinned == "legacy" or remembered:
            self._move(ProbeState.SKIPPED)
            self._settle("legacy", "the server before it failed on the probe" if skip
                         else "pinned" if pinned == "legacy"
                         else "remembered from an earlier start")
            return
        self._send()
        self._move(ProbeState.WAITING)

    def _send(self) -> None:
        self.id = self.ctx.mint_id()
        self.ctx.send(SERVER, discover_request(self.id, self.ctx.config))
        self.timers.schedule(self.TIMER, self.ctx.now + self.ctx.config.probe_timeout)

    def on_server(self, inbound: Inbound) -> None:
        message = inbound.message
        if inbound.kind != "response" or message.get("id") != self.id:
            self.ctx.log("info", "message.dropped", side=SERVER, reason="before the probe's answer")
            return
        supported = versions_supported(message.get("error"))
        if MODERN_PROTOCOL_VERSION in supported and self.retries < RETRIES_AT_MOST:
            self._retry(supported)
            return
        self._move(ProbeState.ANSWERED)
        self.timers.cancel(self.TIMER)
        if "result" in message and is_discover_result(message["result"]):
            self.discover = message["result"]
            self._settle("modern", "DiscoverResult")
        elif self._falls_back(supported):
            self.error = message["error"]
            self._settle("legacy", f"it refused {MODERN_PROTOCOL_VERSION} and supports "
                                   f"{supported}")
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

    # versioning.mdx §Protocol Version Negotiation: on -32022 "the client SHOULD select a
    # mutually supported version from the `supported` list and retry the request, or surface
    # an error to the user if no compatible version exists". mcp-rosetta speaks one modern
    # version and, through `initialize`, the legacy ones.

    def _retry(self, supported: list[str]) -> None:
        """Refused, yet the modern version is listed (a server may refuse a first request
        whatever its version): the probe again, with a new id, still waiting."""
        self.retries += 1
        self.ctx.log("info", "probe.retried", side=SERVER, supported=supported,
                     version=MODERN_PROTOCOL_VERSION)
        self._send()

    def _falls_back(self, supported: list[str]) -> bool:
        """Refused, and only legacy versions mcp-rosetta speaks are listed (not the modern
        one): the era is legacy, and `initialize` negotiates one of them. Not when the era is
        pinned to modern; with nothing it speaks listed, the modern error stands and the
        client is told what the server speaks."""
        return (MODERN_PROTOCOL_VERSION not in supported
                and self.ctx.config.server_era != "modern"
                and any(version in LEGACY_PROTOCOL_VERSIONS for version in supported))

    def late(self, message: Message) -> Overturn | None:
        """What an answer to this probe that came after the fallback to legacy shows: that
        the server is modern after all, or (None) nothing new."""
        result, error = message.get("result"), message.get("error")
        if is_discover_result(result):
            return Overturn("a DiscoverResult arrived after the probe's timeout", discover=result)
        if not is_modern_error(error) or self._falls_back(versions_supported(error)):
            return None  # the legacy verdict stands
        assert isinstance(error, dict)
        code = error.get("code")
        if names_modern_version(error):  # supported, yet refused: ask again to learn more
            return Overturn(f"the probe was answered late with error {code}")
        return Overturn(f"the probe was answered late with modern error {code}", error=error)

    def overturned(self, overturn: Overturn) -> None:
        """Its late answer showed the server is modern (and what it offers)."""
        self._move(ProbeState.OVERTURNED)
        self.era, self.discover, self.error = "modern", overturn.discover, overturn.error

    def on_timeout(self) -> None:
        self._move(ProbeState.TIMED_OUT)
        self._settle(self._fallback(), "no answer in time")

    def abandon(self) -> None:
        """The server went: nothing more can answer the probe, if it still waits."""
        if self.state is ProbeState.WAITING:
            self._move(ProbeState.ABANDONED)
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


def versions_supported(error: object) -> list[str]:
    """The versions a -32022 with a well-formed `data.supported` lists (else none)."""
    if not isinstance(error, dict) or error.get("code") != UNSUPPORTED_PROTOCOL_VERSION \
            or not is_modern_error(error):
        return []
    supported: list[str] = error["data"]["supported"]
    return supported


def pin_contradicted(answer: Message) -> str:
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


def pin_refusal(error: object) -> str | None:
    """Why a pin to legacy is wrong, when `error` (the answer to `initialize`) is a
    modern-only server's refusal naming the modern version, and the fix; else None."""
    if not names_modern_version(error):
        return None
    assert isinstance(error, dict)
    return (f"server_era is pinned to legacy, but the server is modern-only: it refused "
            f"initialize ({error.get('code')}: {str(error.get('message'))[:QUOTE_CHARS]!r}) "
            f"and supports {MODERN_PROTOCOL_VERSION}; remove --server-era legacy (or set "
            f'server_era = "auto") to let mcp-rosetta detect the era')


def pin_refused(error: Message) -> Message:
    """`error`, a modern-only server's refusal of `initialize` while the era is pinned to
    legacy, with a message naming the pin as the cause (its code and data kept)."""
    return {**error, "message": pin_refusal(error) or error.get("message")}
