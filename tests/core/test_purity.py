"""The core, the Streamable HTTP layer and the OAuth client's rules stay pure: no I/O, clock,
randomness, trio or structlog (DESIGN.md)."""

from __future__ import annotations

import ast
import pathlib

import pytest

import bridge.core
import bridge.fleet
import bridge.oauth
import bridge.streamable

FORBIDDEN = {"trio", "structlog", "os", "sys", "time", "random", "secrets", "subprocess",
             "socket", "asyncio", "io", "pathlib", "threading", "signal", "logging", "datetime",
             "uuid", "select", "selectors", "shutil", "tempfile"}


def _imports(path: pathlib.Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


PURE = {"core": (pathlib.Path(bridge.core.__file__).parent, FORBIDDEN),
        # Sans-I/O as h11 is: no HTTP library either (the shell's connections and client).
        "streamable": (pathlib.Path(bridge.streamable.__file__).parent,
                       FORBIDDEN | {"h11", "httpx2", "hmac", "urllib"}),
        # The caller draws the verifier and the state, and tells the time.
        "oauth": (pathlib.Path(bridge.oauth.__file__).parent,
                  FORBIDDEN | {"h11", "httpx2", "hmac", "webbrowser", "fcntl"})}


@pytest.mark.parametrize("package", sorted(PURE))
def test_a_pure_package_imports_nothing_impure(package: str) -> None:
    root, forbidden = PURE[package]
    modules = sorted(root.rglob("*.py"))
    assert len(modules) > 5
    offenders = {str(p.relative_to(root)): _imports(p) & forbidden for p in modules
                 if _imports(p) & forbidden}
    assert offenders == {}


def _bridge_imports(path: pathlib.Path) -> set[str]:
    """The bridge packages `path` imports from (`bridge.core`, `bridge.shell`, ...)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("bridge."):
            names.add(".".join(node.module.split(".")[:2]))
        elif isinstance(node, ast.Import):
            names.update(".".join(alias.name.split(".")[:2]) for alias in node.names
                         if alias.name.startswith("bridge."))
    return names


def test_the_oauth_rules_import_nothing_of_the_bridge_but_themselves() -> None:
    root = PURE["oauth"][0]
    offenders = {str(p.relative_to(root)): sorted(_bridge_imports(p) - {"bridge.oauth"})
                 for p in sorted(root.rglob("*.py"))}
    assert {name: found for name, found in offenders.items() if found} == {}


FLEET = (pathlib.Path(bridge.fleet.__file__).parent, FORBIDDEN | {"h11", "httpx2"})
"""The fleet's rules sign with the key the shell reads, at the time it gives: `hmac` only."""


def test_the_fleet_rules_import_nothing_impure_nor_the_bridge() -> None:
    root, forbidden = FLEET
    modules = sorted(root.rglob("*.py"))
    assert len(modules) >= 4
    assert {str(p.relative_to(root)): _imports(p) & forbidden for p in modules
            if _imports(p) & forbidden} == {}
    assert {str(p.relative_to(root)): _bridge_imports(p) - {"bridge.fleet"} for p in modules
            if _bridge_imports(p) - {"bridge.fleet"}} == {}
    for path in modules:
        calls = {n.func.id for n in ast.walk(ast.parse(path.read_text()))
                 if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
        assert not calls & {"open", "print", "input", "exec", "eval"}, path.name


def test_the_streamable_layer_imports_only_the_core_and_itself() -> None:
    """It lies beneath the shell's front and upstream: an arrow back up would be a cycle."""
    root = PURE["streamable"][0]
    offenders = {str(p.relative_to(root)): sorted(_bridge_imports(p) - {"bridge.core",
                                                                       "bridge.streamable"})
                 for p in sorted(root.rglob("*.py"))}
    assert {name: found for name, found in offenders.items() if found} == {}


GENERATES_CODE = {"record.py": {"exec"}}
"""What one module may call beside: record.py execs the `__init__` it compiles for each state
type, as dataclasses does (its source is made of the class's field names, nothing else)."""


@pytest.mark.parametrize("package", sorted(PURE))
def test_a_pure_package_calls_no_builtin_io(package: str) -> None:
    for path in PURE[package][0].rglob("*.py"):
        calls = {n.func.id for n in ast.walk(ast.parse(path.read_text()))
                 if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
        forbidden = {"open", "print", "input", "exec", "eval"} - GENERATES_CODE.get(path.name,
                                                                                    set())
        assert not calls & forbidden, path.name
