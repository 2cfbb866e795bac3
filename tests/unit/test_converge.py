"""The converge's decisions (module_utils/servingstack/converge.py): needs, outcomes, what failed and why, the one
wait at the end, what to prune."""

from __future__ import annotations

from ansible_collections.modelplane.serving.plugins.filter.converge import FilterModule
from ansible_collections.modelplane.serving.plugins.module_utils.servingstack import converge

CERT = {"name": "cert_manager", "needs": []}
TRUST = {"name": "trust_manager", "needs": ["cert_manager"]}
NFD = {"name": "nfd", "needs": []}


def test_a_need_that_failed_or_did_not_run_is_unmet():
    assert converge.needs(TRUST, {}) == {"unmet": ["cert_manager"], "previewed": False}
    assert converge.needs(TRUST, {"cert_manager": {"state": "failed", "msg": "x"}})["unmet"] == ["cert_manager"]
    assert converge.needs(TRUST, {"cert_manager": {"state": "converged"}}) == {"unmet": [], "previewed": False}
    assert converge.needs(TRUST, {"cert_manager": {"state": "previewed"}}) == {"unmet": [], "previewed": True}


def test_a_failed_component_blocks_only_what_needs_it():
    outcomes = converge.outcome({}, CERT, failed=converge.failure({"msg": "helm failed"}))
    outcomes = converge.outcome(outcomes, TRUST, unmet=converge.needs(TRUST, outcomes)["unmet"])
    outcomes = converge.outcome(outcomes, NFD, unmet=converge.needs(NFD, outcomes)["unmet"], helm={"results": []})
    assert converge.failed_components(outcomes, [CERT, TRUST, NFD]) == {
        "cert_manager": "helm failed",
        "trust_manager": "not attempted: it needs cert_manager, which did not converge",
    }


def test_a_planned_component_without_an_outcome_did_not_run():
    assert converge.failed_components({}, [NFD]) == {"nfd": "did not run (see the run's output)"}


def test_the_failure_is_a_loops_first_failed_item_on_one_line_else_the_message():
    loop = {"msg": "One or more items failed", "results": [
        {"failed": False, "msg": "ok"}, {"failed": True, "msg": "Error: UPGRADE FAILED:\n  timed out"},
        {"failed": True, "msg": "second"}]}
    assert converge.failure(loop) == "Error: UPGRADE FAILED: timed out"
    assert converge.failure({"msg": "refused"}) == "refused"
    assert converge.failure({}) == converge.NO_MESSAGE
    assert converge.failure(None) == converge.NO_MESSAGE


def helm_result(*items):
    return {"changed": any(item[1] for item in items),
            "results": [{"changed": changed, "component_release": {"release": release, "namespace": "ns"}}
                        for release, changed in items]}


def test_only_changed_releases_installed_without_waiting_are_pending():
    helm = helm_result(("mp-a", True), ("mp-b", False))
    outcomes = converge.outcome({}, NFD, helm=helm, waited=False)
    assert outcomes["nfd"] == {"state": "converged", "msg": "", "pending": [{"release": "mp-a", "namespace": "ns"}]}
    assert converge.waiting_for(outcomes) == [{"release": "mp-a", "namespace": "ns"}]
    assert converge.outcome({}, NFD, helm=helm, waited=True)["nfd"]["pending"] == []


def test_check_mode_previews_a_change_and_waits_for_nothing():
    helm = helm_result(("mp-a", True))
    assert converge.outcome({}, NFD, helm=helm, check_mode=True)["nfd"] == {"state": "previewed", "msg": ""}
    unchanged = converge.outcome({}, NFD, helm=helm_result(("mp-a", False)), check_mode=True, waited=False)
    assert unchanged["nfd"]["pending"] == []


def test_the_last_message_names_the_failed_components_then_why_it_stopped():
    failed = {"cert_manager": "helm failed", "trust_manager": "not attempted"}
    assert converge.summary(failed) == ("cert_manager, trust_manager did not converge: cert_manager: helm failed; "
                                        "trust_manager: not attempted")
    assert converge.summary(failed, "cannot reach", "").endswith("; then cannot reach")
    assert converge.summary({}, "", "status write refused") == "status write refused"
    assert converge.outcome({}, TRUST, previewed=True, check_mode=True)["trust_manager"]["state"] == "previewed"


def helm_owned(kind: str, name: str, namespace: str, release: str, release_namespace: str, **status) -> dict:
    """A workload as helm leaves it: labelled managed-by=Helm, annotated with its release's name and namespace."""
    return {"apiVersion": "apps/v1", "kind": kind,
            "metadata": {"name": name, "namespace": namespace, "generation": 1,
                         "labels": {"app.kubernetes.io/managed-by": "Helm"},
                         "annotations": {"meta.helm.sh/release-name": release,
                                         "meta.helm.sh/release-namespace": release_namespace}},
            "spec": {"replicas": 1}, "status": status}


