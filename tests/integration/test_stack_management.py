"""A live ServingStack (the Standard example) on a management cluster of its own, converged by site.yml's job template
launched as AWX launches it (through ansible-runner, tests/integration/awx_jobs.py) with AWX's Kubernetes credential
injected as AWX injects it (K8S_AUTH_HOST, K8S_AUTH_API_KEY, K8S_AUTH_VERIFY_SSL, K8S_AUTH_SSL_CA_CERT, plus
K8S_AUTH_KUBECONFIG/KUBECONFIG naming a kubeconfig with the same token), and a target cluster named by the spec's
Kubeconfig secret: two real clusters (testing/cluster). The management cluster's API server takes the AWX token
through our token webhook (testing/cluster/token_webhook.py) and refuses requests without credentials. The converge
writes only to the target; the CR, its secret and its status stay on the management cluster. The tests run in
order."""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import yaml
from awx_jobs import job_template, launch_job, script_data
from cluster.fixtures import WRITE_VERBS, PlaybookResult, count_requests, running_cluster
from cluster.token_webhook import token_kubeconfig, token_webhook
from stack_support import (
    REPO,
    UPSTREAM,
    chart_mirror,
    example_plan,
    get,
    listed,
    manifest,
    output,
    releases,
    stack_vars,
)

pytestmark = [
    pytest.mark.playbook,
    pytest.mark.slow,
    pytest.mark.skipif(not UPSTREAM.is_dir(), reason="needs ../shared/upstream (charts and CRDs for the cluster)"),
]

API = "infrastructure.modelplane.ai/v1alpha1"
API_KEY = "awx-management-token-51e0b7"  # the AWX Kubernetes credential's bearer token
AWX_USER = "awx-kubernetes-credential"  # whom the webhook says the token is


@pytest.fixture(scope="module")
def webhook(tmp_path_factory):
    """The management cluster's token authenticator: API_KEY and nothing else."""
    with token_webhook(tmp_path_factory.mktemp("webhook"), tokens={API_KEY}, anonymous=False,
                       username=AWX_USER) as hook:
        yield hook


@pytest.fixture(scope="module")
def management(cluster, webhook, tmp_path_factory):
    """A second cluster holding the ServingStack CRD, the live CR and the target's Kubeconfig secret. One node and
    no operator double: nothing runs there."""
    workdir = tmp_path_factory.mktemp("management")
    with running_cluster(workdir, nodes=1, gpu_nodes=0, operator_double=False,
                         apiserver_args=webhook.apiserver_args) as handle:
        handle.kubectl("apply", "-f", str(REPO / "crds" / "servingstacks.infrastructure.modelplane.ai.yaml"))
        handle.wait_established("servingstacks.infrastructure.modelplane.ai")
        doc = manifest()
        doc["spec"]["secrets"] = [s for s in doc["spec"]["secrets"] if s["type"] == "Kubeconfig"]
        kubeconfig = base64.b64encode(Path(cluster.kubeconfig).read_bytes()).decode()
        handle.kubectl("apply", "-f", "-", input=yaml.safe_dump_all([
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "platform"}},
            {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "west-gke-kubeconfig", "namespace": "platform"},
             "type": "Opaque", "data": {"kubeconfig": kubeconfig}},
            doc,
        ]))
        # The kubeconfig of the AWX job: the management cluster, its CA, and the credential's token (no client
        # certificate: every request of the run to the management cluster is the token's).
        path = awx_kubeconfig(handle)
        path.write_text(yaml.safe_dump(token_kubeconfig(handle.url, handle.ca_file, API_KEY, name="management")))
        path.chmod(0o600)
        yield handle


def awx_kubeconfig(management) -> Path:
    return Path(management.workdir) / "awx.kubeconfig"


