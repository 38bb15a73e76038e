"""bridge.core.record: a record behaves as the dataclass it replaces, in what the bridge uses."""

from __future__ import annotations

import copy
import dataclasses
import inspect
import pickle
from dataclasses import FrozenInstanceError, field

import orjson
import pytest

from bridge.core import events
from bridge.core.config import CoreConfig
from bridge.core.record import record, replaced
from bridge.shell.settings import ShellConfig, Timing


def twins(frozen: bool) -> tuple[type, type]:
    """The same class body, made by record and by dataclass(slots=True)."""

    def body() -> type:
        class Call:
            side: str
            message: bytes
            line: bytes | None = None
            fields: dict[str, object] = field(default_factory=dict)

            def size(self) -> int:
                return len(self.message)

        return Call

    return (record(frozen=frozen)(body()),
            dataclasses.dataclass(frozen=frozen, slots=True)(body()))


@pytest.mark.parametrize("frozen", [False, True])
def test_a_record_is_made_as_the_dataclass(frozen: bool) -> None:
    made, twin = twins(frozen)
    assert str(inspect.signature(made)) == str(inspect.signature(twin))  # (sentinels differ)
    assert made.__slots__ == twin.__slots__ == ("side", "message", "line", "fields")
    assert made.__match_args__ == twin.__match_args__
    one, other = made("client", b"x", line=b"y"), twin("client", b"x", line=b"y")
    assert repr(one) == repr(other) == (
        "twins.<locals>.body.<locals>.Call(side='client', message=b'x', line=b'y', fields={})")
    assert not hasattr(one, "__dict__")
    assert one.size() == 1  # the class's own methods stay
    assert one == made("client", b"x", b"y") and one != made("client", b"x")
    assert one != other  # another class, as between two dataclasses
    assert one.fields is not made("client", b"x").fields  # a fresh default each time
    with pytest.raises(TypeError):
        made("client")


def test_a_frozen_record_refuses_assignment_and_hashes_by_value() -> None:
    @record(frozen=True)
    class Stop:
        code: int
        why: str = ""

    stop = Stop(3)
    with pytest.raises(FrozenInstanceError, match="cannot assign to field 'code'"):
        stop.code = 4  # type: ignore[misc]
    with pytest.raises(FrozenInstanceError):
        del stop.why  # type: ignore[misc]
    with pytest.raises(FrozenInstanceError):
        stop.other = 1  # type: ignore[attr-defined]
    assert stop.code == 3
    assert hash(stop) == hash(Stop(3, "")) and {stop: 1}[Stop(code=3)] == 1


def test_a_mutable_record_is_unhashable_and_assignable() -> None:
    @record()
    class Stream:
        request: dict[str, object]
        acknowledged: object = None

    stream = Stream({})
    stream.acknowledged = 1
    assert stream.acknowledged == 1
    with pytest.raises(TypeError):
        hash(stream)


def test_what_a_record_does_not_make_is_refused() -> None:
    with pytest.raises(TypeError, match="without a default after one"):
        @record()
        class Late:
            first: int = 0
            second: int

    with pytest.raises(TypeError, match="use a dataclass"):
        @record()
        class Hidden:
            secret: str = field(default="", repr=False)


def test_the_state_types_are_records() -> None:
    send = events.Send("client", {"id": 1})
    assert send == events.Send(side="client", message={"id": 1}, line=None, request=None)
    assert repr(events.Stop(0)) == "Stop(code=0)"
    assert events.ChildStarted() == events.ChildStarted()
    exited = events.ChildExited(1, cause="gone", stderr_tail=("a",))
    assert copy.copy(exited) == pickle.loads(pickle.dumps(exited)) == exited


def test_dataclasses_and_orjson_take_a_record_as_the_dataclass() -> None:
    log = events.Log("info", "bridge.started")
    assert dataclasses.is_dataclass(log)
    assert [(f.name, f.type) for f in dataclasses.fields(events.Log)] == [
        ("level", "str"), ("event", "str"), ("fields", "dict[str, object]")]
    changed = dataclasses.replace(log, event="bridge.stopped")
    assert changed == events.Log("info", "bridge.stopped") and changed.fields is log.fields
    assert dataclasses.asdict(events.ChildExited(1)) == {
        "code": 1, "cause": "", "stderr_tail": (), "went": ""}
    assert orjson.dumps(events.Stop(3)) == b'{"code":3}'


def test_the_config_types_are_records_that_replace_and_fields_still_take() -> None:
    core = CoreConfig()
    assert "request_timeout" in {f.name for f in dataclasses.fields(core)}
    assert dataclasses.replace(core, request_timeout=5.0).request_timeout == 5.0
    shell = ShellConfig(command=("server",))
    assert dataclasses.replace(shell, url="http://x/").command == ("server",)
    assert shell.timing == Timing() and hash(shell) == hash(ShellConfig(command=("server",)))


def test_replaced_copies_a_record_with_changes_and_makes_no_dataclass() -> None:
    @record(frozen=True)
    class Config:
        era: str = "auto"
        remembered: dict[str, object] | None = None
        backoff: tuple[float, float] = (0.5, 30.0)

    given = Config(backoff=(1.0, 2.0))
    changed = replaced(given, remembered={"era": "legacy"})
    assert changed == Config("auto", {"era": "legacy"}, (1.0, 2.0)) and given.remembered is None
    # the fields dataclasses would make are still not made (the lazy descriptor holds)
    assert not isinstance(Config.__dict__["__dataclass_fields__"], dict)
    with pytest.raises(TypeError):
        replaced(given, eras="legacy")
    core = replaced(CoreConfig(), remembered={"era": "legacy"})
    assert core == dataclasses.replace(CoreConfig(), remembered={"era": "legacy"})
