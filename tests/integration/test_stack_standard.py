"""The Standard stack end to end on the real cluster: bad input, check mode, a failed install, converge,
idempotence, a pin bump, a foreign release and a foreign CRD owner, teardown with servingstack_remove_crds. The
tests share one cluster and run in order; test_stack_fresh.py has the Standard-stack tests that need a cluster of
their own."""

from __future__ import annotations

import json
import subprocess
import time

import pytest
from stack_support import (
    GAIE_CRDS,
    GATEWAY_NS,
    SITE,
    STANDARD_CRDS,
    STANDARD_RELEASES,
    STATUS,
    TEARDOWN,
    UPSTREAM,
    WIDGET_CRD,
    chart_mirror,
    committed_writes,
    crd_names,
    get,
    helm_calls,
    listed,
    manifest,
    output,
    patched_objects,
    releases,
    resource_versions,
    said,
    stack_vars,
    wait_for,
    write_verbs,
)

pytestmark = [
    pytest.mark.playbook,
    pytest.mark.slow,
    pytest.mark.skipif(not UPSTREAM.is_dir(), reason="needs ../shared/upstream (charts and CRDs)"),
]


def test_a_bad_spec_fails_before_any_cluster_call(cluster):
    bad = manifest(gateway={"listeners": [{"name": "http", "port": 70000, "protocol": "HTTP"}]})
    result = cluster.run_playbook(SITE, extra_vars=stack_vars(cluster, bad))
    assert result.rc != 0, output(result)
    assert "spec.gateway.listeners[0].port" in result.stdout, output(result)
    assert result.requests["total"] == 0, result.requests


def test_check_mode_on_an_empty_cluster_writes_nothing(cluster):
    mark = cluster.audit_mark()
    result = cluster.run_playbook(SITE, extra_vars=stack_vars(cluster), check=True, diff=True)
    assert result.rc == 0, output(result)
    assert result.changed > 0, output(result)
    # Dry runs aside (they change nothing), not one write request.
    assert committed_writes(cluster, mark) == [], "check mode changed the cluster"
    assert releases(cluster) == {}


def test_a_failed_component_stops_only_the_components_that_need_it(cluster):
    """site.yml converges the components in plan order; a failure holds back what needs it, not the rest."""
    private_tmp = cluster.workdir / "tmp-failed-component"
    private_tmp.mkdir()
    # A ValidatingAdmissionPolicy refuses cert-manager's Deployments: its atomic install fails and is rolled back.
    allow = cluster.deny_writes("Deployment", "cert-manager", "mp-cert-manager")
    try:
        result = cluster.run_playbook(SITE, extra_vars=stack_vars(cluster), env={"TMPDIR": str(private_tmp)})
    finally:
        allow()
    assert result.rc != 0, output(result)
    found = releases(cluster)
    assert "mp-cert-manager" not in found, found
    # Everything that does not need cert-manager converged beside the failure.
    for name in ("mp-node-feature-discovery", "mp-lws", "mp-kube-prometheus-stack", "mp-dra-driver-nvidia-gpu",
                 "mp-gateway-helm", "mp-ai-gateway-helm"):
        assert found[name]["status"] == "deployed", found
    assert "mp-trust-manager" not in found, found
    assert "cert-manager did not converge" in result.stdout, output(result)
    # The refusal names the object and the policy, as the API server gave them.
    text = said(result)
    assert 'deployments.apps "mp-cert-manager' in text, output(result)
    assert "ValidatingAdmissionPolicy 'deny-deployments-" in text and "refused by the test" in text, output(result)
    assert ("cert_manager, trust_manager did not converge: cert_manager: " in result.stdout
            and "trust_manager: not attempted: it needs cert_manager, which did not converge" in result.stdout), \
        output(result)
    # The component's failure is recorded (rescued) and the converge goes on; its end fails the host, naming what did
    # not converge.
    assert list(result.recap) == ["localhost"], result.recap
    assert result.recap["localhost"]["rescued"] >= 1 and result.recap["localhost"]["failed"] == 1, result.recap
    # The end of the converge ran after the failure: the private directory of the target's certificate files is gone.
    # (The kubernetes client's discovery caches, k8srcp-*.json and osrcp-*.json, are not ours.)
    assert [path.name for path in private_tmp.iterdir() if not path.name.endswith(".json")] == []