def converge(cluster, management, **more):
    """site.yml's job template launched on the live CR (servingstack_name, no servingstack_kubeconfig) as AWX launches
    it (tests/integration/awx_jobs.py): through ansible-runner, with AWX's Kubernetes bearer-token credential for the
    management cluster (K8S_AUTH_HOST, K8S_AUTH_API_KEY, K8S_AUTH_VERIFY_SSL, its CA a file of the job:
    K8S_AUTH_SSL_CA_CERT) and the management kubeconfig credential (K8S_AUTH_KUBECONFIG and KUBECONFIG, a kubeconfig
    with the same token). Returns the run (its requests those to the target), the management cluster's writes
    ("verb resource" -> count) and the run's requests to it (its audit log's events)."""
    env = more.pop("env", {})
    extra = stack_vars(cluster, servingstack_name="west-gke-stack", servingstack_namespace="platform", **more)
    del extra["servingstack_definition"], extra["servingstack_kubeconfig"]
    mark, target_mark = management.audit_mark(), cluster.audit_mark()
    job = launch_job(Path(cluster.workdir), "converge", job_template("playbooks/site.yml"),
                     script_data({"_meta": {"hostvars": {}}}), extra, awx_kubeconfig(management).read_text(),
                     timeout=900, bearer_token=(management.url, API_KEY, Path(management.ca_file).read_text()),
                     environment=env)
    result = PlaybookResult(job.rc, job.stdout, job.stderr, job.recap, cluster.requests_since(target_mark))
    events = management.audit_events(mark)
    writes = {key: n for key, n in count_requests(events)["resources"].items() if key.split(" ")[0] in WRITE_VERBS}
    # kubernetes.core leaves its discovery cache (k8srcp-*.json) there; our private files must be gone.
    left = [path.name for path in (job.private_data_dir / "tmp").iterdir()
            if "kubeconfig" in path.name or "servingstack" in path.name]
    assert left == [], f"temporary files were left behind: {left}"
    return result, writes, events


def live(management) -> dict:
    return get(management, API, "ServingStack", "west-gke-stack", "platform")


# The audit log's objectRef names the resource; the counts leave the subresource out: a /status patch is this.
STATUS_PATCH = "patch servingstacks.infrastructure.modelplane.ai"


def conditions(doc: dict) -> dict[str, dict]:
    return {condition["type"]: condition for condition in doc["status"]["conditions"]}


def test_a_failed_converge_is_recorded_in_the_live_status(cluster, management):
    generation = live(management)["metadata"]["generation"]
    # A ValidatingAdmissionPolicy denies cert-manager's Deployments: its atomic install fails and is rolled back.
    allow = cluster.deny_writes("Deployment", "cert-manager", "mp-cert-manager")
    try:
        result, writes, _users = converge(cluster, management)
    finally:
        allow()
    assert result.rc != 0, output(result)
    assert set(writes) <= {STATUS_PATCH} and writes, writes
    status = live(management)["status"]
    ready, synced = conditions(live(management))["Ready"], conditions(live(management))["Synced"]
    assert (ready["status"], ready["reason"]) == ("False", "CertManagerFailed"), ready
    assert (synced["status"], synced["reason"]) == ("False", "CertManagerFailed"), synced
    assert ready["message"].startswith("cert_manager: Error: "), ready
    # The API server's refusal, in a ValidatingAdmissionPolicy's wording ("... with binding ... denied request: ...").
    assert "denied request" in ready["message"], ready
    assert "trust_manager: not attempted: it needs cert_manager, which did not converge" in ready["message"], ready
    assert ready["observedGeneration"] == generation == status["observedGeneration"]
    components = {entry["name"]: entry for entry in status["components"]}
    assert components["cert_manager"] == {"name": "cert_manager", "ready": False}, components
    assert components["nfd"]["version"], components
    # A failure blocks only what needs it: the rest converged beside it.
    assert {name: entry["ready"] for name, entry in components.items()} == {
        "cert_manager": False, "trust_manager": False, "nfd": True, "nvidia_dra": True, "envoy_gateway": True,
        "lws": True, "prometheus": True}
    # The gateway converged beside the failure: its address is in the status as before.
    assert status["gateway"]["address"]


