"""The servingstack_spec module: in process (every source and failure), through ansible-playbook, and ansible-doc."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from ansible.module_utils.testing import patch_module_args
from ansible_collections.modelplane.serving.plugins.modules import servingstack_spec
from servingstack_docs import DYNAMO_EXAMPLE, EXAMPLE, PRIVATE_KEY, REPO, load_example

BIN = Path(sys.executable).parent
ENV = dict(
    os.environ,
    ANSIBLE_COLLECTIONS_PATH=str(REPO / ".collections"),
    ANSIBLE_CONFIG=str(REPO / "ansible.cfg"),
    ANSIBLE_NOCOLOR="1",
    ANSIBLE_LOCALHOST_WARNING="false",
    ANSIBLE_INVENTORY_UNPARSED_WARNING="false",
    PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
)


def run(args: dict, capsys, check_mode: bool = False) -> dict:
    if check_mode:
        args = dict(args, _ansible_check_mode=True)
    with patch_module_args(args), pytest.raises(SystemExit):
        servingstack_spec.main()
    return json.loads(capsys.readouterr().out)


def test_src_returns_defaulted_manifest_plan_and_nothing_ignored(capsys):
    result = run({"src": str(EXAMPLE)}, capsys)
    assert result["changed"] is False
    assert "failed" not in result
    assert result["servingstack"]["spec"]["stack"] == "Standard"
    assert result["servingstack"]["spec"]["gateway"]["className"] == "envoy"
    assert [entry["name"] for entry in result["plan"]] == [
        "cert_manager", "trust_manager", "nfd", "nvidia_dra", "envoy_gateway", "lws", "prometheus"]
    assert result["ignored"] == []


def test_definition_as_mapping_in_check_mode(capsys):
    result = run({"definition": load_example(DYNAMO_EXAMPLE)}, capsys, check_mode=True)
    assert result["changed"] is False
    assert "grove_kai" in [entry["name"] for entry in result["plan"]]


def test_definition_as_yaml_text_and_ignored_pins_warn(capsys, monkeypatch):
    warnings: list[str] = []
    monkeypatch.setattr(servingstack_spec.ServingStackModule, "warn", lambda self, message: warnings.append(message))
    document = load_example()
    document["spec"]["dynamo"] = {"grove": "v0.1.0-alpha.12"}
    result = run({"definition": yaml.safe_dump(document)}, capsys)
    assert result["ignored"] == [{"path": "spec.dynamo.grove", "value": "v0.1.0-alpha.12",
                                  "reason": "stack is Standard: Dynamo-stack pins are ignored"}]
    assert warnings == ['spec.dynamo.grove: "v0.1.0-alpha.12" is ignored (stack is Standard: Dynamo-stack pins are '
                        "ignored)"]


def test_invalid_spec_fails_with_every_problem(capsys):
    document = load_example()
    document["spec"]["gateway"]["listeners"].append({"name": "big", "port": 70000, "protocol": "HTTP"})
    document["spec"]["stack"] = "Dynamic"
    document["spec"]["gateway"]["clientCAs"] = [{"name": "gw", "certificate": PRIVATE_KEY}]
    result = run({"definition": document}, capsys)
    assert result["failed"] is True
    lines = result["msg"].split("\n")
    assert lines[0] == "invalid ServingStack:"
    assert "- spec.gateway.listeners[1].port: 70000 is above the maximum 65535" in lines
    assert '- spec.stack: "Dynamic" is not one of Standard, Dynamo' in lines
    assert {"path": "spec.stack", "message": '"Dynamic" is not one of Standard, Dynamo'} in result["errors"]
    assert len(result["errors"]) == len(lines) - 1
    assert PRIVATE_KEY.splitlines()[1] not in json.dumps(result)
    shown = result["invocation"]["module_args"]["definition"]["spec"]["gateway"]["clientCAs"][0]["certificate"]
    assert shown == servingstack_spec.HIDDEN


def test_private_key_in_yaml_text_is_not_echoed(capsys):
    text = EXAMPLE.read_text() + "    clientCAs:\n      - name: gw\n        certificate: |\n" + "".join(
        f"          {line}\n" for line in PRIVATE_KEY.splitlines())
    result = run({"definition": text}, capsys)
    assert result["errors"][0]["path"] == "spec.gateway.clientCAs[0].certificate"
    assert PRIVATE_KEY.splitlines()[1] not in json.dumps(result)


def test_bad_yaml_file_names_file_and_line(capsys, tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("apiVersion: x\nkind: ServingStack\nspec:\n  stack: [\n")
    result = run({"src": str(bad)}, capsys)
    assert result["msg"].startswith(f"invalid ServingStack:\n- {bad}: line 5, column 1: invalid YAML:")
    assert "Traceback" not in result["msg"]
    assert "exception" not in result


def test_duplicate_keys_are_refused(capsys, tmp_path):
    doubled = tmp_path / "doubled.yaml"
    doubled.write_text(EXAMPLE.read_text() + "  stack: Dynamo\n  stack: Standard\n")
    result = run({"src": str(doubled)}, capsys)
    assert "found duplicate key 'stack'" in result["msg"]
    assert "line 23, column 3" in result["msg"]


def test_missing_file(capsys, tmp_path):
    result = run({"src": str(tmp_path / "nope.yaml")}, capsys)
    missing = tmp_path / "nope.yaml"
    assert result["msg"] == f"invalid ServingStack:\n- {missing}: cannot read the file: No such file or directory"


def test_multi_document_file_picks_the_servingstack(capsys, tmp_path):
    both = tmp_path / "both.yaml"
    both.write_text("apiVersion: v1\nkind: Namespace\nmetadata: {name: platform}\n---\n" + EXAMPLE.read_text())
    assert run({"src": str(both)}, capsys)["servingstack"]["metadata"]["name"] == "west-gke-stack"
    both.write_text(EXAMPLE.read_text() + "---\n" + EXAMPLE.read_text())
    assert "2 of kind ServingStack" in run({"src": str(both)}, capsys)["msg"]


def test_empty_definition_text(capsys):
    assert run({"definition": ""}, capsys)["msg"] == (
        "invalid ServingStack:\n- definition: is empty: expected a ServingStack manifest")


@pytest.mark.parametrize("args,fragment", [
    ({}, "one of the following is required: definition, src, name"),
    ({"src": "a.yaml", "definition": {}}, "parameters are mutually exclusive: definition|src|name"),
    ({"src": str(EXAMPLE), "namespace": "x"}, "namespace is used only with name"),
    ({"name": "west"}, "namespace is required with name"),
])
def test_exactly_one_source(capsys, args, fragment):
    result = run(args, capsys)
    assert result["failed"] is True
    assert fragment in result["msg"]


class FakeObject:
    def __init__(self, data: dict) -> None:
        self.data = data

    def to_dict(self) -> dict:
        return self.data


class FakeClient:
    def __init__(self, found: object) -> None:
        self.found = found
        self.calls: list = []

    def resource(self, kind: str, api_version: str) -> str:
        self.calls.append(("resource", kind, api_version))
        return "servingstacks"

    def get(self, resource: str, **params: str) -> FakeObject:
        self.calls.append(("get", resource, params))
        if isinstance(self.found, Exception):
            raise self.found
        return FakeObject(self.found)


@pytest.fixture
def fake_cluster(monkeypatch):
    def install(found: object) -> FakeClient:
        fake = FakeClient(found)
        monkeypatch.setattr(servingstack_spec, "get_api_client", lambda module=None, **kwargs: fake)
        return fake

    return install


def test_live_servingstack_is_read_from_the_management_cluster(capsys, fake_cluster):
    live = load_example()
    live["metadata"].update(uid="1234", resourceVersion="7", creationTimestamp="2026-01-01T00:00:00Z",
                            managedFields=[{"manager": "kubectl"}])
    live["status"] = {"gateway": {"address": "203.0.113.7"}}
    fake = fake_cluster(live)
    result = run({"name": "west-gke-stack", "namespace": "platform", "kubeconfig": "/dev/null"}, capsys)
    assert fake.calls == [("resource", "ServingStack", "infrastructure.modelplane.ai/v1alpha1"),
                          ("get", "servingstacks", {"name": "west-gke-stack", "namespace": "platform"})]
    assert result["servingstack"]["status"] == {"gateway": {"address": "203.0.113.7"}}
    assert result["servingstack"]["metadata"]["uid"] == "1234"
    assert len(result["plan"]) == 7


def test_live_servingstack_not_found(capsys, fake_cluster):
    from kubernetes.client.exceptions import ApiException
    from kubernetes.dynamic.exceptions import NotFoundError, ResourceNotFoundError

    fake_cluster(NotFoundError(ApiException(status=404, reason="Not Found")))
    result = run({"name": "west", "namespace": "platform"}, capsys)
    assert result["msg"] == "cannot read ServingStack platform/west: it does not exist on the management cluster"
    fake_cluster(ResourceNotFoundError("no ServingStack"))
    result = run({"name": "west", "namespace": "platform"}, capsys)
    assert "has no ServingStack (infrastructure.modelplane.ai/v1alpha1) API" in result["msg"]


def test_live_servingstack_that_is_invalid(capsys, fake_cluster):
    live = load_example()
    live["spec"]["versions"]["envoyGateway"] = "v1.9.1"
    fake_cluster(live)
    result = run({"name": "west-gke-stack", "namespace": "platform"}, capsys)
    assert result["msg"].startswith("invalid ServingStack:\n- spec.versions.envoyGateway: \"v1.9.1\" is out of range")


PLAYBOOK = """
- name: Exercise servingstack_spec.
  hosts: localhost
  connection: local
  gather_facts: false
  tasks:
    - name: Validate the example.
      modelplane.serving.servingstack_spec:
        src: "{example}"
      register: good

    - name: Validate a bad ServingStack.
      modelplane.serving.servingstack_spec:
        definition:
          apiVersion: infrastructure.modelplane.ai/v1alpha1
          kind: ServingStack
          metadata: {{name: bad}}
          spec:
            secrets: [{{type: Kubeconfig, name: kc, key: kubeconfig}}]
            gateway:
              listeners: [{{name: http, port: 70000, protocol: HTTP}}]
      register: bad
      ignore_errors: true

    - name: Check both results.
      ansible.builtin.assert:
        that:
          - good is not changed
          - good.plan | map(attribute='name') | list | length == 7
          - bad is failed
          - bad.msg is match('invalid ServingStack:')
          - "'spec.gateway.listeners[0].port: 70000 is above the maximum 65535' in bad.msg"
          - bad.errors[0].path == 'spec.gateway.listeners[0].port'
