"""`mcp-rosetta check`: start a server as the bridge would, find its era as the bridge's probe
does, ask what it offers, and report whether (and how) the bridge can serve it.

Must not serve a client or translate: it asks the server only what a client's first minute
would (server/discover or initialize, then the lists), through the same spawn function and the
same probe request as the bridge (bridge.core.envelope, bridge.core.probe), so what it says
is what the bridge will meet.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Awaitable, Callable
from typing import Any

import trio

from bridge.check_client import INITIALIZED, initialize_request
from bridge.check_report import LISTS, Listing, Report, as_text
from bridge.check_report import as_json as json_report
from bridge.core.config import CoreConfig
from bridge.core.envelope import build_request
from bridge.core.eras import MODERN_PROTOCOL_VERSION, Era, is_modern_error
from bridge.core.events import Remember
from bridge.core.handshake import server_info_of
from bridge.core.jsonrpc import request
from bridge.core.probe import (
    discover_request,
    is_discover_result,
    pin_contradicted,
    pin_refusal,
)
from bridge.core.recall import identity
from bridge.errors import EX_OK, EX_UNAVAILABLE, ConfigError, ServerUnavailable
from bridge.shell.check_wire import Asker, ServerGone, Wire, spawn_with_stderr
from bridge.shell.servers.child import Child, check_command, spawner
from bridge.shell.servers.era_memory import EraMemory, command_key, state_file
from bridge.shell.settings import Settings

_SLOW_PROBE = ("each start waits {:g} s (probe_timeout) for an answer to server/discover "
               "before the server is taken as legacy: --server-era legacy (server_era = "
               '"legacy") skips the probe')
MAX_PAGES = 50
"""Pages of one list followed at most: a server whose cursor never ends is not waited out."""
Message = dict[str, Any]
MakeRequest = Callable[[int, str, Message | None], Message]


def run_check(settings: Settings, *, as_json: bool = False) -> int:
    """Check the configured server, print the report on stdout; 0 if it can be served, 69
    (with the cause in one line on stderr) if not."""
    try:
        report = trio.run(examine, settings)  # the server is stopped on the way out, even so
    except KeyboardInterrupt:
        return 128 + signal.SIGINT
    sys.stdout.write((json_report(report) if as_json else as_text(report)) + "\n")
    sys.stdout.flush()
    if report.servable:
        return EX_OK
    sys.stderr.write(f"mcp-rosetta: server unavailable: {report.failure}\n")
    return EX_UNAVAILABLE


async def examine(settings: Settings) -> Report:
    """What the bridge would find, started with `settings`, as a Report."""
    command = settings.shell.command
    try:
        if settings.shell.url is None:
            check_command(command)
        return await _examine(settings)
    except (ServerUnavailable, ConfigError) as exc:
        return Report(command, options=_options(settings), failure=str(exc))


def _options(settings: Settings) -> tuple[str, ...]:
    """The options that change the verdict, for the report's header: the era's pin, the
    remote server's URL."""
    era, url = settings.core.server_era, settings.shell.url
    return (() if url is None else ("--url", url)) + (
        () if era == "auto" else ("--server-era", era))


class Facts(dict[str, Any]):
    """The Report's fields as they are found out, step after step."""

    def report(self, wire: Asker, command: tuple[str, ...]) -> Report:
        self.update(noise=tuple(wire.noise), noise_count=wire.noise_count,
                    stderr_tail=tuple(wire.stderr_tail),
                    first_byte_ms=_ms_since(wire, wire.first_byte))
        return Report(command, **self)


Step = Callable[[Asker, CoreConfig, Facts], Awaitable[None]]


async def _examine(settings: Settings) -> Report:
    core, facts = settings.core, Facts(options=_options(settings))
    first: Step = _legacy if core.server_era == "legacy" else _probed
    wire = await _with_server(settings, first, facts)
    again = wire.gone and "era" not in facts and core.server_era == "auto"
    if again:
        # As the bridge does: a server that exits on the probe is started again, as legacy.
        facts["era_reason"] = "exited on server/discover, started again as legacy"
        wire = await _with_server(settings, _legacy, facts)
    if wire.gone:
        facts["failure"] = _gone(wire, again)
    elif facts.get("era") == "modern" and "failure" not in facts:
        await _with_server(settings, _dual, facts)
    _recall(settings, facts)
    return facts.report(wire, settings.shell.command)


