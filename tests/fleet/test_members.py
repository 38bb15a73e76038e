"""A node's address, and which addresses are the fleet's."""

from __future__ import annotations

import pytest

from bridge.fleet import members


@pytest.mark.parametrize(("given", "address"), [
    ("http://10.0.0.2:8808", "http://10.0.0.2:8808"),
    ("HTTP://Node-A.example:8080/", "http://node-a.example:8080"),
    ("https://[::1]:443", "https://[::1]:443"),
])
def test_an_address_is_normalized(given: str, address: str) -> None:
    assert members.address(given) == address


@pytest.mark.parametrize("given", ["10.0.0.2:8808", "http://10.0.0.2", "http://h:8808/mcp",
                                   "ftp://h:21", "http://h:99999", "http://u@h:1", 8808])
def test_what_is_no_address_is_refused_with_an_example(given: object) -> None:
    with pytest.raises(ValueError, match=r"http://10\.0\.0\.2:8808"):
        members.address(given)


def test_a_listed_node_or_one_the_fleets_name_resolves_to_is_the_fleets() -> None:
    nodes = ("http://10.0.0.2:8808", "http://10.0.0.3:8808")
    assert members.listed("http://10.0.0.3:8808", nodes, None)
    assert not members.listed("http://10.0.0.4:8808", nodes, None)
    assert members.listed("http://10.0.0.4:8808", (), frozenset({"10.0.0.4"}))
    assert not members.listed("http://10.0.0.5:8808", (), frozenset({"10.0.0.4"}))
    assert members.host_of("http://[::1]:8808") == "::1"
    assert members.port_of("http://[::1]:8808") == 8808


def test_a_node_s_peers_are_the_others_listed_or_resolved_on_its_port() -> None:
    nodes = ("http://10.0.0.2:8808", "http://10.0.0.3:8808", "http://10.0.0.4:8808")
    assert members.peers("http://10.0.0.3:8808", nodes, None) == (
        "http://10.0.0.2:8808", "http://10.0.0.4:8808")
    resolved = frozenset({"10.0.0.9", "10.0.0.2", "fd00::5"})
    assert members.peers("http://10.0.0.2:8808", (), resolved) == (
        "http://10.0.0.9:8808", "http://[fd00::5]:8808")
    assert members.peers("http://10.0.0.2:8808", (), frozenset()) == ()
