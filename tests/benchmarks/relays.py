"""Baseline relays between stdio and a child: `python relays.py byte|json|orjson -- CMD...`.

Must not understand MCP: `byte` copies bytes both ways without parsing (the cost of one more
process hop); `json` and `orjson` decode and re-encode every line without translating (the
floor for any Python process that parses), with the stdlib codec or with orjson.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable
from typing import IO

CHUNK = 256 * 1024


def copy_bytes(src: int, dst: int, on_eof: Callable[[], None]) -> None:
    """Copy raw chunks from fd `src` to fd `dst` until EOF."""
    try:
        while chunk := os.read(src, CHUNK):
            view = memoryview(chunk)
            while view:
                view = view[os.write(dst, view):]
    except (BrokenPipeError, OSError):
        pass
    on_eof()


def line_codec(name: str) -> Callable[[bytes], bytes]:
    """The decode-then-encode function of one line, newline included."""
    if name == "orjson":
        import orjson

        opt = orjson.OPT_APPEND_NEWLINE
        return lambda line: orjson.dumps(orjson.loads(line), option=opt)
    return lambda line: json.dumps(json.loads(line), separators=(",", ":")).encode() + b"\n"


def copy_lines(src: IO[bytes], dst: IO[bytes], codec: Callable[[bytes], bytes],
               on_eof: Callable[[], None]) -> None:
    """Re-encode each line from `src` to `dst`, flushing after each one."""
    try:
        for line in src:
            if line.strip():
                dst.write(codec(line))
                dst.flush()
    except (BrokenPipeError, OSError):
        pass
    on_eof()


def close_quietly(stream: IO[bytes]) -> None:
    with contextlib.suppress(OSError):
        stream.close()


def run(kind: str, command: list[str]) -> int:
    child = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert child.stdin is not None and child.stdout is not None
    if kind == "byte":
        up = threading.Thread(target=copy_bytes, daemon=True, args=(
            0, child.stdin.fileno(), lambda: close_quietly(child.stdin)))
        copy_down = threading.Thread(target=copy_bytes, args=(child.stdout.fileno(), 1, _noop))
    else:
        codec = line_codec(kind)
        up = threading.Thread(target=copy_lines, daemon=True, args=(
            sys.stdin.buffer, child.stdin, codec, lambda: close_quietly(child.stdin)))
        copy_down = threading.Thread(target=copy_lines, args=(
            child.stdout, sys.stdout.buffer, codec, _noop))
    up.start()
    copy_down.start()
    copy_down.join()
    return child.wait()


def _noop() -> None:
    pass


def main(argv: list[str]) -> int:
    if len(argv) < 3 or argv[0] not in ("byte", "json", "orjson") or argv[1] != "--":
        sys.stderr.write("usage: relays.py byte|json|orjson -- COMMAND [ARGS...]\n")
        return 64
    return run(argv[0], argv[2:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
