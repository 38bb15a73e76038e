"""Observation recording and canned answers shared by the two client peers.

Must stay standard-library only: it is imported by clients running under either SDK
(mcp 1.x and mcp 2.x live in different virtual environments), so it may not import `mcp`.

A client runs one scenario and prints ONE JSON object on stdout: everything it observed.
Each step is recorded under its own key, as the result dumped to wire-shaped JSON or as
{"error": {...}}, so one failing step never hides the rest of the run.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import signal
import sys
import time
import urllib.parse
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, TextIO

import anyio

# The deterministic "user" behind both clients: what elicitation, sampling and roots answer.
FORM_ANSWERS: dict[str, Any] = {"name": "octocat", "color": "blue"}
SAMPLING_TEXT = "Paris"
SAMPLING_MODEL = "rosetta-test-model"
ROOT_URI = "file:///tmp/project"
ROOT_NAME = "project"
FILE_TEXT = "hello from rosetta"  # what the filesystem scenario writes

USAGE = "usage: {prog} SCENARIO -- <server command...>"
# Directories a scenario gives as its roots, one after the other (os.pathsep-separated).
ROOTS_ENV = "ROSETTA_E2E_ROOTS"
# The name of the tool a tour adds at run time: each client's own, as clients share a server.
NEW_TOOL_ENV = "ROSETTA_E2E_NEW_TOOL"


def new_tool_name() -> str:
    return os.environ.get(NEW_TOOL_ENV) or "zap"


def parse_argv(argv: list[str], scenarios: tuple[str, ...]) -> tuple[str, list[str]]:
    prog = os.path.basename(argv[0])
    if len(argv) < 4 or argv[2] != "--" or argv[1] not in scenarios:
        sys.exit(USAGE.format(prog=prog) + f"; scenarios: {', '.join(scenarios)}")
    return argv[1], argv[3:]


def claim_stdout() -> TextIO:
    """Keep the real stdout for the one JSON line; anything else printed goes to stderr."""
    real = os.fdopen(os.dup(sys.stdout.fileno()), "w")
    sys.stdout = sys.stderr
    return real


def root_dirs() -> list[str]:
    """The directories the test named in $ROSETTA_E2E_ROOTS (a scenario needs two)."""
    dirs = [d for d in os.environ.get(ROOTS_ENV, "").split(os.pathsep) if d]
    if len(dirs) < 2:
        sys.exit(f"this scenario needs two directories in ${ROOTS_ENV}")
    return dirs


def file_uri(path: str) -> str:
    return "file://" + urllib.parse.quote(os.path.abspath(path))


def fill_form(requested_schema: dict[str, Any] | None) -> dict[str, Any]:
    properties = (requested_schema or {}).get("properties") or {}
    return {key: FORM_ANSWERS.get(key, f"<{key}>") for key in properties}


def error_info(exc: BaseException) -> dict[str, Any]:
    """{code, message, data} for an MCP error of either SDK, else the exception's type/text."""
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    error = getattr(exc, "error", None)
    if error is not None and hasattr(error, "code"):
        info = {"code": error.code, "message": error.message}
        if getattr(error, "data", None) is not None:
            info["data"] = error.data
        return info
    return {"type": type(exc).__name__, "message": str(exc)}


def publish(path: Any, text: str) -> None:
    """Write `text` to `path` whole or not at all: a test that waits for the file to exist
    must never read it half written (a plain write creates it empty first)."""
    draft = f"{path}.draft"
    with open(draft, "w") as out:
        out.write(text)
    os.replace(draft, path)


def dump(value: Any) -> Any:
    """Wire-shaped JSON of an SDK model (aliases, no None fields); plain data as is."""
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json", by_alias=True, exclude_none=True)
    if isinstance(value, list | tuple):
        return [dump(item) for item in value]
    return value


