"""`mcp-rosetta check` against real servers of each era: the test peers, the built-in demo
server and the pinned published ones, plus servers that cannot be served.

Must not trust check's own code for what to expect: counts come from the servers' sources
(the peers' decorators, the demo's tables) or from the pinned published packages.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import venvs

from bridge.demo import modern_server as demo
from bridge.errors import EX_UNAVAILABLE
from bridge.shell.check import MAX_PAGES

DEMO_SERVER = [sys.executable, "-m", "bridge", "demo", "--server"]


def check(server: list[str], *options: str) -> tuple[int, dict[str, Any], str]:
    """check's exit status, its JSON report, and its stderr."""
    done = subprocess.run([sys.executable, "-m", "bridge", "check", "--json", *options, "--",
                           *server], capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL)
    return done.returncode, json.loads(done.stdout), done.stderr


def counts(report: dict[str, Any]) -> dict[str, int]:
    assert all(listing["error"] is None and listing["complete"]
               for listing in report["lists"].values()), report["lists"]
    return {name: listing["count"] for name, listing in report["lists"].items()}


def declared(peer: str, kind: str) -> int:
    """How many `@mcp.<kind>(...)` (or `@server.`) a peer's source declares; resources with a
    {parameter} in their URI are templates, which resources/list does not list."""
    source = (venvs.PEERS_DIR / f"{peer}.py").read_text()
    found = re.findall(rf"^@(?:mcp|server)\.{kind}\((.*)\)$", source, re.M)
    return len([args for args in found if "{" not in args])


def test_the_demo_server_is_modern_and_offers_its_tables() -> None:
    code, report, stderr = check(DEMO_SERVER)
    assert (code, stderr) == (0, "")
    assert report["era"] == "modern" and report["dual"] is False
    assert report["era_reason"] == "answered server/discover"
    assert report["modern_versions"] == ["2026-07-28"]
    assert report["server_info"] == demo.SERVER_INFO
    assert counts(report) == {"tools": len(demo.TOOLS), "prompts": 1, "resources": 1}
    assert report["modes"] == {"legacy": "A", "modern": "P"}
    assert report["servable"] is True and report["failure"] is None
    assert report["noise_count"] == 0
    assert 0 < report["first_byte_ms"] <= report["answer_ms"] < 60_000


