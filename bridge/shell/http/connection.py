"""One HTTP/1.1 connection: h11's state machine driven over a trio stream.

Must not interpret MCP: it reads whole requests (head and body, within the limits) and
writes whole answers or event streams; `router.py` decides what they say. h11 parses and
frames every byte (no HTTP parsing here); this module only moves bytes and enforces sizes.
"""

from __future__ import annotations

import contextlib
import functools
import math
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from http import HTTPStatus

import h11
import trio

from bridge.streamable import replies
from bridge.streamable.replies import Reply

READ_SIZE = 64 * 1024
WRITE_PIECE = 64 * 1024
"""Answers are written in pieces of at most this many bytes, each within the stall timeout:
a client that takes nothing for that long is given up on, however long the answer."""


class HttpError(Exception):
    """The client sent what cannot be a request (malformed, too large): give it `reply`
    (worded by `bridge.streamable.replies`) if the connection still can, then close it."""

    def __init__(self, reply: Reply) -> None:
        super().__init__(reply.reason)
        self.reply = reply


class Bodies:
    """The request bodies all connections hold at once, within `limit` bytes: a thousand
    clients each sending a body just under max_message_bytes must not make the front hold a
    thousand of them. One body always fits, however long (its own limit is max_body)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.held = 0

    def take(self, size: int) -> bool:
        if self.held and self.held + size > self.limit:
            return False
        self.held += size
        return True

    def give_back(self, size: int) -> None:
        self.held -= size


@dataclass(slots=True)
class Request:
    method: str
    target: str
    headers: dict[str, str]
    """Names in lower case (field names are case-insensitive); repeated ones joined by ", "."""
    body: bytes


class Connection:
    """h11 over one trio stream. Within `reading()`: `next_request`, then one answer
    (`respond`, or `start_stream` + `send` + `end_stream`), then `next_request` again while
    `reusable`.

    One reader task per connection (`reading`) is the only one that receives: it feeds h11
    while a request is awaited, and while an answer is written it watches for the client's
    close (the request's cancellation), so no task is started per request."""

    def __init__(self, stream: trio.abc.Stream, *, max_header: int, max_body: int,
                 peer: str = "", stall_timeout: float = math.inf,
                 bodies: Bodies | None = None) -> None:
        self._stream = stream
        self._bodies = bodies or Bodies(max_body)
        self._held = 0
        """Bytes of `_bodies` this connection's current request holds."""
        self.peer = peer
        """The client's address (`host:port`), for the log."""
        self.stall_timeout = stall_timeout
        self.stalled = False
        """A write waited `stall_timeout` for the client to take bytes: it stopped reading."""
        self._h11 = h11.Connection(h11.SERVER, max_incomplete_event_size=max_header)
        self._max_body = max_body
        self._max_header = max_header
        self.peer_closed = False
        self._awaiting = False
        """`next_request` waits for bytes: the reader reads for it."""
        self._answer: trio.CancelScope | None = None
        """The answer `until_closed` writes: the reader cancels it when the client closes."""
        self._kept = 0
        """Bytes the reader took while the current answer is written (a pipelining client)."""
        self._wanted = trio.lowlevel.ParkingLot()
        """The reader waits here until bytes are wanted."""
        self._arrived = trio.lowlevel.ParkingLot()
        """`next_request` waits here for the reader's bytes."""

    @property
    def reusable(self) -> bool:
        return (self._h11.our_state is h11.DONE and self._h11.their_state is h11.DONE
                and not self.peer_closed)

    async def next_request(self) -> Request | None:
        """The next whole request, or None when the client closed between requests.
        Raises HttpError for a malformed one or one over a limit."""
        if self._h11.our_state is h11.DONE:
            self._h11.start_next_cycle()
        self.release()  # the last request is answered: its body is not held any more
        head = await self._next_event()
        if head is None:
            return None
        if not isinstance(head, h11.Request):
            raise HttpError(replies.unexpected_event(type(head).__name__))
        # h11 bounds a head that arrives in pieces (max_incomplete_event_size); one that
        # arrives whole in a read is bounded here, the same way.
        size = len(head.target) + sum(len(n) + len(v) + 4 for n, v in head.headers)
        if size > self._max_header:
            raise HttpError(replies.head_too_large(self._max_header))
        if head.http_version not in (b"1.0", b"1.1"):  # h11 parses any x.y (HTTP/2's preface)
            raise HttpError(replies.version_not_served(
                head.http_version.decode("ascii", "replace")))
        headers: dict[str, str] = {}
        for name, value in head.headers:
            key = name.decode("latin-1")
            text = value.decode("latin-1")
            headers[key] = f"{headers[key]}, {text}" if key in headers else text
        if "transfer-encoding" in headers and "content-length" in headers:
            # RFC 9112 §6.3: a request with both is how requests are smuggled past a proxy
            # that reads the other one; h11 would go by the chunks and keep the connection.
            raise HttpError(replies.length_and_chunks())
        declared = headers.get("content-length")
        if declared is not None and declared.isdigit():
            if int(declared) > self._max_body:
                raise HttpError(replies.declared_too_large(declared, self._max_body))
            self._hold(int(declared))  # all of it now: refused before a byte is read
        if self._h11.they_are_waiting_for_100_continue:  # curl does, for bodies over 1 MiB
            await self._send(h11.InformationalResponse(status_code=100, headers=[]))
        chunks: list[bytes] = []
        size = 0
        while True:
            event = await self._next_event()
            if event is None:
                raise HttpError(replies.cut_inside_request())
            if isinstance(event, h11.Data):
                size += len(event.data)
                if size > self._max_body:
                    raise HttpError(replies.body_too_large(self._max_body))
                if declared is None:
                    self._hold(len(event.data))
                chunks.append(bytes(event.data))
            elif isinstance(event, h11.EndOfMessage):
                break
        return Request(head.method.decode("ascii", "replace"),
                       head.target.decode("ascii", "replace"), headers, b"".join(chunks))

    def _hold(self, size: int) -> None:
        if not self._bodies.take(size):
            raise HttpError(replies.bodies_full(self._bodies.held, self._bodies.limit))
        self._held += size

    def release(self) -> None:
        """Give back what the current request's body holds (it is answered, or never will
        be)."""
        self._bodies.give_back(self._held)
        self._held = 0

    async def _next_event(self) -> h11.Event | None:
        while True:
            try:
                event = self._h11.next_event()
            except h11.RemoteProtocolError as exc:
                raise _malformed(exc) from None
            if event is h11.NEED_DATA:
                if self.peer_closed:
                    self._h11.receive_data(b"")
                    continue
                await self._more_bytes()
                continue
            if event is h11.PAUSED:
                raise HttpError(replies.pipelined())
            if isinstance(event, h11.ConnectionClosed):
                return None
            return event  # type: ignore[return-value]

    async def _more_bytes(self) -> None:
        """Wait until the reader has given h11 more bytes, or found the client's end."""
        self._awaiting = True
        try:
            self._wanted.unpark_all()
            await self._arrived.park()
        finally:
            self._awaiting = False

    @contextlib.asynccontextmanager
    async def reading(self) -> AsyncIterator[None]:
        """The connection's reader task runs within this block (`read-client`). What the
        block raises leaves it as itself, not in an exception group (HttpError is answered)."""
        failure: Exception | None = None
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._read, name="read-client")
            try:
                yield
            except Exception as exc:
                failure = exc
            finally:
                nursery.cancel_scope.cancel()
        if failure is not None:
            raise failure

    def _wants_bytes(self) -> bool:
        """A request is awaited, or an answer is written and the bytes a client pipelines
        meanwhile are still within the header limit (past it, its close goes unseen)."""
        return self._awaiting or (self._answer is not None and self._kept <= self._max_header)

    async def _read(self) -> None:
        while not self.peer_closed:
            while not self._wants_bytes():
                await self._wanted.park()
            data = await self._receive()
            if data:
                self._h11.receive_data(data)
                if self._answer is not None:
                    self._kept += len(data)
            elif self._answer is not None:
                self._answer.cancel()
            self._awaiting = False  # satisfied: the awaiting task decides whether it needs more
            self._arrived.unpark_all()

    async def _receive(self) -> bytes:
        try:
            data = await self._stream.receive_some(READ_SIZE)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            data = b""
        if not data:
            self.peer_closed = True
        return bytes(data)

    async def until_closed(self, work: Callable[[], Awaitable[None]]) -> None:
        """Run `work` (writing an answer) until it ends, the client closes its end first
        (streamable-http.mdx §Cancellation: that is the request's cancellation; the reader
        sees it), or a write finds the client gone."""
        with trio.CancelScope() as answer:
            if self.peer_closed:
                answer.cancel()
            self._answer, self._kept = answer, 0
            self._wanted.unpark_all()
            try:
                with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
                    await work()
            finally:
                self._answer = None

    # Answers --------------------------------------------------------------------------------

    async def respond(self, status: int, body: bytes,
                      headers: tuple[tuple[str, str], ...] = ()) -> None:
        """A whole answer with a Content-Length."""
        head = [(b"content-length", str(len(body)).encode()), *_encoded(headers)]
        response = h11.Response(status_code=status, headers=head, reason=_reason(status))
        if body:
            await self._send(response, h11.Data(data=body), h11.EndOfMessage())
        else:
            await self._send(response, h11.EndOfMessage())

    async def start_stream(self, status: int, headers: tuple[tuple[str, str], ...]) -> None:
        """The head of an answer whose body follows in pieces (chunked)."""
        await self._send(h11.Response(status_code=status, headers=list(_encoded(headers)),
                                     reason=_reason(status)))

    async def send(self, data: bytes) -> None:
        await self._send(h11.Data(data=data))

    async def end_stream(self) -> None:
        await self._send(h11.EndOfMessage())

    async def refuse(self, status: int, body: bytes = b"",
                     headers: tuple[tuple[str, str], ...] = ()) -> None:
        """Answer a request h11 could not read (if its state still allows an answer); the
        connection closes after it."""
        if self._h11.our_state in (h11.IDLE, h11.SEND_RESPONSE):
            with contextlib.suppress(h11.LocalProtocolError, trio.BrokenResourceError,
                                     trio.ClosedResourceError):
                await self.respond(status, body, (*headers, ("connection", "close")))

    async def _send(self, *events: h11.Event) -> None:
        pieces = [data for data in map(self._h11.send, events) if data]
        if len(pieces) > 1 and sum(map(len, pieces)) <= WRITE_PIECE:
            pieces = [b"".join(pieces)]  # one write: a syscall costs more than a small copy
        try:
            for data in pieces:
                await self._send_all(data)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            self.peer_closed = True  # no answer can reach it: not reusable either
            raise

    async def _send_all(self, data: bytes) -> None:
        """`data` to the client, in pieces (views, not copies); one it takes nothing of for
        `stall_timeout` seconds has stopped reading, as the daemon's outlet says of a client
        at its end (outlet.py, drain): the connection is then as good as broken."""
        view = memoryview(data)
        for start in range(0, len(view), WRITE_PIECE):
            with trio.move_on_after(self.stall_timeout) as waited:
                await self._stream.send_all(view[start:start + WRITE_PIECE])
            if waited.cancelled_caught:
                self.stalled = True
                raise trio.BrokenResourceError(
                    f"the client took no bytes for {self.stall_timeout} s")

    async def close(self) -> None:
        await self._stream.aclose()


_QUOTED = re.compile(r":\s|\s(?:b'|b\"|bytearray\()")


def _malformed(exc: h11.RemoteProtocolError) -> HttpError:
    """What h11 could not parse, refused with the status it suggests."""
    return HttpError(replies.rejected(exc.error_status_hint, _problem(exc)))


def _problem(exc: h11.RemoteProtocolError) -> str:
    """h11's words for a malformed request, for the log, without the bytes it quotes (an
    illegal header line may be an Authorization header's, token and all)."""
    text = str(exc)
    cut = _QUOTED.split(text, maxsplit=1)
    return text if len(cut) == 1 else f"{cut[0]} (the bytes are not logged)"


@functools.lru_cache(maxsize=256)
def _encoded(headers: tuple[tuple[str, str], ...]) -> tuple[tuple[bytes, bytes], ...]:
    """Headers as h11 takes them; the same few sets (a JSON answer's, an event stream's)
    come on nearly every answer, so each is encoded once."""
    return tuple((name.encode("ascii"), value.encode("latin-1")) for name, value in headers)


_REASONS = {status.value: status.phrase.encode("ascii") for status in HTTPStatus}


def _reason(status: int) -> bytes:
    return _REASONS.get(status, b"")
