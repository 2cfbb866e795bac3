"""Helpers for the servingstack playbook tests (test_stack_*.py): run site/teardown, read the cluster."""

from __future__ import annotations

import base64
import contextlib
import copy
import json
import os
import resource
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[2]
UPSTREAM = REPO.parent / "shared" / "upstream"
CHARTS = REPO / "testing" / "charts"

SITE = REPO / "playbooks" / "site.yml"
TEARDOWN = REPO / "playbooks" / "teardown.yml"
STATUS = REPO / "playbooks" / "status.yml"
EXAMPLE = REPO / "examples" / "servingstack.yaml"
DYNAMO = REPO / "examples" / "dynamo.yaml"
# The Gateway API Inference Extension v1.0.2 CRDs: the three documents of the release's manifests.yaml,
# one file each in the upstream snapshot (envoy_gateway_inference_crds_url takes a list of URLs).
GAIE = UPSTREAM / "gateway-api-inference-extension" / "v1.0.2"
GAIE_CRDS = ("inferencepools.inference.networking.k8s.io", "inferencepools.inference.networking.x-k8s.io",
             "inferenceobjectives.inference.networking.x-k8s.io")
GAIE_CRD_FILES = [GAIE / f"{crd.split('.', 1)[1]}_{crd.split('.', 1)[0]}.yaml" for crd in GAIE_CRDS]
HELM_SECRET_TYPE = "helm.sh/release.v1"
# The Standard stack (the example): its Helm releases, and one CRD from each chart (crds/ folders and templates) with
# the InferencePool CRDs envoy_gateway applies.
STANDARD_RELEASES = {
    "mp-cert-manager", "mp-trust-manager", "mp-node-feature-discovery", "mp-dra-driver-nvidia-gpu",
    "mp-gateway-helm", "mp-ai-gateway-crds-helm", "mp-ai-gateway-helm", "mp-lws", "mp-kube-prometheus-stack",
}
STANDARD_CRDS = (
    "certificates.cert-manager.io",  # cert-manager: templates (crds.enabled)
    "bundles.trust.cert-manager.io",  # trust-manager
    "nodefeatures.nfd.k8s-sigs.io",  # node-feature-discovery: crds/
    "computedomains.resource.nvidia.com",  # dra-driver-nvidia-gpu: crds/
    "envoyproxies.gateway.envoyproxy.io",  # gateway-helm: crds/ (Envoy Gateway)
    "gateways.gateway.networking.k8s.io",  # gateway-helm: crds/ (Gateway API)
    "leaderworkersets.leaderworkerset.x-k8s.io",  # lws: crds/
    "servicemonitors.monitoring.coreos.com",  # kube-prometheus-stack: crds/
    *GAIE_CRDS,  # applied by envoy_gateway
)
# A user's CRD that no chart of ours ships: a kind the cluster serves only once a test installs it.
WIDGET_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.example.com"},
    "spec": {"group": "example.com", "scope": "Cluster",
             "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
             "versions": [{"name": "v1", "served": True, "storage": True, "subresources": {"status": {}},
                           "schema": {"openAPIV3Schema": {"type": "object",
                                                          "x-kubernetes-preserve-unknown-fields": True}}}]}}
# Where the inference Gateway lives (Modelplane's HTTPRoutes name it there), and where it used to.
GATEWAY_NS = "modelplane-system"
LEGACY_GATEWAY_NS = "envoy-gateway-system"


def manifest(path: Path = EXAMPLE, **spec_changes: Any) -> dict[str, Any]:
    """The example ServingStack with top-level spec keys replaced."""
    doc = copy.deepcopy(yaml.safe_load(path.read_text()))
    doc["spec"].update(spec_changes)
    return doc


def chart_mirror() -> str:
    """URL of the test charts' repository (testing/charts), built and served once per test process."""
    if str(CHARTS) not in sys.path:
        sys.path.insert(0, str(CHARTS))
    from fixtures import shared_repo  # testing/charts/fixtures.py

    return shared_repo().url


def stack_vars(cluster: Any, definition: dict[str, Any] | None = None, **more: Any) -> dict[str, Any]:
    """Extra vars for site.yml/teardown.yml against ``cluster``: direct kubeconfig, the test charts as the chart
    mirror (real helm installs them), offline CRD URLs."""
    return {
        "servingstack_definition": definition or manifest(),
        "servingstack_kubeconfig": cluster.kubeconfig,
        "servingstack_chart_mirror": chart_mirror(),
        "envoy_gateway_inference_crds_url": [path.as_uri() for path in GAIE_CRD_FILES],
        **more,
    }


def releases(cluster: Any) -> dict[str, dict[str, Any]]:
    """name -> {namespace, revision, status} of the latest revision of every helm release in the cluster."""
    from kubernetes import client

    core = client.CoreV1Api(cluster.client())
    found: dict[str, dict[str, Any]] = {}
    for secret in core.list_secret_for_all_namespaces(field_selector=f"type={HELM_SECRET_TYPE}").items:
        labels = secret.metadata.labels or {}
        name, revision = labels.get("name"), int(labels.get("version", 0))
        if name not in found or found[name]["revision"] < revision:
            found[name] = {"namespace": secret.metadata.namespace, "revision": revision, "status": labels.get("status")}
    return found


