"""Spliced lines leave the driver as their pieces (one writev), or joined where a transport
needs bytes; a batch keeps its order either way."""

from __future__ import annotations

from bridge.core.events import Action, Event, MessageReceived, Send, Spliced
from bridge.shell.session.batch import Batch
from bridge.shell.session.driver import Driver, line_of

LINE = b'{"jsonrpc":"2.0","id":"rosetta-1","result":{"text":"' + b"x" * 20000 + b'"}}'
CUT = LINE.index(b'"rosetta-1"')
SPLICED = Spliced((memoryview(LINE)[:CUT], b"7", memoryview(LINE)[CUT + 11:], b"\n"))
EXPECTED = LINE.replace(b'"rosetta-1"', b"7") + b"\n"


class SplicingCore:
    """Answers each client line with a small message, then the spliced line."""

    def handle(self, event: Event, now: float) -> list[Action]:
        if type(event) is not MessageReceived:
            return []
        return [Send("client", {"jsonrpc": "2.0", "method": "notifications/a"}),
                Send("client", {"id": 7}, SPLICED, 7)]

    def next_deadline(self) -> float | None:
        return None


class Recorder:
    def __init__(self) -> None:
        self.writes: list[bytes] = []
        self.pieces: list[list[bytes | memoryview]] = []

    def write(self, data: bytes) -> bool:
        self.writes.append(data)
        return True

    def write_pieces(self, pieces: list[bytes | memoryview]) -> bool:
        self.pieces.append(pieces)
        return True


class BatchingClient:
    """A client side written bytes, as the fd one is: the driver batches its lines."""

    def __init__(self, batch: Batch) -> None:
        self.batch = batch

    def send(self, send: Send) -> None:
        raise AssertionError("a side with a batch is not sent messages one by one")


async def test_a_batch_with_a_spliced_line_goes_out_as_pieces_in_order() -> None:
    # async: the driver reads trio's clock
    driver = Driver(SplicingCore(), None, limit=1 << 20, notify=print)
    client = Recorder()
    driver.attach(BatchingClient(driver.batch(client, "client")), Recorder())  # type: ignore[arg-type]
    driver.lines("client", [b"{}"])
    assert client.writes == []
    (pieces,) = client.pieces
    assert b"".join(pieces) == b'{"jsonrpc":"2.0","method":"notifications/a"}\n' + EXPECTED
    assert [piece.obj for piece in pieces if isinstance(piece, memoryview)] == [LINE, LINE]


def test_a_transport_that_needs_bytes_gets_the_line_joined() -> None:
    assert line_of(Send("client", {"id": 7}, SPLICED, 7)) == EXPECTED
    assert line_of(Send("client", {"id": 7}, b"raw\n", 7)) == b"raw\n"
    assert line_of(Send("client", {"id": 7})) == b'{"id":7}\n'
