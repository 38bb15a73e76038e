"""--url and --header (url = and headers = in the file): checks, merging, ${VAR}, no value
ever echoed, and one of a command or a URL."""

from __future__ import annotations

from pathlib import Path

import pytest

from bridge.cli import _settings, main
from bridge.errors import EX_CONFIG, EX_USAGE, ConfigError
from bridge.shell.logs import started_fields
from bridge.shell.servers.remote.endpoint import with_environment


def test_url_and_headers_from_flags() -> None:
    settings, _ = _settings(["--url", "https://mcp.example.com/mcp", "--header",
                             "Authorization: Bearer ${TOKEN}", "--header", "X-A:b"], False)
    assert settings.shell.url == "https://mcp.example.com/mcp"
    assert settings.shell.headers == (("Authorization", "Bearer ${TOKEN}"), ("X-A", "b"))
    assert settings.shell.command == ()


def test_the_files_headers_and_the_flags_add_up(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text('url = "http://127.0.0.1:3000/mcp"\nheaders = { X-Tenant = "a" }\n')
    settings, _ = _settings(["--config", str(path), "--header", "X-B: c"], False)
    assert settings.shell.headers == (("X-Tenant", "a"), ("X-B", "c"))


@pytest.mark.parametrize("argv", [
    ["--url", "ftp://x/mcp"],
    ["--url", "http:///mcp"],
    ["--url", "http://h/mcp", "--header", "no colon"],
    ["--url", "http://h/mcp", "--header", "Bad Name: x"],
    ["--url", "http://h/mcp", "--", "srv"],
])
def test_bad_flags_exit_64(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == EX_USAGE
    assert capsys.readouterr().err.startswith("mcp-rosetta: ")


def test_a_bad_header_in_the_file_names_the_key_not_the_value(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "c.toml"
    path.write_text('url = "http://h/mcp"\nheaders = { Authorization = 42, X = "secret" }\n')
    assert main(["--config", str(path)]) == EX_CONFIG
    err = capsys.readouterr().err
    assert "headers" in err and "secret" not in err


def test_variables_are_read_from_the_environment() -> None:
    headers = (("Authorization", "Bearer ${TOKEN}"), ("X", "${A}-${B}"))
    assert with_environment(headers, {"TOKEN": "t0k", "A": "1", "B": "2"}) == (
        ("Authorization", "Bearer t0k"), ("X", "1-2"))
    with pytest.raises(ConfigError, match=r"\$\{TOKEN\} is not set"):
        with_environment(headers[:1], {})


def test_the_first_log_line_names_the_url_and_header_names_only() -> None:
    settings, _ = _settings(["--url", "http://h/mcp", "--header", "Authorization: s3cret"],
                            False)
    fields = started_fields(settings.shell)
    assert fields["url"] == "http://h/mcp" and fields["headers"] == ["Authorization"]
    assert "s3cret" not in repr(fields)


def test_the_http_front_before_a_remote_server_reads_its_headers_before_it_listens(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    # `serve --listen http://... --url` is served (no longer refused); a header naming an
    # unset variable is a config error at start, before anything listens or is imported.
    monkeypatch.delenv("ROSETTA_UNSET_TOKEN", raising=False)
    assert main(["serve", "--listen", "http://127.0.0.1:8808/mcp", "--url",
                 "http://127.0.0.1:9/mcp", "--header",
                 "Authorization: Bearer ${ROSETTA_UNSET_TOKEN}"]) == EX_CONFIG
    assert "${ROSETTA_UNSET_TOKEN} is not set" in capsys.readouterr().err


def test_network_settings_from_flags_and_the_file(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text('url = "http://h/mcp"\nconnect_timeout = "3s"\nread_timeout = 0\n'
                    'max_upstream_connections = 8\n')
    settings, _ = _settings(["--config", str(path), "--read-timeout", "250ms"], False)
    assert (settings.shell.connect_timeout, settings.shell.read_timeout,
            settings.shell.max_upstream_connections) == (3.0, 0.25, 8)
    defaults, _ = _settings(["--url", "http://h/mcp"], False)
    assert (defaults.shell.connect_timeout, defaults.shell.read_timeout,
            defaults.shell.max_upstream_connections) == (10.0, 30.0, 16)


@pytest.mark.parametrize("argv", [
    ["--url", "http://h/mcp", "--connect-timeout", "soon"],
    ["--url", "http://h/mcp", "--max-upstream-connections", "0"],
])
def test_bad_network_flags_exit_64(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == EX_USAGE
    assert capsys.readouterr().err.startswith("mcp-rosetta: ")
