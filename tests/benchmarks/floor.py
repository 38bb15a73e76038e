"""The shell's floor: `python floor.py -- CMD...` runs bridge.shell with a core that only relays.

Must not translate or track anything: its core decodes each line and sends it to the other
side, so the benchmark can tell what the shell costs (trio, the readers, the outlets) apart
from what any mode's protocol work costs.
"""

from __future__ import annotations

import sys
from functools import partial

from bridge.core.codec import decode
from bridge.core.events import (
    CLIENT,
    SERVER,
    Action,
    ChildExited,
    Event,
    MessageReceived,
    PeerClosed,
    Send,
    Stop,
)
from bridge.shell.fdio.stdio import take_stdio
from bridge.shell.servers.child import spawn_process


class RelayCore:
    """A Core (shell/session/driver.py) with no protocol: lines cross, either EOF stops it."""

    def handle(self, event: Event, now: float) -> list[Action]:
        if type(event) is MessageReceived:
            return [Send(SERVER if event.side == CLIENT else CLIENT, decode(event.message))]
        if type(event) is PeerClosed or type(event) is ChildExited:
            return [Stop(0)]
        return []

    def next_deadline(self) -> float | None:
        return None


def main(argv: list[str]) -> int:
    if len(argv) < 2 or argv[0] != "--":
        sys.stderr.write("usage: floor.py -- COMMAND [ARGS...]\n")
        return 64
    fds = take_stdio()
    first = spawn_process(argv[1:])
    import trio

    from bridge.shell import logs
    from bridge.shell.clients.fd_client import FdClient
    from bridge.shell.session.server_side import Servers
    from bridge.shell.session.session import Session, SessionSettings

    log = logs.configure("warning")
    session = Session(RelayCore(), log)
    servers = Servers(SessionSettings(), spawn=partial(spawn_process, argv[1:]))
    return trio.run(session.run, FdClient(fds.client_in, fds.client_out, log),
                    servers.opener(log), first)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
