"""Assertions over the client peers' JSON reports, shared by direct and bridged tests.

Must not depend on which server (or bridge) produced the report beyond what the caller
says: the same check passes for a legacy client talking to a legacy server directly and
for the same client talking to a modern server through the bridge.

The canned "user" answers mirror peers/peer_common.py (which the test process cannot
import: it needs the SDKs' anyio).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from typing import Any

NAME = "octocat"
SAMPLING_TEXT = "Paris"
ROOT_URI = "file:///tmp/project"
FILE_TEXT = "hello from rosetta"  # what the filesystem scenario writes
LEGACY_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
MODERN_VERSION = "2026-07-28"

# What each input-asking tool answers once the canned user has replied.
INPUT_TOOL_TEXT = {
    "ask_name": f"hello {NAME}",
    "ask_model": f"model said {SAMPLING_TEXT}",
    "ask_two": f"hello {NAME}, capital {SAMPLING_TEXT}",
    "wizard": f"{NAME} likes blue",
    "patience": "thanks for waiting",
}


def text_of(result: dict[str, Any]) -> str:
    """The first text content block of a tool/prompt result (or a read's first contents)."""
    assert "error" not in result, result
    if "contents" in result:
        return str(result["contents"][0]["text"])
    if "messages" in result:
        return str(result["messages"][0]["content"]["text"])
    return str(result["content"][0]["text"])


def no_errors(report: dict[str, Any], allowed: Iterable[str] = ()) -> None:
    unexpected = {key: err for key, err in report["errors"].items() if key not in set(allowed)}
    assert not unexpected, f"unexpected step errors: {unexpected}\n{report.get('_stderr', '')}"


def check_common_basic(report: dict[str, Any]) -> None:
    """What every client's `basic` run must have seen, whatever the era."""
    no_errors(report, allowed={"cancel:call"})
    assert {"echo", "add", "slow"} <= set(report["tools:names"])
    assert text_of(report["call:echo"]) == "hi"
    assert report["call:add"]["structuredContent"]["sum"] == 5
    assert text_of(report["call:slow"]) == "done 3"
    assert [p["progress"] for p in report["progress"]] == [1, 2, 3]
    assert all(p["total"] == 3 for p in report["progress"])
    uris = [resource["uri"] for resource in report["resources"]["resources"]]
    assert "memo://greeting" in uris
    templates = [t["uriTemplate"] for t in report["templates"]["resourceTemplates"]]
    assert templates == ["memo://note/{name}"]
    assert text_of(report["read:memo://greeting"]).startswith("Hello from the")
    assert text_of(report["read:memo://note/alice"]) == "Note about alice"
    assert "greet" in [prompt["name"] for prompt in report["prompts"]["prompts"]]
    assert text_of(report["prompt:greet"]) == "Please greet alice"
    assert report["complete:greet"]["completion"]["values"] == ["alice", "alfred"]
    assert report["complete:note"]["completion"]["values"] == ["alice", "alfred"]
    check_cancelled(report)


def check_cancelled(report: dict[str, Any]) -> None:
    """The slow call was cancelled mid-way and the server noticed (its `stats` tool says so)."""
    call = report.get("cancel:call")
    assert call is None or "error" in call, f"cancelled call completed: {call}"
    if "call:stats" in report:
        assert report["call:stats"]["structuredContent"]["slow_cancelled"] >= 1


def check_legacy_basic(report: dict[str, Any]) -> None:
    assert report["initialize"]["protocolVersion"] in LEGACY_VERSIONS
    check_common_basic(report)
    assert report["cancel"]["request_id"] is not None
    assert report["cancel"]["outcome"] in ("error", "no_response")


def check_modern_basic(report: dict[str, Any]) -> None:
    assert report["protocol_version"] == MODERN_VERSION
    assert MODERN_VERSION in report["discover"]["supportedVersions"]
    check_common_basic(report)
    assert report["cancel"]["progress_seen"] is True
    for key in ("call:echo", "tools", "read:memo://greeting"):
        assert report[key]["resultType"] == "complete"


def check_inputs(report: dict[str, Any], required: Iterable[str]) -> None:
    """Every input tool in `required` got its canned answer back from the server."""
    no_errors(report)
    missing = set(required) - set(report["tools:names"])
    assert not missing, f"server does not offer {missing}"
    for tool in required:
        if tool == "list_roots":
            assert report["call:list_roots"]["structuredContent"]["roots"] == [ROOT_URI]
        else:
            assert text_of(report[f"call:{tool}"]) == INPUT_TOOL_TEXT[tool]
    asked = report["asked"]
    if {"ask_name", "ask_two", "wizard"} & set(required):
        assert "What is your name?" in [e["message"] for e in asked["elicitation"]]
    if {"ask_model", "ask_two"} & set(required):
        assert asked["sampling"], "the client was never asked to sample"
    if "list_roots" in required:
        assert asked["roots"] >= 1


def check_manual_rounds(report: dict[str, Any]) -> None:
    """ask_name driven by hand: one input_required round asking to elicit, then the answer."""
    first, last = report["ask_name:rounds"]
    assert first["resultType"] == "input_required"
    methods = [request["method"] for request in first["inputRequests"].values()]
    assert methods == ["elicitation/create"]
    assert text_of(last) == f"hello {NAME}"


def check_elicited_prompt_and_resource(report: dict[str, Any]) -> None:
    assert text_of(report["prompt:intro"]) == f"Introduce {NAME}"
    if "read:memo://private" in report:
        assert text_of(report["read:memo://private"]) == f"secret for {NAME}"


def notifications_in(report: dict[str, Any], phase: str, method: str) -> list[dict[str, Any]]:
    return [
        note
        for note in report["notifications"]
        if note["phase"] == phase and note["method"] == method
    ]


def check_legacy_notify(report: dict[str, Any]) -> None:
    no_errors(report)
    assert notifications_in(report, "add_tool", "notifications/tools/list_changed")
    updated = notifications_in(report, "touch", "notifications/resources/updated")
    assert [note["params"]["uri"] for note in updated] == ["memo://greeting"]
    assert not notifications_in(report, "touch_unsubscribed", "notifications/resources/updated")
    assert "zap" in report["tools:after:names"]
    assert "zap" not in report["tools:before:names"]
    assert text_of(report["call:zap"]) == "zap says hi"
    levels = [log["level"] for log in report["logs"] if log["phase"] == "chatty"]
    assert levels == ["warning", "error"]


def check_modern_notify(report: dict[str, Any]) -> None:
    no_errors(report)
    assert report["listen:tools"]["honored"] == {"toolsListChanged": True}
    assert report["listen:resource"]["honored"] == {"resourceSubscriptions": ["memo://greeting"]}
    assert report["add_tool:event"] == {"type": "ToolsListChanged"}
    assert report["touch:event"] == {"type": "ResourceUpdated", "uri": "memo://greeting"}
    assert report["touch_other:event"] is None
    assert report["touch_closed:event"] is None
    assert not notifications_in(report, "touch_closed", "notifications/resources/updated")
    for note in report["notifications"]:
        subscription = note["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"]
        assert subscription in (report["listen:tools"]["id"], report["listen:resource"]["id"])
    assert "zap" in report["tools:after:names"]
    assert text_of(report["call:zap"]) == "zap says hi"


def check_legacy_logs(report: dict[str, Any]) -> None:
    """logging/setLevel honoured: each call's logs at or above the level set before it."""
    no_errors(report)
    assert "logging" in report["initialize"]["capabilities"]
    levels = {phase: [log["level"] for log in report["logs"] if log["phase"] == phase]
              for phase in ("chatty:warning", "chatty:debug")}
    assert levels == {"chatty:warning": ["warning", "error"],
                      "chatty:debug": ["debug", "info", "warning", "error"]}


def check_modern_logs(report: dict[str, Any]) -> None:
    """Logs come only for requests that opted in, at or above the level asked for."""
    assert [log["level"] for log in report["logs"] if log["phase"] == "chatty:warning"] == [
        "warning",
        "error",
    ]
    assert not [log for log in report["logs"] if log["phase"] == "chatty:None"]


def check_restart(report: dict[str, Any]) -> None:
    """The server was killed during a call and replaced: the call got one error saying so, and
    the same session went on with the new server (another pid)."""
    no_errors(report, allowed={"kill:slow"})
    assert report.get("killed") is True, "the server was never killed"
    error = report["kill:slow"]["error"]
    assert error["code"] == -32603 and "is being restarted" in error["message"], error
    before = report["pid:before"]["structuredContent"]["pid"]
    assert report["pid:after"]["structuredContent"]["pid"] != before
    assert "echo" in report["tools:after:names"]
    assert text_of(report["call:echo"]) == "hi"
    check_one_answer_each(report)


def check_one_answer_each(report: dict[str, Any]) -> None:
    """On the wire: every request the client sent got exactly one answer (a listen stream,
    which may be left open, at most one)."""
    answered = Counter(json.dumps(answer["id"]) for answer in report["wire"]["answered"])
    assert [key for key, count in answered.items() if count > 1] == []
    unanswered = [request for request in report["wire"]["sent"]
                  if request["method"] != "subscriptions/listen"
                  and answered[json.dumps(request["id"])] != 1]
    assert unanswered == []


def check_legacy_restart(report: dict[str, Any]) -> None:
    check_restart(report)
    assert report["restart:arrived"] is True, "no tools list_changed after the restart"
    assert notifications_in(report, "add_tool", "notifications/tools/list_changed")
    updated = notifications_in(report, "touch", "notifications/resources/updated")
    assert [note["params"]["uri"] for note in updated] == ["memo://greeting"]
    assert [log["level"] for log in report["logs"] if log["phase"] == "chatty"] == [
        "warning", "error"]


def check_modern_restart(report: dict[str, Any]) -> None:
    check_restart(report)
    assert report["restart:event"] == {"type": "ToolsListChanged"}
    assert report["add_tool:event"] == {"type": "ToolsListChanged"}
    assert report["touch:event"] == {"type": "ResourceUpdated", "uri": "memo://greeting"}
    streams = (report["listen:tools"]["id"], report["listen:resource"]["id"])
    for note in report["notifications"]:
        if note["method"] not in ("notifications/progress", "notifications/message"):
            assert note["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] in streams
    assert [log["level"] for log in report["logs"] if log["phase"] == "chatty:warning"] == [
        "warning", "error"]
