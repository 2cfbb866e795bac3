"""Pruning what the spec no longer wants, on one real cluster, in order: switching spec.stack uninstalls the other
stack's components once the new ones converged (and back); renaming gateway.className deletes the GatewayClass of
ours it left; a GatewayClass this collection did not make is refused unless adopted."""

from __future__ import annotations

import json

import pytest
from stack_support import DYNAMO, GATEWAY_NS, SITE, UPSTREAM, get, listed, manifest, output, releases, stack_vars

# Every test here builds on the stack the first one converged, so without the charts all of them skip (not only the
# first, which would leave the others failing on a cluster it never converged).
pytestmark = [
    pytest.mark.playbook,
    pytest.mark.slow,
    pytest.mark.skipif(not UPSTREAM.is_dir(), reason="needs ../shared/upstream (the test charts' data and the CRDs)"),
]

STANDARD_ONLY = {"mp-lws"}
DYNAMO_ONLY = {"mp-kai-scheduler", "mp-grove-charts"}


def converge(cluster, path):
    result = cluster.run_playbook(SITE, extra_vars=stack_vars(cluster, manifest(path)))
    assert result.rc == 0, output(result)
    return result


def test_switching_the_stack_uninstalls_the_other_stacks_components_and_back(cluster):
    standard = cluster.run_playbook(SITE, extra_vars=stack_vars(cluster))
    assert standard.rc == 0, output(standard)
    assert set(releases(cluster)) >= STANDARD_ONLY

    converge(cluster, DYNAMO)
    found = releases(cluster)
    assert not STANDARD_ONLY & set(found), found
    assert {name for name, r in found.items() if r["status"] == "deployed"} >= DYNAMO_ONLY, found
    assert get(cluster, "v1", "Namespace", "modelexpress-system") is not None
    # (That a Dynamo stack re-run changes nothing is test_stack_variants.py's.)

    back = cluster.run_playbook(SITE, extra_vars=stack_vars(cluster))
    assert back.rc == 0, output(back)
    found = releases(cluster)
    assert not DYNAMO_ONLY & set(found), found
    assert set(found) >= STANDARD_ONLY, found
    namespace = get(cluster, "v1", "Namespace", "modelexpress-system")
    assert namespace is None or namespace["status"].get("phase") == "Terminating", namespace


def gateway_classes(cluster) -> set[str]:
    return {gc["metadata"]["name"] for gc in listed(cluster, "gateway.networking.k8s.io/v1", "GatewayClass")}


def test_renaming_the_gateway_class_deletes_the_old_one_of_ours(cluster):
    assert gateway_classes(cluster) == {"envoy"}
    renamed = manifest(gateway={"className": "inference"})
    result = cluster.run_playbook(SITE, extra_vars=stack_vars(cluster, renamed))
    assert result.rc == 0, output(result)
    assert gateway_classes(cluster) == {"inference"}
    gateway = get(cluster, "gateway.networking.k8s.io/v1", "Gateway", "inference-gateway", GATEWAY_NS)
    assert gateway["spec"]["gatewayClassName"] == "inference"
    again = cluster.run_playbook(SITE, extra_vars=stack_vars(cluster, renamed))
    assert again.rc == 0 and again.changed == 0, output(again)


def test_a_gateway_class_someone_else_made_is_refused_unless_adopted(cluster):
    cluster.kubectl("apply", "-f", "-", input=json.dumps({
        "apiVersion": "gateway.networking.k8s.io/v1", "kind": "GatewayClass", "metadata": {"name": "platform-team"},
        "spec": {"controllerName": "gateway.envoyproxy.io/gatewayclass-controller"}}))
    theirs = manifest(gateway={"className": "platform-team"})
    refused = cluster.run_playbook(SITE, extra_vars=stack_vars(cluster, theirs))
    assert refused.rc != 0, output(refused)
    assert "GatewayClass platform-team exists and was not made by modelplane.serving" in refused.stdout, \
        output(refused)
    # Nothing of theirs was touched, and ours is still in place.
    assert get(cluster, "gateway.networking.k8s.io/v1", "GatewayClass", "platform-team")["metadata"].get("labels") \
        in (None, {})
    assert gateway_classes(cluster) == {"inference", "platform-team"}

    adopted = cluster.run_playbook(SITE, extra_vars=stack_vars(cluster, theirs, servingstack_adopt=True))
    assert adopted.rc == 0, output(adopted)
    labels = get(cluster, "gateway.networking.k8s.io/v1", "GatewayClass", "platform-team")["metadata"]["labels"]
    assert labels["app.kubernetes.io/managed-by"] == "modelplane.serving"
    assert gateway_classes(cluster) == {"platform-team"}
