"""Which desired objects differ from the cluster (module_utils/servingstack/drift.py and its filters)."""

from __future__ import annotations

import json

import pytest
from ansible.errors import AnsibleFilterError
from ansible_collections.modelplane.serving.plugins.filter import objects
from ansible_collections.modelplane.serving.plugins.module_utils.servingstack import drift

BUNDLE = {"apiVersion": "trust.cert-manager.io/v1alpha1", "kind": "Bundle", "metadata": {"name": "mp-gateway-ca"},
          "spec": {"sources": [{"secret": {"name": "mp-gateway-ca", "key": "ca.crt"}}],
                   "target": {"configMap": {"key": "ca.crt"}}}}


def live(obj: dict, **extra: object) -> dict:
    """``obj`` as the API server returns it (a copy): server-set metadata and a status added."""
    obj = json.loads(json.dumps(obj))
    metadata = {**obj["metadata"], "uid": "u-1", "resourceVersion": "7", "generation": 1,
                "creationTimestamp": "2026-12-02T00:00:00Z"}
    return {**obj, "metadata": metadata, "status": {"conditions": []}, **extra}


def test_an_object_the_cluster_holds_with_extra_server_fields_is_unchanged():
    assert drift.drifted([BUNDLE], [live(BUNDLE)]) == []


def test_a_missing_object_drifted():
    assert drift.drifted([BUNDLE], [None]) == [BUNDLE]


@pytest.mark.parametrize("change", [
    lambda o: o["spec"]["target"]["configMap"].update(key="other"),
    lambda o: o["spec"]["sources"].append({"configMap": {"name": "x", "key": "y"}}),
    lambda o: o["spec"]["sources"].clear(),
    lambda o: o["metadata"].update(labels={"a": "b"}),
])
def test_any_differing_desired_field_drifted(change):
    desired = json.loads(json.dumps(BUNDLE))
    change(desired)
    assert drift.drifted([desired], [live(BUNDLE)]) == [desired]


def test_a_field_a_list_item_gained_in_the_cluster_is_drift():
    """A patch replaces the list whole, so it would remove the field: the object drifted."""
    changed = live(BUNDLE)
    changed["spec"]["sources"] = [{"secret": {"name": "mp-gateway-ca", "key": "ca.crt"}, "inLine": "x"}]
    assert drift.drifted([BUNDLE], [changed]) == [BUNDLE]
    nested = live(BUNDLE)
    nested["spec"]["sources"] = [{"secret": {"name": "mp-gateway-ca", "key": "ca.crt", "extra": 1}}]
    assert drift.drifted([BUNDLE], [nested]) == [BUNDLE]


def test_a_field_left_out_of_the_desired_object_is_no_drift_for_a_patch():
    """kubernetes.core.k8s without apply patches: a field the desired object does not set stays as it is."""
    desired = json.loads(json.dumps(BUNDLE))
    desired["spec"].pop("target")
    assert drift.drifted([desired], [live(BUNDLE)]) == []


def test_numbers_compare_by_value_but_never_equal_a_bool():
    assert drift.contains({"port": 80.0}, {"port": 80})
    assert not drift.contains({"enabled": 1}, {"enabled": True})
    assert not drift.contains({"enabled": True}, {"enabled": 1})
    assert not drift.contains({"port": "80"}, {"port": 80})


def test_status_in_a_desired_object_is_not_compared():
    assert drift.drifted([{**BUNDLE, "status": {"x": 1}}], [live(BUNDLE)]) == []


def test_apply_also_needs_the_last_applied_configuration_to_match():
    applied = json.dumps(BUNDLE)
    with_annotation = live(BUNDLE)
    with_annotation["metadata"]["annotations"] = {drift.LAST_APPLIED: applied}
    assert drift.drifted([BUNDLE], [with_annotation], apply=True) == []
    # A field applied before and dropped now: the live object still contains the desired one,
    # but apply would remove the field, so it drifted.
    before = json.loads(applied)
    before["metadata"]["labels"] = {"old": "label"}
    stale = live(before)
    stale["metadata"]["annotations"] = {drift.LAST_APPLIED: json.dumps(before)}
    assert drift.drifted([BUNDLE], [stale]) == []
    assert drift.drifted([BUNDLE], [stale], apply=True) == [BUNDLE]
    # Never applied (no annotation): apply has work to do.
    assert drift.drifted([BUNDLE], [live(BUNDLE)], apply=True) == [BUNDLE]


def test_lengths_must_match():
    with pytest.raises(ValueError, match="1 desired objects but 0 live"):
        drift.drifted([BUNDLE], [])
    with pytest.raises(AnsibleFilterError, match="1 desired objects but 2 live"):
        objects.servingstack_drifted([BUNDLE], [None, None])


@pytest.mark.parametrize(("status", "generation", "expected"), [
    ({"conditions": [{"type": "Programmed", "status": "True"}]}, 1, True),
    ({"conditions": [{"type": "Programmed", "status": "False"}]}, 1, False),
    ({"conditions": [{"type": "Accepted", "status": "True"}]}, 1, False),
    ({"conditions": [{"type": "Programmed", "status": "True", "observedGeneration": 1}]}, 2, False),
    ({"conditions": [{"type": "Programmed", "status": "True", "observedGeneration": 2}]}, 2, True),
    ({}, 1, False),
])
def test_condition_true_only_for_the_current_generation(status, generation, expected):
    obj = {"metadata": {"generation": generation}, "status": status}
    assert objects.servingstack_condition(obj, "Programmed") is expected
    assert objects.servingstack_condition(None, "Programmed") is False


def test_object_ref_keeps_only_what_a_deletion_needs():
    assert objects.servingstack_object_ref(live({**BUNDLE, "metadata": {"name": "n", "namespace": "ns"}})) == {
        "apiVersion": BUNDLE["apiVersion"], "kind": "Bundle", "metadata": {"name": "n", "namespace": "ns"}}
    assert objects.servingstack_object_ref(BUNDLE)["metadata"] == {"name": "mp-gateway-ca"}
