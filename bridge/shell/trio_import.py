"""Importing trio without the `ldconfig -p` subprocess its import runs on Linux.

Must not change anything but that one library lookup, nor outlive trio's import: every other
caller of ctypes.util.find_library gets the real one.

trio names its worker threads through pthread_setname_np, which it finds at import
(trio/_core/_thread_cache.py) with ctypes.util.find_library("pthread"); on Linux that runs
`/sbin/ldconfig -p` as a child process and parses its output, a fork and exec on the way to the
bridge's first answer. glibc's threads library has had the soname libpthread.so.0 on every
architecture, and since glibc 2.34 it is a stub kept for compatibility whose dependency,
libc.so.6, holds the function (dlsym searches it), so on glibc that is the answer the lookup
would give. Elsewhere (musl, macOS, where no ldconfig runs) the real lookup runs. Were the
name ever wrong, trio's own fallback applies: it catches the failed load and leaves its threads
unnamed, which only `ps` and `top` would show.
"""

from __future__ import annotations

import ctypes.util
import os
import sys

GLIBC_PTHREAD = "libpthread.so.0"


def import_trio() -> None:
    """Import trio (if it is not yet), answering trio's lookup of "pthread" without ldconfig."""
    if "trio" in sys.modules:
        return
    soname = _glibc_pthread()
    if soname is None:
        import trio
        return
    find = ctypes.util.find_library

    def known(name: str) -> str | None:
        return soname if name == "pthread" else find(name)

    ctypes.util.find_library = known
    try:
        import trio  # noqa: F401
    finally:
        ctypes.util.find_library = find


def _glibc_pthread() -> str | None:
    """libpthread's soname when this is Linux with glibc, else None (look it up for real)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = os.confstr("CS_GNU_LIBC_VERSION")  # "glibc 2.36"; musl has no such name
    except (ValueError, OSError):
        return None
    return GLIBC_PTHREAD if libc and libc.startswith("glibc ") else None
