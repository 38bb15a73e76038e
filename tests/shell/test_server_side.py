"""Where sessions get their server (bridge/shell/session/server_side.py): the front's shared session
and every legacy session open theirs from the one `Servers` the front was given, each with
its own log, and stop it when they end; an endpoint's opener gives an HTTP upstream that
waits for its endpoint only for the shared session (a real refused connection on loopback)."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import structlog
import trio
import trio.testing
from structlog.testing import capture_logs

from bridge.core.events import ChildStarted
from bridge.shell import logs
from bridge.shell.http.address import Address
from bridge.shell.http.front import Front
from bridge.shell.logs import Logger
from bridge.shell.servers.remote.endpoint import Endpoint
from bridge.shell.servers.remote.upstream import HttpUpstream
from bridge.shell.services.listeners import bind_tcp
from bridge.shell.session.driver import Driver
from bridge.shell.session.server_side import Servers
from bridge.shell.session.session import SessionSettings
from bridge.shell.session.sides import OpenServer, ServerSide
from tests.shell import test_http_front as modern
from tests.shell.fakes import WAIT, FakeChild, Spawner
from tests.shell.test_http_front import ScriptedCore
from tests.shell.test_http_legacy import SESSION, LegacyCore, initialized, post, rpc
from tests.shell.test_remote_upstream import Recorder


@dataclass
class Opened:
    shared: bool
    server: ServerSide
    stopped: bool = False


@dataclass
class Recording:
    """`Servers` that open children as the front's own would, and say what they opened:
    for which session (its log line carries the session's fields) and whether it stopped."""

    inner: Servers
    opened: list[Opened] = field(default_factory=list)

    def opener(self, log: Logger, *, reach_first: bool = False) -> OpenServer:
        inner = self.inner.opener(log, reach_first=reach_first)

        def open_server(driver: Driver, nursery: trio.Nursery, feeds: Any) -> ServerSide:
            server = inner(driver, nursery, feeds)
            record = Opened(reach_first, server)
            self.opened.append(record)
            log.info("test.server_opened", shared=reach_first)
            stop = server.stop

            async def stopping() -> None:
                record.stopped = True
                await stop()

            server.stop = stopping  # type: ignore[method-assign]
            return server

        return open_server


class NeverFull:
    congested = False

    async def relieved(self) -> None:
        return


@asynccontextmanager
async def running() -> AsyncIterator[tuple[Front, Recording, list[Any]]]:
    spawner = Spawner(lambda nursery: FakeChild(nursery, serving=True))
    settings = SessionSettings()
    servers = Recording(Servers(settings, spawn=spawner))
    listener = bind_tcp("127.0.0.1", 0)
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(0))
    with capture_logs() as captured, listener:
        front = Front(ScriptedCore(), servers, Address("127.0.0.1", 0, "/mcp"), logs.logger(),
                      settings=settings, make_core=lambda route, legacy: LegacyCore())
        async with trio.open_nursery() as nursery:
            spawner.nursery = nursery
            nursery.start_soon(front.run, listener)
            with trio.fail_after(WAIT):
                await front.listening.wait()
            modern.HOST = f"127.0.0.1:{front.port}"
            yield front, servers, captured
            front.stop()
            nursery.cancel_scope.cancel()


async def test_the_shared_session_and_each_legacy_session_open_their_own_server_side(
        autojump_clock: Any) -> None:
    async with running() as (front, servers, captured):
        assert [o.shared for o in servers.opened] == [True]  # the shared session's, at once
        client = modern.Client(await trio.open_tcp_stream("127.0.0.1", front.port))
        first = await initialized(client)
        second = await initialized(client)
        assert [o.shared for o in servers.opened] == [True, False, False]
        opened = [(e.get("session"), e["shared"]) for e in captured
                  if e["event"] == "test.server_opened"]
        assert opened == [(None, True), (1, False), (2, False)]
        await client.send("DELETE", headers={SESSION: first})
        assert (await client.whole()).status == 204
        with trio.fail_after(WAIT):
            while not servers.opened[1].stopped:
                await trio.sleep(0.01)
        assert not servers.opened[2].stopped and not servers.opened[0].stopped
        assert (await post(client, rpc(1, "tools/list"), second)).status == 200
        front.stop()
        with trio.fail_after(WAIT):
            while not all(o.stopped for o in servers.opened):
                await trio.sleep(0.01)


async def test_remote_opens_an_upstream_that_waits_for_its_server_only_when_shared() -> None:
    # Nothing listens on the port: a legacy session's upstream starts at once (its client is
    # told per request); the shared session's waits, saying so once.
    side = Servers(SessionSettings(), where=Endpoint(f"http://127.0.0.1:{closed_port()}/mcp"))
    own, shared = Recorder(), Recorder()
    with capture_logs() as captured:
        async with trio.open_nursery() as nursery:
            servers = [side.opener(logs.logger())(own, nursery, NeverFull()),  # type: ignore[arg-type]
                       side.opener(logs.logger(), reach_first=True)(  # type: ignore[arg-type]
                           shared, nursery, NeverFull())]
            assert all(isinstance(server, HttpUpstream) for server in servers)
            for server in servers:
                server.serve()
            with trio.fail_after(WAIT):
                while not any(e["event"] == "upstream.unreachable" for e in captured):
                    await trio.sleep(0.01)
            await trio.sleep(0.5)
            for server in servers:
                server.kill_all()
            nursery.cancel_scope.cancel()
    assert [type(e) for e in own.events] == [ChildStarted]
    assert shared.events == []
    assert [e["event"] for e in captured].count("upstream.unreachable") == 1


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then closed)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port
