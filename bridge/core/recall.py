"""A legacy verdict remembered from an earlier start of the same server command, and what the
server's answers make of it: kept, learned, or forgotten.

Must not read or write anything: the shell loads the memory into `CoreConfig.remembered` and
stores what each `Remember` action says. The memory only spares the probe: a server started on
it is legacy provisionally (verdict.py), so a modern server's refusal of `initialize` still
corrects it, and the first answer to `initialize` says whether it is the server remembered
(the name and version it gives, initialize's serverInfo). stdio.mdx §Backward Compatibility
asks a client to probe a server whose era it does not know; one it has met is known.
"""

from __future__ import annotations

from bridge.core.codec import Message
from bridge.core.events import Remember
from bridge.core.provisional import names_modern_version


def identity(result: object) -> Message:
    """The name and version an InitializeResult's serverInfo gives (either may be absent)."""
    info = result.get("serverInfo") if isinstance(result, dict) else None
    if not isinstance(info, dict):
        return {}
    return {key: info[key] for key in ("name", "version") if isinstance(info.get(key), str)}


class Recall:
    """One session's use of the memory: whether the next server may skip the probe, and what
    its first answer to `initialize` teaches."""

    __slots__ = ("remembered", "used", "watching")

    def __init__(self, remembered: Message | None) -> None:
        self.remembered = remembered
        """The server as it named itself when its legacy era was learned, as loaded when the
        session began; None: unknown, or forgotten since."""
        self.used = False
        """Whether the server now running was started on the memory, unprobed."""
        self.watching = False
        """Whether the first answer to `initialize` is awaited, to learn or check the memory."""

    def skips_probe(self) -> bool:
        """A server started now goes unprobed, taken as legacy on the memory."""
        self.used = self.remembered is not None
        return self.used

    def settled_legacy(self) -> None:
        """The server was taken as legacy by the probe or the memory: its answer to
        `initialize` is awaited."""
        self.watching = True

    def answered(self, message: Message) -> Remember | None:
        """The server's first answer to `initialize`: what to store, if anything."""
        self.watching = False
        result = message.get("result")
        if not isinstance(result, dict):
            if not self.used:
                return None
            modern = names_modern_version(message.get("error"))
            return self._forget("it refused initialize as a modern server does" if modern
                                else "it refused initialize")
        named = identity(result)
        if not self.used:  # for the next process: this session's servers go on being probed
            return Remember("legacy", named, "it answered initialize as a legacy server")
        if named != self.remembered:
            return self._forget(f"it names itself {named}, not {self.remembered}")
        return None

    def contradicted(self) -> Remember | None:
        """The server started on the memory showed it is modern: forget it."""
        self.watching = False
        return self._forget("the server remembered as legacy showed it is modern") \
            if self.used else None

    def _forget(self, why: str) -> Remember:
        self.remembered, self.used = None, False
        return Remember(None, reason=why)
