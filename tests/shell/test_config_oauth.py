"""The OAuth flags and keys: the client a user registered, its secret from a file or the
environment (never the command line), and the `auth` command's status and logout."""

from __future__ import annotations

import time

import pytest

from bridge.cli import main, parser
from bridge.config import load_settings
from bridge.errors import ConfigError
from bridge.oauth.registration import ClientIdentity, Preregistered
from bridge.oauth.tokens import Grant
from bridge.shell.servers.remote.endpoint import SECRET_VARIABLE, resolve
from bridge.shell.servers.remote.token_store import Credentials, TokenStore, config_root

URL = "https://mcp.example.com/mcp"


def shell(**overrides):
    return load_settings(None, {"url": URL, **overrides}).shell


def test_the_secret_is_read_from_its_file(tmp_path):
    secret = tmp_path / "secret"
    secret.write_text("s3cret\n")
    where = resolve(shell(oauth_client_id="app", oauth_client_secret_file=str(secret)), {})
    assert where.oauth == Preregistered("app", "s3cret", None)
    assert "s3cret" not in repr(where)


def test_or_from_the_environment():
    where = resolve(shell(oauth_client_id="app"), {SECRET_VARIABLE: "env-secret"})
    assert where.oauth is not None and where.oauth.client_secret == "env-secret"


def test_a_secret_without_its_client_id_is_a_config_error():
    with pytest.raises(ConfigError, match="--oauth-client-id"):
        resolve(shell(), {SECRET_VARIABLE: "env-secret"})


def test_an_unreadable_secret_file_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="cannot read the OAuth client secret"):
        resolve(shell(oauth_client_id="a", oauth_client_secret_file=str(tmp_path / "no")), {})


def test_the_users_own_authorization_header_turns_oauth_off():
    assert resolve(shell(headers=(("Authorization", "Bearer x"),)), {}).oauth is None
    assert resolve(shell(headers=(("X-Team", "blue"),)), {}).oauth == Preregistered()


def test_the_flags_reach_the_settings():
    args = parser().parse_args(["--url", URL, "--oauth-client-id", "app",
                                "--oauth-client-metadata-url", "https://app.example/c.json"])
    assert (args.oauth_client_id, args.oauth_client_metadata_url) == (
        "app", "https://app.example/c.json")


@pytest.mark.parametrize("url", ["http://app.example/c.json", "https://app.example",
                                 "https://app.example/"])
def test_a_metadata_document_url_is_https_with_a_path(url, capsys):
    assert main(["--url", URL, "--oauth-client-metadata-url", url, "--", "x"]) == 64
    assert "https:// URL with a path" in capsys.readouterr().err


def test_auth_status_shows_no_token_and_logout_forgets(tmp_path, monkeypatch, capfd):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    store = TokenStore(config_root({"XDG_CONFIG_HOME": str(tmp_path)}))
    store.save(Credentials(URL, "https://as.example", URL,
                           ClientIdentity("app", "secret-x", "client_secret_basic",
                                          "https://as.example"),
                           Grant("access-x", "refresh-x", time.time() + 3600, ("read",))))
    assert main(["auth", "status", URL]) == 0
    shown = capfd.readouterr()
    out = shown.err  # stdout is the protocol wire: nothing of it is written there
    assert shown.out == ""
    assert "https://as.example" in out and "client: app" in out and "scope: read" in out
    assert not any(s in out for s in ("access-x", "refresh-x", "secret-x"))
    assert main(["auth", "logout", URL]) == 0
    assert main(["auth", "status", URL]) == 1
    assert "auth.not_signed_in" in capfd.readouterr().err


def test_the_probe_outwaits_a_first_sign_in_only(tmp_path):
    from bridge.core.config import CoreConfig
    from bridge.shell.servers.remote.endpoint import Endpoint
    from bridge.shell.servers.remote.token_store import first_sign_in_probe

    env = {"XDG_CONFIG_HOME": str(tmp_path)}
    first = Endpoint(URL, oauth=Preregistered(), interactive=True)
    assert first_sign_in_probe(CoreConfig(), first, env).probe_timeout == 330.0
    daemon = Endpoint(URL, oauth=Preregistered(), interactive=False)
    assert first_sign_in_probe(CoreConfig(), daemon, env).probe_timeout == 5.0
    header = Endpoint(URL, oauth=None, interactive=True)
    assert first_sign_in_probe(CoreConfig(), header, env).probe_timeout == 5.0
    TokenStore(config_root(env)).save(Credentials(
        URL, "https://as.example", URL, ClientIdentity("app", issuer="https://as.example"),
        Grant("a")))
    assert first_sign_in_probe(CoreConfig(), first, env).probe_timeout == 5.0


def test_the_stdio_bridge_may_open_the_browser(tmp_path):
    from bridge.core.config import CoreConfig
    from bridge.shell.servers.remote.endpoint import Endpoint
    from bridge.shell.servers.remote.token_store import run_by_a_user

    where, core = run_by_a_user(Endpoint(URL, oauth=Preregistered()), CoreConfig(),
                                {"XDG_CONFIG_HOME": str(tmp_path)})
    assert where.interactive and core.probe_timeout == 330.0


def test_client_credentials_take_the_clients_id_and_secret(tmp_path):
    where = resolve(shell(oauth_client_id="svc", oauth_client_credentials=True),
                    {SECRET_VARIABLE: "svc-secret"})
    assert where.oauth == Preregistered("svc", "svc-secret", None, client_credentials=True)
    assert "svc-secret" not in repr(where)
    args = parser().parse_args(["--url", URL, "--oauth-client-id", "svc",
                                "--oauth-client-credentials"])
    assert args.oauth_client_credentials is True


def test_client_credentials_without_a_secret_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="--oauth-client-secret-file"):
        resolve(shell(oauth_client_id="svc", oauth_client_credentials=True), {})
    config = tmp_path / "bridge.toml"
    config.write_text('url = "https://mcp.example.com/mcp"\noauth_client_credentials = "yes"\n')
    with pytest.raises(ConfigError, match="oauth_client_credentials"):
        load_settings(str(config), {})
    config.write_text('url = "https://mcp.example.com/mcp"\noauth_client_credentials = true\n')
    assert load_settings(str(config), {}).shell.oauth_client_credentials is True
