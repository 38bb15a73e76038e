"""Tenants: the modern clients of one credential, and the pool of sessions that serves them.

Must not read or write HTTP (`router.py` does) nor start a session (the front does). On the
front every credential is a tenant: a bearer token, known by its `Credential` digest (never
the token). A tenant's sessions are its own (`pool.py`): their cores (so its roots, its
parked calls, and the keys that seal their `requestState`: another tenant's retry is refused
as tampered with), their servers, its listen streams, log level and progress. Without tokens
the front cannot tell clients apart: they are all one tenant, whose first session is the
front's own, never ended for idleness (its end is the front's).

A tenant with a request open (a listen stream included) or a call parked is in use. One
with neither for `tenant_idle` seconds ends, and its server is stopped; at `max_tenants` a
new credential ends the tenant idle longest (no open request, none for `EVICTABLE_AFTER` s,
no call parked), else is refused.
"""

from __future__ import annotations

from collections.abc import Iterator

import trio

from bridge.core.events import MessageDecoded
from bridge.shell.http.auth import Credential
from bridge.shell.http.legacy import EVICTABLE_AFTER
from bridge.shell.http.modern import Mapping
from bridge.shell.logs import Logger
from bridge.shell.session.pool import Member, Pool


def tenant_name(credential: Credential | None) -> str:
    """How logs name a tenant: its credential's digest, or "shared" without tokens."""
    return "shared" if credential is None else credential.digest


class ModernClients:
    """One tenant: the modern requests its credential sends, whatever connection carried
    them, and the pool of sessions that serves them (`pool.py`). The router hands it each
    request renamed (`Mapping.admit`); what a core sends the client goes to the POST it
    belongs to (`Mapping.deliver`). `idle` None: never ended for idleness."""

    def __init__(self, mapping: Mapping, pool: Pool, log: Logger,
                 credential: Credential | None = None, *, idle: float | None = None) -> None:
        self.mapping = mapping
        """Its POSTs in flight (the pool's `Clients`)."""
        self.pool = pool
        pool.on_open = self._opened
        self.credential = credential
        self._log = log
        self._idle = idle
        self.posts = 0
        """Requests open (a listen stream included): the tenant is in use."""
        self.last_active = 0.0
        """When its last request ended (set as its session opens: it may be made before
        trio runs)."""
        self.ended = False
        self.started = trio.Event()
        """Set once its server is started (or it could not be: then `ended`)."""

    @property
    def name(self) -> str:
        return tenant_name(self.credential)

    @property
    def first(self) -> Member:
        """The client side of the tenant's own session (the pool's first process)."""
        return self.pool.first

    def _opened(self, nursery: trio.Nursery) -> None:
        self.touch()
        if self._idle is not None:
            nursery.start_soon(self._watch_idle, name=f"idle-{self.name}")

    def decoded(self, event: MessageDecoded) -> None:
        """One request the router decoded (renamed), to the process the pool chooses."""
        self.pool.take(event)

    def cancel(self, wire: str, line: bytes) -> None:
        """The client of request `wire` went away: `line` cancels it where it runs."""
        self.pool.cancel(wire, line)

    # Its life ------------------------------------------------------------------------------

    def touch(self) -> None:
        self.last_active = trio.current_time()

    def end(self, reason: str, grace: float = 0.0) -> None:
        """Ask its cores to stop (answering what they owe within `grace`); their servers
        follow."""
        if self.ended:
            return
        self.ended = True
        self._log.info("http.tenant_ending", reason=reason)
        self.pool.end_all(grace)

    async def _watch_idle(self) -> None:
        """Ends the tenant once it has had no open request and held no call for `idle`
        seconds: its clients' next request starts a new one (with a new core: what it held
        is gone with it)."""
        assert self._idle is not None
        while not self.ended:
            await trio.sleep_until(self.last_active + self._idle)
            if self.posts or self.pool.calls():
                self.touch()  # an open request or a parked call is activity
            elif trio.current_time() >= self.last_active + self._idle:
                self.end(f"idle for {self._idle:g} s (tenant_idle)")


class Tenants:
    """The tenants by credential. A place is taken when a tenant is added (by the request
    that opens it, before its server has started), so a burst of new credentials cannot pass
    `limit`, and a second request of the same credential waits for the same tenant."""

    def __init__(self, limit: int, shared: ModernClients) -> None:
        self.limit = limit
        self.shared = shared
        """The front's own session: every client's when no token is set (never counted).
        Its server is started before the front listens: no request waits for it."""
        shared.started.set()
        self._by_credential: dict[Credential, ModernClients] = {}
        self._emptied = trio.Event()
        self.closing = False
        """The front is stopping: no tenant starts, and one still starting ends once
        started."""

    def __len__(self) -> int:
        return len(self._by_credential)

    def __iter__(self) -> Iterator[ModernClients]:
        """The live tenants (the shared one aside)."""
        return (t for t in list(self._by_credential.values()) if not t.ended)

    @property
    def full(self) -> bool:
        """`limit` live tenants (one ending no longer counts: its server is stopping)."""
        return sum(not t.ended for t in self._by_credential.values()) >= self.limit

    def get(self, credential: Credential | None) -> ModernClients | None:
        """The live tenant of `credential`; None for none yet (or one ended)."""
        if credential is None:
            return self.shared
        tenant = self._by_credential.get(credential)
        return None if tenant is None or tenant.ended else tenant

    def add(self, tenant: ModernClients) -> None:
        assert tenant.credential is not None
        self._by_credential[tenant.credential] = tenant

    def discard(self, tenant: ModernClients) -> None:
        assert tenant.credential is not None
        if self._by_credential.get(tenant.credential) is tenant:
            del self._by_credential[tenant.credential]
        if not self._by_credential:
            self._emptied.set()

    def make_room(self) -> ModernClients | None:
        """Full: end the live tenant idle longest among those with no open request, none for
        `EVICTABLE_AFTER` s and no call held (a call parked for its client's retry, which
        may be a person filling in a form: ending the tenant would end the call), and return
        it; None if every tenant is in use."""
        now = trio.current_time()
        idle = [t for t in self._by_credential.values() if not t.ended and not t.posts
                and t.started.is_set() and t.last_active + EVICTABLE_AFTER <= now
                and not t.pool.calls()]
        if not idle:
            return None
        oldest = min(idle, key=lambda tenant: tenant.last_active)
        oldest.end(f"max_tenants ({self.limit}) reached: the tenant idle longest, with no "
                   "open request, makes room for a new one")
        return oldest

    def end_all(self, grace: float) -> None:
        self.closing = True
        for tenant in list(self._by_credential.values()):
            if tenant.started.is_set():
                tenant.end("the front is stopping", grace)

    async def wait_empty(self) -> None:
        while self._by_credential:
            self._emptied = trio.Event()
            await self._emptied.wait()
