"""The benchmark command: `python tests/benchmarks/bench.py [--quick] [--reps N] [--uplift CLI]
[--installed VENV]`.

Must not assert anything or run under pytest: it runs every configuration once per
repetition, interleaved (rotating the order) so a noisy machine spreads its noise evenly,
then prints the table, the targets met or missed, and one `BENCH ...` summary line.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import threading
import time

from clients import (
    ACCEPT,
    ECHO,
    ELICITATION,
    Driver,
    Figures,
    Load,
    Message,
    ProtocolFailure,
    blob_params,
    measure,
)
from report import checks, pool, summary, table

HERE = os.path.dirname(os.path.abspath(__file__))
PY = sys.executable
SERVER = os.path.join(HERE, "servers.py")
RELAY = os.path.join(HERE, "relays.py")
FLOOR = os.path.join(HERE, "floor.py")
CHECK_TIMEOUT = 60.0  # seconds for the whole check of mcp-uplift's answers (Node starts, too)


def server(era: str) -> list[str]:
    return [PY, SERVER, era]


def installed(venv: str) -> None:
    """Spawn everything with `venv`'s interpreter, and the bridge as its `mcp-rosetta`: what a
    user runs. In the checkout's own venv every interpreter (the server's too) first imports
    the editable install's finder, which an installed bridge does not."""
    global PY, BRIDGE
    PY = os.path.join(venv, "bin", "python")
    BRIDGE = [os.path.join(venv, "bin", "mcp-rosetta")]
    for path in (PY, BRIDGE[0]):
        if not os.access(path, os.X_OK):
            raise SystemExit(f"bench.py: {path} is not there: make the venv with "
                             "`python -m venv VENV && VENV/bin/pip install .`")


BRIDGE = [PY, "-m", "bridge"]
"""How the bridge is started: this checkout's, unless --installed names a venv."""


def configurations(uplift: list[str] | None = None) -> dict[str, tuple[list[str], str]]:
    """name -> (command to spawn, the client's era); `uplift` runs beside B if given."""
    bridge = [*BRIDGE, "--log-level", "warning", "--"]
    configs: dict[str, tuple[list[str], str]] = {}
    for era in ("legacy", "modern"):
        configs[f"direct-{era}"] = (server(era), era)
        for kind in ("byte", "json", "orjson"):
            configs[f"{kind}-{era}"] = ([PY, RELAY, kind, "--", *server(era)], era)
    # The bridge's shell with a core that only relays: what any mode pays before translating.
    configs["floor-legacy"] = ([PY, FLOOR, "--", *server("legacy")], "legacy")
    configs["A"] = ([*bridge, *server("modern")], "legacy")
    configs["B"] = ([*bridge, *server("legacy")], "modern")
    if uplift is not None:  # mcp-uplift does B's job: modern client, legacy stdio server
        configs["uplift"] = ([*uplift, "--", *server("legacy")], "modern")
    configs["P-legacy"] = ([*bridge, *server("legacy")], "legacy")
    configs["P-modern"] = ([*bridge, *server("modern")], "modern")
    return configs


QUICK = Load(warmup=50, sequential=300, pipelined=2000, blobs_64k=10, blobs_1m=3, asks=20)
FULL = Load(warmup=100, sequential=1000, pipelined=5000, blobs_64k=30, blobs_1m=8, asks=50)


def run_all(reps: int, load: Load, uplift: list[str] | None) -> dict[str, list[Figures]]:
    configs = configurations(uplift)
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


