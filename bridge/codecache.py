"""The code start-up writes and compiles afresh every time, compiled once and kept: the methods
attrs generates for trio's classes (and its own), and @record's `__init__`s.

Must not change what runs. An entry is the code object `compile` made from the same source,
filename, mode and optimization level, in an interpreter with the same bytecode (the file is
named by `sys.implementation.cache_tag` and begins with the magic number, as a `.pyc` does).
One part of a source is not the same from run to run: the salt attrs writes into a hashable
class's `__hash__` (the hash of a string, so it follows PYTHONHASHSEED). It is left out of the
key and put back: the code of a hit gets this process's salt, as compiling would have given.

Must not fail a start, nor leave anything in the installation, nor run code another user
wrote. A file that is missing, unreadable, cut short, from another interpreter, or owned or
writable by anyone else is an empty cache, and one that cannot be
written (no home, a read-only one) stays unwritten. The file is in the user's cache directory
(`~/.cache/mcp-rosetta/`, one per installation; under `sys.pycache_prefix` if one is set: see
`default_path`), is replaced whole (a concurrent start reads the old one or the new one), and
keeps what every command's start compiled (the stdio bridge's, `serve`'s, `check`'s) up to
_MOST_ENTRIES, past which it keeps only what the last start used: entries nobody asks for any
more (an upgraded attrs, a removed class) make way then. A file names the installation that
wrote it: whenever one is written in the user's cache directory, the files there of
installations that are gone (a deleted virtual environment) go too. PYTHONDONTWRITEBYTECODE
does not stop it: that variable is about the `.pyc` of imported modules, which `pip install`
writes anyway, and container images commonly set it, where this cache then would never be kept.

Why: `compile` was about 13% of the stdio bridge's CPU to its first answer (attrs' methods for
about 80 classes, 24-29 ms; the records' `__init__`s, about 4 ms); reading the same code from
one file costs 0.8 ms (tests/benchmarks/README.md, "Start-up, fourth pass").
"""

from __future__ import annotations

import builtins
import contextlib
import marshal
import os
import sys
import zlib
from types import CodeType, ModuleType

try:  # what a .pyc starts with; CPython's import system, loaded with the interpreter
    from _frozen_importlib_external import MAGIC_NUMBER
except ImportError:  # pragma: no cover (another implementation)
    from importlib.util import MAGIC_NUMBER

TYPE_CHECKING = False  # typing itself is not imported: `connect` ends start-up here too
if TYPE_CHECKING:
    from typing import Any

Key = tuple[str, str, str, int]
"""(source with the salt left out, filename, mode, the __future__ flags it is compiled with)."""
Entry = tuple[CodeType, int | None]
"""The code, and the salt its source had (None: no salt)."""

_SALT_AFTER = "hash((\n"
_INSTALLATION = os.path.dirname(os.path.abspath(__file__))
"""The package's directory: what names the installation a file belongs to."""
_NAMED = 4096
"""Bytes of a file read to find the installation it names (a path is shorter)."""
_MOST_ENTRIES = 256
"""More than the commands' starts compile together (about 110 for the stdio bridge, a few
more for `serve` and `check`), and few enough to read in about 2 ms (108 entries: 0.8 ms): a
process that used more is taken for one whose sources differ every run, and writes nothing."""


class CodeCache:
    """Compiled code by source, read from one file and written back when it gained entries."""

    def __init__(self, path: str | None, *, prune: bool = False) -> None:
        self.path = path
        self._prune = prune  # the files of gone installations beside `path`, once it is written
        self.hits = 0
        self.misses = 0
        self._learnt = False
        self._kept: dict[Key, Entry] = _read(path) if path is not None else {}
        self._used: dict[Key, Entry] = {}

    def compile(self, source: str, filename: str, mode: str = "exec", flags: int = 0) -> CodeType:
        """What `compile(source, filename, mode, flags, dont_inherit=True)` returns (`flags`:
        the __future__ features of the module that would have compiled it), from the cache
        when it has it."""
        unsalted, salt = _unsalted(source)
        key = (unsalted, filename, mode, flags)
        entry = self._kept.get(key)
        if entry is None:
            self.misses += 1
            self._learnt = True
            entry = (compile(source, filename, mode, flags, dont_inherit=True), salt)
        else:
            self.hits += 1
        self._used[key] = entry
        code, kept_salt = entry
        return code if kept_salt == salt else _resalted(code, kept_salt, salt)

    def save(self) -> None:
        """Write the cache, if this process compiled anything; a failure writes nothing."""
        path = self.path
        if path is None or not self._learnt or len(self._used) > _MOST_ENTRIES:
            return
        kept = {**self._kept, **self._used}  # what other commands' starts compile stays too
        if len(kept) > _MOST_ENTRIES:  # old entries (an upgraded attrs) make way
            kept = self._used
        data = b"".join((MAGIC_NUMBER, _named(_INSTALLATION), marshal.dumps(kept)))
        partial = f"{path}.{os.getpid()}"
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            # Writable by its owner only, whatever the umask: _trusted reads nothing else.
            with os.fdopen(os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644),
                           "wb") as out:
                out.write(data)
            os.replace(partial, path)
        except OSError:
            _remove_quietly(partial)
            return
        self._kept = kept
        self._learnt = False
        if self._prune:
            _prune_beside(path)


