"""The servingstacks inventory plugin: CRs to hosts and groups, and the plugin in process with the user's compose,
groups and keyed_groups over CRs given to it (no cluster)."""

from __future__ import annotations

import copy
import json
import subprocess
from pathlib import Path

import pytest
import yaml
from ansible.errors import AnsibleParserError
from ansible.inventory.data import InventoryData
from ansible.parsing.dataloader import DataLoader
from ansible.plugins.loader import inventory_loader
from ansible_collections.modelplane.serving.plugins.inventory import servingstacks
from ansible_collections.modelplane.serving.plugins.module_utils.servingstack import kubeclient
from ansible_collections.modelplane.serving.plugins.module_utils.servingstack.outcome import PREFIX, outcome
from servingstack_docs import REPO, edit, load_example
from test_servingstack_spec_module import BIN, ENV

SECRET = "management-token-not-shown"
EXAMPLE_INVENTORY = REPO / "examples" / "fleet.servingstacks.yml"


def live(name: str, namespace: str, *, labels: dict | None = None, status: dict | None = None,
         **changes: object) -> dict:
    """The example as the API lists it: with server metadata, managedFields and (optionally) a status."""
    document = load_example()
    document["metadata"] = {"name": name, "namespace": namespace, "uid": f"uid-{name}", "generation": 2,
                            "resourceVersion": "17", "labels": labels or {},
                            "managedFields": [{"manager": "kubectl", "operation": "Apply", "fieldsV1": {}}]}
    for path, value in changes.items():
        document = edit(document, path.replace("__", "."), value)
    if status is not None:
        document["status"] = status
    return document


READY = {"observedGeneration": 2, "conditions": [{"type": "Ready", "status": "True", "reason": "Available",
                                                  "message": "", "lastTransitionTime": "2026-12-01T10:00:00Z"}]}


def module_messages(document: dict) -> list[str]:
    """The problems servingstack_spec reports for ``document``, one ``path: message`` line each."""
    result = outcome(document, [])
    assert result.get("failed"), result
    return [line[2:] for line in result["msg"].removeprefix(PREFIX).strip("\n").split("\n")]


# Pure functions.

def test_a_valid_servingstack_is_a_local_host_with_its_definition_status_and_stack():
    item = live("west-gke-stack", "platform", labels={"fleet": "prod"}, status=READY)
    name, variables, groups = servingstacks.stack_host(item, {"kubeconfig": "/etc/management.yaml"})
    assert name == "platform/west-gke-stack"
    assert groups == ["servingstacks", "servingstack_namespace_platform", "servingstack_stack_standard"]
    assert variables["ansible_connection"] == "local"
    assert variables["ansible_python_interpreter"] == "{{ ansible_playbook_python }}"
    assert (variables["servingstack_name"], variables["servingstack_namespace"]) == ("west-gke-stack", "platform")
    assert variables["servingstack_stack"] == "Standard"  # the default: the example names no stack
    assert variables["servingstack_labels"] == {"fleet": "prod"}
    assert variables["servingstack_live_status"] == READY
    assert variables["servingstack_management"] == {"kubeconfig": "/etc/management.yaml"}
    definition = variables["servingstack_definition"]
    assert set(definition) == {"apiVersion", "kind", "metadata", "spec"}  # no status
    assert "managedFields" not in definition["metadata"]
    assert definition["metadata"]["uid"] == "uid-west-gke-stack"
    assert definition["spec"] == item["spec"]  # as read, not defaulted
    assert "servingstack_spec_errors" not in variables
    # The definition is what the servingstack role takes: servingstack_spec accepts it as it is.
    assert not outcome(definition, []).get("failed")


def test_the_stack_group_follows_the_stack():
    _name, variables, groups = servingstacks.stack_host(live("east", "team-a", spec__stack="Dynamo"), {})
    # Sanitised as every inventory plugin's group names are.
    assert groups == ["servingstacks", "servingstack_namespace_team_a", "servingstack_stack_dynamo"]
    assert variables["servingstack_stack"] == "Dynamo"


