"""A request target (`/mcp?x=1`): the path it names, and how the log may write it.

Must not log: the front's `http.request` line writes `logged`. A query may carry a secret
(a client that puts its bearer token in `?access_token=`, as RFC 6750 §2.3 allows and this
front does not read), so the log keeps each parameter's name and never its value.
"""

from __future__ import annotations

from typing import Final

REDACTED: Final = "…"


def path_of(target: str) -> str:
    """The target without its query."""
    return target.partition("?")[0]


def logged(target: str) -> str:
    """The target as the log writes it: its path, and its query's names with every value
    replaced by `…` (`/mcp?access_token=…`): the log says a query came, and holds none
    of its values."""
    path, mark, query = target.partition("?")
    if not mark:
        return path
    return f"{path}?" + "&".join(_redacted(part) for part in query.split("&"))


def _redacted(parameter: str) -> str:
    """`name=value` as `name=…`; a part with no `=` is all value (`?TOKEN`), so all `…`."""
    name, equals, _ = parameter.partition("=")
    return f"{name}={REDACTED}" if equals and name else REDACTED
