"""The check table of the legacy → modern cell, for any relay a legacy stdio client can launch
against a modern-only Streamable HTTP server: `mcp-rosetta --url` or `mcp-remote --protocol
auto`. Shared by tests/e2e/test_remote_vs_mcp_remote.py (which asserts the outcomes) and
tests/benchmarks/bench_remote.py (which prints them beside the timings).

Must not judge one relay by another's words: each check reads only what the legacy client
(peers/legacy_client.py, mcp 1.x; peers/conformance_client.py for the TypeScript server's tour)
received and what the server counted, the same facts test_remote.py's cells check, cut into
named pieces so a table can say which piece a relay passes. Every server is started afresh for
each run (the notify scenario adds a tool to it; restart kills it).
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import checks
import remote_peers
import venvs
from remote_peers import free_port

TOUR_TIMEOUT = 120
MODERN_PREFIX = "io.modelcontextprotocol/"

Report = dict[str, Any]
Relay = Callable[[str], list[str]]
"""A relay's command for a server URL."""


def mcp_rosetta(python: str) -> Relay:
    return lambda url: [python, "-m", "bridge", "--url", url]


def mcp_remote() -> Relay:
    """mcp-remote as its README names the dual-era mode: `--protocol auto`, and
    `--transport http-only` (Streamable HTTP, no fallback to the old SSE transport)."""
    program = str(venvs.npm_client("mcp-remote") / "node_modules" / ".bin" / "mcp-remote")
    return lambda url: [program, url, "--protocol", "auto", "--transport", "http-only"]


# --- the checks -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Check:
    """One row of the table: the run it reads (a legacy_client scenario, or "tour") and the
    assertion over that run's report."""

    name: str
    run: str
    holds: Callable[[Report], None]


def _listed(report: Report) -> None:
    assert {"echo", "add", "slow"} <= set(report["tools:names"]), report["tools:names"]


def _called(report: Report) -> None:
    assert checks.text_of(report["call:echo"]) == "hi"
    assert report["call:add"]["structuredContent"]["sum"] == 5


def _progress(report: Report) -> None:
    assert checks.text_of(report["call:slow"]) == "done 3"
    assert [(p["progress"], p["total"]) for p in report["progress"]] == [(1, 3), (2, 3), (3, 3)]


def _cancelled(report: Report) -> None:
    # The client's notifications/cancelled must reach the server: over 2026-07-28 HTTP that
    # means closing the call's stream (the server's `stats` tool counts what it saw).
    checks.check_cancelled(report)
    assert report["cancel"]["request_id"] is not None
    assert report["call:stats"]["structuredContent"]["slow_cancelled"] >= 1


def _browsed(report: Report) -> None:
    assert "memo://greeting" in [r["uri"] for r in report["resources"]["resources"]]
    assert checks.text_of(report["read:memo://note/alice"]) == "Note about alice"
    assert checks.text_of(report["prompt:greet"]) == "Please greet alice"
    assert report["complete:note"]["completion"]["values"] == ["alice", "alfred"]


def _legacy_shapes_only(report: Report) -> None:
    # A legacy client never sees a modern-only field: no io.modelcontextprotocol/ `_meta`.
    seen = json.dumps({k: v for k, v in report.items() if k not in ("_stderr", "errors")})
    assert MODERN_PREFIX not in seen, seen[max(0, seen.find(MODERN_PREFIX) - 200):][:400]


def _asked_to(tool: str) -> Callable[[Report], None]:
    def holds(report: Report) -> None:
        if tool == "list_roots":
            assert report["call:list_roots"]["structuredContent"]["roots"] == [checks.ROOT_URI]
            assert report["asked"]["roots"] >= 1
        else:
            assert checks.text_of(report[f"call:{tool}"]) == checks.INPUT_TOOL_TEXT[tool]
    return holds


def _elicited_prompt_and_resource(report: Report) -> None:
    checks.check_elicited_prompt_and_resource(report)
    assert "read:memo://private" in report


def _list_changed(report: Report) -> None:
    assert checks.notifications_in(report, "add_tool", "notifications/tools/list_changed")
    assert "zap" in report["tools:after:names"] and "zap" not in report["tools:before:names"]
    assert checks.text_of(report["call:zap"]) == "zap says hi"


def _subscribed(report: Report) -> None:
    updated = checks.notifications_in(report, "touch", "notifications/resources/updated")
    assert [note["params"]["uri"] for note in updated] == ["memo://greeting"]
    assert not checks.notifications_in(report, "touch_unsubscribed",
                                       "notifications/resources/updated")


def _logs_at_level(report: Report) -> None:
    levels = [log["level"] for log in report["logs"] if log["phase"] == "chatty"]
    assert levels == ["warning", "error"], levels


def _restart_call_failed(report: Report) -> None:
    assert report.get("killed") is True, "the server was never killed"
    assert "error" in report["kill:slow"], report.get("kill:slow")


def _restart_session_goes_on(report: Report) -> None:
    before = report["pid:before"]["structuredContent"]["pid"]
    assert report["pid:after"]["structuredContent"]["pid"] != before
    assert "echo" in report["tools:after:names"]
    assert checks.text_of(report["call:echo"]) == "hi"


def _restart_told(report: Report) -> None:
    assert report["restart:arrived"] is True, "no tools list_changed after the restart"


def _restart_replayed(report: Report) -> None:
    updated = checks.notifications_in(report, "touch", "notifications/resources/updated")
    assert [note["params"]["uri"] for note in updated] == ["memo://greeting"]
    _logs_at_level(report)


def _restart_one_answer_each(report: Report) -> None:
    checks.check_one_answer_each(report)


