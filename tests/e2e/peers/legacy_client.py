"""A legacy-era MCP client (mcp 1.x `ClientSession`) that runs one scenario and reports.

Must not speak 2026-07-28: it is the official legacy SDK as real legacy hosts use it.

Usage: legacy_client.py SCENARIO -- <server command...>
       legacy_client.py SCENARIO -- http://HOST:PORT/PATH   (the SDK's Streamable HTTP client)
Scenarios:
  basic   initialize; list/call tools; progress; resources, templates, prompts, completion;
          cancel a slow call with notifications/cancelled
  inputs  every server-to-client request kind: elicitation, sampling, roots, two in one call
  notify  resources/subscribe, tools list_changed, resources/updated, unsubscribe, setLevel
  logs    logging/setLevel at two levels, each followed by a call of `chatty`
  restart subscribe and set a level, then kill the server (by the pid its `pid` tool gives)
          during a slow call; once told the tools changed, the same session lists and calls
          tools, hears of a new tool, of the subscribed resource, and logs at its level
  time    the tools of the published `mcp-server-time`
  tour    one of each thing a client does, for the HTTP front: list and call tools, progress,
          logs at the level set, an elicitation answered, and a tools list_changed heard
          (then the new tool, named by $ROSETTA_E2E_NEW_TOOL, listed and called)
  fleet   (HTTP only) the tour through a load balancer in front of a fleet of fronts; then
          the session's id goes to $ROSETTA_E2E_FLEET_DIR/session and, once the file
          `stopped` appears there (the test stopped the node holding it), one more call;
          then a new session (initialize again, as a host does when told its session
          ended), which lists and calls tools

Prints ONE JSON object on stdout (see peer_common.Recorder); exits 1 if the session could
not be initialized, 0 otherwise (step failures are recorded, not fatal).
"""

from __future__ import annotations

import contextlib
import os
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

import anyio
from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamablehttp_client
from peer_common import (
    RESTART_TIMEOUT,
    SAMPLING_MODEL,
    SAMPLING_TEXT,
    Recorder,
    claim_stdout,
    dump,
    error_info,
    fill_form,
    kill,
    new_tool_name,
    parse_argv,
    publish,
    tapped,
)

SCENARIOS = ("basic", "inputs", "notify", "logs", "restart", "time", "tour", "fleet")
SCENARIO_TIMEOUT = 60.0
# How long to wait for a notification that should come, and for one that should not.
EXPECT_TIMEOUT = 3.0
QUIET_PERIOD = 0.5
# How long a cancelled call may take to answer (mcp 1.x servers answer; the spec says don't).
CANCEL_GRACE = 1.5


# --- callbacks: the deterministic user ------------------------------------------------------


def callbacks(rec: Recorder) -> dict[str, Any]:
    async def elicit(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        rec.out["asked"]["elicitation"].append(dump(params))
        content = fill_form(getattr(params, "requestedSchema", None))
        return types.ElicitResult(action="accept", content=content)

    async def sample(context: Any, params: types.CreateMessageRequestParams) -> Any:
        rec.out["asked"]["sampling"].append(dump(params))
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(type="text", text=SAMPLING_TEXT),
            model=SAMPLING_MODEL,
            stopReason="endTurn",
        )

    async def roots(context: Any) -> types.ListRootsResult:
        rec.out["asked"]["roots"] += 1
        roots = [types.Root(uri=uri, name=name) for uri, name in rec.roots]
        return types.ListRootsResult(roots=roots)

    async def log(params: types.LoggingMessageNotificationParams) -> None:
        rec.note("logs", {"level": params.level, "data": params.data, "logger": params.logger})

    async def message(message: Any) -> None:
        if isinstance(message, types.ServerNotification):
            root = message.root
            rec.note("notifications", {"method": root.method, "params": dump(root.params)})
        elif isinstance(message, Exception):
            rec.note("notifications", {"method": None, "exception": error_info(message)})

    return {
        "elicitation_callback": elicit,
        "sampling_callback": sample,
        "list_roots_callback": roots,
        "logging_callback": log,
        "message_handler": message,
    }


# --- scenario: basic ------------------------------------------------------------------------


async def basic(session: ClientSession, rec: Recorder) -> None:
    tools = await list_tool_names(session, rec)
    await rec.step("call:echo", lambda: session.call_tool("echo", {"text": "hi"}))
    await rec.step("call:add", lambda: session.call_tool("add", {"a": 2, "b": 3}))
    if "squares" in tools:
        await rec.step("call:squares", lambda: session.call_tool("squares", {"n": 3}))
    await call_with_progress(session, rec)
    await browse_resources(session, rec)
    await browse_prompts(session, rec)
    await cancel_slow(session, rec)
    if "stats" in tools:
        await rec.step("call:stats", lambda: session.call_tool("stats", {}))