def test_a_failed_install_leaves_nothing_half_recorded(cluster):
    allow = cluster.deny_writes("Deployment", "cert-manager", "trust-manager")
    try:
        # helm's --atomic on every release (by default only on those a later component needs: the others are waited
        # for once, at the end, and a failed one stays failed until the next converge upgrades it).
        result = cluster.run_playbook(SITE, extra_vars={**stack_vars(cluster), "servingstack_wait_each_release": True})
    finally:
        allow()
    assert result.rc != 0, output(result)
    found = releases(cluster)
    # --atomic uninstalled the failed release; the one before it is complete.
    assert "mp-trust-manager" not in found, found
    assert found["mp-cert-manager"]["status"] == "deployed"


def test_converge_installs_every_release_and_the_gateway(cluster):
    result = cluster.run_playbook(SITE, extra_vars=stack_vars(cluster))
    assert result.rc == 0, output(result)
    found = releases(cluster)
    assert set(found) == STANDARD_RELEASES, found
    assert {name: r["status"] for name, r in found.items()} == dict.fromkeys(STANDARD_RELEASES, "deployed")
    assert all(r["revision"] == 1 for r in found.values()), found
    gateway = get(cluster, "gateway.networking.k8s.io/v1", "Gateway", "inference-gateway", GATEWAY_NS)
    assert [(listener["name"], listener["port"], listener["protocol"]) for listener in gateway["spec"]["listeners"]] \
        == [("http", 80, "HTTP")]
    assert gateway["spec"]["listeners"][0]["allowedRoutes"] == {"namespaces": {"from": "All"}}
    # Where Modelplane's HTTPRoutes look for it (parentRefs inference-gateway/modelplane-system), and only there.
    assert [(gw["metadata"]["namespace"], gw["metadata"]["name"])
            for gw in listed(cluster, "gateway.networking.k8s.io/v1", "Gateway")] == [(GATEWAY_NS, "inference-gateway")]
    gateway_class = get(cluster, "gateway.networking.k8s.io/v1", "GatewayClass", "envoy")
    assert gateway_class["spec"]["parametersRef"] == {"group": "gateway.envoyproxy.io", "kind": "EnvoyProxy",
                                                      "name": "inference-gateway", "namespace": GATEWAY_NS}
    proxy = get(cluster, "gateway.envoyproxy.io/v1alpha1", "EnvoyProxy", "inference-gateway", GATEWAY_NS)
    assert proxy["spec"]["provider"]["kubernetes"]["envoyService"]["externalTrafficPolicy"] == "Cluster"
    # Every Gateway API Inference Extension CRD the endpoint picker needs, established.
    for name in GAIE_CRDS:
        crd = get(cluster, "apiextensions.k8s.io/v1", "CustomResourceDefinition", name)
        assert crd is not None, name
        assert {c["type"]: c["status"] for c in crd["status"]["conditions"]}.get("Established") == "True", crd
    bundle = get(cluster, "trust.cert-manager.io/v1alpha1", "Bundle", "mp-gateway-ca")
    assert bundle["spec"]["sources"] == [{"secret": {"name": "mp-gateway-ca", "key": "ca.crt"}}]
    # No hostname: plain HTTP, no certificates of the gateway's, the status has an address and no CA. (trust-manager's
    # chart brings its own webhook Certificate in its namespace: that one is its release's.)
    assert [cert["metadata"]["name"] for cert in listed(cluster, "cert-manager.io/v1", "Certificate")
            if "meta.helm.sh/release-name" not in cert["metadata"].get("annotations", {})] == []
    assert "address: " in result.stdout and "caCertificate" not in result.stdout


