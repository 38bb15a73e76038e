"""Start-up only, two checkouts side by side: `python tests/benchmarks/startup.py [DIR] [--reps N]
[--uplift CLI]`.

Must not assert anything: it spawns, in an order that rotates every repetition, the server
alone (each era) and the bridge of this checkout and of DIR (another checkout of the project,
e.g. `git worktree add /tmp/base <commit>`) in every mode, and mcp-uplift before the legacy
server if given (as bench.py's --uplift), and prints the median milliseconds from spawn to the
first `tools/list` answer, each bridge's median minus the server's, and the median CPU time
the spawned process itself used up to that answer (Linux; its children not counted): on a
machine other work loads, the CPU moves much less than the wall time does.
"""

from __future__ import annotations

import argparse
import compileall
import glob
import os
import shutil
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


def start_ms(where: str, command: list[str], era: str) -> tuple[float, float]:
    """Milliseconds from spawn to the first answer, and of CPU the process used until then."""
    os.chdir(where)  # `-m bridge` takes the checkout it starts in
    driver = Driver(command, era)
    try:
        wall = driver.open() * 1000
        return wall, cpu_ms(driver.proc.pid)
    finally:
        driver.close()


def cpu_ms(pid: int) -> float:
    """The CPU time of every thread of `pid` so far (/proc's schedstat, in ns), 0 if unknown."""
    total = 0
    for path in glob.glob(f"/proc/{pid}/task/*/schedstat"):
        try:
            with open(path) as stat:
                total += int(stat.read().split()[0])
        except (OSError, ValueError, IndexError):
            continue
    return total / 1e6


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("against", nargs="?", help="another checkout to compare with")
    parser.add_argument("--reps", type=int, default=15)
    parser.add_argument("--log-level", default="warning", help="the bridge's (bench: warning)")
    parser.add_argument("--uplift", metavar="CLI", default=os.environ.get(
        "MCP_ROSETTA_BENCH_UPLIFT"), help="mcp-uplift's src/cli.js, started before the "
        "legacy server for a modern client, as B (default: $MCP_ROSETTA_BENCH_UPLIFT)")
    args = parser.parse_args(argv)
    checkouts = {"this": ROOT} | ({"other": os.path.abspath(args.against)} if args.against
                                 else {})
    for where in checkouts.values():  # as pip install does (see bench.compile_bridge)
        compileall.compile_dir(os.path.join(where, "bridge"), quiet=1)
    runs = starts(checkouts, args.log_level)
    node = shutil.which("node")
    if args.uplift and node:  # bench.py checks its answers; here only its start is timed
        runs["uplift"] = (ROOT, [node, os.path.abspath(args.uplift), "--",
                                 *server("legacy")], "modern")
    names = list(runs)
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in names}
    for rep in range(args.reps):
        for name in names[rep % len(names):] + names[:rep % len(names)]:
            times[name].append(start_ms(*runs[name]))
    medians = {name: statistics.median(wall for wall, _ in values)
               for name, values in times.items()}
    cpus = {name: statistics.median(cpu for _, cpu in values) for name, values in times.items()}
    print(f"start-up, median of {args.reps} (ms from spawn to the first tools/list answer; "
          "CPU ms of the spawned process until then)")
    for name, median in medians.items():
        mode = name.split()[0]
        extra = f"  +{median - medians['direct-' + MODES[mode][0]]:.0f}" if mode in MODES else ""
        print(f"{name:16} {median:6.0f}  cpu {cpus[name]:6.1f}{extra}")
    for name in medians:
        if "uplift" in medians and name.startswith("B "):
            print(f"{name} vs uplift: wall {medians[name] / medians['uplift']:.2f}x, "
                  f"cpu {cpus[name] / cpus['uplift']:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
