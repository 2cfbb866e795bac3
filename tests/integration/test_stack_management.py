"""A live ServingStack (the Standard example) on a management cluster of its own, reached the way AWX injects a
Kubernetes credential (K8S_AUTH_HOST, K8S_AUTH_API_KEY, K8S_AUTH_VERIFY_SSL, plus K8S_AUTH_KUBECONFIG/KUBECONFIG),
and a target cluster named by the spec's Kubeconfig secret: two stand-ins. The converge writes only to
the target; the CR, its secret and its status stay on the management cluster. The tests run in order."""

from __future__ import annotations

import base64
import tempfile
from collections import Counter
from pathlib import Path

import pytest
import yaml
from stack_support import REPO, SITE, UPSTREAM, get, manifest, output, releases, stack_vars
from standin.fixtures import running_cluster

pytestmark = [
    pytest.mark.playbook,
    pytest.mark.slow,
    pytest.mark.skipif(not UPSTREAM.is_dir(), reason="needs ../shared/upstream (charts and CRDs for the stand-in)"),
]

API = "infrastructure.modelplane.ai/v1alpha1"
WRITES = {"create", "update", "patch", "apply", "delete", "deletecollection"}


@pytest.fixture(scope="module")
def management(cluster, tmp_path_factory):
    """A second stand-in holding the ServingStack CRD, the live CR and the target's Kubeconfig secret."""
    with running_cluster(tmp_path_factory.mktemp("management"), simulate_controllers=False) as handle:
        handle.kubectl("apply", "-f", str(REPO / "crds" / "servingstacks.infrastructure.modelplane.ai.yaml"))
        doc = manifest()
        doc["spec"]["secrets"] = [s for s in doc["spec"]["secrets"] if s["type"] == "Kubeconfig"]
        kubeconfig = base64.b64encode(Path(cluster.kubeconfig).read_bytes()).decode()
        handle.kubectl("apply", "-f", "-", input=yaml.safe_dump_all([
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "platform"}},
            {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "west-gke-kubeconfig", "namespace": "platform"},
             "type": "Opaque", "data": {"kubeconfig": kubeconfig}},
            doc,
        ]))
        yield handle


def awx_env(management, private: Path) -> dict[str, str]:
    """What an AWX job with a Kubernetes credential for the management cluster has in its environment."""
    return {
        "K8S_AUTH_HOST": management.url,
        "K8S_AUTH_API_KEY": "standin-test-double",
        "K8S_AUTH_VERIFY_SSL": "False",
        "K8S_AUTH_KUBECONFIG": management.kubeconfig,
        "KUBECONFIG": management.kubeconfig,
        "TMPDIR": str(private),
    }


def converge(cluster, management, **more):
    """site.yml on the live CR (no servingstack_kubeconfig): returns the run and the management cluster's writes."""
    extra = stack_vars(cluster, servingstack_name="west-gke-stack", servingstack_namespace="platform", **more)
    del extra["servingstack_definition"], extra["servingstack_kubeconfig"]
    private = Path(tempfile.mkdtemp(dir=cluster.workdir))
    before = management.stats()
    result = cluster.run_playbook(SITE, extra_vars=extra, env={**awx_env(management, private),
                                                               **more.pop("env", {})})
    after = management.stats()
    writes = {key: n for key, n in (Counter(after["resources"]) - Counter(before["resources"])).items()
              if key.split(" ")[0] in WRITES}
    # kubernetes.core leaves its discovery cache (k8srcp-*.json) there; our private files must be gone.
    left = [path.name for path in private.iterdir() if "kubeconfig" in path.name or "servingstack" in path.name]
    assert left == [], f"temporary files were left behind: {left}"
    return result, writes


def live(management) -> dict:
    return get(management, API, "ServingStack", "west-gke-stack", "platform")


# The stand-in counts a /status patch under the resource itself.
STATUS_PATCH = "patch servingstacks.infrastructure.modelplane.ai"


