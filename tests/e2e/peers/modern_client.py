"""A modern-only (2026-07-28) MCP client (mcp 2.x `Client`) that runs one scenario and reports.

Must not fall back to the legacy era: the `Client` is pinned with `mode="2026-07-28"`,
which never sends `initialize`; the only handshake-like traffic is one explicit
`server/discover`, whose result is adopted. A server that refuses it fails the run.

Usage: modern_client.py SCENARIO -- <server command...>
       modern_client.py SCENARIO -- http://HOST:PORT/PATH   (the SDK's Streamable HTTP)
Scenarios:
  basic   discover; list/call tools; progress; resources, templates, prompts, completion;
          cancel a slow call; per-request log levels
  inputs  every input_required kind: elicitation, sampling, roots, two in one round,
          two rounds, a requestState-only round, a prompt and a resource that elicit
  notify  subscriptions/listen: tools list_changed, resources/updated, closing a stream
  restart two listen streams open, then kill the server (by the pid its `pid` tool gives)
          during a slow call; once its tools stream says the tools changed, the same client
          lists and calls tools, hears of a new tool and of the subscribed resource on the
          streams it opened before, and gets logs at the level it asks for
  filesystem  @modelcontextprotocol/server-filesystem started with no directory: it works in
          the client's roots (the first directory of $ROSETTA_E2E_ROOTS), then in the second
          once the client's roots change
  everything  @modelcontextprotocol/server-everything: its roots tool before and after the
          roots change, and one call of each other kind it offers
  undeclared  the client declares elicitation only: tools that ask for sampling or roots
          (ask_model, list_roots), one that elicits (ask_name), then echo
  undeclared_none  the client declares no input capability at all: ask_model, list_roots,
          then echo
  tour    one of each thing a client does, for the HTTP front: list and call tools, progress,
          logs at a level, an elicitation answered, and a tools list_changed heard on a
          listen stream (then the new tool, named by $ROSETTA_E2E_NEW_TOOL, listed and called)
  timeout a slow call of 10 s (under a bridge's shorter request_timeout), timed, then stats

Prints ONE JSON object on stdout (see peer_common.Recorder); exits 1 if discovery failed,
0 otherwise (step failures are recorded, not fatal).
"""

from __future__ import annotations

import os
import sys
import time
import warnings
from typing import Any

import anyio
import mcp_types as types
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPDeprecationWarning
from peer_common import (
    FILE_TEXT,
    RESTART_TIMEOUT,
    SAMPLING_MODEL,
    SAMPLING_TEXT,
    Recorder,
    claim_stdout,
    dump,
    error_info,
    file_uri,
    fill_form,
    kill,
    new_tool_name,
    parse_argv,
    root_dirs,
    tapped,
)

warnings.simplefilter("ignore", MCPDeprecationWarning)

MODERN = "2026-07-28"
LOG_LEVEL_KEY = "io.modelcontextprotocol/logLevel"
SCENARIOS = ("basic", "inputs", "notify", "restart", "filesystem", "everything", "undeclared",
             "undeclared_none", "tour", "timeout")
# What each undeclared scenario's client keeps of callbacks(): the capabilities it declares.
DECLARED = {"undeclared": ("elicitation_callback",), "undeclared_none": ()}
INPUT_CALLBACKS = ("elicitation_callback", "sampling_callback", "list_roots_callback")
SCENARIO_TIMEOUT = 60.0
EXPECT_TIMEOUT = 3.0
QUIET_PERIOD = 0.5


# --- callbacks: the deterministic user ------------------------------------------------------


def callbacks(rec: Recorder) -> dict[str, Any]:
    async def elicit(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        rec.out["asked"]["elicitation"].append(dump(params))
        content = fill_form(getattr(params, "requested_schema", None))
        return types.ElicitResult(action="accept", content=content)

    async def sample(context: Any, params: types.CreateMessageRequestParams) -> Any:
        rec.out["asked"]["sampling"].append(dump(params))
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(type="text", text=SAMPLING_TEXT),
            model=SAMPLING_MODEL,
            stop_reason="endTurn",
        )

    async def roots(context: Any) -> types.ListRootsResult:
        rec.out["asked"]["roots"] += 1
        roots = [types.Root(uri=uri, name=name) for uri, name in rec.roots]
        return types.ListRootsResult(roots=roots)

    async def log(params: types.LoggingMessageNotificationParams) -> None:
        rec.note("logs", {"level": params.level, "data": params.data, "logger": params.logger})

    async def message(message: Any) -> None:
        if isinstance(message, Exception):
            rec.note("notifications", {"method": None, "exception": error_info(message)})
        else:
            rec.note("notifications", {"method": message.method, "params": dump(message.params)})

    return {
        "elicitation_callback": elicit,
        "sampling_callback": sample,
        "list_roots_callback": roots,
        "logging_callback": log,
        "message_handler": message,
    }


