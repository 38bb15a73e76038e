"""The era remembered per server command, in one small JSON file of the user's state
directory: `$XDG_STATE_HOME/mcp-rosetta/eras.json` (default `~/.local/state`).

Must not decide anything (bridge/core/recall.py does): it loads what was stored for a command
into `CoreConfig.remembered` (the stdio bridge at its start, the daemon at each session's) and
stores, and logs, what a `Remember` action says. A command is its arguments and the directory
it starts in; what the server answered is checked by the core.
A file that cannot be read is no memory, one that cannot be written costs a warning: the
probe then runs as if nothing were remembered.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import orjson

from bridge.core.config import CoreConfig
from bridge.core.events import Remember
from bridge.shell.settings import ShellConfig

if TYPE_CHECKING:
    from bridge.shell.logs import Logger

REMEMBERED = ("the next starts skip the probe (as --server-era legacy, or server_era = "
              '"legacy", always does), until the server answers otherwise')
"""What the log says once, when a command's legacy era is stored."""
ENTRIES_AT_MOST = 256
"""Commands remembered; the oldest are forgotten first."""


def remembering(shell: ShellConfig, core: CoreConfig) -> EraMemory | None:
    """The era memory of the server command, unless it is off, the era pinned, or the
    server a URL."""
    if not shell.remember_era or core.server_era != "auto" or shell.url is not None:
        return None
    return EraMemory(state_file(os.environ), command_key(shell.command, shell.cwd))


def storing(memory: EraMemory, log: Logger) -> Callable[[Remember], None]:
    """Store what the core says of the server's era, and say so; a failure costs a warning
    only (the probe then runs at the next start)."""

    def store(remember: Remember) -> None:
        if not memory.store(remember):
            log.warning("era.not_stored", error=memory.error, reason=remember.reason,
                        fix="set remember_era = false to probe at every start without this")
        elif remember.era is None:
            log.info("era.forgotten", file=memory.path, reason=remember.reason,
                     effect="the next start probes the server")
        else:
            log.info("era.remembered", era=remember.era, server=remember.server,
                     file=memory.path, reason=remember.reason, effect=REMEMBERED)

    return store


def state_file(environ: Mapping[str, str]) -> str:
    """Where the memory lives."""
    base = environ.get("XDG_STATE_HOME") or os.path.join(
        environ.get("HOME") or os.path.expanduser("~"), ".local", "state")
    return os.path.join(base, "mcp-rosetta", "eras.json")


def command_key(command: tuple[str, ...], cwd: str | None) -> str:
    """One server command: its arguments, and the directory it starts in (a relative path
    names another server elsewhere)."""
    return orjson.dumps([cwd or os.getcwd(), *command]).decode()


class EraMemory:
    """The memory of one server command."""

    def __init__(self, path: str, key: str) -> None:
        self.path = path
        self.key = key
        self.error: str | None = None
        """Why the last store failed, for the log; None when it did not."""

    def load(self) -> dict[str, Any] | None:
        """How the server named itself when its legacy era was learned; None if unknown."""
        entry = self._entries().get(self.key)
        server = entry.get("server") if isinstance(entry, dict) else None
        if not isinstance(entry, dict) or entry.get("era") != "legacy" \
                or not isinstance(server, dict):
            return None
        return {k: v for k, v in server.items() if k in ("name", "version")
                and isinstance(v, str)}

    def store(self, remember: Remember) -> bool:
        """Store (or forget) this command's era; False, with `error` set, if it failed."""
        entries = self._entries()
        if remember.era is None:
            if entries.pop(self.key, None) is None:
                return True
        else:
            entries[self.key] = {"era": remember.era, "server": remember.server,
                                 "at": round(time.time())}
        newest = sorted(entries.items(), key=_age)[:ENTRIES_AT_MOST]
        try:
            self._write({"servers": dict(newest)})
        except OSError as exc:
            self.error = f"cannot write {self.path}: {exc.strerror or exc}"
            return False
        return True

    def _entries(self) -> dict[str, Any]:
        try:
            with open(self.path, "rb") as file:
                stored = orjson.loads(file.read())
        except (OSError, orjson.JSONDecodeError):
            return {}
        servers = stored.get("servers") if isinstance(stored, dict) else None
        return servers if isinstance(servers, dict) else {}

    def _write(self, data: dict[str, Any]) -> None:
        """Atomically, readable by the user alone (a command's arguments may say much)."""
        directory, name = os.path.split(self.path)
        os.makedirs(directory, mode=0o700, exist_ok=True)
        tmp = os.path.join(directory, f".{name}.{os.getpid()}")
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "wb") as file:
                file.write(orjson.dumps(data, option=orjson.OPT_INDENT_2))
            os.replace(tmp, self.path)
        finally:
            with contextlib.suppress(OSError):
                os.unlink(tmp)


def _age(item: tuple[str, Any]) -> float:
    """Newest first."""
    entry = item[1]
    at = entry.get("at") if isinstance(entry, dict) else None
    return -at if isinstance(at, (int, float)) else 0.0
