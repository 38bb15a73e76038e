"""One server process: start it in its own process group, wait for it, signal the group.

Must not read or write the child's pipes (the supervisor's outlet and reader do) nor decide
when to stop it. Linux-only safety nets (the parent-death signal, a pidfd to wait on) are used
when present and skipped cleanly elsewhere.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import Protocol

from bridge.errors import ServerUnavailable
from bridge.shell.servers.environment import server_environment, without_ours
from bridge.shell.servers.start_failure import not_started
from bridge.shell.settings import ShellConfig


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
    @property
    def stderr(self) -> int | None:
        """Our end of the child's stderr pipe (the supervisor owns and closes it), if any."""
    def poll(self) -> int | None:
        """The exit code once the process ended (negative: killed by that signal), else None."""
    async def wait(self) -> int:
        """Until the process ends; its exit code."""
    def signal_group(self, sig: signal.Signals) -> None: ...
    def group_alive(self) -> bool: ...
    def kill(self) -> None:
        """SIGKILL the group and reap the leader, waiting for nothing else (last resort)."""


# The servers this process started and has not reaped yet (not adopted orphans: orphans.py).
_STARTED: set[int] = set()


def started_here() -> frozenset[int]:
    """The pids of the servers this process started that are not reaped yet."""
    return frozenset(_STARTED)


class ProcessChild:
    """A real process, leader of its own process group (its pgid is its pid)."""

    def __init__(self, process: subprocess.Popen[bytes], stdin: int, stdout: int,
                 stderr: int | None = None) -> None:
        self._process = process
        self._stdin = stdin
        self._stdout = stdout
        self._stderr = stderr
        _STARTED.add(process.pid)

    @property
    def pid(self) -> int:
        return self._process.pid

    @property
    def stdin(self) -> int:
        return self._stdin

    @property
    def stdout(self) -> int:
        return self._stdout

    @property
    def stderr(self) -> int | None:
        return self._stderr

    def poll(self) -> int | None:
        return self._reaped(self._process.poll())

    async def wait(self) -> int:
        import trio

        code = self.poll()
        if code is not None:
            return code
        pidfd = _pidfd(self._process.pid)
        if pidfd is None:  # no pidfd (macOS, old kernels): a worker thread waits instead
            code = await trio.to_thread.run_sync(self._process.wait, abandon_on_cancel=True)
            return self._forget(code)
        try:
            await trio.lowlevel.wait_readable(pidfd)  # readable once the process has ended
        finally:
            trio.lowlevel.notify_closing(pidfd)
            os.close(pidfd)
        return self._forget(self._process.wait())

    def _reaped(self, code: int | None) -> int | None:
        return code if code is None else self._forget(code)

    def _forget(self, code: int) -> int:
        _STARTED.discard(self._process.pid)
        return code

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

    def kill(self) -> None:
        self.signal_group(signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):
            self._forget(self._process.wait())  # prompt: SIGKILL cannot be caught


def _pidfd(pid: int) -> int | None:
    opener = getattr(os, "pidfd_open", None)
    if opener is None:
        return None
    try:
        return int(opener(pid))
    except OSError:
        return None


def check_command(argv: Sequence[str]) -> None:
    """ServerUnavailable (exit 69) if there is no command at all: then there is nothing to
    start, and the client is not asked to wait for a cause (a missing or unusable program is
    found when it is started, and reaches the client as ChildExited: see spawn_process)."""
    if not argv:
        raise ServerUnavailable("no server command given")


def child_environment() -> dict[str, str]:
    """The bridge's own environment minus what belongs to the bridge alone."""
    return without_ours(os.environ)


def spawner(shell: ShellConfig) -> Callable[[], ProcessChild]:
    """How to start `shell`'s server, its environment worked out once for all its starts."""
    env = server_environment(os.environ, shell.env, shell.pass_env)
    return partial(spawn_process, shell.command, env, shell.cwd)


def spawn_process(argv: Sequence[str], env: Mapping[str, str] | None = None,
                  cwd: str | None = None) -> ProcessChild:
    """Start the server: pipes on stdin/stdout/stderr, a new session (its own group).

    `env` is its whole environment (None: ours, less the service manager's sockets), `cwd`
    its working directory (None: ours). NotStarted (126 or 127, with the cause and its fix)
    if it cannot be started. The pipes are made here, not by Popen, so their parent ends are
    plain fds that nothing else closes behind the supervisor's back. On Linux the child gets
    the parent-death signal: if the bridge dies, even by SIGKILL, the server goes with it.
    """
    environment = dict(env) if env is not None else child_environment()
    stdin_r, stdin_w = os.pipe()
    stdout_r, stdout_w = os.pipe()
    stderr_r, stderr_w = os.pipe()
    try:
        process = subprocess.Popen(list(argv), stdin=stdin_r, stdout=stdout_w, stderr=stderr_w,
                                   start_new_session=True, env=environment, cwd=cwd,
                                   preexec_fn=_die_with_parent())
    except (OSError, ValueError, subprocess.SubprocessError) as exc:  # ValueError: a NUL
        for fd in (stdin_w, stdout_r, stderr_r):
            os.close(fd)
        raise not_started(argv, environment, cwd, exc) from None
    finally:
        for fd in (stdin_r, stdout_w, stderr_w):
            os.close(fd)
    return ProcessChild(process, stdin_w, stdout_r, stderr_r)


_PR_SET_PDEATHSIG = 1
_PR_SET_CHILD_SUBREAPER = 36


def _libc_prctl() -> Callable[..., int] | None:
    if not sys.platform.startswith("linux"):
        return None
    import ctypes

    try:
        prctl: Callable[..., int] = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    return prctl


def _die_with_parent() -> Callable[[], None] | None:
    """A preexec_fn giving the child SIGKILL when the bridge's spawning thread ends (Linux).

    The bridge spawns from its main thread only, so that is when the bridge ends. If the
    bridge died between fork and the prctl, the signal would never come: the child checks
    its parent is still the bridge, and exits if not.
    """
    prctl = _libc_prctl()
    if prctl is None:
        return None
    parent = os.getpid()

    def preexec() -> None:
        prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != parent:
            os._exit(1)

    return preexec


def become_subreaper() -> bool:
    """Adopt our orphaned descendants (Linux): a server's helper that daemonizes or calls
    setsid() is then still ours to reap and to kill at shutdown. Whether it took effect."""
    prctl = _libc_prctl()
    return prctl is not None and prctl(_PR_SET_CHILD_SUBREAPER, 1) == 0

