"""The per-peer I/O tasks: a reader turns lines into events, a writer turns messages into lines.

Must not decide anything: readers only report, writers only write what the driver queued.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import trio

from bridge.core.codec import encode
from bridge.core.events import Event, MessageReceived, PeerClosed, Side
from bridge.shell.lines import READ_SIZE, LineSplitter

Tagged = tuple[int, Event]
"""An event with the child generation it belongs to (0: not tied to a child, never stale)."""
Inbox = trio.MemorySendChannel[Tagged]
Outbox = trio.MemorySendChannel[Any]

# Once this much is gathered, write it rather than gather more: it bounds a batch's copy.
BATCH_BYTES = 256 * 1024
# The driver's inbox is bounded so a flooding peer is slowed down (its reader waits) instead
# of growing memory; the driver never waits on it, so this cannot deadlock.
INBOX_SIZE = 1024


def open_inbox() -> tuple[Inbox, trio.MemoryReceiveChannel[Tagged]]:
    return trio.open_memory_channel[Tagged](INBOX_SIZE)


def open_outbox() -> tuple[Outbox, trio.MemoryReceiveChannel[Any]]:
    # Unbounded: the driver must never block on a slow peer (the other side would stall).
    return trio.open_memory_channel[Any](math.inf)


async def read_peer(stream: trio.abc.ReceiveStream, side: Side, inbox: Inbox, gen: int) -> None:
    """Report each line `side` writes, then PeerClosed at EOF (a broken pipe counts as EOF)."""
    splitter = LineSplitter()
    try:
        while chunk := await stream.receive_some(READ_SIZE):
            # Real pipes give bytes; memory streams (tests) give bytearray: lines must be bytes.
            for line in splitter.feed(chunk if type(chunk) is bytes else bytes(chunk)):
                await _post(inbox, (gen, MessageReceived(side, line)))
    except trio.ClosedResourceError:
        return  # we closed it ourselves: shutting down, nobody needs to hear about it
    except trio.BrokenResourceError:
        pass
    for line in splitter.finish():
        await _post(inbox, (gen, MessageReceived(side, line)))
    await _post(inbox, (gen, PeerClosed(side)))


async def _post(inbox: Inbox, item: Tagged) -> None:
    # Waiting only when the inbox is full keeps a burst of lines from costing a task switch
    # each; receive_some already checkpoints once per read.
    try:
        inbox.send_nowait(item)
    except trio.WouldBlock:
        await inbox.send(item)


async def write_peer(
    outbox: trio.MemoryReceiveChannel[Any],
    stream: trio.abc.SendStream,
    on_broken: Callable[[], None] = lambda: None,
) -> None:
    """Write queued messages, several per write when they pile up; close `stream` at the end.

    The queue closing (the driver is done with this peer) ends the task after the last write;
    so does a broken pipe, after which `on_broken` runs and the queue refuses further sends.
    """
    try:
        with outbox:
            async for first in outbox:
                await stream.send_all(_gather(first, outbox))
    except (trio.BrokenResourceError, trio.ClosedResourceError):
        on_broken()
    finally:
        await trio.aclose_forcefully(stream)


def _gather(first: Any, outbox: trio.MemoryReceiveChannel[Any]) -> bytes:
    data = encode(first)
    parts: list[bytes] | None = None
    size = len(data)
    while size < BATCH_BYTES:
        try:
            line = encode(outbox.receive_nowait())
        except (trio.WouldBlock, trio.EndOfChannel):
            break
        if parts is None:
            parts = [data]
        parts.append(line)
        size += len(line)
    return data if parts is None else b"".join(parts)
