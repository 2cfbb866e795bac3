"""Standard-stack tests that need a stand-in of their own (fresh_cluster), apart from test_stack_standard.py's
shared one, so that the two test workers can share them out: the upgrade that moves the Gateway to
modelplane-system."""

from __future__ import annotations

import pytest
from stack_support import (
    GATEWAY_NS,
    LEGACY_GATEWAY_NS,
    SITE,
    UPSTREAM,
    get,
    listed,
    manifest,
    output,
    stack_vars,
)

pytestmark = [
    pytest.mark.playbook,
    pytest.mark.slow,
    pytest.mark.skipif(not UPSTREAM.is_dir(), reason="needs ../shared/upstream (charts and CRDs for the stand-in)"),
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
    floor = cluster.api.rv

    upgraded = cluster.run_playbook(SITE, extra_vars=stack_vars(cluster, spec))
    assert upgraded.rc == 0, output(upgraded)
    assert [(gw["metadata"]["namespace"], gw["metadata"]["name"])
            for gw in listed(cluster, "gateway.networking.k8s.io/v1", "Gateway")] == [(GATEWAY_NS, "inference-gateway")]
    assert ours(GATEWAY_NS) == layout
    assert ours(LEGACY_GATEWAY_NS) == {kind: [] for kind in layout}
    assert get(cluster, "gateway.networking.k8s.io/v1", "GatewayClass", "envoy")["spec"]["parametersRef"]["namespace"] \
        == GATEWAY_NS
    # The order, from the stand-in's watch history: the new Gateway Programmed, then the old one deleted.
    events = [(rv, event, obj) for rv, (group, plural), event, obj, _extra in cluster.api.events
              if (group, plural) == ("gateway.networking.k8s.io", "gateways") and rv > floor]
    programmed = [rv for rv, _event, obj in events if obj["metadata"]["namespace"] == GATEWAY_NS and any(
        c["type"] == "Programmed" and c["status"] == "True" for c in (obj.get("status") or {}).get("conditions", []))]
    deleted = [rv for rv, event, obj in events
               if event == "DELETED" and obj["metadata"]["namespace"] == LEGACY_GATEWAY_NS]
    assert programmed and deleted and programmed[0] < deleted[0], events
    # The status names the new Gateway's address; a second run changes nothing.
    assert "address: 203.0.113.10" in upgraded.stdout, output(upgraded)
    again = cluster.run_playbook(SITE, extra_vars=stack_vars(cluster, spec))
    assert again.rc == 0 and again.changed == 0, output(again)
