"""What the servingstack_k8s action sends to kubernetes.core.k8s (module_utils/servingstack/k8s_objects.py)."""

from __future__ import annotations

import copy

import pytest
from ansible_collections.modelplane.serving.plugins.module_utils.servingstack import k8s_objects, kubeclient
from ansible_collections.modelplane.serving.plugins.module_utils.servingstack.k8s_objects import ObjectsError
from ansible_collections.modelplane.serving.plugins.module_utils.servingstack.kubeclient import Found

NAMESPACE = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}}
CONFIGMAP = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings", "namespace": "team"},
             "data": {"a": "1"}}
QUEUE = {"apiVersion": "scheduling.run.ai/v2", "kind": "Queue", "metadata": {"name": "modelplane"}, "spec": {}}
DEPLOYMENT = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "server", "namespace": "team"},
              "spec": {"replicas": 1}}


def live(obj: dict, **status: object) -> dict:
    """``obj`` as the API server returns it."""
    copied = copy.deepcopy(obj)
    copied["metadata"] = {**copied["metadata"], "uid": "u", "resourceVersion": "3", "generation": 1}
    if status:
        copied["status"] = status
    return copied


def there(obj: dict, namespaced: bool = False, **status: object) -> Found:
    return Found(served=True, namespaced=namespaced, obj=live(obj, **status))


MISSING = Found(served=True, namespaced=False, obj=None)
MISSING_NAMESPACED = Found(served=True, namespaced=True, obj=None)
UNSERVED = Found(served=False, namespaced=False, obj=None)
AVAILABLE = {"replicas": 1, "availableReplicas": 1, "observedGeneration": 1}


# --------------------------------------------------------------------------- documents


def test_documents_take_yaml_text_a_mapping_or_nested_lists():
    text = "---\napiVersion: v1\nkind: Namespace\nmetadata: {name: team}\n---\n# nothing\n---\n"
    assert k8s_objects.documents(text) == [NAMESPACE]
    assert k8s_objects.documents(NAMESPACE) == [NAMESPACE]
    assert k8s_objects.documents([[NAMESPACE], None, [[CONFIGMAP]]]) == [NAMESPACE, CONFIGMAP]
    assert k8s_objects.documents(None) == []


def test_what_the_api_server_owns_is_left_out():
    generated = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                 "metadata": {"name": "x.example.com", "creationTimestamp": None, "annotations": {"a": "b"}},
                 "spec": {"group": "example.com"}, "status": {"acceptedNames": {"kind": ""}}}
    assert k8s_objects.documents([generated]) == [{
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "x.example.com", "annotations": {"a": "b"}}, "spec": {"group": "example.com"}}]
    assert "status" in generated, "the definition given is not changed"


@pytest.mark.parametrize(("definition", "message"), [
    ([NAMESPACE, 3], "definition[1]: an object must be a mapping, got int"),
    ([{"kind": "ConfigMap", "metadata": {"name": "x"}}], "definition[0]: apiVersion is required"),
    ([{"apiVersion": "v1", "metadata": {"name": "x"}}], "definition[0]: kind is required"),
    ([{"apiVersion": "v1", "kind": "ConfigMap"}], "definition[0] (ConfigMap): metadata.name is required"),
    ([{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": ""}}],
     "definition[0] (ConfigMap): metadata.name is required"),
    ("a: [", "definition: not YAML"),
])
def test_a_definition_that_names_no_object_is_refused_by_position(definition, message):
    with pytest.raises(ObjectsError) as raised:
        k8s_objects.documents(definition)
    assert str(raised.value).startswith(message)


def test_an_object_listed_twice_counts_once_whatever_its_api_version():
    beta = {**QUEUE, "apiVersion": "scheduling.run.ai/v1"}
    assert k8s_objects.unique([QUEUE, NAMESPACE, beta, QUEUE]) == [QUEUE, NAMESPACE]
    other_namespace = {**CONFIGMAP, "metadata": {"name": "settings", "namespace": "other"}}
    assert k8s_objects.unique([CONFIGMAP, other_namespace]) == [CONFIGMAP, other_namespace]


def test_a_reference_names_the_object_and_nothing_of_its_content():
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "n", "labels": {"a": "b"}},
              "data": {"key": "c2VjcmV0"}}
    assert k8s_objects.ref(secret) == {"apiVersion": "v1", "kind": "Secret",
                                       "metadata": {"name": "s", "namespace": "n"}}
    assert k8s_objects.ref(QUEUE) == {"apiVersion": "scheduling.run.ai/v2", "kind": "Queue",
                                      "metadata": {"name": "modelplane"}}


