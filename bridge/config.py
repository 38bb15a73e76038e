"""The configuration file and flags: read TOML, validate every key, build CoreConfig + ShellConfig.

Must not start anything or touch the protocol: a bad file is a ConfigError (exit 78) naming
the key, a bad flag value a UsageError (exit 64); nothing else happens here.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable, Mapping
from typing import Any

from bridge.core.config import CoreConfig
from bridge.core.eras import LOG_LEVELS
from bridge.errors import BridgeError, ConfigError
from bridge.fleet import members
from bridge.oauth_options import checked_table, oauth_resource
from bridge.shell.settings import LEVELS, LOG_FORMATS, DaemonConfig, Settings, ShellConfig, Timing

Check = Callable[[Any], Any]
"""Returns the value to use, or raises ValueError with what was expected."""


def choice(*options: str) -> Check:
    def check(value: Any) -> str:
        if value not in options:
            raise ValueError(f"expected one of {', '.join(options)}")
        return str(value)

    return check


# Durations and sizes: a bare number (seconds, bytes) or a number with its unit.
_SECONDS_PER = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
_BYTES_PER = {"": 1, "b": 1, "kib": 1024, "mib": 1024**2, "gib": 1024**3,
              "kb": 1000, "mb": 1000**2, "gb": 1000**3}
# The patterns of this module are strings, compiled (and cached) by `re` at their first use:
# most starts read no duration, size or header, and each compile at import is about 1M
# instructions of the start.
_AMOUNT = r"\s*(\d+(?:\.\d*)?|\.\d+)\s*([a-z]*)\s*"
DURATIONS = "seconds >= 0 as a number or with a unit: 5, 1.5s, 250ms, 2m, 1h"
SIZES = "bytes as an integer >= 1 or with a unit: 1000000, 512KiB, 64MiB, 1GiB (or kB, MB, GB)"


def _amount(value: Any, units: Mapping[str, float], bare: str) -> float | None:
    """`value` in base units: a number as it is, a string as number + unit (bare: `bare`)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    match = re.fullmatch(_AMOUNT, value, re.IGNORECASE) if isinstance(value, str) else None
    if match is None:
        return None
    per = units.get(match[2].lower() or bare)
    return None if per is None else float(match[1]) * per


def switch(value: Any) -> bool:
    if not isinstance(value, bool):
        raise ValueError("expected true or false")
    return value


def seconds(value: Any) -> float:
    amount = _amount(value, _SECONDS_PER, "s")
    if amount is None or not math.isfinite(amount) or amount < 0:
        raise ValueError(f"expected {DURATIONS}")
    return amount


def size(value: Any) -> int:
    amount = _amount(value, _BYTES_PER, "")
    if amount is None or amount != int(amount) or amount < 1:
        raise ValueError(f"expected {SIZES}")
    return int(amount)


def level(*options: str) -> Check:
    """A level name, in any case ("DEBUG", "Info"), as its lower-case name."""
    pick = choice(*options)

    def check(value: Any) -> str:
        return str(pick(value.lower() if isinstance(value, str) else value))

    return check


