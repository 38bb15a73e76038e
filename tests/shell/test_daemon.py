"""The daemon in process: a session per connection, the session limit, containment, reload,
stop, and what it tells systemd. Clients are real Unix socket connections; servers are fakes."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import structlog
import trio
from structlog.testing import capture_logs

from bridge.config import build
from bridge.core.config import CoreConfig
from bridge.core.events import (
    Action,
    ChildExited,
    ChildStarted,
    Event,
    MessageReceived,
    Remember,
    ShutdownRequested,
    Stop,
)
from bridge.errors import ConfigError
from bridge.shell import logs
from bridge.shell.servers.start_failure import NotStarted
from bridge.shell.servers.supervisor import Spawn
from bridge.shell.services import daemon_main
from bridge.shell.services.daemon import Daemon
from bridge.shell.services.listeners import bind_unix
from bridge.shell.services.service import Service, watchdog_interval
from bridge.shell.settings import Settings, ShellConfig
from tests.session_log import most_at_once
from tests.shell.fakes import WAIT, EchoCore, FakeChild, LineStream, Spawner, ids


class Servers:
    """The daemon's spawn factory: one Spawner, and the command each session asked for."""

    def __init__(self, serving: bool = True) -> None:
        self.spawner = Spawner(lambda nursery: FakeChild(nursery, serving=serving))
        self.commands: list[tuple[str, ...]] = []
        self.shells: list[ShellConfig] = []

    def __call__(self, shell: ShellConfig) -> Spawn:
        def spawn() -> Any:
            self.commands.append(shell.command)
            self.shells.append(shell)
            return self.spawner()

        return spawn


class Running:
    def __init__(self, daemon: Daemon, service: Service, path: Path, servers: Servers,
                 cores: list[Any], notified: list[str], logs: list[dict[str, Any]],
                 reads: list[Settings | Exception]) -> None:
        self.daemon, self.service, self.path = daemon, service, path
        self.servers, self.cores = servers, cores
        self.notified, self.logs = notified, logs
        self._reads = reads

    def reload(self, read: Settings | Exception) -> None:
        """A SIGHUP's reload, whose configuration file reads as `read` (or fails with it)."""
        self._reads.append(read)
        self.service.reload()

    async def client(self) -> LineStream:
        return LineStream(stream=await trio.open_unix_socket(str(self.path)))

    def events(self, name: str) -> list[dict[str, Any]]:
        return [entry for entry in self.logs if entry["event"] == name]

    def running(self) -> int:
        """Sessions started and not yet ended, as the log tells them."""
        return len(self.events("session.started")) - len(self.events("session.ended")) \
            - len(self.events("session.crashed"))

    async def sessions(self, count: int) -> None:
        """Until `count` sessions run (started, each holding its place)."""
        with trio.fail_after(WAIT):
            while self.daemon.session_count != count or self.running() != count:
                await trio.sleep(0.01)


def settings(**values: Any) -> Settings:
    return build({"command": ("server-a",), "shutdown_grace": 2.0, **values})


@asynccontextmanager
async def running(tmp_path: Path, config: Settings | None = None,
                  core: Callable[[], Any] = EchoCore, watchdog: float | None = None,
                  serving: bool = True,
                  apply: Callable[[Daemon, Settings], None] = Daemon.reload,
                  configs: list[CoreConfig] | None = None) -> AsyncIterator[Running]:
    config = config or settings()
    path = tmp_path / "daemon.sock"
    listener = bind_unix(replace(config.daemon, listen=str(path)))
    servers = Servers(serving)
    cores: list[Any] = []
    notified: list[str] = []
    reads: list[Settings | Exception] = []

    def make_core(config: CoreConfig) -> Any:
        if configs is not None:
            configs.append(config)
        cores.append(core())
        return cores[-1]

    def read() -> Settings:
        found = reads.pop(0)
        if isinstance(found, Exception):
            raise found
        return found

    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(0))
    with capture_logs() as captured, listener:
        daemon = Daemon(config, logs.logger(), notified.append, make_core=make_core,
                        make_spawn=servers)
        service = Service(daemon, logs.logger(), notified.append, read=read,
                          apply=lambda new: apply(daemon, new), kill_grace=1.0,
                          watchdog=watchdog)
        async with trio.open_nursery() as nursery:
            servers.spawner.nursery = nursery
            nursery.start_soon(service.run, listener)
            with trio.fail_after(WAIT):
                while "READY=1" not in notified:
                    await trio.sleep(0.01)
            yield Running(daemon, service, path, servers, cores, notified, captured, reads)
            daemon.stop()
            with trio.fail_after(WAIT):
                await daemon.stopped.wait()
            nursery.cancel_scope.cancel()