def test_an_invalid_servingstack_is_a_host_in_servingstack_invalid_with_the_modules_messages():
    item = live("broken", "platform", spec__gateway__listeners=[{"name": "http", "port": 70000, "protocol": "HTTP"}],
                spec__versions__envoyGateway="v1.9.0", status={"observedGeneration": 1})
    _name, variables, groups = servingstacks.stack_host(item, {})
    assert groups == ["servingstacks", "servingstack_namespace_platform", "servingstack_invalid"]
    errors = variables["servingstack_spec_errors"]
    assert errors == module_messages(variables["servingstack_definition"])
    assert "spec.gateway.listeners[0].port: 70000 is above the maximum 65535" in errors
    assert any(error.startswith('spec.versions.envoyGateway: "v1.9.0"') for error in errors)
    assert "servingstack_stack" not in variables
    # Still everything a converge needs to report it.
    assert variables["servingstack_definition"]["metadata"]["name"] == "broken"
    assert "managedFields" not in variables["servingstack_definition"]["metadata"]
    assert variables["servingstack_live_status"] == {"observedGeneration": 1}


@pytest.mark.parametrize("item", [
    {"apiVersion": "infrastructure.modelplane.ai/v1alpha1", "kind": "ServingStack",
     "metadata": {"name": "odd", "namespace": "x", "labels": "not-a-mapping"}, "spec": ["a", "list"],
     "status": "a string"},
    {"metadata": {"name": "bare", "namespace": "x"}},
    {"apiVersion": "infrastructure.modelplane.ai/v1alpha1", "kind": "ServingStack", "metadata": ["not", "a", "map"],
     "spec": {}},
    {"apiVersion": "infrastructure.modelplane.ai/v1alpha1", "kind": "ServingStack",
     "metadata": {"name": "deep", "namespace": "x"}, "spec": {"gateway": {"listeners": [[[[[]]]]]}}},
])
def test_anything_listed_becomes_a_host_never_an_exception(item):
    _name, variables, groups = servingstacks.stack_host(item, {})
    assert "servingstack_invalid" in groups and "servingstacks" in groups
    assert variables["servingstack_spec_errors"]
    assert variables["servingstack_labels"] == {}
    assert isinstance(variables["servingstack_live_status"], dict)


def test_management_settings_keep_only_what_is_not_secret():
    options = {"kubeconfig": "/etc/mgmt.yaml", "context": "mgmt", "host": "https://203.0.113.9:6443",
               "api_key": SECRET, "username": "admin", "password": SECRET, "validate_certs": False,
               "ca_cert": "/etc/ca.pem", "client_cert": "/etc/c.pem", "client_key": "/etc/c.key",
               "proxy": "http://proxy:3128", "no_proxy": "", "proxy_headers": {"proxy_basic_auth": f"u:{SECRET}"},
               "impersonate_user": None, "impersonate_groups": ["ops"], "persist_config": True}
    settings = servingstacks.management_settings(options)
    assert settings == {"kubeconfig": "/etc/mgmt.yaml", "context": "mgmt", "host": "https://203.0.113.9:6443",
                        "validate_certs": False, "ca_cert": "/etc/ca.pem", "client_cert": "/etc/c.pem",
                        "client_key": "/etc/c.key", "proxy": "http://proxy:3128", "impersonate_groups": ["ops"]}
    assert SECRET not in json.dumps(settings)


def test_an_inline_kubeconfig_is_never_a_management_setting():
    inline = {"apiVersion": "v1", "users": [{"name": "u", "user": {"token": SECRET}}]}
    assert servingstacks.management_settings({"kubeconfig": inline, "context": "c"}) == {"context": "c"}


def test_error_reasons_are_short():
    class ApiError(Exception):
        status, reason, body = 403, "Forbidden", '{"a long": "body"}'

    class ConnectionFailure(Exception):
        reason = "Connection refused"

    assert kubeclient.reason(ApiError("whatever")) == "403 Forbidden"
    assert kubeclient.reason(ConnectionFailure("pool says")) == "Connection refused"
    assert kubeclient.reason(ValueError("Invalid kube-config file")) == "Invalid kube-config file"


