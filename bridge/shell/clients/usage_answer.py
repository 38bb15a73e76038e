"""A command line the bridge cannot run, told to the client as well as on stderr.

A client that launches the bridge often shows nothing of its stderr, only "connection
closed": so the error also answers the client's first request, on stdout, where the client
reads. Must not wait on a terminal or a file that never ends: only a pipe or a socket is read,
for at most `wait` seconds, and only its first request is answered.
"""

from __future__ import annotations

import os
import select
import stat
import time
from collections.abc import Iterator

import orjson

from bridge.core.eras import INTERNAL_ERROR

LINE_MAX = 1024 * 1024
"""Bytes read looking for the first request; a longer first line is not answered."""


def answer_first_request(problem: str, status: int, wait: float = 3.0,
                         stdin: int = 0, stdout: int = 1) -> bool:
    """Answer the first request read from `stdin` with an error naming `problem` and the
    exit `status`; True if one was answered."""
    mode = os.fstat(stdin).st_mode
    if not (stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)):
        return False
    deadline = time.monotonic() + wait
    for line in _lines(stdin, deadline):
        reply = refusal(line, problem, status)
        if reply is not None:
            os.write(stdout, reply)
            return True
    return False


def refusal(line: bytes, problem: str, status: int) -> bytes | None:
    """The error answering `line` if it is a request (it has an id), else None."""
    try:
        message = orjson.loads(line)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(message, dict) or "method" not in message or "id" not in message:
        return None
    error = {"code": INTERNAL_ERROR, "message": f"mcp-rosetta: {problem}",
             "data": {"source": "mcp-rosetta", "exitStatus": status}}
    return orjson.dumps({"jsonrpc": "2.0", "id": message["id"], "error": error}) + b"\n"


def _lines(fd: int, deadline: float) -> Iterator[bytes]:
    held = b""
    while len(held) < LINE_MAX:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            return
        chunk = os.read(fd, 65536)
        if not chunk:
            return
        *complete, held = (held + chunk).split(b"\n")
        yield from complete
