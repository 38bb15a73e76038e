"""This node's place in a fleet: its name and address, the fleet's key, which addresses are
the fleet's; what the pure rules (`bridge.fleet`) need from the world: the random part of a
session id, the time a pass is made or checked at, the names resolved, this process's life.

Must not move requests (`forward.py` does) nor decide where one goes (`legacy_requests.py`
asks `holder`, `router.py` asks `placed` and `parked_at`: the pure rules answer, given this
node's address and life). The key comes from `fleet_key_file` or MCP_ROSETTA_FLEET_KEY, never
the command line, and is never logged. A node in a fleet without a key, or that cannot tell
its own address, refuses to start, naming the setting.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import socket
import time
from collections.abc import Mapping
from dataclasses import dataclass, field

import trio

from bridge.core.codec import Message
from bridge.core.modern_server_legacy_client.placement import node_elsewhere, route_for
from bridge.errors import ConfigError
from bridge.fleet import changes, home, ids, members, passes, states
from bridge.fleet.home import Affinity
from bridge.fleet.keys import FleetKeys, derive
from bridge.fleet.passes import Bound, Forwarded
from bridge.fleet.states import Place
from bridge.shell.settings import DaemonConfig

KEY_ENV = "MCP_ROSETTA_FLEET_KEY"
RANDOM_BYTES = 32
"""A session id's random part: as unguessable as a single node's id."""
LIFE_BYTES = 8
"""A node's life: drawn at random as its process starts (a restart is a new life)."""
RESOLVED_FOR = 2.0
"""Seconds the addresses `fleet_dns` resolved to are used before it is resolved again: a
node gone from the name is forwarded to no more within that."""


@dataclass
class Fleet:
    node: str
    """This node's name (its log lines, the passes it issues)."""
    address: str
    """This node's address as the others reach it: what its session ids name."""
    keys: FleetKeys = field(repr=False)
    nodes: tuple[str, ...] = ()
    dns: str | None = None
    affinity: Affinity = "tenant"
    """`fleet_affinity`: "tenant", each tenant's modern requests go to its home (`homes`)."""
    life: str = field(default_factory=lambda: secrets.token_urlsafe(LIFE_BYTES))
    """This process's life at its address: what the requestState envelopes it issues name,
    so that once it restarts it tells a retry of a call it held before that the call ended."""
    _resolved: frozenset[str] = field(default=frozenset(), init=False)
    """The addresses `dns` last resolved to, and when (trio's clock)."""
    _resolved_at: float | None = field(default=None, init=False)

    def mint(self) -> str:
        """A new legacy session's id, naming this node."""
        return ids.mint(self.keys.ids, self.address, secrets.token_bytes(RANDOM_BYTES))

    def holder(self, session_id: str) -> str | None:
        """The address of the other node that holds `session_id`; None when it is this
        node's, or no id of this fleet (it is then looked up here, and unknown)."""
        address = ids.holder(self.keys.ids, session_id)
        return None if address == self.address else address

    def parked_at(self, message: Message) -> str | None:
        """The address of the other node whose core parked the call `message` retries;
        None when it is no retry of another node's call (it is taken here)."""
        return node_elsewhere(message, self.address)

    def state_route(self, process: str) -> str:
        """The route a tenant's core seals into its parked calls' requestState: this node
        and the process of its pool ("" for the first), so a retry finds them from any node."""
        return route_for(self.address, process)

    def wrapped(self, credential: str | None, message: Message) -> Message:
        """`message`, an answer this node gives a client of `credential`, its requestState
        (an `input_required` result's) in an envelope naming this node and its life."""
        state = states.issued(message)
        if state is None:
            return message
        return states.reissued(message, states.wrap(self.keys.states, self.address,
                                                    self.life, credential, state))

    def placed(self, message: Message, credential: str | None) -> Place | None:
        """Where the call that `message`, a request of a client of `credential`, retries is
        held, by its requestState's envelope; None when it echoes no envelope."""
        state = states.echoed(message)
        if state is None:
            return None
        return states.place(self.keys.states, state, credential, self.address, self.life)

    def issue(self, credential: str | None, request: Bound) -> str:
        return passes.issue(self.keys.passes, self.node, time.time(), credential, request)

    def check(self, value: str, request: Bound) -> Forwarded | str:
        return passes.check(self.keys.passes, value, time.time(), request)

    def issue_change(self, credential: str | None, body: bytes) -> str:
        """The pass of a change envelope sent for the tenant `credential` (`changes.py`)."""
        return changes.issue(self.keys.changes, self.node, time.time(), credential, body)

    def check_change(self, value: str, body: bytes) -> Forwarded | str:
        return changes.check(self.keys.changes, value, time.time(), body)

    async def is_member(self, address: str) -> bool:
        """Whether `address` is the fleet's now: listed, or among what `fleet_dns` resolves
        to (a node gone from the name is no member: its sessions are ended)."""
        if self.dns is None:
            return address in self.nodes
        return members.listed(address, self.nodes, await self._resolved_now())

    async def peers(self) -> tuple[str, ...]:
        """The other nodes' addresses now (`fleet_dns`: what it resolves to)."""
        resolved = None if self.dns is None else await self._resolved_now()
        return members.peers(self.address, self.nodes, resolved)

    async def homes(self, credential: str | None) -> tuple[str, ...]:
        """The fleet's nodes now, this one among them, in the tenant `credential`'s order:
        its home first (`bridge.fleet.home`)."""
        return home.ranked(credential, (self.address, *await self.peers()))

    async def _resolved_now(self) -> frozenset[str]:
        """What `dns` resolves to, resolved again at most every RESOLVED_FOR seconds."""
        assert self.dns is not None
        now = trio.current_time()
        if self._resolved_at is None or now - self._resolved_at >= RESOLVED_FOR:
            self._resolved = await _resolve(self.dns)
            self._resolved_at = now
        return self._resolved


