"""The `mcp-rosetta` command's front door: `connect ADDRESS` straight to its relay, the rest to
bridge.cli.

Must not import anything before it knows the command (a client config launches `connect` for
every session, which pays each import at its start), nor parse more than `connect ADDRESS`:
every other form of connect (--help, a flag, no address) goes to bridge.cli's parser as before.
The garbage collector is paused for the start-up from here (bridge/collector.py), and on again
whatever way the command ends.
"""

from __future__ import annotations

import sys

from bridge import collector


def main(argv: list[str] | None = None) -> int:
    """What the `mcp-rosetta` command runs (pyproject.toml's entry point); returns the exit
    status."""
    collector.pause()
    try:
        return _command(sys.argv[1:] if argv is None else list(argv), argv is None)
    finally:  # an error, an early exit, a command whose start-up never ended
        collector.resume()


def _command(args: list[str], launched: bool) -> int:
    """`launched`: this process is the command itself (not a test calling main), whose
    client may be waiting on stdin for an answer."""
    # What argparse takes as `connect ADDRESS` when ADDRESS does not look like a flag.
    if len(args) == 2 and args[0] == "connect" and not args[1].startswith("-"):
        return _connect(args[1])
    from bridge.cli import main as cli

    return cli(args, answer_client=launched)


def _connect(address: str) -> int:
    from bridge.errors import BridgeError
    from bridge.shell.services.connect import run_connect

    collector.resume()
    try:
        return run_connect(address)
    except BridgeError as exc:  # told as bridge.cli.main tells it
        sys.stderr.write(f"mcp-rosetta: {exc}\n")
        return exc.code
