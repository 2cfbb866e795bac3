"""Pure functions of the stand-in: patch flavours, selectors, structural schemas (no server)."""

from __future__ import annotations

import pytest
from standin.patch import PatchError, apply_merge, json_patch, merge_patch, strategic_merge
from standin.schema import apply_defaults, prune, validate
from standin.selection import SelectorError, field_matcher, label_matcher


def test_merge_patch_rfc7386():
    assert merge_patch({"a": 1, "b": {"c": 2, "d": 3}}, {"a": None, "b": {"c": 9}, "e": [1]}) == \
        {"b": {"c": 9, "d": 3}, "e": [1]}


def test_json_patch_operations():
    doc = {"a": [1, 2], "b": {"c": 1}}
    out = json_patch(doc, [{"op": "add", "path": "/a/-", "value": 3}, {"op": "remove", "path": "/b/c"},
                           {"op": "copy", "from": "/a", "path": "/d"}, {"op": "move", "from": "/d", "path": "/e"},
                           {"op": "replace", "path": "/a/0", "value": 0}, {"op": "test", "path": "/e/2", "value": 3}])
    assert out == {"a": [0, 2, 3], "b": {}, "e": [1, 2, 3]} and doc == {"a": [1, 2], "b": {"c": 1}}
    with pytest.raises(PatchError):
        json_patch(doc, [{"op": "remove", "path": "/zz"}])


def test_strategic_merge_directives():
    live = {"spec": {"containers": [{"name": "a", "image": "1"}, {"name": "b", "image": "2"}],
                     "tolerations": [{"key": "x"}]},
            "metadata": {"finalizers": ["f1"]}}
    patch = {"spec": {"$setElementOrder/containers": [{"name": "b"}, {"name": "a"}],
                      "containers": [{"name": "a", "image": "3"}], "tolerations": [{"key": "y"}]},
             "metadata": {"finalizers": ["f2"]}}
    out = strategic_merge(live, patch, "Pod")
    assert [(c["name"], c["image"]) for c in out["spec"]["containers"]] == [("b", "2"), ("a", "3")]
    assert out["spec"]["tolerations"] == [{"key": "y"}], "lists without a patch strategy are replaced"
    assert out["metadata"]["finalizers"] == ["f1", "f2"]
    removed = strategic_merge(out, {"metadata": {"$deleteFromPrimitiveList/finalizers": ["f1"]}}, "Pod")
    assert removed["metadata"]["finalizers"] == ["f2"]
    replaced = strategic_merge(out, {"spec": {"$patch": "replace", "containers": []}}, "Pod")
    assert replaced["spec"] == {"containers": []}
    svc = strategic_merge({"spec": {"ports": [{"port": 80, "name": "a"}]}},
                          {"spec": {"ports": [{"port": 443, "name": "b"}]}}, "Service")
    assert [p["port"] for p in svc["spec"]["ports"]] == [80, 443]
    with pytest.raises(PatchError):
        strategic_merge(live, {"spec": {"containers": [{"image": "no-name"}]}}, "Pod")


def test_apply_merge_drops_fields_the_manager_stopped_applying():
    live = {"data": {"a": "1", "b": "2", "other": "x"}}
    out = apply_merge(live, {"data": {"a": "1"}}, {"data": {"a": "1", "b": "2"}}, "ConfigMap")
    assert out == {"data": {"a": "1", "other": "x"}}


def test_label_and_field_selectors():
    obj = {"metadata": {"name": "n", "namespace": "ns", "labels": {"a": "1", "b": "2"}}, "type": "Opaque"}
    for selector, expected in (("a=1", True), ("a==1,b!=3", True), ("a in (1,2)", True), ("a notin (1)", False),
                               ("c", False), ("!c", True), ("a,b", True), ("", True)):
        assert label_matcher(selector)(obj) is expected, selector
    assert field_matcher("metadata.name=n,metadata.namespace!=x", "ConfigMap")(obj)
    assert field_matcher("type=Opaque", "Secret")(obj)
    with pytest.raises(SelectorError):
        field_matcher("type=Opaque", "ConfigMap")
    with pytest.raises(SelectorError):
        label_matcher("a in (1")


def test_schema_prune_default_validate():
    schema = {"type": "object", "properties": {
        "spec": {"type": "object", "properties": {
            "n": {"type": "integer", "default": 3},
            "m": {"type": "object", "additionalProperties": {"type": "string"}},
            "e": {"type": "object", "x-kubernetes-embedded-resource": True,
                  "x-kubernetes-preserve-unknown-fields": True},
            "l": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["k"],
                  "items": {"type": "object", "properties": {"k": {"type": "string"}}}},
        }}}}
    obj = {"apiVersion": "x/v1", "kind": "X", "metadata": {}, "spec": {"zz": 1, "m": {"a": "b"}, "e": {"kind": "K"},
                                                                       "l": [{"k": "a"}, {"k": "a"}]}}
    assert prune(obj, schema) == ["spec.zz"]
    apply_defaults(obj, schema)
    assert obj["spec"]["n"] == 3
    causes = {c.field: c.message for c in validate(obj, schema)}
    assert causes["spec.e.apiVersion"] == "spec.e.apiVersion: Required value: must not be empty"
    assert causes["spec.l[1]"] == 'spec.l[1]: Duplicate value: {"k":"a"}'
    assert validate({"spec": {"m": {"a": 1}}}, schema)[0].field == "spec.m[a]"
