"""The benchmark command: `python tests/benchmarks/bench.py [--quick] [--reps N]`.

Must not assert anything or run under pytest: it runs every configuration once per
repetition, interleaved (rotating the order) so a noisy machine spreads its noise evenly,
then prints the table, the targets met or missed, and one `BENCH ...` summary line.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

from clients import Figures, Load, measure
from report import checks, pool, summary, table

HERE = os.path.dirname(os.path.abspath(__file__))
PY = sys.executable
SERVER = os.path.join(HERE, "servers.py")
RELAY = os.path.join(HERE, "relays.py")
FLOOR = os.path.join(HERE, "floor.py")


def server(era: str) -> list[str]:
    return [PY, SERVER, era]


def configurations() -> dict[str, tuple[list[str], str]]:
    """name -> (command to spawn, the client's era)."""
    bridge = [PY, "-m", "bridge", "--log-level", "warning", "--"]
    configs: dict[str, tuple[list[str], str]] = {}
    for era in ("legacy", "modern"):
        configs[f"direct-{era}"] = (server(era), era)
        for kind in ("byte", "json", "orjson"):
            configs[f"{kind}-{era}"] = ([PY, RELAY, kind, "--", *server(era)], era)
    # The bridge's shell with a core that only relays: what any mode pays before translating.
    configs["floor-legacy"] = ([PY, FLOOR, "--", *server("legacy")], "legacy")
    configs["A"] = ([*bridge, *server("modern")], "legacy")
    configs["B"] = ([*bridge, *server("legacy")], "modern")
    configs["P-legacy"] = ([*bridge, *server("legacy")], "legacy")
    configs["P-modern"] = ([*bridge, *server("modern")], "modern")
    return configs


QUICK = Load(warmup=50, sequential=300, pipelined=2000, blobs_64k=10, blobs_1m=3, asks=20)
FULL = Load(warmup=100, sequential=1000, pipelined=5000, blobs_64k=30, blobs_1m=8, asks=50)


def run_all(reps: int, load: Load) -> dict[str, list[Figures]]:
    configs = configurations()
    names = list(configs)
    runs: dict[str, list[Figures]] = {name: [] for name in names}
    for rep in range(reps):
        order = names[rep % len(names):] + names[:rep % len(names)]
        started = time.perf_counter()
        for name in order:
            command, era = configs[name]
            runs[name].append(measure(command, era, load))
        print(f"repetition {rep + 1}/{reps}: {time.perf_counter() - started:.1f} s",
              file=sys.stderr, flush=True)
    return runs


def compile_bridge() -> None:
    """Byte-compile the bridge, as `pip install` does: with PYTHONDONTWRITEBYTECODE set (or
    a read-only checkout), every start would otherwise compile it from source again, which is
    not what a user's installed bridge does."""
    import compileall

    root = os.path.dirname(os.path.dirname(HERE))
    compileall.compile_dir(os.path.join(root, "bridge"), quiet=1)
    compileall.compile_dir(HERE, quiet=1)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="less load, 3 repetitions")
    parser.add_argument("--reps", type=int, help="repetitions (default 3 quick, 7 full)")
    args = parser.parse_args(argv)
    reps = args.reps or (3 if args.quick else 7)
    compile_bridge()
    runs = run_all(reps, QUICK if args.quick else FULL)
    rows = {name: pool(figures) for name, figures in runs.items()}
    print(f"mcp-rosetta benchmark: {reps} interleaved repetitions, {os.cpu_count()} cores, "
          f"Python {sys.version.split()[0]}, {time.strftime('%Y-%m-%d')}\n")
    print(table(rows))
    results = checks(rows)
    print("\ntargets (ratios to baselines measured in this run):")
    for check in results:
        print(f"  {check}")
    print()
    print(summary(rows, results))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
