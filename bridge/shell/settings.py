"""The shell's own settings (those the core never sees), with their defaults.

Must not read files, flags or the environment (bridge/config.py fills this in), and must stay
cheap to import: the command line reads it before the server is started.
"""

from __future__ import annotations

from dataclasses import field
from typing import TYPE_CHECKING

from bridge.core.config import CoreConfig
from bridge.core.record import record

if TYPE_CHECKING:
    from bridge.fleet.home import Affinity

LEVELS = {"debug": 10, "info": 20, "warning": 30, "error": 40, "critical": 50}
"""The bridge's own log levels, by their structlog/stdlib numbers."""
LOG_FORMATS = ("auto", "json", "console")


@record(frozen=True)
class Timing:
    shutdown_grace: float = 2.0
    """Seconds from closing the child's stdin to SIGTERM."""
    kill_grace: float = 2.0
    """Seconds from SIGTERM to SIGKILL."""
    drain_timeout: float = 5.0
    """At shutdown, seconds the client may go without reading before what it is still owed
    is dropped (as long as it keeps reading, everything is delivered)."""


@record(frozen=True)
class ShellConfig:
    command: tuple[str, ...] = ()
    """The server command and its arguments."""
    url: str | None = None
    """A Streamable HTTP endpoint to use instead of a command (--url)."""
    headers: tuple[tuple[str, str], ...] = ()
    """(Name, value) sent with every request to `url`; values may hold ${VAR}, read from the
    environment at start. Never logged."""
    oauth_client_id: str | None = None
    """A client id registered beforehand with the authorization server of `url`."""
    oauth_client_secret_file: str | None = None
    """The file holding that client's secret (or $MCP_ROSETTA_OAUTH_CLIENT_SECRET)."""
    oauth_client_metadata_url: str | None = None
    """The https URL of a Client ID Metadata Document to sign in with, where supported."""
    oauth_client_credentials: bool = False
    """Sign in as that client itself (a service: client credentials grant, no browser)."""
    connect_timeout: float = 10.0
    """Seconds to open a connection to `url` (DNS, TCP and TLS) before the request fails."""
    read_timeout: float = 30.0
    """Seconds a JSON answer from `url`, once begun, may go without a byte (or a request's
    body without being taken); not the wait for an answer, nor an event stream's."""
    max_upstream_connections: int = 16
    """Requests to `url` in flight at once (each holds a connection while it is answered);
    the next ones wait their turn, in order."""
    log_level: str = "info"
    """debug, info, warning, error or critical."""
    log_format: str = "auto"
    """json, console, or auto (console on a TTY, else JSON lines)."""
    max_message_bytes: int = 64 * 1024 * 1024
    """The longest line either peer may send; a longer one is discarded as it streams in."""
    max_servers: int | None = None
    """Server processes for one modern client (on the HTTP front: one tenant), of a legacy
    server. A legacy server's request names no call, so a call that may be asked for input
    runs alone at its process: up to this many run at once, each at its own, and one more
    waits, in order, for one to be free. None: 8 on the HTTP front, 1 on stdio and the Unix
    daemon."""
    min_servers: int = 1
    """Processes of a pool never stopped for idleness (its first at least)."""
    server_idle: float = 300.0
    """Seconds a pool's process beyond min_servers may hold no call before it is stopped."""
    max_servers_total: int = 64
    """HTTP front: processes run for the tenants' pools beyond each tenant's first; a call
    that needs one more while every process of its tenant is busy is refused naming this."""
    timing: Timing = field(default_factory=Timing)
    """Grace periods of the child's shutdown, and the client's drain."""
    env: tuple[tuple[str, str | None], ...] = ()
    """Variables set for the server: (KEY, value), or (KEY, None) to pass the bridge's own."""
    pass_env: tuple[str, ...] | None = None
    """None: the server gets the bridge's environment; else only these names (NAME* is a
    prefix) and environment.MINIMUM, plus `env`."""
    cwd: str | None = None
    """The server's working directory (absolute); None: the bridge's own."""
    transcript: str | None = None
    """A file to append every message of the four legs to, one JSON line each; None: off."""
    remember_era: bool = True
    """Remember a legacy server command's era in the user's state directory, so that its next
    start skips the probe (servers/era_memory.py); False: probe at every start."""
    metrics: str | None = None
    """`http://HOST:PORT/PATH` to serve Prometheus' scrape on (the stdio bridge, the Unix
    daemon); None: no metrics are kept. The HTTP front serves /metrics on its own port."""
    config_file: str | None = None
    """The configuration file these settings came from, if any (named in the first log line)."""