# The TypeScript v2 SDK's modern-only server (the conformance suite's fixture), toured.
TS_PLAIN = ("tools/list", "tools/call test_simple_text", "tools/call test_image_content",
            "tools/call test_audio_content", "tools/call test_embedded_resource",
            "tools/call test_tool_with_progress", "tools/call test_tool_with_logging",
            "tools/call test_x_mcp_header", "resources/read test://static-text",
            "resources/read test://static-binary", "prompts/get test_simple_prompt",
            "prompts/get test_prompt_with_arguments")
TS_INPUTS = ("tools/call test_sampling", "tools/call test_elicitation",
             "tools/call test_elicitation_sep1034_defaults",
             "tools/call test_elicitation_sep1330_enums",
             "tools/call test_input_required_result_sampling",
             "tools/call test_input_required_result_request_state",
             "tools/call test_input_required_result_multi_round")


def _toured(steps: Sequence[str]) -> Callable[[Report], None]:
    def holds(report: Report) -> None:
        assert {s: report.get(s) for s in steps} == dict.fromkeys(steps, "ok"), {
            s: report.get(s) for s in steps if report.get(s) != "ok"}
    return holds


CHECKS = (
    Check("basic: tools/list", "basic", _listed),
    Check("basic: tools/call", "basic", _called),
    Check("basic: progress", "basic", _progress),
    Check("basic: cancel reaches the server", "basic", _cancelled),
    Check("basic: resources, prompts, completion", "basic", _browsed),
    Check("basic: no modern-only field reaches the client", "basic", _legacy_shapes_only),
    Check("inputs: elicitation", "inputs", _asked_to("ask_name")),
    Check("inputs: sampling", "inputs", _asked_to("ask_model")),
    Check("inputs: roots", "inputs", _asked_to("list_roots")),
    Check("inputs: two questions in one round", "inputs", _asked_to("ask_two")),
    Check("inputs: multi-round", "inputs", _asked_to("wizard")),
    Check("inputs: requestState-only round", "inputs", _asked_to("patience")),
    Check("inputs: elicitation in a prompt and a resource", "inputs",
          _elicited_prompt_and_resource),
    Check("notify: tools list_changed", "notify", _list_changed),
    Check("notify: resource subscriptions", "notify", _subscribed),
    Check("notify: logs at the level set", "notify", _logs_at_level),
    Check("restart: the call under way gets an error", "restart", _restart_call_failed),
    Check("restart: the session goes on", "restart", _restart_session_goes_on),
    Check("restart: the client is told list_changed", "restart", _restart_told),
    Check("restart: subscription and level replayed", "restart", _restart_replayed),
    Check("restart: one answer per request", "restart", _restart_one_answer_each),
    Check("TypeScript v2 server: tools, resources, prompts", "tour", _toured(TS_PLAIN)),
    Check("TypeScript v2 server: sampling, elicitation, input_required", "tour",
          _toured(TS_INPUTS)),
)
RUNS = ("basic", "inputs", "notify", "restart", "tour")


def outcome(check: Check, report: Report) -> tuple[bool, str]:
    """Whether `check` holds for `report`, and if not, why (the assertion's words)."""
    try:
        check.holds(report)
    except (AssertionError, KeyError, TypeError, IndexError) as exc:
        return False, f"{type(exc).__name__}: {exc}"[:300]
    return True, ""


def table(reports: dict[str, Report]) -> dict[str, tuple[bool, str]]:
    """Each check's outcome over the runs' reports (by run name)."""
    return {check.name: outcome(check, reports[check.run]) for check in CHECKS}


# --- the runs ---------------------------------------------------------------------------------


serving = contextmanager(remote_peers.serving)
"""`command` (listening on `port`) in a process group of its own, as a context: its URL."""


def modern_server(python: venvs.SdkPython, *, again: bool = False) -> tuple[list[str], int]:
    """The Python 2.x SDK's modern-only HTTP server on a free port; `again`: started again on
    the same port whenever it exits (the restart scenario kills it)."""
    port = free_port()
    command = python.peer("modern_server", "--http", str(port))
    if again:
        command = ["sh", "-c", 'while :; do "$@"; sleep 0.1; done', "again", *command]
    return command, port


def ts_modern_server() -> tuple[list[str], int]:
    import conformance_suite

    port = free_port()
    return conformance_suite.fixture_command("modern", "--http", str(port)), port


def run(relay: Relay, name: str, legacy: venvs.SdkPython, modern: venvs.SdkPython) -> Report:
    """One run (`name` of RUNS) of the legacy client through `relay`, against a fresh server."""
    if name == "tour":
        with serving(*ts_modern_server()) as url:
            return tour(relay, url, legacy)
    with serving(*modern_server(modern, again=name == "restart")) as url:
        return venvs.run_client(legacy, name, relay(url))


def tour(relay: Relay, url: str, legacy: venvs.SdkPython) -> Report:
    """peers/conformance_client.py's host tour of `url` through `relay`."""
    relay_command = json.dumps(relay("{url}"))
    proc = subprocess.run(legacy.peer("conformance_client", url), capture_output=True,
                          text=True, timeout=TOUR_TIMEOUT, cwd=venvs.REPO_ROOT,
                          env={**os.environ, "ROSETTA_BRIDGE": relay_command})
    lines = proc.stdout.splitlines()
    report: Report = json.loads(lines[-1]) if lines else {}
    report["_stderr"] = proc.stderr[-4000:]
    return report


def run_all(relay: Relay, legacy: venvs.SdkPython, modern: venvs.SdkPython) -> dict[str, Report]:
    return {name: run(relay, name, legacy, modern) for name in RUNS}
