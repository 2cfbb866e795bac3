"""The converge record (module_utils/servingstack/record.py): what decides a re-run can skip the components."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
from ansible_collections.modelplane.serving.plugins.module_utils.servingstack import k8s_objects, record

REPO = Path(__file__).resolve().parents[2]

PLAN = [
    {"name": "cert_manager", "role": "modelplane.serving.cert_manager",
     "releases": [{"release": "mp-cert-manager", "namespace": "cert-manager", "chart": "cert-manager"}]},
    {"name": "modelexpress", "role": "modelplane.serving.modelexpress", "releases": []},
]
OURS = "cert-manager/mp-cert-manager"
GATEWAY = {"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
           "metadata": {"name": "inference-gateway", "namespace": "modelplane-system", "uid": "u1", "generation": 2,
                        "resourceVersion": "17"},
           "spec": {"gatewayClassName": "envoy"}, "status": {"conditions": []}}
QUOTA = {"apiVersion": "v1", "kind": "ResourceQuota",
         "metadata": {"name": "pods", "namespace": "nvidia-dra", "uid": "u2", "resourceVersion": "5",
                      "labels": {"app.kubernetes.io/managed-by": "modelplane.serving"}},
         "spec": {"hard": {"pods": "100"}}, "status": {"used": {"pods": "1"}}}


def release(name: str = "mp-cert-manager", namespace: str = "cert-manager", revision: int = 2,
            status: str = "deployed", uid: str = "s2", chart: str = "cert-manager") -> dict:
    return {"name": name, "namespace": namespace, "revision": revision, "status": status, "uid": uid, "chart": chart}


def changed(obj: dict, **metadata) -> dict:
    return {**obj, "metadata": {**obj["metadata"], **metadata}}


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


def test_a_fingerprint_keeps_the_generation_and_how_the_object_was_waited_for():
    assert record.fingerprint(GATEWAY, {"type": "Programmed"}) == {
        "apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway", "name": "inference-gateway",
        "namespace": "modelplane-system", "uid": "u1", "generation": 2, "ready": {"type": "Programmed"}}
    # A status write moves the resourceVersion, not the generation.
    assert record.fingerprint(changed(GATEWAY, resourceVersion="99")) == record.fingerprint(GATEWAY)


def test_a_kind_without_a_generation_is_fingerprinted_by_its_content_without_status_or_server_metadata():
    found = record.fingerprint(QUOTA)
    assert set(found) == {"apiVersion", "kind", "name", "namespace", "uid", "content"}
    # The quota controller rewrites status.used (and with it the resourceVersion): still the same.
    assert record.fingerprint({**changed(QUOTA, resourceVersion="6", managedFields=[{"manager": "kube"}]),
                               "status": {"used": {"pods": "7"}}}) == found
    assert record.fingerprint({**QUOTA, "spec": {"hard": {"pods": "5"}}}) != found
    assert record.fingerprint(changed(QUOTA, labels={})) != found


def test_the_journal_folds_in_the_order_written_and_forgets_what_was_deleted(tmp_path):
    journal = tmp_path / "applied"
    assert record.noted(journal) == []
    record.note(journal, present=[GATEWAY, QUOTA], ready={"type": "Programmed"})
    probe = {"apiVersion": "cert-manager.io/v1", "kind": "Certificate",
             "metadata": {"name": "probe", "namespace": "cert-manager"}}
    record.note(journal, present=[probe], ready={})
    # Another API version of the same object is the same object; applied again without a wait, it keeps the
    # condition an earlier note waited for.
    record.note(journal, present=[{**GATEWAY, "apiVersion": "gateway.networking.k8s.io/v1beta1"}])
    record.note(journal, absent=[probe])
    record.note(journal)  # nothing to note: no file
    assert len(list(journal.iterdir())) == 4
    assert journal.stat().st_mode & 0o777 == 0o700
    assert record.noted(journal) == [
        {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "pods", "namespace": "nvidia-dra"},
         "ready": {"type": "Programmed"}},
        {"apiVersion": "gateway.networking.k8s.io/v1beta1", "kind": "Gateway",
         "metadata": {"name": "inference-gateway", "namespace": "modelplane-system"}, "ready": {"type": "Programmed"}}]
    first = sorted(journal.iterdir())[0]
    assert json.loads(first.read_text())["absent"] == []
    # A wait by kind does not replace a condition, a condition replaces a wait by kind.
    record.note(journal, present=[QUOTA], ready={})
    assert record.noted(journal)[0]["ready"] == {"type": "Programmed"}
    record.note(journal, present=[GATEWAY], ready={"type": "Accepted"})
    assert record.noted(journal)[1]["ready"] == {"type": "Accepted"}


def test_the_fingerprints_are_read_back_from_the_cluster_and_leave_out_what_is_gone():
    applied = [{"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "pods", "namespace": "nvidia-dra"}},
               {**k8s_objects.ref(GATEWAY), "ready": {}}]
    assert record.fingerprints(applied, lambda ref: QUOTA if ref["kind"] == "ResourceQuota" else None) == [
        record.fingerprint(QUOTA)]
    assert record.fingerprints(applied, lambda ref: GATEWAY if ref["kind"] == "Gateway" else None) == [
        record.fingerprint(GATEWAY, {})]


def test_the_releases_that_concern_the_stack_are_its_own_others_of_its_charts_and_any_of_ours():
    records = [release(), release("users-cert-manager", "users"), release("mp-lws", "lws-system", chart="lws"),
               release("redis", "apps", chart="redis")]
    assert sorted(record.concerned(PLAN, records)) == [OURS, "lws-system/mp-lws", "users/users-cert-manager"]
    assert record.concerned(PLAN, [release()])[OURS] == {"revision": 2, "status": "deployed", "uid": "s2",
                                                         "chart": "cert-manager"}


def test_the_record_round_trips_through_its_secret_and_other_secrets_hold_none():
    kept = record.build("d1", PLAN, [release()], [record.fingerprint(GATEWAY)])
    manifest = record.secret(kept, "kube-system")
    assert manifest["metadata"] == {"name": record.RECORD_NAME, "namespace": "kube-system",
                                    "labels": {"app.kubernetes.io/managed-by": "modelplane.serving"}}
    assert record.stored(manifest) == kept
    assert kept["releases"] == record.concerned(PLAN, [release()])
    assert record.stored(None) is None
    assert record.stored({**manifest, "type": "Opaque"}) is None
    assert record.stored({**manifest, "data": {"record": base64.b64encode(b"not json").decode()}}) is None
    assert record.stored({**manifest, "data": {"record": base64.b64encode(b"[1]").decode()}}) is None


USERS = release("users-cert-manager", "users", revision=1, uid="x1")


@pytest.fixture
def kept() -> dict:
    return record.build("d1", PLAN, [release(), USERS],
                        [record.fingerprint(GATEWAY, {"type": "Programmed"}), record.fingerprint(QUOTA)])


def reader(*live: dict):
    by_name = {obj["metadata"]["name"] + obj["kind"]: obj for obj in live}
    asked = []

    def read(ref: dict) -> dict | None:
        asked.append(ref)
        return by_name.get(ref["metadata"]["name"] + ref["kind"])
    return read, asked


def ready(obj, condition) -> bool:
    """A stand-in readiness check: an object is ready unless its status says ``ok: false``."""
    assert condition == {"type": "Programmed"}
    return (obj.get("status") or {}).get("ok", True)


def test_a_cluster_is_unchanged_when_digest_releases_and_objects_all_match(kept):
    read, asked = reader(GATEWAY, QUOTA)
    # A user's release of a chart the plan does not install is none of its business.
    records = [release(), USERS, release("redis", "apps", chart="redis")]
    assert record.why_changed(kept, "d1", PLAN, records, read, ready) == ""
    assert asked == [k8s_objects.ref(GATEWAY), k8s_objects.ref(QUOTA)]


@pytest.mark.parametrize(("stored", "digest", "releases", "live", "reason"), [
    (None, "d1", [release(), USERS], (GATEWAY, QUOTA), "the cluster has no record of an earlier converge"),
    ("kept", "d2", [release(), USERS], (GATEWAY, QUOTA),
     "the spec, the settings or the collection changed since the last converge"),
    ("kept", "d1", [USERS], (GATEWAY, QUOTA), f"the Helm release {OURS} is not deployed"),
    ("kept", "d1", [release(status="failed", revision=3), USERS], (GATEWAY, QUOTA),
     f"the Helm release {OURS} is not deployed"),
    ("kept", "d1", [release(revision=3, uid="s3"), USERS], (GATEWAY, QUOTA),
     f"the Helm release {OURS} is at revision 3, the last converge left 2"),
    ("kept", "d1", [release(uid="s9"), USERS], (GATEWAY, QUOTA),
     f"the Helm release {OURS} was installed again since the last converge"),
    ("kept", "d1", [release()], (GATEWAY, QUOTA), "the Helm release users/users-cert-manager is gone"),
    ("kept", "d1", [release(), USERS, release("mp-lws", "lws-system", revision=1, uid="l1", chart="lws")],
     (GATEWAY, QUOTA), "the Helm release lws-system/mp-lws of the chart lws is not this stack's"),
    ("kept", "d1", [release(), USERS], (QUOTA,), "Gateway modelplane-system/inference-gateway is gone"),
    ("kept", "d1", [release(), USERS], (changed(GATEWAY, generation=3), QUOTA),
     "Gateway modelplane-system/inference-gateway was changed or re-created since the last converge"),
    ("kept", "d1", [release(), USERS], (changed(GATEWAY, uid="u9"), QUOTA),
     "Gateway modelplane-system/inference-gateway was changed or re-created since the last converge"),
    ("kept", "d1", [release(), USERS], ({**GATEWAY, "status": {"ok": False}}, QUOTA),
     "Gateway modelplane-system/inference-gateway is not ready"),
    ("kept", "d1", [release(), USERS], (GATEWAY, {**QUOTA, "spec": {"hard": {"pods": "1"}}}),
     "ResourceQuota nvidia-dra/pods was changed or re-created since the last converge"),
])
def test_the_first_difference_is_the_reason_to_converge(kept, stored, digest, releases, live, reason):
    read, asked = reader(*live)
    assert record.why_changed(kept if stored == "kept" else None, digest, PLAN, releases, read, ready) == reason
    if not reason.startswith(("Gateway", "ResourceQuota")):
        assert asked == []  # objects are read only once everything else matched