def conditions(doc: dict) -> dict[str, dict]:
    return {condition["type"]: condition for condition in doc["status"]["conditions"]}


def test_a_failed_converge_is_recorded_in_the_live_status(cluster, management):
    generation = live(management)["metadata"]["generation"]
    # An admission webhook denies cert-manager's Deployments: its atomic install fails and is rolled back.
    allow = cluster.api.deny_writes("Deployment", "cert-manager", "mp-cert-manager")
    try:
        result, writes = converge(cluster, management)
    finally:
        allow()
    assert result.rc != 0, output(result)
    assert set(writes) <= {STATUS_PATCH} and writes, writes
    status = live(management)["status"]
    ready, synced = conditions(live(management))["Ready"], conditions(live(management))["Synced"]
    assert (ready["status"], ready["reason"]) == ("False", "CertManagerFailed"), ready
    assert (synced["status"], synced["reason"]) == ("False", "CertManagerFailed"), synced
    assert ready["message"].startswith("cert_manager: "), ready
    assert "denied the request" in ready["message"], ready
    assert "trust_manager: not attempted: it needs cert_manager, which did not converge" in ready["message"], ready
    assert ready["observedGeneration"] == generation == status["observedGeneration"]
    components = {entry["name"]: entry for entry in status["components"]}
    assert components["cert_manager"] == {"name": "cert_manager", "ready": False}, components
    assert components["trust_manager"]["ready"] is False
    assert components["nfd"]["ready"] is True and components["nfd"]["version"], components
    # The gateway converged beside the failure: its address is in the status as before.
    assert status["gateway"]["address"]


def test_the_converge_writes_to_the_target_only(cluster, management):
    result, writes = converge(cluster, management, servingstack_write_status=False)
    assert result.rc == 0, output(result)
    assert writes == {}, writes
    found = releases(cluster)
    assert found and all(release["status"] == "deployed" for release in found.values()), found
    assert releases(management) == {}
    # The live CR was read from the management cluster (the target has no ServingStack CRD at all).
    assert get(cluster, "apiextensions.k8s.io/v1", "CustomResourceDefinition",
               "servingstacks.infrastructure.modelplane.ai") is None
    assert any(key.startswith("get servingstacks") for key in management.stats()["resources"])
    assert get(cluster, "gateway.networking.k8s.io/v1", "Gateway", "inference-gateway", "envoy-gateway-system") \
        or get(cluster, "gateway.networking.k8s.io/v1", "Gateway", "inference-gateway", "modelplane-system")


def test_a_good_converge_is_ready_with_versions_and_keeps_the_transition_times(cluster, management):
    before = conditions(live(management))
    result, writes = converge(cluster, management)
    assert result.rc == 0, output(result)
    assert set(writes) == {STATUS_PATCH}, writes
    doc = live(management)
    ready, synced = conditions(doc)["Ready"], conditions(doc)["Synced"]
    assert (ready["status"], ready["reason"]) == ("True", "Available"), ready
    assert (synced["status"], synced["reason"]) == ("True", "Converged"), synced
    assert ready["observedGeneration"] == doc["metadata"]["generation"] == doc["status"]["observedGeneration"]
    assert synced["lastTransitionTime"] != before["Synced"]["lastTransitionTime"] or \
        before["Synced"]["status"] == "True"
    components = {entry["name"]: entry for entry in doc["status"]["components"]}
    assert list(components) == ["cert_manager", "trust_manager", "nfd", "nvidia_dra", "envoy_gateway", "lws",
                                "prometheus"]
    assert all(entry["ready"] for entry in components.values()), components
    assert components["cert_manager"]["version"] == doc["spec"]["versions"]["certManager"]
    assert components["envoy_gateway"]["version"] == doc["spec"]["versions"]["envoyGateway"]
    # Nothing changed: the status is not written again, and the transition times stay.
    result, writes = converge(cluster, management)
    assert result.rc == 0, output(result)
    assert writes == {}, writes
    assert conditions(live(management)) == conditions(doc)
