"""Stdout hygiene: after take_stdio, print() and stray writes to fd 1 land on stderr."""

from __future__ import annotations

import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent("""
    import os, sys
    from bridge.shell.fdio.stdio import take_stdio
    fds = take_stdio()
    print("stray print")
    os.write(1, b"stray fd write\\n")
    sys.stdout.write("stray sys.stdout\\n")
    os.write(fds.client_out, b'{"jsonrpc":"2.0"}\\n')
    os.write(fds.client_out, os.read(fds.client_in, 100))
    assert sys.stdin.read() == ""  # a stray read of stdin sees EOF, not the client's bytes
""")


def test_only_protocol_bytes_reach_the_real_stdout() -> None:
    done = subprocess.run([sys.executable, "-c", SCRIPT], input=b"from the client\n",
                          capture_output=True, timeout=30, check=True)
    assert done.stdout == b'{"jsonrpc":"2.0"}\nfrom the client\n'
    assert b"stray print" in done.stderr
    assert b"stray fd write" in done.stderr
    assert b"stray sys.stdout" in done.stderr
