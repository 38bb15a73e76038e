"""The server side of the real bridge: a command that cannot start, the server's stderr as log
events, the server's environment and working directory, the transcript, the first log line.

Must not fake a process: the bridge (stdio and `serve`) runs as its own process in front of
real servers (a stdlib one that reports its environment, the demo's modern server) or of
commands that cannot start.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import venvs

WAIT = 60.0
ENV_SERVER = [sys.executable, str(venvs.PEERS_DIR / "env_server.py")]
INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {},
    "clientInfo": {"name": "raw", "version": "1"}}}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
CALL_ENV = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "env", "arguments": {}}}
SECRET = "hunter2-do-not-log"


def bridge(*args: str, stdin: list[dict[str, Any]], env: dict[str, str] | None = None,
           cwd: Path | None = None) -> subprocess.CompletedProcess[bytes]:
    lines = b"".join(json.dumps(m).encode() + b"\n" for m in stdin)
    return subprocess.run([sys.executable, "-m", "bridge", "--log-format", "json", *args],
                          input=lines, capture_output=True, timeout=WAIT, env=env, cwd=cwd)


def log_of(stderr: bytes) -> list[dict[str, Any]]:
    """Every stderr line, each of which must be JSON."""
    return [json.loads(line) for line in stderr.splitlines()]


def answers(stdout: bytes) -> dict[Any, dict[str, Any]]:
    return {m.get("id"): m for m in (json.loads(line) for line in stdout.splitlines())}


def reported_env(stdout: bytes) -> dict[str, Any]:
    report: dict[str, Any] = json.loads(answers(stdout)[2]["result"]["content"][0]["text"])
    return report


def events(log: list[dict[str, Any]], name: str) -> list[dict[str, Any]]:
    return [e for e in log if e["event"] == name]


def no_restarts(tmp_path: Path, command: list[str]) -> Path:
    config = tmp_path / "c.toml"
    config.write_text(f"command = {json.dumps(command)}\nmax_restarts = 0\n")
    return config


# --- a command that cannot start -------------------------------------------------------------


def test_a_missing_command_names_the_path_searched_and_the_python3_there(tmp_path: Path) -> None:
    (tmp_path / "python3").symlink_to(sys.executable)
    env = {**os.environ, "PATH": f"{tmp_path}:/nonexistent"}
    done = bridge("--config", str(no_restarts(tmp_path, ["python", "-m", "srv"])),
                  stdin=[INIT], env=env)
    assert done.returncode == 69
    log = log_of(done.stderr)
    (failed,) = events(log, "child.start_failed")
    assert failed["code"] == 127
    assert failed["reason"] == (
        f"server command not found: 'python' is in none of PATH={tmp_path}:/nonexistent; "
        f"give the absolute path of the program (python3 exists: {tmp_path}/python3)")
    assert [e["code"] for e in events(log, "child.exited")] == [127]
    answers(done.stdout)  # whatever the core answers is protocol, and nothing else


def test_a_missing_command_under_the_servers_own_path(tmp_path: Path) -> None:
    done = bridge("--config", str(no_restarts(tmp_path, ["sh", "-c", "true"])),
                  "-e", f"PATH={tmp_path}", stdin=[INIT])
    assert done.returncode == 69
    (failed,) = events(log_of(done.stderr), "child.start_failed")
    assert failed["code"] == 127 and f"PATH={tmp_path};" in failed["reason"]


def test_a_file_that_is_not_executable_is_126_with_the_fix(tmp_path: Path) -> None:
    script = tmp_path / "server.py"
    script.write_text("print('hi')\n")
    done = bridge("--config", str(no_restarts(tmp_path, [str(script)])), stdin=[INIT])
    assert done.returncode == 69
    (failed,) = events(log_of(done.stderr), "child.start_failed")
    assert failed["code"] == 126
    assert f"chmod +x {script}" in failed["reason"]
    assert f'command = ["python3", "{script}"]' in failed["reason"]


# --- environment and working directory -------------------------------------------------------


def test_env_flags_reach_the_server_and_no_value_reaches_the_log(tmp_path: Path) -> None:
    env = {**os.environ, "FROM_BRIDGE": "inherited", "PASSED_ON": "bridge's own"}
    done = bridge("-e", f"API_TOKEN={SECRET}", "-e", "PASSED_ON", "--cwd", str(tmp_path),
                  "--", *ENV_SERVER, stdin=[INIT, INITIALIZED, CALL_ENV], env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    report = reported_env(done.stdout)
    assert report["cwd"] == str(tmp_path)
    assert report["env"]["API_TOKEN"] == SECRET
    assert report["env"]["PASSED_ON"] == "bridge's own"
    assert report["env"]["FROM_BRIDGE"] == "inherited"  # no allowlist: all of ours
    assert SECRET.encode() not in done.stderr
    (started,) = events(log_of(done.stderr), "bridge.started")
    assert started["env"] == ["API_TOKEN", "PASSED_ON"] and started["cwd"] == str(tmp_path)


def test_the_config_env_cwd_and_allowlist_reach_the_server(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    config = tmp_path / "c.toml"
    config.write_text(f"command = {json.dumps(ENV_SERVER)}\n"
                      f'env = {{ API_TOKEN = "{SECRET}" }}\n'
                      f'cwd = "{work}"\npass_env = ["KEEP_*"]\n')
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "LC_ALL": "C.UTF-8",
           "KEEP_ME": "kept", "DROP_ME": "dropped", "NOTIFY_SOCKET": "/nonexistent"}
    done = bridge("--config", str(config), stdin=[INIT, INITIALIZED, CALL_ENV], env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    report = reported_env(done.stdout)
    assert report["cwd"] == str(work)
    server_env = report["env"]
    assert server_env["API_TOKEN"] == SECRET and server_env["KEEP_ME"] == "kept"
    assert server_env["HOME"] == str(tmp_path) and server_env["LC_ALL"] == "C.UTF-8"
    assert "DROP_ME" not in server_env and "NOTIFY_SOCKET" not in server_env
    assert SECRET.encode() not in done.stderr
    (started,) = events(log_of(done.stderr), "bridge.started")
    assert started["config"] == str(config) and started["command"] == ENV_SERVER
    assert started["pass_env"] == ["KEEP_*"]


def test_a_missing_cwd_is_one_line_and_exit_78(tmp_path: Path) -> None:
    done = bridge("--cwd", str(tmp_path / "absent"), "--", *ENV_SERVER, stdin=[])
    assert done.returncode == 78
    assert done.stderr.decode().splitlines() == [
        f"mcp-rosetta: --cwd: no such directory: {tmp_path / 'absent'}; create it or fix the "
        "path"]


# --- the server's stderr, the first line ----------------------------------------------------


def test_the_servers_stderr_lines_are_events_and_the_first_line_is_bridge_started(
        tmp_path: Path) -> None:
    done = bridge("--", *ENV_SERVER, stdin=[INIT, INITIALIZED, CALL_ENV])
    assert done.returncode == 0
    log = log_of(done.stderr)
    assert log[0]["event"] == "bridge.started" and log[0]["command"] == ENV_SERVER
    assert log[0]["config"] is None and log[0]["version"]
    lines = events(log, "server.stderr")
    assert [e["line"][:30] for e in lines] == ["env server starting",
                                               "café \\xff\\xfe not utf-8", "y" * 30]
    assert all(e["gen"] == 1 for e in lines)
    assert len(lines[2]["line"]) == 8192 and lines[2]["cut"] == 20000 - 8192


class Daemon:
    """`mcp-rosetta serve` on a socket of the test's, its stderr kept."""

    def __init__(self, tmp_path: Path, *args: str) -> None:
        self.path = tmp_path / "d.sock"
        self.stderr = tmp_path / "daemon.log"
        with open(self.stderr, "wb") as err:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "bridge", "serve", "--listen", f"unix:{self.path}",
                 "--log-format", "json", *args], stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL, stderr=err)
        deadline = time.monotonic() + WAIT
        while not self.path.exists():
            assert self.proc.poll() is None and time.monotonic() < deadline, self.log()
            time.sleep(0.05)

    def session(self, *messages: dict[str, Any], replies: int) -> list[dict[str, Any]]:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(WAIT)
            sock.connect(str(self.path))
            sock.sendall(b"".join(json.dumps(m).encode() + b"\n" for m in messages))
            got = b""
            while got.count(b"\n") < replies:
                chunk = sock.recv(65536)
                if not chunk:
                    break
                got += chunk
        return [json.loads(line) for line in got.splitlines()]

    def stop(self) -> int:
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(WAIT)

    def log(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.stderr.read_bytes().splitlines()]


