"""`[oauth]` and serve's --oauth-* flags: the HTTP front as an OAuth resource server; and the
front's URL and introspection secret as the start reads them."""

from __future__ import annotations

from pathlib import Path

import pytest

from bridge.cli import _settings
from bridge.config import load_settings
from bridge.errors import ConfigError
from bridge.shell.http.address import Address
from bridge.shell.http.resource_setup import front_url, read_secret
from bridge.shell.settings import OAuthResource

ISSUER = "https://auth.example.com"
LISTEN = ["--listen", "http://127.0.0.1:8080/mcp"]


def serve(tmp_path, *flags: str, toml: str = ""):
    path = tmp_path / "c.toml"
    path.write_text(f'command = ["server"]\n{toml}')
    return _settings(["--config", str(path), *LISTEN, *flags], serve=True)[0].daemon.oauth


def test_the_table_gives_the_front_s_oauth_settings(tmp_path):
    oauth = serve(tmp_path, toml=f'[oauth]\nissuer = "{ISSUER}"\nscopes = ["mcp", "read"]\n'
                                 'audience = "https://mcp.example.com/mcp"\n')
    assert oauth == OAuthResource(ISSUER, audience="https://mcp.example.com/mcp",
                                  scopes=("mcp", "read"))


def test_flags_set_their_keys_of_the_table(tmp_path):
    oauth = serve(tmp_path, "--oauth-scope", "a", "--oauth-scope", "b", "--oauth-jwks-url",
                  f"{ISSUER}/keys", toml=f'[oauth]\nissuer = "{ISSUER}"\nscopes = ["x"]\n')
    assert oauth == OAuthResource(ISSUER, jwks_url=f"{ISSUER}/keys", scopes=("a", "b"))
    assert serve(tmp_path, "--oauth-issuer", ISSUER) == OAuthResource(ISSUER)
    assert serve(tmp_path) is None


@pytest.mark.parametrize(("toml", "says"), [
    ('[oauth]\nisuer = "https://a.example"\n', "unknown key 'isuer'; did you mean issuer?"),
    ('[oauth]\nissuer = "http://auth.example.com"\n', "an https:// URL"),
    ('[oauth]\nissuer = "https://a.example"\nscopes = ["a b"]\n', "no spaces"),
    ('[oauth]\nscopes = ["mcp"]\n', "no issuer"),
    ('[oauth]\nissuer = "https://a.example"\nintrospection_client_id = "x"\n',
     "go together"),
    ('oauth = "https://a.example"\n', "expected a table"),
])
def test_a_bad_table_is_a_config_error_naming_the_key(tmp_path, toml, says):
    with pytest.raises(ConfigError) as raised:
        serve(tmp_path, toml=toml)
    assert says in str(raised.value)


def test_a_loopback_issuer_may_be_plain_http():
    settings = load_settings(None, {"oauth": {"issuer": "http://127.0.0.1:9000"}})
    assert settings.daemon.oauth == OAuthResource("http://127.0.0.1:9000")


def test_the_audience_is_the_listen_url_unless_given():
    oauth = OAuthResource(ISSUER)
    assert front_url(oauth, Address("127.0.0.1", 0, "/mcp"), 4242) == \
        "http://127.0.0.1:4242/mcp"
    assert front_url(oauth, Address("::1", 80, "/x"), 80) == "http://[::1]:80/x"
    given = OAuthResource(ISSUER, audience="https://mcp.example.com/mcp")
    assert front_url(given, Address("0.0.0.0", 80, "/mcp"), 80) == \
        "https://mcp.example.com/mcp"
    with pytest.raises(ConfigError, match="set \\[oauth\\] audience"):
        front_url(oauth, Address("0.0.0.0", 80, "/mcp"), 80)


def test_the_introspection_secret_is_read_from_its_file(tmp_path):
    secret = tmp_path / "secret"
    secret.write_text("s3cret\nignored\n")
    oauth = OAuthResource(ISSUER, introspection_client_id="front",
                          introspection_secret_file=str(secret))
    assert read_secret(oauth) == "s3cret"
    assert read_secret(OAuthResource(ISSUER)) is None
    missing = OAuthResource(ISSUER, introspection_client_id="front",
                            introspection_secret_file=str(tmp_path / "nope"))
    with pytest.raises(ConfigError, match=r"cannot read it .* write the introspection "
                                          r"client's secret there"):
        read_secret(missing)


def test_the_readme_s_oauth_config_is_one_serve_takes(tmp_path):
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    section = readme.split("**Sign-in with an authorization server (OAuth).**", 1)[1]
    block = section.split("```toml\n", 1)[1].split("```", 1)[0]
    path = tmp_path / "front.toml"
    path.write_text(block)
    settings = _settings(["--config", str(path)], serve=True)[0]
    assert settings.daemon.oauth == OAuthResource(
        "https://auth.example.com/realms/mcp", audience="https://mcp.example.com/mcp",
        scopes=("mcp",))
    assert settings.daemon.listen == "http://127.0.0.1:8808/mcp"
