"""Importing trio without the work its import does that the bridge's first answer does not need.

Must not change what trio does once imported, nor hide a module from anybody who uses it: a
module deferred here runs, whole, at the first use of any of its names.

Two costs of `import trio` (which is about half of the stdio bridge's start), about a tenth of
its instructions:

- *The `ldconfig -p` subprocess.* trio names its worker threads through pthread_setname_np,
  which it finds at import (trio/_core/_thread_cache.py) with ctypes.util.find_library
  ("pthread"); on Linux that runs `/sbin/ldconfig -p` as a child process and parses its output,
  a fork and exec on the way to the first answer, and importing ctypes.util itself loads
  tempfile, random and shutil. While trio imports, `ctypes.util` is a stand-in holding only
  find_library, which answers "pthread" with glibc's soname: glibc's threads library has had
  the soname libpthread.so.0 on every architecture, and since glibc 2.34 it is a stub kept for
  compatibility whose dependency, libc.so.6, holds the function (dlsym searches it). The
  stand-in is gone after trio's import, so any later `import ctypes.util` gets the real one.
  Elsewhere (musl, macOS, where no ldconfig runs) trio imports the real module. Were the name
  ever wrong, trio's own fallback applies: it catches the failed load and leaves its threads
  unnamed, which only `ps` and `top` would show.
- *TLS, DTLS and hostnames.* trio imports ssl (which loads OpenSSL's libraries), hmac (with
  hashlib) and idna for its TLS streams, DTLS endpoints and getaddrinfo, none of which the
  stdio bridge's first answer uses. trio's modules use those three only inside functions, so
  before trio imports they go into sys.modules as `Deferred` modules, not yet run: each runs
  at the first lookup of one of its names (httpx2's import for --url, asyncio's when structlog
  is imported after the first answer, a TLS call), whoever makes it. Were a new trio to use one
  at import, it would simply run then. `tests/shell/test_trio_import.py` checks that trio's
  import leaves them unrun, and that they work when used.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import types
from collections.abc import Iterator
from typing import Any

GLIBC_PTHREAD = "libpthread.so.0"
DEFERRED = ("ssl", "hmac", "idna")
"""Modules trio imports but uses only inside functions the first answer does not call."""


def import_trio() -> None:
    """Import trio (if it is not yet), without ldconfig and with DEFERRED left to run later."""
    if "trio" in sys.modules:
        return
    import importlib.util

    for name in DEFERRED:
        _defer(name, importlib.util)
    soname = _glibc_pthread()
    if soname is None:
        import trio
        return
    with _pthread_known(soname):
        import trio  # noqa: F401


@contextlib.contextmanager
def _pthread_known(soname: str) -> Iterator[None]:
    """While it lasts, ctypes.util.find_library("pthread") is `soname`, without ldconfig: the
    stand-in module, or, if ctypes.util is imported already, its find_library wrapped."""
    import ctypes

    if "ctypes.util" in sys.modules:
        import ctypes.util as real

        find = real.find_library
        real.find_library = lambda name: soname if name == "pthread" else find(name)
        try:
            yield
        finally:
            real.find_library = find
        return
    stand_in = _find_library_module(soname)
    sys.modules["ctypes.util"] = stand_in
    ctypes.util = stand_in  # what `import ctypes.util; ctypes.util.find_library(...)` reads
    try:
        yield
    finally:
        if sys.modules.get("ctypes.util") is stand_in:
            del sys.modules["ctypes.util"]
        if getattr(ctypes, "util", None) is stand_in:
            del ctypes.util


def _find_library_module(soname: str) -> types.ModuleType:
    """A `ctypes.util` holding only find_library: "pthread" is `soname`; any other name (which
    trio's import does not ask) makes the real module replace it, and asks that."""
    stand_in = types.ModuleType("ctypes.util", "find_library, as trio's import asks it")

    def find_library(name: str) -> str | None:
        if name == "pthread":
            return soname
        del sys.modules["ctypes.util"]
        import ctypes.util as real

        return real.find_library(name)

    stand_in.find_library = find_library  # type: ignore[attr-defined]
    return stand_in


def _defer(name: str, util: types.ModuleType) -> None:
    """Put `name` in sys.modules unrun, to run at the first lookup of a name it lacks (if it is
    not imported yet and can be found: else trio's own import says what is wrong)."""
    if name in sys.modules:
        return
    spec = util.find_spec(name)
    if spec is None or spec.loader is None:
        return
    module = util.module_from_spec(spec)
    module.__class__ = Deferred
    sys.modules[name] = module


class Deferred(types.ModuleType):
    """A module whose code has not run yet: its spec and file are there (so `import` binds it
    as it is), and the first lookup of anything else runs it, once; a thread that looks a name
    up meanwhile waits for the end.

    Not importlib.util.LazyLoader: its modules run at any attribute lookup, and an `import`
    statement looks up `__spec__`, so trio's own `import ssl` would run ssl."""

    def __getattr__(self, attribute: str) -> Any:
        with _RUNNING:
            if type(self) is Deferred:
                if self.__name__ in _running:  # a cycle: a name it does not have yet is
                    raise AttributeError(  # missing, as in any module being imported
                        f"partially initialized module {self.__name__!r} has no attribute "
                        f"{attribute!r}")
                _run(self)
        return getattr(self, attribute)


def _run(module: types.ModuleType) -> None:
    """Run a Deferred module's code in it (holding _RUNNING); then it is a plain module."""
    name = module.__name__
    _running.add(name)
    try:
        module.__spec__.loader.exec_module(module)  # type: ignore[union-attr]
    except BaseException:
        if sys.modules.get(name) is module:  # as a failed import leaves it
            del sys.modules[name]
        raise
    finally:
        _running.discard(name)
        module.__class__ = types.ModuleType


_RUNNING = threading.RLock()
"""Held while a Deferred module runs: another thread that looks a name up waits for the end."""
_running: set[str] = set()
"""The Deferred modules whose code is running (in the thread holding _RUNNING)."""


def _glibc_pthread() -> str | None:
    """libpthread's soname when this is Linux with glibc, else None (look it up for real)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = os.confstr("CS_GNU_LIBC_VERSION")  # "glibc 2.36"; musl has no such name
    except (ValueError, OSError):
        return None
    return GLIBC_PTHREAD if libc and libc.startswith("glibc ") else None