# --- scenario: basic ------------------------------------------------------------------------


async def basic(client: Client, rec: Recorder) -> None:
    tools = await list_tool_names(client, rec)
    await rec.step("call:echo", lambda: client.call_tool("echo", {"text": "hi"}))
    await rec.step("call:add", lambda: client.call_tool("add", {"a": 2, "b": 3}))
    if "squares" in tools:
        await rec.step("call:squares", lambda: client.call_tool("squares", {"n": 3}))
    await call_with_progress(client, rec)
    await browse_resources(client, rec)
    await browse_prompts(client, rec)
    await cancel_slow(client, rec)
    if "stats" in tools:
        await rec.step("call:stats", lambda: client.call_tool("stats", {}))
    if "chatty" in tools:
        await chatty_at(client, rec, "warning")
        await chatty_at(client, rec, None)


async def list_tool_names(client: Client, rec: Recorder, key: str = "tools") -> list[str]:
    listed = await rec.step(key, client.list_tools)
    names = [tool.name for tool in listed.tools] if listed else []
    rec.out[key + ":names"] = names
    return names


async def call_with_progress(client: Client, rec: Recorder) -> None:
    async def progress(value: float, total: float | None, message: str | None) -> None:
        rec.out["progress"].append({"progress": value, "total": total, "message": message})

    await rec.step(
        "call:slow", lambda: client.call_tool("slow", {"steps": 3}, progress_callback=progress)
    )


async def browse_resources(client: Client, rec: Recorder) -> None:
    await rec.step("resources", client.list_resources)
    await rec.step("templates", client.list_resource_templates)
    for uri in ("memo://greeting", "memo://note/alice"):
        await rec.step(f"read:{uri}", lambda uri=uri: client.read_resource(uri))


async def browse_prompts(client: Client, rec: Recorder) -> None:
    await rec.step("prompts", client.list_prompts)
    await rec.step("prompt:greet", lambda: client.get_prompt("greet", {"name": "alice"}))
    argument = {"name": "name", "value": "al"}
    ref = types.PromptReference(type="ref/prompt", name="greet")
    await rec.step("complete:greet", lambda: client.complete(ref, argument))
    template = types.ResourceTemplateReference(type="ref/resource", uri="memo://note/{name}")
    await rec.step("complete:note", lambda: client.complete(template, argument))


async def cancel_slow(client: Client, rec: Recorder) -> None:
    """Abandon a running call once it has reported progress.

    The 2.x SDK turns a caller-side cancellation into notifications/cancelled on the wire
    (its "courtesy cancel"); the server then stops and, per spec, sends no response.
    """
    first = anyio.Event()

    async def progress(value: float, total: float | None, message: str | None) -> None:
        first.set()

    rec.phase = "cancel"
    async with anyio.create_task_group() as tg:
        tg.start_soon(
            rec.step,
            "cancel:call",
            lambda: client.call_tool("slow", {"steps": 60}, progress_callback=progress),
        )
        with anyio.move_on_after(EXPECT_TIMEOUT) as waited:
            await first.wait()
        tg.cancel_scope.cancel()
    rec.out["cancel"] = {"progress_seen": not waited.cancelled_caught}
    await anyio.sleep(0.2)  # let the cancellation reach the server before asking for stats


async def chatty_at(client: Client, rec: Recorder, level: str | None) -> None:
    """Call `chatty` opting in to logs at `level` (None: no opt-in, so no logs may come)."""
    rec.phase = f"chatty:{level}"
    meta = {LOG_LEVEL_KEY: level} if level else None
    await rec.step(rec.phase, lambda: client.call_tool("chatty", {}, meta=meta))
    await anyio.sleep(QUIET_PERIOD)


# --- scenario: inputs -----------------------------------------------------------------------


