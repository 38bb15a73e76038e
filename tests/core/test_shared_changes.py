"""Changes shared between the cores of one client: what a pool's later process, or a fleet's
other node, hears from its server reaches the listen streams another core holds.

A mode B core with `share_changes` hands each change its server raises to the shell
(`ShareChange`) besides its own streams; a core given one (`ChangeRelayed`) fans it out to its
streams by their filters, as its own server's, and never shares it again.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from bridge.core.config import CoreConfig
from bridge.core.events import Action, ShareChange
from tests.core.harness import Harness, answer, legacy_pair, mode_b, modern_pair, one, sent
from tests.core.test_listen_b import SUB, listen, notify

SHARING = CoreConfig(share_changes=True)
TOOLS = notify("notifications/tools/list_changed")
UPDATED = notify("notifications/resources/updated", {"uri": "file:///dir/x"})


def shared(actions: list[Action]) -> list[Any]:
    return [action.message for action in actions if isinstance(action, ShareChange)]


def test_a_change_the_server_raises_is_shared_besides_the_core_s_own_streams() -> None:
    h, _ = mode_b(config=SHARING)
    h.client(listen(7, toolsListChanged=True))
    actions = h.server(TOOLS)
    assert sent(actions, "client") == [notify(TOOLS["method"], {"_meta": {SUB: 7}})]
    assert shared(actions) == [TOOLS]
    # With no stream here it is shared all the same: the streams may be at another core.
    h.client(notify("notifications/cancelled", {"requestId": 7}))
    actions = h.server(UPDATED)
    assert (sent(actions, "client"), shared(actions)) == ([], [UPDATED])


def test_without_share_changes_nothing_is_shared() -> None:
    h, _ = mode_b()
    h.client(listen(7, toolsListChanged=True))
    actions = h.server(TOOLS)
    assert len(sent(actions, "client")) == 1 and shared(actions) == []


def test_what_is_no_change_is_not_shared() -> None:
    h, _ = mode_b(config=SHARING)
    for method in ("notifications/message", "notifications/progress"):
        assert shared(h.server(notify(method, {"level": "info", "data": "x",
                                               "progressToken": 1, "progress": 1}))) == []


def test_a_relayed_change_reaches_the_streams_that_asked_and_is_not_shared_again() -> None:
    h, _ = mode_b(config=SHARING)
    h.client(listen("t", toolsListChanged=True))
    h.client(listen("p", promptsListChanged=True))
    actions = h.relayed(TOOLS)
    assert sent(actions, "client") == [notify(TOOLS["method"], {"_meta": {SUB: "t"}})]
    assert shared(actions) == [] and sent(actions, "server") == []


def test_a_relayed_resource_update_reaches_only_the_streams_subscribed_to_it() -> None:
    h, _ = mode_b(config=SHARING)
    subscribe = one(h.client(listen("r", resourceSubscriptions=["file:///dir"])), "server")
    h.server(answer(subscribe, {}))
    h.client(listen("t", toolsListChanged=True))
    assert sent(h.relayed(UPDATED), "client") == [
        notify(UPDATED["method"], {"uri": "file:///dir/x", "_meta": {SUB: "r"}})]
    other = notify("notifications/resources/updated", {"uri": "file:///other"})
    assert sent(h.relayed(other), "client") == []


def test_a_relayed_change_with_no_stream_here_is_dropped_quietly() -> None:
    debug = dataclasses.replace(SHARING, debug_logs=True)
    h, _ = mode_b(config=debug)
    actions = h.relayed(TOOLS)
    assert sent(actions, "client") == [] and shared(actions) == []
    assert [(log.level, log.event) for log in h.logs[-1:]] == [("debug", "notification.dropped")]


def test_a_relayed_change_means_nothing_to_the_other_modes() -> None:
    for h in (modern_pair(), legacy_pair()[0]):
        actions = h.relayed(TOOLS)
        assert (sent(actions, "client"), sent(actions, "server"), shared(actions)) \
            == ([], [], [])


def test_a_relayed_change_before_any_mode_is_dropped() -> None:
    h = Harness(SHARING)
    assert h.relayed(TOOLS) == []
