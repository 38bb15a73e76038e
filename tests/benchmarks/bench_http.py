"""The HTTP benchmark: `python tests/benchmarks/bench_http.py [--quick] [--reps N]`.

Must not assert anything or run under pytest: it starts each front in turn on a free port,
rotating the order every repetition so a noisy machine spreads its noise evenly, drives it
with `httpload.py`'s keep-alive client (1 call in flight, then 8 and 32 over as many
connections), and prints the table, the targets met or missed, and one `BENCH ...` line of
ratios measured in the same run. The fronts, all before `servers.py` (no SDK):

- front-B / front-P: `mcp-rosetta serve --listen http://…` in front of the legacy (mode B) or
  the modern (mode P) server, a 2026-07-28 client;
- sg-modern: supergateway 4 in front of the modern server, the same 2026-07-28 client (it
  starts one server child per request: the same job as front-P, done its way);
- sg-session: supergateway 4 in front of the legacy server with a 2025-11-25 client on one
  session (one child for the session): supergateway's fastest way to the server front-B serves;
- h11: `httpfloor.py`, h11 on trio answering the same JSON with no bridge behind it (the cost
  of HTTP itself in Python).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shlex
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import IO

from httpload import Load, LoadFailure, TreeRss, open_session

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "e2e"))
import venvs  # noqa: E402  (tests/e2e: installs supergateway once, in its cache)

PY = sys.executable
SERVER = os.path.join(HERE, "servers.py")
FLOOR = os.path.join(HERE, "httpfloor.py")
START_TIMEOUT = 60.0
WINDOWS = (8, 32)  # calls in flight, over as many keep-alive connections


@dataclass(frozen=True, slots=True)
class Front:
    """How to start one front on a port, and the era of the client it is driven with."""

    command: Callable[[int], list[str]]
    era: str
    spawns: bool = False  # one server process per request: less load, or a run takes hours
    cwd: str = ROOT  # `python -m bridge` imports the bridge/ found here first


def bridge(era: str) -> Callable[[int], list[str]]:
    """The front before the `era` server, from the `bridge/` of the directory it starts in."""
    return lambda port: [PY, "-m", "bridge", "serve", "--listen",
                         f"http://127.0.0.1:{port}/mcp", "--log-level", "warning", "--",
                         PY, SERVER, era]


def supergateway(era: str) -> Callable[[int], list[str]]:
    """As conformance_suite.relay_front runs it; installed (once, needing npm) when first run."""
    return lambda port: [*venvs.published_server("supergateway"), "--stdio",
                         shlex.join([PY, SERVER, era]), "--outputTransport", "streamableHttp",
                         "--stateful", "--port", str(port), "--logLevel", "none"]


def fronts(baseline: str | None = None) -> dict[str, Front]:
    """Every front by name; with `baseline` (a checkout of another commit), its front-B and
    front-P beside this one's, as `front-B@base` and `front-P@base`."""
    before = {} if baseline is None else {
        "front-B@base": Front(bridge("legacy"), "modern", cwd=baseline),
        "front-P@base": Front(bridge("modern"), "modern", cwd=baseline)}
    return {
        "front-B": Front(bridge("legacy"), "modern"),
        "front-P": Front(bridge("modern"), "modern"),
        **before,
        "sg-modern": Front(supergateway("modern"), "modern", spawns=True),
        "sg-session": Front(supergateway("legacy"), "legacy"),
        "h11": Front(lambda port: [PY, FLOOR, str(port)], "modern"),
    }


@dataclass(frozen=True, slots=True)
class Counts:
    """How many calls one run makes, per phase."""

    warmup: int
    sequential: int
    concurrent: int  # per window

    def capped(self, cap: Counts) -> Counts:
        """These counts, none above `cap`'s."""
        return Counts(min(self.warmup, cap.warmup), min(self.sequential, cap.sequential),
                      min(self.concurrent, cap.concurrent))


QUICK = Counts(warmup=100, sequential=600, concurrent=2000)
FULL = Counts(warmup=200, sequential=2000, concurrent=6000)
SPAWNING = Counts(warmup=4, sequential=40, concurrent=96)  # a Python start per call
SMOKE = Counts(warmup=2, sequential=10, concurrent=16)