def test_the_converge_writes_to_the_target_only(cluster, management, webhook):
    webhook.reviews.clear()
    result, writes, events = converge(cluster, management, servingstack_write_status=False)
    assert result.rc == 0, output(result)
    assert writes == {}, writes
    found = releases(cluster)
    assert found and all(release["status"] == "deployed" for release in found.values()), found
    assert releases(management) == {}
    # The live CR was read from the management cluster (the target has no ServingStack CRD at all).
    assert get(cluster, "apiextensions.k8s.io/v1", "CustomResourceDefinition",
               "servingstacks.infrastructure.modelplane.ai") is None
    assert any(key.startswith("get servingstacks") for key in count_requests(events)["resources"]), events
    # ... with the AWX credential's token: every request of the run was the token's user (only the webhook says
    # AWX_USER), and no other token was shown to the management cluster.
    assert {event["user"]["username"] for event in events} == {AWX_USER}
    assert webhook.refused() == []
    assert get(cluster, "gateway.networking.k8s.io/v1", "Gateway", "inference-gateway", "envoy-gateway-system") \
        or get(cluster, "gateway.networking.k8s.io/v1", "Gateway", "inference-gateway", "modelplane-system")


def test_a_good_converge_is_ready_with_versions_and_keeps_the_transition_times(cluster, management):
    before = conditions(live(management))
    result, writes, _users = converge(cluster, management)
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
    result, writes, _users = converge(cluster, management)
    assert result.rc == 0, output(result)
    assert writes == {}, writes
    assert conditions(live(management)) == conditions(doc)


# A converge that stops before its components: Ready=False and Synced=False with the reason of where it stopped, on
# the management cluster alone. Each test changes the live CR, converges, and puts the CR back.
def patch_spec(management, patch: dict) -> int:
    """Merge ``patch`` into the live CR's spec; its new generation."""
    management.kubectl("patch", "servingstack", "west-gke-stack", "-n", "platform", "--type=merge",
                       "-p", json.dumps({"spec": patch}))
    return live(management)["metadata"]["generation"]


def assert_stopped(management, before: dict, generation: int, reason: str, components_ran: bool = False) -> dict:
    """The CR's Ready and Synced are False with ``reason``, one message line, at ``generation``; the gateway stays as
    ``before`` had it, and the components too (nothing of the target was read) or, with ``components_ran``, each
    not ready at the version ``before`` had (none converged). Returns the Ready condition."""
    doc = live(management)
    ready, synced = conditions(doc)["Ready"], conditions(doc)["Synced"]
    assert (ready["status"], ready["reason"]) == ("False", reason), ready
    assert {key: value for key, value in synced.items() if key != "type"} == \
        {key: value for key, value in ready.items() if key != "type"}, (ready, synced)
    assert ready["message"] and "\n" not in ready["message"], ready
    assert ready["observedGeneration"] == generation == doc["status"]["observedGeneration"], doc["status"]
    assert doc["status"]["gateway"] == before["status"]["gateway"]
    if components_ran:
        assert doc["status"]["components"] == [{**entry, "ready": False} for entry in before["status"]["components"]]
    else:
        assert doc["status"]["components"] == before["status"]["components"]
    return ready


def failed_converge(cluster, management, change: dict, restore: dict, **more):
    """Patch the live CR's spec with ``change``, converge (``more`` as converge takes it), patch ``restore`` back: the
    run, which must fail having written nothing but the CR's status on the management cluster, and its new
    generation."""
    generation = patch_spec(management, change)
    try:
        result, writes, _events = converge(cluster, management, **more)
    finally:
        patch_spec(management, restore)
    assert result.rc != 0, output(result)
    assert set(writes) == {STATUS_PATCH}, writes
    return result, generation


def test_a_missing_kubeconfig_secret_turns_the_ready_stack_not_ready(cluster, management):
    before = live(management)
    assert conditions(before)["Ready"]["status"] == "True", before["status"]  # the good converge's
    missing = {"secrets": [{"type": "Kubeconfig", "name": "west-gke-missing", "key": "kubeconfig"}]}
    result, generation = failed_converge(cluster, management, missing, {"secrets": before["spec"]["secrets"]})
    assert result.requests.get("total", 0) == 0, result.requests  # the target was never called
    ready = assert_stopped(management, before, generation, "CredentialsUnavailable")
    assert ready["message"] == ("spec.secrets[0]: Secret platform/west-gke-missing was not found on the management "
                                "cluster"), ready
    assert ready["lastTransitionTime"] != conditions(before)["Ready"]["lastTransitionTime"]


