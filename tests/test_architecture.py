"""The whole package's shape, read from its source: one meaning per class name, small modules,
the protocol's methods named in the pure layers rather than in the shell, and layers that
only import downward:

    cli, launch, demo        the commands, and the demo beside them
    config, server_options   the configuration file and the flags, read for the commands
    shell                    I/O: sessions, their sides, the services, fd and HTTP bytes
    streamable               the Streamable HTTP rules, pure
    core                     the bridge's protocol rules, pure

Each rule is a function over the sources, with a planted case showing it finds a break.
"""

from __future__ import annotations

import ast
import pathlib
import re
from collections import defaultdict

import bridge

ROOT = pathlib.Path(bridge.__file__).parent
MAX_LINES = 500
MAX_SHELL_METHODS = 3
METHOD = re.compile(
    r"initialize|ping|tools/[a-z]+|resources/[a-z/]+|prompts/[a-z]+|notifications/[a-z_/]+"
    r"|server/discover|subscriptions/listen|logging/setLevel|sampling/createMessage"
    r"|elicitation/create|roots/list|completion/complete")
"""An MCP method's name, as a whole string literal."""

COMMANDS = ("bridge.cli", "bridge.launch", "bridge.demo", "bridge.config",
            "bridge.server_options")
"""The layer above the shell: the commands, and the file and flags they read into `Settings`
(which the shell's entry points are handed, never read themselves)."""

Sources = dict[str, str]
"""Module text by its path under bridge/ ("shell/http/router.py")."""


def _sources() -> Sources:
    return {path.relative_to(ROOT).as_posix(): path.read_text() for path in ROOT.rglob("*.py")}


# One meaning per class name ----------------------------------------------------------------


def classes_defined_twice(sources: Sources) -> dict[str, list[str]]:
    """Each class name defined more than once anywhere in the package (nested classes too),
    with where."""
    where: dict[str, list[str]] = defaultdict(list)
    for path, text in sorted(sources.items()):
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.ClassDef):
                where[node.name].append(path)
    return {name: paths for name, paths in where.items() if len(paths) > 1}


def test_no_class_name_is_defined_twice_in_the_bridge() -> None:
    assert classes_defined_twice(_sources()) == {}


def test_the_class_check_finds_a_name_defined_twice() -> None:
    planted = {"shell/a.py": "class Router:\n    pass\n",
               "core/b.py": "def f():\n    class Router: ...\n",
               "core/c.py": "class Other: ...\n"}
    assert classes_defined_twice(planted) == {"Router": ["core/b.py", "shell/a.py"]}


# Small modules -----------------------------------------------------------------------------


def long_modules(sources: Sources, limit: int = MAX_LINES) -> dict[str, int]:
    """Each module over `limit` lines, with its length."""
    lengths = {path: len(text.splitlines()) for path, text in sources.items()}
    return {path: lines for path, lines in lengths.items() if lines > limit}


def test_no_module_of_the_bridge_is_over_500_lines() -> None:
    assert long_modules(_sources()) == {}


def test_the_length_check_finds_a_long_module() -> None:
    planted = {"shell/long.py": "x = 1\n" * 501, "shell/short.py": "x = 1\n" * 500}
    assert long_modules(planted) == {"shell/long.py": 501}


# The protocol's methods in the pure layers -------------------------------------------------


def method_literals(sources: Sources, under: str = "shell/") -> list[str]:
    """Each string literal under `under` that is an MCP method's name, as path:line:name.
    The shell acts on what the pure layers decide by method; it does not decide itself."""
    found = []
    for path, text in sorted(sources.items()):
        if path.startswith(under):
            literals = sorted((node.lineno, node.col_offset, node.value)
                              for node in ast.walk(ast.parse(text))
                              if isinstance(node, ast.Constant) and isinstance(node.value, str)
                              and METHOD.fullmatch(node.value))
            found += [f"{path}:{line}:{name}" for line, _, name in literals]
    return found


def test_the_shell_names_at_most_three_mcp_methods() -> None:
    assert len(method_literals(_sources())) <= MAX_SHELL_METHODS


