"""bridge/ leaves other packages' modules as they are: nothing in it assigns into `sys.modules`,
adds an import finder or hook (`sys.meta_path`, `sys.path_hooks`), or touches `attr._make` or
the builtin `compile`.

The bridge imports its dependencies as anybody does; a start-up made faster by standing in for
a module, or by patching how another package compiles, breaks when that package changes. The
scan reads the source (ast), so it sees code on every path, run or not.
"""

from __future__ import annotations

import ast
import shutil
import textwrap
from pathlib import Path

import pytest

import bridge

IMPORT_MACHINERY = {"modules", "meta_path", "path_hooks"}
"""The names in sys that import reads: to change them is to change what `import` gives."""
MUTATORS = {"append", "extend", "insert", "update", "setdefault", "pop", "popitem", "clear",
            "remove", "__setitem__", "__delitem__"}


def offences(source: str) -> list[str]:
    """Each place in `source` that changes the import machinery, or touches attrs' code
    generation or the builtin `compile`, as "line: what"."""
    tree = ast.parse(source)
    sys_names = _aliases(tree, "sys") | {"sys"}
    builtins_names = _aliases(tree, "builtins") | {"builtins", "__builtins__"}
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        what = (_machinery_changed(node, sys_names) or _attrs_make(node)
                or _compile_touched(node, builtins_names))
        if what:
            found.append((getattr(node, "lineno", 0), what))
    return [f"{line}: {what}" for line, what in sorted(found)]


def _aliases(tree: ast.AST, module: str) -> set[str]:
    return {alias.asname or alias.name for node in ast.walk(tree) if isinstance(node, ast.Import)
            for alias in node.names if alias.name == module}


def _sys_attribute(node: ast.AST, sys_names: set[str]) -> str | None:
    """"modules" for `sys.modules` (under any name sys is bound to), and so on; else None."""
    if (isinstance(node, ast.Attribute) and node.attr in IMPORT_MACHINERY
            and isinstance(node.value, ast.Name) and node.value.id in sys_names):
        return node.attr
    return None


def _machinery_changed(node: ast.AST, sys_names: set[str]) -> str | None:
    if isinstance(node, ast.ImportFrom) and node.module == "sys":
        taken = IMPORT_MACHINERY & {alias.name for alias in node.names}
        return f"imports sys.{min(taken)} by name" if taken else None
    if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
        targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
        for target in targets:
            held = target.value if isinstance(target, ast.Subscript) else target
            name = _sys_attribute(held, sys_names)
            if name:
                return f"assigns into sys.{name}"
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        name = _sys_attribute(node.func.value, sys_names)
        if name and node.func.attr in MUTATORS:
            return f"sys.{name}.{node.func.attr}()"
    return None


def _attrs_make(node: ast.AST) -> str | None:
    if isinstance(node, ast.Import) and any(a.name.startswith("attr._make") for a in node.names):
        return "imports attr._make"
    if isinstance(node, ast.ImportFrom) and node.module and (
            node.module.startswith("attr._make")
            or (node.module == "attr" and any(a.name == "_make" for a in node.names))):
        return "imports attr._make"
    if isinstance(node, ast.Attribute) and node.attr == "_make" and isinstance(
            node.value, ast.Name) and node.value.id == "attr":
        return "attr._make"
    if isinstance(node, ast.Constant) and node.value == "attr._make":
        return "names attr._make"
    return None


def _compile_touched(node: ast.AST, builtins_names: set[str]) -> str | None:
    if isinstance(node, ast.ImportFrom) and node.module == "builtins":
        return "imports from builtins"
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and (
            node.value.id in builtins_names and node.attr == "compile"):
        return "builtins.compile"
    if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        if any(isinstance(t, ast.Attribute) and t.attr == "compile" for t in targets):
            return "assigns a module's compile"
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and (
            node.func.id == "setattr" and len(node.args) > 1
            and isinstance(node.args[1], ast.Constant) and node.args[1].value == "compile"):
        return "setattr(..., 'compile', ...)"
    return None


def scan(root: Path) -> dict[str, list[str]]:
    """The offences of every module under `root`, by path relative to it."""
    found = {str(path.relative_to(root)): offences(path.read_text())
             for path in sorted(root.rglob("*.py"))}
    return {path: what for path, what in found.items() if what}


BRIDGE = Path(bridge.__file__).parent


def test_nothing_in_bridge_patches_or_stands_in_for_another_package() -> None:
    assert len(list(BRIDGE.rglob("*.py"))) > 50  # the whole package is read
    assert scan(BRIDGE) == {}


PLANTED = {
    'sys.modules["ctypes.util"] = stand_in': "assigns into sys.modules",
    "del sys.modules[name]": "assigns into sys.modules",
    "import sys as s\ns.modules.setdefault('ssl', module)": "sys.modules.setdefault()",
    "sys.meta_path.insert(0, Finder())": "sys.meta_path.insert()",
    "sys.meta_path = [Finder(), *sys.meta_path]": "assigns into sys.meta_path",
    "sys.path_hooks.append(hook)": "sys.path_hooks.append()",
    "from sys import meta_path": "imports sys.meta_path by name",
    'make = sys.modules.get("attr._make")': "names attr._make",
    "import attr._make": "imports attr._make",
    "from attr import _make": "imports attr._make",
    "make.compile = compile": "assigns a module's compile",
    "builtins.compile(source, filename, mode)": "builtins.compile",
    "from builtins import compile": "imports from builtins",
    "setattr(make, 'compile', cached)": "setattr(..., 'compile', ...)",
}


@pytest.mark.parametrize(("planted", "what"), PLANTED.items())
def test_the_scan_finds_a_planted_case(planted: str, what: str) -> None:
    assert [found.split(": ", 1)[1] for found in offences(planted)] == [what]


PLAIN = """\
import re
import sys
if "trio" in sys.modules:  # reading is not changing
    trio = sys.modules["trio"]
pattern = re.compile("x")
code = compile("1", "<x>", "eval")
"""


def test_the_scan_leaves_plain_code_alone() -> None:
    assert offences(PLAIN) == []


def test_the_scan_finds_a_case_planted_in_a_copy_of_bridge(tmp_path: Path) -> None:
    copy = tmp_path / "bridge"
    shutil.copytree(BRIDGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    launch = copy / "launch.py"
    launch.write_text(launch.read_text() + textwrap.dedent("""
        def _stand_in() -> None:
            sys.modules["ssl"] = None
    """))
    lines = len(launch.read_text().splitlines())
    assert scan(copy) == {"launch.py": [f"{lines}: assigns into sys.modules"]}