def test_an_invalid_live_spec_is_recorded_on_the_cr(cluster, management):
    before = live(management)
    bogus = "-----BEGIN CERTIFICATE-----\nQUJDRA==\n-----END CERTIFICATE-----\n"
    result, generation = failed_converge(cluster, management,
                                         {"gateway": {"clientCAs": [{"name": "bogus", "certificate": bogus}]}},
                                         {"gateway": {"clientCAs": None}})
    assert result.requests.get("total", 0) == 0, result.requests
    ready = assert_stopped(management, before, generation, "InvalidSpec")
    assert ready["message"] == ("invalid ServingStack: - spec.gateway.clientCAs[0].certificate: a CERTIFICATE block "
                                "does not parse as an X.509 certificate (the value is not shown)"), ready


def add_kubeconfig_secret(management, name: str, target) -> None:
    """A kubeconfig Secret ``name`` in platform on the management cluster, for ``target``."""
    kubeconfig = base64.b64encode(Path(target.kubeconfig).read_bytes()).decode()
    management.kubectl("apply", "-f", "-", input=yaml.safe_dump(
        {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "namespace": "platform"},
         "type": "Opaque", "data": {"kubeconfig": kubeconfig}}))


def wait_for_file(path: Path, timeout: float) -> bool:
    """Whether ``path`` appeared within ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not path.exists():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def test_a_stack_whose_cluster_is_down_is_not_ready(cluster, management, fresh_cluster):
    before = live(management)
    add_kubeconfig_secret(management, "west-gke-down", fresh_cluster)
    fresh_cluster.stop_apiserver()
    down = {"secrets": [{"type": "Kubeconfig", "name": "west-gke-down", "key": "kubeconfig"}]}
    result, generation = failed_converge(cluster, management, down, {"secrets": before["spec"]["secrets"]})
    ready = assert_stopped(management, before, generation, "ClusterUnreachable")
    assert fresh_cluster.url in ready["message"] and "Connection refused" in ready["message"], ready
    # The run fails with the same error, once.
    assert "Connection refused" in " ".join(result.stdout.split()), output(result)


# A helm that, asked to install or upgrade (kubernetes.core.helm runs `helm --version=... upgrade -i ...`), says so
# (a file "dying" in DYING_DIR) and waits for the test to stop the cluster's API server ("dead") before it runs as
# the real helm: the cluster dies part-way through the components.
DYING_HELM = """#!{python}
import os, sys, time
if "upgrade" in sys.argv:
    marks = os.environ["DYING_DIR"]
    open(os.path.join(marks, "dying"), "a").close()
    deadline = time.monotonic() + 300
    while not os.path.exists(os.path.join(marks, "dead")) and time.monotonic() < deadline:
        time.sleep(0.1)