def test_the_human_report_fits_80_columns_and_names_the_essentials() -> None:
    done = subprocess.run([sys.executable, "-m", "bridge", "check", "--", *DEMO_SERVER],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0
    lines = done.stdout.splitlines()
    assert max(map(len, lines)) <= 80
    header = f"mcp-rosetta check -- {sys.executable} -m bridge demo --server"
    # The whole command, wrapped at the width (a CI clone's venv makes the path long): its
    # continuation lines are indented past every row's label.
    shown = [lines[0], *itertools.takewhile(lambda line: line.startswith("    "), lines[1:])]
    assert " ".join(part.strip() for part in shown) == header
    rows = {line[2:16].strip(): line[16:] for line in lines[1:-1] if line[2:3] != " "}
    assert rows["server"] == "demo-modern-server 1.0.0"
    assert rows["era"] == "modern (2026-07-28), answered server/discover"
    assert rows["offers"] == "2 tools, 1 prompt, 1 resource"
    assert rows["modes"] == "legacy client: A (translated), modern client: P (relayed)"
    assert lines[-1] == "ok: mcp-rosetta can serve it"


def test_stdout_that_is_not_protocol_is_shown_and_the_server_still_served() -> None:
    server = ["sh", "-c", f'echo "Server starting..."; exec {" ".join(DEMO_SERVER)}']
    code, report, _ = check(server)
    assert code == 0
    assert (report["noise"], report["noise_count"]) == (["Server starting..."], 1)


def test_the_modern_peer(modern_python: venvs.SdkPython) -> None:
    code, report, _ = check(modern_python.peer("modern_server"))
    assert code == 0
    assert (report["era"], report["dual"]) == ("modern", False)  # pinned to 2026-07-28
    source = (venvs.PEERS_DIR / "modern_server.py").read_text()
    tools = len(re.findall(r'^\s+"\w+": tool\(', source, re.M))
    assert counts(report)["tools"] == tools > 0
    assert report["server_info"]["name"] == "rosetta-modern-server"


def test_the_legacy_peer(legacy_python: venvs.SdkPython) -> None:
    code, report, _ = check(legacy_python.peer("legacy_server"))
    assert code == 0
    assert report["era"] == "legacy" and report["legacy_version"] == "2025-11-25"
    assert report["era_reason"].startswith("answered server/discover with error -326")
    assert counts(report) == {kind + "s": declared("legacy_server", kind)
                              for kind in ("tool", "prompt", "resource")}
    assert report["modes"] == {"legacy": "P", "modern": "B"}


def test_the_dual_era_peer(modern_python: venvs.SdkPython) -> None:
    code, report, _ = check(modern_python.peer("dual_server"))
    assert code == 0
    assert (report["era"], report["dual"], report["legacy_version"]) == (
        "modern", True, "2025-11-25")
    assert counts(report) == {kind + "s": declared("dual_server", kind)
                              for kind in ("tool", "prompt", "resource")}
    assert report["modes"] == {"legacy": "A", "modern": "P"}


def test_a_pinned_era_skips_the_probe(legacy_python: venvs.SdkPython) -> None:
    code, report, _ = check(legacy_python.peer("legacy_server"), "--server-era", "legacy")
    assert code == 0
    assert (report["era"], report["era_reason"]) == ("legacy", "pinned")


def test_published_server_everything() -> None:
    code, report, _ = check(venvs.published_server("server-everything"))
    assert code == 0
    assert report["era"] == "legacy" and report["era_reason"] == (
        "answered server/discover with error -32601")
    assert report["server_info"]["name"] == "mcp-servers/everything"
    assert counts(report) == {"tools": 13, "prompts": 4, "resources": 7}  # as pinned
    assert report["modes"] == {"legacy": "P", "modern": "B"}


def test_a_pin_to_modern_that_a_legacy_server_contradicts_fails_naming_the_fix() -> None:
    server = venvs.published_server("server-everything")
    code, report, stderr = check(server, "--server-era", "modern")
    assert code == EX_UNAVAILABLE
    assert report["failure"] == (
        "server_era is pinned to modern, but the server answered server/discover like a "
        "legacy server (error -32601: 'Method not found'); remove --server-era modern (or set "
        'server_era = "auto") to let mcp-rosetta detect the era')
    assert report["era_reason"] == "pinned, yet it answered server/discover with error -32601"
    assert stderr == f"mcp-rosetta: server unavailable: {report['failure']}\n"
    text = subprocess.run([sys.executable, "-m", "bridge", "check", "--server-era", "modern",
                           *server], capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL).stdout
    assert text.startswith("mcp-rosetta check --server-era modern -- ")


def test_a_pin_to_legacy_on_a_modern_only_server_fails_naming_the_pin(
        modern_python: venvs.SdkPython) -> None:
    code, report, _ = check(modern_python.peer("modern_server"), "--server-era", "legacy")
    assert code == EX_UNAVAILABLE
    assert report["failure"] == (
        "server_era is pinned to legacy, but the server is modern-only: it refused initialize "
        "(-32022: 'this server speaks only 2026-07-28; initialize is not accepted') and "
        'supports 2026-07-28; remove --server-era legacy (or set server_era = "auto") to let '
        "mcp-rosetta detect the era")
    assert report["options"] == ["--server-era", "legacy"]


def test_published_mcp_server_time_is_dual_era() -> None:
    code, report, _ = check(venvs.published_server("mcp-server-time"))
    assert code == 0
    assert (report["era"], report["dual"]) == ("modern", True)
    assert report["server_info"] == {"name": "mcp-time", "version": "2026.10.19"}
    assert counts(report) == {"tools": 2, "prompts": 0, "resources": 0}


def test_a_missing_command_is_69_with_the_cause() -> None:
    code, report, stderr = check(["no-such-mcp-server-xyz"])
    assert code == EX_UNAVAILABLE
    cause = ("server command not found: 'no-such-mcp-server-xyz' is in none of "
             f"PATH={os.environ['PATH']}; give the absolute path of the program")
    assert report["failure"] == cause
    assert report["servable"] is False and report["era"] is None
    assert stderr == f"mcp-rosetta: server unavailable: {cause}\n"


def test_a_server_that_exits_at_once_is_69_with_its_stderr() -> None:
    server = [sys.executable, "-c", "import sys; print('loading'); "
              "sys.exit('ValueError: no API key in the environment')"]
    code, report, stderr = check(server)
    assert code == EX_UNAVAILABLE
    # Like the bridge, check starts it once more after it exits on the probe.
    assert report["failure"] == (
        "the server exited (status 1) on server/discover, then again, started once more, "
        "before it answered initialize: see its stderr, or run it by itself")
    assert report["stderr_tail"] == ["ValueError: no API key in the environment"]
    assert report["noise"] == ["loading"]
    assert stderr.splitlines() == [f"mcp-rosetta: server unavailable: {report['failure']}"]


def test_a_silent_server_is_legacy_by_timeout_and_69_without_initialize(
        tmp_path: Path) -> None:
    config = tmp_path / "fast.toml"
    config.write_text('handshake_timeout = "300ms"\n')
    code, report, _ = check(["sh", "-c", "cat > /dev/null"], "--probe-timeout", "200ms",
                            "--config", str(config))
    assert code == EX_UNAVAILABLE
    assert (report["era"], report["era_reason"]) == (
        "legacy", "no answer to server/discover in 0.2 s")
    assert report["failure"] == ("no answer to initialize in 0.3 s (handshake_timeout); is "
                                 "this an MCP server on stdio?")
    assert report["notes"] == [
        "each start waits 0.2 s (probe_timeout) for an answer to server/discover before the "
        'server is taken as legacy: --server-era legacy (server_era = "legacy") skips the '
        "probe"]



def test_the_readme_shows_checks_output_as_it_is() -> None:
    readme = (venvs.REPO_ROOT / "README.md").read_text()
    blocks = re.findall(r"^```text\n\$ (mcp-rosetta check .*?)\n(.*?)^```$", readme, re.M | re.S)
    assert len(blocks) == 2
    env = dict(os.environ, PATH=os.pathsep.join((str(Path(sys.executable).parent),
                                                  os.environ["PATH"])))
    for command, shown in blocks:
        done = subprocess.run(shlex.split(command), capture_output=True, text=True, env=env,
                              timeout=120, stdin=subprocess.DEVNULL)
        assert done.returncode == (0 if shown.endswith("serve it\n") else EX_UNAVAILABLE)
        # Only the start-up times differ from one run to the next.
        assert [line for line in (done.stdout + done.stderr).splitlines()
                if not line.startswith("  started ")] == [
            line for line in shown.splitlines() if not line.startswith("  started ")]


def test_a_silent_server_pinned_modern_is_69_after_the_probe() -> None:
    code, report, _ = check(["sh", "-c", "cat > /dev/null"], "--server-era", "modern",
                            "--probe-timeout", "200ms")
    assert code == EX_UNAVAILABLE
    assert report["era"] == "modern"
    assert report["failure"] == ("no answer to server/discover in 0.2 s (probe_timeout); is "
                                 "this an MCP server on stdio? A legacy server that ignores "
                                 "the probe needs no --server-era modern: remove it")


def test_a_server_that_closes_its_output_but_lives_on_is_named_so() -> None:
    server = [sys.executable, "-c", "import os, time; os.close(1); time.sleep(60)"]
    code, report, _ = check(server)
    assert code == EX_UNAVAILABLE
    assert report["failure"].startswith("the server closed its output on server/discover")


PAGED_SERVER = '''
import json, sys
PAGES = int(sys.argv[1])  # 0: the cursor never ends
for line in sys.stdin:
    m = json.loads(line)
    if "id" not in m:
        continue
    if m["method"] == "initialize":
        result = {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
                  "serverInfo": {"name": "paged", "version": "1"}}
    elif m["method"] == "tools/list":
        page = int((m.get("params") or {}).get("cursor", "0"))
        result = {"tools": [{"name": f"t{page}-{i}", "inputSchema": {"type": "object"}}
                            for i in range(2)]}
        if PAGES == 0 or page + 1 < PAGES:
            result["nextCursor"] = str(page + 1)
    else:
        print(json.dumps({"jsonrpc": "2.0", "id": m["id"],
                          "error": {"code": -32601, "message": "Method not found"}}), flush=True)
        continue
    print(json.dumps({"jsonrpc": "2.0", "id": m["id"], "result": result}), flush=True)
'''


def test_every_page_is_counted_and_only_declared_lists_asked(tmp_path: Path) -> None:
    (tmp_path / "paged.py").write_text(PAGED_SERVER)
    code, report, _ = check([sys.executable, str(tmp_path / "paged.py"), "3"])
    assert code == 0
    assert report["era"] == "legacy" and report["legacy_version"] == "2025-06-18"
    assert report["lists"] == {"tools": {"count": 6, "complete": True, "error": None}}


def test_a_cursor_that_never_ends_is_followed_only_so_far(tmp_path: Path) -> None:
    (tmp_path / "paged.py").write_text(PAGED_SERVER)
    code, report, _ = check([sys.executable, str(tmp_path / "paged.py"), "0"])
    assert code == 0
    assert report["lists"] == {"tools": {"count": 2 * MAX_PAGES, "complete": False,
                                         "error": None}}


def test_the_command_can_come_from_the_config(tmp_path: Path) -> None:
    config = tmp_path / "demo.toml"
    config.write_text(f"command = {json.dumps(DEMO_SERVER)}\nprobe_timeout = \"30s\"\n")
    done = subprocess.run([sys.executable, "-m", "bridge", "check", "--json", "--config",
                           str(config)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert (report["command"], report["era"]) == (DEMO_SERVER, "modern")
