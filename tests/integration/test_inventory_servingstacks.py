"""The servingstacks inventory plugin through the real `ansible-inventory` (and `ansible`) against a real management
cluster (testing/cluster) that holds four ServingStacks: a Standard one with a status, a Dynamo one, one in a
namespace the narrow inventories leave out, and an invalid one (listener port 70000 and an Envoy Gateway pin out of
range: created under an older, looser CRD, as a CR from before a CRD tightening would be).

The API server accepts two credentials: its kubeconfig's client certificate and the bearer token API_KEY (what an
AWX Kubernetes credential injects as K8S_AUTH_API_KEY), which our token webhook (testing/cluster/token_webhook.py)
accepts; a request without either is refused (anonymous-auth=false). Neither the token nor the kubeconfig's client
key may appear in what the inventory prints."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
from pathlib import Path

import pytest
import yaml
from ansible_collections.modelplane.serving.plugins.module_utils.servingstack.outcome import PREFIX, outcome
from cluster.fixtures import REPO, VENV_BIN, running_cluster
from cluster.token_webhook import token_webhook
from stack_support import plain

pytestmark = [pytest.mark.playbook, pytest.mark.slow]

API = "infrastructure.modelplane.ai/v1alpha1"
CRD = REPO / "crds" / "servingstacks.infrastructure.modelplane.ai.yaml"
CRD_NAME = "servingstacks.infrastructure.modelplane.ai"
API_KEY = "awx-management-token-7c41d9"
PLUGIN = "modelplane.serving.servingstacks"

WEST, EAST, BROKEN, SCRATCH = "platform/west-gke-stack", "team-a/east-dynamo", "platform/broken-stack", \
    "sandbox/scratch"
PORT_70000 = {"name": "http", "port": 70000, "protocol": "HTTP"}
READY = {"observedGeneration": 1, "conditions": [
    {"type": "Ready", "status": "True", "reason": "Available", "message": "", "observedGeneration": 1,
     "lastTransitionTime": "2026-12-01T10:00:00Z"}]}


def servingstack(name: str, namespace: str, labels: dict[str, str], **spec: object) -> dict:
    return {"apiVersion": API, "kind": "ServingStack", "metadata": {"name": name, "namespace": namespace,
                                                                    "labels": labels},
            "spec": {"secrets": [{"type": "Kubeconfig", "name": f"{name}-kubeconfig", "key": "kubeconfig"}], **spec}}


def looser_crd() -> dict:
    """The CRD without the listener port's maximum and the Envoy Gateway range: what an older CRD that bounded
    neither would accept."""
    crd = yaml.safe_load(CRD.read_text())
    schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    del schema["properties"]["spec"]["properties"]["gateway"]["properties"]["listeners"]["items"]["properties"][
        "port"]["maximum"]
    envoy_gateway = schema["properties"]["spec"]["properties"]["versions"]["properties"]["envoyGateway"]
    envoy_gateway["x-kubernetes-validations"] = [rule for rule in envoy_gateway["x-kubernetes-validations"]
                                                 if "is out of range" not in rule["message"]]
    return crd


def kubeconfig_key(management) -> str:
    """The client key in the management cluster's kubeconfig (base64, as the file holds it): a secret."""
    return yaml.safe_load(Path(management.kubeconfig).read_text())["users"][0]["user"]["client-key-data"]


def assert_no_credential(management, text: str) -> None:
    assert API_KEY not in text
    assert kubeconfig_key(management) not in text and "PRIVATE KEY" not in text


def wait_for_the_tighter_schema(handle, timeout: float = 30) -> None:
    """The API server serves an updated CRD's schema a moment after the update: probe with server-side dry runs."""
    probe = yaml.safe_dump(servingstack("probe", "platform", {}, gateway={"listeners": [PORT_70000]}))
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if "65535" in handle.kubectl("create", "--dry-run=server", "-f", "-", check=False, input=probe).stderr:
            return
        time.sleep(0.3)


