"""One server process: start it in its own process group, signal the group, stop it for good.

Must not read or write the child's pipes (bridge/shell/pumps.py does) nor decide when to stop.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Sequence
from typing import Protocol

from bridge.errors import ServerUnavailable


class Child(Protocol):
    """What the supervisor needs of a server process; tests substitute an in-memory one."""

    @property
    def pid(self) -> int: ...
    @property
    def stdin(self) -> int:
        """Our end of the child's stdin pipe (the supervisor owns and closes it)."""
    @property
    def stdout(self) -> int:
        """Our end of the child's stdout pipe (the supervisor owns and closes it)."""
    def poll(self) -> int | None: ...
    def wait(self, timeout: float | None = None) -> int | None:
        """The exit code, or None if the child still runs after `timeout` seconds."""
    def signal_group(self, sig: signal.Signals) -> None: ...
    def group_alive(self) -> bool: ...


class ProcessChild:
    """A real process, leader of its own process group (its pgid is its pid)."""

    def __init__(self, process: subprocess.Popen[bytes], stdin: int, stdout: int) -> None:
        self._process = process
        self._stdin = stdin
        self._stdout = stdout

    @property
    def pid(self) -> int:
        return self._process.pid

    @property
    def stdin(self) -> int:
        return self._stdin

    @property
    def stdout(self) -> int:
        return self._stdout

    def poll(self) -> int | None:
        return self._process.poll()

    def wait(self, timeout: float | None = None) -> int | None:
        try:
            return self._process.wait(timeout)
        except subprocess.TimeoutExpired:
            return None

    def signal_group(self, sig: signal.Signals) -> None:
        # The whole group, so helpers the server started go too; gone already is fine.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self._process.pid, sig)

    def group_alive(self) -> bool:
        try:
            os.killpg(self._process.pid, 0)
        except (ProcessLookupError, PermissionError):
            return False
        return True


def check_command(argv: Sequence[str]) -> str:
    """The executable `argv[0]` resolves to; ServerUnavailable (exit 69) if there is none."""
    if not argv:
        raise ServerUnavailable("no server command given")
    path = shutil.which(argv[0])
    if path is None:
        what = "not executable" if os.path.exists(argv[0]) else "not found"
        raise ServerUnavailable(f"server command {what}: {argv[0]}")
    return path


def child_environment() -> dict[str, str]:
    # The service manager's notify socket is ours: a server that found it would be taken
    # for the service (Type=notify), or confuse systemd with its own READY=1.
    env = dict(os.environ)
    env.pop("NOTIFY_SOCKET", None)
    return env


def spawn_process(argv: Sequence[str]) -> ProcessChild:
    """Start the server: pipes on stdin/stdout, our stderr, a new session (its own group).

    The pipes are made here, not by Popen, so their parent ends are plain fds that nothing
    else closes behind the supervisor's back.
    """
    stdin_r, stdin_w = os.pipe()
    stdout_r, stdout_w = os.pipe()
    try:
        process = subprocess.Popen(list(argv), stdin=stdin_r, stdout=stdout_w, stderr=None,
                                   start_new_session=True, env=child_environment())
    except OSError as exc:
        for fd in (stdin_w, stdout_r):
            os.close(fd)
        reason = exc.strerror or type(exc).__name__
        raise ServerUnavailable(f"cannot start server command {argv[0]}: {reason}") from None
    finally:
        os.close(stdin_r)
        os.close(stdout_w)
    return ProcessChild(process, stdin_w, stdout_r)


# While the group outlives its leader (helpers the server left behind), look this often.
GROUP_POLL = 0.05


def reap_group(child: Child, timeout: float) -> None:
    """After the leader exited: SIGTERM what is left of its group, then SIGKILL it."""
    if not child.group_alive():
        return
    child.signal_group(signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while child.group_alive() and time.monotonic() < deadline:
        time.sleep(GROUP_POLL)
    child.signal_group(signal.SIGKILL)


def kill_now(child: Child) -> None:
    """SIGKILL the group and reap the leader."""
    if child.poll() is None:
        child.signal_group(signal.SIGKILL)
        child.wait()
    child.signal_group(signal.SIGKILL)
