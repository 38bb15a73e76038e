"""The server process's life, as one session sees it: started, probed, serving, down; what its
servers have shown; the restart budget; and its own deadlines (the back-off, the wait for an
exit status).

Must not touch the client's side: the lifecycle (bridge.py) moves this machine on the shell's
events and does the rest itself (the probe, the mode handler and what it owes the client).
This moves the state, schedules and cancels its deadlines in the lifecycle's timers, and says
what happens to the server: the logs, statuses and `RestartChild` of a start, a restart or a
give-up. Rules: stdio.mdx §Backward Compatibility (a legacy server that exits on the probe).
"""

from __future__ import annotations

from enum import Enum
from typing import Final

from bridge.core.codec import Message
from bridge.core.context import Context
from bridge.core.events import NotifyReady, RestartChild, Status
from bridge.core.restarts import Outage, Restarts
from bridge.core.states import IllegalMove
from bridge.core.timers import Deadline, Timers

# Seconds to wait, once the server's output closed, for its exit status: the shell posts the
# exit after the end of its output, and an error that names the status helps the user most.
EXIT_WAIT_S = 1.0


class ServerState(Enum):
    """The server process, as the lifecycle sees it."""

    STARTING = "waiting for ChildStarted"
    PROBING = "waiting for the probe's answer"
    SERVING = "its era known"
    DOWN = "gone: waiting out the back-off, or for good"


_SERVER_MOVES: dict[ServerState, frozenset[ServerState]] = {
    # A start that fails (exec) is reported as an exit without ChildStarted.
    ServerState.STARTING: frozenset({ServerState.PROBING, ServerState.DOWN}),
    # Back to STARTING: started once more unprobed, after a clean exit on the probe.
    ServerState.PROBING: frozenset({ServerState.SERVING, ServerState.STARTING, ServerState.DOWN}),
    # Back to PROBING: a late -32022 overturned the legacy verdict; server/discover again.
    ServerState.SERVING: frozenset({ServerState.PROBING, ServerState.DOWN}),
    # Straight to PROBING: a server came up before the back-off asked for it.
    ServerState.DOWN: frozenset({ServerState.STARTING, ServerState.PROBING}),
}


class ServerRecord(Enum):
    """What this session's servers have shown; it only moves down the list."""

    NEVER_SERVED = "no server of this session has sent a well-formed message"
    RETRIED_UNPROBED = ("never served, and the one start without a probe (after a clean exit "
                        "on it) is used")
    SERVED = "a server of this session has sent a well-formed message"


# Set on every server message.
RECORD_SERVED: Final = ServerRecord.SERVED


class NextStart(Enum):
    """How the next server process is started (stdio.mdx §Backward Compatibility)."""

    PROBED = "probed"
    UNPROBED = "taken as legacy without a probe: the last one exited or closed on it"


class ServerDue(Enum):
    """The server's own deadlines (owner None: each exists once)."""

    RESTART = "the restart's back-off"
    EXIT_WAIT = "the exit status after a closed output"


_RESTART: Final = Deadline(None, ServerDue.RESTART)
_EXIT_WAIT: Final = Deadline(None, ServerDue.EXIT_WAIT)