def test_a_second_run_changes_nothing(cluster, tmp_path):
    log = tmp_path / "helm.log"
    mark = cluster.audit_mark()
    result = cluster.run_playbook(SITE, extra_vars=stack_vars(cluster), env=cluster.helm_spy(log))
    assert result.rc == 0, output(result)
    assert result.changed == 0, output(result)
    # kubernetes.core.helm finds every release at its chart version and values: no install, no upgrade.
    assert [argv for argv in helm_calls(log) if argv[0] in ("install", "upgrade")] == [], helm_calls(log)
    # kubernetes.core.k8s's client-side apply sends a merge PATCH for an object holding a list it knows no merge key
    # for (a Gateway's listeners, a CRD's versions), changed or not; nothing else is written. The API server stores
    # nothing for such a PATCH: the objects' resourceVersions stay the same through another run.
    assert set(write_verbs(result)) <= {"patch"}, result.requests
    patched = patched_objects(cluster, mark)
    before = resource_versions(cluster, patched)
    again = cluster.run_playbook(SITE, extra_vars=stack_vars(cluster))
    assert again.rc == 0 and again.changed == 0, output(again)
    assert resource_versions(cluster, patched) == before


def test_site_yml_with_limit_converges_the_same_way_and_finishes_once(cluster):
    """--limit only picks hosts: the one play converges and finishes (status, clean-up) once, changing nothing on a
    converged cluster, as without it."""
    result = cluster.run_playbook(SITE, extra_vars={**stack_vars(cluster)}, limit="localhost")
    assert result.rc == 0 and result.changed == 0, output(result)
    assert list(result.recap) == ["localhost"], result.recap
    assert result.stdout.count("TASK [modelplane.serving.servingstack : Remove the target cluster's private") == 1, \
        output(result)


def test_status_playbook_prints_the_gateway_address(cluster):
    gateway = get(cluster, "gateway.networking.k8s.io/v1", "Gateway", "inference-gateway", GATEWAY_NS)
    address = gateway["status"]["addresses"][0]["value"]
    with_spec = cluster.run_playbook(STATUS, extra_vars=stack_vars(cluster))
    without_spec = cluster.run_playbook(STATUS, extra_vars={"servingstack_kubeconfig": cluster.kubeconfig})
    for result in (with_spec, without_spec):
        assert result.rc == 0 and result.changed == 0, output(result)
        assert f"address: {address}" in result.stdout, output(result)
        assert write_verbs(result) == {}, result.requests


def modelplane_route(name: str, namespace: str, pool: str) -> dict:
    """An HTTPRoute as Modelplane's compose-model-replica writes it for a disaggregated replica (routing.py)."""
    return {
        "apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "parentRefs": [{"name": "inference-gateway", "namespace": "modelplane-system"}],
            "rules": [{
                "matches": [{"path": {"type": "PathPrefix", "value": f"/team-a/{name}/"}}],
                "filters": [{"type": "URLRewrite",
                             "urlRewrite": {"path": {"type": "ReplacePrefixMatch", "replacePrefixMatch": "/"}}}],
                "backendRefs": [{"group": "inference.networking.k8s.io", "kind": "InferencePool", "name": pool}],
            }],
        },
    }


def modelplane_pool(name: str, namespace: str) -> dict:
    """The InferencePool Modelplane puts behind that route (routing.py), in the v1 API."""
    return {
        "apiVersion": "inference.networking.k8s.io/v1", "kind": "InferencePool",
        "metadata": {"name": f"{name}-pool", "namespace": namespace},
        "spec": {"selector": {"matchLabels": {"app": name, "llm-d.ai/inference-serving": "true"}},
                 "targetPorts": [{"number": 8000}],
                 "endpointPickerRef": {"name": f"{name}-epp", "port": {"number": 9002}, "failureMode": "FailOpen"}},
    }


