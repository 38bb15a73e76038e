"""The official MCP conformance suite (server side, both requirement sets) against the
fixture servers of both eras, behind each front in `conformance_suite.FRONTS`.

Each run is compared scenario by scenario with the verdicts recorded in
`conformance/baseline.json` (see conformance/README.md), so a regression and an
unrecorded improvement both fail, with the suite's own failing checks in the message.
The fronts are "direct" (each fixture on its own SDK's Streamable HTTP) and "bridge" (the
bridge's own HTTP front at its default settings: `serve --listen http://…` in front of the
stdio fixture, serving 2026-07-28 requests through its pool of sessions and legacy ones in
sessions of their own).

Nothing here skips: a missing node, npm, suite or baseline cell is a failure that says so.
Runs in about 35 s once the suite is installed (first install: about 30 s more).
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import conformance_suite as cs
import pytest

CELLS = [(front, era, requirements)
         for front in cs.FRONTS for era in cs.FIXTURES for requirements in cs.REQUIREMENTS]


@pytest.mark.parametrize(("front", "era", "requirements"), CELLS,
                         ids=[f"{f}-{e}-{r}" for f, e, r in CELLS])
def test_suite_matches_baseline(front: str, era: str, requirements: str) -> None:
    expected = cs.load_baseline().get(front, {}).get(era, {}).get(requirements)
    assert expected is not None, (
        f"no recorded verdicts for {front}/{era}/{requirements} in {cs.BASELINE}: record them "
        f"with `python tests/e2e/conformance_suite.py {front}` and review the diff")
    with cs.FRONTS[front](era) as url:
        run = cs.run_suite(url, requirements)
    got = run.verdicts()
    want = {name: expected.get(name, "unrecorded") for name in got}
    changed = {name: f"{want[name]} -> {got[name]}" for name in got if got[name] != want[name]}
    assert not changed, (
        f"{front}/{era} fixture, --requirements {requirements} ({run.seconds:.1f}s): "
        f"verdicts differ from the baseline {json.dumps(changed, indent=1)}\n"
        f"{run.report(list(changed))}")
    # The front at its default settings: a scenario's call left parked holds one server
    # process of the pool, never the rest of the run.
    assert run.seconds < RUN_AT_MOST_S, f"{front}/{era}/{requirements}: {run.seconds:.1f}s"


RUN_AT_MOST_S = 150.0


def test_direct_baseline_passes_its_own_era() -> None:
    """What "passes directly" means in issue 21: each fixture passes every required
    scenario of its own era's requirement set on its own SDK's HTTP."""
    baseline = cs.load_baseline()["direct"]
    for requirements, era in cs.ERA_OF.items():
        rset = cs.requirement_set(requirements)
        verdicts = baseline[era][requirements]
        failing = [n for n in rset.required if verdicts.get(n) != "pass"]
        assert not failing, f"{era} fixture fails {requirements} directly: {failing}"


# Required 2026-07-28 scenarios the modern fixture passes directly that a legacy server
# behind the bridge cannot pass, each with its reason (the conformance README and
# TRANSLATION.md §5.8.3).
CANNOT_ACROSS_ERAS = {
    "input-required-result-basic-elicitation":
        "expects the input key the modern fixture chose; a legacy request names none",
    "input-required-result-capability-check":
        "the legacy fixture asks for every input kind at once; the undeclared one is -32021",
}


def test_the_bridge_front_loses_across_eras_only_what_a_bridge_cannot_meet() -> None:
    """Issue 21's done-when for 2026-07-28, as recorded: every required scenario the modern
    fixture passes directly passes with the legacy fixture behind the bridge's front, but
    those named with their reason."""
    assert set(cs.shortfall(cs.load_baseline(), "bridge", "2026-07-28")) \
        == set(CANNOT_ACROSS_ERAS)


def test_the_bridge_front_loses_nothing_of_2025_11_25_for_either_fixture() -> None:
    """Issue 21's done-when for 2025-11-25, as recorded: the modern-only fixture behind the
    front (legacy sessions, across eras) passes every required scenario the legacy fixture
    passes directly, and so does the legacy fixture behind it (same era)."""
    baseline = cs.load_baseline()
    assert cs.shortfall(baseline, "bridge", "2025-11-25") == []
    rset = cs.requirement_set("2025-11-25")
    for era in cs.FIXTURES:
        verdicts = baseline["bridge"][era]["2025-11-25"]
        assert [n for n in rset.required if verdicts.get(n) != "pass"] == [], era


def test_results_are_parsed_as_the_suite_scores_them(tmp_path: Path) -> None:
    def write(name: str, *statuses: str) -> None:
        folder = tmp_path / f"server-{name}-2026-12-01T19-01-43-033Z"
        folder.mkdir()
        checks = [{"id": f"c{i}", "status": s} for i, s in enumerate(statuses)]
        (folder / "checks.json").write_text(json.dumps(checks))

    write("tools-list", "SUCCESS", "SUCCESS")
    write("server-stateless", "SUCCESS", "WARNING")
    write("caching", "SUCCESS", "FAILURE")
    write("tasks-status-notifications", "SKIPPED")
    output = "Failed to run scenario tasks-lifecycle: Et [JsonRpcError]: Invalid session\n"
    found = cs.parse_results(tmp_path, output)
    assert {name: s.verdict for name, s in found.items()} == {
        "tools-list": "pass", "server-stateless": "pass", "caching": "fail",
        "tasks-status-notifications": "no checks", "tasks-lifecycle": "fail"}
    assert found["server-stateless"].problems() == ["c1 WARNING: "]
    assert "Invalid session" in found["tasks-lifecycle"].problems()[0]


# --- the fixtures on stdio, as the bridge will run them --------------------------------------

ENVELOPE = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {}}
INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                         "clientInfo": {"name": "test", "version": "0"}}}
# The tools the suite's server scenarios call (src/scenarios/server/ of the suite: tools,
# elicitation-defaults, elicitation-enums, stateless, input-required-result), and the prompt
# one calls. Both fixtures carry all of them, each in its own era's way, so that a bridge in
# front of either can be measured by both requirement sets.
SUITE_TOOLS = {
    "test_simple_text", "test_image_content", "test_audio_content", "test_embedded_resource",
    "test_multiple_content_types", "test_tool_with_logging", "test_tool_with_progress",
    "test_error_handling", "test_sampling", "test_elicitation",
    "test_elicitation_sep1034_defaults", "test_elicitation_sep1330_enums",
    "test_logging_tool", "test_missing_capability", "test_streaming_elicitation",
    "test_trigger_prompt_change", "test_trigger_tool_change",
    "test_input_required_result_capabilities", "test_input_required_result_elicitation",
    "test_input_required_result_list_roots", "test_input_required_result_multi_round",
    "test_input_required_result_multiple_inputs", "test_input_required_result_request_state",
    "test_input_required_result_sampling", "test_input_required_result_tampered_state",
}
SUITE_PROMPTS = {"test_simple_prompt", "test_prompt_with_arguments",
                 "test_prompt_with_embedded_resource", "test_prompt_with_image",
                 "test_input_required_result_prompt"}


def exchange(cmd: Sequence[str], messages: Sequence[dict[str, Any]],
             timeout: float = 30.0) -> dict[Any, dict[str, Any]]:
    """Write `messages` to a stdio server one at a time, waiting for each request's answer;
    the answers by id."""
    proc = subprocess.Popen(list(cmd), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    assert proc.stdin is not None and proc.stdout is not None
    answers: dict[Any, dict[str, Any]] = {}
    deadline = time.monotonic() + timeout
    try:
        for message in messages:
            proc.stdin.write(json.dumps(message) + "\n")
            proc.stdin.flush()
            while "id" in message and message["id"] not in answers:
                assert time.monotonic() < deadline, f"no answer to {message}"
                line = proc.stdout.readline()
                assert line, f"{cmd} closed stdout: {proc.stderr.read() if proc.stderr else ''}"
                reply = json.loads(line)
                if "id" in reply and "method" not in reply:
                    answers[reply["id"]] = reply
    finally:
        proc.stdin.close()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return answers


def test_legacy_fixture_on_stdio() -> None:
    answers = exchange(cs.fixture_command("legacy"), [
        INITIALIZE,
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        {"jsonrpc": "2.0", "id": 3, "method": "prompts/list"},
        {"jsonrpc": "2.0", "id": 4, "method": "server/discover", "params": {"_meta": ENVELOPE}},
    ])
    assert answers[1]["result"]["protocolVersion"] == "2025-11-25"
    tools = {tool["name"] for tool in answers[2]["result"]["tools"]}
    assert tools >= SUITE_TOOLS, SUITE_TOOLS - tools
    prompts = {prompt["name"] for prompt in answers[3]["result"]["prompts"]}
    assert prompts >= SUITE_PROMPTS, SUITE_PROMPTS - prompts
    assert "error" in answers[4], answers[4]  # no modern era in it


def test_modern_fixture_on_stdio() -> None:
    answers = exchange(cs.fixture_command("modern"), [
        INITIALIZE,
        {"jsonrpc": "2.0", "id": 2, "method": "server/discover", "params": {"_meta": ENVELOPE}},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": {"_meta": ENVELOPE}},
        {"jsonrpc": "2.0", "id": 4, "method": "prompts/list", "params": {"_meta": ENVELOPE}},
    ])
    error = answers[1]["error"]
    assert error["code"] == -32022, error
    assert error["data"]["supported"] == ["2026-07-28"], error
    assert answers[2]["result"]["supportedVersions"] == ["2026-07-28"]
    tools = {tool["name"] for tool in answers[3]["result"]["tools"]}
    assert tools >= SUITE_TOOLS, SUITE_TOOLS - tools
    prompts = {prompt["name"] for prompt in answers[4]["result"]["prompts"]}
    assert prompts >= SUITE_PROMPTS, SUITE_PROMPTS - prompts
