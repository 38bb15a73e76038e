"""The flags for the server's environment, working directory, the transcript and metrics.

Must not validate beyond a flag's own text (bridge/config.py has the checks, shared with the
file's keys) nor start anything: it adds the flags to a parser and reads them back.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from bridge.config import directory, env_assignment, env_name, file_path, metrics_address


def add_server_options(p: argparse.ArgumentParser, checked: Callable[[Any], Any], *,
                       transcript: bool = True) -> None:
    """`checked(check)` turns a config check into an argparse type; `transcript` adds
    --transcript (which only a bridge that relays has use for)."""
    p.add_argument("-e", "--env", type=checked(env_assignment), action="append",
                   metavar="KEY[=VALUE]",
                   help="set KEY for the server (KEY alone: pass the bridge's own); repeatable")
    p.add_argument("--pass-env", type=checked(env_name), action="append", metavar="NAME",
                   help="give the server only these variables (NAME* a prefix), a minimum "
                        "(PATH, HOME, LANG, ...) and --env; repeatable")
    p.add_argument("--cwd", type=checked(directory), metavar="DIR",
                   help="the server's working directory (default: the bridge's)")
    if transcript:
        p.add_argument("--transcript", type=checked(file_path), metavar="FILE",
                       help="append every message, as it crossed each leg, to FILE "
                            "(JSON lines)")
        p.add_argument("--metrics", type=checked(metrics_address), metavar="URL",
                       help="serve Prometheus metrics at http://HOST:PORT/PATH (PATH "
                            "/metrics if none; loopback, or with a token)")


def server_overrides(args: argparse.Namespace) -> dict[str, Any]:
    """The config keys those flags set (env and pass_env add to the file's: see config.py)."""
    values: dict[str, Any] = {}
    if args.env:
        values["env"] = tuple(args.env)
    if args.pass_env:
        values["pass_env"] = tuple(args.pass_env)
    if args.cwd is not None:
        values["cwd"] = args.cwd
    if getattr(args, "transcript", None) is not None:
        values["transcript"] = args.transcript
    if getattr(args, "metrics", None) is not None:
        values["metrics"] = args.metrics
    return values