def _recall(settings: Settings, facts: Facts) -> None:
    """What the bridge remembers of this command (it then skips the probe), forgotten if
    the server now answers otherwise, as the bridge would forget it."""
    if not settings.shell.remember_era or settings.core.server_era != "auto":
        return
    memory = EraMemory(state_file(os.environ),
                       command_key(settings.shell.command, settings.shell.cwd))
    remembered = memory.load()
    if remembered is None:
        return
    facts.update(remembered=remembered, memory_file=memory.path)
    era, named = facts.get("era"), identity({"serverInfo": facts.get("server_info")})
    if era == "modern":
        why = "the server answers the probe as a modern server"
    elif era == "legacy" and "failure" not in facts and named != remembered:
        why = f"the server names itself {named}"
    else:
        return
    facts["forgotten"] = why if memory.store(Remember(None, reason=why)) else memory.error


async def _with_server(settings: Settings, step: Step, facts: Facts) -> Asker:
    """Start a server as the bridge starts it (or open a session with the remote one), run
    `step` on it, stop it as the bridge stops it; its wire (what it said besides, and
    whether it went before it answered)."""
    opened = _opener(settings)
    async with trio.open_nursery() as nursery:
        wire = opened(nursery)
        nursery.start_soon(wire.run)
        try:
            await step(wire, settings.core, facts)
        except ServerGone:
            wire.gone = True
        finally:
            with trio.CancelScope(shield=True):
                wire.exit_code = await wire.stop(settings.shell.timing)
    return wire


def _opener(settings: Settings) -> Callable[[trio.Nursery], Asker]:
    """How check reaches the server: a process started now (before the nursery, so a command
    that cannot start is its failure), or the bridge's upstream to `--url`."""
    shell = settings.shell
    if shell.url is not None:
        from bridge.shell.check_remote import RemoteWire
        from bridge.shell.servers.remote.endpoint import resolve

        endpoint = resolve(shell, os.environ)
        return lambda nursery: RemoteWire(endpoint, nursery, shell.max_message_bytes)
    child, stderr = spawn_with_stderr(_spawner(settings))
    wire = Wire(child, stderr, shell.max_message_bytes)
    return lambda nursery: wire


def _spawner(settings: Settings) -> Callable[[], Child]:
    """How the bridge starts this server (services/stdio_main.py): the same function with
    the same settings, so check meets the server the bridge will."""
    return spawner(settings.shell)


async def _probed(wire: Asker, core: CoreConfig, facts: Facts) -> None:
    """The bridge's probe, then what the era it settles on offers."""
    era = await _probe(wire, core, facts)
    if "failure" not in facts:
        await (_modern if era == "modern" else _legacy)(wire, core, facts)


async def _probe(wire: Asker, core: CoreConfig, facts: Facts) -> Era:
    # The bridge's own probe (stdio.mdx §Backward Compatibility).
    answer = await wire.request(discover_request(wire.next_id(), core), core.probe_timeout)
    fallback: Era = "modern" if core.server_era == "modern" else "legacy"
    if answer is None:
        waited = f"no answer to server/discover in {core.probe_timeout:g} s"
        if fallback == "modern":  # pinned: no legacy handshake will be tried
            facts["failure"] = (f"{waited} (probe_timeout); is this {wire.kind}? "
                                f"A legacy server that ignores the probe needs no "
                                f"--server-era modern: remove it")
        else:
            facts["notes"] = (_SLOW_PROBE.format(core.probe_timeout),)
        return _settle(facts, fallback, waited)
    facts["answer_ms"] = _ms_since(wire, trio.current_time())
    result, error = answer.get("result"), answer.get("error")
    if isinstance(result, dict) and is_discover_result(result):
        facts.update(modern_versions=tuple(result["supportedVersions"]),
                     server_info=server_info_of(result),
                     capabilities=_table(result.get("capabilities")))
        return _settle(facts, "modern", "answered server/discover")
    if isinstance(error, dict) and is_modern_error(error):
        facts["modern_versions"] = tuple(error["data"].get("supported") or ())
        return _settle(facts, "modern", f"refused server/discover with {error['code']}")
    what = f"error {error.get('code')}" if isinstance(error, dict) else "no DiscoverResult"
    answered = f"answered server/discover with {what}"
    if fallback == "modern":  # the bridge would serve it as modern: every request would fail
        facts["failure"] = pin_contradicted(answer)
        return _settle(facts, fallback, f"pinned, yet it {answered}")
    return _settle(facts, fallback, answered)


