"""The end of start-up: the garbage collector on again (collector.py), and the code the start
compiled kept for the next one (codecache.py).

Must be called when the command starts to serve (the stdio bridge's first answer, or 1 s
without one; `serve`, `check`, `connect` and `demo` once their imports are done), and may be
called again, doing nothing, when the command ends.
"""

from __future__ import annotations

from bridge import codecache, collector


def over() -> None:
    """Start-up is over: the collector runs again, and the code cache is written if it learnt
    anything."""
    collector.resume()
    codecache.save()
