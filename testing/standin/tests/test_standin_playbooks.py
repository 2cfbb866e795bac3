"""kubernetes.core.k8s / k8s_info through ansible-playbook against the stand-in."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from standin.fixtures import UPSTREAM
from standin_http import Api

HERE = Path(__file__).parent / "playbooks"
GATEWAY_CRDS = UPSTREAM / "gateway-api" / "v1.5.1" / "experimental"

pytestmark = [pytest.mark.playbook,
              pytest.mark.skipif(not GATEWAY_CRDS.is_dir(), reason="../shared/upstream/gateway-api is absent")]


@pytest.fixture(scope="module")
def api(cluster):
    api = Api(cluster.url)
    for path in sorted(GATEWAY_CRDS.glob("*.yaml")):
        assert api.post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
                        yaml.safe_load(path.read_text())).code == 201
    return api


@pytest.fixture(scope="module")
def converged(cluster, api):
    first = cluster.run_playbook(HERE / "converge.yml")
    second = cluster.run_playbook(HERE / "converge.yml")
    return first, second


def test_converge_then_second_run_changes_nothing(converged):
    first, second = converged
    assert first.rc == 0, first.stdout + first.stderr
    assert first.recap["localhost"]["changed"] == 5 and first.recap["localhost"]["failed"] == 0
    assert second.rc == 0, second.stdout
    assert second.recap["localhost"]["changed"] == 0, second.stdout


def test_converge_request_counts(converged):
    first, second = converged
    assert first.requests["verbs"].get("create", 0) == 4 and first.requests["verbs"].get("apply") == 1
    assert second.requests["verbs"].get("create", 0) == 0
    # state=present on an existing Gateway: strategic merge is refused (415) and merge patch follows.
    assert second.requests["resources"].get("patch gateways.gateway.networking.k8s.io") == 2
    assert second.requests["verbs"].get("apply") == 1  # the server-side applied Service


def test_objects_are_stored_as_applied(converged, api):
    deploy = api.get("/apis/apps/v1/namespaces/converge/deployments/web").body
    assert deploy["status"]["availableReplicas"] == 2, "wait: true saw the simulated deployment controller"
    assert "kubectl.kubernetes.io/last-applied-configuration" in deploy["metadata"]["annotations"]
    assert deploy["metadata"]["generation"] == 1
    svc = api.get("/api/v1/namespaces/converge/services/web").body
    assert svc["spec"]["ports"][0]["targetPort"] == 80 and svc["spec"]["clusterIP"].startswith("10.96.")


def test_check_mode_stores_nothing(cluster, api, converged):
    before = api.get("/api/v1/namespaces/converge/configmaps/settings").body
    result = cluster.run_playbook(HERE / "check.yml", check=True)
    assert result.rc == 0, result.stdout
    assert result.recap["localhost"]["changed"] == 2
    assert api.get("/api/v1/namespaces/default/configmaps/phantom").code == 404
    after = api.get("/api/v1/namespaces/converge/configmaps/settings").body
    assert after == before, "check mode must not write"
    assert sum(result.requests["verbs"].get(v, 0) for v in ("create", "patch", "update")) >= 1, \
        "check mode used server-side dry run"


def test_invalid_gateway_is_refused_naming_the_field(cluster, api):
    result = cluster.run_playbook(HERE / "invalid.yml")
    assert result.rc != 0 and result.recap["localhost"]["failed"] == 1
    assert "422" in result.stdout
    assert "spec.listeners[0].port: Invalid value: 0" in result.stdout
    assert api.get("/apis/gateway.networking.k8s.io/v1/namespaces/default/gateways/broken").code == 404


def test_absent_with_wait_removes_everything(cluster, api, converged):
    result = cluster.run_playbook(HERE / "absent.yml")
    assert result.rc == 0, result.stdout
    assert result.recap["localhost"]["changed"] == 2
    assert api.get("/api/v1/namespaces/converge").code == 404
    assert api.get("/apis/gateway.networking.k8s.io/v1/namespaces/converge/gateways").body["items"] == []
    again = cluster.run_playbook(HERE / "absent.yml")
    assert again.rc == 0 and again.recap["localhost"]["changed"] == 0
