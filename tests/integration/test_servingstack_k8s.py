"""The servingstack_k8s action against the cluster: it reads on the controller and runs kubernetes.core.k8s only
for what needs a write, so an unchanged run writes nothing; absent tolerates kinds the cluster does not serve; check
mode previews what cannot be dry-run; the connection is the one a kubernetes.core.k8s task would have."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from cluster.fixtures import WRITE_VERBS
from stack_support import WIDGET_CRD, committed_writes, get, output, write_verbs

pytestmark = [pytest.mark.playbook]

NS = "objects-test"
NAMESPACE = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}}
CONFIGMAP = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings", "namespace": NS},
             "data": {"a": "1", "b": "2"}}
WIDGET = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "gear"}, "spec": {"teeth": 12}}


def playbook(tmp_path: Path, task: dict[str, Any], play: dict[str, Any] | None = None) -> Path:
    """A play running one servingstack_k8s task and writing its result to result.json."""
    out = tmp_path / "result.json"
    path = tmp_path / "play.yml"
    path.write_text(yaml.safe_dump([{
        "name": "Run servingstack_k8s.", "hosts": "localhost", "gather_facts": False, **(play or {}),
        "tasks": [
            {"name": "Converge the objects.", "modelplane.serving.servingstack_k8s": task, "register": "done",
             "ignore_errors": True},
            {"name": "Keep the result.", "ansible.builtin.copy": {"content": "{{ done | to_json }}", "dest": str(out)},
             "check_mode": False, "changed_when": False},
        ],
    }], sort_keys=False))
    return path


def run(cluster: Any, tmp_path: Path, task: dict[str, Any], **options: Any) -> tuple[Any, dict[str, Any]]:
    play = options.pop("play", None)
    result = cluster.run_playbook(playbook(tmp_path, task, play), **options)
    assert result.rc == 0, output(result)
    return result, json.loads((tmp_path / "result.json").read_text())


def names(refs: list[dict[str, Any]]) -> list[str]:
    return [f"{ref['kind']}/{ref['metadata']['name']}" for ref in refs]


def test_objects_are_applied_once_then_left_alone(cluster, tmp_path):
    task = {"definition": [NAMESPACE, CONFIGMAP], "apply": True}
    first, done = run(cluster, tmp_path, task)
    assert first.changed == 1 and names(done["sent"]) == ["Namespace/objects-test", "ConfigMap/settings"], done
    assert get(cluster, "v1", "ConfigMap", "settings", NS)["data"] == {"a": "1", "b": "2"}

    again, done = run(cluster, tmp_path, task)
    assert again.changed == 0 and done["sent"] == [], done
    assert write_verbs(again) == {}, again.requests


def test_only_what_drifted_is_written_and_apply_removes_a_dropped_field(cluster, tmp_path):
    cluster.kubectl("patch", "configmap", "settings", "-n", NS, "--type=merge", "-p", '{"data": {"a": "changed"}}')
    fixed, done = run(cluster, tmp_path, {"definition": [NAMESPACE, CONFIGMAP], "apply": True})
    assert fixed.changed == 1 and names(done["sent"]) == ["ConfigMap/settings"], done
    assert get(cluster, "v1", "ConfigMap", "settings", NS)["data"] == {"a": "1", "b": "2"}

    smaller = {**CONFIGMAP, "data": {"a": "1"}}
    _result, done = run(cluster, tmp_path, {"definition": [NAMESPACE, smaller], "apply": True})
    assert names(done["sent"]) == ["ConfigMap/settings"], done
    assert get(cluster, "v1", "ConfigMap", "settings", NS)["data"] == {"a": "1"}


def test_a_yaml_text_definition_with_a_repeat_is_read_once(cluster, tmp_path):
    text = yaml.safe_dump_all([NAMESPACE, None, {**CONFIGMAP, "data": {"a": "1"}}, NAMESPACE])
    result, done = run(cluster, tmp_path, {"definition": text, "apply": True})
    assert result.changed == 0 and done["sent"] == [], done


def test_check_mode_previews_what_cannot_be_dry_run_and_writes_nothing(cluster, tmp_path):
    elsewhere = {**CONFIGMAP, "metadata": {"name": "settings", "namespace": "not-there-yet"}}
    fresh = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "not-there-yet"}}
    mark = cluster.audit_mark()
    result, done = run(cluster, tmp_path, {"definition": [fresh, elsewhere, WIDGET]}, check=True, diff=True)
    assert result.changed == 1, output(result)
    assert names(done["previewed"]) == ["ConfigMap/settings", "Widget/gear"], done
    # The namespace itself can be dry-run: kubernetes.core.k8s does that, without creating it.
    assert names(done["sent"]) == ["Namespace/not-there-yet"], done
    assert committed_writes(cluster, mark) == [] and get(cluster, "v1", "Namespace", "not-there-yet") is None
    # The one write request is the namespace's dry run.
    dry_runs = [(e["verb"], e["objectRef"]["resource"]) for e in cluster.audit_events(mark) if e["verb"] in WRITE_VERBS]
    assert dry_runs == [("create", "namespaces")], dry_runs


def test_absent_deletes_what_exists_and_tolerates_an_unserved_kind(cluster, tmp_path):
    task = {"state": "absent", "definition": [CONFIGMAP, WIDGET], "wait": True}
    gone, done = run(cluster, tmp_path, task)
    assert gone.changed == 1 and names(done["sent"]) == ["ConfigMap/settings"], done
    assert get(cluster, "v1", "ConfigMap", "settings", NS) is None

    again, done = run(cluster, tmp_path, task)
    assert again.changed == 0 and done["sent"] == [], done
    assert write_verbs(again) == {}, again.requests


def test_waiting_sends_an_unchanged_object_that_is_not_ready(cluster, tmp_path):
    cluster.kubectl("apply", "-f", "-", input=json.dumps(WIDGET_CRD))
    cluster.kubectl("wait", "--for=condition=Established", "crd/widgets.example.com", "--timeout=30s")
    task = {"definition": [WIDGET], "wait": True, "wait_condition": {"type": "Ready"}, "wait_timeout": 2}
    _created, done = run(cluster, tmp_path, task)
    # Created, then waited for in vain: nothing sets the condition.
    assert done.get("failed") and names(done["sent"]) == ["Widget/gear"], done
    assert "Ready" in done["msg"] or "timed out" in done["msg"].lower(), done

    # Unchanged but still not ready: it goes to the module again, which waits (and fails) again.
    again, done = run(cluster, tmp_path, task)
    assert done.get("failed") and names(done["sent"]) == ["Widget/gear"], done
    assert write_verbs(again).keys() <= {"patch"}, again.requests

    widgets = cluster.dynamic().resources.get(api_version="example.com/v1", kind="Widget")
    widgets.status.patch(name="gear", content_type="application/merge-patch+json", body={"status": {"conditions": [
        {"type": "Ready", "status": "True", "reason": "Done", "message": "",
         "lastTransitionTime": "2026-12-02T00:00:00Z"}]}})
    ready, done = run(cluster, tmp_path, task)
    assert not done.get("failed") and ready.changed == 0 and done["sent"] == [], done
    assert write_verbs(ready) == {}, ready.requests
    run(cluster, tmp_path, {"state": "absent", "definition": [WIDGET, WIDGET_CRD], "wait": True})


def test_the_connection_is_the_one_a_kubernetes_core_k8s_task_would_have(cluster, tmp_path):
    """module_defaults of group/kubernetes.core.k8s (the servingstack role's way) and the task environment (a
    play's way) both reach the cluster, for the reads and for the module, while the process's own
    settings point at no cluster."""
    nowhere = {"K8S_AUTH_KUBECONFIG": str(tmp_path / "missing"), "KUBECONFIG": str(tmp_path / "missing")}
    task = {"definition": [NAMESPACE, {**CONFIGMAP, "data": {"via": "defaults"}}]}
    defaults = {"module_defaults": {"group/kubernetes.core.k8s": {"kubeconfig": cluster.kubeconfig}}}
    result, done = run(cluster, tmp_path, task, play=defaults, env=nowhere)
    assert result.changed == 1 and names(done["sent"]) == ["ConfigMap/settings"], done
    assert get(cluster, "v1", "ConfigMap", "settings", NS)["data"] == {"via": "defaults"}

    task = {"definition": [NAMESPACE, {**CONFIGMAP, "data": {"via": "environment"}}]}
    environment = {"environment": {"K8S_AUTH_KUBECONFIG": cluster.kubeconfig}}
    result, done = run(cluster, tmp_path, task, play=environment, env=nowhere)
    assert result.changed == 1 and names(done["sent"]) == ["ConfigMap/settings"], done
    assert get(cluster, "v1", "ConfigMap", "settings", NS)["data"]["via"] == "environment"


def test_a_secrets_data_never_reaches_the_result(cluster, tmp_path):
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "token", "namespace": NS},
              "type": "Opaque", "data": {"token": "c2VjcmV0LXZhbHVl"}}
    run(cluster, tmp_path, {"definition": [NAMESPACE]})
    for task in ({"definition": [secret]}, {"definition": [secret], "state": "absent"}):
        result, done = run(cluster, tmp_path, task, diff=True)
        assert result.changed == 1 and names(done["sent"]) == ["Secret/token"], done
        assert "c2VjcmV0LXZhbHVl" not in json.dumps(done) and "c2VjcmV0LXZhbHVl" not in result.stdout, done


@pytest.mark.parametrize(("task", "message"), [
    ({"definition": [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {}}]},
     "servingstack_k8s: definition[0] (ConfigMap): metadata.name is required"),
    ({"definition": [NAMESPACE, "not an object"]},
     "servingstack_k8s: definition[1]: an object must be a mapping, got str"),
    ({"definition": [{**CONFIGMAP, "metadata": {"name": "no-namespace"}}]},
     "servingstack_k8s: ConfigMap no-namespace: metadata.namespace is required, ConfigMap is namespaced"),
    ({"definition": [NAMESPACE], "state": "gone"}, "value of state must be one of: present, absent, got: gone"),
    ({"definition": [NAMESPACE], "wait_condition": {"status": "True"}}, "missing required arguments: type"),
])
def test_bad_input_fails_with_a_message_naming_it(cluster, tmp_path, task, message):
    _result, done = run(cluster, tmp_path, task)
    assert done.get("failed") and message in done["msg"], done
