"""The driver: the only caller of the core, and the one place its actions are carried out.

Must not wait: it runs inside whichever task has an event (trio is one thread, so no lock),
hands what the core sends the client to the session's client side and the server's lines to
its server side, neither of which blocks, and returns. Must not interpret messages: the core
decides everything. The server's lines of one batch (one read of a peer) go out in one write,
and so do the client's when its side is written bytes (`fd_client.py`); a client side that
routes messages (the HTTP front's) takes each as the core made it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

import trio

from bridge.core.codec import Message, encode
from bridge.core.events import (
    CLIENT,
    Action,
    Answered,
    Event,
    Log,
    MessageDecoded,
    MessageReceived,
    MessageTooLarge,
    NotifyReady,
    PeerClosed,
    Remember,
    RestartChild,
    Send,
    ShareChange,
    Side,
    Spliced,
    Status,
    Stop,
)
from bridge.shell.fdio.lines import Line
from bridge.shell.logs import Logger, emit
from bridge.shell.session.batch import Batch, Peer
from bridge.shell.session.clock import Clock
from bridge.shell.session.transcript import CLIENT_IN, SERVER_IN, Transcript

if TYPE_CHECKING:  # metrics are loaded only when kept
    from bridge.shell.metrics.series import Series


class Core(Protocol):
    """What the driver needs of bridge.core.bridge.Bridge (tests substitute fakes)."""

    def handle(self, event: Event, now: float) -> list[Action]: ...
    def next_deadline(self) -> float | None: ...


class Outbox(Protocol):
    """Where the driver hands what the core sends the client (the session's client side)."""

    @property
    def batch(self) -> Batch | None:
        """A side written bytes: the batch the driver puts the client's lines in itself (no
        call per message), written once per read as the server's are. None: `send`."""

    def send(self, send: Send) -> None:
        """One message, as the core made it (must not wait)."""


class Server(Peer, Protocol):
    def restart(self) -> None:
        """Replace the server process; ChildStarted follows once the new one runs."""


class Source(Protocol):
    """Where lines come from, when that can end before the peer does (a replaced child)."""

    @property
    def retired(self) -> bool: ...


class Driver:
    """Feeds the core events and carries out its actions, then returns."""

    def __init__(self, core: Core, log: Logger, *, limit: int, notify: Callable[[str], None],
                 debug: bool = False, transcript: Transcript | None = None,
                 series: Series | None = None) -> None:
        self._core = core
        self._log = log
        self.limit = limit
        """The longest line taken whole (bytes); a longer one reaches the core cut short."""
        self._notify = notify
        self._debug = debug
        self.remember: Callable[[Remember], None] = _remember_nothing
        """Where the server command's era is stored (the stdio bridge's era memory)."""
        self.client: Outbox | None = None
        self.server: Server | None = None
        self.clock: Clock | None = None
        self._send_client: Callable[[Send], None] = _unattached
        self._client_batch: Batch | None = None
        self._server_batch: Batch | None = None
        # This batch's lines for each peer written bytes, each written at once: encoded, or
        # spliced (big). None for a client side that takes messages.
        self._to_client: list[bytes | Spliced] | None = None
        self._to_server: list[bytes | Spliced] = []
        self._client_closed: PeerClosed | None = None
        self.stop_code: int | None = None
        self.stopped = trio.Event()
        self.transcript = transcript
        self.last_lines = 0.0
        """When a peer's lines last came in (trio's clock): how long the session has been idle."""
        self.settled: Callable[[], None] | None = None
        """Told after each event the core handled (a pool places waiting calls on it)."""
        self.share: Callable[[Message], None] | None = None
        """Where a change the server raised goes beyond this core (`ShareChange`): the pool
        that holds the client's other cores; None: nowhere."""
        if transcript is not None:  # bound once: without a transcript, no cost per message
            self.lines = self._recorded_lines  # type: ignore[method-assign]
            self._flush = self._recorded_flush  # type: ignore[method-assign]
        self.series = series
        """Where the session's facts go (metrics); None: nowhere, for one test per read."""

    def attach(self, client: Outbox, server: Server, clock: Clock | None = None) -> None:
        """The session's two sides (and its clock), before the first event."""
        self.client, self.server, self.clock = client, server, clock
        self._send_client = client.send
        self._client_batch = batch = client.batch
        self._to_client = batch.parts if batch is not None else None
        self._server_batch = self.batch(server, "server")
        self._to_server = self._server_batch.parts

    def batch(self, peer: Peer, side: Side) -> Batch:
        """A batch of `peer`'s writes, logged and recorded as this session's are."""
        return Batch(peer, side, self._log, debug=self._debug, transcript=self.transcript)

    def lines(self, side: Side, lines: list[Line], source: Source | None = None) -> None:
        """The lines one read of `side` brought, in order; their writes go out once per peer.

        Lines of a `source` retired meanwhile (the core restarted the child) are dropped. The
        list is emptied as it goes, so a line the core has decoded is no longer held while its
        translation is encoded (for a huge result, a third less memory at the peak).
        """
        handle = self._core.handle
        now = self.last_lines = trio.current_time()
        if self.series is not None:
            self.series.messages[side] += len(lines)
        lines.reverse()
        pop = lines.pop
        while lines:
            if self.stop_code is not None or (source is not None and source.retired):
                break
            line = pop()
            event = MessageReceived(side, line) if type(line) is bytes \
                else MessageTooLarge(side, line.head, self.limit, line.tail)  # type: ignore[union-attr]
            if self._debug:
                self._log.debug("message.received", side=side, bytes=_size(line))
            del line
            actions = handle(event, now)
            del event
            self._run(actions)
        self._flush()

    def decoded(self, event: MessageDecoded) -> None:
        """One message its side's shell decoded itself (an HTTP POST's body, read to check its
        headers): taken as `lines` takes a line, with no second parse."""
        if self.stop_code is not None:
            return
        if self.series is not None:
            self.series.messages[event.side] += 1
        now = self.last_lines = trio.current_time()
        if self._debug:
            self._log.debug("message.received", side=event.side,
                            bytes=None if event.line is None else len(event.line))
        self._run(self._core.handle(event, now))
        self._flush()

    def post(self, event: Event) -> None:
        """One event that is not a line (a timer, a child's start or exit, a peer's EOF)."""
        if self.stop_code is not None:
            return
        if type(event) is PeerClosed and event.side == CLIENT:
            # The client's stdin EOF and a broken stdout both say "the client closed": once,
            # unless the second adds that it cannot read any more (its end is gone).
            told = self._client_closed
            if told is not None and (told.gone or not event.gone):
                return
            self._client_closed = event
        self._run(self._core.handle(event, trio.current_time()))
        self._flush()

    def _run(self, actions: list[Action]) -> None:
        to_client, to_server = self._to_client, self._to_server
        for action in actions:
            if type(action) is Send:  # nearly every action: one type check, no match
                if action.side != CLIENT:
                    line = action.line  # a peer's line with its id spliced: written as it is
                    to_server.append(encode(action.message) if line is None else line)
                elif to_client is not None:
                    line = action.line
                    to_client.append(encode(action.message) if line is None else line)
                else:
                    self._send_client(action)
            else:
                self._execute(action)

    def _execute(self, action: Action) -> None:
        match action:
            case Answered():  # with metrics kept, one for every request answered
                if self.series is not None:
                    self.series.answered(action)
            case Log():
                emit(self._log, action)
            case RestartChild():
                assert self.server is not None
                self._flush()  # what was meant for the old child goes to the old child
                self.server.restart()
                if self.series is not None:
                    self.series.restarted()
            case NotifyReady():
                self._notify("READY=1")
            case Status(text=text):
                self._notify(f"STATUS={text}")
            case Remember():
                self.remember(action)
            case ShareChange():
                if self.share is not None:
                    self.share(action.message)
            case Stop(code=code):
                if self.stop_code is None:
                    self.stop_code = code
                    self.stopped.set()

    def _flush(self) -> None:
        # A refused write means that peer is gone; PeerClosed / ChildExited tell the core.
        if self._to_client:
            assert self._client_batch is not None
            self._client_batch.write()
        if self._to_server:
            assert self._server_batch is not None
            self._server_batch.write()
        if self.clock is not None:
            self.clock.watch(self._core.next_deadline())
        if self.settled is not None:
            self.settled()

    # With a transcript ---------------------------------------------------------------------

    def _recorded_lines(self, side: Side, lines: list[Line], source: Source | None = None) -> None:
        assert self.transcript is not None
        leg = CLIENT_IN if side == CLIENT else SERVER_IN
        for line in lines:
            if type(line) is bytes:
                self.transcript.record(leg, line)
            else:
                self.transcript.record(leg, None, line.size)  # type: ignore[union-attr]
        Driver.lines(self, side, lines, source)

    def _recorded_flush(self) -> None:
        assert self.transcript is not None
        Driver._flush(self)
        self.transcript.flush()


def _remember_nothing(remember: Remember) -> None:
    """A session with no era memory (the daemon's, the HTTP front's) stores nothing."""


def _unattached(send: Send) -> None:
    raise AssertionError("the driver has no client side yet")


def _size(line: Line) -> int:
    return len(line) if type(line) is bytes else line.size  # type: ignore[union-attr]


def line_of(send: Send) -> bytes:
    """What `send` writes, as one line (for a transport that needs it whole: HTTP bodies)."""
    line = send.line
    if line is None:
        return encode(send.message)
    return line if isinstance(line, bytes) else line.joined()
