"""What happened (events, in the past tense) and what to do (actions, imperatives).

Must not contain behaviour: these are plain records passed between the shell and the core.
"""

from __future__ import annotations

from dataclasses import field
from typing import Literal

from bridge.core.codec import Message
from bridge.core.eras import Era
from bridge.core.jsonrpc import WireId
from bridge.core.record import record

Side = Literal["client", "server"]
CLIENT: Side = "client"
SERVER: Side = "server"


# Events -----------------------------------------------------------------------------------


# The two records made for every message (MessageReceived in, Send out) are not frozen: a
# frozen dataclass's __init__ costs twice as much (object.__setattr__ per field), on the
# hottest path there is. Nothing mutates them either way.
@record()
class MessageReceived:
    """A peer wrote one line (raw bytes, without the newline)."""

    side: Side
    message: bytes


@record()
class MessageDecoded:
    """A peer's message the shell decoded itself (the HTTP front reads a POST's body to check
    its headers against it): the core takes the value, with no second parse of its bytes.

    `line` is the bytes it was decoded from while they still spell it (None once the shell
    changed it, as the front renames a request's id); a float id is read from them
    (`jsonrpc.classified`), so a message with one comes with its line.
    """

    side: Side
    message: Message
    line: bytes | None = None


@record(frozen=True)
class MessageTooLarge:
    """A peer wrote a line longer than `limit` bytes; the shell discarded it as it streamed in.

    `head` and `tail` are the line's first and last bytes (a few KiB each), enough to recover
    the id of a request or response that names it first or last; the rest was never held.
    """

    side: Side
    head: bytes
    limit: int
    tail: bytes = b""


@record(frozen=True)
class ChildStarted:
    """The server process is running and its pipes are open."""


@record(frozen=True)
class ChildExited:
    """The server process ended with `code` (negative: killed by that signal), or could not
    be started at all (126 not executable, 127 not found, as a shell reports them).

    `cause` is what the shell knows beyond the status, in words for the user: why the
    command could not start (not found, with the PATH searched; not executable).
    `stderr_tail` is the last lines the process wrote to its stderr, which name the fault of
    a server that ended before it ever answered.
    `went` says how a server that is no process of ours went (the HTTP upstream: it stopped
    answering, or ended the session); its `code` is then None.
    """

    code: int | None
    cause: str = ""
    stderr_tail: tuple[str, ...] = ()
    went: str = ""


@record(frozen=True)
class PeerClosed:
    """A peer closed its output: the client's stdin or the server's stdout reached EOF.

    `gone`: the peer cannot read either (its end was closed or reset, a write to it failed),
    so nothing owed to it can reach it any more.
    """

    side: Side
    gone: bool = False


@record(frozen=True)
class TimerFired:
    """The deadline `next_deadline()` gave has passed."""


@record(frozen=True)
class ShutdownRequested:
    """A signal (SIGTERM, SIGINT) asked the bridge to stop.

    With a `grace` (seconds), requests already taken are still answered for that long, while
    new ones are refused; without, everything still owed is answered with an error at once.
    """

    grace: float = 0.0


@record(frozen=True)
class ChangeRelayed:
    """A change notification (a list_changed, a resource update) another core of the same
    client heard from its own server: a pool's other process, or the client's tenant on
    another node of a fleet. It goes to this core's listen streams as one of its own
    server's would, by their filters, and is never shared again (`ShareChange`)."""

    message: Message


Event = (MessageReceived | MessageDecoded | MessageTooLarge | ChildStarted | ChildExited
         | PeerClosed | TimerFired | ShutdownRequested | ChangeRelayed)


# Actions ----------------------------------------------------------------------------------


@record(frozen=True)
class Spliced:
    """A peer's line with a few edits made (splice.py), as the pieces that make it up: views
    of that line and the edited bytes, the newline last. The shell writes them with one
    writev, so a spliced line of any size costs no copy; `joined` is the line itself."""

    pieces: tuple[bytes | memoryview, ...]

    def joined(self) -> bytes:
        return b"".join(self.pieces)


@record()
class Send:
    """Write `message` (a JSON-RPC object, or a list for a 2025-03-26 batch) to `side`.

    `line`, when the core has it, is `message` already encoded as one newline-terminated line:
    bytes, or a peer's line with only its id spliced in (and members cut) as a `Spliced`,
    whose pieces the shell writes as they are.

    `request`, on a message to the client, is the id of the client request it belongs to (as
    the client spelled it): its answer, its progress and logs, a question asked on its behalf,
    a notification on its listen stream. A transport with a stream per request (Streamable
    HTTP) routes by it. None: it belongs to no request (a legacy client's `list_changed`, an
    error under id null, a batch's answers, which carry their own ids). Messages to the
    server name none.
    """

    side: Side
    message: Message | list[Message]
    line: bytes | Spliced | None = None
    request: WireId | None = None


@record(frozen=True)
class Log:
    """Emit a structured log event named `subject.verb`."""

    level: str
    event: str
    fields: dict[str, object] = field(default_factory=dict)


@record(frozen=True)
class RestartChild:
    """Stop the server process if it runs and start a fresh one; ChildStarted follows."""


@record(frozen=True)
class NotifyReady:
    """Tell the service manager the bridge is serving (systemd READY=1)."""


@record(frozen=True)
class Status:
    """Tell the service manager what the bridge is doing (systemd STATUS=)."""

    text: str


@record(frozen=True)
class Remember:
    """Store the era found for the server command, with the name and version the server gave
    (`server`), for its next start to skip the probe; `era` None: forget what was stored.
    `reason`: what showed it, for the log of the shell that stores it."""

    era: Era | None
    server: Message | None = None
    reason: str = ""


# The codes a Stop exits with (sysexits.h): a session that ended as asked, or one whose
# server cannot be used.
EX_OK = 0
EX_UNAVAILABLE = 69


@record(frozen=True)
class Stop:
    """Shut down: close the child's stdin, wait, SIGTERM, SIGKILL; then exit with `code`."""

    code: int


@record(frozen=True)
class ShareChange:
    """Carry a change notification this core's server raised (`message`, as the server sent
    it) to the client's listen streams on its other cores, which take it as `ChangeRelayed`.
    Made only with `CoreConfig.share_changes`: the shell knows where those cores are."""

    message: Message


Asked = tuple[str, str, str, str, str]
"""What an answered request was: its method (a known one, else "other"), its tool ("" but
for `tools/call`), and the mode and the client's and server's eras that served it."""


@record()
class Answered:
    """A fact a Bridge given a tracing observer (observe.py) reports: a client's request was
    answered (for a span; the observer's tally has counted it).

    `started` and `ended` are the core's `now` when the request reached its mode and when the
    answer left; `error_type` is the class of an error answer (observe.ERROR_TYPES), None for
    a result; `trace` the W3C trace context (traceparent, tracestate) its `_meta` carried,
    when the bridge was asked to read it (spans).
    """

    request: Asked
    started: float
    ended: float
    error_type: str | None
    trace: tuple[str, str | None] | None = None


Action = (Send | Log | RestartChild | NotifyReady | Status | Remember | Stop | Answered
          | ShareChange)
