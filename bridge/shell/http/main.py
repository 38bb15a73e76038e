"""`mcp-rosetta serve --listen http://…` as a process: the socket, the tokens, the signals,
systemd, the trio run.

Must not serve requests itself (`front.py` does). The listening socket is systemd's when it
passes one (a .socket unit with a TCP `ListenStream=`), else bound here. A socket bound to
anything but loopback needs bearer tokens (streamable-http.mdx §Security & Endpoint: bind
localhost when running locally, authenticate otherwise). SIGTERM, SIGINT and SIGQUIT stop
the front (a second one skips the grace periods); SIGHUP reads the configuration again for
what a running front can change (the allowlist, the tokens, `max_connections`); SIGCHLD
reaps adopted orphans.
"""

from __future__ import annotations

import dataclasses
import os
import resource
import signal
import socket
import time
from collections.abc import AsyncIterator, Callable

import trio

from bridge.config import Settings
from bridge.errors import BridgeError, ConfigError
from bridge.shell import logs
from bridge.shell.child import check_command
from bridge.shell.daemon import session_settings, watchdog_interval
from bridge.shell.http.address import is_loopback, parse_address
from bridge.shell.http.auth import TOKEN_ENV, Tokens, read_tokens
from bridge.shell.http.front import FD_FIX, Access, Front, bind
from bridge.shell.listeners import from_systemd
from bridge.shell.notify import Notifier
from bridge.shell.orphans import Orphans
from bridge.shell.server_side import servers_for

STOPPING = (signal.SIGTERM, signal.SIGINT, signal.SIGQUIT)
RELOADED = frozenset({"allowed_hosts", "allowed_origins", "token_file", "max_connections"})
"""The settings a SIGHUP changes in a running front; the others need a restart (one shared
session and its server child were started with them)."""
Reload = Callable[[], Settings]
FD_MARGIN = 64
"""fds beyond one per connection: the listener, the child's pipes, refusals under way."""
FDS_PER_SESSION = 4
"""A legacy session's server child: its three pipes and its pidfd."""


def run_http(settings: Settings, reload: Reload) -> int:
    """Serve the Streamable HTTP front until stopped; the exit status."""
    if settings.shell.url is None:
        check_command(settings.shell.command)
    sessions = session_settings(settings)
    servers = servers_for(settings.shell, sessions)  # a URL's ${VAR} read once, now
    assert settings.daemon.listen is not None
    address = parse_address(settings.daemon.listen)
    tokens = read_tokens(settings.daemon.token_file)
    listener = _listener(settings.daemon.listen, address)
    with listener:
        bound = listener.getsockname()[0]
        _require_tokens(bound, tokens)
        log = logs.configure(settings.shell.log_level, settings.shell.log_format)
        log.info("daemon.started", **logs.started_fields(settings.shell),
                 tokens=len(tokens))
        daemon = settings.daemon
        room_for(daemon.max_connections + FDS_PER_SESSION * daemon.max_sessions + FD_MARGIN,
                 log)
        from bridge.core.bridge import Bridge

        def legacy_core() -> Bridge:  # a legacy session's own, as a daemon session's
            return Bridge(settings.core, secret=os.urandom(32))

        bridge = Bridge(settings.core, secret=os.urandom(32))
        notify = Notifier(log)
        front = Front(bridge, servers, address, log,
                      settings=sessions, notify=notify,
                      make_core=legacy_core, max_sessions=daemon.max_sessions,
                      session_idle=daemon.session_idle, idle_timeout=daemon.connection_idle,
                      max_connections=daemon.max_connections,
                      stream_backlog=daemon.stream_backlog,
                      access=_access(settings, Tokens(tokens) if tokens else None),
                      view=bridge)
        service = Service(front, settings, reload, bound, notify, log)
        return trio.run(service.run, listener)


def _listener(listen: str, address: object) -> socket.socket:
    """systemd's TCP socket, or the address bound here; ConfigError naming the problem."""
    passed = from_systemd()
    if passed is not None:
        if passed.family not in (socket.AF_INET, socket.AF_INET6):
            passed.close()
            raise ConfigError("systemd passed a socket that is not TCP; the HTTP front "
                              "takes a .socket unit with ListenStream=HOST:PORT")
        return passed
    try:
        return bind(address)  # type: ignore[arg-type]
    except OSError as exc:
        raise ConfigError(f"cannot listen on {listen}: {exc.strerror}") from None


