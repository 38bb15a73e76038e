"""Line framing: any chunking gives the same lines; CR and blank lines; long lines stay linear."""

from __future__ import annotations

import time
import tracemalloc

from hypothesis import given
from hypothesis import strategies as st

from bridge.shell.fdio.lines import HEAD_SIZE, Line, LineSplitter, Oversized


def split(chunks: list[bytes]) -> list[bytes]:
    splitter = LineSplitter()
    lines = [line for chunk in chunks for line in splitter.feed(chunk)]
    return lines + splitter.finish()


def test_lines_lose_their_newline_and_carriage_return() -> None:
    assert split([b'{"a":1}\r\n{"b":2}\n']) == [b'{"a":1}', b'{"b":2}']


def test_blank_and_whitespace_lines_are_skipped() -> None:
    assert split([b"\n\r\n \t \n{}\n\n"]) == [b"{}"]


def test_a_final_line_without_newline_is_kept() -> None:
    assert split([b"{}\n", b'{"last":true}']) == [b"{}", b'{"last":true}']


def test_a_line_split_across_chunks_is_joined() -> None:
    assert split([b'{"a"', b":", b"1}\r", b"\n{", b"}\n"]) == [b'{"a":1}', b"{}"]


@given(st.lists(st.binary(min_size=1, max_size=30).filter(lambda b: b"\n" not in b and
                                                           not b.isspace()), max_size=20),
       st.lists(st.integers(min_value=1, max_value=17), min_size=1))
def test_any_chunking_gives_the_same_lines(lines: list[bytes], cuts: list[int]) -> None:
    lines = [line.rstrip(b"\r") for line in lines if line.rstrip(b"\r")]
    data = b"".join(line + b"\n" for line in lines)
    chunks, at = [], 0
    for i in range(len(data)):
        size = cuts[i % len(cuts)]
        chunks.append(data[at:at + size])
        at += size
        if at >= len(data):
            break
    assert split(chunks) == lines


def test_a_64_mib_line_in_small_chunks_is_linear() -> None:
    chunk = b"x" * 4096
    splitter = LineSplitter()
    start = time.perf_counter()
    for _ in range(16 * 1024):  # 64 MiB in 16384 pieces: quadratic joining would take minutes
        assert splitter.feed(chunk) == []
    (line,) = splitter.feed(b"\n")
    elapsed = time.perf_counter() - start
    assert len(line) == 64 * 1024 * 1024
    assert elapsed < 5


def split_with(limit: int, chunks: list[bytes]) -> list[Line]:
    splitter = LineSplitter(limit)
    lines = [line for chunk in chunks for line in splitter.feed(chunk)]
    return lines + splitter.finish()


def shape(lines: list[Line]) -> list[object]:
    return [(line.head, line.size, line.tail) if isinstance(line, Oversized) else line
            for line in lines]


def ends(line: bytes) -> tuple[bytes, int, bytes]:
    return line[:HEAD_SIZE], len(line), line[-HEAD_SIZE:]


def test_a_line_over_the_limit_keeps_only_its_two_ends_and_its_size() -> None:
    long = b'{"id":1,"x":"' + b"y" * 100 + b'"}'
    assert shape(split_with(50, [long + b"\n{}\n"])) == [ends(long), b"{}"]
    huge = b"z" * HEAD_SIZE + b"y" * HEAD_SIZE + b"x" * HEAD_SIZE
    assert shape(split_with(50, [huge + b"\n"])) == [ends(huge)]
    assert shape(split_with(50, [huge[:5000], huge[5000:], b"\n"])) == [ends(huge)]


@given(st.lists(st.integers(min_value=1, max_value=3 * HEAD_SIZE), max_size=8),
       st.lists(st.integers(min_value=40, max_value=5000), min_size=1))
def test_any_chunking_finds_the_same_long_and_short_lines(
        sizes: list[int], cuts: list[int]) -> None:
    limit = 60
    # Every line different all along its length, so a head or tail taken from the wrong
    # place would show.
    lines = [bytes(97 + (n + i) % 26 for i in range(size)) for n, size in enumerate(sizes)]
    data = b"".join(line + b"\n" for line in lines)
    chunks, at, i = [], 0, 0
    while at < len(data):
        chunks.append(data[at:at + cuts[i % len(cuts)]])
        at += cuts[i % len(cuts)]
        i += 1
    expected = [ends(line) if len(line) > limit else line for line in lines]
    assert shape(split_with(limit, chunks)) == expected


def test_a_gibibyte_without_newline_never_holds_more_than_the_limit() -> None:
    limit = 1024 * 1024
    splitter = LineSplitter(limit)
    chunk = b"x" * 65536
    tracemalloc.start()
    try:
        for _ in range(1024):  # 64 MiB, no newline in it
            assert splitter.feed(chunk) == []
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 2 * limit
    (line,) = splitter.feed(b"tail\n")
    assert isinstance(line, Oversized) and line.size == 1024 * 65536 + 4
