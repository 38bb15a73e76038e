"""The server's environment: the bridge's own, or only an allowlist of it, plus `env`.

Must not log or return anything but the environment itself: values may be secrets (only
names may reach a log), and it must stay cheap to import (the server starts before trio).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

# The service manager's notify and listen sockets are ours: a server that found them would be
# taken for the service (Type=notify), or take over connections meant for the bridge. So is
# the HTTP front's bearer token (MCP_ROSETTA_TOKEN): the server has no use for it.
OURS = ("NOTIFY_SOCKET", "LISTEN_FDS", "LISTEN_PID", "LISTEN_FDNAMES", "WATCHDOG_USEC",
        "WATCHDOG_PID", "MCP_ROSETTA_TOKEN")
MINIMUM = ("PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "LC_*", "TZ",
           "TMPDIR", "XDG_*", "CREDENTIALS_DIRECTORY")
"""What a server always gets under an allowlist (`pass_env`): where programs, its home and
its temporary files are, who it runs as, its locale and time zone, the XDG directories, and
systemd's credentials directory (LoadCredential=). A name ending in * is a prefix."""

Assignment = tuple[str, str | None]
"""KEY and its value, or KEY and None: pass the bridge's own value of KEY (if it has one)."""


def without_ours(base: Mapping[str, str]) -> dict[str, str]:
    return {key: value for key, value in base.items() if key not in OURS}


def server_environment(base: Mapping[str, str], env: Iterable[Assignment] = (),
                       pass_env: Iterable[str] | None = None) -> dict[str, str]:
    """`base` (the bridge's environment), kept whole or, given `pass_env`, cut down to those
    names and MINIMUM; then `env` on top. The bridge's own sockets never pass."""
    kept = without_ours(base)
    if pass_env is not None:
        allowed = (*MINIMUM, *pass_env)
        kept = {key: value for key, value in kept.items() if _allowed(key, allowed)}
    for key, value in env:
        if value is not None:
            kept[key] = value
        elif key in base and key not in OURS:
            kept[key] = base[key]
    return kept


def _allowed(key: str, names: Iterable[str]) -> bool:
    return any(key.startswith(name[:-1]) if name.endswith("*") else key == name
               for name in names)