async def list_tool_names(session: ClientSession, rec: Recorder, key: str = "tools") -> list[str]:
    listed = await rec.step(key, session.list_tools)
    names = [tool.name for tool in listed.tools] if listed else []
    rec.out[key + ":names"] = names
    return names


async def call_with_progress(session: ClientSession, rec: Recorder) -> None:
    async def progress(value: float, total: float | None, message: str | None) -> None:
        rec.out["progress"].append({"progress": value, "total": total, "message": message})

    await rec.step(
        "call:slow",
        lambda: session.call_tool("slow", {"steps": 3}, progress_callback=progress),
    )


async def browse_resources(session: ClientSession, rec: Recorder) -> None:
    await rec.step("resources", session.list_resources)
    await rec.step("templates", session.list_resource_templates)
    for uri in ("memo://greeting", "memo://note/alice"):
        await rec.step(f"read:{uri}", lambda uri=uri: session.read_resource(uri))


async def browse_prompts(session: ClientSession, rec: Recorder) -> None:
    await rec.step("prompts", session.list_prompts)
    await rec.step("prompt:greet", lambda: session.get_prompt("greet", {"name": "alice"}))
    ref = types.PromptReference(type="ref/prompt", name="greet")
    argument = {"name": "name", "value": "al"}
    await rec.step("complete:greet", lambda: session.complete(ref, argument))
    template = types.ResourceTemplateReference(type="ref/resource", uri="memo://note/{name}")
    await rec.step("complete:note", lambda: session.complete(template, argument))


async def cancel_slow(session: ClientSession, rec: Recorder) -> None:
    """Cancel a running call with notifications/cancelled once it has reported progress.

    mcp 1.x uses the request id as the progressToken, so the token the first progress
    notification carries is the id to cancel (as seen from this client, bridge or not).
    """

    async def progress(value: float, total: float | None, message: str | None) -> None:
        pass  # only here so that the request carries a progressToken

    async def call() -> None:
        await rec.step(
            "cancel:call",
            lambda: session.call_tool("slow", {"steps": 60}, progress_callback=progress),
        )

    rec.phase = "cancel"
    request_id, outcome = None, "no_response"
    async with anyio.create_task_group() as tg:
        tg.start_soon(call)
        if await rec.wait_for("notifications", "notifications/progress", EXPECT_TIMEOUT):
            request_id = progress_token_in_phase(rec)
            await session.send_notification(cancelled(request_id))
        with anyio.move_on_after(CANCEL_GRACE) as waited:
            while "cancel:call" not in rec.out:
                await anyio.sleep(0.02)
        if waited.cancelled_caught:
            tg.cancel_scope.cancel()  # spec-correct servers send no response to a cancelled call
        else:
            outcome = "error" if "error" in rec.out["cancel:call"] else "result"
    rec.out["cancel"] = {"request_id": request_id, "outcome": outcome}


def progress_token_in_phase(rec: Recorder) -> Any:
    progress = [
        note
        for note in rec.out["notifications"]
        if note["phase"] == rec.phase and note["method"] == "notifications/progress"
    ]
    return progress[0]["params"]["progressToken"]


def cancelled(request_id: Any) -> types.ClientNotification:
    params = types.CancelledNotificationParams(requestId=request_id, reason="test cancel")
    return types.ClientNotification(types.CancelledNotification(params=params))


# --- scenario: inputs -----------------------------------------------------------------------


async def inputs(session: ClientSession, rec: Recorder) -> None:
    tools = await list_tool_names(session, rec)
    for name in ("ask_name", "ask_model", "list_roots", "ask_two", "wizard", "patience"):
        if name in tools:
            await rec.step(f"call:{name}", lambda name=name: session.call_tool(name, {}))
    prompts = await rec.step("prompts", session.list_prompts)
    if prompts and "intro" in [prompt.name for prompt in prompts.prompts]:
        await rec.step("prompt:intro", lambda: session.get_prompt("intro", {}))
    resources = await rec.step("resources", session.list_resources)
    if resources and "memo://private" in [str(r.uri) for r in resources.resources]:
        await rec.step("read:memo://private", lambda: session.read_resource("memo://private"))


# --- scenario: notify -----------------------------------------------------------------------