def test_the_workloads_of_the_pending_releases_are_those_helm_annotated_as_theirs():
    outcomes = {"lws": {"state": "converged", "msg": "", "pending": [{"release": "mp-lws", "namespace": "lws-system"}]},
                "nfd": {"state": "converged", "msg": ""}}
    deployments = [helm_owned("Deployment", "lws-controller", "lws-system", "mp-lws", "lws-system"),
                   # Another release's, and a release of the same name in another namespace: not waited for.
                   helm_owned("Deployment", "nfd-master", "nfd", "mp-node-feature-discovery", "nfd"),
                   helm_owned("Deployment", "lws-controller", "theirs", "mp-lws", "theirs")]
    daemonsets = [helm_owned("DaemonSet", "agent", "other", "mp-lws", "lws-system")]
    assert converge.workloads([deployments, [], daemonsets], outcomes) == [
        {"component": "lws", "release": "mp-lws", "api_version": "apps/v1", "kind": "Deployment",
         "name": "lws-controller", "namespace": "lws-system", "ready": False},
        {"component": "lws", "release": "mp-lws", "api_version": "apps/v1", "kind": "DaemonSet", "name": "agent",
         "namespace": "other", "ready": False},
    ]

    # Readiness is the given test's (the filter binds kubernetes.core's waiter).
    def only_the_controller(found: dict) -> bool:
        return found["metadata"]["name"] == "lws-controller"

    marked = converge.workloads([deployments], outcomes, ready=only_the_controller)
    assert [workload["ready"] for workload in marked] == [True]
    # An object without helm's annotations, or of another kind, is nobody's workload.
    stray = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "x", "namespace": "lws-system"}}
    pod = {**helm_owned("Pod", "p", "lws-system", "mp-lws", "lws-system")}
    assert converge.workloads([[stray, pod]], outcomes) == []
    assert converge.workloads([[], None], outcomes) == []


def test_the_filter_finds_ready_what_kubernetes_cores_waiter_finds_ready():
    ready_filter = FilterModule().filters()["servingstack_workloads"]
    outcomes = {"lws": {"state": "converged", "msg": "", "pending": [{"release": "mp-lws", "namespace": "lws-system"}]}}
    available = helm_owned("Deployment", "up", "lws-system", "mp-lws", "lws-system",
                           replicas=1, availableReplicas=1, observedGeneration=1)
    rolling = helm_owned("Deployment", "rolling", "lws-system", "mp-lws", "lws-system",
                         replicas=1, availableReplicas=1, observedGeneration=0)
    unread = helm_owned("StatefulSet", "db", "lws-system", "mp-lws", "lws-system")
    found = ready_filter([[available, rolling], [unread]], outcomes)
    assert {workload["name"]: workload["ready"] for workload in found} == {"up": True, "rolling": False, "db": False}


def test_a_workload_that_did_not_get_ready_fails_its_component_naming_it():
    outcomes = {"lws": {"state": "converged", "msg": ""}, "nfd": {"state": "converged", "msg": ""}}
    late = {"component": "lws", "kind": "Deployment", "namespace": "lws-system", "name": "lws-controller"}
    ready = {"component": "nfd", "kind": "DaemonSet", "namespace": "nfd", "name": "worker"}
    # As the task registers them (failed_when: false): a timed-out wait is not "failed", and has no resources.
    waits = [{"failed": False, "failed_when_result": False,
              "msg": "Failed to gather information about Deployment(s) even after waiting for 300 seconds",
              "servingstack_workload": late},
             {"failed": False, "resources": [{}], "servingstack_workload": ready}]
    after = converge.with_readiness(outcomes, waits)
    assert after["nfd"] == outcomes["nfd"]
    assert after["lws"]["state"] == "failed"
    assert after["lws"]["msg"] == ("workloads not ready: Deployment lws-system/lws-controller (Failed to gather "
                                   "information about Deployment(s) even after waiting for 300 seconds)")
    assert converge.with_readiness(outcomes, [{**waits[0], "failed": True}])["lws"] == after["lws"]
    gone = converge.with_readiness(outcomes, [{"failed": False, "resources": [], "servingstack_workload": late}])
    assert gone["lws"]["msg"] == "workloads not ready: Deployment lws-system/lws-controller (not found)"
    # A workload ready already was not waited for: its skipped result fails nothing.
    skipped = converge.with_readiness(outcomes, [{"skipped": True, "false_condition": "not servingstack_workload.ready",
                                                  "servingstack_workload": late}])
    assert skipped == outcomes


PRUNE = [
    {"name": "modelexpress", "releases": [], "namespace": "modelexpress-system", "ingress": False},
    {"name": "grove_kai", "releases": [{"release": "mp-grove-charts"}, {"release": "mp-kai-scheduler"}],
     "namespace": "grove-system", "ingress": False},
    {"name": "gateway", "releases": [{"release": "mp-gw"}], "namespace": "gw", "ingress": True},
]


def secret(release):
    return {"metadata": {"name": f"sh.helm.release.v1.{release}.v1", "labels": {"name": release, "owner": "helm"}}}


def namespace(name):
    return {"metadata": {"name": name}}


def test_prune_finds_installed_components_by_release_or_namespace_ingress_first():
    found = [[secret("mp-kai-scheduler"), secret("mp-gw")], [namespace("modelexpress-system")]]
    assert converge.installed(PRUNE, found) == [PRUNE[2], PRUNE[0], PRUNE[1]]
    assert converge.installed(PRUNE, [[], [namespace("grove-system")]]) == []
    assert converge.installed([], []) == []


def test_prune_reads_release_secrets_and_namespaces_only_when_needed():
    queries = converge.prune_queries(PRUNE)
    assert queries[0]["label_selector"] == "owner=helm,name in (mp-grove-charts,mp-kai-scheduler,mp-gw)"
    assert queries[1] == {"apiVersion": "v1", "kind": "Namespace"}
    only_grove = queries[0] | {"label_selector": "owner=helm,name in (mp-grove-charts,mp-kai-scheduler)"}
    assert converge.prune_queries(PRUNE[1:2]) == [only_grove]
    assert converge.prune_queries([]) == []