def room_for(fds: int, log: logs.Logger) -> None:
    """Raise the soft open-file limit to `fds` if the hard one allows: systemd and most
    shells start a process at a soft 1024, below what max_connections needs (systemd's
    own advice is that a server raises its soft limit itself). Below that: said once."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or soft >= fds:
        return
    target = fds if hard == resource.RLIM_INFINITY else min(fds, hard)
    if target > soft:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    if target < fds:
        log.warning("http.open_files_low", limit=target, needed=fds, fix=FD_FIX)


def _require_tokens(bound: str, tokens: tuple[bytes, ...]) -> None:
    if not tokens and not is_loopback(bound):
        raise ConfigError(f"the HTTP front listens on {bound}, not loopback: anyone who "
                          "reaches it could use the server. Set token_file = \"/path\" (or "
                          f"--token-file) or the environment variable {TOKEN_ENV}, or "
                          "listen on 127.0.0.1 behind a reverse proxy")


def _access(settings: Settings, tokens: Tokens | None) -> Access:
    daemon = settings.daemon
    return Access(daemon.allowed_hosts, daemon.allowed_origins, tokens)


def _tokens(current: Tokens | None, tokens: tuple[bytes, ...]) -> Tokens | None:
    """The tokens now in force, under the same digest key (a Credential survives a reload)."""
    if not tokens:
        return None
    return current.with_tokens(tokens) if current is not None else Tokens(tokens)


def _changed(old: Settings, new: Settings) -> list[str]:
    """The names of the settings that differ between `old` and `new`."""
    names = []
    for part in ("core", "shell", "daemon"):
        before, after = getattr(old, part), getattr(new, part)
        names += [f.name for f in dataclasses.fields(before)
                  if getattr(before, f.name) != getattr(after, f.name)]
    return sorted(set(names) - {"config_file"})


class Service:
    """The front's process around it: signals, systemd's notifications and watchdog."""

    def __init__(self, front: Front, settings: Settings, reload: Reload, bound: str,
                 notify: Callable[[str], None], log: logs.Logger) -> None:
        self._front = front
        self._settings = settings
        """As the front started: what a reload changed is measured from them."""
        self._reload = reload
        self._bound = bound
        self._notify = notify
        self._log = log
        self._orphans = Orphans()

    async def run(self, listener: socket.socket) -> int:
        with trio.open_signal_receiver(*STOPPING, signal.SIGHUP, signal.SIGCHLD) as signals:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self._watch, signals, name="signals")
                interval = watchdog_interval()
                if interval is not None:
                    nursery.start_soon(self._ping_watchdog, interval, name="watchdog")
                nursery.start_soon(self._tell_listening, name="ready")
                code = await self._front.run(listener)
                nursery.cancel_scope.cancel()
        await self._orphans.end_all(self._settings.shell.timing.kill_grace)
        return code

    async def _tell_listening(self) -> None:
        await self._front.listening.wait()
        self._notify(f"READY=1\nSTATUS=listening on port {self._front.port}; "
                     "the server is starting")

    async def _ping_watchdog(self, interval: float) -> None:
        while True:
            self._notify("WATCHDOG=1")
            await trio.sleep(interval)

    async def _watch(self, signals: AsyncIterator[int]) -> None:
        async for signum in signals:
            if signum == signal.SIGCHLD:
                self._orphans.reap()
                continue
            self._log.info("signal.received", signal=signal.Signals(signum).name)
            if signum == signal.SIGHUP:
                self.reload()
            else:
                self._notify("STOPPING=1")
                self._front.stop()

    def reload(self) -> None:
        """Read the configuration again; apply what a running front can change."""
        self._notify(f"RELOADING=1\nMONOTONIC_USEC={time.monotonic_ns() // 1000}")
        try:
            settings = self._reload()
            tokens = read_tokens(settings.daemon.token_file)
            _require_tokens(self._bound, tokens)
        except BridgeError as exc:
            self._log.error("daemon.reload_failed", reason=str(exc))
        else:
            changed = _changed(self._settings, settings)
            self._front.reload(_access(settings, _tokens(self._front.access.tokens, tokens)),
                               settings.daemon.max_connections)
            self._log.info("daemon.reloaded", applied=sorted(RELOADED & set(changed)),
                           needs_restart=[name for name in changed if name not in RELOADED],
                           tokens=len(tokens))
        self._notify("READY=1")