def create(cluster, *objects: dict) -> None:
    """Create objects with the Python client (the API server validates them against their CRDs)."""
    for obj in objects:
        resource = cluster.dynamic().resources.get(api_version=obj["apiVersion"], kind=obj["kind"])
        resource.create(body=obj, namespace=obj["metadata"].get("namespace"))


def conditions(parent: dict) -> dict[str, tuple[str, str]]:
    return {c["type"]: (c["status"], c["reason"]) for c in parent["conditions"]}


def test_a_modelplane_httproute_to_an_inferencepool_attaches_to_the_gateway(cluster):
    """The API server validates both objects against the upstream CRDs (Gateway API v1.5.1, GAIE v1.0.2); the
    operator double's Envoy Gateway accepts the route on the Gateway's listener as Envoy Gateway writes it."""
    namespace = "modelplane-routes"
    create(cluster, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}},
           modelplane_pool("qwen", namespace), modelplane_route("qwen", namespace, "qwen-pool"),
           modelplane_route("no-pool", namespace, "missing-pool"))

    def parents(name: str) -> list[dict]:
        route = get(cluster, "gateway.networking.k8s.io/v1", "HTTPRoute", name, namespace)
        return (route.get("status") or {}).get("parents") or []

    def attached() -> dict[str, int]:
        gateway = get(cluster, "gateway.networking.k8s.io/v1", "Gateway", "inference-gateway", GATEWAY_NS)
        return {listener["name"]: listener["attachedRoutes"] for listener in gateway["status"]["listeners"]}

    # Envoy Gateway (the operator double) writes both routes' status and the listener's count.
    wait_for("both routes' status", lambda: parents("qwen") and parents("no-pool") and attached() == {"http": 2})
    [parent] = parents("qwen")
    assert parent["controllerName"] == "gateway.envoyproxy.io/gatewayclass-controller"
    assert (parent["parentRef"]["name"], parent["parentRef"]["namespace"]) == ("inference-gateway", GATEWAY_NS)
    assert conditions(parent) == {"Accepted": ("True", "Accepted"), "ResolvedRefs": ("True", "ResolvedRefs")}
    # A route whose pool does not exist attaches, but its reference does not resolve.
    [unresolved] = parents("no-pool")
    assert conditions(unresolved) == {"Accepted": ("True", "Accepted"), "ResolvedRefs": ("False", "BackendNotFound")}
    cluster.dynamic().resources.get(api_version="v1", kind="Namespace").delete(name=namespace)
    # The namespace controller deletes the routes, then the listener counts none.
    wait_for(f"namespace {namespace} to go", lambda: get(cluster, "v1", "Namespace", namespace) is None, 120)
    wait_for("the listener to count no routes", lambda: attached() == {"http": 0})


def test_status_follows_the_roles_gateway_settings(cluster):
    """A Gateway named and placed otherwise (envoy_gateway_gateway_name/_namespace) is the one the status reads."""
    create(cluster, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "edge"}}, {
        "apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
        "metadata": {"name": "edge-gw", "namespace": "edge"},
        # A class no controller owns (the operator double's Envoy Gateway leaves it alone): the status is written
        # below, through the status subresource as an operator would, with an address of its own.
        "spec": {"gatewayClassName": "unowned", "listeners": [{"name": "http", "port": 80, "protocol": "HTTP"}]}})
    programmed = {"type": "Programmed", "status": "True", "reason": "Programmed", "message": "Address assigned",
                  "observedGeneration": 1, "lastTransitionTime": "2026-12-02T21:00:00Z"}
    cluster.dynamic().resources.get(api_version="gateway.networking.k8s.io/v1", kind="Gateway").status.patch(
        name="edge-gw", namespace="edge", content_type="application/merge-patch+json", body={"status": {
            "addresses": [{"type": "IPAddress", "value": "203.0.113.77"}],
            "conditions": [{**programmed, "type": "Accepted", "reason": "Accepted", "message": "Accepted"},
                           programmed]}})
    renamed = cluster.run_playbook(STATUS, extra_vars=stack_vars(
        cluster, envoy_gateway_gateway_name="edge-gw", envoy_gateway_gateway_namespace="edge"))
    default = cluster.run_playbook(STATUS, extra_vars=stack_vars(cluster))
    cluster.dynamic().resources.get(api_version="v1", kind="Namespace").delete(name="edge")
    assert renamed.rc == 0 and "address: 203.0.113.77" in renamed.stdout, output(renamed)
    assert default.rc == 0 and "address: 203.0.113.77" not in default.stdout, output(default)
    wait_for("namespace edge to go", lambda: get(cluster, "v1", "Namespace", "edge") is None, 120)


