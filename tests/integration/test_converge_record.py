"""The converge record on the real control plane: a re-run with nothing changed skips the components, and a change
the record can see (a deleted or edited object, a release upgraded outside the collection, another setting) makes the
components converge again; teardown drops the record and every release and object of ours, but no CRD. The tests
share one cluster and run in order."""

from __future__ import annotations

import base64
import json
import re
import subprocess

import pytest
from stack_support import (
    GATEWAY_NS,
    SITE,
    STANDARD_CRDS,
    TEARDOWN,
    UPSTREAM,
    crd_names,
    get,
    helm_calls,
    listed,
    output,
    releases,
    stack_vars,
    write_verbs,
)

pytestmark = [
    pytest.mark.playbook,
    pytest.mark.slow,
    pytest.mark.skipif(not UPSTREAM.is_dir(), reason="needs ../shared/upstream (the test charts' data and the CRDs)"),
]

GATEWAY = ("gateway.networking.k8s.io/v1", "Gateway", "inference-gateway", GATEWAY_NS)
LANES = "TASK [Converge this lane's components.]"


def kept(cluster) -> dict | None:
    found = get(cluster, "v1", "Secret", "modelplane-serving-converged", "kube-system")
    if found is None:
        return None
    assert found["type"] == "modelplane.ai/converge-record"
    return json.loads(base64.b64decode(found["data"]["record"]))


def converge(cluster, *, check: bool = False, **more):
    result = cluster.run_playbook(SITE, extra_vars=stack_vars(cluster, **more), check=check)
    assert result.rc == 0, output(result)
    return result


def said(result) -> str:
    """Why the run converged the components ('' when it skipped them), its output's line breaks undone."""
    found = re.search(r"The components converge: (.+?)\.['\"]?(?:\s|$)", " ".join(result.stdout.split()))
    return found.group(1) if found else ""


def skipped(result) -> bool:
    """Whether the run skipped the components: no lane converged, and no reason was given to."""
    return LANES not in result.stdout and said(result) == ""


def test_a_converge_records_its_releases_and_objects(cluster):
    first = converge(cluster)
    assert said(first) == "the cluster has no record of an earlier converge", output(first)
    record = kept(cluster)
    assert record is not None, output(first)
    installed = releases(cluster)
    assert {key: (found["revision"], found["status"]) for key, found in record["releases"].items()} == {
        f"{found['namespace']}/{name}": (found["revision"], "deployed") for name, found in installed.items()}, installed
    gateway = get(cluster, *GATEWAY)
    [noted] = [found for found in record["objects"] if found["kind"] == "Gateway"]
    # The converge waited for it to be programmed: a re-run checks it still is.
    assert noted == {"apiVersion": GATEWAY[0], "kind": "Gateway", "name": "inference-gateway", "namespace": GATEWAY_NS,
                     "uid": gateway["metadata"]["uid"], "generation": gateway["metadata"]["generation"],
                     "ready": {"type": "Programmed", "status": "True", "reason": None}}, noted
    kinds = {found["kind"] for found in record["objects"]}
    assert {"Namespace", "CustomResourceDefinition", "GatewayClass", "EnvoyProxy", "Bundle"} <= kinds, kinds
    # cert_manager's probe (an Issuer and a Certificate) was created and deleted again: not part of what is left.
    assert not [found for found in record["objects"] if found["name"] == "mp-webhook-probe"], record["objects"]
    assert all(get(cluster, found["apiVersion"], found["kind"], found["name"], found.get("namespace"))
               for found in record["objects"]), record["objects"]


def test_a_re_run_with_nothing_changed_skips_the_components_and_writes_nothing(cluster):
    result = converge(cluster)
    assert result.changed == 0, output(result)
    assert skipped(result), output(result)
    assert "Could not match supplied host pattern" not in result.stdout + result.stderr, output(result)
    assert write_verbs(result) == {}, result.requests


def test_a_deleted_object_is_noticed_and_put_back(cluster):
    cluster.kubectl("delete", "gateway.gateway.networking.k8s.io", "inference-gateway", "-n", GATEWAY_NS)
    preview = converge(cluster, check=True)
    assert said(preview) == f"Gateway {GATEWAY_NS}/inference-gateway is gone", output(preview)
    assert preview.changed > 0 and get(cluster, *GATEWAY) is None, output(preview)
    assert kept(cluster) is not None, "check mode dropped the record"

    result = converge(cluster)
    assert said(result) == f"Gateway {GATEWAY_NS}/inference-gateway is gone", output(result)
    assert result.changed > 0 and get(cluster, *GATEWAY) is not None, output(result)
    again = converge(cluster)
    assert skipped(again) and again.changed == 0, output(again)