async def inputs(client: Client, rec: Recorder) -> None:
    tools = await list_tool_names(client, rec)
    if "ask_name" in tools:
        await rec.step("ask_name:manual", lambda: manual_rounds(client, rec))
    for name in ("ask_name", "ask_model", "list_roots", "ask_two", "wizard", "patience"):
        if name in tools:
            rec.phase = name
            await rec.step(f"call:{name}", lambda name=name: client.call_tool(name, {}))
    prompts = await rec.step("prompts", client.list_prompts)
    if prompts and "intro" in [prompt.name for prompt in prompts.prompts]:
        await rec.step("prompt:intro", lambda: client.get_prompt("intro", {}))
    resources = await rec.step("resources", client.list_resources)
    if resources and "memo://private" in [str(r.uri) for r in resources.resources]:
        await rec.step("read:memo://private", lambda: client.read_resource("memo://private"))


async def manual_rounds(client: Client, rec: Recorder) -> Any:
    """Drive ask_name's input_required rounds by hand, recording each raw result.

    The same exchange the SDK's automatic driver runs, but with the InputRequiredResult
    itself on record. Every round is answered, so no exchange is left parked on a bridge.
    """
    rounds: list[Any] = []
    rec.out["ask_name:rounds"] = rounds
    responses, state = None, None
    for _ in range(3):
        result = await client.session.call_tool(
            "ask_name",
            {},
            input_responses=responses,
            request_state=state,
            allow_input_required=True,
        )
        rounds.append(dump(result))
        if not isinstance(result, types.InputRequiredResult):
            return result
        responses = {key: answer(request) for key, request in (result.input_requests or {}).items()}
        state = result.request_state
    raise RuntimeError("ask_name still wants input after 3 rounds")


def answer(request: Any) -> Any:
    if request.method != "elicitation/create":
        raise RuntimeError(f"ask_name asked for {request.method}")
    content = fill_form(getattr(request.params, "requested_schema", None))
    return types.ElicitResult(action="accept", content=content)


# --- scenarios: undeclared, undeclared_none -------------------------------------------------


async def undeclared(client: Client, rec: Recorder) -> None:
    """Tools that ask for what the client did not declare get -32021; the rest still works."""
    for name in ("ask_model", "list_roots", "ask_name", "echo"):
        if name == "ask_name" and "elicitation_callback" not in DECLARED[rec.out["scenario"]]:
            continue
        rec.phase = name
        arguments = {"text": "still here"} if name == "echo" else {}
        await rec.step(f"call:{name}", lambda name=name, a=arguments: client.call_tool(name, a))


# --- scenario: timeout ----------------------------------------------------------------------


async def timeout(client: Client, rec: Recorder) -> None:
    """A call slower than the bridge's request_timeout, timed; then what the server says."""
    started = time.monotonic()
    await rec.step("call:slow", lambda: client.call_tool("slow", {"steps": 100, "delay": 0.1}))
    rec.out["slow_s"] = time.monotonic() - started
    await anyio.sleep(0.3)  # the cancellation reaches the server's handler
    await rec.step("call:stats", lambda: client.call_tool("stats", {}))


# --- scenario: notify -----------------------------------------------------------------------


async def notify(client: Client, rec: Recorder) -> None:
    uri = "memo://greeting"
    await list_tool_names(client, rec, "tools:before")
    async with client.listen(tools_list_changed=True) as tools_sub:
        record_subscription(rec, "listen:tools", tools_sub)
        async with client.listen(resource_subscriptions=[uri]) as uri_sub:
            record_subscription(rec, "listen:resource", uri_sub)
            await act(rec, "add_tool", lambda: client.call_tool("add_tool", {"name": "zap"}))
            await expect_event(rec, "add_tool", tools_sub)
            await act(rec, "touch", lambda: client.call_tool("touch", {"uri": uri}))
            await expect_event(rec, "touch", uri_sub)
            await act(rec, "touch_other", lambda: client.call_tool("touch", {"uri": "memo://x"}))
            await expect_event(rec, "touch_other", uri_sub, QUIET_PERIOD)
        # Closing a listen stream sends notifications/cancelled from a background task, so
        # give it time to reach the server before testing that the stream is gone.
        await anyio.sleep(QUIET_PERIOD)
        await act(rec, "touch_closed", lambda: client.call_tool("touch", {"uri": uri}))
        await expect_event(rec, "touch_closed", tools_sub, QUIET_PERIOD)
    await list_tool_names(client, rec, "tools:after")
    await rec.step("call:zap", lambda: client.call_tool("zap", {}))


def record_subscription(rec: Recorder, key: str, sub: Any) -> None:
    rec.out[key] = {"id": sub.subscription_id, "honored": dump(sub.honored)}