def test_the_method_check_finds_a_method_named_in_the_shell() -> None:
    planted = {
        "shell/up.py": ('"""Routes tools/list."""\n'
                        'if out.method == "tools/list" or m in ("ping", "pings"):\n'
                        '    send(f"{kind}/list", "notifications/cancelled")\n'),
        "streamable/rules.py": 'LISTEN = "subscriptions/listen"\n',
    }
    assert method_literals(planted) == ["shell/up.py:2:tools/list", "shell/up.py:2:ping",
                                        "shell/up.py:3:notifications/cancelled"]


# The bridge's own HTTP refusals worded in one module per side --------------------------------

ANSWERING = {"Reply", "HttpError", "Response", "respond", "refuse", "start_stream"}
"""What gives an HTTP answer its status: the front's Reply and HttpError, h11's Response, a
connection's respond, refuse and start_stream."""
WORDED_IN = ("streamable/replies.py", "oauth/authorize.py")
"""Where the bridge's own refusals are worded: the front's answers, and the sign-in's loopback
page (the only HTTP the bridge answers on the upstream's side)."""


def _error_statuses(node: ast.AST) -> list[int]:
    return [found.value for found in ast.walk(node) if isinstance(found, ast.Constant)
            and type(found.value) is int and 400 <= found.value <= 599]


def _sets_status(node: ast.Assign) -> bool:
    """Whether the assignment sets a `.status` (alone or in a tuple)."""
    targets = [item for target in node.targets
               for item in (target.elts if isinstance(target, ast.Tuple) else [target])]
    return any(isinstance(target, ast.Attribute) and target.attr == "status"
               for target in targets)


REFUSING_FOLDERS = ("shell/http/", "shell/servers/remote/")


def spelled_refusals(sources: Sources, under: tuple[str, ...] = REFUSING_FOLDERS) -> list[str]:
    """Each error status (4xx, 5xx) spelled under `under` as an answer's status (the first
    argument or the status keyword of an answering call, or assigned to a `.status`), as
    path:line:status. Reading a status an upstream sent (`status == 404`) is no refusal."""
    found = []
    for path, text in sorted(sources.items()):
        if not path.startswith(under):
            continue
        for node in ast.walk(ast.parse(text)):
            spelled: list[ast.AST] = []
            if isinstance(node, ast.Call):
                name = node.func.attr if isinstance(node.func, ast.Attribute) else \
                    getattr(node.func, "id", "")
                if name in ANSWERING:
                    spelled += node.args[:1]
                    spelled += [kw.value for kw in node.keywords
                                if kw.arg in ("status", "status_code")]
            elif isinstance(node, ast.Assign) and _sets_status(node):
                spelled.append(node.value)
            found += [f"{path}:{node.lineno}:{status}"
                      for part in spelled for status in _error_statuses(part)]
    return sorted(found)


def test_the_shell_spells_no_refusal_of_its_own() -> None:
    sources = _sources()
    assert all(path in sources for path in WORDED_IN)
    assert spelled_refusals(sources) == []


def test_the_refusal_check_finds_a_status_spelled_in_the_shell() -> None:
    planted = {
        "shell/http/a.py": ("raise HttpError(413, 'body over')\n"
                            "return Reply(405, b'', reason='GET only')\n"
                            "outcome.status, outcome.reason = 503, 'stopping'\n"
                            "if response.status == 404: log.info('x', status=404)\n"),
        "shell/servers/remote/b.py": ("await conn.respond(200, b'')\n"
                              "h11.Response(status_code=200 if found else 404)\n"),
        "streamable/replies.py": "def gone() -> Reply:\n    return Reply(410, b'')\n",
    }
    assert spelled_refusals(planted) == ["shell/http/a.py:1:413", "shell/http/a.py:2:405",
                                         "shell/http/a.py:3:503", "shell/servers/remote/b.py:2:404"]


# Layers import only downward ---------------------------------------------------------------