# --------------------------------------------------------------------------- present


def test_only_missing_or_differing_objects_are_sent():
    changed = {**CONFIGMAP, "data": {"a": "2"}}
    plan = k8s_objects.plan_present([NAMESPACE, changed, QUEUE], [there(NAMESPACE), there(CONFIGMAP, True), MISSING])
    assert plan.send == [changed, QUEUE] and plan.previewed == []


def test_unchanged_objects_send_nothing():
    plan = k8s_objects.plan_present([NAMESPACE, CONFIGMAP], [there(NAMESPACE), there(CONFIGMAP, True)])
    assert plan.send == [] and plan.previewed == []


def test_apply_also_compares_what_was_last_applied():
    applied = live(CONFIGMAP)
    applied["metadata"]["annotations"] = {"kubectl.kubernetes.io/last-applied-configuration":
                                          '{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings",'
                                          ' "namespace": "team"}, "data": {"a": "1", "b": "2"}}'}
    found = [Found(served=True, namespaced=True, obj=applied)]
    # Patching would change nothing; an apply removes b, which was applied before and is left out now.
    assert k8s_objects.plan_present([CONFIGMAP], found).send == []
    assert k8s_objects.plan_present([CONFIGMAP], found, apply=True).send == [CONFIGMAP]


def test_waiting_sends_an_unchanged_object_that_is_not_ready():
    def ready(obj: dict) -> bool:
        return (obj.get("status") or {}).get("availableReplicas") == 1

    starting = there(DEPLOYMENT, True, replicas=1, availableReplicas=0)
    assert k8s_objects.plan_present([DEPLOYMENT], [starting], ready=ready).send == [DEPLOYMENT]
    assert k8s_objects.plan_present([DEPLOYMENT], [there(DEPLOYMENT, True, **AVAILABLE)], ready=ready).send == []
    # Without waiting, or in check mode (nothing would be written), readiness is not the module's business.
    assert k8s_objects.plan_present([DEPLOYMENT], [starting]).send == []
    assert k8s_objects.plan_present([DEPLOYMENT], [starting], ready=ready, check_mode=True).send == []


def test_check_mode_previews_an_unserved_kind_and_a_missing_namespace():
    objects = [NAMESPACE, CONFIGMAP, QUEUE]
    found = [MISSING, MISSING_NAMESPACED, UNSERVED]
    plan = k8s_objects.plan_present(objects, found, check_mode=True)
    assert plan.send == [NAMESPACE] and plan.previewed == [CONFIGMAP, QUEUE]
    plan = k8s_objects.plan_present(objects, found, check_mode=True, namespaces=["team"])
    assert plan.send == [NAMESPACE, CONFIGMAP] and plan.previewed == [QUEUE]
    # Outside check mode everything that drifted goes to the module, which says what it cannot do.
    assert k8s_objects.plan_present(objects, found).send == objects


def test_check_mode_reads_only_the_namespaces_of_drifted_namespaced_objects():
    other = {**DEPLOYMENT, "metadata": {"name": "server", "namespace": "other"}}
    found = [MISSING, there(CONFIGMAP, True), MISSING_NAMESPACED, UNSERVED]
    assert k8s_objects.namespaces_to_check([NAMESPACE, CONFIGMAP, other, QUEUE], found) == ["other"]


def test_reads_and_objects_must_pair_up():
    with pytest.raises(ObjectsError):
        k8s_objects.plan_present([NAMESPACE], [])
    with pytest.raises(ObjectsError):
        k8s_objects.plan_absent([NAMESPACE], [MISSING, MISSING])


# --------------------------------------------------------------------------- absent


def test_absent_sends_only_existing_objects_in_the_order_given():
    found = [there(CONFIGMAP, True), UNSERVED, MISSING, there(NAMESPACE)]
    assert k8s_objects.plan_absent([CONFIGMAP, QUEUE, DEPLOYMENT, NAMESPACE], found) == [
        k8s_objects.ref(CONFIGMAP), k8s_objects.ref(NAMESPACE)]
    assert k8s_objects.plan_absent([QUEUE], [UNSERVED]) == []


