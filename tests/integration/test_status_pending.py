"""Why the gateway has no address, as the servingstack role writes it to a live ServingStack's status:
the role's finish step reads the Gateway and its Services from a cluster without the operator double (nothing
assigns an address) and writes Ready=False / GatewayAddressPending with the reason."""

from __future__ import annotations

import pytest
import yaml
from stack_support import REPO, UPSTREAM, get, manifest

pytestmark = [
    pytest.mark.playbook,
    pytest.mark.skipif(not UPSTREAM.is_dir(), reason="needs ../shared/upstream (the Gateway API CRDs)"),
]

GATEWAY_CRD = UPSTREAM / "gateway-api" / "v1.5.1" / "standard" / "gateways.gateway.networking.k8s.io.yaml"
NS = "envoy-gateway-system"
API = "infrastructure.modelplane.ai/v1alpha1"
LABELS = {"gateway.envoyproxy.io/owning-gateway-name": "inference-gateway",
          "gateway.envoyproxy.io/owning-gateway-namespace": NS}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    from cluster.fixtures import running_cluster

    with running_cluster(tmp_path_factory.mktemp("pending"), operator_double=False) as handle:
        doc = manifest()
        doc["spec"]["secrets"] = [s for s in doc["spec"]["secrets"] if s["type"] == "Kubeconfig"]
        handle.kubectl("apply", "-f", str(REPO / "crds" / "servingstacks.infrastructure.modelplane.ai.yaml"))
        handle.kubectl("apply", "--server-side", "-f", str(GATEWAY_CRD))
        # The API serves a new CRD's kind only once it is Established.
        handle.wait_established("servingstacks.infrastructure.modelplane.ai", "gateways.gateway.networking.k8s.io")
        handle.kubectl("apply", "-f", "-", input=yaml.safe_dump_all([
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "platform"}},
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}},
            doc,
            {"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
             "metadata": {"name": "inference-gateway", "namespace": NS},
             "spec": {"gatewayClassName": "envoy", "listeners": [{"name": "http", "port": 80, "protocol": "HTTP"}]}},
            {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "envoy-inference-gateway", "namespace": NS,
                                                                 "labels": LABELS},
             "spec": {"type": "LoadBalancer", "selector": {"app": "envoy"}, "ports": [{"port": 80}]}},
        ]))
        yield handle


def report(cluster, tmp_path) -> dict:
    """The role's last steps (status.yml reads the gateway, finish.yml writes the status) for the live ServingStack,
    its one component converged; returns the Ready condition."""
    playbook = tmp_path / "finish.yml"
    playbook.write_text(yaml.safe_dump([{
        "name": "Report a stack's status.", "hosts": "localhost", "gather_facts": False,
        "tasks": [{"name": f"Run {step}.", "ansible.builtin.include_role": {
            "name": "modelplane.serving.servingstack", "tasks_from": step}} for step in ("status.yml", "finish.yml")],
    }]))
    result = cluster.run_playbook(playbook, extra_vars={
        "servingstack_name": "west-gke-stack", "servingstack_namespace": "platform",
        "servingstack_target_kubeconfig": cluster.kubeconfig,
        "servingstack_spec": {"gateway": {}},
        "servingstack_manifest": {"metadata": {"generation": 1}},
        "servingstack_plan": [{"name": "envoy_gateway", "version": "v1.8.4"}],
        "servingstack_outcomes": {"envoy_gateway": {"state": "converged"}}, "servingstack_prune": [],
        # The Gateway of an earlier version, in Envoy Gateway's namespace, as a play would set it.
        "envoy_gateway_gateway_namespace": NS,
    })
    assert result.rc == 0, result.stdout[-4000:] + result.stderr[-2000:]
    live = get(cluster, API, "ServingStack", "west-gke-stack", "platform")
    return {condition["type"]: condition for condition in live["status"]["conditions"]}["Ready"]


def test_a_load_balancer_service_without_ingress_means_no_load_balancer_controller(cluster, tmp_path):
    ready = report(cluster, tmp_path)
    assert (ready["status"], ready["reason"]) == ("False", "GatewayAddressPending"), ready
    assert ready["message"] == (
        f"the LoadBalancer Service {NS}/envoy-inference-gateway of the Gateway has no ingress address: "
        "the cluster has no load-balancer controller (a cloud provider's, MetalLB, cloud-provider-kind) to assign one")


def test_a_gateway_not_programmed_gives_its_condition_message(cluster, tmp_path):
    cluster.kubectl("delete", "service", "envoy-inference-gateway", "-n", NS)
    gateway = cluster.dynamic().resources.get(api_version="gateway.networking.k8s.io/v1", kind="Gateway")
    gateway.status.patch(name="inference-gateway", namespace=NS, content_type="application/merge-patch+json", body={
        "status": {"conditions": [{"type": "Programmed", "status": "False", "reason": "Invalid",
                                   "message": "listener http: no route kinds are supported", "observedGeneration": 1,
                                   "lastTransitionTime": "2026-12-02T21:00:00Z"}]}})
    first = report(cluster, tmp_path)
    assert (first["status"], first["reason"]) == ("False", "GatewayAddressPending"), first
    assert first["message"] == (f"the Gateway {NS}/inference-gateway is not Programmed: "
                                "listener http: no route kinds are supported")