@pytest.fixture(scope="module")
def management(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("management")
    # One node, no operator double: nothing is scheduled. The audit log counts the inventory's requests.
    with token_webhook(workdir / "webhook", tokens={API_KEY}, anonymous=False) as webhook, \
            running_cluster(workdir / "cluster", nodes=1, gpu_nodes=0, operator_double=False,
                            apiserver_args=webhook.apiserver_args) as handle:
        handle.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(
            [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
             for name in ("platform", "team-a", "sandbox")]))
        handle.kubectl("apply", "-f", "-", input=yaml.safe_dump(looser_crd()))
        handle.wait_established(CRD_NAME)
        handle.kubectl("apply", "--server-side", "-f", "-", input=yaml.safe_dump(servingstack(
            "broken-stack", "platform", {"fleet": "staging"},
            gateway={"listeners": [PORT_70000]}, versions={"envoyGateway": "v1.9.0"})))
        handle.kubectl("apply", "-f", str(CRD))
        wait_for_the_tighter_schema(handle)
        refused = handle.kubectl("apply", "-f", "-", check=False, input=yaml.safe_dump(servingstack(
            "refused", "platform", {}, gateway={"listeners": [PORT_70000]})))
        assert refused.returncode != 0 and "65535" in refused.stderr, "the real CRD must refuse port 70000"
        handle.kubectl("apply", "--server-side", "-f", "-", input=yaml.safe_dump_all([
            servingstack("west-gke-stack", "platform", {"fleet": "prod", "region": "us-west"}),
            servingstack("east-dynamo", "team-a", {"fleet": "prod", "team": "ml-platform"}, stack="Dynamo"),
            servingstack("scratch", "sandbox", {"fleet": "prod"}),
        ]))
        handle.kubectl("patch", "servingstack", "west-gke-stack", "-n", "platform", "--subresource=status",
                       "--type=merge", "-p", json.dumps({"status": READY}))
        # Every request needs the kubeconfig's client certificate or API_KEY.
        yield handle


def write_inventory(directory: Path, name: str, config: dict) -> Path:
    path = directory / name
    path.write_text(yaml.safe_dump({"plugin": PLUGIN, **config}))
    return path


