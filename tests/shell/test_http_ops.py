"""The HTTP front's security and operations in process: the Host/Origin allowlist, the bearer
token, /healthz and /readyz, a reload of the access rules, and the settings behind them.
Real HTTP/1.1 over loopback (the h11 client of test_http_front.py), a scripted core, fake
server children, trio's virtual clock."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing
from structlog.testing import capture_logs

from bridge.cli import _settings
from bridge.config import load_settings
from bridge.core.bridge import ServerState
from bridge.errors import ConfigError, UsageError
from bridge.shell import logs
from bridge.shell.http import main as http_main
from bridge.shell.http.address import allowed_host, allowed_origin, front_names
from bridge.shell.http.auth import TOKEN_ENV, Denied, Tokens, parse_tokens, read_tokens
from bridge.shell.http.front import Access
from bridge.shell.http.health import Readiness, readiness
from bridge.shell.servers.environment import server_environment
from bridge.shell.services.service import Service
from bridge.streamable.drain import NodeStage
from tests.shell import test_http_front as front_tests
from tests.shell.test_http_front import Client, Cores, request, running

TOKEN = "s3cret-Token_1"
OTHER = "another.token+2="
LIST = request(1, "tools/list")


async def get(client: Client, path: str, **headers: str) -> front_tests.Answer:
    await client.send("GET", b"", headers, target=path)
    return await client.whole()


class View:
    def __init__(self, state: ServerState, served: bool = False) -> None:
        self.server_state = state
        self.has_served = served


# The allowlist -----------------------------------------------------------------------------

async def test_hosts_and_origins_beyond_the_front_s_own_are_403_naming_the_setting(
        autojump_clock: Any) -> None:
    async with running() as r:
        client = await r.client()
        host = await client.post(LIST, host="mcp.example.com")
        assert host.status == 403
        assert "allowed_hosts" in host.json["error"]["message"]
        assert "mcp.example.com" in host.json["error"]["message"]
        origin = await client.post(LIST, origin="https://app.example.com")
        assert origin.status == 403
        assert "allowed_origins" in origin.json["error"]["message"]


async def test_allowed_hosts_and_origins_pass(autojump_clock: Any) -> None:
    access = Access(allowed_hosts=("mcp.example.com", "pinned.example.com:8443"),
                    allowed_origins=("https://app.example.com",))
    async with running(access=access) as r:
        client = await r.client()
        for host in ("mcp.example.com", "MCP.example.com:443", "pinned.example.com:8443"):
            assert (await client.post(LIST, host=host)).status == 200, host
        assert (await client.post(LIST, host="pinned.example.com:443")).status == 403
        assert (await client.post(LIST, host="evil.example.com")).status == 403
        for origin in ("https://app.example.com", "https://app.example.com:443",
                       "https://mcp.example.com"):  # an allowed host's page, too
            assert (await client.post(LIST, origin=origin)).status == 200, origin
        for origin in ("http://app.example.com", "https://app.example.com:8443", "null"):
            assert (await client.post(LIST, origin=origin)).status == 403, origin


def test_allowlist_entries_are_checked_and_normalised() -> None:
    assert allowed_host("MCP.Example.com:443") == "mcp.example.com:443"
    assert allowed_host("[::1]:8808") == "[::1]:8808"
    for bad in ("", "http://x", "x:port", "x:99999", "::1", "a b", 3):
        with pytest.raises(ValueError, match="host name"):
            allowed_host(bad)
    assert allowed_origin("https://App.example.com") == "https://app.example.com:443"
    assert allowed_origin("http://x:8080/") == "http://x:8080"
    for bad in ("app.example.com", "ftp://x", "https://x/path", "https://x?q", "null"):
        with pytest.raises(ValueError, match="origin"):
            allowed_origin(bad)
    names = front_names("0.0.0.0", 8808, ("a.test", "b.test:1"), ())
    assert names.admits_host("0.0.0.0:8808") and names.admits_host("a.test")
    assert names.admits_host("a.test:9") and not names.admits_host("b.test:2")


def test_the_allowlist_settings_from_file_and_flags(tmp_path: Path) -> None:
    config = tmp_path / "c.toml"
    config.write_text('command = ["srv"]\nallowed_hosts = ["a.test"]\n'
                      'allowed_origins = ["https://a.test"]\nmax_connections = 8\n'
                      f'token_file = "{tmp_path}/t"\n')
    settings, _ = _settings(["--config", str(config), "--allow-host", "b.test:443",
                             "--allow-origin", "http://b.test:8080", "--max-connections", "9"],
                            serve=True)
    daemon = settings.daemon
    assert daemon.allowed_hosts == ("a.test", "b.test:443")  # flags add to the file's
    assert daemon.allowed_origins == ("https://a.test:443", "http://b.test:8080")
    assert daemon.max_connections == 9 and daemon.token_file == f"{tmp_path}/t"
    assert load_settings(None, {}).daemon.max_connections == 1024
    config.write_text('command = ["srv"]\nallowed_origins = ["app.example.com"]\n')
    with pytest.raises(ConfigError, match="allowed_origins: expected an origin"):
        load_settings(str(config), {})
    with pytest.raises(UsageError, match="--allow-host"):
        _settings(["--allow-host", "http://x", "--", "srv"], serve=True)


# The bearer token ---------------------------------------------------------------------------

async def test_without_the_token_every_request_is_401_with_a_challenge(
        autojump_clock: Any) -> None:
    tokens = Tokens((TOKEN.encode(), OTHER.encode()))
    cores = Cores()
    async with running(access=Access(tokens=tokens), make_core=cores) as r:
        client = await r.client()
        missing = await client.post(LIST)
        assert missing.status == 401
        assert missing.headers["www-authenticate"] == 'Bearer realm="mcp-rosetta"'
        assert missing.json["error"]["code"] == -32600
        assert "no Authorization header" in missing.json["error"]["message"]
        wrong = await client.post(LIST, authorization="Bearer nope")
        assert wrong.status == 401
        assert wrong.headers["www-authenticate"] == ('Bearer realm="mcp-rosetta", '
                                                     'error="invalid_token"')
        assert "not one this server accepts" in wrong.json["error"]["message"]
        basic = await client.post(LIST, authorization="Basic dXNlcjpwdw==")
        assert basic.status == 401 and "not Bearer" in basic.json["error"]["message"]
        other_path = await client.post(LIST, authorization="Bearer nope")
        assert other_path.status == 401  # before the path or anything else is said
        assert r.core.received == [] and cores == []  # nothing reached a core
        for token in (TOKEN, OTHER):
            good = await client.post(LIST, authorization=f"bearer {token}")
            assert good.status == 200 and good.json["result"] == {"tools": []}
        assert [len(core.ids_of("tools/list")) for core in cores] == [1, 1]  # a tenant each
        await trio.testing.wait_all_tasks_blocked()
        logged = r.events("http.request")
        assert [e["status"] for e in logged] == [401] * 4 + [200] * 2
        first, second = (e["credential"] for e in logged[-2:])
        assert first != second and len(first) == 16
        assert "credential" not in logged[0]
        assert not any(TOKEN in json.dumps(e, default=str) for e in r.logs)


def test_a_credential_names_its_token_across_a_reload() -> None:
    tokens = Tokens((b"one", b"two"))
    again = tokens.with_tokens((b"two", b"three"))
    assert tokens.check("Bearer two") == again.check("Bearer two")
    assert tokens.check("Bearer one") != tokens.check("Bearer two")
    with pytest.raises(Denied) as denied:
        again.check("Bearer one")
    assert denied.value.presented
    assert "two" not in repr(Access(tokens=tokens))


def test_tokens_from_the_file_and_the_environment(tmp_path: Path) -> None:
    file = tmp_path / "tokens"
    file.write_text("# the web team\nabc123\n\n  def-456=  \n#old\n")
    assert parse_tokens(file.read_bytes()) == (b"abc123", b"def-456=")
    assert read_tokens(str(file), {}) == (b"abc123", b"def-456=")
    assert read_tokens(str(file), {TOKEN_ENV: "envtok"}) == (b"abc123", b"def-456=", b"envtok")
    assert read_tokens(None, {TOKEN_ENV: " envtok\n"}) == (b"envtok",)
    assert read_tokens(None, {}) == ()
    file.write_text("# nothing\n\n")
    with pytest.raises(ConfigError, match="no token in it"):
        read_tokens(str(file), {})
    file.write_text("two words\n")
    with pytest.raises(ConfigError, match="a token holds a character"):
        read_tokens(str(file), {})
    with pytest.raises(ConfigError, match=f"{TOKEN_ENV}: a token holds"):
        read_tokens(None, {TOKEN_ENV: "é"})
    with pytest.raises(ConfigError, match="cannot read it"):
        read_tokens(str(tmp_path / "missing"), {})


def test_the_token_never_reaches_the_server() -> None:
    assert TOKEN_ENV not in server_environment({TOKEN_ENV: TOKEN, "PATH": "/bin"})
    assert TOKEN_ENV not in server_environment({TOKEN_ENV: TOKEN}, env=[(TOKEN_ENV, None)])


def test_a_non_loopback_socket_without_a_token_is_refused_naming_both_ways() -> None:
    with pytest.raises(ConfigError) as refused:
        http_main._require_tokens("0.0.0.0", ())
    assert "token_file" in str(refused.value) and TOKEN_ENV in str(refused.value)
    http_main._require_tokens("0.0.0.0", (b"t",))
    http_main._require_tokens("127.0.0.1", ())
    http_main._require_tokens("::1", ())


async def test_a_reload_changes_the_tokens_and_the_allowlist_for_the_next_request(
        autojump_clock: Any) -> None:
    tokens = Tokens((b"old",))
    async with running(access=Access(tokens=tokens), make_core=Cores()) as r:
        client = await r.client()
        assert (await client.post(LIST, authorization="Bearer old")).status == 200
        r.front.reload(Access(("mcp.example.com",), (), tokens.with_tokens((b"new",))), 5)
        assert (await client.post(LIST, authorization="Bearer old")).status == 401
        assert (await client.post(LIST, authorization="Bearer new",
                                  host="mcp.example.com")).status == 200
        r.front.reload(Access(), 5)  # no tokens any more
        assert (await client.post(LIST)).status == 200


def test_a_reload_names_what_it_applied_and_what_needs_a_restart(tmp_path: Path) -> None:
    before = load_settings(None, {"command": ("srv",)})
    after = load_settings(None, {"command": ("other",), "allowed_hosts": ("a.test",),
                                 "max_connections": 3})
    assert http_main._changed(before, after) == ["allowed_hosts", "command", "max_connections"]


class ReloadedFront:
    """What a reload asks of the front: its tokens in force, and the new rules."""

    access = Access()

    def __init__(self) -> None:
        self.reloads: list[tuple[Access, int]] = []

    def reload(self, access: Access, max_connections: int) -> None:
        self.reloads.append((access, max_connections))


def test_a_reload_whose_command_cannot_be_found_is_refused_and_the_rules_stay(
        tmp_path: Path) -> None:
    before = load_settings(None, {"command": ("srv",), "env": (("PATH", str(tmp_path)),)})
    after = load_settings(None, {"command": ("srv-gone",), "max_connections": 3,
                                 "env": (("PATH", str(tmp_path)),)})
    front = ReloadedFront()
    log = logs.logger()
    reloading = http_main.Reloading(front, before, "127.0.0.1", log)  # type: ignore[arg-type]
    notified: list[str] = []
    service = Service(front, log, notified.append, read=lambda: after,  # type: ignore[arg-type]
                      apply=reloading.apply, kill_grace=1.0)
    with capture_logs() as captured:
        service.reload()
    assert front.reloads == []
    assert [(e["event"], e["reason"]) for e in captured] == [(
        "daemon.reload_failed", f"server command not found: 'srv-gone' is in none of "
                                f"PATH={tmp_path}; give the absolute path of the program")]
    assert notified[1:] == ["READY=1"]


def test_a_reload_warns_of_a_token_file_open_to_others(tmp_path: Path) -> None:
    tokens = tmp_path / "tokens"
    tokens.write_text("a-token\n")
    tokens.chmod(0o600)
    before = load_settings(None, {"command": ("true",), "token_file": str(tokens)})
    tokens.chmod(0o644)  # loosened while the front runs
    front = ReloadedFront()
    log = logs.logger()
    reloading = http_main.Reloading(front, before, "127.0.0.1", log)  # type: ignore[arg-type]
    with capture_logs() as captured:
        reloading.apply(before)
    assert (captured[0]["event"], captured[0]["log_level"]) == (
        "http.token_file_exposed", "warning")
    assert captured[0]["fix"] == (f"token_file {tokens} is open to other users (mode 0644): "
                                  f"anyone who reads it can use the server; chmod 600 {tokens}")
    assert len(front.reloads) == 1


# Health ------------------------------------------------------------------------------------

async def test_healthz_answers_whatever_the_host_and_without_a_token(
        autojump_clock: Any) -> None:
    async with running(access=Access(tokens=Tokens((b"t",)))) as r:
        client = await r.client()
        answer = await get(client, "/healthz", host="10.0.0.7:8808")
        assert (answer.status, answer.json) == (200, {"status": "ok"})
        assert answer.headers["content-type"] == "application/json"
        ready = await get(client, "/readyz?verbose", host="10.0.0.7:8808")
        assert (ready.status, ready.json) == (503, {"status": "unknown"})  # no view given
        await client.send("POST", b"{}", {}, target="/healthz")
        refused = await client.whole()
        assert (refused.status, refused.headers["allow"]) == (405, "GET")
        assert (await get(client, "/mcp")).status == 401  # the MCP path is not health's
        await trio.testing.wait_all_tasks_blocked()
        assert r.events("http.request")[0]["path"] == "/healthz"


async def test_readyz_follows_the_server_and_the_stop(autojump_clock: Any) -> None:
    view = View(ServerState.STARTING)
    async with running(view=view) as r:
        client = await r.client()
        expected = [(ServerState.STARTING, False, 503, "starting"),
                    (ServerState.PROBING, False, 503, "starting"),
                    (ServerState.SERVING, True, 200, "ready"),
                    (ServerState.DOWN, True, 503, "down"),
                    (ServerState.PROBING, True, 503, "restarting"),
                    (ServerState.SERVING, True, 200, "ready")]
        for state, served, status, word in expected:
            view.server_state, view.has_served = state, served
            answer = await get(client, "/readyz")
            assert (answer.status, answer.json) == (status, {"status": word}), state
        r.front._health.stage = NodeStage.STOPPING  # what Front.stop sets, not stopping it
        assert (await get(client, "/readyz")).json == {"status": "stopping"}
        assert (await get(client, "/healthz")).status == 200


def test_readiness_words() -> None:
    assert readiness(None, False) is Readiness.UNKNOWN
    assert readiness(View(ServerState.SERVING), True) is Readiness.STOPPING
    assert readiness(View(ServerState.STARTING, served=True), False) is Readiness.RESTARTING


# The request's log line ----------------------------------------------------------------------

async def test_the_request_line_names_the_peer_and_a_session_field(
        autojump_clock: Any) -> None:
    async with running() as r:
        client = await r.client()
        assert (await client.post(LIST)).status == 200
        await trio.testing.wait_all_tasks_blocked()
        [line] = r.events("http.request")
        host, port = client.stream.socket.getsockname()[:2]
        assert line["peer"] == f"{host}:{port}"
        assert "session" in line and line["session"] is None


def test_max_connections_reaches_the_front(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: dict[str, Any] = {}

    class Stop(Exception):
        pass

    def capture(*args: Any, **options: Any) -> None:
        seen.update(options)
        raise Stop

    monkeypatch.setattr(http_main, "Front", capture)
    monkeypatch.delenv(TOKEN_ENV, raising=False)
    settings = load_settings(None, {"command": ("srv",), "max_connections": 7,
                                    "listen": "http://127.0.0.1:0/mcp"})
    with pytest.raises(Stop):
        http_main.run_http(settings, lambda: settings)
    assert seen["max_connections"] == 7 and seen["access"] == Access()
    assert os.environ.get(TOKEN_ENV) is None


async def test_an_illegal_authorization_value_is_400_and_never_logged(
        autojump_clock: Any) -> None:
    async with running(access=Access(tokens=Tokens((TOKEN.encode(),)))) as r:
        client = await r.client()
        await client.stream.send_all(
            f"POST /mcp HTTP/1.1\r\nhost: {front_tests.HOST}\r\n"
            f"authorization: Bearer {TOKEN}\x00\r\ncontent-length: 0\r\n\r\n".encode())
        assert (await client.head()).status == 400
        await trio.testing.wait_all_tasks_blocked()
        [rejected] = r.events("http.rejected")
        assert rejected["reason"] == "illegal header line (the bytes are not logged)"
        assert not any(TOKEN in json.dumps(e, default=str) for e in r.logs)