def _read(path: str) -> dict[Key, Entry]:
    parts = _parts(_trusted_bytes(path))
    if parts is None:
        return {}
    try:
        entries = marshal.loads(parts[1])
    except (EOFError, ValueError, TypeError):
        return {}
    if type(entries) is not dict or not all(
            type(entry) is tuple and len(entry) == 2 and type(entry[0]) is CodeType
            for entry in entries.values()):
        return {}
    return entries


def _trusted_bytes(path: str, size: int = -1) -> bytes | None:
    """The first `size` bytes (-1: all) of the file `path`, if it is one we may trust."""
    try:
        with open(path, "rb") as cached:
            if not _trusted(os.fstat(cached.fileno())):
                return None
            return cached.read(size)
    except OSError:
        return None


def _parts(data: bytes | None) -> tuple[str, memoryview] | None:
    """A file's installation and its marshalled entries, after the magic number and the
    installation's name (ended by NUL); None if the file does not start so."""
    if data is None or not data.startswith(MAGIC_NUMBER):
        return None
    end = data.find(b"\0", len(MAGIC_NUMBER))
    if end < 0:
        return None
    installation = data[len(MAGIC_NUMBER):end].decode(errors="surrogateescape")
    return installation, memoryview(data)[end + 1:]


def _trusted(status: os.stat_result) -> bool:
    """Whether code read from the file `status` describes may run: a file this process's user
    owns and nobody else may write, as ssh asks of its keys (a cache directory set to a shared
    place, such as XDG_CACHE_HOME=/tmp, must not let another user's file in). Checked on the
    open file itself, so no file swapped in after the check is what is read."""
    getuid = getattr(os, "geteuid", None)
    owned = getuid is None or status.st_uid == getuid()
    return owned and not status.st_mode & 0o022


def _named(installation: str) -> bytes:
    """The file's header after the magic number: the installation that writes it, then NUL."""
    return installation.encode(errors="surrogateescape") + b"\0"


def _installation_of(path: str) -> str | None:
    """The installation the cache file `path` names, if it is a file of ours (one we may
    trust: we may remove it)."""
    parts = _parts(_trusted_bytes(path, _NAMED))
    return None if parts is None else parts[0]


def _prune_beside(path: str) -> None:
    """Remove the cache files beside `path` whose installation is gone: the user's cache
    directory gains one file per installation, and nothing else removes them."""
    directory = os.path.dirname(path)
    with contextlib.suppress(OSError):
        for name in os.listdir(directory):
            other = os.path.join(directory, name)
            if other == path or not (name.startswith("codegen-") and name.endswith(".marshal")):
                continue
            installation = _installation_of(other)
            if installation is not None and not os.path.isdir(installation):
                _remove_quietly(other)


def _remove_quietly(path: str) -> None:
    with contextlib.suppress(OSError):
        os.remove(path)


def _unsalted(source: str) -> tuple[str, int | None]:
    """`source` with attrs' hash salt (the first item of the tuple its `__hash__` hashes, a
    literal on its own line) taken out, and the salt; the source itself if it has none."""
    at = source.find(_SALT_AFTER)
    if at < 0:
        return source, None
    start = at + len(_SALT_AFTER)
    end = source.find(",", start)
    text = source[start:end].strip()
    if not text.lstrip("-").isdigit():
        return source, None
    return source[:start] + source[end:], int(text)


def _resalted(code: CodeType, old: int | None, new: int | None) -> CodeType:
    """`code` with the salt `old` replaced by `new` in every `__hash__` it defines."""
    consts = tuple(
        _resalted(const, old, new) if type(const) is CodeType
        else new if code.co_name == "__hash__" and type(const) is int and const == old
        else const
        for const in code.co_consts)
    return code.replace(co_consts=consts)


