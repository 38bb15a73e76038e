"""A legacy server that asks a modern client for input its request did not declare.

Must not fake either side: the server is the official legacy SDK (mcp 1.x FastMCP, whose
tools ask mid-call), the client the official modern one (mcp 2.x, which declares a
capability only for a callback it was given). TRANSLATION.md §5.8.3: the call that asked is
answered -32021 naming `requiredCapabilities` (2026-07-28 basic/index.mdx §_meta, schema
§MissingRequiredClientCapabilityError), the legacy call is cancelled, and the server, told
no, unwinds and serves on.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

Message = dict[str, Any]


def required(report: Message, step: str) -> Any:
    error = report[step].get("error") if isinstance(report.get(step), dict) else None
    assert error is not None, (step, report.get(step), report.get("_stderr"))
    assert error["code"] == -32021, error
    return error["data"]["requiredCapabilities"]


def legs(transcript: Path) -> list[tuple[str, Message]]:
    records = [json.loads(line) for line in transcript.read_bytes().splitlines()]
    return [(r["leg"], r["message"]) for r in records if isinstance(r["message"], dict)]


@pytest.mark.parametrize("scenario", ["undeclared", "undeclared_none"],
                         ids=["exclusive call", "shared call"])
def test_a_tool_that_samples_without_the_capability_is_32021(
    legacy_python, modern_python, run_client, bridge_command, scenario, tmp_path
):
    transcript = tmp_path / "t.jsonl"
    server = bridge_command(legacy_python.peer("legacy_server"), "--transcript", str(transcript))
    report = run_client(modern_python, scenario, server)
    assert report["exit_code"] == 0, report.get("errors")
    assert required(report, "call:ask_model") == {"sampling": {}}
    assert required(report, "call:list_roots") == {"roots": {}}  # no roots known to the bridge
    assert report["asked"]["sampling"] == [] and report["asked"]["roots"] == 0  # never asked
    if scenario == "undeclared":  # what it declared still works
        assert report["call:ask_name"]["content"][0]["text"].startswith("hello ")
    # the server was told no, unwound, and serves on
    assert report["call:echo"]["content"] == [{"type": "text", "text": "still here"}]
    assert set(report["errors"]) == {"call:ask_model", "call:list_roots"}

    seen = legs(transcript)
    (legacy,) = [m for leg, m in seen if leg == "bridge>server" and m.get("method") ==
                 "tools/call" and m["params"]["name"] == "ask_model"]
    (question,) = [m for leg, m in seen if leg == "server>bridge"
                   and m.get("method") == "sampling/createMessage"]
    (refusal,) = [m for leg, m in seen if leg == "bridge>server" and "method" not in m
                  and m.get("id") == question["id"]]
    assert refusal["error"]["code"] == -32601  # as a legacy client without sampling says
    assert [m["params"] for leg, m in seen if leg == "bridge>server"
            and m.get("method") == "notifications/cancelled"
            and m["params"]["requestId"] == legacy["id"]] == [
        {"requestId": legacy["id"], "reason": "the request did not declare sampling"}]
    (client_call,) = [m for leg, m in seen if leg == "client>bridge" and m.get("method") ==
                      "tools/call" and m["params"]["name"] == "ask_model"]
    # exactly one answer reached the client for the call: the -32021, whatever came late
    assert [m["error"]["code"] for leg, m in seen if leg == "bridge>client"
            and "method" not in m and m.get("id") == client_call["id"]] == [-32021]