"""


@pytest.mark.slow
def test_module_through_ansible_playbook(tmp_path):
    playbook = tmp_path / "playbook.yml"
    playbook.write_text(PLAYBOOK.format(example=EXAMPLE))
    completed = subprocess.run([str(BIN / "ansible-playbook"), str(playbook)], env=ENV, capture_output=True,
                               text=True, timeout=120, check=False)
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert "ok=3" in completed.stdout and "ignored=1" in completed.stdout


@pytest.mark.slow
def test_plan_playbook_prints_one_line_per_component():
    completed = subprocess.run([str(BIN / "ansible-playbook"), "playbooks/plan.yml", "-e",
                                f"servingstack_src={DYNAMO_EXAMPLE}"], cwd=REPO, env=ENV, capture_output=True,
                               text=True, timeout=120, check=False)
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert "(Dynamo stack) installs, in order:" in completed.stdout
    assert "6. Grove and the KAI Scheduler v0.1.0-alpha.12-rc2 in grove-system: mp-kai-scheduler" in completed.stdout
    assert "8. kube-prometheus-stack 72.6.2 in monitoring" in completed.stdout


@pytest.mark.slow
def test_ansible_doc_renders_the_module():
    completed = subprocess.run([str(BIN / "ansible-doc"), "--json", "modelplane.serving.servingstack_spec"], env=ENV,
                               capture_output=True, text=True, timeout=120, check=False)
    assert completed.returncode == 0, completed.stderr
    doc = json.loads(completed.stdout)["modelplane.serving.servingstack_spec"]
    options = doc["doc"]["options"]
    assert {"definition", "src", "name", "namespace", "kubeconfig", "context", "host"} <= set(options)
    assert set(servingstack_spec.argument_spec()) == set(options)
    assert {"servingstack", "plan", "ignored", "errors"} <= set(doc["return"])
    assert doc["examples"].strip()