@pytest.mark.parametrize("auth,environ,loaded,described", [
    ({"host": "https://203.0.113.9:6443/"}, {"K8S_AUTH_HOST": "https://other"}, "", "at https://203.0.113.9:6443"),
    ({}, {"K8S_AUTH_HOST": "https://198.51.100.1"}, "http://x", "at https://198.51.100.1"),
    ({"kubeconfig": "/etc/m.yaml"}, {}, "https://192.0.2.5:6443", "at https://192.0.2.5:6443 (kubeconfig /etc/m.yaml)"),
    ({}, {"KUBECONFIG": "/k"}, "http://localhost", "of the kubeconfig /k"),
    ({"kubeconfig": {"inline": "mapping"}}, {}, "", "of the default kubeconfig"),
])
def test_a_failed_connection_names_its_server(auth, environ, loaded, described):
    assert servingstacks.failed_server(auth, environ, loaded) == described


# The plugin in process, over CRs handed to it.

def parse(tmp_path: Path, config: dict, items: list[dict], name: str = "fleet.servingstacks.yml") -> InventoryData:
    path = tmp_path / name
    path.write_text(yaml.safe_dump({"plugin": "modelplane.serving.servingstacks", **config}))
    return parse_file(path, items)


def parse_file(path: Path, items: list[dict]) -> InventoryData:
    """The plugin's inventory from the file at ``path``, with ``items`` standing for the cluster's list."""
    plugin = inventory_loader.get("modelplane.serving.servingstacks")
    assert plugin.verify_file(str(path))
    plugin.read_servingstacks = lambda: copy.deepcopy(items)
    data = InventoryData()
    plugin.parse(data, DataLoader(), str(path), cache=False)
    data.reconcile_inventory()
    return data


FLEET = [
    live("west-gke-stack", "platform", labels={"fleet": "prod", "region": "us-west"}, status=READY),
    live("east", "team-a", labels={"fleet": "prod", "team": "ml-platform"}, spec__stack="Dynamo"),
    live("broken", "platform", labels={"fleet": "staging"},
         spec__gateway__listeners=[{"name": "http", "port": 70000, "protocol": "HTTP"}]),
]


def members(data: InventoryData, group: str) -> set[str]:
    return {host.name for host in data.groups[group].get_hosts()}


def test_the_plugin_makes_the_hosts_and_groups(tmp_path):
    data = parse(tmp_path, {}, FLEET)
    # In host name order, whatever order the cluster listed them in.
    assert [host.name for host in data.groups["servingstacks"].get_hosts()] == \
        ["platform/broken", "platform/west-gke-stack", "team-a/east"]
    assert members(data, "servingstack_invalid") == {"platform/broken"}
    assert members(data, "servingstack_namespace_platform") == {"platform/west-gke-stack", "platform/broken"}
    assert members(data, "servingstack_namespace_team_a") == {"team-a/east"}
    assert members(data, "servingstack_stack_standard") == {"platform/west-gke-stack"}
    assert members(data, "servingstack_stack_dynamo") == {"team-a/east"}
    variables = data.get_host("platform/broken").get_vars()
    assert variables["servingstack_spec_errors"] == ["spec.gateway.listeners[0].port: 70000 is above the maximum 65535"]


def test_labels_compose_and_groups_work_as_in_any_constructed_inventory(tmp_path):
    config = {
        "keyed_groups": [{"key": "servingstack_labels", "prefix": "label"},
                         {"key": "servingstack_stack | default('invalid')", "prefix": "stack", "separator": "-"}],
        "groups": {"ready": "servingstack_live_status.conditions | default([]) | selectattr('type', 'equalto', "
                            "'Ready') | selectattr('status', 'equalto', 'True') | list | length > 0"},
        "compose": {"servingstack_region": "servingstack_labels.region | default('unknown')"},
    }
    data = parse(tmp_path, config, FLEET)
    assert members(data, "label_fleet_prod") == {"platform/west-gke-stack", "team-a/east"}
    assert members(data, "label_fleet_staging") == {"platform/broken"}
    assert members(data, "label_region_us_west") == {"platform/west-gke-stack"}
    assert members(data, "label_team_ml_platform") == {"team-a/east"}
    assert members(data, "stack_Dynamo") == {"team-a/east"}
    assert members(data, "stack_invalid") == {"platform/broken"}
    assert members(data, "ready") == {"platform/west-gke-stack"}
    assert data.get_host("platform/west-gke-stack").get_vars()["servingstack_region"] == "us-west"
    assert data.get_host("team-a/east").get_vars()["servingstack_region"] == "unknown"