def get(cluster: Any, api_version: str, kind: str, name: str, namespace: str | None = None) -> dict[str, Any] | None:
    """One object as a dict, or None."""
    from kubernetes.dynamic.exceptions import NotFoundError, ResourceNotFoundError

    try:
        resource = cluster.dynamic().resources.get(api_version=api_version, kind=kind)
        return resource.get(name=name, namespace=namespace).to_dict()
    except (NotFoundError, ResourceNotFoundError):
        return None


def listed(cluster: Any, api_version: str, kind: str, namespace: str | None = None, **selectors: str) -> list[dict]:
    from kubernetes.dynamic.exceptions import ResourceNotFoundError

    try:
        resource = cluster.dynamic().resources.get(api_version=api_version, kind=kind)
    except ResourceNotFoundError:
        return []
    return resource.get(namespace=namespace, **selectors).to_dict()["items"]


def secret_text(secret: dict[str, Any], key: str) -> str:
    return base64.b64decode(secret["data"][key]).decode()


def write_verbs(result: Any) -> dict[str, int]:
    """The write requests a playbook made (dry-run ones included: the audit log counts them alike)."""
    from cluster.fixtures import writes

    return writes(result.requests)


def describe(event: dict[str, Any]) -> str:
    ref = event["objectRef"]
    resource = ref["resource"] + (f"/{ref['subresource']}" if ref.get("subresource") else "")
    resource += f".{ref['apiGroup']}" if ref.get("apiGroup") else ""
    where = "/".join(part for part in (ref.get("namespace"), ref.get("name")) if part)
    code = (event.get("responseStatus") or {}).get("code")
    return f"{event['verb']} {resource} {where} -> {code} ({str(event.get('userAgent', ''))[:40]})"


def patched_objects(cluster: Any, mark: int) -> list[tuple[str, str, str | None, str]]:
    """``(apiVersion, resource, namespace, name)`` of every object the test's clients PATCHed since ``mark``."""
    found = {(f"{ref['apiGroup']}/{ref['apiVersion']}" if ref.get("apiGroup") else ref["apiVersion"],
              ref["resource"], ref.get("namespace"), ref["name"])
             for ref in (e["objectRef"] for e in cluster.audit_events(mark) if e["verb"] == "patch")}
    return sorted(found, key=str)


def resource_versions(cluster: Any, refs: list[tuple[str, str, str | None, str]]) -> dict[tuple, str]:
    """The stored ``metadata.resourceVersion`` of each object: it changes with every write the API server keeps."""
    dynamic = cluster.dynamic()
    return {ref: dynamic.resources.get(api_version=ref[0], name=ref[1]).get(name=ref[3], namespace=ref[2])
            .metadata.resourceVersion for ref in refs}


def committed_writes(cluster: Any, mark: int) -> list[str]:
    """The test's clients' write requests since ``mark`` that were not dry runs (`?dryRun=All`): what check mode
    must never send. Dry runs change nothing, and check mode may send them (kubernetes.core.k8s does)."""
    from cluster.fixtures import WRITE_VERBS

    return [describe(e) for e in cluster.audit_events(mark)
            if e["verb"] in WRITE_VERBS and "dryRun=" not in e.get("requestURI", "")]