def test_under_the_daemon_every_line_is_json_with_its_session(tmp_path: Path) -> None:
    transcript = tmp_path / "t.jsonl"
    daemon = Daemon(tmp_path, "-e", f"API_TOKEN={SECRET}", "--transcript", str(transcript),
                    "--", *ENV_SERVER)
    try:
        for _ in range(2):
            replies = daemon.session(INIT, INITIALIZED, CALL_ENV, replies=2)
            assert json.loads(replies[1]["result"]["content"][0]["text"])["env"][
                "API_TOKEN"] == SECRET
    finally:
        assert daemon.stop() == 0
    log = daemon.log()  # every line parses, or this fails
    assert log[0]["event"] == "daemon.started" and log[0]["env"] == ["API_TOKEN"]
    lines = events(log, "server.stderr")
    assert sorted({(e["session"], e["gen"]) for e in lines}) == [(1, 1), (2, 1)]
    assert [e["line"][:19] for e in lines if e["session"] == 1] == [
        "env server starting", "café \\xff\\xfe not u", "y" * 19]
    assert SECRET.encode() not in daemon.stderr.read_bytes()
    records = [json.loads(line) for line in transcript.read_bytes().splitlines()]
    legs = {(r["session"], r["leg"]) for r in records}
    assert legs == {(n, leg) for n in (1, 2) for leg in (
        "client>bridge", "bridge>server", "server>bridge", "bridge>client")}
    # The bridge gives the server ids of its own: the client's id 2 goes out under another.
    for n in (1, 2):
        (sent,) = [r["message"] for r in records if r["session"] == n
                   and r["leg"] == "bridge>server" and r["message"].get("method") == "tools/call"]
        assert sent["params"]["name"] == "env" and sent["id"] != 2