def future_flags(namespace: dict[str, object]) -> int:
    """The compiler flags of the __future__ features a module's namespace imported: what its
    own `compile` calls inherit."""
    import __future__

    features: dict[str, __future__._Feature] = {
        name: getattr(__future__, name) for name in __future__.all_feature_names}
    return sum(feature.compiler_flag for name, feature in features.items()
               if namespace.get(name) is feature)


def default_path() -> str | None:
    """Where this installation's cache lives for this interpreter and optimization level:
    under `sys.pycache_prefix` if one is set (as `.pyc`s are), else in the user's cache
    directory (`$XDG_CACHE_HOME`, or `~/.cache`), one file per installation (its directory's
    path, hashed, names it); None with no home to put it in.

    Never inside the package: a file there outlives `pip uninstall`, which removes only what it
    installed, and the directory it keeps alive is then a namespace package `bridge` that
    hides the next install of the bridge (an editable one, found after the path).
    """
    here = _INSTALLATION
    tag = sys.implementation.cache_tag or "none"
    level = f".opt-{sys.flags.optimize}" if sys.flags.optimize else ""
    prefix = sys.pycache_prefix
    if prefix:
        return os.path.join(prefix, here.lstrip(os.sep), f"codegen.{tag}{level}.marshal")
    base = os.environ.get("XDG_CACHE_HOME", "")
    if not os.path.isabs(base):  # unset, or relative: the XDG spec says to ignore it then
        home = os.path.expanduser("~")
        if not os.path.isabs(home):
            return None
        base = os.path.join(home, ".cache")
    installation = zlib.crc32(here.encode(errors="surrogateescape"))
    return os.path.join(base, "mcp-rosetta", f"codegen-{installation:08x}.{tag}{level}.marshal")


def default_cache() -> CodeCache:
    """The cache at default_path(). In the user's cache directory, which every installation
    shares, its writes remove the files of installations that are gone; under
    `sys.pycache_prefix`, whose tree mirrors the installations, they do not (nor does Python
    remove a `.pyc` there)."""
    return CodeCache(default_path(), prune=not sys.pycache_prefix)


_CACHE: CodeCache | None = None


def install(path: str | None = None) -> CodeCache:
    """Compile attrs' generated methods and @record's `__init__`s through one cache (`path`:
    default_path()) from now on; the cache installed already, if any."""
    global _CACHE
    if _CACHE is not None:
        return _CACHE
    cache = _CACHE = CodeCache(path) if path is not None else default_cache()
    from bridge.core.record import use_compiler

    flags = future_flags(use_compiler.__globals__)  # record.py's own
    use_compiler(lambda source, filename: cache.compile(source, filename, "exec", flags))
    make = sys.modules.get("attr._make")
    if make is not None:
        _patch_attrs(make, cache)
    else:
        sys.meta_path.insert(0, _AttrsFinder(cache))
    return cache


def save() -> None:
    """Start-up is over: write the cache if it learnt anything."""
    if _CACHE is not None:
        _CACHE.save()


def state() -> dict[str, object]:
    """Log fields: how many compiled sources the cache had and had not."""
    if _CACHE is None:
        return {"codecache": "off"}
    return {"codecache_hits": _CACHE.hits, "codecache_misses": _CACHE.misses}


def _patch_attrs(make: ModuleType, cache: CodeCache) -> None:
    """Give `attr._make` a `compile` of its own that reads `cache`: every method attrs
    generates is compiled by that module's calls to the builtin, found by name in its
    globals first, including those its own body makes for attrs' classes as it runs."""
    flags: int | None = None  # its __future__ imports, read once its body has run them

    def compile(source: Any, filename: Any, mode: Any, *args: Any, **kwargs: Any) -> Any:
        nonlocal flags
        if args or kwargs or type(source) is not str or type(filename) is not str:
            return builtins.compile(source, filename, mode, *args, **kwargs)
        if flags is None:
            flags = future_flags(vars(make))
        return cache.compile(source, filename, mode, flags)

    make.compile = compile  # type: ignore[attr-defined]


class _AttrsFinder:
    """Waits on sys.meta_path for `attr._make` to be imported, and patches it before its
    body runs; then leaves."""

    def __init__(self, cache: CodeCache) -> None:
        self._cache = cache

    def find_spec(self, name: str, path: Any, target: Any = None) -> Any:
        if name != "attr._make":
            return None
        sys.meta_path.remove(self)
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            spec = find(name, path, target) if find is not None else None
            if spec is not None:
                break
        else:
            return None
        loader = spec.loader
        run = getattr(loader, "exec_module", None)
        if run is None:
            return spec
        cache = self._cache

        def exec_module(module: ModuleType) -> None:
            _patch_attrs(module, cache)
            run(module)

        loader.exec_module = exec_module
        return spec