def _package_modules() -> set[str]:
    """Every module and package of the bridge, by its dotted name."""
    modules = set()
    for path in ROOT.rglob("*.py"):
        parts = path.relative_to(ROOT.parent).with_suffix("").parts
        modules.add(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return modules


def _imports(text: str, modules: set[str]) -> list[tuple[int, str]]:
    """Every module `text` imports (at the top, in a function, or under TYPE_CHECKING), with
    its line, in order; `from a import b` imports `a`, and `a.b` too when that is one of
    `modules`."""
    found = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.lineno, node.module))
            found += [(node.lineno, name) for alias in node.names
                      if (name := f"{node.module}.{alias.name}") in modules]
    return sorted(found)


def _within(module: str, *packages: str) -> bool:
    return any(module == package or module.startswith(package + ".") for package in packages)


def _layer_allows(path: str, module: str) -> bool:
    """Whether the module at `path` may import `module`, a module of the bridge. The package
    itself (its version) is beneath every layer: importing any of them runs it first."""
    if module == "bridge":
        return True
    if path.startswith("core/"):
        return _within(module, "bridge.core")
    if path.startswith("streamable/"):
        return _within(module, "bridge.core", "bridge.streamable")
    if path.startswith("shell/"):
        return not _within(module, *COMMANDS)
    return True


def upward_imports(sources: Sources) -> list[str]:
    """Each import that runs against the layers, as path:line:module. The core and the
    Streamable HTTP layer never import the shell (nor anything above them), and the shell
    never imports the commands, nor the reading of their file and flags."""
    modules = _package_modules()
    found = []
    for path, text in sorted(sources.items()):
        found += [f"{path}:{line}:{module}" for line, module in _imports(text, modules)
                  if _within(module, "bridge") and not _layer_allows(path, module)]
    return found


def test_the_layers_only_import_downward() -> None:
    sources = _sources()
    assert sum(len(_imports(text, _package_modules())) for text in sources.values()) > 500
    assert upward_imports(sources) == []


def test_the_layer_check_finds_each_arrow_running_up() -> None:
    planted = {
        "core/a.py": ("import bridge.config\nfrom bridge.core import codec\n"
                      "from bridge import __version__\n"),
        "core/b.py": "def f():\n    from bridge.shell.logs import Logger\n",
        "streamable/c.py": ("from bridge.core.codec import encode\n"
                            "from bridge.streamable import sse\n"
                            "from typing import TYPE_CHECKING\n"
                            "if TYPE_CHECKING:\n    from bridge.shell.session import driver\n"),
        "shell/d.py": "from bridge import cli\nfrom bridge.config import Settings\n",
        "shell/e.py": "import bridge.launch\nfrom bridge.demo.peer import PipedPeer\n",
        "shell/f.py": ("def f():\n    from bridge.server_options import add_server_options\n"
                       "import bridge.config as config\n"),
        "config.py": "from bridge.shell.settings import Settings\n",
        "cli.py": "from bridge.shell.services import stdio_main\n",
    }
    assert upward_imports(planted) == [
        "core/a.py:1:bridge.config",
        "core/b.py:2:bridge.shell.logs",
        "shell/d.py:1:bridge.cli", "shell/d.py:2:bridge.config",
        "shell/e.py:1:bridge.launch",
        "shell/e.py:2:bridge.demo.peer",
        "shell/f.py:2:bridge.server_options", "shell/f.py:3:bridge.config",
        "streamable/c.py:5:bridge.shell.session",
        "streamable/c.py:5:bridge.shell.session.driver",
    ]


def printing_modules(sources: Sources) -> list[str]:
    """The modules that call `print`: stdout is the protocol's wire, every word of the
    bridge's own goes to the logger (stderr)."""
    return sorted(path for path, text in sources.items()
                  if any(isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                         and node.func.id == "print" for node in ast.walk(ast.parse(text))))


def test_no_module_of_the_bridge_prints() -> None:
    assert printing_modules(_sources()) == []


def test_the_print_check_finds_a_print() -> None:
    planted = {"shell/a.py": 'print("signed in")\n', "shell/b.py": '"""print() is not here"""\n'}
    assert printing_modules(planted) == ["shell/a.py"]
