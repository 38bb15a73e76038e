"""bridge.codecache: start-up's generated code compiled once, and the same code every time.

The unit tests drive one CodeCache over a file in a temporary directory with sources written
here; the last ones start real interpreters that build trio's and attrs' classes through the
cache, with and without it, under different hash seeds.
"""

from __future__ import annotations
import __future__

import json
import marshal
import os
import subprocess
import sys
import textwrap
from importlib.util import MAGIC_NUMBER
from pathlib import Path
from types import CodeType

import pytest

from bridge import codecache
from bridge.codecache import CodeCache

SOURCE = "def double(x):\n    return 2 * x\n"


def salted(salt: int) -> str:
    """A `__hash__` as attrs writes one: its class's salt first in the tuple it hashes."""
    return ("def __hash__(self):\n"
            "        return hash((\n"
            f"                {salt},\n"
            "                self.value,\n"
            "            ))\n")


def fresh(source: str, filename: str) -> CodeType:
    """What compiling afresh gives, with no __future__ feature (this module's are its own)."""
    return compile(source, filename, "exec", dont_inherit=True)


def run(code: CodeType) -> dict[str, object]:
    scope: dict[str, object] = {}
    exec(code, scope)
    return scope


def test_a_source_is_compiled_once_and_read_back_from_the_file(tmp_path: Path) -> None:
    path = str(tmp_path / "cache.marshal")
    first = CodeCache(path)
    code = first.compile(SOURCE, "<double>")
    assert (first.hits, first.misses) == (0, 1)
    first.save()
    again = CodeCache(path)
    cached = again.compile(SOURCE, "<double>")
    assert (again.hits, again.misses) == (1, 0)
    assert cached == code == fresh(SOURCE, "<double>")
    assert run(cached)["double"](21) == 42  # type: ignore[operator]


def test_the_filename_and_the_mode_are_part_of_the_key(tmp_path: Path) -> None:
    cache = CodeCache(str(tmp_path / "cache.marshal"))
    cache.compile(SOURCE, "<one>")
    two = cache.compile(SOURCE, "<two>")
    cache.compile("1 + 1", "<expr>", "eval")
    assert cache.misses == 3
    assert two.co_filename == "<two>"


def test_a_hit_gets_this_processs_salt_back(tmp_path: Path) -> None:
    """attrs' salt follows PYTHONHASHSEED: the key leaves it out, the code gets the new one."""
    path = str(tmp_path / "cache.marshal")
    cache = CodeCache(path)
    cache.compile(salted(-1234567890123), "<hash>")
    cache.save()
    later = CodeCache(path)
    code = later.compile(salted(987654321), "<hash>")
    assert (later.hits, later.misses) == (1, 0)

    class Valued:
        value = "v"

    __hash__ = run(code)["__hash__"]
    assert __hash__(Valued()) == hash((987654321, "v"))  # type: ignore[operator]
    compiled = run(fresh(salted(987654321), "<hash>"))["__hash__"]
    assert compiled(Valued()) == __hash__(Valued())  # type: ignore[operator]


def test_the_future_flags_are_the_callers_not_the_caches(tmp_path: Path) -> None:
    """An annotation naming nothing is fine only where annotations are postponed: the code is
    compiled with the flags asked for, whatever codecache.py's own imports are."""
    source = "def f(x: not_defined_anywhere):\n    return x\n"
    cache = CodeCache(str(tmp_path / "cache.marshal"))
    postponed = cache.compile(source, "<f>", "exec", __future__.annotations.compiler_flag)
    assert run(postponed)["f"](3) == 3  # type: ignore[operator]
    evaluated = cache.compile(source, "<f>", "exec", 0)
    assert cache.misses == 2  # another key
    with pytest.raises(NameError):
        run(evaluated)


def test_future_flags_reads_a_modules_future_imports() -> None:
    assert codecache.future_flags(globals()) == __future__.annotations.compiler_flag
    assert codecache.future_flags({"annotations": "a name, not the feature"}) == 0


@pytest.mark.parametrize("content", [
    b"",
    b"not a cache at all",
    MAGIC_NUMBER,
    MAGIC_NUMBER + marshal.dumps({("x", "y", "exec", 0): 1})[:5],
    b"\x00\x00\r\n" + marshal.dumps({}),  # another interpreter's magic
    MAGIC_NUMBER + marshal.dumps(["a list"]),
    MAGIC_NUMBER + b"/no/end/to/the/installation's/name",
    MAGIC_NUMBER + marshal.dumps({("x", "y", "exec", 0): (fresh(SOURCE, "<double>"), None)}),
], ids=["empty", "garbage", "magic-only", "cut-short", "other-magic", "not-a-dict",
        "unnamed-installation", "no-installation-named"])
