"""The core stays pure: no I/O, clock, randomness, trio or structlog (DESIGN.md)."""

from __future__ import annotations

import ast
import pathlib

import bridge.core

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


def test_core_imports_nothing_impure() -> None:
    core = pathlib.Path(bridge.core.__file__).parent
    modules = sorted(core.rglob("*.py"))
    assert len(modules) > 10
    offenders = {str(p.relative_to(core)): _imports(p) & FORBIDDEN for p in modules
                 if _imports(p) & FORBIDDEN}
    assert offenders == {}


GENERATES_CODE = {"record.py": {"exec"}}
"""What one module may call beside: record.py execs the `__init__` it compiles for each state
type, as dataclasses does (its source is made of the class's field names, nothing else)."""


def test_core_calls_no_builtin_io() -> None:
    core = pathlib.Path(bridge.core.__file__).parent
    for path in core.rglob("*.py"):
        calls = {n.func.id for n in ast.walk(ast.parse(path.read_text()))
                 if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
        forbidden = {"open", "print", "input", "exec", "eval"} - GENERATES_CODE.get(path.name,
                                                                                    set())
        assert not calls & forbidden, path.name
