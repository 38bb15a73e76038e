"""The HTTP benchmark runs: `tests/benchmarks/bench_http.py` with a handful of calls, every
front started for real (the bridge's front, supergateway 4, the h11 floor) and every answer
checked by the load client; and the client's framing and checks refuse what is wrong.

Must not judge the figures (a loaded machine moves them): only that each front answered every
call rightly, at every window, and that the report names every target.
"""

from __future__ import annotations

import sys
from pathlib import Path

import orjson
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import bench_http
import httpload

RESULT = {"content": [{"type": "text", "text": httpload.ECHO_TEXT}], "resultType": "complete"}


@pytest.mark.parametrize("name", list(bench_http.fronts()))
def test_every_front_answers_every_call_at_every_window(name: str) -> None:
    figures = bench_http.measure(bench_http.fronts()[name], bench_http.SMOKE)
    assert len(figures.latencies) == bench_http.SMOKE.sequential
    for window in bench_http.WINDOWS:
        assert len(figures.loaded[window]) == bench_http.SMOKE.concurrent
        assert figures.tput[window] > 0
    assert all(0 < latency < httpload.WAIT for latency in figures.latencies)
    # The tree's resident set: at least the front's interpreter and a server's (16 MiB each).
    assert figures.rss_kib > 20 * 1024


def test_the_report_names_every_target() -> None:
    runs = bench_http.run_all(1, bench_http.SMOKE, ["front-B", "sg-session", "h11"])
    rows = {name: bench_http.pool(figures) for name, figures in runs.items()}
    table = bench_http.table(rows)
    assert all(f"| {name} |" in table for name in rows)
    results = bench_http.checks(rows)
    assert [c.name for c in results] == ["p50 x sg-session", "calls/s x32 x sg-session",
                                         "RSS x sg-session"]
    line = bench_http.summary(rows, results)
    assert line.startswith("BENCH-HTTP front-B:p50=") and line.endswith(f"/{len(results)}")
    assert "tput32_vs_sg-session=" in line and "p50_vs_h11=" in line


def sse(message: object) -> list[bytes]:
    """A chunked event-stream answer carrying `message`, cut into small reads."""
    event = b"event: message\ndata: " + orjson.dumps(message) + b"\n\n"
    whole = (b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
             b"Transfer-Encoding: chunked\r\n\r\n"
             + b"%x\r\n%s\r\n" % (len(event), event) + b"0\r\n\r\n")
    return [whole[i:i + 7] for i in range(0, len(whole), 7)]


def framed(pieces: list[bytes]) -> httpload.Answer:
    framer = httpload.Framer()
    for piece in pieces[:-1]:
        framer.buffer += piece
        assert framer.next() is None
    framer.buffer += pieces[-1]
    answer = framer.next()
    assert answer is not None and framer.buffer == b""
    return answer


def test_a_chunked_event_stream_is_framed_whole_and_checked() -> None:
    answer = framed(sse({"jsonrpc": "2.0", "id": 7, "result": RESULT}))
    httpload.check(answer, 7, "modern")
    with pytest.raises(httpload.LoadFailure, match="names id 7"):
        httpload.check(answer, 8, "modern")


@pytest.mark.parametrize(("result", "problem"), [
    ({**RESULT, "content": [{"type": "text", "text": "other"}]}, "wrong result"),
    ({"content": RESULT["content"]}, "wrong result"),  # a modern answer without resultType
    ({"isError": True}, "no text result"),
])
def test_a_wrong_answer_fails_the_run(result: object, problem: str) -> None:
    body = orjson.dumps({"jsonrpc": "2.0", "id": 3, "result": result})
    answer = framed([b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                     b"Content-Length: %d\r\n\r\n" % len(body) + body])
    with pytest.raises(httpload.LoadFailure, match=problem):
        httpload.check(answer, 3, "modern")
