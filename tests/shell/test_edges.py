"""Small mistakes caught where they are made, each message naming the fix: a config key's
typo, a TLS listen address, a port another process holds, a token file open to others, a 401
that answers the request's id, and the README's mcp-remote snippet that npx can run unasked."""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from bridge.cli import main
from bridge.errors import EX_CONFIG, EX_USAGE, ConfigError
from bridge.shell.http.auth import Tokens, exposed
from bridge.shell.http.front import Access
from bridge.shell.services.listeners import tcp_listener
from tests.shell.test_http_front import request, running

README = Path(__file__).resolve().parents[2] / "README.md"


def test_a_config_key_s_typo_gets_did_you_mean(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "typo.toml"
    config.write_text("probe_timout = '1s'\n")
    assert main(["--config", str(config), "true"]) == EX_CONFIG
    assert capsys.readouterr().err.rstrip().endswith(
        "unknown key 'probe_timout'; did you mean probe_timeout?")


def test_a_tls_listen_address_says_tls_is_a_proxy_s(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", "--listen", "https://0.0.0.0:8443/mcp", "true"]) == EX_USAGE
    err = capsys.readouterr().err
    assert "TLS belongs to a reverse proxy in front of it" in err
    assert "listen on http://HOST:PORT/PATH behind the proxy" in err


def test_a_port_in_use_names_the_fix() -> None:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        listen = f"http://127.0.0.1:{port}/mcp"
        with pytest.raises(ConfigError) as raised:
            tcp_listener(listen, "127.0.0.1", port)
    assert str(raised.value) == (
        f"cannot listen on {listen}: Address already in use; another process holds port "
        f"{port} (`ss -ltnp 'sport = :{port}'` names it): stop it, or listen on another port")


def test_a_token_file_open_to_others_gets_a_warning(tmp_path: Path) -> None:
    tokens = tmp_path / "tokens"
    tokens.write_text("a-token\n")
    tokens.chmod(0o644)
    assert exposed(str(tokens)) == (
        f"token_file {tokens} is open to other users (mode 0644): anyone who reads it can use "
        f"the server; chmod 600 {tokens}")
    tokens.chmod(0o600)
    assert exposed(str(tokens)) is None
    assert exposed(None) is None


@pytest.mark.parametrize(("rid", "answered"), [(7, 7), ("x", "x"), (None, None),
                                               ({"no": 1}, None)])
async def test_a_401_answers_the_request_s_id(rid: Any, answered: Any,
                                              autojump_clock: Any) -> None:
    async with running(access=Access(tokens=Tokens((b"alice-token",)))) as r:
        client = await r.client()
        answer = await client.post(request(rid, "tools/list"))
        assert answer.status == 401
        assert json.loads(answer.body)["id"] == answered


def test_the_readme_s_mcp_remote_snippet_lets_npx_install_unasked() -> None:
    text = README.read_text()
    snippets = re.findall(r'"command": "npx",\s*"args": \[([^\]]*)\]', text)
    assert snippets
    for args in snippets:
        if "mcp-remote" in args:
            assert json.loads(f"[{args}]")[:2] == ["-y", "mcp-remote"]


def test_the_front_warns_at_start_of_a_token_file_open_to_others(tmp_path: Path) -> None:
    tokens = tmp_path / "tokens"
    tokens.write_text("a-token\n")
    tokens.chmod(0o640)
    proc = subprocess.Popen(
        [sys.executable, "-m", "bridge", "serve", "--listen", "http://127.0.0.1:0/mcp",
         "--token-file", str(tokens), "--log-format", "json", "true"],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    assert proc.stderr is not None
    try:
        lines = [json.loads(proc.stderr.readline()) for _ in range(2)]
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    assert lines[1]["event"] == "http.token_file_exposed" and lines[1]["level"] == "warning"
    assert "(mode 0640)" in lines[1]["fix"]