def test_under_the_daemon_a_missing_command_is_logged_per_session(tmp_path: Path) -> None:
    config = no_restarts(tmp_path, ["no-such-server-xyz"])
    daemon = Daemon(tmp_path, "--config", str(config))
    try:
        daemon.session(INIT, replies=1)  # the session answers what it can, then ends
    finally:
        assert daemon.stop() == 0
    log = daemon.log()
    (failed,) = events(log, "child.start_failed")
    assert failed["session"] == 1 and failed["code"] == 127
    assert "'no-such-server-xyz' is in none of PATH=" in failed["reason"]
    assert [(e["session"], e["code"]) for e in events(log, "session.ended")] == [(1, 69)]


# --- the transcript ----------------------------------------------------------------------------


def test_a_transcript_shows_a_mode_a_calls_four_legs(tmp_path: Path, legacy_python: Any,
                                                      run_client: Any) -> None:
    transcript = tmp_path / "t.jsonl"
    demo = [sys.executable, "-m", "bridge.demo.modern_server"]
    report = run_client(legacy_python, "basic",
                        venvs.bridge_command(demo, "--transcript", str(transcript)))
    assert report["call:add"]["content"][0]["text"] == '{"sum": 5}', report
    assert oct(transcript.stat().st_mode & 0o777) == "0o600"
    records = [json.loads(line) for line in transcript.read_bytes().splitlines()]
    assert {r["leg"] for r in records} == {"client>bridge", "bridge>server", "server>bridge",
                                           "bridge>client"}

    def add_call(leg: str) -> dict[str, Any]:
        (found,) = [r["message"] for r in records if r["leg"] == leg
                    and isinstance(r["message"], dict) and r["message"].get("method") ==
                    "tools/call" and r["message"]["params"]["name"] == "add"]
        return found

    legacy, modern = add_call("client>bridge"), add_call("bridge>server")
    assert modern["params"]["arguments"] == legacy["params"]["arguments"] == {"a": 2, "b": 3}
    assert "io.modelcontextprotocol/protocolVersion" in modern["params"]["_meta"]
    assert "_meta" not in legacy["params"] or "io.modelcontextprotocol/protocolVersion" \
        not in legacy["params"]["_meta"]
    answered = [r for r in records if r["leg"] == "bridge>client"
                and isinstance(r["message"], dict) and r["message"].get("id") == legacy["id"]]
    assert answered[0]["message"]["result"]["content"][0]["text"] == '{"sum": 5}'
    times = [r["time"] for r in records]
    assert times == sorted(times)


def test_a_transcript_that_cannot_be_opened_is_one_line_and_exit_78(tmp_path: Path) -> None:
    where = tmp_path / "absent" / "t.jsonl"
    for serve in ((), ("serve", "--listen", f"unix:{tmp_path}/d.sock")):
        done = subprocess.run([sys.executable, "-m", "bridge", *serve, "--transcript",
                               str(where), "--", *ENV_SERVER], capture_output=True,
                              timeout=WAIT, stdin=subprocess.DEVNULL)
        assert done.returncode == 78
        assert done.stderr.decode().splitlines() == [
            f"mcp-rosetta: cannot open transcript {where}: No such file or directory; give a "
            "file in a directory the bridge may write to"]
