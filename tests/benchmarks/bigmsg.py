"""Big results alone: `python tests/benchmarks/bigmsg.py [--reps N] [--sizes 1,64] [--baseline D]`.

Must not assert anything: it times one `tools/call` returning that many MiB of text through
the byte relay and each mode, interleaved (rotating the order) in the same run, and prints the
median round trip in ms and its ratio to the byte relay of the client's era, plus each
process's peak RSS.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

from bench import PY, RELAY, compile_bridge, server
from clients import Driver, blob_params


def configurations(baseline: str | None) -> dict[str, tuple[list[str], str]]:
    """name -> (command, the client's era); with `baseline` (a checkout of another commit),
    each mode again as "mode@base", run from there, in the same interleaved run."""
    configs = {
        "byte-legacy": ([PY, RELAY, "byte", "--", *server("legacy")], "legacy"),
        "byte-modern": ([PY, RELAY, "byte", "--", *server("modern")], "modern"),
    }
    trees = {"": []} if baseline is None else {"": [], "@base": ["env", f"PYTHONPATH={baseline}"]}
    for suffix, prefix in trees.items():
        bridge = [*prefix, PY, "-m", "bridge", "--log-level", "warning", "--max-message-bytes",
                  str(1 << 30), "--"]
        configs[f"A{suffix}"] = ([*bridge, *server("modern")], "legacy")
        configs[f"B{suffix}"] = ([*bridge, *server("legacy")], "modern")
        configs[f"P-legacy{suffix}"] = ([*bridge, *server("legacy")], "legacy")
        configs[f"P-modern{suffix}"] = ([*bridge, *server("modern")], "modern")
    return configs


def cpu_seconds(pid: int) -> float:
    """User and system CPU the process has used (/proc/PID/stat utime + stime)."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run(command: list[str], era: str, size: int, count: int) -> tuple[float, float, float]:
    """Median seconds of `count` calls returning `size` bytes, the CPU seconds per call of
    the process in the middle (less at the mercy of a busy machine), and its peak RSS."""
    driver = Driver(command, era)
    try:
        driver.open()
        driver.timed(blob_params(size))  # warm: the server builds its blob once
        cpu = cpu_seconds(driver.proc.pid)
        median = statistics.median(driver.timed(blob_params(size)) for _ in range(count))
        cpu = (cpu_seconds(driver.proc.pid) - cpu) / count
        rss = driver.peak_rss_kib() / 1024
    finally:
        driver.close()
    return median, cpu, rss


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--sizes", default="1,64", help="MiB, comma-separated")
    parser.add_argument("--baseline", help="a checkout of the commit to compare with")
    args = parser.parse_args(argv)
    compile_bridge()
    configs = configurations(args.baseline)
    names = list(configs)
    for mib in (int(s) for s in args.sizes.split(",")):
        count = 40 if mib <= 1 else 2
        times: dict[str, list[float]] = {name: [] for name in names}
        cpus: dict[str, list[float]] = {name: [] for name in names}
        peaks: dict[str, float] = {name: 0.0 for name in names}
        for rep in range(args.reps):
            for name in names[rep % len(names):] + names[:rep % len(names)]:
                elapsed, cpu, rss = run(*configs[name], mib << 20, count)
                times[name].append(elapsed)
                cpus[name].append(cpu)
                peaks[name] = max(peaks[name], rss)
        print(f"{mib} MiB result, {args.reps} interleaved repetitions, "
              f"{time.strftime('%Y-%m-%d %H:%M')}")
        for name in names:
            median = statistics.median(times[name])
            era = configs[name][1]
            relay = statistics.median(times[f"byte-{era}"])
            cpu = statistics.median(cpus[name])
            print(f"  {name:12} {median * 1e3:9.2f} ms  {median / relay:5.2f}x byte-{era}"
                  f"  CPU {cpu * 1e3:8.2f} ms per call  peak RSS {peaks[name]:7.1f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