async def hear_changes(session: ClientSession, rec: Recorder, uri: str) -> None:
    """A new tool is announced, and a touched subscribed resource reports its update."""
    await expect(
        rec,
        "add_tool",
        "notifications/tools/list_changed",
        lambda: session.call_tool("add_tool", {"name": "zap"}),
    )
    await expect(
        rec,
        "touch",
        "notifications/resources/updated",
        lambda: session.call_tool("touch", {"uri": uri}),
    )


async def notify(session: ClientSession, rec: Recorder) -> None:
    uri = "memo://greeting"
    await list_tool_names(session, rec, "tools:before")
    await expect(rec, "subscribe", None, lambda: session.subscribe_resource(uri))
    await hear_changes(session, rec, uri)
    await expect(rec, "unsubscribe", None, lambda: session.unsubscribe_resource(uri))
    await expect(rec, "touch_unsubscribed", None, lambda: session.call_tool("touch", {"uri": uri}))
    await list_tool_names(session, rec, "tools:after")
    await rec.step("call:zap", lambda: session.call_tool("zap", {}))
    await expect(rec, "set_level", None, lambda: session.set_logging_level("warning"))
    await expect_logs(rec, "chatty", lambda: session.call_tool("chatty", {}))


async def expect(rec: Recorder, phase: str, method: str | None, action: Any) -> None:
    """Run `action` in its own phase; wait for `method` to arrive, or a quiet period if None."""
    rec.phase = phase
    await rec.step(phase, action)
    if method is None:
        await anyio.sleep(QUIET_PERIOD)
    else:
        rec.out[f"{phase}:arrived"] = await rec.wait_for("notifications", method, EXPECT_TIMEOUT)


async def expect_logs(rec: Recorder, phase: str, action: Any) -> None:
    rec.phase = phase
    await rec.step(phase, action)
    await rec.wait_for("logs", None, EXPECT_TIMEOUT)
    await anyio.sleep(QUIET_PERIOD)


# --- scenario: logs -------------------------------------------------------------------------


async def logs(session: ClientSession, rec: Recorder) -> None:
    for level in ("warning", "debug"):
        await expect(rec, f"set_level:{level}", None,
                     lambda level=level: session.set_logging_level(level))
        await expect_logs(rec, f"chatty:{level}", lambda: session.call_tool("chatty", {}))


# --- scenario: restart ----------------------------------------------------------------------


async def restart(session: ClientSession, rec: Recorder) -> None:
    uri = "memo://greeting"
    await expect(rec, "subscribe", None, lambda: session.subscribe_resource(uri))
    await expect(rec, "set_level", None, lambda: session.set_logging_level("warning"))
    await rec.step("pid:before", lambda: session.call_tool("pid", {}))
    await kill_during_a_call(session, rec)
    # The bridge tells the client its lists may have changed once the new server serves.
    rec.out["restart:arrived"] = await rec.wait_for(
        "notifications", "notifications/tools/list_changed", RESTART_TIMEOUT)
    rec.phase = "after"
    await list_tool_names(session, rec, "tools:after")
    await rec.step("call:echo", lambda: session.call_tool("echo", {"text": "hi"}))
    await rec.step("pid:after", lambda: session.call_tool("pid", {}))
    await hear_changes(session, rec, uri)
    await expect_logs(rec, "chatty", lambda: session.call_tool("chatty", {}))


async def kill_during_a_call(session: ClientSession, rec: Recorder) -> None:
    """Kill the server once a slow call is running there; the call's one answer is recorded."""

    async def progress(value: float, total: float | None, message: str | None) -> None:
        pass  # only here so that the call reports progress: it has begun at the server

    rec.phase = "restart"
    async with anyio.create_task_group() as tg:
        tg.start_soon(rec.step, "kill:slow",
                      lambda: session.call_tool("slow", {"steps": 600}, progress_callback=progress))
        if await rec.wait_for("notifications", "notifications/progress", RESTART_TIMEOUT):
            kill(rec.out["pid:before"]["structuredContent"]["pid"])
            rec.out["killed"] = True


# --- scenario: time (the published mcp-server-time) ----------------------------------------


async def time_tools(session: ClientSession, rec: Recorder) -> None:
    await list_tool_names(session, rec)
    call = session.call_tool
    await rec.step("call:now", lambda: call("get_current_time", {"timezone": "UTC"}))
    await rec.step("call:convert", lambda: call("convert_time", {
        "source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"}))
    await rec.step("call:bad_zone", lambda: call("get_current_time", {"timezone": "Mars/Base"}))
    await rec.step("call:unknown", lambda: call("no_such_tool", {}))