def _settle(facts: Facts, era: Era, reason: str) -> Era:
    facts.update(era=era, era_reason=facts.get("era_reason") or reason)
    return era


async def _modern(wire: Asker, core: CoreConfig, facts: Facts) -> None:
    versions = facts.get("modern_versions", ())
    if versions and MODERN_PROTOCOL_VERSION not in versions:
        facts["failure"] = (f"the server speaks {', '.join(versions)}, not "
                            f"{MODERN_PROTOCOL_VERSION}: upgrade it (or mcp-rosetta)")
        return

    def make(ident: int, method: str, params: Message | None) -> Message:
        return build_request(ident, method, params, era="modern",
                             client_info=core.bridge_info, client_capabilities={})

    await _lists(wire, core, facts, make)


async def _legacy(wire: Asker, core: CoreConfig, facts: Facts) -> None:
    """The legacy handshake as the bridge performs it (mode B), then the lists."""
    result = await _initialize(wire, core, facts)
    _settle(facts, "legacy", "pinned" if core.server_era == "legacy" else "")
    if result is None:
        return
    facts.update(legacy_version=result.get("protocolVersion"),
                 server_info=_table(result.get("serverInfo")) or None,
                 capabilities=_table(result.get("capabilities")))
    await wire.send(INITIALIZED)
    await _lists(wire, core, facts, request)


async def _initialize(wire: Asker, core: CoreConfig, facts: Facts) -> Message | None:
    """The server's InitializeResult; None, with the failure in `facts`, if it gave none."""
    answer = await wire.request(initialize_request(wire.next_id(), core.bridge_info),
                                core.handshake_timeout)
    facts.setdefault("answer_ms", _ms_since(wire, trio.current_time()))
    result = None if answer is None else answer.get("result")
    if isinstance(result, dict) and isinstance(result.get("protocolVersion"), str):
        return result
    if answer is None:
        why = f"no answer to initialize in {core.handshake_timeout:g} s (handshake_timeout)"
    else:
        why = f"initialize failed: {_error_text(answer)}"
    refusal = pin_refusal(answer.get("error")) if answer is not None else None
    if refusal is not None and core.server_era == "legacy":
        facts["failure"] = refusal
    else:
        facts["failure"] = f"{why}; is this {wire.kind}?"
    return None


async def _dual(wire: Asker, core: CoreConfig, facts: Facts) -> None:
    """Whether a modern server also takes `initialize` (a fresh process: dual-era SDKs keep
    the era of their first request for the whole process)."""
    probe = Facts()
    result = await _initialize(wire, core, probe)
    if result is not None:
        facts.update(dual=True, legacy_version=result["protocolVersion"])


async def _lists(wire: Asker, core: CoreConfig, facts: Facts, make: MakeRequest) -> None:
    """Every list the server declares, all pages (up to MAX_PAGES)."""
    # Capabilities unknown (a modern error instead of a DiscoverResult): ask for every list.
    declared = facts.get("capabilities", LISTS)
    facts["lists"] = {name: await _listing(wire, core, make, name)
                      for name in LISTS if name in declared}


async def _listing(wire: Asker, core: CoreConfig, make: MakeRequest, name: str) -> Listing:
    count, cursor = 0, None
    for _ in range(MAX_PAGES):
        params = None if cursor is None else {"cursor": cursor}
        answer = await wire.request(make(wire.next_id(), f"{name}/list", params),
                                    core.handshake_timeout)
        if answer is None:
            return Listing(count, error=f"no answer in {core.handshake_timeout:g} s")
        items = _table(answer.get("result")).get(name)
        if not isinstance(items, list):
            return Listing(count, error=_error_text(answer))
        count += len(items)
        cursor = answer["result"].get("nextCursor")
        if not isinstance(cursor, str):
            return Listing(count)
    return Listing(count, complete=False)


def _table(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _error_text(answer: Message) -> str:
    error = answer.get("error")
    if isinstance(error, dict):
        return f"error {error.get('code')}: {error.get('message')}"
    return "an answer of the wrong shape"


def _ms_since(wire: Asker, moment: float | None) -> float | None:
    return None if moment is None else round((moment - wire.started) * 1000, 1)


def _gone(wire: Asker, again: bool) -> str:
    how = "closed its output" if wire.signalled else f"exited (status {wire.exit_code})"
    when = f"before it answered {wire.asking or 'anything'}"
    if again:
        when = f"on server/discover, then again, started once more, {when}"
    return f"the server {how} {when}: see its stderr, or run it by itself"