def wait_for(what: str, probe: Callable[[], Any], timeout: float = 60.0) -> Any:
    """Poll ``probe`` until it returns something true (returned), or fail naming ``what`` after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while True:
        value = probe()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(0.25)


def plain(value: Any) -> Any:
    """ansible-inventory's JSON without Ansible 2.19's untrusted-string wrappers ({"__ansible_unsafe": s}), as AWX
    stores it: plain values."""
    if isinstance(value, dict):
        if set(value) == {"__ansible_unsafe"}:
            return value["__ansible_unsafe"]
        return {key: plain(item) for key, item in value.items()}
    if isinstance(value, list):
        return [plain(item) for item in value]
    return value


def said(result: Any) -> str:
    """A run's output, stdout then stderr, with the YAML callback's line folding undone: what to search in."""
    return " ".join((result.stdout + result.stderr).split())


def output(result: Any) -> str:
    """What to show when a playbook run surprised a test."""
    return f"rc={result.rc} recap={result.recap}\n{result.stdout[-6000:]}\n{result.stderr[-3000:]}"


FLEET_NAMESPACE = "fleet"


@contextlib.contextmanager
def fleet_of(workdir: Path, names: list[str] | tuple[str, ...], *, broken: tuple[str, ...] = (),
             ready_after: float = 0.0, management_options: dict[str, Any] | None = None,
             ) -> Iterator[tuple[Any, dict[str, Any], str]]:
    """(management cluster, {name: workload cluster}, inventory file): one real cluster per name, and a management
    cluster holding, per name, a ServingStack CR (the Standard example, labelled with its region) and the Secret
    with that cluster's kubeconfig, in namespace ``fleet``. The ``broken`` clusters' API servers are stopped once
    their CRs exist. The inventory file reads the CRs through modelplane.serving.servingstacks. ``management_options``
    go to the management cluster's `running_cluster` (a token webhook's ``apiserver_args``, for one)."""
    from cluster.fixtures import running_cluster

    with contextlib.ExitStack() as stack:
        # The management cluster runs no workload: one node, no operator double.
        management = stack.enter_context(running_cluster(workdir / "management", operator_double=False, nodes=1,
                                                         gpu_nodes=0, **(management_options or {})))
        management.kubectl("apply", "-f", str(REPO / "crds" / "servingstacks.infrastructure.modelplane.ai.yaml"))
        workloads = {name: stack.enter_context(running_cluster(workdir / name, ready_after=ready_after))
                     for name in names}
        documents: list[dict] = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": FLEET_NAMESPACE}}]
        for name, workload in workloads.items():
            doc = manifest()
            doc["metadata"] = {"name": name, "namespace": FLEET_NAMESPACE, "labels": {"region": name.split("-")[0]}}
            doc["spec"]["secrets"] = [{"type": "Kubeconfig", "name": f"{name}-kubeconfig", "key": "kubeconfig"}]
            kubeconfig = base64.b64encode(Path(workload.kubeconfig).read_bytes()).decode()
            documents += [{"apiVersion": "v1", "kind": "Secret", "type": "Opaque", "data": {"kubeconfig": kubeconfig},
                           "metadata": {"name": f"{name}-kubeconfig", "namespace": FLEET_NAMESPACE}}, doc]
        management.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(documents))
        for name in broken:
            workloads[name].stop_apiserver()
        inventory = management.workdir / "fleet.servingstacks.yml"
        inventory.write_text(yaml.safe_dump({"plugin": "modelplane.serving.servingstacks",
                                             "namespaces": [FLEET_NAMESPACE], "kubeconfig": management.kubeconfig}))
        yield management, workloads, str(inventory)


def fleet_vars(workload: Any) -> dict[str, Any]:
    """Extra vars of a fleet converge: the test charts and offline CRD URLs (each cluster's spec and kubeconfig
    come from the inventory and the management cluster)."""
    return {key: value for key, value in stack_vars(workload).items()
            if key not in ("servingstack_definition", "servingstack_kubeconfig")}


def helm_calls(log: Path) -> list[list[str]]:
    """The arguments of every helm process the spy (ClusterHandle.helm_spy) logged to ``log``."""
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def helm_processes(log: Path) -> int:
    """How many helm processes the spy (ClusterHandle.helm_spy) logged to ``log``."""
    return len(helm_calls(log))


def crd_names(cluster: Any) -> set[str]:
    return {crd["metadata"]["name"] for crd in listed(cluster, "apiextensions.k8s.io/v1", "CustomResourceDefinition")}


def example_plan() -> list[dict[str, Any]]:
    """The install plan of the example ServingStack (the Standard stack), as servingstack_spec makes it."""
    from ansible_collections.modelplane.serving.plugins.module_utils.servingstack import plan, spec

    return plan.build_plan(spec.validate(yaml.safe_load(EXAMPLE.read_text())).manifest["spec"])


def helm_waits(entries: list[dict[str, Any]]) -> int:
    """The waits one cluster's converge makes one after the other: one per release of a component a later one needs
    (helm's --wait), and one at the end for the rest."""
    return sum(len(entry["releases"]) for entry in entries if entry["wait"]) + 1


def hook_jobs(cluster: Any, entries: list[dict[str, Any]]) -> int:
    """The install hook Jobs of the releases of ``entries`` installed on ``cluster`` (``helm get hooks``): helm runs
    each one and waits for it to complete, with or without --wait, one after the other."""
    count = 0
    for entry in entries:
        for release in entry["releases"]:
            proc = subprocess.run(["helm", "get", "hooks", release["release"], "-n", release["namespace"]],
                                  env=cluster.env, capture_output=True, text=True, check=True)
            count += sum(1 for hook in yaml.safe_load_all(proc.stdout) if hook and hook.get("kind") == "Job"
                         and "install" in (hook["metadata"].get("annotations") or {}).get("helm.sh/hook", ""))
    return count


# The cores this process may run on (its CPU affinity, which a container or CI runner may narrow below the machine's),
# for the benchmarks' CPU floors: the CPU a run used / these cores.
CORES = len(os.sched_getaffinity(0))


def cpu_seconds() -> float:
    """CPU (user + system) used so far by this process's waited-for children: ansible-playbook runs and what they
    waited for (workers, modules, helm). The clusters, still running, are not counted, nor this process."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return children.ru_utime + children.ru_stime