# --- scenario: tour -------------------------------------------------------------------------


async def tour(session: ClientSession, rec: Recorder) -> None:
    added = new_tool_name()
    await list_tool_names(session, rec)
    await rec.step("call:echo", lambda: session.call_tool("echo", {"text": "over http"}))
    rec.phase = "slow"
    await call_with_progress(session, rec)
    await expect(rec, "set_level", None, lambda: session.set_logging_level("warning"))
    await expect_logs(rec, "chatty:warning", lambda: session.call_tool("chatty", {}))
    rec.phase = "ask_name"
    await rec.step("call:ask_name", lambda: session.call_tool("ask_name", {}))
    await expect(rec, "add_tool", "notifications/tools/list_changed",
                 lambda: session.call_tool("add_tool", {"name": added}))
    rec.phase = "after"
    await list_tool_names(session, rec, "tools:after")
    await rec.step("call:added", lambda: session.call_tool(added, {}))


# --- scenario: fleet ------------------------------------------------------------------------

FLEET_DIR_ENV = "ROSETTA_E2E_FLEET_DIR"


async def fleet(url: str, rec: Recorder) -> int:
    """A session through the balancer, its node stopped mid-run, then a new session."""
    where = Path(os.environ[FLEET_DIR_ENV])
    timeout = timedelta(seconds=SCENARIO_TIMEOUT)
    async with (
        streamablehttp_client(url) as (read, write, session_id),
        ClientSession(read, write, timeout, **callbacks(rec)) as session,
    ):
        if await rec.step("initialize", session.initialize) is None:
            return 1
        await tour(session, rec)
        rec.out["session"] = session_id()
        publish(where / "session", session_id() or "")
        with anyio.fail_after(SCENARIO_TIMEOUT):
            while not (where / "stopped").exists():
                await anyio.sleep(0.05)
        rec.phase = "stopped"
        await rec.step("call:stopped", lambda: session.call_tool("echo", {"text": "lost"}))
    rec.phase = "again"
    async with (
        streamablehttp_client(url) as (read, write, session_id),
        ClientSession(read, write, timeout, **callbacks(rec)) as session,
    ):
        if await rec.step("initialize:again", session.initialize) is None:
            return 1
        await list_tool_names(session, rec, "tools:again")
        await rec.step("call:again", lambda: session.call_tool("echo", {"text": "again"}))
        rec.out["session:again"] = session_id()
    return 0


# --- driver ---------------------------------------------------------------------------------

SCENARIO_FUNCTIONS = {
    "basic": basic,
    "inputs": inputs,
    "notify": notify,
    "logs": logs,
    "restart": restart,
    "time": time_tools,
    "tour": tour,
}


def connected(server_cmd: list[str]) -> Any:
    """The SDK's transport to the server: its HTTP client for a URL, else stdio. Both give
    (read, write) first (HTTP adds a session-id getter, not needed here)."""
    if server_cmd[0].startswith("http://"):
        return _first_two(streamablehttp_client(server_cmd[0]))
    params = StdioServerParameters(command=server_cmd[0], args=server_cmd[1:], env=dict(os.environ))
    return stdio_client(params)


@contextlib.asynccontextmanager
async def _first_two(transport: Any) -> Any:
    async with transport as streams:
        yield streams[0], streams[1]


async def run(scenario: str, server_cmd: list[str], rec: Recorder) -> int:
    if scenario == "fleet":
        return await fleet(server_cmd[0], rec)
    timeout = timedelta(seconds=SCENARIO_TIMEOUT)
    transport = connected(server_cmd)
    if scenario == "restart":
        transport = tapped(transport, rec)
    with anyio.fail_after(SCENARIO_TIMEOUT + 5):
        async with (
            transport as (read, write),
            ClientSession(read, write, timeout, **callbacks(rec)) as session,
        ):
            if await rec.step("initialize", session.initialize) is None:
                return 1
            await SCENARIO_FUNCTIONS[scenario](session, rec)
    return 0


def main() -> None:
    scenario, server_cmd = parse_argv(sys.argv, SCENARIOS)
    stdout = claim_stdout()
    rec = Recorder(scenario)
    code = 1
    try:
        code = anyio.run(run, scenario, server_cmd, rec)
    except BaseException as exc:  # still report what was seen before the failure
        rec.fail("fatal", exc)
    rec.out["exit_code"] = code
    rec.emit(stdout)
    sys.exit(code)


if __name__ == "__main__":
    main()
