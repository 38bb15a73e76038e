"""Descendants the bridge adopted as a child subreaper: reap them, and end them at shutdown.

Must not touch the servers the bridge started itself (their supervisors reap them): only
processes that became the bridge's children because their own parent died (a helper that
daemonized, or called setsid() to leave the server's process group). Linux only; elsewhere
there is nobody to adopt and every call does nothing.
"""

from __future__ import annotations

import contextlib
import os
import signal
from pathlib import Path

import trio

from bridge.shell.servers.child import become_subreaper, started_here

# Killing an adopted process hands its own children to us in turn: go this many levels deep.
MAX_ROUNDS = 8
POLL = 0.05


class Orphans:
    """The process's adopted descendants. Only one may exist per process."""

    def __init__(self) -> None:
        self.enabled = become_subreaper()

    def adopted(self) -> list[int]:
        """Our children that we did not start (exited ones included, until reaped)."""
        if not self.enabled:
            return []
        own = started_here()
        pids: set[int] = set()
        with contextlib.suppress(OSError):
            for task in Path("/proc/self/task").iterdir():
                with contextlib.suppress(OSError):
                    pids.update(int(p) for p in (task / "children").read_text().split())
        return sorted(pids - own)

    def reap(self) -> None:
        """Collect adopted processes that have exited (they would stay zombies otherwise)."""
        for pid in self.adopted():
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, os.WNOHANG)

    async def end_all(self, grace: float) -> int:
        """SIGTERM every adopted process, SIGKILL what is left after `grace`, reap them all;
        then the same for what their deaths handed to us. How many were ended."""
        ended = 0
        for _ in range(MAX_ROUNDS):
            self.reap()
            alive = self.adopted()
            if not alive:
                break
            ended += len(alive)
            _signal_all(alive, signal.SIGTERM)
            with trio.move_on_after(grace):
                while self._any_alive(alive):
                    await trio.sleep(POLL)
            _signal_all(alive, signal.SIGKILL)
            for pid in alive:
                with contextlib.suppress(ChildProcessError):
                    os.waitpid(pid, 0)
        return ended

    def _any_alive(self, pids: list[int]) -> bool:
        self.reap()
        return bool(set(pids) & set(self.adopted()))


def _signal_all(pids: list[int], sig: signal.Signals) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)
