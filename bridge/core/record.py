"""`@record()` and `@record(frozen=True)`: the project's state types, as `dataclass(slots=True)`
and `dataclass(frozen=True, slots=True)` make them, for a fraction of the cost of making them.

Must not grow into a second `dataclasses`: it takes what the bridge's state types use (fields
with or without a default, `dataclasses.field(default=...)` or `(default_factory=...)`, methods
of the class's own, no base with fields), refuses the rest with a TypeError, and makes what
they rely on: `__init__` with the same positional-or-keyword signature, `__repr__` as
dataclasses writes it, `__eq__` between instances of the same class, `__slots__`,
`__match_args__`; frozen, a `__setattr__` and `__delattr__` raising
dataclasses.FrozenInstanceError, a `__hash__` of the fields, and `__getstate__` and
`__setstate__` for copy and pickle; otherwise `__hash__ = None`, as dataclasses' `eq=True`
gives. `__dataclass_fields__` is made at its first lookup, by dataclasses itself, so
`dataclasses.fields`, `replace`, `asdict`, `is_dataclass` and orjson take a record as the
dataclass it stands for (the daemon's reload compares the config types field by field).

Why: in Python 3.11 `dataclasses` generates every method's source and compiles and execs each
on its own, about six per class: 0.5 ms a slotted class, 1 ms a frozen one on this project's
machine (4M instructions), and the stdio bridge made about 28 before its first answer. Here
only `__init__` is compiled (its signature and its stores are the class's own, and it runs for
every message); the other methods are closures over the class's field names, made without a
compile. A frozen `__init__` stores through the slots' own descriptors, not
`object.__setattr__` (0.7-0.8x its instructions).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from operator import attrgetter
from typing import Any, TypeVar, dataclass_transform

T = TypeVar("T")


class _Factory:
    def __repr__(self) -> str:
        return "<factory>"  # as dataclasses shows it in a signature


_FACTORY = _Factory()
"""The default of a field with a default factory: `__init__` calls the factory when it is so."""


@dataclass_transform(field_specifiers=(dataclasses.field,))
def record(*, frozen: bool = False) -> Callable[[type[T]], type[T]]:
    """The class decorator: the class made again with its slots and its methods."""

    def make(cls: type[T]) -> type[T]:
        return _made(cls, frozen)

    return make


def _made(cls: type[T], frozen: bool) -> type[T]:
    names, defaults = _fields(cls)
    namespace = {key: value for key, value in cls.__dict__.items()
                 if key not in names and key not in ("__dict__", "__weakref__")}
    namespace["__slots__"] = names
    namespace["__match_args__"] = names
    key = _key(names)
    namespace["__repr__"] = _repr(names)
    namespace["__eq__"] = _eq(key)
    if frozen:
        namespace["__setattr__"], namespace["__delattr__"] = _refusals()
        namespace["__hash__"] = lambda self: hash(key(self))
        namespace["__getstate__"], namespace["__setstate__"] = _state(names, key)
    else:
        namespace["__hash__"] = None
    namespace["__dataclass_fields__"] = _DataclassFields(frozen)
    metaclass: Any = type(cls)
    made: type[T] = metaclass(cls.__name__, cls.__bases__, namespace)
    made.__qualname__ = cls.__qualname__
    init = _init(made, names, defaults, frozen)
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    own = cls.__dict__.get("__annotations__", {})  # noqa: RUF063 (see _fields)
    init.__annotations__ = {**{name: own[name] for name in names}, "return": None}
    type.__setattr__(made, "__init__", init)  # a frozen class's own __setattr__ refuses
    return made


def replaced(instance: T, **changes: Any) -> T:
    """A copy of the record `instance` with `changes`, as `dataclasses.replace` makes it, but
    without making the record's `__dataclass_fields__` (a dataclass of its own, about 2 ms for
    the config types): the stdio bridge puts the era memory into its CoreConfig before its
    first answer. An unknown name is a TypeError, as `__init__` gives it."""
    names: tuple[str, ...] = type(instance).__dict__["__slots__"]
    return type(instance)(**{**{name: getattr(instance, name) for name in names}, **changes})


class _DataclassFields:
    """A record's `__dataclass_fields__`, made at its first lookup: the fields of a dataclass
    of the same annotations and defaults (made by dataclasses, then kept on the record), so
    dataclasses' `fields`, `replace`, `asdict` and `is_dataclass` (and orjson) treat the
    record as that dataclass, and a record nobody asks about pays nothing for it."""

    def __init__(self, frozen: bool) -> None:
        self._frozen = frozen

    def __get__(self, instance: object, owner: type) -> dict[str, dataclasses.Field[Any]]:
        names, defaults = _fields_of_record(owner)
        own = owner.__dict__["__init__"].__annotations__
        body: dict[str, Any] = {"__annotations__": {name: own[name] for name in names}}
        for name, default in defaults.items():
            body[name] = (dataclasses.field(default_factory=default.default_factory)
                          if isinstance(default, dataclasses.Field) else default)
        twin: Any = dataclasses.dataclass(frozen=self._frozen)(type(owner.__name__, (), body))
        fields: dict[str, dataclasses.Field[Any]] = twin.__dataclass_fields__
        type.__setattr__(owner, "__dataclass_fields__", fields)  # made once
        return fields


def _fields_of_record(made: type) -> tuple[tuple[str, ...], dict[str, Any]]:
    """A made record's fields and defaults, from its `__init__`'s signature."""
    init = made.__dict__["__init__"]
    names: tuple[str, ...] = made.__dict__["__slots__"]
    values = init.__defaults__ or ()
    defaulted = names[len(names) - len(values):]
    defaults: dict[str, Any] = {}
    for name, value in zip(defaulted, values, strict=True):
        factory = init.__globals__.get(f"_factory_{name}")
        defaults[name] = (dataclasses.field(default_factory=factory) if value is _FACTORY
                          else value)
    return names, defaults


def _fields(cls: type) -> tuple[tuple[str, ...], dict[str, Any]]:
    """The fields (annotated names of the class's own, in order) and their defaults (a value,
    or a factory marked by a `dataclasses.Field`)."""
    if any(dataclasses.is_dataclass(base) or "__slots__" in base.__dict__
           for base in cls.__mro__[1:-1]):
        raise TypeError(f"{cls.__qualname__}: a record's bases hold no fields")
    names: list[str] = []
    defaults: dict[str, Any] = {}
    own = cls.__dict__.get("__annotations__", {})  # noqa: RUF063 (the class's own, as strings)
    for name, annotation in own.items():
        if "ClassVar" in str(annotation):
            continue
        names.append(name)
        if name in cls.__dict__:
            defaults[name] = _default(cls, name, cls.__dict__[name])
        elif defaults:
            raise TypeError(f"{cls.__qualname__}.{name}: a field without a default after one "
                            "with a default")
    return tuple(names), defaults


def _default(cls: type, name: str, value: Any) -> Any:
    if not isinstance(value, dataclasses.Field):
        return value
    plain = dataclasses.field(default=value.default, default_factory=value.default_factory)
    if any(getattr(value, slot) != getattr(plain, slot)
           for slot in ("init", "repr", "hash", "compare", "metadata", "kw_only")):
        raise TypeError(f"{cls.__qualname__}.{name}: a record's field takes a default or a "
                        "default_factory only (use a dataclass)")
    if value.default_factory is not dataclasses.MISSING:
        return value
    return value.default


def _init(made: type, names: tuple[str, ...], defaults: dict[str, Any],
          frozen: bool) -> Callable[..., None]:
    """`__init__`, compiled: each field a parameter (its default, or _FACTORY for a factory)
    stored in its slot, through the slot's descriptor when the class is frozen."""
    scope: dict[str, Any] = {"_FACTORY": _FACTORY}
    parameters, body = ["self"], []
    for name in names:
        value = name
        if name not in defaults:
            parameters.append(name)
        else:
            default = defaults[name]
            if isinstance(default, dataclasses.Field):
                scope[f"_factory_{name}"] = default.default_factory
                parameters.append(f"{name}=_FACTORY")
                value = f"_factory_{name}() if {name} is _FACTORY else {name}"
            else:
                scope[f"_default_{name}"] = default
                parameters.append(f"{name}=_default_{name}")
        if frozen:
            scope[f"_set_{name}"] = made.__dict__[name].__set__
            body.append(f"    _set_{name}(self, {value})")
        else:
            body.append(f"    self.{name} = {value}")
    source = f"def __init__({', '.join(parameters)}):\n" + ("\n".join(body) or "    pass")
    exec(compile(source, f"<record {made.__qualname__}>", "exec"), scope)
    init: Callable[..., None] = scope["__init__"]
    return init


