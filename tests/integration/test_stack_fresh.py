"""Standard-stack tests that need a cluster of their own (fresh_cluster), apart from test_stack_standard.py's
shared one, so that the two test workers can share them out: the upgrade that moves the Gateway to
modelplane-system."""

from __future__ import annotations

import pytest
from cluster.fixtures import SYSTEM_AGENTS
from stack_support import (
    GATEWAY_NS,
    LEGACY_GATEWAY_NS,
    SITE,
    UPSTREAM,
    describe,
    get,
    listed,
    manifest,
    output,
    stack_vars,
)

pytestmark = [
    pytest.mark.playbook,
    pytest.mark.slow,
    pytest.mark.skipif(not UPSTREAM.is_dir(), reason="needs ../shared/upstream (charts and CRDs)"),
]


def test_an_upgrade_moves_the_gateway_to_modelplane_system_without_a_gap(fresh_cluster):
    """A stack converged by an earlier version (Gateway, EnvoyProxy, serving certificate and client CAs in
    Envoy Gateway's namespace) ends with one Gateway, in modelplane-system: the new one is Programmed before
    the old one is deleted, so one of the two serves throughout."""
    from test_stack_variants import CAS

    cluster = fresh_cluster
    spec = manifest(gateway={"hostname": "west.inference.example.com", "clientCAs": CAS[:1],
                             "listeners": [{"name": "http", "port": 80, "protocol": "HTTP"}]})
    # What an earlier version made: the role with the Gateway in Envoy Gateway's own namespace.
    old = cluster.run_playbook(SITE, extra_vars=stack_vars(cluster, spec,
                                                           envoy_gateway_gateway_namespace=LEGACY_GATEWAY_NS))
    assert old.rc == 0, output(old)
    kinds = [("gateway.networking.k8s.io/v1", "Gateway"), ("gateway.envoyproxy.io/v1alpha1", "EnvoyProxy"),
             ("gateway.envoyproxy.io/v1alpha1", "ClientTrafficPolicy"), ("cert-manager.io/v1", "Certificate")]

    def ours(namespace: str) -> dict[str, list[str]]:
        found = {kind: sorted(o["metadata"]["name"] for o in listed(cluster, api, kind, namespace))
                 for api, kind in kinds}
        found["ConfigMap"] = sorted(c["metadata"]["name"] for c in listed(
            cluster, "v1", "ConfigMap", namespace, label_selector="app.kubernetes.io/managed-by=modelplane.serving"))
        found["Secret"] = [name for name in ["mp-gateway-tls"] if get(cluster, "v1", "Secret", name, namespace)]
        return found

    layout = {"Gateway": ["inference-gateway"], "EnvoyProxy": ["inference-gateway"],
              "ClientTrafficPolicy": ["inference-gateway-client-cas"], "Certificate": ["mp-gateway-tls"],
              "ConfigMap": ["inference-gateway-client-cas", f"mp-client-ca-{CAS[0]['name']}"],
              "Secret": ["mp-gateway-tls"]}
    assert ours(LEGACY_GATEWAY_NS) == layout
    assert get(cluster, "gateway.networking.k8s.io/v1", "Gateway", "inference-gateway", GATEWAY_NS) is None
    mark = cluster.audit_mark()

    upgraded = cluster.run_playbook(SITE, extra_vars=stack_vars(cluster, spec))
    assert upgraded.rc == 0, output(upgraded)
    assert [(gw["metadata"]["namespace"], gw["metadata"]["name"])
            for gw in listed(cluster, "gateway.networking.k8s.io/v1", "Gateway")] == [(GATEWAY_NS, "inference-gateway")]
    assert ours(GATEWAY_NS) == layout
    assert ours(LEGACY_GATEWAY_NS) == {kind: [] for kind in layout}
    assert get(cluster, "gateway.networking.k8s.io/v1", "GatewayClass", "envoy")["spec"]["parametersRef"]["namespace"] \
        == GATEWAY_NS
    # The order, from kube-apiserver's audit log: the run creates the new Gateway, Envoy Gateway (the operator
    # double, which writes Accepted and Programmed=True with the address in one status write) programs it, and
    # only then does the run delete the old one.
    events = [e for e in cluster.audit_events(mark, everyone=True) if e["objectRef"].get("resource") == "gateways"
              and e["objectRef"].get("apiGroup") == "gateway.networking.k8s.io" and e["verb"] in
              ("create", "update", "patch", "delete") and (e.get("responseStatus") or {}).get("code", 500) < 300
              and "dryRun=" not in e.get("requestURI", "")]

    def when(verbs: tuple[str, ...], namespace: str, agents: tuple[str, ...] | None,
             subresource: str | None = None) -> list[str]:
        """When such writes by those user agents (None: the run's, every agent but the cluster's and the double's)
        completed (a delete: when it was received)."""
        return [e["requestReceivedTimestamp"] if e["verb"] == "delete" else e["stageTimestamp"] for e in events
                if e["verb"] in verbs and e["objectRef"].get("namespace") == namespace
                and e["objectRef"].get("subresource") == subresource
                and (str(e.get("userAgent", "")).startswith(agents) if agents
                     else not str(e.get("userAgent", "")).startswith(SYSTEM_AGENTS))]

    created = when(("create", "patch", "update"), GATEWAY_NS, None)  # a server-side apply is a patch
    programmed = when(("patch",), GATEWAY_NS, ("operator-double",), "status")
    deleted = when(("delete",), LEGACY_GATEWAY_NS, None)
    shown = [describe(e) for e in events]
    assert created and programmed and deleted, shown
    # Timestamps are RFC 3339 in UTC with microseconds: they compare as strings.
    assert created[0] < programmed[0] < deleted[0], shown
    # The status names the new Gateway's address; a second run changes nothing.
    assert "address: 203.0.113.10" in upgraded.stdout, output(upgraded)
    again = cluster.run_playbook(SITE, extra_vars=stack_vars(cluster, spec))
    assert again.rc == 0 and again.changed == 0, output(again)
