"""The preflight on a real control plane (kube-apiserver v1.36): a cluster that serves no resource.k8s.io API is
refused before anything installs, in check mode too; against the real /version, /apis and Nodes, the lookup reads
the server's version, refuses it when the pinned charts need a newer one, and warns of the load balancer while no
node shows a cloud provider."""

from __future__ import annotations

import json
from typing import Any

import pytest
from ansible.errors import AnsibleLookupError
from cluster.fixtures import running_cluster
from stack_support import (
    SITE,
    UPSTREAM,
    crd_names,
    example_plan,
    helm_calls,
    listed,
    output,
    releases,
    stack_vars,
)

pytestmark = [
    pytest.mark.playbook,
    pytest.mark.slow,
    pytest.mark.skipif(not UPSTREAM.is_dir(), reason="needs ../shared/upstream (the test charts)"),
]

# kube-apiserver v1.36 serves resource.k8s.io/v1 by default and can serve v1beta2, v1beta1 and v1alpha3
# (pkg/controlplane/instance.go): every one of them off, so no DRA API is left.
NO_DRA = ",".join(f"resource.k8s.io/{version}=false" for version in ("v1", "v1beta2", "v1beta1", "v1alpha3"))
REFUSAL = ("cluster serves no resource.k8s.io API (Dynamic Resource Allocation), which the NVIDIA DRA driver "
           "(dra-driver-nvidia-gpu 0.4.0) needs (resource.k8s.io/v1, v1beta2 or v1beta1)")


def served_groups(handle: Any) -> set[str]:
    return {group["name"] for group in json.loads(handle.kubectl("get", "--raw", "/apis").stdout)["groups"]}


def cluster_state(handle: Any) -> dict[str, Any]:
    """What a converge would have changed first: namespaces, CRDs, Secrets (Helm's release records, the converge
    record)."""
    return {"namespaces": {ns["metadata"]["name"] for ns in listed(handle, "v1", "Namespace")},
            "crds": crd_names(handle),
            "secrets": {(secret["metadata"]["namespace"], secret["metadata"]["name"])
                        for secret in listed(handle, "v1", "Secret")}}


def test_a_cluster_without_dra_is_refused_before_anything_installs_in_check_mode_too(tmp_path, warned):
    # No audit log: with every resource.k8s.io version off, kube-apiserver 1.36 (whose DRA feature gate is locked on)
    # fails its informer-sync readiness check and polls /readyz without pause, so the log never settles.
    with running_cluster(tmp_path / "no-dra", runtime_config=NO_DRA, audit=False) as target:
        assert "resource.k8s.io" not in served_groups(target)
        before = cluster_state(target)
        spy = tmp_path / "helm.log"
        for check in (True, False):
            result = target.run_playbook(SITE, extra_vars=stack_vars(target), env=target.helm_spy(spy), check=check)
            assert result.rc != 0, output(result)
            # The converge fails naming the problem and its fix (finish.yml's last task)...
            assert REFUSAL in result.stdout, output(result)
            assert "serve resource.k8s.io/v1 (on by default from Kubernetes 1.34" in result.stdout
        # ...before it changed anything: no chart reached helm, no release, namespace, CRD or Secret was made.
        assert [call for call in helm_calls(spy) if call[:1] in (["install"], ["upgrade"], ["pull"])] == []
        assert releases(target) == {}
        assert cluster_state(target) == before
        # The one problem this cluster has, as the lookup reads it.
        found = preflight_lookup(target, refuse=False)
        assert found["kubernetes"] == server_version(target)
        assert [problem[:len(REFUSAL)] for problem in found["problems"]] == [REFUSAL]


# --------------------------------------------------------------------------- the lookup against the real server


def preflight_lookup(handle: Any, **options: Any) -> dict[str, Any]:
    from ansible.plugins.loader import lookup_loader

    plugin = lookup_loader.get("modelplane.serving.servingstack_preflight")
    [found] = plugin.run([], variables={}, plan=example_plan(), kubeconfig=handle.kubeconfig, **options)
    return found


@pytest.fixture
def warned(monkeypatch) -> list[str]:
    from ansible_collections.modelplane.serving.plugins.lookup import servingstack_preflight

    seen: list[str] = []
    monkeypatch.setattr(servingstack_preflight.display, "warning", lambda message, **_: seen.append(message))
    return seen


def server_version(handle: Any) -> str:
    return json.loads(handle.kubectl("get", "--raw", "/version").stdout)["gitVersion"]


def test_the_real_server_passes_with_its_version_and_its_dra_api(cluster, warned):
    found = preflight_lookup(cluster)
    assert found["kubernetes"] == server_version(cluster)
    assert found["kubernetes"].startswith("v1.36.")
    assert found["problems"] == []
    assert "resource.k8s.io" in served_groups(cluster)


def test_the_real_servers_version_is_refused_by_a_newer_floor(cluster, warned, monkeypatch):
    """The too-old path with the server's own /version: the DRA driver's floor raised past it."""
    from ansible_collections.modelplane.serving.plugins.module_utils.servingstack import preflight

    monkeypatch.setitem(preflight.CHART_KUBE_VERSIONS, "dra-driver-nvidia-gpu", ("0.4.0", ">=1.99.0-0"))
    with pytest.raises(AnsibleLookupError) as refused:
        preflight_lookup(cluster)
    assert str(refused.value) == (
        f"cluster kubernetes {server_version(cluster)} is older than v1.99.0, the oldest the pinned charts support "
        "(dra-driver-nvidia-gpu 0.4.0: >=1.99.0-0): upgrade the cluster to v1.99.0 or later")


def test_nodes_without_a_cloud_provider_warn_and_one_with_a_provider_id_does_not(cluster, warned):
    nodes = json.loads(cluster.kubectl("get", "nodes", "-o", "json").stdout)["items"]
    # kwok's nodes: no provider ID, no ExternalIP.
    assert nodes and not any(node["spec"].get("providerID") for node in nodes)
    found = preflight_lookup(cluster)
    assert [warning[:60] for warning in found["warnings"]] == [
        "the cluster may have no load-balancer controller: no node ha"]
    assert warned == found["warnings"]

    name = nodes[0]["metadata"]["name"]
    cluster.kubectl("patch", "node", name, "--type", "merge", "-p", json.dumps({"spec": {"providerID": f"kwok://{name}"}}))
    warned.clear()
    assert preflight_lookup(cluster)["warnings"] == [] and warned == []
