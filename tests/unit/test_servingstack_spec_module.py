"""servingstack_spec: its action plugin (which reads and validates every source, a live one through
kubernetes.core.k8s_info) and its module (which only checks the options) in process, through ansible-playbook, and
ansible-doc."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from ansible.errors import AnsibleActionFail
from ansible.module_utils.testing import patch_module_args
from ansible.parsing.dataloader import DataLoader
from ansible.playbook.play_context import PlayContext
from ansible.playbook.task import Task
from ansible.plugins.loader import action_loader, connection_loader
from ansible_collections.modelplane.serving.plugins.modules import servingstack_spec
from servingstack_docs import DYNAMO_EXAMPLE, EXAMPLE, PRIVATE_KEY, REPO, load_example

BIN = Path(sys.executable).parent
MODULE = "modelplane.serving.servingstack_spec"
ENV = dict(
    os.environ,
    ANSIBLE_COLLECTIONS_PATH=str(REPO / ".collections"),
    ANSIBLE_CONFIG=str(REPO / "ansible.cfg"),
    ANSIBLE_NOCOLOR="1",
    ANSIBLE_LOCALHOST_WARNING="false",
    ANSIBLE_INVENTORY_UNPARSED_WARNING="false",
    PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
)


def run_module(args: dict, capsys, check_mode: bool = False) -> dict:
    """The module in process (it only checks the options, then fails)."""
    if check_mode:
        args = dict(args, _ansible_check_mode=True)
    with patch_module_args(args), pytest.raises(SystemExit):
        servingstack_spec.main()
    return json.loads(capsys.readouterr().out)


def run_action(args: dict, check_mode: bool = False, read: dict | None = None) -> dict:
    """The action plugin in process, as a task runs it: every src and definition is read here, on the controller.

    With ``read``, what kubernetes.core.k8s_info returns for ``name`` (the host's part); the calls land in
    ``module_calls``.
    """
    task = Task()
    task.action = MODULE
    task.args = args
    task.check_mode = check_mode
    play_context = PlayContext()
    action = action_loader.get(MODULE, task=task, connection=connection_loader.get("local", play_context),
                               play_context=play_context, loader=DataLoader(), templar=None, shared_loader_obj=None)
    if read is not None:
        module_calls.clear()
        action._execute_module = lambda module_name, module_args, task_vars: (
            module_calls.append((module_name, module_args)) or json.loads(json.dumps(read)))
    try:
        return action.run(task_vars={})
    except AnsibleActionFail as error:  # a wrong option: the task fails with this result
        return error.result


module_calls: list[tuple[str, dict]] = []


def test_src_returns_defaulted_manifest_plan_and_nothing_ignored():
    result = run_action({"src": str(EXAMPLE)})
    assert "changed" in result and result["changed"] is False
    assert "failed" not in result
    assert result["servingstack"]["spec"]["stack"] == "Standard"
    assert result["servingstack"]["spec"]["gateway"]["className"] == "envoy"
    assert [entry["name"] for entry in result["plan"]] == [
        "cert_manager", "trust_manager", "nfd", "nvidia_dra", "envoy_gateway", "lws", "prometheus"]
    assert result["ignored"] == []
    assert "warnings" not in result


def test_src_expands_the_home_directory(monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / "stack.yaml").write_text(EXAMPLE.read_text())
    assert run_action({"src": "~/stack.yaml"})["servingstack"]["metadata"]["name"] == "west-gke-stack"


def test_definition_as_mapping_in_check_mode():
    result = run_action({"definition": load_example(DYNAMO_EXAMPLE)}, check_mode=True)
    assert result["changed"] is False
    assert "grove_kai" in [entry["name"] for entry in result["plan"]]


def test_definition_as_yaml_text_and_ignored_pins_warn():
    document = load_example()
    document["spec"]["dynamo"] = {"grove": "v0.1.0-alpha.12"}
    result = run_action({"definition": yaml.safe_dump(document)})
    assert result["ignored"] == [{"path": "spec.dynamo.grove", "value": "v0.1.0-alpha.12",
                                  "reason": "stack is Standard: Dynamo-stack pins are ignored"}]
    assert result["warnings"] == ['spec.dynamo.grove: "v0.1.0-alpha.12" is ignored (stack is Standard: Dynamo-stack '
                                  "pins are ignored)"]


def test_invalid_spec_fails_with_every_problem():
    document = load_example()
    document["spec"]["gateway"]["listeners"].append({"name": "big", "port": 70000, "protocol": "HTTP"})
    document["spec"]["stack"] = "Dynamic"
    document["spec"]["gateway"]["clientCAs"] = [{"name": "gw", "certificate": PRIVATE_KEY}]
    result = run_action({"definition": document})
    assert result["failed"] is True
    lines = result["msg"].split("\n")
    assert lines[0] == "invalid ServingStack:"
    assert "- spec.gateway.listeners[1].port: 70000 is above the maximum 65535" in lines
    assert '- spec.stack: "Dynamic" is not one of Standard, Dynamo' in lines
    assert {"path": "spec.stack", "message": '"Dynamic" is not one of Standard, Dynamo'} in result["errors"]
    assert len(result["errors"]) == len(lines) - 1
    assert PRIVATE_KEY.splitlines()[1] not in json.dumps(result)


def test_private_key_in_yaml_text_is_not_echoed():
    text = EXAMPLE.read_text() + "    clientCAs:\n      - name: gw\n        certificate: |\n" + "".join(
        f"          {line}\n" for line in PRIVATE_KEY.splitlines())
    result = run_action({"definition": text})
    assert result["errors"][0]["path"] == "spec.gateway.clientCAs[0].certificate"
    assert PRIVATE_KEY.splitlines()[1] not in json.dumps(result)


def test_bad_yaml_file_names_file_and_line(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("apiVersion: x\nkind: ServingStack\nspec:\n  stack: [\n")
    result = run_action({"src": str(bad)})
    assert result["msg"].startswith(f"invalid ServingStack:\n- {bad}: line 5, column 1: invalid YAML:")
    assert "Traceback" not in result["msg"]
    assert "exception" not in result


def test_duplicate_keys_are_refused(tmp_path):
    doubled = tmp_path / "doubled.yaml"
    doubled.write_text(EXAMPLE.read_text() + "  stack: Dynamo\n  stack: Standard\n")
    result = run_action({"src": str(doubled)})
    assert "found duplicate key 'stack'" in result["msg"]
    assert "line 23, column 3" in result["msg"]


def test_missing_file(tmp_path):
    missing = tmp_path / "nope.yaml"
    result = run_action({"src": str(missing)})
    assert result["msg"] == f"invalid ServingStack:\n- {missing}: cannot read the file: No such file or directory"


def test_multi_document_file_picks_the_servingstack(tmp_path):
    both = tmp_path / "both.yaml"
    both.write_text("apiVersion: v1\nkind: Namespace\nmetadata: {name: platform}\n---\n" + EXAMPLE.read_text())
    assert run_action({"src": str(both)})["servingstack"]["metadata"]["name"] == "west-gke-stack"
    both.write_text(EXAMPLE.read_text() + "---\n" + EXAMPLE.read_text())
    assert "2 of kind ServingStack" in run_action({"src": str(both)})["msg"]


def test_empty_definition_text():
    assert run_action({"definition": ""})["msg"] == (
        "invalid ServingStack:\n- definition: is empty: expected a ServingStack manifest")


WRONG_OPTIONS = [
    ({}, "one of the following is required: definition, src, name"),
    ({"src": "a.yaml", "definition": {}}, "parameters are mutually exclusive: definition|src|name"),
    ({"src": str(EXAMPLE), "namespace": "x"}, "missing parameter(s) required by 'namespace': name"),
    ({"name": "west"}, "missing parameter(s) required by 'name': namespace"),
    ({"src": str(EXAMPLE), "validate_certs": "maybe"}, "'validate_certs' is of type"),
]


@pytest.mark.parametrize("args,message", WRONG_OPTIONS)
def test_the_action_checks_the_options_with_the_module_argument_spec(capsys, args, message):
    # One argument spec: the action plugin and the module refuse the same options with the same message.
    result = run_action(args)
    assert result["failed"] is True
    assert message in result["msg"]
    assert message in run_module(args, capsys)["msg"]


def test_an_unknown_option_is_refused_and_kubernetes_core_aliases_are_accepted():
    result = run_action({"src": str(EXAMPLE), "sorce": "x"})
    assert result["failed"] is True
    assert "Unsupported parameters for" in result["msg"] and "module: sorce." in result["msg"]
    assert "failed" not in run_action({"src": str(EXAMPLE), "verify_ssl": False, "ssl_ca_cert": "/ca.pem"})


def test_the_module_leaves_every_source_to_the_action_plugin(capsys):
    # Only reachable by running the module without its action plugin: a task never runs it.
    for args in ({"src": str(EXAMPLE)}, {"definition": load_example()}, {"name": "west", "namespace": "platform"}):
        result = run_module(args, capsys)
        assert result["failed"] is True
        assert result["msg"] == servingstack_spec.ACTION_ONLY


def test_the_module_takes_no_checker_to_the_host():
    # The module ships with the module_utils it imports: reading a live ServingStack needs neither the CRD's checker
    # (spec: jsonschema and cel-python) nor the CRD, which stays on the controller.
    code = ("import sys; import ansible_collections.modelplane.serving.plugins.modules.servingstack_spec; "
            "print(sorted(name.rpartition('.')[2] for name in sys.modules "
            "if name.startswith('ansible_collections.modelplane.serving.plugins.module_utils.servingstack.')))")
    completed = subprocess.run([sys.executable, "-c", code], env=dict(ENV, PYTHONPATH=str(REPO / ".collections")),
                               capture_output=True, text=True, timeout=60, check=True)
    assert completed.stdout.split("\n")[0] == "[]"


def test_live_servingstack_is_read_from_the_management_cluster():
    live = load_example()
    live["metadata"].update(uid="1234", resourceVersion="7", creationTimestamp="2026-01-01T00:00:00Z",
                            managedFields=[{"manager": "kubectl"}])
    live["status"] = {"gateway": {"address": "203.0.113.7"}}
    args = {"name": "west-gke-stack", "namespace": "platform", "kubeconfig": "/dev/null"}
    # k8s_info reads it with the task's own options; the action plugin validates it on the controller.
    result = run_action(args, read={"changed": False, "api_found": True, "resources": [live]})
    sent = {**args, "kind": "ServingStack", "api_version": "infrastructure.modelplane.ai/v1alpha1"}
    assert module_calls == [("kubernetes.core.k8s_info", sent)]
    assert "resources" not in result and "api_found" not in result
    assert result["changed"] is False and "failed" not in result
    assert result["servingstack"]["status"] == {"gateway": {"address": "203.0.113.7"}}
    assert result["servingstack"]["metadata"]["uid"] == "1234"
    assert result["servingstack"]["spec"]["gateway"]["className"] == "envoy"
    assert len(result["plan"]) == 7


@pytest.mark.parametrize("read,message", [
    ({"api_found": True, "resources": []}, "it does not exist on the management cluster"),
    ({"api_found": False, "resources": []}, "the management cluster has no ServingStack "
                                            "(infrastructure.modelplane.ai/v1alpha1) API; apply crds/"),
    ({"failed": True, "msg": "Failed to load kubeconfig"}, "Failed to load kubeconfig"),
])
def test_live_servingstack_not_read(read, message):
    result = run_action({"name": "west", "namespace": "platform"}, read=read)
    assert result["failed"] is True
    assert result["msg"].startswith(f"cannot read ServingStack platform/west: {message}")
    assert "errors" not in result


def test_live_servingstack_that_is_invalid():
    live = load_example()
    live["metadata"]["generation"] = 3
    live["spec"]["versions"]["envoyGateway"] = "v1.9.1"
    live["spec"]["dynamo"] = {"grove": "v0.1.0-alpha.12"}
    result = run_action({"name": "west-gke-stack", "namespace": "platform"},
                        read={"api_found": True, "resources": [live]})
    assert result["failed"] is True
    assert result["msg"].startswith("invalid ServingStack:\n- spec.versions.envoyGateway: \"v1.9.1\" is out of range")
    assert result["errors"][0]["path"] == "spec.versions.envoyGateway"
    assert result["generation"] == 3
    assert result["warnings"] == ['spec.dynamo.grove: "v0.1.0-alpha.12" is ignored (stack is Standard: Dynamo-stack '
                                  "pins are ignored)"]


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

    - name: Validate a ServingStack with a private key pasted as a client CA.
      modelplane.serving.servingstack_spec:
        definition:
          apiVersion: infrastructure.modelplane.ai/v1alpha1
          kind: ServingStack
          metadata: {{name: pasted}}
          spec:
            secrets: [{{type: Kubeconfig, name: kc, key: kubeconfig}}]
            gateway:
              clientCAs: [{{name: gw, certificate: "{{{{ pasted_key }}}}"}}]
      register: pasted
      ignore_errors: true

    - name: Pass an option servingstack_spec does not have.
      modelplane.serving.servingstack_spec:
        src: "{example}"
        sorce: typo.yaml
      register: unknown
      ignore_errors: true

    - name: Check the results.
      ansible.builtin.assert:
        that:
          - good is not changed
          - good.plan | map(attribute='name') | list | length == 7
          - bad is failed
          - bad.msg is match('invalid ServingStack:')
          - "'spec.gateway.listeners[0].port: 70000 is above the maximum 65535' in bad.msg"
          - bad.errors[0].path == 'spec.gateway.listeners[0].port'
          - pasted.errors[0].path == 'spec.gateway.clientCAs[0].certificate'
          - unknown is failed
          - unknown.msg is match('Unsupported parameters for .*servingstack_spec.* module. sorce. Supported parameters')
"""


@pytest.mark.slow
def test_module_through_ansible_playbook(tmp_path):
    playbook = tmp_path / "playbook.yml"
    playbook.write_text(PLAYBOOK.format(example=EXAMPLE))
    pasted = tmp_path / "pasted.yml"
    pasted.write_text(yaml.safe_dump({"pasted_key": PRIVATE_KEY}))
    # -vvv shows every result in full: the pasted key must still appear nowhere.
    completed = subprocess.run([str(BIN / "ansible-playbook"), "-vvv", str(playbook), "-e", f"@{pasted}"], env=ENV,
                               capture_output=True, text=True, timeout=120, check=False)
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert "ok=5" in completed.stdout and "ignored=3" in completed.stdout
    assert PRIVATE_KEY.splitlines()[1] not in completed.stdout + completed.stderr


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
    assert set(servingstack_spec.ARGUMENT_SPEC) == set(options)
    assert {"servingstack", "plan", "ignored", "errors"} <= set(doc["return"])
    assert doc["examples"].strip()