def _key(names: tuple[str, ...]) -> Callable[[Any], tuple[Any, ...]]:
    """The tuple of an instance's fields (what __eq__ and __hash__ compare)."""
    if not names:
        return lambda self: ()
    if len(names) == 1:
        only = attrgetter(names[0])
        return lambda self: (only(self),)
    key: Callable[[Any], tuple[Any, ...]] = attrgetter(*names)
    return key


def _repr(names: tuple[str, ...]) -> Callable[[Any], str]:
    def __repr__(self: Any) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in names)
        return f"{type(self).__qualname__}({fields})"

    return __repr__


def _eq(key: Callable[[Any], tuple[Any, ...]]) -> Callable[[Any, Any], Any]:
    def __eq__(self: Any, other: Any) -> Any:
        if other.__class__ is self.__class__:
            return key(self) == key(other)
        return NotImplemented

    return __eq__


def _state(names: tuple[str, ...], key: Callable[[Any], tuple[Any, ...]],
           ) -> tuple[Callable[[Any], tuple[Any, ...]], Callable[[Any, tuple[Any, ...]], None]]:
    """What copy and pickle use for a frozen record (their default sets each slot through the
    `__setattr__` that refuses), as dataclasses gives a frozen slotted class."""

    def __getstate__(self: Any) -> tuple[Any, ...]:
        return key(self)

    def __setstate__(self: Any, state: tuple[Any, ...]) -> None:
        for name, value in zip(names, state, strict=True):
            object.__setattr__(self, name, value)

    return __getstate__, __setstate__


def _refusals() -> tuple[Callable[..., None], Callable[..., None]]:
    def __setattr__(self: Any, name: str, value: Any) -> None:
        raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self: Any, name: str) -> None:
        raise dataclasses.FrozenInstanceError(f"cannot delete field {name!r}")

    return __setattr__, __delattr__