# --------------------------------------------------------------------------- readiness, as kubernetes.core waits


def test_readiness_by_kind_follows_kubernetes_core():
    assert k8s_objects.ready(live(DEPLOYMENT, **AVAILABLE))
    assert not k8s_objects.ready(live(DEPLOYMENT, replicas=1, availableReplicas=0, observedGeneration=1))
    assert not k8s_objects.ready(live(DEPLOYMENT))
    # Kinds kubernetes.core does not wait for are ready once they exist.
    assert k8s_objects.ready(live(CONFIGMAP))


def test_a_condition_counts_only_for_the_current_generation():
    def gateway(status: str, observed: int) -> dict:
        obj = live({"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
                    "metadata": {"name": "g", "namespace": "n"}})
        obj["metadata"]["generation"] = 2
        obj["status"] = {"conditions": [{"type": "Programmed", "status": status, "observedGeneration": observed}]}
        return obj

    assert k8s_objects.ready(gateway("True", 2), {"type": "Programmed"})
    assert not k8s_objects.ready(gateway("True", 1), {"type": "Programmed"})
    assert not k8s_objects.ready(gateway("False", 2), {"type": "Programmed"})
    assert k8s_objects.ready(gateway("False", 2), {"type": "Programmed", "status": "False"})
    assert not k8s_objects.ready(gateway("True", 2), {"type": "Accepted"})


# --------------------------------------------------------------------------- the cluster read


def test_reads_follow_the_options_then_the_task_environment():
    environ = {"K8S_AUTH_KUBECONFIG": "/env/config", "K8S_AUTH_CONTEXT": "env-context"}
    assert k8s_objects.read_target({}, environ) == ("/env/config", "env-context")
    assert k8s_objects.read_target({"kubeconfig": "/given", "context": "given"}, environ) == ("/given", "given")
    # The servingstack role sets every option, empty ones included, so the environment is not read.
    assert k8s_objects.read_target({"kubeconfig": "/given", "context": ""}, environ) == ("/given", "")
    assert k8s_objects.read_target({}, {}) == ("", "")


def test_host_and_api_key_without_a_kubeconfig_are_refused():
    with pytest.raises(ObjectsError, match="host and api_key without a kubeconfig"):
        k8s_objects.read_target({"host": "https://203.0.113.9", "api_key": "secret-token"}, {})
    with pytest.raises(ObjectsError) as raised:
        k8s_objects.read_target({}, {"K8S_AUTH_HOST": "https://203.0.113.9", "K8S_AUTH_API_KEY": "secret-token"})
    assert "secret-token" not in str(raised.value)
    # With a kubeconfig too (the servingstack role's connection), the reads use the kubeconfig.
    options = {"kubeconfig": "/target", "host": "https://203.0.113.9", "api_key": "secret-token"}
    assert k8s_objects.read_target(options, {}) == ("/target", "")


def test_the_client_reads_the_environment_it_is_given(tmp_path):
    refused = {"K8S_AUTH_HOST": "https://203.0.113.9:6443", "HOME": str(tmp_path)}
    with pytest.raises(kubeclient.KubeReadError, match="K8S_AUTH_HOST/K8S_AUTH_API_KEY are not used"):
        kubeclient.connect(environ=refused)
    with pytest.raises(kubeclient.KubeReadError, match="cannot load the kubeconfig"):
        kubeclient.connect(environ={"KUBECONFIG": str(tmp_path / "missing"), "HOME": str(tmp_path)})


@pytest.mark.parametrize(("message", "meanwhile"), [
    # What kubernetes.core.k8s said when two lanes of one cluster created modelplane-system at the same time.
    ('Failed to apply object: {"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":'
     '"namespaces \\"modelplane-system\\" already exists","reason":"AlreadyExists","code":409}', True),
    ('Failed to apply object: {"kind": "Status", "reason": "AlreadyExists", "code": 409}', True),
    ('Failed to apply object: {"kind":"Status","reason":"Forbidden","code":403}', False),
    ('Failed to create object: b\'{"reason":"Conflict","code":409}\'', False),
    (None, False),
])
def test_only_an_object_created_since_it_was_read_calls_for_a_second_attempt(message, meanwhile):
    assert k8s_objects.created_meanwhile(message) is meanwhile
