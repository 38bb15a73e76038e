"""The core's shape, as DESIGN.md states it: no import cycle, one meaning per name (no slot that
hides a base class's attribute either), and every error the bridge answers with itself built in
one module."""

from __future__ import annotations

import ast
import importlib
import inspect
import pathlib
from collections import Counter

import bridge

ROOT = pathlib.Path(bridge.__file__).parent
CORE = ROOT / "core"


def _module_name(path: pathlib.Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, pathlib.Path]:
    return {_module_name(path): path for path in ROOT.rglob("*.py")}


def _imported(path: pathlib.Path, known: dict[str, pathlib.Path]) -> set[str]:
    """The bridge modules `path` imports anywhere in it: at the top, in a function, or under
    TYPE_CHECKING (a cycle there is still a cycle to a reader)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return {name for name in names if name in known}


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle of `graph`, as the modules around it, or None."""
    done: set[str] = set()
    path: list[str] = []

    def visit(module: str) -> list[str] | None:
        if module in path:
            return [*path[path.index(module):], module]
        if module in done:
            return None
        path.append(module)
        for imported in sorted(graph[module]):
            found = visit(imported)
            if found:
                return found
        path.pop()
        done.add(module)
        return None

    for module in sorted(graph):
        found = visit(module)
        if found:
            return found
    return None


def test_no_module_of_the_bridge_is_part_of_an_import_cycle() -> None:
    known = _modules()
    # A package's __init__ is not an edge to its modules: importing bridge.core.x runs
    # bridge/core/__init__.py, which imports nothing.
    graph = {name: _imported(path, known) - {name} for name, path in known.items()}
    assert _cycle(graph) is None


def test_the_cycle_check_finds_a_cycle() -> None:
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None


def _core_definitions() -> Counter[str]:
    """Every class and module-level constant name defined in bridge/core, counted."""
    names: Counter[str] = Counter()
    for path in CORE.rglob("*.py"):
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.ClassDef):
                names[node.name] += 1
            targets = node.targets if isinstance(node, ast.Assign) else (
                [node.target] if isinstance(node, ast.AnnAssign) else [])
            for target in targets:
                if isinstance(target, ast.Name) and target.id.isupper():
                    names[target.id] += 1
    return names


def test_no_class_or_constant_name_means_two_things_in_the_core() -> None:
    names = _core_definitions()
    assert len(names) > 50
    assert {name for name, count in names.items() if count > 1} == set()


def _shadowing_slots(classes: list[type]) -> list[str]:
    """`Class.name` for each slot that hides what a base class defines under its name (a
    class flag such as Exchange.timed read through an instance meets the slot instead)."""
    found = []
    for cls in classes:
        slots = cls.__dict__.get("__slots__", ())
        for slot in (slots,) if isinstance(slots, str) else slots:
            if any(slot in base.__dict__ and not inspect.ismemberdescriptor(base.__dict__[slot])
                   for base in cls.__mro__[1:]):
                found.append(f"{cls.__name__}.{slot}")
    return found


def _core_classes() -> list[type]:
    classes = []
    for name in sorted(_modules()):
        if name.startswith("bridge.core"):
            module = importlib.import_module(name)
            classes += [cls for cls in vars(module).values()
                        if inspect.isclass(cls) and cls.__module__ == module.__name__]
    return classes


def test_no_slot_of_the_core_hides_a_base_class_attribute() -> None:
    classes = _core_classes()
    assert len(classes) > 100
    assert _shadowing_slots(classes) == []


def test_the_shadow_check_finds_a_slot_hiding_a_class_flag() -> None:
    class Flagged:
        __slots__ = ("kept",)
        timed = True

    class Hiding(Flagged):
        __slots__ = ("own", "timed")

    assert _shadowing_slots([Flagged, Hiding]) == ["Hiding.timed"]


def test_the_bridge_answers_its_own_errors_only_through_errors_module() -> None:
    """Context.fail takes an errors.OwnError; no other module of the core spells an error
    answer out (reply_error) itself."""
    spelled = {}
    for path in CORE.rglob("*.py"):
        calls = [node.lineno for node in ast.walk(ast.parse(path.read_text()))
                 if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                 and node.func.attr == "reply_error"]
        if calls and path.name != "context.py":
            spelled[str(path.relative_to(CORE))] = calls
    assert spelled == {}


def _class_names(paths: list[pathlib.Path]) -> Counter[str]:
    return Counter(node.name for path in paths for node in ast.parse(path.read_text()).body
                   if isinstance(node, ast.ClassDef))


def test_no_class_of_the_streamable_layer_is_named_as_another_in_the_bridge() -> None:
    """The pure Streamable HTTP layer and the shell above it speak of the same things: one
    name, one meaning (`Outgoing` is the front's route entry, `ServerBound` the upstream's)."""
    layer = sorted((ROOT / "streamable").rglob("*.py"))
    others = sorted(path for path in ROOT.rglob("*.py") if path not in layer)
    own = _class_names(layer)
    assert len(own) > 5
    assert {name for name, count in own.items() if count > 1} == set()
    assert set(own) & set(_class_names(others)) == set()
