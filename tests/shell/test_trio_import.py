"""trio imported without `ldconfig -p`, its threads still named, find_library given back."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from bridge.shell.trio_import import _glibc_pthread

SCRIPT = textwrap.dedent("""
    import sys, threading
    spawned = []
    sys.addaudithook(lambda event, args: spawned.append(list(args[1]))
                     if event == "subprocess.Popen" else None)
    import ctypes.util
    real = ctypes.util.find_library
    from bridge.shell.trio_import import import_trio
    import_trio()
    import trio
    from trio._core._thread_cache import set_os_thread_name
    print("spawned during import:", spawned)
    print("find_library given back:", ctypes.util.find_library is real)
    def name_me():
        set_os_thread_name(threading.get_ident(), "named-by-trio")
        with open(f"/proc/self/task/{threading.get_native_id()}/comm") as comm:
            print("thread name:", comm.read().strip())
    worker = threading.Thread(target=name_me)
    worker.start()
    worker.join()
    ctypes.util.find_library("pthread")  # the real lookup: the hook sees its ldconfig
    print("spawned by the real lookup:", [argv[0] for argv in spawned])
""")


@pytest.mark.skipif(_glibc_pthread() is None, reason="the lookup is answered on glibc only")
def test_trio_is_imported_without_ldconfig_and_still_names_its_threads() -> None:
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True,
                          timeout=60, check=True)
    assert done.stdout.splitlines() == [
        "spawned during import: []",
        "find_library given back: True",
        "thread name: named-by-trio",
        "spawned by the real lookup: ['/sbin/ldconfig']",
    ]
