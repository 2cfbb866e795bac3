"""The converge record (module_utils/servingstack/record.py): what decides a re-run can skip the components."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
from ansible_collections.modelplane.serving.plugins.module_utils.servingstack import record

REPO = Path(__file__).resolve().parents[2]

PLAN = [
    {"name": "cert_manager", "role": "modelplane.serving.cert_manager",
     "releases": [{"release": "cert-manager", "namespace": "cert-manager", "chart": "cert-manager"}]},
    {"name": "modelexpress", "role": "modelplane.serving.modelexpress", "releases": []},
]
GATEWAY = {"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
           "metadata": {"name": "inference-gateway", "namespace": "modelplane-system", "uid": "u1", "generation": 2,
                        "resourceVersion": "17"}}
NAMESPACE = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "modelplane-system", "uid": "u2",
                                                                   "resourceVersion": "5"}}


def helm_secret(name: str, namespace: str, revision: int, status: str) -> dict:
    return {"metadata": {"namespace": namespace, "labels": {"owner": "helm", "name": name, "version": str(revision),
                                                            "status": status}}}


def deployed(revision: int = 1) -> list[dict]:
    return [{"name": "cert-manager", "namespace": "cert-manager", "revision": revision, "status": "deployed",
             "chart": "cert-manager"}]


def test_the_content_hash_follows_every_file_of_roles_and_plugins_and_nothing_else(tmp_path):
    (tmp_path / "roles" / "a" / "tasks").mkdir(parents=True)
    (tmp_path / "plugins" / "filter").mkdir(parents=True)
    (tmp_path / "roles" / "a" / "tasks" / "main.yml").write_text("- x\n")
    (tmp_path / "plugins" / "filter" / "f.py").write_text("x = 1\n")
    before = record.content_hash(tmp_path)
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "t.py").write_text("ignored\n")
    (tmp_path / "plugins" / "filter" / "__pycache__").mkdir()
    (tmp_path / "plugins" / "filter" / "__pycache__" / "f.cpython-312.pyc").write_bytes(b"cache")
    assert record.content_hash(tmp_path) == before
    (tmp_path / "plugins" / "filter" / "f.py").write_text("x = 2\n")
    assert record.content_hash(tmp_path) != before
    (tmp_path / "plugins" / "filter" / "f.py").write_text("x = 1\n")
    (tmp_path / "roles" / "a" / "tasks" / "main.yml").rename(tmp_path / "roles" / "a" / "tasks" / "other.yml")
    assert record.content_hash(tmp_path) != before  # a renamed file is a change too


def test_the_settings_are_the_component_roles_documented_options_without_the_plumbing():
    import yaml

    specs = {role: yaml.safe_load((REPO / "roles" / role / "meta" / "argument_specs.yml").read_text())
             for role in ("component", "envoy_gateway", "lws")}
    names = record.setting_names(specs)
    assert "component_values" in names and "envoy_gateway_https_port" in names
    assert not set(names) & record.PLUMBING
    assert record.setting_names({}) == []
    assert record.setting_names({"x": {"argument_specs": {"main": {"options": None}}}}) == []


def test_the_digest_changes_with_each_of_its_inputs_and_not_with_key_order():
    base = record.digest("c", {"a": 1, "b": 2}, PLAN, {"component_values": {}})
    assert record.digest("c", {"b": 2, "a": 1}, PLAN, {"component_values": {}}) == base
    assert record.digest("d", {"a": 1, "b": 2}, PLAN, {"component_values": {}}) != base
    assert record.digest("c", {"a": 1, "b": 3}, PLAN, {"component_values": {}}) != base
    assert record.digest("c", {"a": 1, "b": 2}, PLAN[:1], {"component_values": {}}) != base
    assert record.digest("c", {"a": 1, "b": 2}, PLAN, {"component_values": {"lws": {}}}) != base


def test_a_fingerprint_keeps_the_generation_or_else_the_resource_version():
    assert record.fingerprint(GATEWAY) == {"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
                                           "name": "inference-gateway", "namespace": "modelplane-system",
                                           "uid": "u1", "generation": 2}
    assert record.fingerprint(NAMESPACE) == {"apiVersion": "v1", "kind": "Namespace", "name": "modelplane-system",
                                             "uid": "u2", "resourceVersion": "5"}


def test_the_journal_folds_in_the_order_written_and_forgets_what_was_deleted(tmp_path):
    journal = tmp_path / "applied"
    assert record.noted(journal) == []
    record.note(journal, present=[GATEWAY, NAMESPACE])
    probe = {"apiVersion": "cert-manager.io/v1", "kind": "Certificate",
             "metadata": {"name": "probe", "namespace": "cert-manager", "uid": "u3", "generation": 1}}
    record.note(journal, present=[probe])
    newer = {**GATEWAY, "metadata": {**GATEWAY["metadata"], "generation": 3}}
    # Another API version of the same object is the same object.
    record.note(journal, present=[{**newer, "apiVersion": "gateway.networking.k8s.io/v1beta1"}])
    record.note(journal, absent=[probe])
    record.note(journal)  # nothing to note: no file
    assert len(list(journal.iterdir())) == 4
    assert journal.stat().st_mode & 0o777 == 0o700
    folded = record.noted(journal)
    assert sorted((found["kind"], found.get("generation", 0)) for found in folded) == [("Gateway", 3), ("Namespace", 0)]


def test_release_revisions_come_from_the_helm_secrets_labels_latest_deployed_revision_each():
    secrets = [helm_secret("cert-manager", "cert-manager", 1, "superseded"),
               helm_secret("cert-manager", "cert-manager", 2, "deployed"),
               helm_secret("someone-else", "default", 4, "deployed"),
               {"metadata": {"namespace": "x", "labels": {"owner": "someone"}}},
               {"metadata": {"namespace": "x", "labels": {"owner": "helm", "name": "y", "version": "v1"}}}]
    records = record.labelled_records(secrets)
    assert record.revisions(PLAN, records) == {"cert-manager/cert-manager": 2}
    failed = record.labelled_records([*secrets, helm_secret("cert-manager", "cert-manager", 3, "failed")])
    assert record.revisions(PLAN, failed) == {}


def test_the_record_round_trips_through_its_secret_and_other_secrets_hold_none():
    kept = record.build("d1", PLAN, deployed(2), [record.fingerprint(GATEWAY)])
    manifest = record.secret(kept, "kube-system")
    assert manifest["metadata"] == {"name": record.RECORD_NAME, "namespace": "kube-system",
                                    "labels": {"app.kubernetes.io/managed-by": "modelplane.serving"}}
    assert record.stored(manifest) == kept
    assert kept == {"digest": "d1", "releases": {"cert-manager/cert-manager": 2},
                    "objects": [record.fingerprint(GATEWAY)]}
    assert record.stored(None) is None
    assert record.stored({**manifest, "type": "Opaque"}) is None
    assert record.stored({**manifest, "data": {"record": base64.b64encode(b"not json").decode()}}) is None
    assert record.stored({**manifest, "data": {"record": base64.b64encode(b"[1]").decode()}}) is None


@pytest.fixture
def kept() -> dict:
    return record.build("d1", PLAN, deployed(2), [record.fingerprint(GATEWAY), record.fingerprint(NAMESPACE)])


def reader(*live: dict):
    by_name = {obj["metadata"]["name"] + obj["kind"]: obj for obj in live}
    asked = []

    def read(ref: dict) -> dict | None:
        asked.append(ref)
        return by_name.get(ref["metadata"]["name"] + ref["kind"])
    return read, asked


def test_a_cluster_is_unchanged_when_digest_releases_and_objects_all_match(kept):
    read, asked = reader(GATEWAY, NAMESPACE)
    # A user's release of a chart the plan does not install is none of its business.
    users = {"name": "redis", "namespace": "apps", "revision": 4, "status": "deployed", "chart": "redis"}
    assert record.why_changed(kept, "d1", PLAN, [*deployed(2), users], read) == ""
    assert asked == [{"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
                      "metadata": {"name": "inference-gateway", "namespace": "modelplane-system"}},
                     {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "modelplane-system"}}]
    # A status update moves the resourceVersion of an object with a generation: still unchanged.
    moved = {**GATEWAY, "metadata": {**GATEWAY["metadata"], "resourceVersion": "99"}}
    assert record.why_changed(kept, "d1", PLAN, deployed(2), reader(moved, NAMESPACE)[0]) == ""


@pytest.mark.parametrize(("stored", "digest", "releases", "live", "reason"), [
    (None, "d1", deployed(2), (GATEWAY, NAMESPACE), "the cluster has no record of an earlier converge"),
    ("kept", "d2", deployed(2), (GATEWAY, NAMESPACE),
     "the spec, the settings or the collection changed since the last converge"),
    ("kept", "d1", [], (GATEWAY, NAMESPACE), "the Helm release cert-manager/cert-manager is not deployed"),
    ("kept", "d1", deployed(3), (GATEWAY, NAMESPACE),
     "the Helm release cert-manager/cert-manager is at revision 3, the last converge left 2"),
    ("kept", "d1", [*deployed(2), {"name": "mine", "namespace": "user", "revision": 1, "status": "deployed",
                                   "chart": "cert-manager"}], (GATEWAY, NAMESPACE),
     "the Helm release user/mine of the chart cert-manager is not this stack's"),
    ("kept", "d1", [*deployed(2), {"name": "mp-lws", "namespace": "lws-system", "revision": 1, "status": "deployed",
                                   "chart": "lws"}], (GATEWAY, NAMESPACE),
     "the Helm release lws-system/mp-lws of the chart lws is not this stack's"),
    ("kept", "d1", deployed(2), (NAMESPACE,), "Gateway modelplane-system/inference-gateway is gone"),
    ("kept", "d1", deployed(2), ({**GATEWAY, "metadata": {**GATEWAY["metadata"], "generation": 3}}, NAMESPACE),
     "Gateway modelplane-system/inference-gateway was changed or re-created since the last converge"),
    ("kept", "d1", deployed(2), ({**GATEWAY, "metadata": {**GATEWAY["metadata"], "uid": "u9"}}, NAMESPACE),
     "Gateway modelplane-system/inference-gateway was changed or re-created since the last converge"),
    ("kept", "d1", deployed(2), (GATEWAY, {**NAMESPACE, "metadata": {**NAMESPACE["metadata"], "resourceVersion": "6"}}),
     "Namespace modelplane-system was changed or re-created since the last converge"),
])
def test_the_first_difference_is_the_reason_to_converge(kept, stored, digest, releases, live, reason):
    read, asked = reader(*live)
    assert record.why_changed(kept if stored == "kept" else None, digest, PLAN, releases, read) == reason
    if not reason.startswith(("Gateway", "Namespace")):
        assert asked == []  # objects are read only once everything else matched


def test_the_journal_files_are_plain_json(tmp_path):
    record.note(tmp_path, present=[GATEWAY])
    [written] = list(tmp_path.iterdir())
    assert json.loads(written.read_text()) == {"present": [record.fingerprint(GATEWAY)], "absent": []}
