"""Standard-stack tests that each need a stand-in of their own (fresh_cluster), apart from test_stack_standard.py's
shared one, so that the two test workers can share them out: teardown with servingstack_remove_crds, and the upgrade
that moves the Gateway to modelplane-system."""

from __future__ import annotations

import json

import pytest
from stack_support import (
    GATEWAY_NS,
    LEGACY_GATEWAY_NS,
    SITE,
    STANDARD_CRDS,
    STANDARD_RELEASES,
    TEARDOWN,
    UPSTREAM,
    crd_names,
    get,
    helm_calls,
    listed,
    manifest,
    output,
    releases,
    stack_vars,
    write_verbs,
)

pytestmark = [
    pytest.mark.playbook,
    pytest.mark.slow,
    pytest.mark.skipif(not UPSTREAM.is_dir(), reason="needs ../shared/upstream (charts and CRDs for the stand-in)"),
]


def test_teardown_with_remove_crds_removes_every_crd_of_ours_and_only_those(fresh_cluster, tmp_path):
    cluster = fresh_cluster
    assert crd_names(cluster) == set(), "the stand-in starts without CRDs"
    converged = cluster.run_playbook(SITE, extra_vars=stack_vars(cluster))
    assert converged.rc == 0, output(converged)
    installed = crd_names(cluster)
    assert set(STANDARD_CRDS) <= installed, sorted(set(STANDARD_CRDS) - installed)
    # A user's CRD that no chart of ours ships stays.
    cluster.kubectl("apply", "-f", "-", input=json.dumps({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
                 "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
                 "versions": [{"name": "v1", "served": True, "storage": True,
                               "schema": {"openAPIV3Schema": {"type": "object"}}}]}}))

    log = tmp_path / "helm.log"
    remove = stack_vars(cluster, servingstack_remove_crds=True)
    rv = cluster.api.rv
    preview = cluster.run_playbook(TEARDOWN, extra_vars=remove, check=True, env=cluster.helm_spy(log))
    assert preview.rc == 0, output(preview)
    assert cluster.api.rv == rv, f"check mode changed the cluster; write requests: {write_verbs(preview)}"
    shown = [argv for argv in helm_calls(log) if argv[:2] == ["show", "crds"]]
    # Check mode reads every installed release's chart (read-only) to preview the deletions.
    assert len(shown) == len(STANDARD_RELEASES) and all("--version" in argv for argv in shown), shown
    # Through the chart mirror: charts by name from the test charts' repository.
    assert {argv[2] for argv in shown} >= {"lws", "cert-manager"} and all("--repo" in argv for argv in shown), shown

    result = cluster.run_playbook(TEARDOWN, extra_vars=remove)
    assert result.rc == 0, output(result)
    assert releases(cluster) == {}
    assert crd_names(cluster) == {"widgets.example.com"}, sorted(crd_names(cluster))

    rv = cluster.api.rv
    log.unlink()
    again = cluster.run_playbook(TEARDOWN, extra_vars=remove, env=cluster.helm_spy(log))
    assert again.rc == 0, output(again)
    assert again.changed == 0, output(again)
    assert cluster.api.rv == rv, write_verbs(again)
    assert helm_calls(log) == [], "a second teardown runs no helm"


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
