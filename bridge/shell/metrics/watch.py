"""A process's metrics, made when they are asked for: the series every session reports to,
their exposition, the spans made of them, and each session's core, an observing one.

Must not be imported unless metrics are on (the HTTP front, or `--metrics`): the exporter's
library and the observing core are loaded here, so a bridge without them pays nothing.
"""

from __future__ import annotations

import os

import trio

from bridge.core.bridge import Bridge
from bridge.core.config import CoreConfig
from bridge.core.observe import Observer
from bridge.shell.http.auth import Tokens, read_tokens
from bridge.shell.logs import Logger
from bridge.shell.metrics.exposition import Exposition
from bridge.shell.metrics.listener import serve_scrapes
from bridge.shell.metrics.series import Series
from bridge.shell.metrics.spans import tracer_of


class Watch:
    """The series of one process and how they are read."""

    def __init__(self, transport: str) -> None:
        """`transport`: how clients reach this process (`network.transport` of its spans:
        pipe, unix or tcp)."""
        self.series = Series()
        self.exposition = Exposition(self.series)
        self.series.traced = tracer_of(transport)

    def core(self, config: CoreConfig) -> Bridge:
        """A session's core, reporting what the series count (and, for spans, the trace
        context of each request)."""
        observer = Observer(self.series.tally, traced=self.series.traced is not None)
        return Bridge(config, secret=os.urandom(32), observer=observer)

    async def serve(self, address: str, token_file: str | None, log: Logger, *,
                    task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED) -> None:
        """`--metrics`' endpoint, guarded by the tokens in force, until cancelled."""
        tokens = read_tokens(token_file)
        await serve_scrapes(address, self.exposition, Tokens(tokens) if tokens else None, log,
                            task_status=task_status)
