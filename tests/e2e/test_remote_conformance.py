"""The conformance suite's client scenarios, with `mcp-rosetta --url` as the HTTP client under
test: a legacy stdio client (peers/conformance_client.py, mcp 1.x) whose server is the bridge
in front of the suite's scenario server.

Must not pick scenarios the tour cannot drive: the client does what a host does (initialize,
call every tool with arguments made from its schema or the calls the scenario's context
names, read every resource, get every prompt), so a scenario that wants a schema echoed back
(json-schema-2020-12-preservation) is not in the list; tests/e2e/conformance/README.md
§Client scenarios through `mcp-rosetta --url` records what each scenario gave.

The `auth/*` scenarios sign in as a user would: the bridge is started with the client the
scenario's context names (peers/oauth_bridge.py), its sign-ins stored in the test's own
directory, and the browser is a command named in `BROWSER` (peers/follow_redirects.py) that
follows the authorization server's redirect to the bridge's loopback listener.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys

import conformance_suite
import pytest
import venvs

SCENARIOS = (
    "initialize",
    "tools_call",
    "elicitation-sep1034-client-defaults",
    "sep-2322-client-request-state",
    "http-standard-headers",
    "http-custom-headers",
    "http-invalid-tool-headers",
    "json-schema-ref-no-deref",
    "sse-retry",
    "request-metadata",
)
# Every auth scenario the 2026-07-28 requirement set requires of a client; the first ones
# (to auth/pre-registration) the 2025-11-25 set requires too. Each runs at each revision.
AUTH_SCENARIOS = (
    "auth/metadata-default",
    "auth/metadata-var1",
    "auth/metadata-var2",
    "auth/metadata-var3",
    "auth/basic-cimd",
    "auth/scope-from-www-authenticate",
    "auth/scope-from-scopes-supported",
    "auth/scope-omitted-when-undefined",
    "auth/scope-step-up",
    "auth/scope-retry-limit",
    "auth/token-endpoint-auth-basic",
    "auth/token-endpoint-auth-post",
    "auth/token-endpoint-auth-none",
    "auth/pre-registration",
    "auth/resource-mismatch",
    "auth/offline-access-scope",
    "auth/offline-access-not-supported",
    "auth/authorization-server-migration",
    "auth/iss-supported",
    "auth/iss-not-advertised",
    "auth/iss-supported-missing",
    "auth/iss-wrong-issuer",
    "auth/iss-unexpected",
    "auth/iss-normalized",
    "auth/metadata-issuer-mismatch",
)
AUTH_RUNS = (
    *[(name, "2026-07-28") for name in AUTH_SCENARIOS],
    *[(name, "2025-11-25")
      for name in AUTH_SCENARIOS[:AUTH_SCENARIOS.index("auth/pre-registration") + 1]],
)
SCENARIO_TIMEOUT = 120


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_a_client_scenario_passes_through_the_bridge(legacy_python, scenario, tmp_path):
    bridge = json.dumps([sys.executable, "-m", "bridge"])
    assert_passes(legacy_python, scenario, tmp_path, {"ROSETTA_BRIDGE": bridge})


@pytest.mark.parametrize(("scenario", "revision"), AUTH_RUNS)
def test_an_auth_scenario_signs_in_through_the_bridge(legacy_python, scenario, revision,
                                                      tmp_path):
    bridge = json.dumps([sys.executable, str(venvs.PEERS_DIR / "oauth_bridge.py")])
    browser = f"{sys.executable} {venvs.PEERS_DIR / 'follow_redirects.py'} %s"
    assert_passes(legacy_python, scenario, tmp_path, {
        "ROSETTA_BRIDGE": bridge, "BROWSER": browser,
        "XDG_CONFIG_HOME": str(tmp_path / "config")}, "--spec-version", revision)


def test_a_sign_in_slower_than_the_era_probe_still_finds_the_servers_era(legacy_python,
                                                                         tmp_path):
    # The user approves after 8 s, past the 5 s probe_timeout: the era must come from the
    # 2026-07-28 server's answer once signed in, not from the probe's timer (legacy).
    bridge = json.dumps([sys.executable, str(venvs.PEERS_DIR / "oauth_bridge.py")])
    browser = f"{sys.executable} {venvs.PEERS_DIR / 'follow_redirects.py'} --after 8 %s"
    assert_passes(legacy_python, "auth/metadata-default", tmp_path, {
        "ROSETTA_BRIDGE": bridge, "BROWSER": browser,
        "XDG_CONFIG_HOME": str(tmp_path / "config")}, "--spec-version", "2026-07-28")


def test_auth_login_signs_in_once_and_the_bridge_then_needs_no_browser(legacy_python,
                                                                        tmp_path):
    # The scenario's client is `auth login URL` (the browser follows the redirect), then the
    # tour with a browser that fails: the bridge must use the stored tokens.
    login = shlex.join([sys.executable, "-m", "bridge", "auth", "login"])
    status = shlex.join([sys.executable, "-m", "bridge", "auth", "status"])
    tour = shlex.join([legacy_python.path, str(venvs.PEERS_DIR / "conformance_client.py")])
    follow = f"{sys.executable} {venvs.PEERS_DIR / 'follow_redirects.py'} %s"
    script = (f'BROWSER="{follow}" {login} "$0" >&2 && {status} "$0" >&2 '
              f'&& BROWSER=false {tour} "$0"')
    client = shlex.join(["sh", "-c", script])
    env = {**os.environ, "ROSETTA_BRIDGE": json.dumps([sys.executable, "-m", "bridge"]),
           "XDG_CONFIG_HOME": str(tmp_path / "config")}
    proc = subprocess.run(
        conformance_suite.suite_command("client", "--command", client, "--scenario",
                                        "auth/metadata-default", "--spec-version", "2026-07-28"),
        capture_output=True, text=True, timeout=SCENARIO_TIMEOUT, cwd=tmp_path, env=env)
    out = re.sub(r"\x1b\[[0-9;]*m", "", proc.stdout + proc.stderr)
    assert "OVERALL: PASSED" in out, out[-3000:]
    (index,) = (tmp_path / "config" / "mcp-rosetta" / "oauth" / "servers").glob("*.json")
    url = json.loads(index.read_text())["server"]
    shown = subprocess.run([sys.executable, "-m", "bridge", "auth", "status", url],
                           capture_output=True, text=True, timeout=30, env=env)
    assert shown.returncode == 0 and "client: test-client-id" in shown.stderr, shown
    assert shown.stdout == "" and "test-token" not in shown.stderr


def test_the_daemon_uses_the_stored_sign_in(legacy_python, tmp_path):
    # `auth login URL`, then `serve --url URL` on a Unix socket, which never opens a browser,
    # reached by the tour through `connect`: the daemon's sessions use the stored tokens.
    bridge = [sys.executable, "-m", "bridge"]
    sock = tmp_path / "d.sock"
    relay = json.dumps(["sh", "-c", f"exec {shlex.join([*bridge, 'connect', f'unix:{sock}'])}",
                        "{url}"])
    follow = f"{sys.executable} {venvs.PEERS_DIR / 'follow_redirects.py'} %s"
    tour = shlex.join([legacy_python.path, str(venvs.PEERS_DIR / "conformance_client.py")])
    script = "\n".join([
        f'BROWSER="{follow}" {shlex.join([*bridge, "auth", "login"])} "$0" >&2 || exit 1',
        f'{shlex.join([*bridge, "serve", "--listen", f"unix:{sock}"])} --url "$0" '
        f'2>{tmp_path / "daemon.log"} &',
        "daemon=$!",
        f"i=0; while [ ! -S {sock} ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done",
        f"BROWSER=false ROSETTA_BRIDGE={shlex.quote(relay)} {tour} \"$0\"; rc=$?",
        'kill "$daemon"; wait "$daemon"; exit "$rc"'])
    env = {**os.environ, "XDG_CONFIG_HOME": str(tmp_path / "config")}
    proc = subprocess.run(
        conformance_suite.suite_command("client", "--command", shlex.join(["sh", "-c", script]),
                                        "--scenario", "auth/metadata-default",
                                        "--spec-version", "2026-07-28"),
        capture_output=True, text=True, timeout=SCENARIO_TIMEOUT, cwd=tmp_path, env=env)
    out = re.sub(r"\x1b\[[0-9;]*m", "", proc.stdout + proc.stderr)
    daemon = (tmp_path / "daemon.log").read_text()
    assert "OVERALL: PASSED" in out, out[-3000:] + daemon[-2000:]
    assert '"event":"oauth.signed_in"' not in daemon.replace(" ", ""), daemon[-2000:]
    assert "test-token" not in daemon


def assert_passes(legacy_python, scenario, tmp_path, env, *flags):
    client = f"{legacy_python} {venvs.PEERS_DIR / 'conformance_client.py'}"
    proc = subprocess.run(
        conformance_suite.suite_command("client", "--command", client, "--scenario", scenario,
                                        *flags),
        capture_output=True, text=True, timeout=SCENARIO_TIMEOUT, cwd=tmp_path,
        env={**os.environ, **env})
    out = re.sub(r"\x1b\[[0-9;]*m", "", proc.stdout + proc.stderr)
    passed = re.search(r"Passed: (\d+)/(\d+), (\d+) failed, (\d+) warnings", out)
    assert passed is not None, out[-3000:]
    assert passed[3] == "0" and passed[4] == "0" and int(passed[1]) > 0, out[-3000:]
    assert "OVERALL: PASSED" in out, out[-3000:]