async def test_each_connection_is_a_session_with_its_own_server(
        tmp_path: Path, autojump_clock: Any) -> None:
    async with running(tmp_path) as d:
        first, second = await d.client(), await d.client()
        await first.send(b'{"id":1}')
        await second.send(b'{"id":2}')
        assert ids(await first.lines(1)) == [1]
        assert ids(await second.lines(1)) == [2]
        await d.sessions(2)
        assert len(d.servers.spawner.children) == 2
        await first.close_writing()
        await first.expect_eof()
        await d.sessions(1)
        await second.send(b'{"id":3}')  # the other session goes on
        assert ids(await second.lines(1)) == [3]
        await second.aclose()
    assert [e["session"] for e in d.events("session.ended")] == [1, 2]


class LearningCore(EchoCore):
    """Learns the server is legacy as it starts, as the core does at its answer to
    initialize."""

    def react(self, event: Event, now: float) -> list[Action]:
        if isinstance(event, ChildStarted):
            return [Remember("legacy", {"name": "a", "version": "1"}, "learned")]
        return super().react(event, now)


async def test_each_session_starts_with_what_the_sessions_before_remembered(
        tmp_path: Path, autojump_clock: Any) -> None:
    configs: list[CoreConfig] = []
    async with running(tmp_path, core=LearningCore, configs=configs) as d:
        for _ in range(2):
            client = await d.client()
            await client.send(b'{"id":1}')
            assert ids(await client.lines(1)) == [1]
            await client.close_writing()
            await client.expect_eof()
            await d.sessions(0)
    assert [c.remembered for c in configs] == [None, {"name": "a", "version": "1"}]
    assert [e["reason"] for e in d.events("era.remembered")] == ["learned", "learned"]


async def test_one_connection_over_the_limit_is_refused_by_name(
        tmp_path: Path, autojump_clock: Any) -> None:
    async with running(tmp_path, settings(max_sessions=1)) as d:
        first = await d.client()
        await d.sessions(1)
        second = await d.client()
        await second.send(b'{"jsonrpc":"2.0","id":"init-7","method":"initialize"}')
        refusal = json.loads(await second.line())
        await second.expect_eof()
        assert refusal == {"jsonrpc": "2.0", "id": "init-7", "error": {
            "code": -32000, "data": {"max_sessions": 1},
            "message": "mcp-rosetta: too many sessions (max_sessions = 1); try again later"}}
        await first.send(b'{"id":1}')  # the session that was admitted is untouched
        assert ids(await first.lines(1)) == [1]
        await first.aclose()
        await second.aclose()


async def test_bursts_never_pass_the_limit_and_each_refusal_names_its_own_request(
        tmp_path: Path, autojump_clock: Any) -> None:
    async with running(tmp_path, settings(max_sessions=4)) as d:
        for burst, count in enumerate((30, 40, 35)):
            clients: list[LineStream] = [LineStream()] * count

            async def open_one(n: int, clients: list[LineStream] = clients) -> None:
                clients[n] = await d.client()

            async with trio.open_nursery() as nursery:  # all connect in the same round
                for n in range(count):
                    nursery.start_soon(open_one, n)
            for n, client in enumerate(clients):
                await client.send(b'{"jsonrpc":"2.0","id":"b%d-%d","method":"ping"}' % (burst, n))
            answers = [json.loads(await client.line()) for client in clients]
            assert [a["id"] for a in answers] == [f"b{burst}-{n}" for n in range(count)]
            refused = [a for a in answers if "error" in a]
            assert len(refused) == count - 4
            assert all(a["error"]["data"] == {"max_sessions": 4} for a in refused)
            assert sum("method" in a for a in answers) == 4  # echoed by the server
            for client in clients:
                await client.aclose()
            await d.sessions(0)
        assert most_at_once(d.logs) == 4
        assert len(d.servers.spawner.children) == 12


