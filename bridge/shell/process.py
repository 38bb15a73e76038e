"""The bridge as a process: our stdin/stdout are the client, the configured command the server.

Must not hold protocol logic; it is the one place that rewires the process (fds, logging)
and the one place that picks the real core, the real child and the real notify socket.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable

from bridge.core.config import CoreConfig
from bridge.shell.child import Child, check_command, spawn_process
from bridge.shell.logs import LogSink
from bridge.shell.settings import ShellConfig
from bridge.shell.stdio import take_stdio


def run_stdio(core_config: CoreConfig, shell: ShellConfig) -> int:
    """Run the bridge over this process's stdio; its exit code."""
    check_command(shell.command)
    log = LogSink(shell.log_level, shell.log_format)
    fds = take_stdio()
    # The server starts before the core is even imported: its own start-up (an interpreter,
    # an SDK) then overlaps ours on another core instead of following it (issue 6, startup).
    first = spawn_process(shell.command)
    from bridge.core.bridge import Bridge
    from bridge.shell.notify import sd_notify
    from bridge.shell.runner import serve

    core = Bridge(core_config, secret=secrets.token_bytes(32))
    return serve(core, fds.client_in, fds.client_out, _first_then_new(first, shell.command),
                 timing=shell.timing, log=log, notify=sd_notify, signals=True)


def _first_then_new(first: Child, command: tuple[str, ...]) -> Callable[[], Child]:
    """A Spawn that hands out the already running child once, then starts new ones."""
    pending = [first]

    def spawn() -> Child:
        return pending.pop() if pending else spawn_process(command)

    return spawn