class ServerLife:
    """One session's server processes, one after another."""

    __slots__ = ("_attempt", "_delay", "_ready_told", "_restarts", "ctx", "next_start",
                 "outage", "record", "state", "timers")

    def __init__(self, ctx: Context, timers: Timers) -> None:
        self.ctx = ctx
        self.timers = timers  # the lifecycle's: they outlive every mode handler
        self.state = ServerState.STARTING
        self.record = ServerRecord.NEVER_SERVED
        self.next_start = NextStart.PROBED
        self.outage: Outage | None = None  # why the server is down, until it is started again
        self._restarts = Restarts(ctx.config)
        self._attempt = 0  # the pending restart's number within the window, and its delay
        self._delay = 0.0
        self._ready_told = False

    def _move(self, to: ServerState) -> None:
        if to not in _SERVER_MOVES[self.state]:
            raise IllegalMove("server", self.state, to)
        self.state = to

    @property
    def served(self) -> bool:
        """Whether a server of this session has spoken: a start after it is a restart."""
        return self.record is ServerRecord.SERVED

    # Up -----------------------------------------------------------------------------------

    def started(self) -> bool:
        """A server process is up: whether it is to go unprobed (taken as legacy)."""
        self._move(ServerState.PROBING)
        unprobed = self.next_start is NextStart.UNPROBED
        self.next_start = NextStart.PROBED
        return unprobed

    def reprobed(self) -> None:
        """A late -32022 overturned the legacy verdict: the server is probed again."""
        self._move(ServerState.PROBING)

    def serving(self) -> None:
        """Its era is known: the bridge is ready to serve (systemd READY=1, once)."""
        self._move(ServerState.SERVING)
        if not self._ready_told:
            self._ready_told = True
            self.ctx.actions.append(NotifyReady())
        count = self._restarts.total
        if count:
            self.ctx.actions.append(Status(
                f"serving; the server restarted {count} time{'s' if count > 1 else ''}"))

    # Going --------------------------------------------------------------------------------

    def output_closed(self) -> bool:
        """The server closed its output: whether that is news (not after it went, nor twice).
        Its exit status is then waited for, at most EXIT_WAIT_S."""
        if self.state is ServerState.DOWN or _EXIT_WAIT in self.timers:
            return False
        self.ctx.log("warning", "server.closed")
        self.timers.schedule(_EXIT_WAIT, self.ctx.now + EXIT_WAIT_S)
        return True

    def exit_known(self) -> None:
        """Its exit status came: the wait for it after a closed output is over."""
        self.timers.cancel(_EXIT_WAIT)

    def echoed(self, outage: Outage) -> bool:
        """Whether `outage` is the second word of the same crash (ChildExited and PeerClosed
        each say it, in either order): what it adds is learnt, and it is not counted."""
        if self.state is not ServerState.DOWN:
            return False
        assert self.outage is not None
        self.outage.learn(outage)
        return True

    def may_retry_unprobed(self, outage: Outage) -> bool:
        """A server that exited cleanly on the probe and never served may be a legacy one
        that takes no unexpected first message: it is started once more without a probe."""
        return (self.state is ServerState.PROBING and outage.code == 0
                and self.record is ServerRecord.NEVER_SERVED)

    def retry_unprobed(self, outage: Outage) -> None:
        """Start it again at once, as legacy and without a probe. Not a restart: it never
        served."""
        self.record, self.next_start = ServerRecord.RETRIED_UNPROBED, NextStart.UNPROBED
        self.ctx.log("warning", "child.restarted", code=outage.code, reason=outage.what,
                     attempt=0, max_restarts=self.ctx.config.max_restarts, backoff_s=0.0,
                     mode=None, probe=False)
        self.ctx.actions.append(Status("starting the server again without the probe it "
                                       "exited on, as a legacy server"))
        self.ctx.actions.append(RestartChild())
        self._move(ServerState.STARTING)

    def failed(self, outage: Outage) -> tuple[str, Message]:
        """The server ended before it ever answered: starting it again would only fail
        again. It stays down; the reason and data every request waiting is answered with."""
        reason, data = outage.never_served(), outage.data()
        self.ctx.log("error", "child.failed", code=outage.code, reason=reason,
                     stderr_tail=list(outage.stderr_tail))
        self.ctx.actions.append(Status(f"stopped: {reason}"))
        self._move(ServerState.DOWN)
        self.outage = outage
        return reason, data

    def take_restart(self, outage: Outage) -> int | None:
        """A server that served went: the restart's number within the window, or None once
        the budget is used up (said in the log and the status). One that went on the probe
        is started next without one (stdio.mdx §Backward Compatibility: some legacy servers
        exit on an unexpected first message, or close their output)."""
        if self.state is ServerState.PROBING:
            self.next_start = NextStart.UNPROBED
        attempt = self._restarts.take(self.ctx.now)
        if attempt is None:
            config = self.ctx.config
            self.ctx.log("error", "child.gave_up", code=outage.code, reason=outage.what,
                         max_restarts=config.max_restarts, window_s=config.restart_window)
            self.ctx.actions.append(Status(f"stopped: the server {outage.what} and has used "
                                           f"up its {config.max_restarts} restarts"))
        return attempt

    def gave_up(self, outage: Outage) -> str:
        """Why the session ends once the budget is used up."""
        return self._restarts.gave_up(outage)

    def down(self, outage: Outage, attempt: int) -> bool:
        """The server is down until restart `attempt`: whether it is to be restarted at once
        (it went on the probe), else after the back-off (scheduled)."""
        at_once = self.state is ServerState.PROBING
        self._move(ServerState.DOWN)
        self.outage, self._attempt = outage, attempt
        self._delay = 0.0 if at_once else self._restarts.backoff(attempt)
        if self._delay > 0:
            self.timers.schedule(_RESTART, self.ctx.now + self._delay)
            return False
        return True

    def restart(self, mode: str | None) -> None:
        """Start the server again (`mode`: the one the lost server served, for the log)."""
        outage = self.outage
        assert outage is not None
        self.timers.cancel(_RESTART)
        config = self.ctx.config
        self.ctx.log("warning", "child.restarted", code=outage.code, reason=outage.what,
                     attempt=self._attempt, max_restarts=config.max_restarts,
                     backoff_s=self._delay, mode=mode)
        self.ctx.actions.append(Status(
            f"restarting the server: it {outage.what} (restart {self._attempt} of at most "
            f"{config.max_restarts} within {config.restart_window:g} s)"))
        self.ctx.actions.append(RestartChild())
        self._move(ServerState.STARTING)
        self.outage = None
