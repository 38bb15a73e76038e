"""The settings the core acts on, as one immutable record with documented defaults.

Must not read files or the environment: bridge/config.py builds this from TOML and flags.
"""

from __future__ import annotations

from dataclasses import field
from typing import Literal

from bridge import __version__
from bridge.core.codec import Message
from bridge.core.record import record

ServerEra = Literal["auto", "modern", "legacy"]


def default_bridge_info() -> Message:
    """The Implementation mcp-rosetta names itself with."""
    return {"name": "mcp-rosetta", "version": __version__}


@record(frozen=True)
class CoreConfig:
    server_era: ServerEra = "auto"
    """auto: probe with server/discover (stdio.mdx §Backward Compatibility); else pin it."""
    remembered: Message | None = None
    """The server command was found legacy at an earlier start, the server then naming
    itself so (serverInfo's name and version): its first start skips the probe (recall.py)."""
    probe_timeout: float = 5.0
    """Seconds to wait for the probe's answer before taking the server as legacy, provisionally
    (a later modern answer corrects it); also how long a client that has not spoken yet is
    answered with the error of a server that never served, before the bridge stops."""
    request_timeout: float = 0.0
    """Seconds a forwarded request may wait for its answer; 0 waits for ever."""
    drain_timeout: float = 5.0
    """Seconds to wait, once the client closes its input, for answers it is still owed."""
    restart_backoff: tuple[float, float] = (0.5, 30.0)
    """First and largest delay before starting again a server that exited or closed its
    output; it doubles with each restart counted in restart_window."""
    max_restarts: int = 5
    """Restarts allowed within restart_window; one more ends the session (exit 69). 0: none."""
    restart_window: float = 60.0
    """Seconds over which restarts are counted against max_restarts."""
    bridge_info: Message = field(default_factory=default_bridge_info)
    """The Implementation the bridge names when a peer's own is unknown."""
    default_log_level: str | None = None
    """Mode A: logLevel stamped before the legacy client's first logging/setLevel."""
    mrtr_max_rounds: int = 32
    """Mode A: input_required rounds one call may take before it fails."""
    mrtr_timeout: float = 600.0
    """Mode A: seconds a whole input_required loop may take (user think time included)."""
    mrtr_max_requests: int = 16
    """Mode A: input requests one round may carry."""
    mrtr_backoff: tuple[float, float] = (0.05, 5.0)
    """Mode A: first and largest delay before retrying a requestState-only result."""
    listen_backoff: tuple[float, float] = (0.5, 30.0)
    """Mode A: first and largest delay before re-opening a listen stream the server ended."""
    parked_timeout: float = 900.0
    """Mode B: seconds a parked call waits for the modern client's retry before it is cancelled."""
    state_route: str = ""
    """Mode B: the name of this core's server process in a pool, and in a fleet of its node
    (`placement.route_for`), sealed into the requestState it issues so that a retry reaches
    this core; "" for a pool's first process outside a fleet (and on stdio)."""
    share_changes: bool = False
    """Mode B: the change notifications this core's server raises are also shared
    (`ShareChange`) with the client's other cores: a pool's later process, a fleet's node."""
    park_window: float = 0.005
    """Mode B: seconds to gather a legacy server's concurrent input requests into one round."""
    cache_ttl_ms: int = 0
    """Mode B: ttlMs on complete results of the cacheable methods (caching.mdx); retried
    (MRTR) results always get 0. 0 means always stale: a legacy server gives no lifetime."""
    handshake_timeout: float = 10.0
    """Mode B: seconds each step of the bridge's own legacy handshake (initialize, then a
    settling ping) may take before the server is given up (initialize) or taken as ready."""
    roots: tuple[str, ...] = ()
    """Mode B: file:// URIs the bridge answers a legacy server's roots/list with while it
    does not know the modern client's roots."""
    roots_refresh: float = 60.0
    """Mode B: seconds the client's roots, once heard, are trusted before a call that declares
    roots asks for them again (once the server has been given roots); 0: every such call. A
    client's notifications/roots/list_changed makes the next such call ask at once."""
    roots_wait: float = 2.0
    """Mode B: seconds calls wait, after the server was told the roots changed, for it to ask
    for them again and answer a ping."""
    roots_settle: float = 0.1
    """Mode B: seconds calls then wait more, for a server that applies new roots
    asynchronously."""
    url_elicitation_wait: float = 30.0
    """Mode B: after the client accepts the URL elicitations a legacy -32042 asked for, seconds
    to wait for the server's notifications/elicitation/complete before re-sending the call."""
    shutdown_message: str = "mcp-rosetta is shutting down"
    """The error a request is answered with when the bridge stops before answering it, or
    that arrives while it winds down; it begins with errors.SHUTTING_DOWN (the HTTP front's
    names the node's stop, and what to do)."""
    debug_logs: bool = False
    """Emit per-message debug log events (costly; off unless the log level is debug)."""
