"""trio imported without `ldconfig -p`, its threads still named, find_library given back."""

from __future__ import annotations

import hmac
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


FRESH = textwrap.dedent("""
    import sys, threading
    spawned = []
    sys.addaudithook(lambda event, args: spawned.append(list(args[1]))
                     if event == "subprocess.Popen" else None)
    from bridge.shell.trio_import import import_trio
    import_trio()
    import trio
    from trio._core._thread_cache import set_os_thread_name
    print("spawned during import:", spawned)
    print("not run:", sorted(name for name in ("ssl", "hmac", "idna")
                             if type(sys.modules[name]).__name__ == "Deferred"))
    print("not imported:", [name for name in ("_ssl", "_hashlib", "idna.core", "tempfile",
                                              "ctypes.util") if name not in sys.modules])
    def name_me():
        set_os_thread_name(threading.get_ident(), "named-by-trio")
        with open(f"/proc/self/task/{threading.get_native_id()}/comm") as comm:
            print("thread name:", comm.read().strip())
    worker = threading.Thread(target=name_me)
    worker.start()
    worker.join()
    import ctypes.util
    print("ctypes.util is the real one:", ctypes.util.__file__.endswith("ctypes/util.py"))
    import ssl, hmac, idna
    context = ssl.create_default_context()
    print("ssl runs when used:", type(context).__name__, type(ssl).__name__)
    print("hmac runs when used:", hmac.new(b"k", b"m", "sha256").hexdigest()[:8])
    print("idna runs when used:", idna.encode("b\\u00fccher.example").decode())
    async def main():
        return await trio.to_thread.run_sync(lambda: "ran")
    print("trio runs:", trio.run(main))
""")


@pytest.mark.skipif(_glibc_pthread() is None, reason="the lookup is answered on glibc only")
def test_trio_leaves_tls_dtls_and_idna_unrun_until_they_are_used() -> None:
    done = subprocess.run([sys.executable, "-c", FRESH], capture_output=True, text=True,
                          timeout=60, check=True)
    assert done.stdout.splitlines() == [
        "spawned during import: []",
        "not run: ['hmac', 'idna', 'ssl']",
        "not imported: ['_ssl', '_hashlib', 'idna.core', 'tempfile', 'ctypes.util']",
        "thread name: named-by-trio",
        "ctypes.util is the real one: True",
        "ssl runs when used: SSLContext module",
        "hmac runs when used: " + hmac.new(b"k", b"m", "sha256").hexdigest()[:8],
        "idna runs when used: xn--bcher-kva.example",
        "trio runs: ran",
    ]


def test_a_deferred_module_runs_once_for_threads_that_race_to_it() -> None:
    """Eight threads look a name up in a deferred module at once: its code runs once, and
    every thread gets the name."""
    script = textwrap.dedent("""
        import sys, threading, types
        from bridge.shell.trio_import import _defer
        import importlib.util
        _defer("colorsys", importlib.util)
        module = sys.modules["colorsys"]
        got, start = [], threading.Barrier(8)
        def look():
            start.wait()
            got.append(module.rgb_to_hsv(1.0, 0.0, 0.0))
        threads = [threading.Thread(target=look) for _ in range(8)]
        for thread in threads: thread.start()
        for thread in threads: thread.join()
        print(len(got), set(got), type(module) is types.ModuleType)
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=60, check=True)
    assert done.stdout.strip() == "8 {(0.0, 1.0, 1.0)} True"