@record(frozen=True)
class DaemonConfig:
    """What only `mcp-rosetta serve` reads: where it listens, and how many sessions it takes."""

    listen: str | None = None
    """The Unix socket path to bind, or an `http://HOST:PORT/PATH` address (the Streamable
    HTTP front); None when systemd hands the socket over."""
    listen_mode: int = 0o660
    """Permission bits of a socket the daemon binds itself."""
    listen_owner: str | None = None
    """User (name or number) to own that socket; None keeps the daemon's own."""
    listen_group: str | None = None
    """Group (name or number) to own that socket; None keeps the daemon's own."""
    max_sessions: int = 16
    """Client connections served at once (on the HTTP front: legacy sessions); one more is
    refused with a JSON-RPC error."""
    session_idle: float = 1800.0
    """The HTTP front's legacy sessions: seconds with no request and no open stream after
    which a session ends and its server is stopped."""
    max_tenants: int = 16
    """HTTP front: credentials (bearer tokens) served at once, each a tenant with its own
    session and server; at the limit the tenant idle longest makes room, else one more is
    refused with 503 naming this setting."""
    tenant_idle: float = 1800.0
    """HTTP front: seconds with no request and no open stream after which a tenant ends and
    its server is stopped."""
    allowed_hosts: tuple[str, ...] = ()
    """HTTP front: Host values it accepts beside its own names (lower case): `name` (any
    port) or `name:port` (that port only)."""
    allowed_origins: tuple[str, ...] = ()
    """HTTP front: Origin values it accepts beside its own names, as `scheme://host:port`
    (lower case, the scheme's default port made explicit)."""
    token_file: str | None = None
    """HTTP front: a file of bearer tokens (one a line; blank lines and # comments ignored);
    with MCP_ROSETTA_TOKEN, every request but /healthz must present one."""
    max_connections: int = 1024
    """HTTP front: connections served at once; one more is answered 503 and closed."""
    connection_idle: float = 60.0
    """HTTP front: seconds a connection may wait for its next request, and a request may take
    to arrive whole (head and body); past it the connection is closed."""
    stream_backlog: int = 4 * 1024 * 1024
    """HTTP front: bytes held for one answer whose client does not read them; past it the
    request is cancelled and its connection closed."""
    drain_grace: float = 30.0
    """HTTP front: at the first SIGTERM, seconds it drains (not ready, no new session, what
    it holds still served) before it stops; 0: it stops at once (within shutdown_grace)."""
    node: str | None = None
    """HTTP front in a fleet: this node's name in the logs and on the requests it forwards;
    None: the host's name."""
    node_url: str | None = None
    """HTTP front in a fleet: this node's address as the others reach it (`http://HOST:PORT`);
    None: its entry in `fleet_nodes` (the one on its port and a local address), or with
    `fleet_dns` its host name's address."""
    fleet_nodes: tuple[str, ...] = ()
    """HTTP front: every node's address, this one's included; any node takes any request and
    forwards a legacy session's to the node that holds it."""
    fleet_dns: str | None = None
    """HTTP front: instead of `fleet_nodes`, a name that resolves to every node's IP address
    (a Kubernetes headless Service's)."""
    fleet_affinity: Affinity = "tenant"
    """HTTP front in a fleet: "tenant", each tenant's 2026-07-28 requests are served at one
    node, its home (`bridge.fleet.home`), the others forwarding them; "none", each at the
    node the balancer hands it to."""
    fleet_key_file: str | None = None
    """HTTP front in a fleet: a file holding the key every node shares (or the environment
    variable MCP_ROSETTA_FLEET_KEY; never the command line)."""
    oauth: OAuthResource | None = None
    """HTTP front: the authorization server whose access tokens it takes ([oauth])."""


@record(frozen=True)
class OAuthResource:
    """The HTTP front as an OAuth protected resource (`[oauth]`, the --oauth-* flags of
    serve)."""

    issuer: str
    audience: str | None = None
    """The front's URL as its clients reach it; None: the --listen URL."""
    jwks_url: str | None = None
    """None: the one the issuer's metadata names."""
    scopes: tuple[str, ...] = ()
    """Scopes every request's token must grant."""
    introspection_client_id: str | None = None
    introspection_secret_file: str | None = None
    """Opaque tokens are introspected (RFC 7662) as this client, with the secret in this
    file; None: JWT access tokens only."""


@record(frozen=True)
class Settings:
    """Everything one start of the bridge runs with: the core's rules, the shell's own
    settings, and what only the services read. The commands build it (bridge/config.py reads
    the file and the flags) and hand it down; the shell's entry points take it as it is and
    never read the configuration themselves, so the shell depends on no layer above it."""

    core: CoreConfig
    shell: ShellConfig
    daemon: DaemonConfig