def run(management, command: str, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """`ansible-inventory` (or `ansible`) as a user runs it, except that an unparsed source fails the command."""
    environment = {**management.env, "ANSIBLE_INVENTORY_UNPARSED_FAILED": "true",
                   "TMPDIR": str(management.workdir), **(env or {})}
    return subprocess.run([str(VENV_BIN / command), *args], env=environment, cwd=REPO, capture_output=True,
                          text=True, timeout=180, check=False)


def listed_and_printed(management, path: Path, env: dict[str, str] | None = None) -> tuple[dict, str]:
    """`ansible-inventory --list`: the inventory, and everything the command printed."""
    result = run(management, "ansible-inventory", "-i", str(path), "--list", env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    return plain(json.loads(result.stdout)), result.stdout + result.stderr


def listed(management, path: Path, env: dict[str, str] | None = None) -> dict:
    return listed_and_printed(management, path, env)[0]


def graph(text: str) -> tuple[dict[str, set[str]], dict[tuple[str, str], list[str]]]:
    """`--graph [--vars]` output as group -> hosts, and (group, host) -> the host's variable lines there."""
    groups: dict[str, set[str]] = {}
    variables: dict[tuple[str, str], list[str]] = {}
    path: list[str] = []
    for line in text.splitlines():
        entry = line.lstrip(" |")
        depth = (len(line) - len(entry)) // 3
        if entry.startswith("@"):
            path = [entry[1:-1]]
        elif entry.startswith("--@"):
            path = [*path[:depth], entry[3:-1]]
            groups.setdefault(path[-1], set())
        elif entry.startswith("--{"):
            variables.setdefault((path[depth - 2], path[depth - 1]), []).append(entry[3:-1])
        elif entry.startswith("--"):
            path = [*path[:depth], entry[2:]]
            groups.setdefault(path[depth - 1], set()).add(entry[2:])
    return groups, variables


def module_errors(definition: dict) -> list[str]:
    """The problems servingstack_spec reports for ``definition``, as its message lists them."""
    result = outcome(definition, [])
    assert result.get("failed"), result
    return [line.removeprefix("- ") for line in result["msg"].removeprefix(PREFIX).strip().splitlines()]


@pytest.fixture(scope="module")
def fleet_file(management, tmp_path_factory) -> Path:
    """What a user writes: the management cluster's kubeconfig, and groups by label."""
    return write_inventory(tmp_path_factory.mktemp("inventories"), "fleet.servingstacks.yml", {
        "kubeconfig": management.kubeconfig,
        "keyed_groups": [{"key": "servingstack_labels", "prefix": "label"}],
    })


def test_graph_lists_every_servingstack_and_the_invalid_one_with_its_errors(management, fleet_file):
    result = run(management, "ansible-inventory", "-i", str(fleet_file), "--graph")
    assert result.returncode == 0, result.stdout + result.stderr
    groups = graph(result.stdout)[0]
    assert groups["servingstacks"] == {WEST, EAST, BROKEN, SCRATCH}
    assert groups["servingstack_invalid"] == {BROKEN}
    assert groups["servingstack_namespace_platform"] == {WEST, BROKEN}
    assert groups["servingstack_namespace_team_a"] == {EAST}
    assert groups["servingstack_stack_standard"] == {WEST, SCRATCH}
    assert groups["servingstack_stack_dynamo"] == {EAST}
    assert groups["label_fleet_prod"] == {WEST, EAST, SCRATCH}
    assert groups["label_fleet_staging"] == {BROKEN}
    assert groups["label_team_ml_platform"] == {EAST}
    assert "WARNING" not in result.stderr, result.stderr

    with_vars = run(management, "ansible-inventory", "-i", str(fleet_file), "--graph", "--vars", "servingstack_invalid")
    assert with_vars.returncode == 0, with_vars.stderr
    groups, variables = graph(with_vars.stdout)
    assert groups["servingstack_invalid"] == {BROKEN}
    [errors] = [line for line in variables["servingstack_invalid", BROKEN]
                if line.startswith("servingstack_spec_errors = ")]
    assert "spec.gateway.listeners[0].port: 70000 is above the maximum 65535" in errors
    assert 'spec.versions.envoyGateway: "v1.9.0" is out of range' in errors


def test_list_gives_each_host_what_the_converge_needs(management, fleet_file):
    inventory = listed(management, fleet_file)
    hostvars = inventory["_meta"]["hostvars"]
    assert set(hostvars) == {WEST, EAST, BROKEN, SCRATCH}
    west = hostvars[WEST]
    assert west["ansible_connection"] == "local"
    assert west["ansible_python_interpreter"] == "{{ ansible_playbook_python }}"
    assert (west["servingstack_name"], west["servingstack_namespace"]) == ("west-gke-stack", "platform")
    assert west["servingstack_stack"] == "Standard"
    assert west["servingstack_labels"] == {"fleet": "prod", "region": "us-west"}
    assert west["servingstack_live_status"] == READY
    assert west["servingstack_management"] == {"kubeconfig": management.kubeconfig}
    definition = west["servingstack_definition"]
    assert set(definition) == {"apiVersion", "kind", "metadata", "spec"}
    stored = management.dynamic().resources.get(api_version=API, kind="ServingStack").get(
        name="west-gke-stack", namespace="platform").to_dict()
    assert definition["metadata"] == {key: value for key, value in stored["metadata"].items()
                                      if key != "managedFields"}
    assert definition["spec"] == stored["spec"]
    # What the servingstack role's servingstack_definition takes: the module accepts it as it is.
    assert not outcome(definition, []).get("failed")
    assert hostvars[EAST]["servingstack_stack"] == "Dynamo"
    assert hostvars[EAST]["servingstack_live_status"] == {}

    broken = hostvars[BROKEN]
    assert "servingstack_stack" not in broken
    assert broken["servingstack_spec_errors"] == module_errors(broken["servingstack_definition"])
    assert len(broken["servingstack_spec_errors"]) == 2
    assert set(inventory["servingstack_invalid"]["hosts"]) == {BROKEN}
    for host in (WEST, EAST, SCRATCH):
        assert "servingstack_spec_errors" not in hostvars[host]


def test_namespaces_and_a_label_selector_narrow_the_list(management, fleet_file):
    narrow = write_inventory(fleet_file.parent, "prod.servingstacks.yaml", {
        "kubeconfig": management.kubeconfig, "namespaces": ["platform", "team-a"], "label_selector": "fleet=prod"})
    inventory = listed(management, narrow)
    assert set(inventory["_meta"]["hostvars"]) == {WEST, EAST}
    assert "servingstack_invalid" not in inventory


def test_awx_credentials_from_the_environment_never_show(management, fleet_file):
    """AWX's Kubernetes credential: K8S_AUTH_HOST and K8S_AUTH_API_KEY, no kubeconfig at all."""
    bare = write_inventory(fleet_file.parent, "awx.servingstacks.yml", {})
    env = {"K8S_AUTH_HOST": management.url, "K8S_AUTH_API_KEY": API_KEY, "K8S_AUTH_VERIFY_SSL": "true",
           "K8S_AUTH_SSL_CA_CERT": management.ca_file,
           "K8S_AUTH_KUBECONFIG": "", "KUBECONFIG": str(fleet_file.parent / "no-such-kubeconfig")}
    inventory, output = listed_and_printed(management, bare, env=env)
    assert set(inventory["_meta"]["hostvars"]) == {WEST, EAST, BROKEN, SCRATCH}
    assert all(hostvars["servingstack_management"] == {} for hostvars in inventory["_meta"]["hostvars"].values())
    assert_no_credential(management, output)


def test_a_token_in_the_file_is_used_but_never_shown(management, fleet_file):
    given = write_inventory(fleet_file.parent, "token.servingstacks.yml", {
        "host": management.url, "api_key": API_KEY, "validate_certs": True, "ca_cert": management.ca_file})
    no_kubeconfig = {"K8S_AUTH_KUBECONFIG": "", "KUBECONFIG": "/nonexistent"}
    inventory, output = listed_and_printed(management, given, env=no_kubeconfig)
    assert set(inventory["_meta"]["hostvars"]) == {WEST, EAST, BROKEN, SCRATCH}
    management_settings = {"host": management.url, "validate_certs": True, "ca_cert": management.ca_file}
    assert inventory["_meta"]["hostvars"][WEST]["servingstack_management"] == management_settings
    assert_no_credential(management, output)
    graph_vars = run(management, "ansible-inventory", "-i", str(given), "--graph", "--vars", env=no_kubeconfig)
    assert graph_vars.returncode == 0
    assert_no_credential(management, graph_vars.stdout + graph_vars.stderr)


def test_every_host_runs_on_the_controller(management, fleet_file):
    result = run(management, "ansible", "-i", str(fleet_file), "servingstacks", "-m", "ansible.builtin.ping")
    assert result.returncode == 0, result.stdout + result.stderr
    for host in (WEST, EAST, BROKEN, SCRATCH):
        assert f"{host} | SUCCESS" in result.stdout, result.stdout


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.parametrize("config,fragment", [
    (lambda management: {"host": f"https://127.0.0.1:{free_port()}", "api_key": API_KEY,
                         "ca_cert": management.ca_file}, "Connection refused"),
    (lambda management: {"host": management.url, "api_key": "wrong-token", "ca_cert": management.ca_file},
     "401 Unauthorized"),
], ids=["unreachable", "unauthorized"])
def test_a_cluster_it_cannot_use_fails_naming_the_server(management, fleet_file, config, fragment):
    settings = config(management)
    path = write_inventory(fleet_file.parent, "failing.servingstacks.yml", settings)
    result = run(management, "ansible-inventory", "-i", str(path), "--graph")
    assert result.returncode != 0
    assert f"the management cluster at {settings['host']}: " in result.stderr, result.stderr
    assert fragment in result.stderr, result.stderr
    assert "Traceback" not in result.stderr and API_KEY not in result.stderr


def test_a_cluster_without_the_crd_says_so(tmp_path):
    with running_cluster(tmp_path / "cluster", nodes=1, gpu_nodes=0, operator_double=False, audit=False) as fresh:
        path = write_inventory(tmp_path, "fresh.servingstacks.yml", {"kubeconfig": fresh.kubeconfig})
        result = run(fresh, "ansible-inventory", "-i", str(path), "--list")
    assert result.returncode != 0
    assert f"cannot list ServingStacks on the management cluster at {fresh.url}" in result.stderr
    assert f"it does not serve ServingStack ({API})" in result.stderr, result.stderr
    assert "Traceback" not in result.stderr


def test_a_cached_inventory_reads_the_cluster_once(management, fleet_file, tmp_path):
    cached = write_inventory(fleet_file.parent, "cached.servingstacks.yml", {
        "kubeconfig": management.kubeconfig, "cache": True, "cache_plugin": "ansible.builtin.jsonfile",
        "cache_connection": str(tmp_path / "cache"), "cache_timeout": 3600})
    mark = management.audit_mark()
    first = listed(management, cached)
    assert os.listdir(tmp_path / "cache"), "the first run fills the cache"
    assert management.requests_since(mark)["total"] > 0, "the first run reads the cluster"
    mark = management.audit_mark()
    again = listed(management, cached)
    assert management.requests_since(mark)["total"] == 0, "a cached run sends no request"
    assert again == first
    management.kubectl("apply", "-f", "-", input=yaml.safe_dump(servingstack("late", "sandbox", {})))
    try:
        still = listed(management, cached)
        assert "sandbox/late" not in still["_meta"]["hostvars"]
        flushed = run(management, "ansible-inventory", "-i", str(cached), "--list", "--flush-cache")
        assert flushed.returncode == 0, flushed.stderr
        assert "sandbox/late" in json.loads(flushed.stdout)["_meta"]["hostvars"]
        assert "sandbox/late" in listed(management, cached)["_meta"]["hostvars"], "the flush refreshed the cache"
    finally:
        management.kubectl("delete", "servingstack", "late", "-n", "sandbox")