def test_check_mode_with_diff_shows_a_pin_bump_and_writes_nothing(cluster):
    bumped = manifest(versions=ADOPTED_VERSIONS)
    mark = cluster.audit_mark()
    result = cluster.run_playbook(SITE, extra_vars=stack_vars(cluster, bumped), check=True, diff=True)
    assert result.rc == 0, output(result)
    assert result.changed >= 1 and "mp-cert-manager" in result.stdout, output(result)
    assert committed_writes(cluster, mark) == [], "check mode changed the cluster"
    assert releases(cluster)["mp-cert-manager"]["revision"] == 1


def test_a_pin_bump_upgrades_exactly_that_release(cluster):
    bumped = manifest(versions=ADOPTED_VERSIONS)
    result = cluster.run_playbook(SITE, extra_vars=stack_vars(cluster, bumped))
    assert result.rc == 0, output(result)
    found = releases(cluster)
    assert found["mp-cert-manager"]["revision"] == 2, found
    assert {name: r["revision"] for name, r in found.items() if name != "mp-cert-manager"} \
        == dict.fromkeys(STANDARD_RELEASES - {"mp-cert-manager"}, 1)


def deny_chart_version(cluster, namespace: str, chart: str):
    """Refuse creates and updates of the Deployments of one chart version (label ``helm.sh/chart``) in ``namespace``,
    with a ValidatingAdmissionPolicy; returns the function that lifts it. Unlike `cluster.deny_writes`, helm's
    rollback to the version that worked gets through: a real API server admits (and refuses) every update, a
    no-op patch of a rollback too."""
    name = f"deny-{chart}"
    refusal = f"Deployments of chart {chart} are refused by the test"
    expression = (f"object.metadata.namespace != {json.dumps(namespace)} || !has(object.metadata.labels) || "
                  f"!('helm.sh/chart' in object.metadata.labels) || "
                  f"object.metadata.labels['helm.sh/chart'] != {json.dumps(chart)}")
    policy = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
              "metadata": {"name": name},
              "spec": {"failurePolicy": "Fail",
                       "matchConstraints": {"resourceRules": [{"apiGroups": ["apps"], "apiVersions": ["*"],
                                                               "operations": ["CREATE", "UPDATE"],
                                                               "resources": ["deployments"]}]},
                       "validations": [{"expression": expression, "message": refusal}]}}
    binding = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
               "metadata": {"name": name}, "spec": {"policyName": name, "validationActions": ["Deny"]}}
    cluster.kubectl("apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List",
                                                          "items": [policy, binding]}))
    # The API server loads policies asynchronously: a dry-run create of such a Deployment is refused once it is on.
    labels = {"helm.sh/chart": chart, "app": "probe"}
    probe = json.dumps({"apiVersion": "apps/v1", "kind": "Deployment",
                        "metadata": {"name": "policy-probe", "namespace": namespace, "labels": labels},
                        "spec": {"selector": {"matchLabels": {"app": "probe"}}, "template": {
                            "metadata": {"labels": {"app": "probe"}},
                            "spec": {"containers": [{"name": "probe", "image": "probe"}]}}}})
    wait_for(f"policy {name} to be active", lambda: refusal in cluster.kubectl(
        "create", "--dry-run=server", "-f", "-", input=probe, check=False).stderr, 30)

    def allow() -> None:
        cluster.kubectl("delete", "validatingadmissionpolicybinding,validatingadmissionpolicy", name,
                        "--ignore-not-found", "--wait")
        time.sleep(1.5)  # the API server's policy cache follows deletes within about a second (as deny_writes)

    return allow


