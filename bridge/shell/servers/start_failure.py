"""Why a server command could not be started, in words that name the fix.

Must not start anything nor log: spawn_process raises what this builds, and the supervisor
delivers it to the core as ChildExited(126 or 127, cause=...) like any other exit.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Mapping, Sequence

from bridge.errors import ServerUnavailable

NOT_FOUND = 127
NOT_EXECUTABLE = 126
"""The statuses a shell reports for these two failures (and 126 for any other exec error)."""

# Programs often installed under another name (Debian has python3 but no python).
_ALIASES = {"python": "python3", "pip": "pip3", "node": "nodejs", "nodejs": "node"}


class NotStarted(ServerUnavailable):
    """The server command could not be executed: `status` as a shell would report it, and
    `cause` saying what is wrong and how to fix it."""

    def __init__(self, status: int, cause: str) -> None:
        super().__init__(cause)
        self.status = status
        self.cause = cause


def not_started(argv: Sequence[str], env: Mapping[str, str], cwd: str | None,
                exc: BaseException) -> NotStarted:
    name = argv[0]
    search = env.get("PATH", os.defpath)
    if isinstance(exc, OSError) and cwd is not None and exc.filename == cwd:
        return NotStarted(NOT_EXECUTABLE, f"cannot start server command {name}: cannot enter "
                          f"its working directory {cwd} ({exc.strerror}); fix cwd")
    if isinstance(exc, FileNotFoundError):
        return NotStarted(NOT_FOUND, _not_found(name, search, cwd))
    if isinstance(exc, PermissionError):
        return NotStarted(NOT_EXECUTABLE, _not_executable(name, search, cwd))
    if isinstance(exc, OSError) and exc.errno == errno.ENOEXEC:
        return NotStarted(NOT_EXECUTABLE, f"server command {name} is not a program the system "
                          "can run (no #! line?): run it through its interpreter, e.g. "
                          f'command = ["python3", "{name}"]')
    reason = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
    return NotStarted(NOT_EXECUTABLE, f"cannot start server command {name}: {reason}")


def not_found(argv: Sequence[str], env: Mapping[str, str], cwd: str | None) -> str | None:
    """Why `argv`'s program cannot be found, in the words a failed start would use (the
    command, and the PATH searched); None if it is there (usable or not: a start says)."""
    name = argv[0]
    search = env.get("PATH", os.defpath)
    if "/" in name:
        found = os.path.exists(_where(name, cwd))
    else:
        found = _search(name, search, usable=False) is not None
    return None if found else _not_found(name, search, cwd)


def _not_found(name: str, search: str, cwd: str | None) -> str:
    if "/" in name:
        path = _where(name, cwd)
        if os.path.isfile(path):  # it exists: what its #! line names does not
            return (f"server command {name}: its interpreter was not found "
                    f"({_shebang(path) or 'see its #! line'}); fix the #! line, or run it "
                    "through an interpreter that exists")
        return f"server command not found: {path} does not exist; give the right path"
    hint = f"server command not found: {name!r} is in none of PATH={search}; give the " \
           "absolute path of the program"
    alias = _ALIASES.get(name)
    found = _search(alias, search) if alias else None
    if alias and found:
        hint += f" ({alias} exists: {found})"
    return hint


def _not_executable(name: str, search: str, cwd: str | None) -> str:
    path = _where(name, cwd) if "/" in name else (_search(name, search, usable=False) or name)
    if os.path.isdir(path):
        return f"server command {path} is a directory, not a program; give the program's path"
    return (f"server command not executable: {path}; make it executable (chmod +x {path}) "
            f'or run it through its interpreter, e.g. command = ["python3", "{path}"]')


def _where(name: str, cwd: str | None) -> str:
    return name if os.path.isabs(name) or cwd is None else os.path.join(cwd, name)


def _search(name: str, search: str, *, usable: bool = True) -> str | None:
    """The first `name` in the PATH `search`: executable, or (not `usable`) any file."""
    for folder in search.split(os.pathsep):
        path = os.path.join(folder or ".", name)
        if os.path.isfile(path) and (not usable or os.access(path, os.X_OK)):
            return path
    return None


def _shebang(path: str) -> str:
    try:
        with open(path, "rb") as file:
            first = file.readline(256)
    except OSError:
        return ""
    return first.decode("utf-8", "replace").strip() if first.startswith(b"#!") else ""