os.execv({helm!r}, [{helm!r}, *sys.argv[1:]])
"""


def test_a_stack_whose_cluster_dies_during_the_components_is_not_ready(cluster, management, fresh_cluster, tmp_path):
    before = live(management)
    add_kubeconfig_secret(management, "west-gke-dying", fresh_cluster)
    (tmp_path / "bin").mkdir()
    helm = tmp_path / "bin" / "helm"
    helm.write_text(DYING_HELM.format(python=sys.executable, helm=shutil.which("helm", path=cluster.env["PATH"])))
    helm.chmod(0o755)

    stopped_during_the_run = []

    def stop_when_helm_installs() -> None:
        if wait_for_file(tmp_path / "dying", timeout=600) and not (tmp_path / "done").exists():
            fresh_cluster.stop_apiserver()
            stopped_during_the_run.append(True)
        (tmp_path / "dead").touch()

    stopper = threading.Thread(target=stop_when_helm_installs)
    stopper.start()
    try:
        dying = {"secrets": [{"type": "Kubeconfig", "name": "west-gke-dying", "key": "kubeconfig"}]}
        env = {"PATH": f"{tmp_path / 'bin'}{os.pathsep}{cluster.env['PATH']}", "DYING_DIR": str(tmp_path)}
        result, generation = failed_converge(cluster, management, dying, {"secrets": before["spec"]["secrets"]},
                                             env=env)
    finally:
        (tmp_path / "done").touch()
        (tmp_path / "dying").touch()  # the stopper's wait ends either way
        stopper.join()
    assert stopped_during_the_run, "no helm install or upgrade ran"
    # The preflight passed, the first release's helm found the cluster gone: the components failed, then reading the
    # gateway's status failed, and the CR says the cluster is unreachable.
    text = " ".join(result.stdout.split())
    assert "Check the target cluster can take the stack" in text and "did not converge" in text, output(result)
    ready = assert_stopped(management, before, generation, "ClusterUnreachable", components_ran=True)
    assert fresh_cluster.url in ready["message"] and "Connection refused" in ready["message"], ready
    # The message names the components first: every one of them did not converge.
    failed, separator, then = ready["message"].partition(" did not converge, then ")
    assert separator, ready
    assert set(failed.split(", ")) == {entry["name"] for entry in before["status"]["components"]}, ready
    # ansible-core's words around the lookup's own message are kept as they are (issue 35: not parsed).
    assert f"servingstack_status: cannot reach the cluster at {fresh_cluster.url}" in then, ready


# What of the management cluster a converge may touch: the live ServingStack (read, and its status written) and the
# Secret with the target's kubeconfig (read). The audit log's counts leave the subresource out (STATUS_PATCH).
MANAGEMENT_REQUESTS = {"get servingstacks.infrastructure.modelplane.ai", STATUS_PATCH, "get secrets"}


def install_own_lws(management) -> dict:
    """The management cluster runs a stack of its own: here its LeaderWorkerSet release, mp-lws in lws-system, the
    same release a switch of the target to Dynamo prunes there. Installed with helm from the test charts, as
    the management cluster's own admin (not the AWX token)."""
    lws = next(entry for entry in example_plan() if entry["name"] == "lws")["releases"][0]
    helm = shutil.which("helm", path=management.env["PATH"])
    proc = subprocess.run([helm, "upgrade", "--install", lws["release"], lws["chart"], "--repo", chart_mirror(),
                           "--version", str(lws["version"]), "--namespace", lws["namespace"], "--create-namespace",
                           "--kubeconfig", management.kubeconfig],
                          capture_output=True, text=True, env=management.env, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr
    return lws


def test_switching_the_stack_prunes_the_target_and_never_the_management_clusters_own_stack(cluster, management):
    """AWX's credential (K8S_AUTH_*) and the default kubeconfig name the management cluster, which runs a stack of
    its own: switching the target's ServingStack from Standard to Dynamo uninstalls the target's LeaderWorkerSet,
    and the management cluster's releases and objects stay as they were; of the converge's requests only the
    ServingStack's read and status write (and the kubeconfig Secret's read) reach the management cluster."""
    lws = install_own_lws(management)
    if lws["release"] not in releases(cluster):  # the Standard stack, unless the earlier tests converged it
        standard, _writes, _events = converge(cluster, management)
        assert standard.rc == 0, output(standard)
    assert lws["release"] in releases(cluster), releases(cluster)
    own_releases = releases(management)
    own_objects = {(doc["kind"], doc["metadata"]["name"]): doc["metadata"]["resourceVersion"]
                   for kind in ("Deployment", "Service", "ServiceAccount")
                   for doc in listed(management, "apps/v1" if kind == "Deployment" else "v1", kind, lws["namespace"])}
    assert own_objects, "the management cluster's own release made no objects"
    before = live(management)
    patch_spec(management, {"stack": "Dynamo"})
    try:
        result, writes, events = converge(cluster, management)
    finally:
        patch_spec(management, {"stack": before["spec"].get("stack", "Standard")})
    assert result.rc == 0, output(result)
    # The target: Dynamo converged, the Standard stack's LeaderWorkerSet uninstalled.
    found = releases(cluster)
    assert lws["release"] not in found, found
    assert {"mp-kai-scheduler", "mp-grove-charts"} <= {name for name, r in found.items() if r["status"] == "deployed"}
    # The management cluster: its own stack untouched, and reached only for the ServingStack and its Secret.
    assert releases(management) == own_releases
    assert {(doc["kind"], doc["metadata"]["name"]): doc["metadata"]["resourceVersion"]
            for kind in ("Deployment", "Service", "ServiceAccount")
            for doc in listed(management, "apps/v1" if kind == "Deployment" else "v1", kind, lws["namespace"])} \
        == own_objects
    requested = set(count_requests(events)["resources"])
    assert requested <= MANAGEMENT_REQUESTS, sorted(requested - MANAGEMENT_REQUESTS)
    assert set(writes) == {STATUS_PATCH}, writes