async def act(rec: Recorder, phase: str, action: Any) -> None:
    rec.phase = phase
    await rec.step(phase, action)


async def expect_event(
    rec: Recorder, phase: str, sub: Any, timeout: float = EXPECT_TIMEOUT
) -> None:
    """Record the next event on `sub` under "<phase>:event", or None if none came in time."""
    event = None
    with anyio.move_on_after(timeout):
        event = await anext(sub)
    rec.out[f"{phase}:event"] = None if event is None else event_json(event)


def event_json(event: Any) -> dict[str, Any]:
    return {"type": type(event).__name__, **{k: v for k, v in vars(event).items()}}


# --- scenario: tour -------------------------------------------------------------------------


async def tour(client: Client, rec: Recorder) -> None:
    added = new_tool_name()
    await list_tool_names(client, rec)
    await rec.step("call:echo", lambda: client.call_tool("echo", {"text": "over http"}))
    await call_with_progress(client, rec)
    await chatty_at(client, rec, "warning")
    rec.phase = "ask_name"
    await rec.step("call:ask_name", lambda: client.call_tool("ask_name", {}))
    async with client.listen(tools_list_changed=True) as tools_sub:
        record_subscription(rec, "listen:tools", tools_sub)
        await act(rec, "add_tool", lambda: client.call_tool("add_tool", {"name": added}))
        await expect_event(rec, "add_tool", tools_sub)
    rec.phase = "after"
    await list_tool_names(client, rec, "tools:after")
    await rec.step("call:added", lambda: client.call_tool(added, {}))


# --- scenario: restart ----------------------------------------------------------------------


async def restart(client: Client, rec: Recorder) -> None:
    uri = "memo://greeting"
    async with client.listen(tools_list_changed=True) as tools_sub:
        record_subscription(rec, "listen:tools", tools_sub)
        async with client.listen(resource_subscriptions=[uri]) as uri_sub:
            record_subscription(rec, "listen:resource", uri_sub)
            await rec.step("pid:before", lambda: client.call_tool("pid", {}))
            await kill_during_a_call(client, rec)
            # Once the new server serves, the stream hears that the tools may have changed.
            await expect_event(rec, "restart", tools_sub, RESTART_TIMEOUT)
            rec.phase = "after"
            await list_tool_names(client, rec, "tools:after")
            await rec.step("call:echo", lambda: client.call_tool("echo", {"text": "hi"}))
            await rec.step("pid:after", lambda: client.call_tool("pid", {}))
            await act(rec, "add_tool", lambda: client.call_tool("add_tool", {"name": "zap"}))
            await expect_event(rec, "add_tool", tools_sub)
            await act(rec, "touch", lambda: client.call_tool("touch", {"uri": uri}))
            await expect_event(rec, "touch", uri_sub)
            await chatty_at(client, rec, "warning")


async def kill_during_a_call(client: Client, rec: Recorder) -> None:
    """Kill the server once a slow call is running there; the call's one answer is recorded."""
    began = anyio.Event()

    async def progress(value: float, total: float | None, message: str | None) -> None:
        began.set()

    rec.phase = "restart"
    async with anyio.create_task_group() as tg:
        tg.start_soon(
            rec.step,
            "kill:slow",
            lambda: client.call_tool("slow", {"steps": 600}, progress_callback=progress),
        )
        with anyio.move_on_after(RESTART_TIMEOUT):
            await began.wait()
            kill(rec.out["pid:before"]["structuredContent"]["pid"])
            rec.out["killed"] = True


# --- scenarios for published servers --------------------------------------------------------


def give_roots(rec: Recorder, directory: str) -> None:
    """From now on the client's roots are `directory` alone (the server is not told: a
    2026-07-28 client has no roots/list_changed)."""
    rec.roots = [(file_uri(directory), os.path.basename(directory))]


async def filesystem(client: Client, rec: Recorder) -> None:
    first, second = root_dirs()[:2]
    give_roots(rec, first)
    await list_tool_names(client, rec)
    call = client.call_tool
    await rec.step("allowed:first", lambda: call("list_allowed_directories", {}))
    inside = os.path.join(first, "hello.txt")
    await rec.step("write:first", lambda: call("write_file",
                                               {"path": inside, "content": FILE_TEXT}))
    await rec.step("read:first", lambda: call("read_text_file", {"path": inside}))
    outside = os.path.join(second, "hello.txt")
    await rec.step("write:second:before", lambda: call("write_file",
                                                       {"path": outside, "content": FILE_TEXT}))
    give_roots(rec, second)
    await rec.step("allowed:second", lambda: call("list_allowed_directories", {}))
    await rec.step("write:second", lambda: call("write_file",
                                                {"path": outside, "content": FILE_TEXT}))
    await rec.step("read:second", lambda: call("read_text_file", {"path": outside}))
    await rec.step("read:first:after", lambda: call("read_text_file", {"path": inside}))


