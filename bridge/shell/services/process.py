"""The bridge as a process: our stdin/stdout are the client, the configured command the server.

Must not hold protocol logic; it is the one place that rewires the process (fds 0 and 1,
signals, the subreaper) and that picks the real core, the real child and the real systemd.
The server is started before anything heavy is imported: its own start-up (an interpreter,
an SDK) then overlaps ours (trio, the core) on the other CPU instead of following it.
"""

from __future__ import annotations

from bridge.core.config import CoreConfig
from bridge.core.record import replaced
from bridge.errors import ServerUnavailable
from bridge.shell.fdio.stdio import take_stdio
from bridge.shell.servers.child import ProcessChild, check_command, spawner
from bridge.shell.session.transcript import check_transcript
from bridge.shell.settings import ShellConfig


def run_stdio(core_config: CoreConfig, shell: ShellConfig) -> int:
    """Run the bridge over this process's stdio; its exit code."""
    if shell.url is not None:
        return _run_remote(core_config, shell)
    check_command(shell.command)
    check_transcript(shell.transcript)
    fds = take_stdio()
    spawn = spawner(shell)
    first: ProcessChild | ServerUnavailable
    try:
        first = spawn()
    except ServerUnavailable as exc:  # the session tells the client why, and the log
        first = exc
    # What is remembered of it is read while it starts: the core needs it only then.
    from bridge.shell.servers.era_memory import remembering

    memory = remembering(shell, core_config)
    if memory is not None:
        core_config = replaced(core_config, remembered=memory.load())
    from bridge.shell.services.stdio_main import serve_stdio

    return serve_stdio(core_config, shell, fds, first, spawn, memory)


def _run_remote(core_config: CoreConfig, shell: ShellConfig) -> int:
    """The same bridge, its server a Streamable HTTP endpoint (nothing to start early)."""
    import os

    from bridge.shell.servers.remote.endpoint import resolve
    from bridge.shell.servers.remote.token_store import run_by_a_user

    # Before fds 0 and 1 are taken: an unset ${VAR} is a config error on stderr, as a bad
    # flag is. A user runs this bridge: a sign-in may open their browser.
    where, core_config = run_by_a_user(resolve(shell, os.environ), core_config, os.environ)
    check_transcript(shell.transcript)  # a config error on stderr, as a bad flag is
    fds = take_stdio()
    from bridge.shell.services.stdio_main import serve_remote

    return serve_remote(core_config, shell, fds, where)
