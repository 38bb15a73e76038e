"""check's report as people and machines read it: 80 columns, and JSON with the verdict."""

from __future__ import annotations

import json

from bridge.check_report import Listing, Report, as_json, as_text

LONG = "x" * 300


def test_every_line_fits_80_columns_however_long_the_values() -> None:
    report = Report(("server", LONG), era="modern", era_reason="answered server/discover",
                    dual=True, modern_versions=("2026-07-28",), legacy_version="2025-11-25",
                    server_info={"name": LONG, "version": "1"},
                    capabilities={f"cap{i}": {} for i in range(30)},
                    lists={"tools": Listing(3), "prompts": Listing(1, complete=False),
                           "resources": Listing(0, error="error -32601: " + LONG)},
                    first_byte_ms=1234.5, answer_ms=12.0, noise=(LONG, "b"), noise_count=7)
    lines = as_text(report).splitlines()
    assert max(map(len, lines)) <= 80
    text = " ".join(line.strip() for line in lines)
    assert "3 tools, 1+ prompt, resources: error -32601" in text
    assert "first byte after 1.2 s, first answer after 12 ms" in text
    assert "7 lines not protocol" in text
    assert lines[-1] == "ok: mcp-rosetta can serve it"


def test_a_failed_report_shows_the_stderr_tail_and_the_cause() -> None:
    report = Report(("srv",), stderr_tail=("Traceback (most recent call last):", LONG),
                    first_byte_ms=None, failure="the server exited (status 1) before it "
                    "answered initialize: see its stderr, or run it by itself")
    lines = as_text(report).splitlines()
    assert lines[:4] == ["mcp-rosetta check -- srv", "  server        (not named)",
                         "  era           unknown",
                         "  started       first byte after (none), first answer after (none)"]
    assert lines[5:7] == ["  stderr (its last lines):", "    Traceback (most recent call last):"]
    assert lines[7] == "    " + "x" * 75 + "…"
    assert lines[-2:] == ["cannot serve it: the server exited (status 1) before it answered "
                          "initialize: see", "  its stderr, or run it by itself"]


def test_a_command_that_never_ran_gets_the_cause_alone() -> None:
    report = Report(("nope",), failure="server command not found: nope")
    assert as_text(report) == ("mcp-rosetta check -- nope\n"
                               "cannot serve it: server command not found: nope")


def test_json_carries_the_verdict_and_the_modes() -> None:
    legacy = json.loads(as_json(Report(("srv",), era="legacy", legacy_version="2025-06-18")))
    assert (legacy["servable"], legacy["modes"]) == (True, {"legacy": "P", "modern": "B"})
    failed = json.loads(as_json(Report(("srv",), era="legacy", failure="no answer")))
    assert (failed["servable"], failed["failure"]) == (False, "no answer")


def test_the_header_shows_the_whole_command_wrapped() -> None:
    command = ("npx", "-y", "@modelcontextprotocol/server-everything", "--flag-one",
               "--flag-two", "--the-argument-that-differs")
    header = as_text(Report(command=command, failure="x")).split("\ncannot serve it")[0]
    assert "--the-argument-that-differs" in header and "…" not in header
    assert all(len(line) <= 80 for line in header.splitlines())


def test_the_header_keeps_the_options_that_change_the_verdict() -> None:
    report = Report(("npx", "-y", "server-everything"), options=("--server-era", "modern"),
                    failure="pinned wrong")
    assert as_text(report).splitlines()[0] == (
        "mcp-rosetta check --server-era modern -- npx -y server-everything")


def test_a_note_says_what_a_start_costs_and_the_fix() -> None:
    report = Report(("srv",), era="legacy", legacy_version="2025-06-18",
                    era_reason="no answer to server/discover in 5 s",
                    notes=("each start waits 5 s: --server-era legacy skips the probe",))
    text = as_text(report)
    assert "  note          each start waits 5 s: --server-era legacy skips the probe" in text
    assert text.endswith("ok: mcp-rosetta can serve it")


def test_a_remote_servers_header_is_its_url_and_it_has_no_stdout_row() -> None:
    report = Report((), options=("--url", "https://mcp.example.com/mcp"), era="modern",
                    era_reason="answered server/discover")
    text = as_text(report)
    assert text.splitlines()[0] == "mcp-rosetta check --url https://mcp.example.com/mcp"
    assert "  stdout" not in text and "  started" in text
