"""A 2026-07-28 POST mapped onto its tenant's bridge session: the routes of its requests.

Must not answer for the core nor hold a protocol rule: `bridge.streamable` checks a request
(`headers.check`) and renames it into the front's id space and back (`renaming.Renaming`);
this module keeps each request's route while the core has it, and puts what the core sends
the client on the route of the POST it belongs to, by `Send.request`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol, TypeAlias

from bridge.core.codec import Message, encode
from bridge.core.events import Send
from bridge.shell.http.route import STREAM_BACKLOG, Outgoing, Route
from bridge.shell.logs import Logger
from bridge.shell.session.driver import line_of
from bridge.streamable import event_ids, replies
from bridge.streamable.headers import ParamHeaders
from bridge.streamable.renaming import Renamed, Renaming, cancellation

GONE = "the HTTP client closed the connection"
Seal = Callable[[Message], Message]
"""An answer as a tenant's client is given it: in a fleet, its requestState in an envelope
naming this node (`fleet.Fleet.wrapped`)."""


@dataclass(slots=True)
class PostExchange:
    """One POST's request while the core has it: its names, and where its messages go."""

    names: Renamed
    route: Route
    """Its messages on their way to the client, within the backlog bound."""


EventLog: TypeAlias = event_ids.EventLog[PostExchange]
"""A legacy stream's event log: a POST stream's messages come by its exchange's route."""


class Routes(Protocol):
    """Where a POST's route is given up when its client goes away (`Mapping`,
    `legacy.LegacySession`): the line that cancels it at the core, if any."""

    def abandon(self, exchange: PostExchange) -> bytes | None: ...


def open_exchange(original: object, wire: str, method: str, log: Logger,
                  backlog: int = STREAM_BACKLOG, **names: object) -> PostExchange:
    """A POST's exchange and its route: the one place both eras' POST streams are made, so
    both have the bound (`route.py`). `names`: what the log says the route is for."""
    route = Route(log, backlog, **names, request=original, rpc_method=method)
    return PostExchange(Renamed(original, wire, method), route)


class Mapping:
    """The front's half of a tenant's session: every POST's request in flight by its id."""

    def __init__(self, log: Logger, backlog: int = STREAM_BACKLOG,
                 seal: Seal | None = None) -> None:
        """`seal`: what an answer becomes for the client (None: nothing, outside a fleet)."""
        self._log = log
        self._backlog = backlog
        self._seal = seal
        self._renaming = Renaming()
        self._routes: dict[str, PostExchange] = {}

    @property
    def param_headers(self) -> ParamHeaders:
        return self._renaming.param_headers

    @property
    def in_flight(self) -> int:
        return len(self._routes)

    def admit(self, message: Message, client: str = "") -> tuple[PostExchange, Message]:
        """`message` renamed for the core: its exchange, and the message to hand the core."""
        names, renamed = self._renaming.admit(message)
        route = Route(self._log, self._backlog, client=client, request=names.original,
                      rpc_method=names.method)
        exchange = PostExchange(names, route)
        self._routes[names.wire] = exchange
        return exchange, renamed

    def deliver(self, send: Send) -> bool:
        """A message the core sends the client: onto the stream of the POST it names; True
        if it was that POST's answer. The driver calls it, so it must not wait: a POST whose
        client does not read gives up past its bound (`route.py`) instead."""
        message = send.message
        request = send.request
        if not isinstance(message, dict):
            self._log.warning("http.dropped", reason="a batch has no place on a 2026-07-28 "
                                                     "front")
            return False
        exchange = self._routes.get(request) if isinstance(request, str) else None
        if exchange is None:
            # A message naming no request (a legacy server's list_changed no stream asked
            # for, an error under id null) or one whose POST is gone (cancelled): a modern
            # client has no stream it could go on (§Receiving Messages: every message on a
            # stream relates to its request).
            self._log.info("http.dropped", method=message.get("method"),
                           request=request, reason="belongs to no open POST" if request
                           is not None else "names no request: no stream to put it on")
            return False
        restored, final = self._renaming.restore(message, exchange.names)
        if final:
            del self._routes[exchange.names.wire]
            if self._seal is not None:
                restored = self._seal(restored)
        line = line_of(send) if restored is message else encode(restored)
        outgoing = Outgoing(line, final, replies.status_of(restored) if final else 200)
        exchange.route.put(outgoing)  # past its bound, the route gives up (and says so)
        if final:
            exchange.route.close()
        return final

    def close(self, wire: object) -> None:
        """The core that had request `wire` is gone: its POST ends unanswered (the front's
        refusal for a stopped core answers it)."""
        exchange = self._routes.pop(wire, None) if isinstance(wire, str) else None
        if exchange is not None:
            exchange.route.close()

    def abandon(self, exchange: PostExchange) -> bytes | None:
        """The POST's client went away before its answer: the line that cancels it at the
        core (streamable-http.mdx §Cancellation), or None if it was already answered."""
        if self._routes.pop(exchange.names.wire, None) is None:
            return None
        exchange.route.close()
        return encode(cancellation(exchange.names, GONE))

    def abandon_all(self) -> None:
        for exchange in list(self._routes.values()):
            exchange.route.close()
        self._routes.clear()