@dataclass(slots=True)
class Figures:
    """One run of one front: seconds per call, calls/s per window, KiB."""

    latencies: list[float] = field(default_factory=list)
    tput: dict[int, float] = field(default_factory=dict)
    loaded: dict[int, list[float]] = field(default_factory=dict)
    rss_kib: int = 0  # the whole process tree (the front, its children, their servers)
    own_rss_kib: int = 0  # the process started alone


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextlib.contextmanager
def started(front: Front) -> Iterator[tuple[int, int]]:
    """The front running on a free port: (port, pid); stopped with its process group after."""
    port = free_port()
    command = front.command(port)
    with tempfile.TemporaryFile() as log:
        proc = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=log, cwd=front.cwd,
                                stderr=subprocess.STDOUT, start_new_session=True)
        try:
            wait_listening(proc, port, log)
            yield port, proc.pid
        finally:
            stop(proc)


def wait_listening(proc: subprocess.Popen[bytes], port: int, log: IO[bytes]) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while True:
        if proc.poll() is not None:
            log.seek(0)
            raise LoadFailure(f"{shlex.join(map(str, proc.args))} exited ({proc.returncode}) "
                              f"before listening: {log.read()[-2000:].decode(errors='replace')}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 1):
            return
        if time.monotonic() > deadline:
            raise LoadFailure(f"nothing listens on {port} after {START_TIMEOUT:g} s")
        time.sleep(0.05)


def stop(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM to the front's own process group (it and the servers it started), then KILL."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    with contextlib.suppress(ProcessLookupError):  # a child that outlived its parent
        os.killpg(proc.pid, signal.SIGKILL)


def measure(front: Front, counts: Counts) -> Figures:
    """Start `front`, run every phase against it, stop it."""
    figures = Figures()
    with started(front) as (port, pid), TreeRss(pid) as rss:
        wire = open_session(port, front.era)
        one = Load(wire, 1)
        try:
            one.run(counts.warmup)
            figures.latencies, _ = one.run(counts.sequential)
        finally:
            one.close()
        for window in WINDOWS:
            many = Load(wire, window)
            try:
                many.run(min(counts.concurrent, 2 * window))  # the connections' first calls
                figures.loaded[window], figures.tput[window] = many.run(counts.concurrent)
            finally:
                many.close()
    figures.rss_kib, figures.own_rss_kib = rss.peak_kib, rss.own_peak_kib
    return figures


def run_all(reps: int, counts: Counts, only: list[str] | None = None,
            baseline: str | None = None) -> dict[str, list[Figures]]:
    configs = {name: front for name, front in fronts(baseline).items()
               if not only or name.partition("@")[0] in only}  # NAME keeps NAME@base
    names = list(configs)
    runs: dict[str, list[Figures]] = {name: [] for name in names}
    for rep in range(reps):
        order = names[rep % len(names):] + names[:rep % len(names)]
        begun = time.perf_counter()
        for name in order:
            front = configs[name]
            runs[name].append(measure(front, counts.capped(SPAWNING) if front.spawns
                                      else counts))
        print(f"repetition {rep + 1}/{reps}: {time.perf_counter() - begun:.1f} s",
              file=sys.stderr, flush=True)
    return runs


# --- the verdict --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Row:
    """One front over every repetition: µs, calls/s, ms, MiB."""

    p50: float
    p99: float
    tput: dict[int, float]
    p50_loaded: dict[int, float]
    rss_mib: float
    own_rss_mib: float


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def pool(runs: list[Figures]) -> Row:
    """Latency percentiles over every sample; medians of the per-run rates; the worst RSS."""
    latencies = [x for run in runs for x in run.latencies]
    return Row(p50=percentile(latencies, 0.5) * 1e6, p99=percentile(latencies, 0.99) * 1e6,
               tput={w: statistics.median(run.tput[w] for run in runs) for w in WINDOWS},
               p50_loaded={w: percentile([x for run in runs for x in run.loaded[w]], 0.5) * 1e3
                           for w in WINDOWS},
               rss_mib=max(run.rss_kib for run in runs) / 1024,
               own_rss_mib=max(run.own_rss_kib for run in runs) / 1024)


def table(rows: dict[str, Row]) -> str:
    header = ["front", "p50 µs", "p99 µs",
              *(f"calls/s @{w}" for w in WINDOWS), *(f"p50 ms @{w}" for w in WINDOWS),
              "RSS MiB (tree)", "RSS MiB (top process)"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for name, row in rows.items():
        cells = [name, f"{row.p50:.0f}", f"{row.p99:.0f}",
                 *(f"{row.tput[w]:.0f}" for w in WINDOWS),
                 *(f"{row.p50_loaded[w]:.2f}" for w in WINDOWS), f"{row.rss_mib:.1f}",
                 f"{row.own_rss_mib:.1f}"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


# The targets, against supergateway in the same run.
P50_MAX = 0.5
TPUT_MIN = 3.0
RSS_MAX = 0.5
MANY = WINDOWS[-1]


@dataclass(frozen=True, slots=True)
class Check:
    mode: str
    name: str
    value: float
    bound: float
    at_most: bool

    @property
    def met(self) -> bool:
        return self.value <= self.bound if self.at_most else self.value >= self.bound

    def __str__(self) -> str:
        sign = "<=" if self.at_most else ">="
        verdict = "met" if self.met else "MISSED"
        return f"{self.mode:8} {self.name:28} {self.value:8.3f} {sign} {self.bound:<4g} {verdict}"


def ratios(row: Row, other: Row) -> dict[str, float]:
    """`row` over `other`: below 1 is `row`'s advantage except for throughput."""
    return {"p50": row.p50 / other.p50, "p99": row.p99 / other.p99,
            **{f"tput{w}": row.tput[w] / other.tput[w] for w in WINDOWS},
            "rss": row.rss_mib / other.rss_mib}


def checks(rows: dict[str, Row]) -> list[Check]:
    out = []
    for mode in ("front-B", "front-P"):
        for sg in ("sg-modern", "sg-session"):
            if mode not in rows or sg not in rows:
                continue
            r = ratios(rows[mode], rows[sg])
            out += [Check(mode, f"p50 x {sg}", r["p50"], P50_MAX, True),
                    Check(mode, f"calls/s x{MANY} x {sg}", r[f"tput{MANY}"], TPUT_MIN, False),
                    Check(mode, f"RSS x {sg}", r["rss"], RSS_MAX, True)]
    return out


def summary(rows: dict[str, Row], results: list[Check]) -> str:
    parts = ["BENCH-HTTP"]
    for mode in ("front-B", "front-P"):
        if mode not in rows:
            continue
        fields = [f"p50={rows[mode].p50:.0f}us", f"tput{MANY}={rows[mode].tput[MANY]:.0f}/s",
                  f"rss={rows[mode].rss_mib:.1f}MiB"]
        others = {"sg-modern": "sg-modern", "sg-session": "sg-session", "h11": "h11",
                  "base": f"{mode}@base"}
        for label, other in others.items():
            if other in rows:
                fields += [f"{k}_vs_{label}={v:.3g}x"
                           for k, v in ratios(rows[mode], rows[other]).items()]
        parts.append(f"{mode}:" + ",".join(fields))
    parts.append(f"met={sum(c.met for c in results)}/{len(results)}")
    return " ".join(parts)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="less load, 3 repetitions")
    parser.add_argument("--reps", type=int, help="repetitions (default 3 quick, 5 full)")
    parser.add_argument("--only", action="append", choices=list(fronts()),
                        help="run only this front (and its @base; repeatable)")
    parser.add_argument("--baseline", metavar="DIR", help="a checkout of another commit: "
                        "its front-B and front-P run beside this one's (as NAME@base)")
    args = parser.parse_args(argv)
    reps = args.reps or (3 if args.quick else 5)
    import bench  # its byte-compilation of the bridge, as an installed bridge has

    bench.compile_bridge()
    if args.baseline:  # compiled too, or its every start would compile it (and weigh more)
        import compileall

        compileall.compile_dir(os.path.join(args.baseline, "bridge"), quiet=1)
    runs = run_all(reps, QUICK if args.quick else FULL, args.only, args.baseline)
    rows = {name: pool(figures) for name, figures in runs.items()}
    print(f"mcp-rosetta HTTP benchmark: {reps} interleaved repetitions, {os.cpu_count()} "
          f"cores, Python {sys.version.split()[0]}, {time.strftime('%Y-%m-%d')}\n")
    print(table(rows))
    results = checks(rows)
    print("\ntargets (ratios to supergateway in this run):")
    for result in results:
        print(f"  {result}")
    print()
    print(summary(rows, results))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
