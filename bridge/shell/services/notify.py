"""sd_notify: tell systemd (Type=notify) how the service is doing, with no dependency.

Must not fail the bridge: without NOTIFY_SOCKET it does nothing; errors are for the caller to log.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping
from typing import Any


def sd_notify(state: str, environ: Mapping[str, str] = os.environ) -> bool:
    """Send `state` (e.g. "READY=1") to $NOTIFY_SOCKET; False if there is no socket to tell.

    Raises OSError if the socket is set but unusable (sd_notify(3): path or @abstract name).
    """
    address = environ.get("NOTIFY_SOCKET")
    if not address:
        return False
    if address.startswith("@"):
        address = "\0" + address[1:]
    elif not address.startswith("/"):
        raise OSError(f"unsupported NOTIFY_SOCKET address: {address}")
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC) as sock:
        sock.connect(address)
        sock.sendall(state.encode())
    return True


class Notifier:
    """sd_notify for the bridge: a failure is logged, never raised."""

    def __init__(self, log: Any) -> None:
        self._log = log

    def __call__(self, state: str) -> None:
        try:
            sd_notify(state)
        except OSError as exc:
            self._log.warning("notify.failed", state=state, reason=str(exc))