def test_a_failed_upgrade_is_rolled_back_and_a_re_run_converges(cluster):
    """helm --atomic (per chart: on for NFD) rolls a failed upgrade back to the release that worked."""
    pinned = {"certManager": "v1.21.0", "envoyGateway": "v1.8.4"}
    older_nfd = manifest(versions={**pinned, "nodeFeatureDiscovery": "0.18.2"})
    before = releases(cluster)["mp-node-feature-discovery"]["revision"]
    # A ValidatingAdmissionPolicy refuses the NFD Deployments of the older chart: the upgrade fails half way, and
    # the rollback to the chart that worked gets through.
    allow = deny_chart_version(cluster, "node-feature-discovery", "node-feature-discovery-0.18.2")
    try:
        failed = cluster.run_playbook(SITE, extra_vars=stack_vars(cluster, older_nfd))
    finally:
        allow()
    assert failed.rc != 0, output(failed)
    assert "denied request" in failed.stdout, output(failed)
    rolled_back = releases(cluster)["mp-node-feature-discovery"]
    # Revision before+1 failed, before+2 is the rollback to the version that worked, deployed.
    assert (rolled_back["revision"], rolled_back["status"]) == (before + 2, "deployed"), rolled_back
    listed_chart = subprocess.run(["helm", "list", "-n", "node-feature-discovery", "-o", "json"], env=cluster.env,
                                  capture_output=True, text=True, check=True).stdout
    assert json.loads(listed_chart)[0]["chart"] == "node-feature-discovery-0.18.3", listed_chart

    again = cluster.run_playbook(SITE, extra_vars=stack_vars(cluster, older_nfd))
    assert again.rc == 0, output(again)
    assert releases(cluster)["mp-node-feature-discovery"] == {
        "namespace": "node-feature-discovery", "revision": before + 3, "status": "deployed"}
    # Back to the pin the later tests expect.
    restored = cluster.run_playbook(SITE, extra_vars=stack_vars(cluster, manifest(versions=pinned)))
    assert restored.rc == 0, output(restored)


# The pins the next two tests converge: the first moves the stack to them, the second keeps them (and changes only
# trust-manager's), so that it upgrades no other release.
ADOPTED_VERSIONS = {"certManager": "v1.21.0", "envoyGateway": "v1.8.4"}


def test_a_users_release_of_the_same_chart_is_refused_unless_adopted(cluster):
    cluster_env = cluster.env
    import subprocess

    # The user's own release, with the real helm, of the same (test) chart.
    subprocess.run(["helm", "install", "my-lws", "lws", "--repo", chart_mirror(), "--version", "v0.8.0",
                    "-n", "user-lws", "--create-namespace"], env=cluster_env, check=True, capture_output=True)
    bumped = manifest(versions=ADOPTED_VERSIONS)
    refused = cluster.run_playbook(SITE, extra_vars=stack_vars(cluster, bumped))
    assert refused.rc != 0, output(refused)
    assert "user-lws/my-lws" in refused.stdout, output(refused)
    adopted = cluster.run_playbook(SITE, extra_vars=stack_vars(cluster, bumped, servingstack_adopt=True))
    assert adopted.rc == 0, output(adopted)
    subprocess.run(["helm", "uninstall", "my-lws", "-n", "user-lws"], env=cluster_env, check=True,
                   capture_output=True)


