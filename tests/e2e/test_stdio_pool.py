"""The stdio bridge's pool (--max-servers), against the real legacy server (mcp 1.30
FastMCP) and the real modern client (mcp 2.3 `Client` on stdio, which launches the bridge):
calls that may be asked for input run at once, each at a process of its own, each asked its
own question.

Must not fake a peer: tests/e2e/peers/pool_client.py launches `python -m bridge
--max-servers N -- <legacy server>` and makes its calls; its elicitation callback answers
from the question's own text, so a question put on the wrong call shows in that call's
result.
"""

from __future__ import annotations

import json
import subprocess
from typing import Any

import venvs

COLD_AT_MOST_S = 6.0
WAIT = 120.0


def rounds_through_stdio(modern_python: venvs.SdkPython, legacy_python: venvs.SdkPython,
                         count: int, rounds: int, *options: str) -> list[dict[str, Any]]:
    bridge = venvs.bridge_command(legacy_python.peer("legacy_server"), *options)
    cmd = [modern_python.path, str(venvs.PEERS_DIR / "pool_client.py"), "stdio", "-",
           str(count), "1", str(rounds), "--", *bridge]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=WAIT,
                          cwd=venvs.REPO_ROOT, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr[-4000:]
    report: list[dict[str, Any]] = json.loads(done.stdout.splitlines()[-1])["rounds"]
    return report


def attributed(run: dict[str, Any], round_: int, count: int) -> bool:
    results = run["results"]
    return sorted(r["who"] for r in results) == sorted(f"{round_}-{i}" for i in range(count)) \
        and all(r["name"] == f"name-of-{r['who']}" for r in results)


def test_with_max_servers_calls_that_may_be_asked_run_at_once_at_processes_of_their_own(
        modern_python: venvs.SdkPython, legacy_python: venvs.SdkPython) -> None:
    cold, warm = rounds_through_stdio(modern_python, legacy_python, 8, 2,
                                      "--max-servers", "8")
    # From cold, 8 server processes start at once: about 0.6 s of CPU each (Python, mcp,
    # pydantic), 2.5 s on 2 cores before any answers; one process would take 8 s.
    assert cold["seconds"] < COLD_AT_MOST_S, cold
    assert warm["seconds"] < 1.5, warm
    assert attributed(cold, 0, 8) and attributed(warm, 1, 8), (cold, warm)
    assert len({r["pid"] for r in warm["results"]}) == 8
    assert {r["pid"] for r in warm["results"]} == {r["pid"] for r in cold["results"]}


def test_without_it_such_calls_take_turns_at_the_one_process(
        modern_python: venvs.SdkPython, legacy_python: venvs.SdkPython) -> None:
    [run] = rounds_through_stdio(modern_python, legacy_python, 3, 1)
    assert run["seconds"] >= 3.0, run  # three 1-s calls, one after another
    assert attributed(run, 0, 3) and len({r["pid"] for r in run["results"]}) == 1