def test_a_bad_file_is_an_empty_cache_and_is_written_again(tmp_path: Path,
                                                          content: bytes) -> None:
    path = tmp_path / "cache.marshal"
    path.write_bytes(content)
    cache = CodeCache(str(path))
    assert run(cache.compile(SOURCE, "<double>"))["double"](2) == 4  # type: ignore[operator]
    assert cache.misses == 1
    cache.save()
    assert CodeCache(str(path)).compile(SOURCE, "<double>") == fresh(SOURCE, "<double>")


def test_a_file_others_may_write_is_not_read(tmp_path: Path) -> None:
    """Code another user could have written must not run: such a file is an empty cache."""
    path = tmp_path / "cache.marshal"
    start(str(path), "<double>")
    path.chmod(0o666)
    cache = CodeCache(str(path))
    cache.compile(SOURCE, "<double>")
    assert (cache.hits, cache.misses) == (0, 1)
    path.chmod(0o644)
    again = CodeCache(str(path))
    again.compile(SOURCE, "<double>")
    assert (again.hits, again.misses) == (1, 0)


def test_the_file_is_written_for_its_owner_alone_whatever_the_umask(tmp_path: Path) -> None:
    path = tmp_path / "cache.marshal"
    before = os.umask(0o002)  # a user-private-group system's usual umask
    try:
        start(str(path), "<double>")
    finally:
        os.umask(before)
    assert path.stat().st_mode & 0o777 == 0o644
    assert start(str(path), "<double>").hits == 1


