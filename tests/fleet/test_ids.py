"""A legacy session's id in a fleet names its node, and only the fleet's key makes one."""

from __future__ import annotations

import pytest

from bridge.fleet import ids
from bridge.fleet.keys import MIN_SECRET, derive

KEY = derive(b"k" * 32).ids
NODE = "http://10.0.0.2:8808"
RANDOM = bytes(range(32))


def test_an_id_names_the_node_that_minted_it() -> None:
    session_id = ids.mint(KEY, NODE, RANDOM)
    assert ids.holder(KEY, session_id) == NODE
    assert session_id.split(".")[0] == "aHR0cDovLzEwLjAuMC4yOjg4MDg"  # the address, base64url


def test_every_character_is_visible_ascii() -> None:
    session_id = ids.mint(KEY, "http://[::1]:8808", b"\xff" * 32)
    assert all(0x21 <= ord(c) <= 0x7E for c in session_id)


def test_two_random_parts_give_two_ids() -> None:
    assert ids.mint(KEY, NODE, RANDOM) != ids.mint(KEY, NODE, bytes(32))


def test_another_fleets_id_names_no_node() -> None:
    other = derive(b"o" * 32).ids
    assert ids.holder(KEY, ids.mint(other, NODE, RANDOM)) is None


@pytest.mark.parametrize("part", [0, 1, 2])
def test_an_altered_id_names_no_node(part: int) -> None:
    """Pointing an id at another node (or changing its random part, or its tag) breaks it."""
    pieces = ids.mint(KEY, NODE, RANDOM).split(".")
    forged = ids.mint(KEY, "http://10.0.0.9:8808", RANDOM).split(".")
    pieces[part] = forged[part] if part == 0 else pieces[part][:-2] + "AA"
    assert ids.holder(KEY, ".".join(pieces)) is None


@pytest.mark.parametrize("session_id", [
    "", "abc", "a.b", "a.b.c.d", "!!.??.**", "é.é.é",
    "x" * 43,  # a single node's id (secrets.token_urlsafe(32))
])
def test_what_is_no_fleet_id_names_no_node(session_id: str) -> None:
    assert ids.holder(KEY, session_id) is None


def test_a_short_secret_is_refused_with_how_to_make_one() -> None:
    with pytest.raises(ValueError, match="openssl rand -base64 32"):
        derive(b" " + b"s" * (MIN_SECRET - 1) + b"\n")
    assert derive(b"s" * MIN_SECRET + b"\n") == derive(b"s" * MIN_SECRET)


def test_each_use_has_its_own_key_and_none_is_printed() -> None:
    keys = derive(b"k" * 32)
    assert len({keys.ids, keys.passes, keys.credentials}) == 3
    assert repr(keys) == "FleetKeys()"