def test_the_example_inventory_groups_by_label_and_readiness():
    data = parse_file(EXAMPLE_INVENTORY, FLEET)
    assert members(data, "servingstacks") == {"platform/west-gke-stack", "team-a/east", "platform/broken"}
    assert members(data, "label_region_us_west") == {"platform/west-gke-stack"}
    assert members(data, "servingstack_ready") == {"platform/west-gke-stack"}


def test_the_documented_examples_work(tmp_path):
    everything, prod, awx = yaml.safe_load_all(servingstacks.EXAMPLES)
    assert everything == {"plugin": "modelplane.serving.servingstacks"} and awx["cache"] is True
    data = parse(tmp_path, {key: value for key, value in prod.items() if key != "plugin"}, FLEET)
    assert members(data, "ready_True") == {"platform/west-gke-stack"}
    assert members(data, "ready_Unknown") == {"team-a/east", "platform/broken"}
    assert members(data, "dynamo_in_prod") == {"team-a/east"}
    assert members(data, "label_team_ml_platform") == {"team-a/east"}
    assert data.get_host("team-a/east").get_vars()["servingstack_region"] == "unknown"


def test_strict_compose_fails_on_a_missing_variable_and_lenient_skips_it(tmp_path):
    compose = {"compose": {"region": "servingstack_labels.region"}}
    data = parse(tmp_path, compose, FLEET)
    assert "region" not in data.get_host("team-a/east").get_vars()
    assert data.get_host("platform/west-gke-stack").get_vars()["region"] == "us-west"
    with pytest.raises(Exception, match="region"):
        parse(tmp_path, {**compose, "strict": True}, FLEET)


def test_secrets_in_the_file_never_reach_host_variables(tmp_path):
    config = {"host": "https://203.0.113.9:6443", "api_key": SECRET, "validate_certs": True,
              "proxy_headers": {"proxy_basic_auth": f"user:{SECRET}"}}
    data = parse(tmp_path, config, FLEET[:1])
    variables = data.get_host("platform/west-gke-stack").get_vars()
    assert variables["servingstack_management"] == {"host": "https://203.0.113.9:6443", "validate_certs": True}
    assert SECRET not in json.dumps(variables, default=str)


class FakeServingStacks:
    """The dynamic client's ServingStack resource: records each list request, lists ``items`` in any namespace."""

    def __init__(self, items: list[dict]) -> None:
        self.items, self.requests = items, []

    def get(self, namespace: str | None, label_selector: str) -> object:
        self.requests.append((namespace, label_selector))
        listed = [item for item in self.items if namespace in (None, item["metadata"]["namespace"])]
        return type("ResourceList", (), {"to_dict": lambda _: {"items": copy.deepcopy(listed)}})()


def reading_plugin(monkeypatch, tmp_path: Path, config: dict, served: FakeServingStacks | None):
    """The plugin configured from ``config``, its cluster standing in: ``served`` is the ServingStack resource, or
    None for a cluster without the CRD."""
    from ansible_collections.kubernetes.core.plugins.module_utils.k8s import client as k8s_client
    from kubernetes.dynamic.exceptions import ResourceNotFoundError

    def resource(api_version: str, kind: str) -> FakeServingStacks:
        assert (api_version, kind) == ("infrastructure.modelplane.ai/v1alpha1", "ServingStack")
        if served is None:
            raise ResourceNotFoundError(f"{kind} not found")
        return served

    fake = type("Client", (), {"resources": type("Resources", (), {"get": staticmethod(resource)})(),
                               "configuration": type("Configuration", (), {"host": "https://192.0.2.7:6443"})()})()
    monkeypatch.setattr(k8s_client, "get_api_client", lambda **auth: fake)
    path = tmp_path / "read.servingstacks.yml"
    path.write_text(yaml.safe_dump({"plugin": "modelplane.serving.servingstacks", **config}))
    plugin = inventory_loader.get("modelplane.serving.servingstacks")
    plugin.parse(InventoryData(), DataLoader(), str(path), cache=False)
    return plugin


