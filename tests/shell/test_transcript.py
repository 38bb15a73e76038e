"""The transcript: the four legs of every message, spliced as sent, 0600, appended, and no
work at all on the driver's path when it is off."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest
import structlog
import trio
from structlog.testing import capture_logs

from bridge.core.events import Action, Event, MessageReceived, Send
from bridge.errors import ConfigError
from bridge.shell.session.driver import Driver
from bridge.shell.session.transcript import Transcript, check_transcript
from tests.shell.fakes import EchoCore, FakeChild, Spawner
from tests.shell.harness import bridged


class RewritingCore(EchoCore):
    """Passes messages on with a field added, as a translation changes them."""

    def react(self, event: Event, now: float) -> list[Action]:
        if isinstance(event, MessageReceived):
            if not event.message.startswith(b"{"):
                return []
            message = json.loads(event.message)
            message["via"] = "bridge"
            return [Send("server" if event.side == "client" else "client", message)]
        return super().react(event, now)


class SplicingCore(EchoCore):
    """Passes messages on as a pre-encoded line (Send.line), as mode P's splice does."""

    def react(self, event: Event, now: float) -> list[Action]:
        if isinstance(event, MessageReceived):
            line = event.message.replace(b'"id":1', b'"id": "one"') + b"\n"
            return [Send("server" if event.side == "client" else "client",
                         json.loads(line), line)]
        return super().react(event, now)


def read(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_bytes().splitlines()]


async def test_a_round_trip_shows_all_four_legs_in_order(tmp_path: Path,
                                                          autojump_clock: Any) -> None:
    path = tmp_path / "t.jsonl"
    spawner = Spawner(lambda nursery: FakeChild(nursery, serving=True))
    async with bridged(RewritingCore(), spawner,
                       transcript=Transcript.open(str(path), session=7)) as h:
        await h.client.send(b'{"id":1, "method":"x"}')  # the spacing shows it is not re-encoded
        assert json.loads(await h.client.line())["via"] == "bridge"
        await h.client.close_writing()
        await h.join()
    records = read(path)
    assert [(r["leg"], r["message"]) for r in records] == [
        ("client>bridge", {"id": 1, "method": "x"}),
        ("bridge>server", {"id": 1, "method": "x", "via": "bridge"}),
        ("server>bridge", {"id": 1, "method": "x", "via": "bridge"}),
        ("bridge>client", {"id": 1, "method": "x", "via": "bridge"}),
    ]
    assert b'"message":{"id":1, "method":"x"}}' in path.read_bytes().splitlines()[0]
    assert all(r["session"] == 7 and isinstance(r["time"], float) for r in records)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


async def test_a_pre_encoded_line_is_written_and_recorded_as_it_is(
        tmp_path: Path, autojump_clock: Any) -> None:
    path = tmp_path / "t.jsonl"
    spawner = Spawner(lambda nursery: FakeChild(nursery, serving=True))
    async with bridged(SplicingCore(), spawner, transcript=Transcript.open(str(path))) as h:
        await h.client.send(b'{"id":1,  "method":"x"}')
        assert await h.client.line() == b'{"id": "one",  "method":"x"}'
        await h.client.close_writing()
        await h.join()
    sent = path.read_bytes().splitlines()[1]
    assert b'"leg":"bridge>server","message":{"id": "one",  "method":"x"}}' in sent


async def test_a_line_that_is_not_json_is_kept_as_a_string(tmp_path: Path,
                                                          autojump_clock: Any) -> None:
    path = tmp_path / "t.jsonl"
    async with bridged(RewritingCore(), transcript=Transcript.open(str(path))) as h:
        await h.client.send(b"not json \xff")
        await trio.sleep(1)
        await h.client.close_writing()
        await h.join()
    (record,) = read(path)
    assert record["leg"] == "client>bridge" and record["message"] == "not json \\xff"
    assert "session" not in record


async def test_an_oversized_line_is_recorded_by_its_size(tmp_path: Path,
                                                         autojump_clock: Any) -> None:
    path = tmp_path / "t.jsonl"
    async with bridged(RewritingCore(), limit=100, transcript=Transcript.open(str(path))) as h:
        await h.client.send(b'{"id":1,"pad":"' + b"x" * 200 + b'"}')
        await trio.sleep(1)
        await h.client.close_writing()
        await h.join()
    assert read(path)[0]["message"] == {"oversized_bytes": 217}


def test_it_appends_and_a_file_it_cannot_open_is_a_config_error(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(b'{"earlier":1}\n')
    transcript = Transcript.open(str(path))
    transcript.record(b"client>bridge", b"{}")
    transcript.close()
    assert path.read_bytes().splitlines()[0] == b'{"earlier":1}'
    assert len(path.read_bytes().splitlines()) == 2
    with pytest.raises(ConfigError, match=r"cannot open transcript .*/absent/t: No such file"):
        check_transcript(str(tmp_path / "absent" / "t"))


def test_nothing_is_written_until_a_batch_ends(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    transcript = Transcript.open(str(path))
    transcript.record(b"client>bridge", b"{}")
    assert path.read_bytes() == b""
    transcript.flush()
    assert len(path.read_bytes().splitlines()) == 1
    transcript.close()


def test_without_a_transcript_the_driver_runs_its_plain_functions(tmp_path: Path) -> None:
    plain = Driver(EchoCore(), None, limit=1, notify=print)
    assert "lines" not in vars(plain) and "_write" not in vars(plain)
    fd = os.open(tmp_path / "t", os.O_WRONLY | os.O_CREAT)
    recorded = Driver(EchoCore(), None, limit=1, notify=print, transcript=Transcript(fd))
    assert vars(recorded)["lines"].__name__ == "_recorded_lines"
    os.close(fd)


def test_a_write_that_fails_is_logged_once_and_the_session_goes_on() -> None:
    with capture_logs() as captured:
        transcript = Transcript.open("/dev/full", log=structlog.get_logger())
        for _ in range(3):
            transcript.record(b"client>bridge", b"{}")
            transcript.flush()
        transcript.close()
    assert transcript.failed == "No space left on device"
    assert [(e["event"], e["reason"]) for e in captured] == [
        ("transcript.failed", "No space left on device")]
