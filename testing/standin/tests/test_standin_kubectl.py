"""The real kubectl (.venv/bin/kubectl) against the stand-in."""

from __future__ import annotations

import json

import pytest
from standin.fixtures import UPSTREAM

GATEWAY_CRDS = UPSTREAM / "gateway-api" / "v1.5.1" / "experimental"

MANIFEST = """\
apiVersion: v1
kind: Namespace
metadata:
  name: shop
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: shop
spec:
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
        - name: web
          image: nginx:1.27
          env:
            - {name: MODE, value: prod}
---
apiVersion: v1
kind: Service
metadata:
  name: web
  namespace: shop
spec:
  selector: {app: web}
  ports:
    - {name: http, port: 80}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  namespace: shop
data:
  level: info
"""


def shop(cluster, ns: str) -> str:
    """Apply MANIFEST into namespace `ns` (each test has its own, so tests do not depend on each other)."""
    manifest = MANIFEST.replace("name: shop", f"name: {ns}").replace("namespace: shop", f"namespace: {ns}")
    cluster.kubectl("apply", "-f", "-", input=manifest)
    return manifest


def test_apply_is_idempotent_and_get_json(cluster):
    manifest = MANIFEST.replace("name: shop", "name: shop1").replace("namespace: shop", "namespace: shop1")
    first = cluster.kubectl("apply", "-f", "-", input=manifest).stdout
    assert "deployment.apps/web created" in first and "service/web created" in first
    second = cluster.kubectl("apply", "-f", "-", input=manifest).stdout
    assert second.count("unchanged") == 4, second
    deploy = json.loads(cluster.kubectl("get", "deployment", "web", "-n", "shop1", "-o", "json").stdout)
    assert deploy["spec"]["template"]["spec"]["containers"][0]["imagePullPolicy"] == "IfNotPresent"
    assert "kubectl.kubernetes.io/last-applied-configuration" in deploy["metadata"]["annotations"]
    table = cluster.kubectl("get", "configmaps", "-n", "shop1").stdout
    assert "settings" in table and "NAME" in table


def test_apply_changes_merge_lists_by_key(cluster):
    manifest = shop(cluster, "shop2")
    extra = "- {name: MODE, value: prod}\n            - {name: X, value: '1'}"
    changed = manifest.replace("- {name: MODE, value: prod}", extra)
    assert "deployment.apps/web configured" in cluster.kubectl("apply", "-f", "-", input=changed).stdout
    env = json.loads(cluster.kubectl("get", "deploy", "web", "-n", "shop2", "-o", "json").stdout)
    names = [e["name"] for e in env["spec"]["template"]["spec"]["containers"][0]["env"]]
    assert names == ["MODE", "X"]
    assert env["metadata"]["generation"] == 2


def test_patch_and_delete(cluster):
    shop(cluster, "shop3")
    cluster.kubectl("patch", "configmap", "settings", "-n", "shop3", "-p", '{"data":{"level":"debug"}}')
    cm = json.loads(cluster.kubectl("get", "cm", "settings", "-n", "shop3", "-o", "json").stdout)
    assert cm["data"] == {"level": "debug"}
    cluster.kubectl("patch", "deploy", "web", "-n", "shop3", "--type", "json",
                    "-p", '[{"op":"replace","path":"/spec/replicas","value":3}]')
    deploy = json.loads(cluster.kubectl("get", "deploy", "web", "-n", "shop3", "-o", "json").stdout)
    assert deploy["spec"]["replicas"] == 3
    cluster.kubectl("delete", "configmap", "settings", "-n", "shop3")
    missing = cluster.kubectl("get", "configmap", "settings", "-n", "shop3", check=False)
    assert missing.returncode != 0 and 'configmaps "settings" not found' in missing.stderr


def test_dry_run_server_and_wait(cluster):
    shop(cluster, "shop4")
    ghost = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ghost, namespace: shop4}\ndata: {a: b}\n"
    out = cluster.kubectl("create", "-f", "-", "--dry-run=server", "-o", "json", input=ghost).stdout
    assert json.loads(out)["metadata"]["name"] == "ghost"
    assert cluster.kubectl("get", "cm", "ghost", "-n", "shop4", check=False).returncode != 0
    # the simulated deployment controller makes the Deployment available
    cluster.kubectl("wait", "--for=condition=Available", "deployment/web", "-n", "shop4", "--timeout=20s")


def test_namespace_delete_waits_until_gone(cluster):
    shop(cluster, "shop5")
    cluster.kubectl("delete", "namespace", "shop5", "--timeout=30s")
    gone = cluster.kubectl("get", "namespace", "shop5", check=False)
    assert gone.returncode != 0 and 'namespaces "shop5" not found' in gone.stderr
    assert cluster.kubectl("get", "configmaps", "-n", "shop5", "-o", "name").stdout == ""


@pytest.mark.skipif(not GATEWAY_CRDS.is_dir(), reason="../shared/upstream/gateway-api is absent")
def test_gateway_api_crds_and_invalid_gateway(cluster):
    cluster.kubectl("apply", "--server-side", "-f", str(GATEWAY_CRDS))
    cluster.kubectl("wait", "--for=condition=Established", "crd/gateways.gateway.networking.k8s.io", "--timeout=10s")
    gateway = """\
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: %s, namespace: default}
spec:
  gatewayClassName: eg
  listeners:
    - {name: http, protocol: HTTP, port: %d}
"""
    bad = cluster.kubectl("apply", "-f", "-", input=gateway % ("bad", 0), check=False)
    assert bad.returncode != 0
    assert ('The Gateway "bad" is invalid: spec.listeners[0].port: Invalid value: 0: spec.listeners[0].port in body '
            "should be greater than or equal to 1") in bad.stderr
    assert "created" in cluster.kubectl("apply", "-f", "-", input=gateway % ("good", 80)).stdout
    rv = json.loads(cluster.kubectl("get", "gateway", "good", "-o", "json").stdout)["metadata"]["resourceVersion"]
    # kubectl sends the whole listeners list (atomic, and defaulted by the server), like on a real cluster;
    # the server sees a no-op and keeps the resourceVersion.
    cluster.kubectl("apply", "-f", "-", input=gateway % ("good", 80))
    assert json.loads(cluster.kubectl("get", "gateway", "good", "-o", "json").stdout)["metadata"][
        "resourceVersion"] == rv
    smp = cluster.kubectl("patch", "gateway", "good", "-p", '{"spec":{"gatewayClassName":"x"}}', check=False)
    assert smp.returncode != 0 and "strategic-merge-patch+json is not supported" in smp.stderr
    cluster.kubectl("patch", "gateway", "good", "--type", "merge", "-p", '{"spec":{"gatewayClassName":"x"}}')
    resources = cluster.kubectl("api-resources", "--api-group=gateway.networking.k8s.io").stdout
    assert "gateways" in resources and "httproutes" in resources
    cluster.kubectl("delete", "crd", "gateways.gateway.networking.k8s.io")
    gone = cluster.kubectl("get", "gateways", check=False)
    assert gone.returncode != 0 and "the server could not find the requested resource" in gone.stderr
    resources = cluster.kubectl("api-resources", "--api-group=gateway.networking.k8s.io").stdout
    assert "httproutes" in resources and "gateways " not in resources