def test_a_file_another_user_owns_is_not_read(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "cache.marshal"
    start(str(path), "<double>")
    monkeypatch.setattr(os, "geteuid", lambda: path.stat().st_uid + 1)
    cache = CodeCache(str(path))
    cache.compile(SOURCE, "<double>")
    assert (cache.hits, cache.misses) == (0, 1)


def test_a_place_that_cannot_be_written_stays_unwritten(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    path = blocker / "cache.marshal"  # under a regular file: no directory can be made
    cache = CodeCache(str(path))
    cache.compile(SOURCE, "<double>")
    cache.save()  # no exception
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-file"]


def test_nothing_is_written_when_nothing_was_compiled(tmp_path: Path) -> None:
    path = tmp_path / "cache.marshal"
    cache = CodeCache(str(path))
    cache.compile(SOURCE, "<double>")
    cache.save()
    written = path.stat().st_mtime_ns
    os.utime(path, ns=(1, 1))
    again = CodeCache(str(path))
    again.compile(SOURCE, "<double>")
    again.save()
    assert path.stat().st_mtime_ns == 1 != written


def start(path: str, *filenames: str) -> CodeCache:
    """One start: SOURCE compiled under each filename, then the cache saved."""
    cache = CodeCache(path)
    for filename in filenames:
        cache.compile(SOURCE, filename)
    cache.save()
    return cache


def cache_file(directory: Path, name: str, installation: Path, mode: int = 0o644) -> Path:
    """A cache file another installation wrote, naming `installation`."""
    path = directory / name
    path.write_bytes(MAGIC_NUMBER + os.fsencode(installation) + b"\0" + marshal.dumps({}))
    path.chmod(mode)
    return path


def test_a_write_removes_the_files_of_gone_installations_beside_it(tmp_path: Path) -> None:
    """One file per installation: a deleted virtual environment's goes when another
    installation next writes its own; nothing else beside it is touched."""
    (tmp_path / "venv-kept").mkdir()
    gone = cache_file(tmp_path, "codegen-0000000a.cpython-311.marshal", tmp_path / "venv-gone")
    kept = cache_file(tmp_path, "codegen-0000000b.cpython-311.marshal", tmp_path / "venv-kept")
    shared = cache_file(tmp_path, "codegen-0000000c.cpython-311.marshal",
                        tmp_path / "venv-gone-too", mode=0o666)  # not ours to judge
    other = cache_file(tmp_path, "notes.marshal", tmp_path / "venv-gone")
    path = tmp_path / "codegen-0000000d.cpython-311.marshal"
    unpruned = CodeCache(str(path))
    unpruned.compile(SOURCE, "<double>")
    unpruned.save()
    assert gone.exists()
    cache = CodeCache(str(path), prune=True)
    cache.compile(SOURCE, "<triple>")
    cache.save()
    assert not gone.exists()
    assert kept.exists() and shared.exists() and other.exists() and path.exists()
    assert CodeCache(str(path)).compile(SOURCE, "<triple>") == fresh(SOURCE, "<triple>")


def test_the_default_cache_is_pruned_but_under_a_pycache_prefix(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "pycache_prefix", None)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert codecache.default_cache()._prune
    monkeypatch.setattr(sys, "pycache_prefix", str(tmp_path / "prefix"))  # mirrors the install
    assert not codecache.default_cache()._prune


def test_what_other_starts_compiled_is_kept(tmp_path: Path) -> None:
    """`serve` and the stdio bridge compile different records: neither's start evicts the
    other's."""
    path = str(tmp_path / "cache.marshal")
    start(path, "<serve>")
    start(path, "<stdio>")
    both = start(path, "<serve>", "<stdio>")
    assert (both.hits, both.misses) == (2, 0)


def test_past_the_cap_only_what_this_start_used_is_kept(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """Entries of an older attrs (sources nobody compiles any more) make way, at the cap."""
    monkeypatch.setattr(codecache, "_MOST_ENTRIES", 3)
    path = str(tmp_path / "cache.marshal")
    start(path, "<old-1>", "<old-2>")
    start(path, "<new-1>", "<new-2>")
    after = start(path, "<old-1>", "<new-1>")
    assert (after.hits, after.misses) == (1, 1)


def test_a_start_that_compiles_past_the_cap_writes_nothing(tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(codecache, "_MOST_ENTRIES", 1)
    start(str(tmp_path / "cache.marshal"), "<one>", "<two>")
    assert list(tmp_path.iterdir()) == []


def test_the_default_place_is_the_users_cache_one_file_per_installation(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Never inside the package: left there after `pip uninstall`, it would keep a `bridge`
    directory that hides the next install as a namespace package."""
    monkeypatch.setattr(sys, "pycache_prefix", None)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    path = Path(codecache.default_path() or "")
    assert path.parent == tmp_path / "xdg" / "mcp-rosetta"
    assert path.name.startswith("codegen-")
    assert path.name.endswith(f".{sys.implementation.cache_tag}.marshal")
    assert Path(codecache.__file__).parent not in path.parents
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/xdg")  # the XDG spec: ignored
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert Path(codecache.default_path() or "").parent == tmp_path / "home/.cache/mcp-rosetta"
    monkeypatch.setattr(sys, "pycache_prefix", str(tmp_path / "prefix"))
    assert str(tmp_path / "prefix") in (codecache.default_path() or "")


def test_with_no_home_there_is_no_file(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "pycache_prefix", None)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setattr(os.path, "expanduser", lambda path: path)  # "~": no home found
    assert codecache.default_path() is None
    cache = CodeCache(None)
    cache.compile(SOURCE, "<double>")
    cache.save()  # nowhere to write: nothing happens
    assert (cache.hits, cache.misses) == (0, 1)


# Real interpreters: trio's and attrs' classes built through the cache ----------------------

PROBE = textwrap.dedent("""
    import json, sys
    from bridge import codecache
    if sys.argv[1] != "off":
        codecache.install(sys.argv[1])
    import trio, outcome
    from bridge.core.record import record

    @record(frozen=True)
    class Pair:
        left: int
        right: str = "r"

    value = outcome.Value(5)  # an attrs class with a salted __hash__
    codecache.save()
    print(json.dumps({**codecache.state(), "hash": hash(value), "repr": repr(value),
                      "equal": value == outcome.Value(5), "pair": repr(Pair(1)),
                      "pair_hash": hash(Pair(1)) == hash(Pair(1, "r"))}))
""")


def probe(cache: str, seed: int) -> dict[str, object]:
    done = subprocess.run([sys.executable, "-c", PROBE, cache], capture_output=True,
                          check=True, env={**os.environ, "PYTHONHASHSEED": str(seed)})
    result: dict[str, object] = json.loads(done.stdout)
    return result


def test_trio_imported_through_the_cache_is_the_trio_compiled_afresh(tmp_path: Path) -> None:
    cache = str(tmp_path / "cache.marshal")
    first = probe(cache, seed=1)
    assert first["codecache_hits"] == 0
    assert isinstance(first["codecache_misses"], int) and first["codecache_misses"] > 50
    cached = probe(cache, seed=2)
    assert cached["codecache_misses"] == 0
    assert cached["codecache_hits"] == first["codecache_misses"]
    uncached = probe("off", seed=2)
    assert uncached["codecache"] == "off"
    for name in ("hash", "repr", "equal", "pair", "pair_hash"):
        assert cached[name] == uncached[name], name
    assert cached["equal"] is True and cached["pair_hash"] is True
    assert cached["pair"] == "Pair(left=1, right='r')"


def test_starts_at_the_same_moment_leave_one_whole_file(tmp_path: Path) -> None:
    """A client that starts several servers at once, the first time: every start compiles and
    writes; each replaces the file whole, so the next start reads one of them, complete."""
    cache = str(tmp_path / "cache.marshal")
    starts = [subprocess.Popen([sys.executable, "-c", PROBE, cache], stdout=subprocess.PIPE,
                               env={**os.environ, "PYTHONHASHSEED": str(seed)})
              for seed in range(6)]
    outputs = [start.communicate(timeout=120)[0] for start in starts]
    assert [start.returncode for start in starts] == [0] * 6
    reports = [json.loads(output) for output in outputs]  # hits or misses: as they raced
    assert len({report["codecache_hits"] + report["codecache_misses"] for report in reports}) == 1
    assert [p.name for p in tmp_path.iterdir()] == ["cache.marshal"]  # no partial file left
    after = probe(cache, seed=7)
    assert after["codecache_misses"] == 0