async def _resolve(name: str) -> frozenset[str]:
    try:
        found = await trio.socket.getaddrinfo(name, None, type=socket.SOCK_STREAM)
    except OSError:
        return frozenset()
    return frozenset(str(info[4][0]) for info in found)


def read_key(key_file: str | None, environ: Mapping[str, str] = os.environ) -> bytes | None:
    """The fleet's key: `fleet_key_file`'s content, else MCP_ROSETTA_FLEET_KEY's; None for
    neither. ConfigError naming the file, or the variable, for one that cannot serve."""
    if key_file is not None:
        try:
            with open(key_file, "rb") as file:
                secret = file.read()
        except OSError as exc:
            raise ConfigError(f"fleet_key_file {key_file}: cannot read it: "
                              f"{exc.strerror or exc}") from None
        where = f"fleet_key_file {key_file}"
    elif environ.get(KEY_ENV, "").strip():
        secret, where = environ[KEY_ENV].encode("utf-8", "surrogateescape"), KEY_ENV
    else:
        return None
    try:
        derive(secret)
    except ValueError as exc:
        raise ConfigError(f"{where}: {exc}") from None
    return secret


def fleet_of(daemon: DaemonConfig, port: int,
             environ: Mapping[str, str] = os.environ) -> Fleet | None:
    """This node's fleet, from its settings and the port it listens on; None for no fleet."""
    secret = read_key(daemon.fleet_key_file, environ)
    if not daemon.fleet_nodes and daemon.fleet_dns is None:
        if secret is not None:
            raise ConfigError("a fleet key is set (fleet_key_file or MCP_ROSETTA_FLEET_KEY) "
                              "but no fleet: set fleet_nodes = [\"http://HOST:PORT\", ...] "
                              "(every node's address) or fleet_dns = \"NAME\", or remove "
                              "the key")
        return None
    given = "fleet_nodes" if daemon.fleet_nodes else "fleet_dns"
    if daemon.fleet_nodes and daemon.fleet_dns is not None:
        raise ConfigError("both fleet_nodes and fleet_dns are set: give one of them")
    if secret is None:
        raise ConfigError(f"{given} is set but no fleet key: set fleet_key_file = \"/path\" "
                          f"(or --fleet-key-file) or the environment variable {KEY_ENV}, "
                          "the same key on every node (make one with `openssl rand "
                          "-base64 32`)")
    address = daemon.node_url or _own_address(daemon, port)
    if daemon.fleet_nodes and address not in daemon.fleet_nodes:
        raise ConfigError(f"node_url {address} is not in fleet_nodes: list every node's "
                          "address there, this one's too")
    return Fleet(daemon.node or socket.gethostname(), address, derive(secret),
                 daemon.fleet_nodes, daemon.fleet_dns, daemon.fleet_affinity)


def _own_address(daemon: DaemonConfig, port: int) -> str:
    """This node's entry in `fleet_nodes` (on `port`, its host one of this machine's), or
    with `fleet_dns` its host name's address; ConfigError asking for `node_url` else."""
    if daemon.fleet_dns is not None:
        with contextlib.suppress(OSError):
            ip = socket.gethostbyname(socket.gethostname())
            if not ip.startswith("127."):
                return f"http://{ip}:{port}"
        raise ConfigError("fleet_dns is set but this host's name has no address the other "
                          f"nodes can reach: set node_url = \"http://IP:{port}\" (or "
                          "--node-url)")
    own = [node for node in daemon.fleet_nodes
           if members.port_of(node) == port and _is_local(members.host_of(node))]
    if len(own) != 1:
        which = "none" if not own else f"{len(own)} ({', '.join(own)})"
        raise ConfigError(f"fleet_nodes: {which} of its entries is this node (port {port} "
                          "on an address of this machine): set node_url = "
                          "\"http://HOST:PORT\" (or --node-url) to say which")
    return own[0]


def _is_local(host: str) -> bool:
    """Whether `host` names an address of this machine (one a socket can be bound to)."""
    try:
        infos = socket.getaddrinfo(host, None, type=socket.SOCK_DGRAM)
    except OSError:
        return False
    for family, kind, _, _, address in infos:
        with contextlib.suppress(OSError), socket.socket(family, kind) as probe:
            probe.bind((address[0], 0))
            return True
    return False