async def everything(client: Client, rec: Recorder) -> None:
    first, second = root_dirs()[:2]
    give_roots(rec, first)
    await list_tool_names(client, rec)
    call = client.call_tool
    await rec.step("roots:first", lambda: call("get-roots-list", {}))
    give_roots(rec, second)
    await rec.step("roots:second", lambda: call("get-roots-list", {}))
    await rec.step("call:echo", lambda: call("echo", {"message": "hi"}))
    await rec.step("call:get-sum", lambda: call("get-sum", {"a": 2, "b": 3}))
    await rec.step("call:structured", lambda: call("get-structured-content",
                                                   {"location": "New York"}))

    async def progress(value: float, total: float | None, message: str | None) -> None:
        rec.out["progress"].append({"progress": value, "total": total, "message": message})

    await rec.step("call:long", lambda: call("trigger-long-running-operation",
                                             {"duration": 0.3, "steps": 3},
                                             progress_callback=progress))
    await rec.step("call:sampling", lambda: call("trigger-sampling-request",
                                                 {"prompt": "Capital of France?"}))
    await rec.step("call:elicitation", lambda: call("trigger-elicitation-request", {}))
    listed = await rec.step("resources", client.list_resources)
    await rec.step("templates", client.list_resource_templates)
    if listed and listed.resources:
        uri = str(listed.resources[0].uri)
        await rec.step("read:first", lambda: client.read_resource(uri))
    await rec.step("prompts", client.list_prompts)
    await rec.step("prompt:args", lambda: client.get_prompt("args-prompt", {"city": "Paris"}))
    ref = types.PromptReference(type="ref/prompt", name="completable-prompt")
    await rec.step("complete:department", lambda: client.complete(
        ref, {"name": "department", "value": "E"}))


# --- driver ---------------------------------------------------------------------------------

SCENARIO_FUNCTIONS = {
    "basic": basic,
    "inputs": inputs,
    "notify": notify,
    "restart": restart,
    "filesystem": filesystem,
    "everything": everything,
    "undeclared": undeclared,
    "undeclared_none": undeclared,
    "tour": tour,
    "timeout": timeout,
}


async def discover(client: Client, rec: Recorder) -> bool:
    """One explicit server/discover, adopted; no initialize fallback whatever it answers."""
    raw = await rec.step("discover", lambda: client.session.send_discover(MODERN))
    if raw is None:
        return False
    client.session.adopt(types.DiscoverResult.model_validate(raw))
    rec.out["protocol_version"] = client.protocol_version
    return True


def make_client(server_cmd: list[str], rec: Recorder, scenario: str) -> Client:
    params: StdioServerParameters | str
    if len(server_cmd) == 1 and server_cmd[0].startswith(("http://", "https://")):
        params = server_cmd[0]  # the SDK's own Streamable HTTP transport
    else:
        params = StdioServerParameters(command=server_cmd[0], args=server_cmd[1:],
                                       env=dict(os.environ))
    hooks = callbacks(rec)
    if scenario in DECLARED:  # no callback, no capability (ClientSession._build_capabilities)
        for name in INPUT_CALLBACKS:
            if name not in DECLARED[scenario]:
                del hooks[name]
    return Client(
        tapped(transport_of(params), rec) if scenario == "restart" else params,
        mode=MODERN,  # adopt 2026-07-28 directly: no probe-then-initialize fallback
        cache=None,  # every list goes to the wire, so change notifications are observable
        read_timeout_seconds=SCENARIO_TIMEOUT,
        **hooks,
    )


def transport_of(params: StdioServerParameters | str) -> Any:
    """The transport `Client(params)` would open itself (to tap it)."""
    if isinstance(params, str):
        return streamable_http_client(params)
    return stdio_client(params)


async def run(scenario: str, server_cmd: list[str], rec: Recorder) -> int:
    with anyio.fail_after(SCENARIO_TIMEOUT + 5):
        async with make_client(server_cmd, rec, scenario) as client:
            if not await discover(client, rec):
                return 1
            await SCENARIO_FUNCTIONS[scenario](client, rec)
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
