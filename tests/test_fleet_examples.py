"""The fleet's example configurations (config/fleet/) hold together with the bridge's settings
and with how a node stops: the Kubernetes example's configuration is one the bridge accepts,
and its pods are given time for the drain and the server's end before the kubelet's SIGKILL;
the balancers send a request the next node's way only when nothing was sent (a POST is no
idempotent request) and take a node out by its /readyz. Without a cluster: the Kubernetes
objects' schemas are checked by hand with `kubernetes-validate --strict` (kubectl's
`apply --dry-run=client` needs a cluster's API to map the kinds)."""

from __future__ import annotations

import re
import textwrap
import tomllib
from pathlib import Path

from bridge.config import validate
from bridge.errors import ConfigError
from bridge.shell.settings import DaemonConfig, Timing

EXAMPLES = Path(__file__).resolve().parents[1] / "config" / "fleet"
KUBERNETES = (EXAMPLES / "kubernetes.yaml").read_text()
MARGIN_S = 5
"""Seconds beyond the drain and the server's end, for the pod's own exit."""


def configured() -> dict[str, object]:
    """The ConfigMap's mcp-rosetta.toml, as the bridge reads it."""
    block = KUBERNETES.split("mcp-rosetta.toml: |\n", 1)[1].split("\n---", 1)[0]
    return validate(tomllib.loads(textwrap.dedent(block)), "kubernetes.yaml", ConfigError)


def test_the_kubernetes_pods_outlive_their_drain_and_their_server_s_end() -> None:
    values = configured()

    def seconds(key: str, default: float) -> float:
        value = values.get(key, default)
        assert isinstance(value, int | float)
        return float(value)

    needed = seconds("drain_grace", DaemonConfig().drain_grace) \
        + seconds("shutdown_grace", Timing().shutdown_grace) \
        + seconds("kill_grace", Timing().kill_grace) + MARGIN_S
    [grace] = re.findall(r"terminationGracePeriodSeconds: (\d+)", KUBERNETES)
    assert int(grace) >= needed


def test_the_kubernetes_probes_ask_readyz_for_readiness_and_healthz_for_life() -> None:
    assert re.search(r"readinessProbe:.*\n\s+httpGet: \{path: /readyz, port: http\}",
                     KUBERNETES)
    assert re.search(r"livenessProbe:.*\n\s+httpGet: \{path: /healthz, port: http\}",
                     KUBERNETES)
    assert "publishNotReadyAddresses: true" in KUBERNETES  # a draining pod is still forwarded to


def test_the_balancers_retry_only_what_was_not_sent_and_check_readyz() -> None:
    nginx = (EXAMPLES / "nginx.conf").read_text()
    [retry] = re.findall(r"^\s*proxy_next_upstream ([^;]*);", nginx, flags=re.M)
    assert "error" in retry.split() and "non_idempotent" not in retry
    haproxy = (EXAMPLES / "haproxy.cfg").read_text()
    assert "option httpchk GET /readyz" in haproxy
    assert "option redispatch" in haproxy
    assert "retry-on" not in haproxy  # its default: a connection that failed, nothing sent
