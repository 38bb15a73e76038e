"""The seam between the shell and the core stays small (DESIGN.md, "Tests").

Code outside bridge/core (the trio shell, the CLI and settings, the check, the library) may
import from the core only its public face, plus what one importer needs and says why. A mode's
internals (its exchanges, states, helpers) are the core's own: the shell drives them through
`Bridge.handle` and the actions it returns, never by name.
"""

from __future__ import annotations

import ast
import pathlib

import bridge
import bridge.core

# What any code outside the core may import from it, and why.
FACE = {
    "bridge.core.bridge": "Bridge, the state machine the shell drives (handle, next_deadline)",
    "bridge.core.events": "the events the shell feeds in and the actions it carries out",
    "bridge.core.config": "CoreConfig, the core's settings, built from the user's",
    "bridge.core.codec": "encode/decode: the one way a message becomes a line and back",
    "bridge.core.refusal": "the daemon's answer to a client it cannot serve",
    "bridge.core.eras": "the eras' vocabulary: protocol versions, log levels, error codes",
    "bridge.core.record": "record, how the state types on the start path are made (slotted, "
                          "frozen or not: a dataclass for a fraction of its making)",
    "bridge.core.observe": "Observer and Tally, what a Bridge is given to count the requests "
                           "it answers (metrics, spans), and the error classes it counts",
    "bridge.core.states": "IllegalMove, what a state machine's forbidden move raises, the "
                          "shell's machines (an outlet's life) as the core's",
}

# Beyond the face: what one importer needs, and why. An entry that is no longer used fails
# test_every_declared_import_is_still_used, so the seam only shrinks by itself.
NEEDS = {
    "shell/check.py": {
        "bridge.core.envelope": "builds its list requests with the bridge's envelope",
        "bridge.core.handshake": "reads serverInfo from a DiscoverResult as the bridge does",
        "bridge.core.jsonrpc": "builds its legacy list requests as the bridge does",
        "bridge.core.probe": "sends the bridge's probe and judges its answer the same way, "
                             "so what the check reports is what the bridge will meet",
        "bridge.core.recall": "tells the server it meets from the one remembered as the "
                              "bridge does (the name and version it gives)",
    },
    "shell/servers/stderr.py": {
        "bridge.core.probe": "tells a server's complaint about the probe from its other lines, "
                             "to log the burst as one event",
    },
    "check_client.py": {
        "bridge.core.jsonrpc": "builds the legacy handshake as the bridge does, and answers a "
                               "request the server sends the check with an error",
    },
    "shell/clients/fd_pool.py": {
        "bridge.core.modern_server_legacy_client.placement": "a stdio client's lines go to the "
            "pool only once its first session serves mode B (placement.load_of)",
    },
    "shell/session/pool.py": {
        "bridge.core.modern_server_legacy_client.placement": "a tenant's pool places each "
            "request where mode B's attribution rules say it may go",
    },
    "shell/http/fleet.py": {
        "bridge.core.modern_server_legacy_client.placement": "a fleet node reads which node a "
            "retry's requestState names, and makes the route its tenants' cores seal, as "
            "mode B's placement spells routes",
    },
    "streamable/replies.py": {
        "bridge.core.modern_server_legacy_client.redeem": "a retry whose node is gone is "
            "answered in the words its core answers the retry of a call that ended",
    },
    "streamable/outbound.py": {
        "bridge.core.errors": "a failed exchange with an HTTP server is answered with the "
                              "bridge's own error code (SERVER_ERROR), as the core answers one",
    },
    "protocol.py": {
        "bridge.core.envelope": "the library re-exports the core's pure helpers (its docstring)",
        "bridge.core.handshake": "the library re-exports legacy_result",
        "bridge.core.jsonrpc": "the library re-exports parse_inbound and Inbound",
        "bridge.core.normalize": "the library re-exports normalize_result",
    },
}

ROOT = pathlib.Path(bridge.__file__).parent
CORE = pathlib.Path(bridge.core.__file__).parent


def _outside_core() -> list[pathlib.Path]:
    return sorted(p for p in ROOT.rglob("*.py") if CORE not in p.parents)


def _core_imports(path: pathlib.Path) -> set[str]:
    """The bridge.core modules `path` imports, at any depth in it (a function's own import
    counts: it is a dependency all the same)."""
    # `from bridge.core import x` names the module bridge.core.x; `from bridge.core.x import
    # y` names y, not a module; `from bridge import core` takes the whole core
    return {n for n in _imported(path)
            if (n == "bridge.core" or n.startswith("bridge.core.")) and _is_module(n)}


def _imported(path: pathlib.Path) -> set[str]:
    """Every dotted name `path` imports, relative imports made absolute, and for `from m
    import n` both m and m.n."""
    package = ".".join(path.relative_to(ROOT.parent).with_suffix("").parts[:-1])
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join([*base, module] if module else base)
            names.add(module)
            names.update(f"{module}.{alias.name}" for alias in node.names)
    return names


def _is_module(name: str) -> bool:
    path = CORE.joinpath(*name.split(".")[2:])
    return path.is_dir() or path.with_suffix(".py").is_file()


def test_code_outside_the_core_imports_only_its_face_and_what_it_declares() -> None:
    files = _outside_core()
    assert len(files) > 20
    offenders = []
    for path in files:
        importer = str(path.relative_to(ROOT))
        allowed = FACE.keys() | NEEDS.get(importer, {}).keys()
        offenders += [f"bridge/{importer} imports {module}: not in the core's public face "
                      f"(tests/core/test_seam.py FACE), nor declared with why for it (NEEDS)"
                      for module in sorted(_core_imports(path) - allowed)]
    assert not offenders, "\n".join(offenders)


def test_every_declared_import_is_still_used() -> None:
    stale = [f"bridge/{importer} no longer imports {module}: drop it from NEEDS"
             for importer, modules in NEEDS.items()
             for module in sorted(modules.keys() - _core_imports(ROOT / importer))]
    assert not stale, "\n".join(stale)


def test_the_face_and_the_declared_modules_exist() -> None:
    for module in FACE.keys() | {m for needs in NEEDS.values() for m in needs}:
        assert _is_module(module), module


def _outside_module(name: str) -> bool:
    """Whether `name` is a module of the bridge outside the core (the package's own
    __init__, which holds only __version__, is not one)."""
    parts = name.split(".")
    if parts[0] != "bridge" or len(parts) < 2 or parts[1] == "core":
        return False
    path = ROOT.joinpath(*parts[1:])
    return path.is_dir() or path.with_suffix(".py").is_file()


def test_the_core_imports_nothing_of_the_bridge_outside_it() -> None:
    offenders = {str(p.relative_to(ROOT)): sorted(outside) for p in sorted(CORE.rglob("*.py"))
                 if (outside := {n for n in _imported(p) if _outside_module(n)})}
    assert offenders == {}, "the core must not reach the shell, the settings or the CLI"