def uplift_command(path: str | None) -> tuple[list[str] | None, str]:
    """The command that starts mcp-uplift's cli.js, or None and why it is not run."""
    if not path:
        return None, ("uplift: skipped (give --uplift PATH/TO/mcp-uplift/src/cli.js or set "
                      "MCP_ROSETTA_BENCH_UPLIFT; tests/benchmarks/README.md says how to get it)")
    node = shutil.which("node")
    if node is None:
        return None, "uplift: skipped (node is not on PATH; mcp-uplift runs on Node >= 20)"
    if not os.path.isfile(path):
        return None, f"uplift: skipped ({path} is not a file; point at its src/cli.js)"
    command = [node, os.path.abspath(path)]
    problem = wrong_answers(command)
    if problem:
        return None, f"uplift: skipped (its answers are wrong for this benchmark: {problem})"
    return command, "uplift: mcp-uplift at " + path + " answers correctly; run beside B"


def wrong_answers(uplift: list[str]) -> str:
    """What is wrong with mcp-uplift's answers to the benchmark's modern client ('' if
    nothing): its numbers mean something only if it does the whole of B's job."""
    driver = Driver([*uplift, "--", *server("legacy")], "modern")
    # A bridge that never answers would hang the benchmark: killed, its output ends, and the
    # driver's read fails instead.
    watchdog = threading.Timer(CHECK_TIMEOUT, driver.proc.kill)
    watchdog.start()
    try:
        driver.open()
        echo = driver.call("tools/call", ECHO)
        if echo.get("resultType") != "complete" or echo["content"][0]["text"] != "hello, bridge":
            return f"tools/call echo answered {echo}"
        size = len(driver.call("tools/call", blob_params(70000))["content"][0]["text"])
        if size != 70000:
            return f"a 70000-byte blob came back with {size} bytes"
        ask: Message = {"name": "ask", "arguments": {}}
        first = driver.call("tools/call", ask, ELICITATION)
        keys = list(first.get("inputRequests") or {})
        if first.get("resultType") != "input_required" or len(keys) != 1:
            return f"the elicitation did not become one input_required round: {first}"
        retry = {**ask, "inputResponses": {keys[0]: ACCEPT},
                 "requestState": first.get("requestState")}
        last = driver.call("tools/call", retry, ELICITATION)
        if last.get("resultType") != "complete" or last["content"][0]["text"] != "asked":
            return f"the retry with the elicitation's answer got {last}"
    except (ProtocolFailure, KeyError, IndexError, TypeError, OSError) as exc:
        late = "" if watchdog.is_alive() else f" (no answer within {CHECK_TIMEOUT:g} s)"
        return f"{type(exc).__name__}: {exc}{late}"
    finally:
        watchdog.cancel()
        driver.close()
    return ""


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="less load, 3 repetitions")
    parser.add_argument("--reps", type=int, help="repetitions (default 3 quick, 7 full)")
    parser.add_argument("--uplift", metavar="CLI", default=os.environ.get(
        "MCP_ROSETTA_BENCH_UPLIFT"), help="mcp-uplift's src/cli.js, to run beside B "
        "(default: $MCP_ROSETTA_BENCH_UPLIFT; skipped without it)")
    parser.add_argument("--installed", metavar="VENV", help="run the servers, relays and "
                        "bridge of VENV, where `pip install .` put the bridge (default: this "
                        "checkout's, with this interpreter)")
    args = parser.parse_args(argv)
    reps = args.reps or (3 if args.quick else 7)
    if args.installed:
        installed(args.installed)
    compile_bridge()
    uplift, said = uplift_command(args.uplift)
    print(said, file=sys.stderr, flush=True)
    runs = run_all(reps, QUICK if args.quick else FULL, uplift)
    rows = {name: pool(figures) for name, figures in runs.items()}
    print(f"mcp-rosetta benchmark: {reps} interleaved repetitions, {os.cpu_count()} cores, "
          f"Python {sys.version.split()[0]}, {time.strftime('%Y-%m-%d')}"
          + (f", installed in {args.installed}" if args.installed else "") + "\n")
    print(table(rows))
    print(f"\n{said}")
    results = checks(rows)
    print("\ntargets (ratios to baselines measured in this run):")
    for check in results:
        print(f"  {check}")
    print()
    print(summary(rows, results))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
