"""The CRD on a real API server (testing/cluster), and servingstack_spec reading a live ServingStack from it.

The API server applies the CRD's structural schema, defaults and CEL rules, so this checks the CRD as Kubernetes
takes it, and the module's ``name``/``namespace`` source end to end. The raw API calls authenticate with a bearer
token our token webhook (testing/cluster/token_webhook.py) accepts, over TLS verified with the cluster's CA.
"""

from __future__ import annotations

import json
import ssl
import urllib.error
import urllib.request

import pytest
import yaml
from cluster.fixtures import running_cluster
from cluster.token_webhook import token_webhook
from servingstack_docs import CRD_FILE, load_example

pytestmark = pytest.mark.playbook

BASE = "/apis/infrastructure.modelplane.ai/v1alpha1/namespaces/platform/servingstacks"
TOKEN = "servingstack-live-test-token"  # the bearer token the webhook accepts for the raw calls


def call(cluster, method: str, path: str, body: object = None) -> tuple[int, dict]:
    """One raw API request to ``cluster`` (a handle) with the token; its status code and JSON body."""
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(cluster.url + path, data=data, method=method,
                                     headers={"Content-Type": "application/json", "Accept": "application/json",
                                              "Authorization": f"Bearer {TOKEN}"})
    context = ssl.create_default_context(cafile=cluster.ca_file)
    try:
        with urllib.request.urlopen(request, timeout=30, context=context) as response:
            return response.status, json.loads(response.read() or b"{}")
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"{}")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("servingstack")
    with token_webhook(workdir / "webhook", tokens={TOKEN}) as webhook, \
            running_cluster(workdir / "cluster", nodes=1, gpu_nodes=0, operator_double=False,
                            apiserver_args=webhook.apiserver_args) as handle:
        code, body = call(handle, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
                          yaml.safe_load(CRD_FILE.read_text()))
        assert code == 201, body
        handle.wait_established("servingstacks.infrastructure.modelplane.ai")
        code, body = call(handle, "POST", "/api/v1/namespaces",
                          {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "platform"}})
        assert code == 201, body
        yield handle


def test_the_example_is_accepted_and_defaulted_by_the_crd(cluster):
    code, body = call(cluster, "POST", BASE, load_example())
    assert code == 201, body
    assert body["spec"]["stack"] == "Standard"
    assert body["spec"]["gateway"]["className"] == "envoy"
    assert body["spec"]["versions"]["prometheus"] == "72.6.2"
    assert body["spec"]["dynamo"]["grove"] == "v0.1.0-alpha.12-rc2"
    assert body["spec"]["nvidiaDriverRoot"] == "/"


@pytest.mark.parametrize("name,edit,fragment", [
    ("big-port", lambda spec: spec["gateway"]["listeners"][0].update(port=70000), "spec.gateway.listeners[0].port"),
    ("two-kubeconfigs", lambda spec: spec["secrets"].append({"type": "Kubeconfig", "name": "b", "key": "k"}),
     "exactly one secret must have type Kubeconfig"),
    ("bad-stack", lambda spec: spec.update(stack="Dynamic"), "spec.stack"),
])
def test_the_crd_refuses_what_the_module_refuses(cluster, name, edit, fragment):
    document = load_example()
    document["metadata"]["name"] = name
    edit(document["spec"])
    code, body = call(cluster, "POST", BASE, document)
    assert code == 422, body
    assert fragment in body["message"]


def test_module_reads_the_live_servingstack(cluster, tmp_path):
    playbook = tmp_path / "read.yml"
    playbook.write_text("""
- name: Read a live ServingStack.
  hosts: localhost
  gather_facts: false
  tasks:
    - name: Read west-gke-stack from the management cluster.
      modelplane.serving.servingstack_spec:
        name: west-gke-stack
        namespace: platform
      register: live

    - name: Read a ServingStack that does not exist.
      modelplane.serving.servingstack_spec:
        name: nowhere
        namespace: platform
      register: missing
      ignore_errors: true

    - name: Check what was read.
      ansible.builtin.assert:
        that:
          - live is not changed
          - live.servingstack.metadata.uid is defined
          - live.plan | map(attribute='name') | list == ['cert_manager', 'trust_manager', 'nfd', 'nvidia_dra',
            'envoy_gateway', 'lws', 'prometheus']
          - live.servingstack.spec.secrets[0].namespace == 'platform'
          - missing is failed
          - "'it does not exist on the management cluster' in missing.msg"
""")
    result = cluster.run_playbook(playbook)
    assert result.rc == 0, result.stdout + result.stderr


def test_module_defaults_of_the_group_reach_the_management_cluster(cluster, tmp_path):
    # The environment points nowhere: only group/modelplane.serving.servingstack's kubeconfig reaches the cluster,
    # for the spec's live read and for the status write alike.
    stack = load_example()
    stack["metadata"]["name"] = "grouped"
    code, body = call(cluster, "POST", BASE, stack)
    assert code == 201, body
    playbook = tmp_path / "grouped.yml"
    playbook.write_text(f"""
- name: Read and write a live ServingStack with the group's module_defaults.
  hosts: localhost
  gather_facts: false
  tasks:
    - name: Read the ServingStack and write its status with the group's module_defaults.
      module_defaults:
        group/modelplane.serving.servingstack:
          kubeconfig: {cluster.kubeconfig}
      block:
        - name: Read the ServingStack.
          modelplane.serving.servingstack_spec:
            name: grouped
            namespace: platform
          register: grouped

        - name: Write its status.
          modelplane.serving.servingstack_status_update:
            name: grouped
            namespace: platform
            status: {{gateway: {{address: 203.0.113.9}}}}
          register: written

    - name: Write its status without them.
      modelplane.serving.servingstack_status_update:
        name: grouped
        namespace: platform
        status: {{gateway: {{address: 203.0.113.10}}}}
      register: unreached
      ignore_errors: true

    - name: Check that only the group's kubeconfig reached the cluster.
      ansible.builtin.assert:
        that:
          - grouped.servingstack.metadata.name == 'grouped'
          - written is changed
          - unreached is failed
""")
    nowhere = str(tmp_path / "no-kubeconfig")
    result = cluster.run_playbook(playbook, env={"K8S_AUTH_KUBECONFIG": nowhere, "KUBECONFIG": nowhere})
    assert result.rc == 0, result.stdout + result.stderr
    code, body = call(cluster, "GET", f"{BASE}/grouped", None)
    assert code == 200, body
    assert body["status"]["gateway"] == {"address": "203.0.113.9"}
