"""Start-up only, two checkouts side by side: `python tests/benchmarks/startup.py [DIR] [--reps N]`.

Must not assert anything: it spawns, in an order that rotates every repetition, the server
alone (each era) and the bridge of this checkout and of DIR (another checkout of the project,
e.g. `git worktree add /tmp/base <commit>`) in every mode, and prints the median milliseconds
from spawn to the first `tools/list` answer, and each bridge's median minus the server's.
"""

from __future__ import annotations

import argparse
import compileall
import os
import statistics
import sys

from bench import PY, server
from clients import Driver

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
MODES = {"A": ("modern", "legacy"), "B": ("legacy", "modern"),
         "P-legacy": ("legacy", "legacy"), "P-modern": ("modern", "modern")}
"""mode -> (the server's era, the client's era)."""


def starts(checkouts: dict[str, str], level: str) -> dict[str, tuple[str, list[str], str]]:
    """name -> (directory to start in, command, the client's era)."""
    runs = {f"direct-{era}": (ROOT, server(era), era) for era in ("legacy", "modern")}
    for label, where in checkouts.items():
        for mode, (server_era, client_era) in MODES.items():
            command = [PY, "-m", "bridge", "--log-level", level, "--", *server(server_era)]
            runs[f"{mode} {label}"] = (where, command, client_era)
    return runs


def start_ms(where: str, command: list[str], era: str) -> float:
    os.chdir(where)  # `-m bridge` takes the checkout it starts in
    driver = Driver(command, era)
    try:
        return driver.open() * 1000
    finally:
        driver.close()


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("against", nargs="?", help="another checkout to compare with")
    parser.add_argument("--reps", type=int, default=15)
    parser.add_argument("--log-level", default="warning", help="the bridge's (bench: warning)")
    args = parser.parse_args(argv)
    checkouts = {"this": ROOT} | ({"other": os.path.abspath(args.against)} if args.against
                                 else {})
    for where in checkouts.values():  # as pip install does (see bench.compile_bridge)
        compileall.compile_dir(os.path.join(where, "bridge"), quiet=1)
    runs = starts(checkouts, args.log_level)
    names = list(runs)
    times: dict[str, list[float]] = {name: [] for name in names}
    for rep in range(args.reps):
        for name in names[rep % len(names):] + names[:rep % len(names)]:
            times[name].append(start_ms(*runs[name]))
    medians = {name: statistics.median(values) for name, values in times.items()}
    print(f"start-up, median of {args.reps} (ms from spawn to the first tools/list answer)")
    for name, median in medians.items():
        mode = name.split()[0]
        extra = f"  +{median - medians['direct-' + MODES[mode][0]]:.0f}" if mode in MODES else ""
        print(f"{name:16} {median:6.0f}{extra}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
