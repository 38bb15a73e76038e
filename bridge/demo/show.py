"""How the demo prints a message: one short, aligned line per hop, readable at a glance.

Must not talk to processes: it only formats what the demo saw.
"""

from __future__ import annotations

import json
import shutil
from typing import Any

LONG_PREFIX = "io.modelcontextprotocol/"
SHORT_PREFIX = "…/"
ARROW_WIDTH = 16
LABEL_WIDTH = 28
# Shown first, so what the bridge adds or strips is visible before a line is cut.
ERA_KEYS = ("resultType", "ttlMs", "cacheScope", "_meta")
MAX_WIDTH = 100


def width() -> int:
    """The width a line is cut to: the terminal's (or $COLUMNS, which a pipe has not), but
    never more than 100 columns."""
    return min(MAX_WIDTH, shutil.get_terminal_size((MAX_WIDTH, 24)).columns)


def label(message: Any) -> tuple[str, Any]:
    """("tools/call #3", params) for a request, ("result #3", result) for a response, ..."""
    if not isinstance(message, dict):
        return "batch", message
    ident = f" #{json.dumps(message['id'])}" if "id" in message else ""
    if "method" in message:
        return f"{message['method']}{ident}", message.get("params")
    if "error" in message:
        return f"error{ident}", message["error"]
    return f"result{ident}", message.get("result")


def hop(arrow: str, message: Any, *, full: bool = False) -> str:
    """`  client → bridge   tools/list #2  {...}`, cut to the terminal unless `full`."""
    name, body = label(message)
    if not full and isinstance(body, dict):
        body = {**{k: body[k] for k in ERA_KEYS if k in body}, **body}
    text = "" if body is None else json.dumps(body, ensure_ascii=False, separators=(",", ":"))
    if not full:
        text = text.replace(LONG_PREFIX, SHORT_PREFIX)
    line = f"   {arrow:<{ARROW_WIDTH}} {name:<{LABEL_WIDTH}} {text}".rstrip()
    limit = width()
    if not full and len(line) > limit:
        line = line[: limit - 1] + "…"
    return line


def note(text: str) -> str:
    return f"   {'':<{ARROW_WIDTH}} ({text})"


def heading(number: int, text: str) -> str:
    return f"\n{number}. {text}"
