"""Where sign-ins are kept between runs: one file per (issuer, resource, client) under the
user's config directory, mode 0600 in 0700 directories, written atomically, refreshed under
an `fcntl.flock` lock every mcp-rosetta process takes (a rotating refresh token is used
once: the second process reads what the first one wrote).

Must never log what it holds. The layout is mcp-rosetta's own, not its version's:
  $XDG_CONFIG_HOME/mcp-rosetta/oauth/servers/<digest of the server URL>.json
      which credentials the server's URL uses (issuer, resource, client id)
  .../oauth/credentials/<digest of issuer, resource, client id>.json (and .lock)
      the client identity and its grant (tokens, expiry, scope)
  .../oauth/clients/<digest of issuer, redirect URI>.json
      a dynamically registered client, reused for the next sign-ins
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from bridge.core.config import CoreConfig
from bridge.oauth.authorize import SIGN_IN_TIMEOUT
from bridge.oauth.registration import ClientIdentity
from bridge.oauth.tokens import Grant
from bridge.shell.servers.remote.endpoint import Endpoint


@dataclass(frozen=True, slots=True)
class Credentials:
    """A signed-in server's identity and grant, and what they are bound to."""

    server: str
    issuer: str
    resource: str
    client: ClientIdentity
    grant: Grant


def config_root(environ: Mapping[str, str]) -> Path:
    """$XDG_CONFIG_HOME/mcp-rosetta/oauth (default ~/.config)."""
    base = environ.get("XDG_CONFIG_HOME") or os.path.join(
        environ.get("HOME") or os.path.expanduser("~"), ".config")
    return Path(base, "mcp-rosetta", "oauth")


def run_by_a_user(where: Endpoint, core: CoreConfig, environ: Mapping[str, str],
                  ) -> tuple[Endpoint, CoreConfig]:
    """`where` for the stdio bridge, which a user runs: a sign-in may open their browser
    (the daemon's and the HTTP front's never do), and `core` with an era probe that outwaits
    a first sign-in (first_sign_in_probe)."""
    where = replace(where, interactive=True)
    return where, first_sign_in_probe(core, where, environ)


def first_sign_in_probe(core: CoreConfig, where: Endpoint,
                        environ: Mapping[str, str]) -> CoreConfig:
    """`core` with a probe that outwaits a first sign-in: when the server may ask for one
    and none is stored, the era probe's 401 is answered by signing in in the browser, and
    the era must come from the server's answer after it, not from the probe's timer. Over
    HTTP every probe gets an answer, so a long wait costs nothing to a server that needs
    no sign-in."""
    if where.oauth is None or not where.interactive \
            or TokenStore(config_root(environ)).signed_in(where.url):
        return core
    return replace(core, probe_timeout=max(core.probe_timeout, SIGN_IN_TIMEOUT + 30))


def digest(*parts: str) -> str:
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:32]


class TokenStore:
    """The files of one user's sign-ins."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def load(self, server: str) -> Credentials | None:
        """What `server`'s URL signed in with, if anything (None for a damaged file too)."""
        entry = self._read(self._path("servers", digest(server)))
        if entry is None:
            return None
        try:
            stored = self._read(self._credentials_path(
                entry["issuer"], entry["resource"], entry["client_id"]))
            if stored is None:
                return None
            return Credentials(server, stored["issuer"], stored["resource"],
                               ClientIdentity(**stored["client"]), Grant(**_grant(stored)))
        except (KeyError, TypeError):
            return None

    def signed_in(self, server: str) -> bool:
        """Whether `server`'s URL has a sign-in stored (cheap: no grant is read)."""
        return self._path("servers", digest(server)).is_file()

    def save(self, credentials: Credentials) -> None:
        c = credentials
        self._write(self._credentials_path(c.issuer, c.resource, c.client.client_id), {
            "issuer": c.issuer, "resource": c.resource, "client": asdict(c.client),
            "grant": {**asdict(c.grant), "scope": list(c.grant.scope)}})
        self._write(self._path("servers", digest(c.server)), {
            "server": c.server, "issuer": c.issuer, "resource": c.resource,
            "client_id": c.client.client_id})

    def forget(self, server: str) -> bool:
        """Remove `server`'s sign-in (its tokens); whether there was one."""
        found = self.load(server)
        index = self._path("servers", digest(server))
        with contextlib.suppress(FileNotFoundError):
            index.unlink()
        if found is not None:
            with contextlib.suppress(FileNotFoundError):
                self._credentials_path(found.issuer, found.resource,
                                       found.client.client_id).unlink()
        return found is not None

    def drop_grant(self, credentials: Credentials) -> None:
        """Forget a dead grant (refused refresh token), keeping nothing that could loop."""
        with contextlib.suppress(FileNotFoundError):
            self._credentials_path(credentials.issuer, credentials.resource,
                                   credentials.client.client_id).unlink()

    def registered(self, issuer: str, redirect_uri: str) -> ClientIdentity | None:
        """The client registered dynamically at `issuer` for `redirect_uri`, if any."""
        stored = self._read(self._path("clients", digest(issuer, redirect_uri)))
        try:
            return ClientIdentity(**stored) if stored is not None else None
        except TypeError:
            return None

    def remember_client(self, redirect_uri: str, client: ClientIdentity) -> None:
        self._write(self._path("clients", digest(client.issuer, redirect_uri)), asdict(client))

    def lock(self, issuer: str, resource: str, client_id: str) -> int:
        """Take the lock held while a grant is refreshed, blocking until no other process
        holds it; `unlock` the fd it returns."""
        path = self._credentials_path(issuer, resource, client_id).with_suffix(".lock")
        self._directory(path.parent)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
        except BaseException:
            os.close(fd)
            raise
        return fd

    @staticmethod
    def unlock(fd: int) -> None:
        os.close(fd)  # closing releases the lock

    def _credentials_path(self, issuer: str, resource: str, client_id: str) -> Path:
        return self._path("credentials", digest(issuer, resource, client_id))

    def _path(self, kind: str, name: str) -> Path:
        return self.root / kind / f"{name}.json"

    def _read(self, path: Path) -> dict[str, Any] | None:
        try:
            data = json.loads(path.read_bytes())
        except (OSError, ValueError):
            return None
        return data if isinstance(data, dict) else None

    def _write(self, path: Path, data: dict[str, Any]) -> None:
        self._directory(path.parent)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as file:
            json.dump(data, file)
        os.replace(tmp, path)

    def _directory(self, path: Path) -> None:
        """`path` and the store's directories above it, 0700 (made so, if they exist)."""
        for directory in (self.root.parent, self.root, path):
            directory.mkdir(mode=0o700, parents=True, exist_ok=True)
            if directory != self.root.parent:
                os.chmod(directory, 0o700)


def _grant(stored: Mapping[str, Any]) -> dict[str, Any]:
    grant = dict(stored["grant"])
    grant["scope"] = tuple(grant.get("scope") or ())
    return grant
