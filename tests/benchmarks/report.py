"""The benchmark's verdict: figures pooled over repetitions, ratios to baselines, targets, summary.

Must not run anything: it is given every repetition's Figures per configuration and prints.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import dataclass

from clients import Figures

MIB = 1024.0


@dataclass
class Row:
    """One configuration's figures over all repetitions (µs, calls/s, ms, KiB)."""

    p50: float
    p99: float
    tput: float
    blob_64k: float
    blob_1m: float
    startup: float
    mrtr: float
    rss_kib: int


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def pool(runs: list[Figures]) -> Row:
    """Latency percentiles over every sample; medians of the per-run figures; the worst RSS."""
    latencies = [x for run in runs for x in run.latencies]

    def med(get: Callable[[Figures], float]) -> float:
        return statistics.median(get(run) for run in runs)

    return Row(p50=percentile(latencies, 0.50) * 1e6, p99=percentile(latencies, 0.99) * 1e6,
               tput=med(lambda r: r.throughput), blob_64k=med(lambda r: r.blob_64k) * 1e3,
               blob_1m=med(lambda r: r.blob_1m) * 1e3, startup=med(lambda r: r.startup) * 1e3,
               mrtr=med(lambda r: r.ask - r.plain) * 1e6,
               rss_kib=max(run.rss_kib for run in runs))


# mode -> (its line-relay baseline, its fast-codec relay, direct): the relays and direct runs
# use the client's era, so the client sends exactly the same requests.
BASELINES = {
    "A": ("json-legacy", "orjson-legacy", "direct-legacy"),
    "B": ("json-modern", "orjson-modern", "direct-modern"),
    "P-legacy": ("json-legacy", "orjson-legacy", "direct-legacy"),
    "P-modern": ("json-modern", "orjson-modern", "direct-modern"),
}
HEADER = ("config", "p50 µs", "p99 µs", "calls/s", "64KiB ms", "1MiB ms", "start ms",
          "MRTR +µs", "RSS MiB", "p50 xjson", "tput xjson")


def client_era(config: str) -> str:
    return "legacy" if config == "A" or config.endswith("legacy") else "modern"


def table(rows: dict[str, Row]) -> str:
    """A Markdown table; ratios are to the stdlib line relay of the same client era."""
    lines = ["| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
    for name, row in rows.items():
        base = rows["json-" + client_era(name)]
        cells = [name, f"{row.p50:.0f}", f"{row.p99:.0f}", f"{row.tput:.0f}",
                 f"{row.blob_64k:.2f}", f"{row.blob_1m:.2f}", f"{row.startup:.0f}",
                 f"{row.mrtr:.0f}", f"{row.rss_kib / MIB:.1f}",
                 f"{row.p50 / base.p50:.2f}", f"{row.tput / base.tput:.2f}"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


@dataclass
class Check:
    """One target for one mode: the measured value, the bound, and whether it is met."""

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
        return f"{self.mode:9} {self.name:26} {self.value:9.2f} {sign} {self.bound:<6g} {verdict}"


# The targets, from the project's performance issue: ratios to baselines of the same run.
P50_MAX = 1.0  # x the stdlib line relay (A, B)
P99_MAX = 1.5
TPUT_MIN = 1.0  # x the stdlib line relay (A, B)
TPUT_ORJSON_MIN = 0.9  # x the orjson relay (pass-through)
START_MAX_MS = 150  # over direct
RSS_MAX_MIB = 36
BLOB_1M_MAX = 1.0  # x the stdlib line relay


def checks(rows: dict[str, Row]) -> list[Check]:
    """The targets, for every bridge mode that ran."""
    out: list[Check] = []
    for mode, (line, fast, direct) in BASELINES.items():
        if mode not in rows:
            continue
        row, base = rows[mode], rows[line]
        if mode in ("A", "B"):
            out += [Check(mode, "p50 x line relay", row.p50 / base.p50, P50_MAX, True),
                    Check(mode, "p99 x line relay", row.p99 / base.p99, P99_MAX, True),
                    Check(mode, "throughput x line relay", row.tput / base.tput, TPUT_MIN,
                          False)]
        else:
            out.append(Check(mode, "throughput x orjson relay", row.tput / rows[fast].tput,
                             TPUT_ORJSON_MIN, False))
        out += [Check(mode, "startup - direct (ms)", row.startup - rows[direct].startup,
                      START_MAX_MS, True),
                Check(mode, "peak RSS (MiB)", row.rss_kib / MIB, RSS_MAX_MIB, True),
                Check(mode, "1 MiB result x line relay", row.blob_1m / base.blob_1m,
                      BLOB_1M_MAX, True)]
    return out


def summary(rows: dict[str, Row], results: list[Check]) -> str:
    """One line a script can diff across commits."""
    parts = ["BENCH"]
    for mode, (line, fast, direct) in BASELINES.items():
        if mode not in rows:
            continue
        row, base = rows[mode], rows[line]
        parts.append(
            f"{mode}:p50={row.p50 / base.p50:.2f}x,p99={row.p99 / base.p99:.2f}x,"
            f"tput={row.tput / base.tput:.2f}x,start=+{row.startup - rows[direct].startup:.0f}ms,"
            f"rss={row.rss_kib / MIB:.1f}MiB,1m={row.blob_1m / base.blob_1m:.2f}x,"
            f"mrtr={row.mrtr:.0f}us" + (
                "" if mode in ("A", "B") else f",tput_orjson={row.tput / rows[fast].tput:.2f}x")
            + ("," + versus(row, rows["uplift"], "uplift") if mode == "B" and "uplift" in rows
               else ""))
    parts.append(f"met={sum(c.met for c in results)}/{len(results)}")
    return " ".join(parts)


def versus(row: Row, other: Row, name: str) -> str:
    """`row` over `other`, figure by figure: under 1 for p50, p99, start, RSS and MRTR, or over 1
    for calls/s, means `row` is the better."""
    return (f"p50_vs_{name}={row.p50 / other.p50:.2f}x,p99_vs_{name}={row.p99 / other.p99:.2f}x,"
            f"tput_vs_{name}={row.tput / other.tput:.2f}x,"
            f"start_vs_{name}={row.startup / other.startup:.2f}x,"
            f"rss_vs_{name}={row.rss_kib / other.rss_kib:.2f}x,"
            f"mrtr_vs_{name}={row.mrtr / other.mrtr:.2f}x")