def count(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError("expected an integer >= 1")
    return value


def count_or_zero(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError("expected an integer >= 0")
    return value


def milliseconds(value: Any) -> int:
    """An integer of milliseconds, or a string with a unit ("60s"; bare, milliseconds)."""
    if isinstance(value, str):
        amount = _amount(value, _SECONDS_PER, "ms")
        value = round(amount * 1000) if amount is not None and math.isfinite(amount) else None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError("expected milliseconds >= 0 as an integer (60000) or with a unit "
                         "(60s, 250ms)")
    return value


def backoff(value: Any) -> tuple[float, float]:
    if not isinstance(value, list) or len(value) != 2:
        raise ValueError("expected [first, largest] in seconds")
    first, largest = (seconds(v) for v in value)
    if not 0 < first <= largest:
        raise ValueError("expected 0 < first <= largest")
    return first, largest


def command(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
        raise ValueError('expected a non-empty array of strings, e.g. ["python", "-m", "server"]')
    return tuple(value)


def implementation(value: Any) -> dict[str, str]:
    # MCP Implementation (schema.ts): name and version required; a few display fields.
    if not isinstance(value, dict):
        raise ValueError("expected a table with name and version")
    unknown = set(value) - {"name", "version", "title", "description", "websiteUrl"}
    if unknown:
        raise ValueError(f"unknown key {sorted(unknown)[0]!r}")
    if not all(isinstance(value.get(k), str) and value[k] for k in ("name", "version")):
        raise ValueError("name and version must be non-empty strings")
    if not all(isinstance(v, str) for v in value.values()):
        raise ValueError("every field must be a string")
    return dict(value)


def root_uri(value: Any) -> str:
    """A root as the file:// URI roots need (client/roots.mdx §Root); a path becomes one."""
    if not isinstance(value, str) or not value:
        raise ValueError("expected a file:// URI or a directory path")
    if value.startswith("file://"):
        return value
    if "://" in value:
        raise ValueError("a root must be a file:// URI or a path")
    from pathlib import Path  # only when a path is configured: start-up time counts

    return Path(os.path.abspath(os.path.expanduser(value))).as_uri()


def roots(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list):
        raise ValueError('expected an array of file:// URIs or paths, e.g. ["~/project"]')
    return tuple(root_uri(v) for v in value)


def socket_path(value: Any) -> str:
    """`unix:PATH` or a plain absolute path, as the path; or an `http://HOST:PORT/PATH`
    address (the Streamable HTTP front), kept as it is."""
    if isinstance(value, str) and value.startswith("https://"):
        raise ValueError("the front speaks plain HTTP: TLS belongs to a reverse proxy in "
                         "front of it; listen on http://HOST:PORT/PATH behind the proxy")
    if isinstance(value, str) and value.startswith("http://"):
        from bridge.shell.http.address import parse_address

        parse_address(value)  # ValueError names what is wrong
        return value
    path = value.removeprefix("unix:") if isinstance(value, str) else None
    if not path or not path.startswith("/"):
        raise ValueError('expected "unix:/absolute/path", an absolute path, or '
                         '"http://HOST:PORT/PATH"')
    return path


def metrics_address(value: Any) -> str:
    """`http://HOST:PORT/PATH` for --metrics (the stdio bridge, the Unix daemon)."""
    if not isinstance(value, str) or not value.startswith("http://"):
        raise ValueError('expected "http://HOST:PORT/PATH", e.g. "http://127.0.0.1:9464/metrics"')
    from bridge.shell.http.address import parse_address

    parse_address(value)  # ValueError names what is wrong
    return value


def server_url(value: Any) -> str:
    """An http:// or https:// URL with a host: the Streamable HTTP endpoint (--url)."""
    from urllib.parse import urlsplit  # only when a URL is configured

    parts = urlsplit(value) if isinstance(value, str) else None
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError('expected an http:// or https:// URL, e.g. "https://mcp.example.com/mcp"')
    try:
        parts.port  # noqa: B018 - raises ValueError for a port that is no number
    except ValueError:
        raise ValueError("the URL's port is not a number from 0 to 65535") from None
    return str(value)


def oauth_client_id(value: Any) -> str:
    """A client id registered with the authorization server (--oauth-client-id)."""
    if not isinstance(value, str) or not value.strip() or any(c in value for c in "\r\n\0"):
        raise ValueError("expected a client id, a one-line string")
    return value.strip()


def client_metadata_url(value: Any) -> str:
    """The URL of a Client ID Metadata Document: https with a path (client-registration
    §Client ID Metadata Documents)."""
    from urllib.parse import urlsplit

    parts = urlsplit(value) if isinstance(value, str) else None
    if parts is None or parts.scheme != "https" or not parts.hostname \
            or parts.path in ("", "/"):
        raise ValueError('expected an https:// URL with a path, e.g. '
                         '"https://app.example.com/oauth/client.json"')
    return str(value)


_HEADER_NAME = r"[!#$%&'*+.^_`|~0-9A-Za-z-]+"  # RFC 9110 §5.6.2: a token (compiled at first use)


def header_name(value: Any) -> str:
    if not isinstance(value, str) or not re.fullmatch(_HEADER_NAME, value):
        raise ValueError("expected a header name (letters, digits, '-')")
    return value


def header_value(name: str, value: Any) -> str:
    if not isinstance(value, str) or any(c in value for c in "\r\n\0"):
        raise ValueError(f"{name}: expected a one-line string value")
    return value.strip()


def header_table(value: Any) -> tuple[tuple[str, str], ...]:
    """`{ Authorization = "Bearer ${TOKEN}" }`: headers sent with every request to --url (a
    value is never echoed back; ${VAR} is read from the environment when the bridge starts)."""
    if not isinstance(value, dict):
        raise ValueError('expected a table, e.g. headers = { Authorization = "Bearer ${TOKEN}" }')
    return tuple((header_name(k), header_value(k, v)) for k, v in value.items())


def header_line(text: str) -> tuple[str, str]:
    """`Name: value`, as --header takes it."""
    name, colon, value = text.partition(":")
    if not colon:
        raise ValueError('expected "Name: value", e.g. "Authorization: Bearer ${TOKEN}"')
    return header_name(name.strip()), header_value(name.strip(), value)


def _list_of(check: Check, example: str) -> Check:
    def checked(value: Any) -> tuple[Any, ...]:
        if not isinstance(value, list):
            raise ValueError(f"expected an array, e.g. {example}")
        return tuple(check(v) for v in value)

    return checked


def http_host(value: Any) -> str:
    from bridge.shell.http.address import allowed_host

    return allowed_host(value)


def http_origin(value: Any) -> str:
    from bridge.shell.http.address import allowed_origin

    return allowed_origin(value)


def file_mode(value: Any) -> int:
    """Permission bits, as an octal string ("0660") or a number (0o660 in TOML)."""
    try:
        mode = int(value, 8) if isinstance(value, str) else value
    except ValueError:
        mode = None
    if isinstance(mode, bool) or not isinstance(mode, int) or not 0 <= mode <= 0o777:
        raise ValueError('expected permission bits such as "0660"')
    return mode


def account(value: Any) -> str:
    if not isinstance(value, str | int) or isinstance(value, bool) or value == "":
        raise ValueError("expected a user or group name, or its number")
    return str(value)


def env_name(value: Any) -> str:
    if not isinstance(value, str) or not value or "=" in value or "\0" in value:
        raise ValueError("expected a variable name (no '=')")
    return value


def env_table(value: Any) -> tuple[tuple[str, str | None], ...]:
    """`{ KEY = "value" }`: variables set for the server (a value is never echoed back)."""
    if not isinstance(value, dict):
        raise ValueError('expected a table, e.g. env = { API_URL = "https://..." }')
    for key, item in value.items():
        env_name(key)
        if not isinstance(item, str) or "\0" in item:
            raise ValueError(f"{key}: expected a string value")
    return tuple(value.items())


def env_assignment(text: str) -> tuple[str, str | None]:
    """`KEY=VALUE`, or `KEY` alone: pass the bridge's own value of KEY."""
    key, equals, value = text.partition("=")
    env_name(key)
    return (key, value) if equals else (key, None)


def env_names(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list):
        raise ValueError('expected an array of variable names, e.g. ["API_TOKEN", "AWS_*"]')
    return tuple(env_name(v) for v in value)


def directory(value: Any) -> str:
    """A directory path, made absolute (from the directory the bridge starts in)."""
    if not isinstance(value, str) or not value or "\0" in value:
        raise ValueError("expected a directory path")
    return os.path.abspath(os.path.expanduser(value))


def file_path(value: Any) -> str:
    if not isinstance(value, str) or not value or "\0" in value:
        raise ValueError("expected a file path")
    return os.path.abspath(os.path.expanduser(value))


node_address = members.address

CORE_KEYS: dict[str, Check] = {
    "server_era": choice("auto", "modern", "legacy"),
    "probe_timeout": seconds,
    "request_timeout": seconds,
    "drain_timeout": seconds,
    "restart_backoff": backoff,
    "max_restarts": count_or_zero,
    "restart_window": seconds,
    "bridge_info": implementation,
    "default_log_level": level(*LOG_LEVELS),
    "mrtr_max_rounds": count,
    "mrtr_timeout": seconds,
    "mrtr_max_requests": count,
    "mrtr_backoff": backoff,
    "listen_backoff": backoff,
    "parked_timeout": seconds,
    "park_window": seconds,
    "cache_ttl_ms": milliseconds,
    "handshake_timeout": seconds,
    "url_elicitation_wait": seconds,
    "roots": roots,
    "roots_refresh": seconds,
    "roots_wait": seconds,
    "roots_settle": seconds,
}
SHELL_KEYS: dict[str, Check] = {
    "max_servers": count,
    "min_servers": count,
    "server_idle": seconds,
    "max_servers_total": count_or_zero,
    "command": command,
    "url": server_url,
    "headers": header_table,
    "oauth_client_id": oauth_client_id,
    "oauth_client_secret_file": file_path,
    "oauth_client_metadata_url": client_metadata_url,
    "oauth_client_credentials": switch,
    "connect_timeout": seconds,
    "read_timeout": seconds,
    "max_upstream_connections": count,
    "log_level": level(*LEVELS),
    "log_format": choice(*LOG_FORMATS),
    "shutdown_grace": seconds,
    "kill_grace": seconds,
    "max_message_bytes": size,
    "env": env_table,
    "pass_env": env_names,
    "cwd": directory,
    "transcript": file_path,
    "remember_era": switch,
    "metrics": metrics_address,
}
DAEMON_KEYS: dict[str, Check] = {
    "listen": socket_path,
    "listen_mode": file_mode,
    "listen_owner": account,
    "listen_group": account,
    "max_sessions": count,
    "session_idle": seconds,
    "max_tenants": count,
    "tenant_idle": seconds,
    "allowed_hosts": _list_of(http_host, '["mcp.example.com", "mcp.example.com:443"]'),
    "allowed_origins": _list_of(http_origin, '["https://app.example.com"]'),
    "token_file": file_path,
    "max_connections": count,
    "connection_idle": seconds,
    "stream_backlog": size,
    "drain_grace": seconds,
    "node": members.node_name,
    "node_url": node_address,
    "fleet_nodes": _list_of(node_address, '["http://10.0.0.2:8808", "http://10.0.0.3:8808"]'),
    "fleet_dns": members.dns_name,
    "fleet_affinity": choice("tenant", "none"),
    "fleet_key_file": file_path,
    "oauth": checked_table,  # [oauth]: the HTTP front as an OAuth resource server
}
# Keys both layers read: the core waits drain_timeout for answers it owes once the client has
# closed its input; the shell then gives a client that stopped reading as long to resume.
TIMING_KEYS = ("shutdown_grace", "kill_grace", "drain_timeout")
SHELL_FIELDS = ("command", "url", "headers", "oauth_client_id", "oauth_client_secret_file",
                "oauth_client_metadata_url", "oauth_client_credentials", "connect_timeout",
                "read_timeout", "max_upstream_connections", "log_format", "max_message_bytes",
                "env", "pass_env", "cwd", "transcript", "remember_era", "metrics", "config_file",
                "max_servers", "min_servers", "server_idle", "max_servers_total")
SECRET_KEYS = frozenset({"env", "headers"})
"""Keys whose values are never echoed in an error (they may hold secrets)."""
MERGED_KEYS = ("env", "pass_env", "headers", "allowed_hosts", "allowed_origins")
"""Keys whose flags add to the file's entries (a flag's KEY wins) instead of replacing them."""
DERIVED_CORE_FIELDS = frozenset({"debug_logs", "state_route", "remembered", "share_changes",
                                 "shutdown_message"})
"""CoreConfig fields no key sets: debug_logs follows log_level; the others are set by the shell
(a pool's or fleet's state_route and share_changes, the era memory's remembered, the front's
shutdown_message)."""


def accepted_keys() -> dict[str, Check]:
    """Every key a config file may hold, with its check: what `validate` accepts."""
    return CORE_KEYS | SHELL_KEYS | DAEMON_KEYS


def read_file(path: str) -> dict[str, Any]:
    import tomllib  # only when there is a file: everything before the server starts counts

    try:
        with open(path, "rb") as file:
            return tomllib.load(file)
    except OSError as exc:
        raise ConfigError(f"cannot read config {path}: {exc.strerror or exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"config {path} is not valid TOML: {exc}") from None


def validate(raw: Mapping[str, Any], where: str, error: type[BridgeError]) -> dict[str, Any]:
    """Every key known and every value good, converted; else `error` naming the first bad key."""
    checks = accepted_keys()
    values: dict[str, Any] = {}
    for key, value in raw.items():
        check = checks.get(key)
        if check is None:
            import difflib  # only for a key that is not known
            near = difflib.get_close_matches(key, list(checks), n=1)
            hint = f"; did you mean {near[0]}?" if near else ""
            raise error(f"{where}: unknown key {key!r}{hint}")
        try:
            values[key] = check(value)
        except ValueError as exc:
            got = "" if key in SECRET_KEYS else f" (got {value!r})"
            raise error(f"{where}: {key}: {exc}{got}") from None
    return values


def build(values: Mapping[str, Any]) -> Settings:
    """Settings from validated values; absent keys keep the documented defaults."""
    core = {k: v for k, v in values.items() if k in CORE_KEYS}
    log_level = values.get("log_level", "info")
    timing = Timing(**{k: v for k, v in values.items() if k in TIMING_KEYS})
    shell = ShellConfig(**{k: v for k, v in values.items() if k in SHELL_FIELDS},
                        log_level=log_level, timing=timing)
    daemon = DaemonConfig(**{k: v for k, v in values.items()
                             if k in DAEMON_KEYS and k != "oauth"},
                          oauth=oauth_resource(values["oauth"]) if values.get("oauth")
                          else None)
    return Settings(CoreConfig(**core, debug_logs=log_level == "debug"), shell, daemon)


def load_settings(path: str | None, overrides: Mapping[str, Any]) -> Settings:
    """The config file (if any) with `overrides` (from flags, already validated) on top."""
    values = validate(read_file(path), f"config {path}", ConfigError) if path else {}
    for key in MERGED_KEYS:
        if key in values and key in overrides:
            overrides = {**overrides, key: (*values[key], *overrides[key])}
    if "oauth" in values and "oauth" in overrides:  # a flag sets its key of the table
        overrides = {**overrides, "oauth": {**values["oauth"], **overrides["oauth"]}}
    values.update(overrides)
    cwd = values.get("cwd")
    if cwd is not None and not os.path.isdir(cwd):
        where = f"config {path}: cwd" if path and "cwd" not in overrides else "--cwd"
        raise ConfigError(f"{where}: no such directory: {cwd}; create it or fix the path")
    if path:
        values["config_file"] = os.path.abspath(path)
    return build(values)
