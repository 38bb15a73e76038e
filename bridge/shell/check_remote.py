"""A Streamable HTTP server as `mcp-rosetta check` talks to it (`--url`): through the bridge's
own upstream (servers/remote/upstream.py), so what check meets is what the bridge will.

Must not decide what to ask or what an answer means (check.py does): it hands the upstream the
lines check writes and takes the lines it feeds back as a process's stdout is taken. A sign-in
is never started here (no browser opens): check uses the tokens `auth login` stored.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import orjson
import trio

from bridge.core.events import ChildExited, Event, Side
from bridge.shell.check_wire import Asker, ServerGone
from bridge.shell.servers.remote.auth import provider_for
from bridge.shell.servers.remote.endpoint import Endpoint
from bridge.shell.servers.remote.upstream import HttpUpstream
from bridge.shell.settings import Timing

if TYPE_CHECKING:
    from bridge.shell.fdio.lines import Line


class Silent:
    """The upstream's logger: check reports what it found, it does not log."""

    def bind(self, **_: Any) -> Silent:
        return self

    def __getattr__(self, _: str) -> Any:
        return lambda *args, **kwargs: None


class RemoteWire(Asker):
    """One session with the endpoint; to the upstream, the driver it feeds."""

    kind = "a Streamable HTTP MCP endpoint"

    def __init__(self, endpoint: Endpoint, nursery: trio.Nursery, max_message_bytes: int) -> None:
        super().__init__()
        log = Silent()
        self._upstream = HttpUpstream(endpoint, self, nursery, log, limit=max_message_bytes,
                                      auth=provider_for(endpoint, log))
        self._upstream.serve()

    # What the upstream feeds, as it feeds the driver ----------------------------------------

    def lines(self, side: Side, lines: list[Line], source: object = None) -> None:
        for line in lines:
            if self.first_byte is None:
                self.first_byte = trio.current_time()
            reply = self._take(line)
            if reply is not None:
                self._upstream.write(orjson.dumps(reply) + b"\n")

    def post(self, event: Event) -> None:
        if isinstance(event, ChildExited):  # the endpoint went after it had answered
            self._closed()

    # What check calls ------------------------------------------------------------------------

    async def run(self) -> None:
        """Nothing to read: the upstream feeds this wire its lines (`lines`)."""

    async def send(self, message: dict[str, Any]) -> None:
        if not self._upstream.write(orjson.dumps(message) + b"\n"):
            raise ServerGone

    async def stop(self, timing: Timing) -> int:
        """End the session (a legacy one's DELETE), close the connections."""
        with trio.move_on_after(timing.shutdown_grace):
            await self._upstream.stop()
        return 0