def test_a_crd_another_release_owns_is_refused_unless_adopted(cluster):
    """Helm refuses a template over an object another release owns: we say so before helm runs, naming both.

    Adoption is shown on an upgrade: kubernetes.core.helm 6.2.0 passes take_ownership to helm only
    when the release exists (kubernetes.core PR #1034 adds it to first installs).
    """
    crds = cluster.dynamic().resources.get(api_version="apiextensions.k8s.io/v1", kind="CustomResourceDefinition")
    crds.patch(name="bundles.trust.cert-manager.io", content_type="application/merge-patch+json", body={
        "metadata": {"annotations": {"meta.helm.sh/release-name": "user-trust",
                                     "meta.helm.sh/release-namespace": "tools"}}})
    before = releases(cluster)["mp-trust-manager"]["revision"]
    older = manifest(versions={**ADOPTED_VERSIONS, "trustManager": "v0.23.0"})
    refused = cluster.run_playbook(SITE, extra_vars=stack_vars(cluster, older))
    assert refused.rc != 0, output(refused)
    assert ("CustomResourceDefinition bundles.trust.cert-manager.io belongs to Helm release tools/user-trust "
            "(ours is cert-manager/mp-trust-manager)") in refused.stdout, output(refused)
    assert releases(cluster)["mp-trust-manager"]["revision"] == before
    adopted = cluster.run_playbook(SITE, extra_vars=stack_vars(cluster, older, servingstack_adopt=True))
    assert adopted.rc == 0, output(adopted)
    assert releases(cluster)["mp-trust-manager"]["revision"] == before + 1
    owner = crds.get(name="bundles.trust.cert-manager.io").metadata.annotations
    assert owner["meta.helm.sh/release-name"] == "mp-trust-manager", owner


def test_teardown_with_remove_crds_removes_every_crd_of_ours_and_only_those(cluster, tmp_path):
    """The last teardown of this cluster removes our CRDs too (test_converge_record.py tears down without them)."""
    # A user's CRD that no chart of ours ships stays.
    cluster.kubectl("apply", "-f", "-", input=json.dumps(WIDGET_CRD))
    installed = crd_names(cluster)
    assert set(STANDARD_CRDS) <= installed, sorted(set(STANDARD_CRDS) - installed)

    log = tmp_path / "helm.log"
    remove = stack_vars(cluster, servingstack_remove_crds=True, servingstack_teardown_confirmed=True)
    mark = cluster.audit_mark()
    preview = cluster.run_playbook(TEARDOWN, extra_vars=remove, check=True, env=cluster.helm_spy(log))
    assert preview.rc == 0, output(preview)
    assert committed_writes(cluster, mark) == [], "check mode changed the cluster"
    shown = [argv for argv in helm_calls(log) if argv[0] == "template"]
    # Check mode renders every release's chart with its CRDs (read-only) to preview the deletions.
    assert len(shown) == len(STANDARD_RELEASES), shown
    assert all("--include-crds" in argv and any(a.startswith("--version=") for a in argv) for argv in shown), shown
    # Through the chart mirror: charts by name from the test charts' repository.
    assert all(any(a.startswith("--repo=") for a in argv) for argv in shown), shown

    result = cluster.run_playbook(TEARDOWN, extra_vars=remove)
    assert result.rc == 0, output(result)
    assert releases(cluster) == {}
    assert crd_names(cluster) == {WIDGET_CRD["metadata"]["name"]}, sorted(crd_names(cluster))
    # The control plane's namespace is never deleted (it may hold the ServingStack itself); only
    # the CA ConfigMap trust-manager wrote there goes.
    assert get(cluster, "v1", "Namespace", "modelplane-system") is not None
    assert get(cluster, "v1", "ConfigMap", "mp-gateway-ca", "modelplane-system") is None


def test_a_second_teardown_changes_nothing(cluster, tmp_path):
    log = tmp_path / "helm.log"
    result = cluster.run_playbook(TEARDOWN, extra_vars=stack_vars(cluster, servingstack_remove_crds=True,
                                                                  servingstack_teardown_confirmed=True),
                                  env=cluster.helm_spy(log))
    assert result.rc == 0, output(result)
    assert result.changed == 0, output(result)
    assert write_verbs(result) == {}, result.requests
    assert [argv for argv in helm_calls(log) if argv[0] == "uninstall"] == [], "a second teardown uninstalls nothing"
