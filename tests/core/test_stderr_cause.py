"""The line of a failed server's stderr an error quotes: the one that says why."""

from __future__ import annotations

import pytest

from bridge.core.restarts import Outage
from bridge.core.stderr_cause import telling_line

# What `npx -y @modelcontextprotocol/server-everythin` (a typo) wrote to stderr, as captured.
NPX_TYPO = """\
npm error code E404
npm error 404 Not Found - GET https://registry.npmjs.org/@modelcontextprotocol%2fserver-everythin
npm error 404
npm error 404  The requested resource '@modelcontextprotocol/server-everythin@*' could not be \
found or you do not have permission to access it.
npm error 404
npm error 404 Note that you can also install from a
npm error 404 tarball, folder, http url, or git url.
npm notice
npm notice New minor version of npm available! 11.19.1 -> 11.21.3
npm notice Changelog: https://github.com/npm/cli/releases/tag/v11.21.3
npm notice To update run: npm install -g npm@11.21.3
npm notice
npm error A complete log of this run can be found in: \
/root/.npm/_logs/2026-12-04T22_59_32_544Z-debug-0.log""".splitlines()

# What node wrote for a server whose script does not exist.
NODE_MISSING = """\
node:internal/modules/cjs/loader:1228
  throw err;
  ^

Error: Cannot find module '/srv/server.js'
    at Module._resolveFilename (node:internal/modules/cjs/loader:1225:15)
    at node:internal/main/run_main_module:28:49 {
  code: 'MODULE_NOT_FOUND',
  requireStack: []
}

Node.js v20.20.2""".splitlines()

TRACEBACK = ["Traceback (most recent call last):", '  File "<string>", line 1, in <module>',
             "ModuleNotFoundError: No module named 'missing_module'"]


@pytest.mark.parametrize(("lines", "said"), [
    (NPX_TYPO, "npm error 404 Not Found - GET https://registry.npmjs.org/"
               "@modelcontextprotocol%2fserver-everythin"),
    (NODE_MISSING, "Error: Cannot find module '/srv/server.js'"),
    (TRACEBACK, "ModuleNotFoundError: No module named 'missing_module'"),
    (["starting", *TRACEBACK, "  during handling", "RuntimeError: again"],
     "RuntimeError: again"),
    (["sh: 1: my-server: not found"], "sh: 1: my-server: not found"),
    (["listening", "bye", ""], "bye"),
    (["", "  "], None),
])
def test_the_line_naming_the_error_wins_over_the_last(lines: list[str],
                                                      said: str | None) -> None:
    assert telling_line(lines) == said


def test_a_mistyped_npx_package_s_error_names_the_404() -> None:
    outage = Outage(1, stderr_tail=tuple(NPX_TYPO))
    assert outage.never_served().endswith(
        "Its stderr said: npm error 404 Not Found - GET https://registry.npmjs.org/"
        "@modelcontextprotocol%2fserver-everythin")
    assert len(outage.data()["stderrTail"]) == 10  # the data keeps the last lines


def test_a_traceback_still_ends_with_its_exception() -> None:
    assert Outage(1, stderr_tail=tuple(TRACEBACK)).never_served().endswith(
        "Its stderr ended with: ModuleNotFoundError: No module named 'missing_module'")
