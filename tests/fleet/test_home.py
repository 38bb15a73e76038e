"""A tenant's home: every node ranks the fleet alike for a tenant; tenants spread over the
nodes; a node lost (or gone) moves only the tenants it was home to."""

from __future__ import annotations

import hashlib
from collections import Counter

from bridge.fleet import home

NODES = tuple(f"http://10.0.0.{n}:8808" for n in range(2, 6))
TENANTS = [hashlib.sha256(f"token-{n}".encode()).hexdigest() for n in range(400)]


def test_the_order_is_every_node_once_the_same_whatever_order_the_nodes_are_given() -> None:
    order = home.ranked(TENANTS[0], NODES)
    assert sorted(order) == sorted(NODES)
    assert home.ranked(TENANTS[0], reversed(NODES)) == order
    assert home.ranked(TENANTS[0], (*NODES, NODES[0])) == order
    assert order[0] == max(NODES, key=lambda node: hashlib.sha256(
        f"{TENANTS[0]}\n{node}".encode()).digest())


def test_the_token_less_tenant_has_a_home_of_its_own_label() -> None:
    assert home.ranked(None, NODES) == home.ranked(home.TOKENLESS, NODES)
    assert home.ranked(None, NODES[:1]) == NODES[:1]


def test_tenants_spread_over_the_nodes() -> None:
    homes = Counter(home.ranked(tenant, NODES)[0] for tenant in TENANTS)
    assert set(homes) == set(NODES)
    assert min(homes.values()) >= 60  # 100 each on average; far from all on one


def test_passing_over_a_lost_node_moves_only_its_tenants_to_their_next_node() -> None:
    lost = NODES[1]
    for tenant in TENANTS:
        order = home.ranked(tenant, NODES)
        without = home.ranked(tenant, (node for node in NODES if node != lost))
        assert without == tuple(node for node in order if node != lost)
        if order[0] != lost:
            assert without[0] == order[0]  # its home is kept


def test_a_node_joining_takes_only_the_tenants_it_ranks_first() -> None:
    joined = "http://10.0.0.9:8808"
    moved = [tenant for tenant in TENANTS
             if home.ranked(tenant, (*NODES, joined))[0] != home.ranked(tenant, NODES)[0]]
    assert moved and all(home.ranked(tenant, (*NODES, joined))[0] == joined
                         for tenant in moved)
    assert len(moved) < len(TENANTS) // 3  # about a fifth
