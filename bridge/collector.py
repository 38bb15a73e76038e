"""The cyclic garbage collector during start-up: paused from the command's first line until
the bridge serves, then on again for the rest of the process.

Must not be paused anywhere else, nor left paused on any path: `bridge.launch.main` pauses it
and turns it back on when it returns or raises, and every command that runs for long turns it
on before it serves (the stdio bridge once its first answer is written, `serve`, `check`,
`connect` and `demo` once their imports are done).

Why: what start-up allocates is mostly what the imports make (modules, classes, functions,
the tables of trio and the core) and lives as long as the process, so every collection the
collector's thresholds start during the imports traverses it all and frees next to nothing
(about 20 ms of the stdio bridge's start on this project's 2-core machine). When it is turned
back on, `gc.freeze` moves everything alive then to the permanent generation: no later full
collection of a daemon that runs for weeks traverses the imports' objects again.
"""

from __future__ import annotations

import gc


def pause() -> None:
    """Start-up begins: no automatic collection until `resume`."""
    gc.disable()


def resume() -> None:
    """Start-up is over: what is alive now is frozen, and the collector runs again. Does
    nothing when it is running already (a second call, or a collector nobody paused)."""
    if gc.isenabled():
        return
    gc.freeze()
    gc.enable()


def state() -> dict[str, object]:
    """Log fields: whether the collector runs, and how many collections it has made, for a
    debug line at the end of a process (that the collector was back on while it served)."""
    return {"gc_enabled": gc.isenabled(),
            "gc_collections": sum(generation["collections"] for generation in gc.get_stats()),
            "gc_frozen": gc.get_freeze_count()}
