"""One byte peer's share of a driver batch: the lines the core sent it during one read, written
at once (one write, or one writev when a spliced line is among them).

Must not wait nor decide anything: the driver (for the server) and the fd client side (for
the client) add lines while the core's actions are carried out, and write them when the
batch ends. A refused write means the peer is gone; its reader or its supervisor tells the
core.
"""

from __future__ import annotations

from typing import Protocol

from bridge.core.events import CLIENT, Side, Spliced
from bridge.shell.logs import Logger
from bridge.shell.session.transcript import CLIENT_OUT, SERVER_OUT, Transcript


class Peer(Protocol):
    """Where a batch's bytes are written (an Outlet, or the server side)."""

    def write(self, data: bytes) -> bool: ...
    def write_pieces(self, pieces: list[bytes | memoryview]) -> bool:
        """Write the pieces in order as if joined (a spliced line's: one writev, no copy)."""


class Batch:
    """The lines for `peer` since the last write: `parts` is appended to by the caller."""

    def __init__(self, peer: Peer, side: Side, log: Logger, *, debug: bool = False,
                 transcript: Transcript | None = None) -> None:
        self.parts: list[bytes | Spliced] = []
        self.peer = peer
        """Where the batch is written (its owner may replace it between batches)."""
        self._side = side
        self._log = log
        self._debug = debug
        self._transcript = transcript
        if transcript is not None:  # bound once: without a transcript, no cost per batch
            self.write = self._recorded_write  # type: ignore[method-assign]

    def write(self) -> None:
        """Write what was added, as one write; the batch is empty again."""
        parts = self.parts
        whole = [part for part in parts if isinstance(part, bytes)]
        if len(whole) < len(parts):
            self._write_pieces()
            return
        data = whole[0] if len(whole) == 1 else b"".join(whole)
        if self._debug:
            self._log.debug("message.sent", side=self._side, messages=len(parts),
                            bytes=len(data))
        parts.clear()
        self.peer.write(data)

    def _write_pieces(self) -> None:
        """A batch with a spliced line in it: the pieces of every line, in one writev (a
        spliced line is at least SPLICE_MIN long: joining would copy it whole)."""
        pieces: list[bytes | memoryview] = []
        for part in self.parts:
            if isinstance(part, bytes):
                pieces.append(part)
            else:
                pieces += part.pieces
        if self._debug:
            self._log.debug("message.sent", side=self._side, messages=len(self.parts),
                            bytes=sum(len(piece) for piece in pieces))
        self.parts.clear()
        self.peer.write_pieces(pieces)

    def _recorded_write(self) -> None:
        assert self._transcript is not None
        leg = CLIENT_OUT if self._side == CLIENT else SERVER_OUT
        for part in self.parts:
            line = part if isinstance(part, bytes) else part.joined()
            self._transcript.record(leg, line.removesuffix(b"\n"))
        Batch.write(self)