def test_a_converge_that_fails_leaves_no_record(cluster):
    cluster.kubectl("delete", "gateway.gateway.networking.k8s.io", "inference-gateway", "-n", GATEWAY_NS)
    allow = cluster.deny_writes("Gateway", GATEWAY_NS, "inference-gateway")
    try:
        failed = cluster.run_playbook(SITE, extra_vars=stack_vars(cluster))
    finally:
        allow()
    assert failed.rc != 0 and "envoy_gateway did not converge" in failed.stdout, output(failed)
    assert kept(cluster) is None, "a failed converge left the record of the one before"
    result = converge(cluster)
    assert said(result) == "the cluster has no record of an earlier converge", output(result)
    assert kept(cluster) is not None and get(cluster, *GATEWAY) is not None


def test_an_edited_object_is_noticed_and_repaired(cluster):
    cluster.kubectl("patch", "gatewayclass.gateway.networking.k8s.io", "envoy", "--type", "merge", "-p",
                    json.dumps({"spec": {"parametersRef": {"name": "edited-by-hand"}}}))
    result = converge(cluster)
    assert said(result) == "GatewayClass envoy was changed or re-created since the last converge", output(result)
    repaired = get(cluster, "gateway.networking.k8s.io/v1", "GatewayClass", "envoy")
    assert repaired["spec"]["parametersRef"]["name"] == "inference-gateway", repaired


def test_a_release_upgraded_outside_the_collection_is_noticed(cluster):
    before = releases(cluster)
    subprocess.run(["helm", "rollback", "mp-lws", "1", "-n", before["mp-lws"]["namespace"]], env=cluster.env,
                   capture_output=True, text=True, check=True)
    result = converge(cluster)
    revision = before["mp-lws"]["revision"] + 1
    assert said(result) == (f"the Helm release {before['mp-lws']['namespace']}/mp-lws is at revision {revision}, "
                            f"the last converge left {revision - 1}"), output(result)
    # The rollback left the same chart and values: nothing to do, and the record now holds the new revision.
    assert result.changed == 0 and releases(cluster)["mp-lws"]["revision"] == revision, output(result)
    again = converge(cluster)
    assert skipped(again) and again.changed == 0, output(again)


def test_another_setting_converges_the_components_again(cluster):
    result = converge(cluster, cert_manager_probe_retries=7)
    assert said(result) == "the spec, the settings or the collection changed since the last converge", output(result)
    assert LANES in result.stdout and result.changed == 0, output(result)
    again = converge(cluster, cert_manager_probe_retries=7)
    assert skipped(again), output(again)


def test_without_skip_unchanged_every_release_and_object_is_compared(cluster):
    assert said(converge(cluster)) == "the spec, the settings or the collection changed since the last converge"
    record = kept(cluster)
    result = converge(cluster, servingstack_skip_unchanged=False)
    assert not skipped(result) and LANES in result.stdout and result.changed == 0, output(result)
    # The record was dropped first (so a failure would leave none) and written again: the same cluster, the same
    # record (how ready an object must be follows what this converge waited for: a programmed Gateway, not at all).
    assert result.requests["resources"].get("delete secrets") == 1, result.requests

    def unwaited(kept_record: dict) -> dict:
        return {**kept_record, "objects": [{key: value for key, value in found.items() if key != "ready"}
                                           for found in kept_record["objects"]]}
    assert unwaited(kept(cluster)) == unwaited(record), (record, kept(cluster))
    again = converge(cluster)
    assert skipped(again), output(again)


def test_teardown_drops_the_record_and_leaves_no_release_or_object_of_ours(cluster, tmp_path):
    log = tmp_path / "helm.log"
    result = cluster.run_playbook(TEARDOWN, extra_vars=stack_vars(cluster, servingstack_teardown_confirmed=True),
                                  env=cluster.helm_spy(log))
    assert result.rc == 0, output(result)
    assert kept(cluster) is None and releases(cluster) == {}, output(result)
    # Without servingstack_remove_crds no chart is even asked for its CRDs.
    assert [argv for argv in helm_calls(log) if argv[:1] == ["show"]] == [], helm_calls(log)
    # The CRDs stay (deleting them would delete users' objects), so these lists see the objects themselves.
    assert set(STANDARD_CRDS) <= crd_names(cluster), sorted(set(STANDARD_CRDS) - crd_names(cluster))
    assert get(cluster, *GATEWAY) is None
    assert get(cluster, "gateway.networking.k8s.io/v1", "GatewayClass", "envoy") is None
    assert listed(cluster, "gateway.envoyproxy.io/v1alpha1", "EnvoyProxy") == []
    assert listed(cluster, "trust.cert-manager.io/v1alpha1", "Bundle") == []
    assert listed(cluster, "cert-manager.io/v1", "Certificate") == []
    assert listed(cluster, "cert-manager.io/v1", "Issuer") == []
    # The control plane's namespace is never deleted (it may hold the ServingStack itself); only
    # the CA ConfigMap trust-manager wrote there goes.
    assert get(cluster, "v1", "Namespace", "modelplane-system") is not None
    assert get(cluster, "v1", "ConfigMap", "mp-gateway-ca", "modelplane-system") is None
