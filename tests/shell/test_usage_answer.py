"""A bridge that cannot start answers the client's first request with why, on stdout."""

from __future__ import annotations

import os
import subprocess
import sys

import orjson

from bridge.shell.clients.usage_answer import answer_first_request, refusal

INITIALIZE = {"jsonrpc": "2.0", "id": 7, "method": "initialize", "params": {}}


def test_a_request_gets_the_problem_with_its_id() -> None:
    reply = orjson.loads(refusal(orjson.dumps(INITIALIZE), "unknown option --x", 64) or b"")
    assert reply == {"jsonrpc": "2.0", "id": 7, "error": {
        "code": -32603, "message": "mcp-rosetta: unknown option --x",
        "data": {"source": "mcp-rosetta", "exitStatus": 64}}}


def test_a_notification_or_noise_is_not_answered() -> None:
    assert refusal(b'{"jsonrpc":"2.0","method":"notifications/initialized"}', "x", 64) is None
    assert refusal(b"hello", "x", 64) is None


def test_the_first_request_after_a_notification_is_answered() -> None:
    read_in, write_in = os.pipe()
    read_out, write_out = os.pipe()
    os.write(write_in, b'{"jsonrpc":"2.0","method":"n"}\n' + orjson.dumps(INITIALIZE) + b"\n")
    assert answer_first_request("bad", 64, wait=1.0, stdin=read_in, stdout=write_out)
    assert orjson.loads(os.read(read_out, 4096))["id"] == 7
    for fd in (read_in, write_in, read_out, write_out):
        os.close(fd)


def test_a_silent_pipe_is_waited_on_for_a_bounded_time() -> None:
    read_in, write_in = os.pipe()
    assert not answer_first_request("bad", 64, wait=0.05, stdin=read_in, stdout=1)
    os.close(read_in)
    os.close(write_in)


def test_a_terminal_or_dev_null_is_never_read() -> None:
    with open(os.devnull, "rb") as null:
        assert not answer_first_request("bad", 64, wait=5.0, stdin=null.fileno(), stdout=1)


def test_the_launched_bridge_answers_with_a_bad_flag_and_exits_64() -> None:
    done = subprocess.run([sys.executable, "-m", "bridge", "--bogus", "npx", "-y", "x"],
                          input=orjson.dumps(INITIALIZE) + b"\n", capture_output=True,
                          timeout=30)
    assert done.returncode == 64
    assert b"unknown option --bogus" in done.stderr
    reply = orjson.loads(done.stdout)
    assert reply["id"] == 7 and "unknown option --bogus" in reply["error"]["message"]