async def test_a_reset_client_s_server_gets_stdin_eof_at_once(
        tmp_path: Path, autojump_clock: Any) -> None:
    config = settings(drain_timeout=30.0, kill_grace=2.0)

    def bridge() -> Any:
        from bridge.core.bridge import Bridge

        return Bridge(config.core)

    async with running(tmp_path, config, core=bridge, serving=False) as d:
        sock = trio.socket.socket(trio.socket.AF_UNIX, trio.socket.SOCK_STREAM)
        await sock.connect(str(d.path))
        client = LineStream(stream=trio.SocketStream(sock))
        child = await d.servers.spawner.nth(0)
        (probe,) = await child.lines(1)
        await child.write(b'{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"no"}}'
                          % json.dumps(json.loads(probe)["id"]).encode())
        await client.send(b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{'
                          b'"protocolVersion":"2025-06-18","capabilities":{},'
                          b'"clientInfo":{"name":"t","version":"1"}}}')
        (initialize,) = await child.lines(1)
        await child.write(b'{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-06-18",'
                          b'"capabilities":{},"serverInfo":{"name":"s","version":"1"}}}'
                          % json.dumps(json.loads(initialize)["id"]).encode())
        assert json.loads(await client.line())["result"]["serverInfo"]["name"] == "s"
        await client.send(b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{}}')
        await child.lines(1)  # the call reaches the server, which never answers
        sock.setsockopt(trio.socket.SOL_SOCKET, trio.socket.SO_LINGER, b"\1\0\0\0\0\0\0\0")
        sock.close()
        reset = trio.current_time()
        await child.expect_eof()
        assert trio.current_time() - reset < 0.1  # no drain: nobody can read its answer
        await d.sessions(0)
        assert [e["event"] for e in d.logs if e["event"].startswith("client.")] == [
            "client.gone"]


async def test_a_connection_admitted_just_before_a_stop_is_refused_naming_the_stop(
        tmp_path: Path, autojump_clock: Any) -> None:
    async with running(tmp_path) as d:
        admit = d.daemon.admit

        def admit_then_stop(nursery: trio.Nursery, connection: Any, peer: str) -> None:
            admit(nursery, connection, peer)
            d.daemon.stop()  # in the same scheduler round, before the session's task runs

        d.daemon.admit = admit_then_stop  # type: ignore[method-assign]
        client = await d.client()
        await client.send(b'{"jsonrpc":"2.0","id":"x","method":"ping"}')
        answer = json.loads(await client.line())
        assert answer["id"] == "x"
        assert answer["error"]["message"] == (
            "mcp-rosetta: the daemon is stopping; try again later")
        await client.aclose()
        with trio.fail_after(WAIT):
            await d.daemon.stopped.wait()
    assert d.servers.commands == []  # no server was started for it
    assert d.events("session.started") == []


async def test_a_refused_client_that_hung_up_first_costs_nothing_else(
        tmp_path: Path, autojump_clock: Any) -> None:
    async with running(tmp_path, settings(max_sessions=1)) as d:
        first = await d.client()
        await d.sessions(1)
        for _ in range(3):
            sock = trio.socket.socket(trio.socket.AF_UNIX, trio.socket.SOCK_STREAM)
            await sock.connect(str(d.path))
            await sock.send(b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n')
            sock.close()  # gone before its refusal can reach it
        with trio.fail_after(WAIT):
            while len(d.events("connection.refused")) < 3:
                await trio.sleep(0.01)
        await first.send(b'{"id":1}')  # the daemon and its session go on
        assert ids(await first.lines(1)) == [1]
        late = await d.client()
        await late.send(b'{"jsonrpc":"2.0","id":"late","method":"ping"}')
        assert json.loads(await late.line())["error"]["data"] == {"max_sessions": 1}
        await first.aclose()
        await late.aclose()


class CrashingCore(EchoCore):
    def react(self, event: Event, now: float) -> list[Action]:
        if isinstance(event, MessageReceived) and event.message == b'{"id":"crash"}':
            raise RuntimeError("core bug")
        return super().react(event, now)


async def test_a_crashing_session_is_logged_and_contained(
        tmp_path: Path, autojump_clock: Any) -> None:
    async with running(tmp_path, core=CrashingCore) as d:
        healthy, doomed = await d.client(), await d.client()
        await d.sessions(2)
        await doomed.send(b'{"id":"crash"}')
        await doomed.expect_eof()
        await d.sessions(1)
        await healthy.send(b'{"id":1}')
        assert ids(await healthy.lines(1)) == [1]
        (crash,) = d.events("session.crashed")
        assert "core bug" in crash["error"]
        assert all(child.code is not None for child in d.servers.spawner.children[1:])
        await healthy.aclose()
        await doomed.aclose()


async def test_a_server_that_cannot_start_is_a_session_whose_core_hears_the_cause(
        tmp_path: Path, autojump_clock: Any) -> None:
    async with running(tmp_path) as d:
        def missing() -> Any:
            raise NotStarted(127, "server command not found: 'server-a' is in none of PATH=/x")

        d.daemon._make_spawn = lambda _: missing  # type: ignore[method-assign]
        client = await d.client()
        await client.expect_eof()  # EchoCore stops with the exit's status
        await d.sessions(0)
        await client.aclose()
    core = d.cores[0]
    assert [e for _, e in core.of(ChildExited)] == [
        ChildExited(127, cause="server command not found: 'server-a' is in none of PATH=/x")]
    assert [(e["session"], e["code"]) for e in d.events("child.start_failed")] == [(1, 127)]
    assert [(e["session"], e["code"]) for e in d.events("session.ended")] == [(1, 127)]


async def test_systemd_hears_ready_the_session_count_and_stopping(
        tmp_path: Path, autojump_clock: Any) -> None:
    async with running(tmp_path) as d:
        client = await d.client()
        await d.sessions(1)
        await client.close_writing()
        await client.expect_eof()
        await d.sessions(0)
        await client.aclose()
    assert d.notified == ["READY=1", "STATUS=0 sessions", "STATUS=1 session",
                          "STATUS=0 sessions", "STOPPING=1"]


async def test_a_reload_changes_the_server_for_new_sessions_only(
        tmp_path: Path, autojump_clock: Any) -> None:
    async with running(tmp_path) as d:
        old = await d.client()
        await d.sessions(1)
        d.reload(settings(command=("server-b",)))
        new = await d.client()
        await d.sessions(2)
        await old.send(b'{"id":"old"}')
        assert ids(await old.lines(1)) == ["old"]  # its session and server are unchanged
        assert d.servers.commands == [("server-a",), ("server-b",)]
        await old.aclose()
        await new.aclose()
    reloading = [n for n in d.notified if n.startswith("RELOADING=1")]
    assert len(reloading) == 1 and "\nMONOTONIC_USEC=" in reloading[0]
    at = d.notified.index(reloading[0])
    assert d.notified[at + 1] == "READY=1"


async def test_a_reload_gives_new_sessions_the_new_env_and_cwd(
        tmp_path: Path, autojump_clock: Any) -> None:
    async with running(tmp_path) as d:
        old = await d.client()
        await d.sessions(1)
        d.reload(settings(env=(("TOKEN", "s3cr3t-value"),), cwd=str(tmp_path),
                          pass_env=("KEEP",)))
        new = await d.client()
        await d.sessions(2)
        await old.aclose()
        await new.aclose()
    first, second = d.servers.shells
    assert (first.env, first.cwd, first.pass_env) == ((), None, None)
    assert (second.env, second.cwd, second.pass_env) == (
        (("TOKEN", "s3cr3t-value"),), str(tmp_path), ("KEEP",))
    assert "s3cr3t-value" not in json.dumps(d.logs, default=str)  # values are never logged


async def test_a_reload_that_fails_keeps_the_settings_it_had(
        tmp_path: Path, autojump_clock: Any) -> None:
    async with running(tmp_path) as d:
        d.reload(ConfigError("config /etc/x.toml: unknown key 'bogus'"))
        client = await d.client()
        await d.sessions(1)
        await client.aclose()
        assert d.servers.commands == [("server-a",)]
        (failed,) = d.events("daemon.reload_failed")
        assert "bogus" in failed["reason"]
    # systemd hears the reload end either way, or it would wait for READY=1 for ever.
    reloading = next(n for n in d.notified if n.startswith("RELOADING=1"))
    assert d.notified[d.notified.index(reloading) + 1] == "READY=1"


async def test_a_reload_whose_command_cannot_be_found_is_refused_naming_it_and_the_path(
        tmp_path: Path, autojump_clock: Any) -> None:
    # The PATH searched is the one the server would get (here set by the config's env).
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "server-b").write_text("#!/bin/sh\n")
    (bin_dir / "server-b").chmod(0o755)
    path = (("PATH", str(bin_dir)),)
    async with running(tmp_path, settings(env=path), apply=daemon_main._apply) as d:
        d.reload(settings(command=("server-x",), env=path))
        client = await d.client()
        await d.sessions(1)
        await client.aclose()
        assert d.daemon.settings.shell.command == ("server-a",)  # the running config stays
        assert d.servers.commands == [("server-a",)]
        d.reload(settings(command=("server-b",), env=path))  # one that is there: taken
        assert d.daemon.settings.shell.command == ("server-b",)
    (failed,) = d.events("daemon.reload_failed")
    assert failed["reason"] == (f"server command not found: 'server-x' is in none of "
                                f"PATH={bin_dir}; give the absolute path of the program")
    assert [e["command"] for e in d.events("daemon.reloaded")] == [["server-b"]]
    assert [n.split("\n")[0] for n in d.notified if n.startswith(("RELOADING", "READY"))] \
        == ["READY=1", "RELOADING=1", "READY=1", "RELOADING=1", "READY=1"]


class PatientCore(EchoCore):
    """Records the grace it was asked to stop with, and stops only when told to hurry."""

    def react(self, event: Event, now: float) -> list[Action]:
        if isinstance(event, ShutdownRequested):
            return [Stop(0)] if event.grace == 0 else []
        return super().react(event, now)


async def test_stopping_gives_sessions_the_shutdown_grace_then_a_second_stop_hurries(
        tmp_path: Path, autojump_clock: Any) -> None:
    async with running(tmp_path, core=PatientCore) as d:
        client = await d.client()
        await d.sessions(1)
        d.daemon.stop()
        await trio.sleep(1)
        assert d.daemon.session_count == 1  # still finishing what it owes
        with pytest.raises(OSError):  # no longer accepting
            await trio.open_unix_socket(str(d.path))
        d.daemon.stop()
        with trio.fail_after(WAIT):
            await d.daemon.stopped.wait()
        await client.aclose()
    graces = [e.grace for _, e in d.cores[0].of(ShutdownRequested)]
    assert graces == [2.0, 0.0]


async def test_the_watchdog_is_fed_at_half_its_interval(
        tmp_path: Path, autojump_clock: Any) -> None:
    async with running(tmp_path, watchdog=15.0) as d:
        await trio.sleep(40)
        assert d.notified.count("WATCHDOG=1") == 3  # at 0, 15 and 30 s


@pytest.mark.parametrize(("environ", "interval"), [
    ({"WATCHDOG_USEC": "30000000"}, 15.0),
    ({"WATCHDOG_USEC": "30000000", "WATCHDOG_PID": "1"}, None),  # not ours
    ({"WATCHDOG_USEC": "0"}, None),
    ({}, None),
])
def test_the_watchdog_interval_comes_from_systemd(environ: dict[str, str],
                                                  interval: float | None) -> None:
    assert watchdog_interval(environ) == interval
