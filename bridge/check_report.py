"""What `mcp-rosetta check` found out about a server, and how it is shown: 80 columns or JSON.

Must not start or talk to anything (bridge/shell/check.py does): it only holds and formats.
"""

from __future__ import annotations

import json
import shlex
import textwrap
from dataclasses import asdict, dataclass, field
from typing import Any

from bridge.core.eras import MODERN_PROTOCOL_VERSION, Era

LISTS = ("tools", "prompts", "resources")
WIDTH = 80
LABEL = 14
# The mode each client era gets, by the server's era (the table in README §What it does).
MODES: dict[Era, dict[str, str]] = {
    "modern": {"legacy": "A", "modern": "P"},
    "legacy": {"legacy": "P", "modern": "B"},
}
MODE_WORDS = {"A": "translated", "B": "translated", "P": "relayed"}


@dataclass(frozen=True, slots=True)
class Listing:
    """What one `*/list` gave, all pages followed up to a bound."""

    count: int = 0
    complete: bool = True
    """False when the pages did not end within the bound (count is then a lower bound)."""
    error: str | None = None


@dataclass(frozen=True, slots=True)
class Report:
    command: tuple[str, ...]
    options: tuple[str, ...] = ()
    """The options given that change the verdict (`--server-era modern`, `--url URL`)."""
    era: Era | None = None
    era_reason: str = ""
    """How the era was found: "answered server/discover", "pinned", ..."""
    dual: bool = False
    """A modern server that also answered `initialize` (in a process of its own)."""
    modern_versions: tuple[str, ...] = ()
    legacy_version: str | None = None
    """The revision `initialize` negotiated."""
    server_info: dict[str, Any] | None = None
    capabilities: dict[str, Any] = field(default_factory=dict)
    lists: dict[str, Listing] = field(default_factory=dict)
    first_byte_ms: float | None = None
    """From the start of the process to the first byte on its stdout."""
    answer_ms: float | None = None
    """From the start of the process to the answer that settled its era."""
    noise: tuple[str, ...] = ()
    """The first lines on stdout that are not protocol messages."""
    noise_count: int = 0
    stderr_tail: tuple[str, ...] = ()
    remembered: dict[str, Any] | None = None
    """How the server named itself when the bridge learned it is legacy: the bridge then
    skips the probe at its start; None: nothing remembered."""
    memory_file: str | None = None
    forgotten: str | None = None
    """Why check forgot what was remembered (the server answers otherwise now)."""
    notes: tuple[str, ...] = ()
    """What costs the user something at each start though it works, with what to do."""
    failure: str | None = None
    """Why the bridge cannot serve this server, with what to do; None if it can."""

    @property
    def servable(self) -> bool:
        return self.failure is None and self.era is not None

    def modes(self) -> dict[str, str]:
        return dict(MODES[self.era]) if self.era is not None else {}


def as_json(report: Report) -> str:
    data = asdict(report)
    data["servable"] = report.servable
    data["modes"] = report.modes()
    return json.dumps(data, ensure_ascii=False)


def as_text(report: Report) -> str:
    # The whole command, wrapped: a header cut short hides the arguments that differ.
    words = [*report.options, *(("--", *report.command) if report.command else ())]
    lines = textwrap.wrap(f"mcp-rosetta check {shlex.join(words)}", WIDTH,
                          subsequent_indent="    ", break_on_hyphens=False)
    for label, value in _rows(report):
        lines += _row(label, value)
    if report.stderr_tail and not report.servable:
        lines.append("  stderr (its last lines):")
        lines += [_cut("    " + line) for line in report.stderr_tail]
    verdict = ("ok: mcp-rosetta can serve it" if report.servable
               else f"cannot serve it: {report.failure}")
    lines += textwrap.wrap(verdict, WIDTH, subsequent_indent="  ", break_on_hyphens=False)
    return "\n".join(lines)


def _rows(report: Report) -> list[tuple[str, str]]:
    if report.era is None and report.first_byte_ms is None and not report.stderr_tail:
        return []  # it never ran, or said nothing: the verdict says all there is
    rows = [("server", _server(report.server_info)), ("era", _era(report))]
    if report.servable:  # what it offers, and to whom, once it is known to answer
        rows += [("capabilities", ", ".join(sorted(report.capabilities)) or "none"),
                 ("offers", _offers(report.lists))]
    rows.append(("started", _timing(report)))
    if report.command:  # a remote server has no stdout of its own
        rows.append(("stdout", _noise(report)))
    if report.remembered is not None:
        rows.append(("remembered", _remembered(report)))
    rows += [("note", note) for note in report.notes]
    if report.servable:
        modes = report.modes()
        rows.append(("modes", ", ".join(
            f"{era} client: {m} ({MODE_WORDS[m]})" for era, m in modes.items())))
    return rows


def _row(label: str, value: str) -> list[str]:
    return textwrap.wrap(value, WIDTH, initial_indent=f"  {label:<{LABEL}}",
                         subsequent_indent=" " * (LABEL + 2), break_on_hyphens=False) or [
        f"  {label}"]


def _cut(line: str) -> str:
    return line if len(line) <= WIDTH else line[: WIDTH - 1] + "…"


def _server(info: dict[str, Any] | None) -> str:
    if not info:
        return "(not named)"
    return " ".join(str(info[k]) for k in ("name", "version") if info.get(k))


def _era(report: Report) -> str:
    if report.era is None:
        return "unknown"
    if report.era == "modern":
        versions = ", ".join(report.modern_versions) or MODERN_PROTOCOL_VERSION
        text = f"modern ({versions}), {report.era_reason}"
        if report.dual:
            text += f"; dual-era: also answers initialize ({report.legacy_version})"
        return text
    return f"legacy ({report.legacy_version or 'no initialize'}), {report.era_reason}"


def _remembered(report: Report) -> str:
    named = _server(report.remembered)
    if report.forgotten is not None:
        return f"legacy ({named}), forgotten now: {report.forgotten}"
    return (f"legacy ({named}): the bridge skips the probe at start; to forget it, delete "
            f"{report.memory_file} (or set remember_era = false)")


def _offers(lists: dict[str, Listing]) -> str:
    parts = []
    for name in LISTS:
        listing = lists.get(name)
        if listing is None:
            parts.append(f"no {name}")
        elif listing.error is not None:
            parts.append(f"{name}: {listing.error}")
        else:
            more = "" if listing.complete else "+"
            noun = name if listing.count != 1 else name[:-1]
            parts.append(f"{listing.count}{more} {noun}")
    return ", ".join(parts)


def _timing(report: Report) -> str:
    first = _ms(report.first_byte_ms)
    answer = _ms(report.answer_ms)
    return f"first byte after {first}, first answer after {answer}"


def _ms(value: float | None) -> str:
    if value is None:
        return "(none)"
    return f"{value:.0f} ms" if value < 1000 else f"{value / 1000:.1f} s"


def _noise(report: Report) -> str:
    if not report.noise_count:
        return "only protocol messages"
    what = "1 line" if report.noise_count == 1 else f"{report.noise_count} lines"
    return f"{what} not protocol (the bridge drops such lines): {' | '.join(report.noise)}"