class Recorder:
    """Collects observations; `phase` tags notifications with the step that was running."""

    def __init__(self, scenario: str) -> None:
        self.out: dict[str, Any] = {
            "scenario": scenario,
            "errors": {},
            "notifications": [],
            "logs": [],
            "progress": [],
            "asked": {"elicitation": [], "sampling": [], "roots": 0},
        }
        self.phase = "start"
        # What the client answers roots/list with: (uri, name) pairs; a scenario may change it.
        self.roots: list[tuple[str, str]] = [(ROOT_URI, ROOT_NAME)]
        self._arrived = anyio.Event()

    async def step(self, key: str, action: Callable[[], Awaitable[Any]]) -> Any:
        """Run one step; record its dumped result (or error) under `key`. None on error."""
        try:
            value = await action()
        except Exception as exc:  # every failure is an observation, not a crash
            self.fail(key, exc)
            return None
        self.out[key] = dump(value)
        return value

    def fail(self, key: str, exc: BaseException) -> None:
        self.out[key] = {"error": error_info(exc)}
        self.out["errors"][key] = error_info(exc)

    def note(self, kind: str, entry: dict[str, Any]) -> None:
        self.out[kind].append({"phase": self.phase, **entry})
        self._arrived.set()

    async def wait_for(self, kind: str, method: str | None, timeout: float) -> bool:
        """Wait until an entry of `kind` (with `method`, if given) is seen in this phase."""
        with anyio.move_on_after(timeout):
            while not self._seen(kind, method):
                self._arrived = anyio.Event()
                await self._arrived.wait()
            return True
        return False

    def _seen(self, kind: str, method: str | None) -> bool:
        return any(
            entry["phase"] == self.phase and (method is None or entry.get("method") == method)
            for entry in self.out[kind]
        )

    def emit(self, stream: TextIO) -> None:
        self.out["finished_at"] = time.time()
        stream.write(json.dumps(self.out, sort_keys=True) + "\n")
        stream.flush()


# --- the wire, for the restart scenarios ----------------------------------------------------

# How long a scenario waits for a killed server to be replaced and the session re-opened.
RESTART_TIMEOUT = 30.0


def kill(pid: int) -> None:
    """Kill the server process `pid` as a crash would: no goodbye, no flush."""
    os.kill(pid, signal.SIGKILL)


def _wire_of(item: Any) -> dict[str, Any] | None:
    """A stream item as wire JSON: an SDK SessionMessage of either SDK (1.x wraps the message
    in a RootModel), or None for an exception the stream carried."""
    message = getattr(item, "message", None)
    root = getattr(message, "root", message)
    if not hasattr(root, "model_dump"):
        return None
    wire: dict[str, Any] = root.model_dump(mode="json", by_alias=True, exclude_none=True)
    return wire


@contextlib.asynccontextmanager
async def tapped(transport: Any, rec: Recorder) -> AsyncIterator[tuple[Any, Any]]:
    """`transport`'s streams, with each request the client sends and each response it receives
    recorded by id and phase in rec.out["wire"]: the test checks that every request got
    exactly one answer, which the SDK's own bookkeeping would hide."""
    wire: dict[str, list[dict[str, Any]]] = {"sent": [], "answered": []}
    rec.out["wire"] = wire
    async with transport as (read, write):
        inbound_send, inbound = anyio.create_memory_object_stream[Any](math.inf)
        outbound, outbound_receive = anyio.create_memory_object_stream[Any](math.inf)

        async def receive() -> None:
            async with inbound_send:
                async for item in read:
                    message = _wire_of(item)
                    if message is not None and "id" in message and "method" not in message:
                        wire["answered"].append({"id": message["id"], "phase": rec.phase})
                    await inbound_send.send(item)

        async def send() -> None:
            async with outbound_receive:
                async for item in outbound_receive:
                    message = _wire_of(item)
                    if message is not None and "id" in message and "method" in message:
                        wire["sent"].append({"id": message["id"], "phase": rec.phase,
                                             "method": message["method"]})
                    await write.send(item)

        async with anyio.create_task_group() as tg:
            tg.start_soon(receive)
            tg.start_soon(send)
            try:
                yield inbound, outbound
            finally:
                tg.cancel_scope.cancel()