def test_the_plugin_lists_each_namespace_once_or_all_and_keeps_the_kind(monkeypatch, tmp_path):
    served = FakeServingStacks([{key: value for key, value in item.items() if key not in ("apiVersion", "kind")}
                                for item in FLEET])
    reading_plugin(monkeypatch, tmp_path, {"namespaces": ["team-a", "", "platform", "team-a"],
                                           "label_selector": "fleet=prod"}, served)
    assert served.requests == [("team-a", "fleet=prod"), ("platform", "fleet=prod")]
    served.requests.clear()
    plugin = reading_plugin(monkeypatch, tmp_path, {}, served)
    assert served.requests == [(None, "")]
    listed = plugin.read_servingstacks()
    assert [(item["apiVersion"], item["kind"]) for item in listed] == [(FLEET[0]["apiVersion"], "ServingStack")] * 3


def test_a_cluster_without_the_crd_is_refused_naming_the_server(monkeypatch, tmp_path):
    refused = r"cannot list ServingStacks on the management cluster at https://192\.0\.2\.7:6443: it does not serve"
    with pytest.raises(AnsibleParserError, match=refused):
        reading_plugin(monkeypatch, tmp_path, {}, None)


def test_a_cluster_it_cannot_connect_to_is_refused_naming_the_server(monkeypatch, tmp_path):
    from ansible_collections.kubernetes.core.plugins.module_utils.k8s import client as k8s_client

    class ConnectionFailure(Exception):
        reason = "Connection refused"

    def refuse(**auth):
        raise ConnectionFailure(f"pool says no, with {auth['api_key']}")

    monkeypatch.setattr(k8s_client, "get_api_client", refuse)
    path = tmp_path / "refused.servingstacks.yml"
    path.write_text(yaml.safe_dump({"plugin": "modelplane.serving.servingstacks", "host": "https://203.0.113.9:6443/",
                                    "api_key": SECRET}))
    plugin = inventory_loader.get("modelplane.serving.servingstacks")
    with pytest.raises(AnsibleParserError) as refused:
        plugin.parse(InventoryData(), DataLoader(), str(path), cache=False)
    assert str(refused.value) == ("modelplane.serving.servingstacks: cannot list ServingStacks on the management "
                                  "cluster at https://203.0.113.9:6443: Connection refused")


def test_the_plugin_takes_only_servingstacks_files(tmp_path):
    plugin = inventory_loader.get("modelplane.serving.servingstacks")
    for name in ("fleet.servingstacks.yml", "servingstacks.yaml"):
        (tmp_path / name).write_text("plugin: modelplane.serving.servingstacks\n")
        assert plugin.verify_file(str(tmp_path / name))
    (tmp_path / "fleet.yml").write_text("plugin: modelplane.serving.servingstacks\n")
    assert not plugin.verify_file(str(tmp_path / "fleet.yml"))


@pytest.mark.slow
def test_ansible_doc_renders_the_inventory_plugin():
    completed = subprocess.run([str(BIN / "ansible-doc"), "-t", "inventory", "--json",
                                "modelplane.serving.servingstacks"], env=ENV, capture_output=True, text=True,
                               timeout=120, check=False)
    assert completed.returncode == 0, completed.stderr
    doc = json.loads(completed.stdout)["modelplane.serving.servingstacks"]
    options = doc["doc"]["options"]
    assert {"plugin", "namespaces", "label_selector", "kubeconfig", "context", "host", "api_key", "validate_certs",
            "ca_cert", "compose", "groups", "keyed_groups", "strict", "cache", "cache_plugin"} <= set(options)
    assert doc["examples"].strip()
    text = subprocess.run([str(BIN / "ansible-doc"), "-t", "inventory", "modelplane.serving.servingstacks"], env=ENV,
                          capture_output=True, text=True, timeout=120, check=False)
    assert text.returncode == 0, text.stderr
    assert "servingstack_invalid" in text.stdout and "K8S_AUTH_API_KEY" in text.stdout
