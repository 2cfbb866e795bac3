"""ownership.py: a component's Helm values by chart, and the Helm releases and CRDs that are not ours to take over."""

from __future__ import annotations

import base64
import gzip
import json

import pytest
from ansible_collections.modelplane.serving.plugins.module_utils.servingstack import ownership


def release_secret(name: str, namespace: str, chart: str, revision: int = 1, status: str = "deployed",
                   compress: bool = True) -> dict:
    """A Helm 3 release Secret as the API returns it: data.release is base64 (the API's) of base64 (Helm's) of the
    gzipped release JSON."""
    release = {"name": name, "namespace": namespace, "version": revision, "info": {"status": status},
               "chart": {"metadata": {"name": chart, "version": "v1.0.0"}}, "config": {"password": "hunter2"}}
    raw = json.dumps(release).encode()
    packed = base64.b64encode(gzip.compress(raw) if compress else raw)
    return {"apiVersion": "v1", "kind": "Secret", "type": "helm.sh/release.v1",
            "metadata": {"name": f"sh.helm.release.v1.{name}.v{revision}", "namespace": namespace,
                         "labels": {"owner": "helm", "name": name, "status": status, "version": str(revision)}},
            "data": {"release": base64.b64encode(packed).decode()}}


OURS = {"release": "mp-cert-manager", "chart": "cert-manager", "namespace": "cert-manager"}


# --------------------------------------------------------------------------- release Secrets


def test_a_release_secret_decodes_to_its_namespace_name_and_chart():
    assert ownership.release_chart(release_secret("mp-cert-manager", "cert-manager", "cert-manager")) \
        == ("cert-manager", "mp-cert-manager", "cert-manager")
    # Helm's storage gzips; an uncompressed record decodes too.
    assert ownership.release_chart(release_secret("cm", "tools", "cert-manager", compress=False)) \
        == ("tools", "cm", "cert-manager")


def test_the_release_namespace_falls_back_to_the_secrets():
    secret = release_secret("cm", "tools", "cert-manager")
    release = {"name": "cm", "chart": {"metadata": {"name": "cert-manager"}}}
    secret["data"]["release"] = base64.b64encode(base64.b64encode(gzip.compress(json.dumps(release).encode()))).decode()
    assert ownership.release_chart(secret) == ("tools", "cm", "cert-manager")


@pytest.mark.parametrize("data", [
    {}, {"release": ""}, {"release": "not base64!"}, {"release": base64.b64encode(b"not base64 either!").decode()},
    {"release": base64.b64encode(base64.b64encode(b"\x1f\x8bnot gzip")).decode()},
    {"release": base64.b64encode(base64.b64encode(b"{not json")).decode()},
])
def test_a_secret_that_does_not_decode_is_none(data):
    assert ownership.release_chart({"metadata": {"namespace": "x"}, "data": data}) is None
    assert ownership.release_chart({}) is None


def test_a_users_release_of_the_same_chart_under_another_name_is_listed_ours_and_other_charts_are_not():
    secrets = [
        release_secret("mp-cert-manager", "cert-manager", "cert-manager"),  # ours
        release_secret("mp-cert-manager", "cert-manager", "cert-manager", revision=2),  # ours, a later revision
        release_secret("cm", "tools", "cert-manager"),  # a user's, same chart
        release_secret("cm", "tools", "cert-manager", revision=2),  # the same release twice: said once
        release_secret("mp-cert-manager", "elsewhere", "cert-manager"),  # our name in another namespace: not ours
        release_secret("my-lws", "user-lws", "lws"),  # another chart
        {"type": "helm.sh/release.v1", "metadata": {}, "data": {"release": "garbage"}},
    ]
    assert ownership.foreign_releases([OURS], secrets) == [
        "Helm release elsewhere/mp-cert-manager installs the chart cert-manager too (ours is "
        "cert-manager/mp-cert-manager)",
        "Helm release tools/cm installs the chart cert-manager too (ours is cert-manager/mp-cert-manager)",
    ]
    assert ownership.foreign_releases([OURS], secrets[:2] + secrets[5:]) == []


def test_foreign_releases_are_found_for_every_planned_release():
    lws = {"release": "mp-lws", "chart": "lws", "namespace": "lws-system"}
    secrets = [release_secret("cm", "tools", "cert-manager"), release_secret("my-lws", "user-lws", "lws")]
    assert ownership.foreign_releases([OURS, lws], secrets) == [
        "Helm release tools/cm installs the chart cert-manager too (ours is cert-manager/mp-cert-manager)",
        "Helm release user-lws/my-lws installs the chart lws too (ours is lws-system/mp-lws)",
    ]
    assert ownership.foreign_releases([], secrets) == []
    assert ownership.foreign_releases([OURS, lws], []) == []


def test_a_foreign_release_line_never_carries_its_values():
    [line] = ownership.foreign_releases([OURS], [release_secret("cm", "tools", "cert-manager")])
    assert "hunter2" not in line


# --------------------------------------------------------------------------- CRDs another release owns


def crd(name: str, group: str, owner: str | None = None, namespace: str | None = None) -> dict:
    annotations = {}
    if owner:
        annotations = {ownership.RELEASE_NAME: owner, ownership.RELEASE_NAMESPACE: namespace}
    return {"metadata": {"name": name, "annotations": annotations}, "spec": {"group": group}}


def test_crds_of_our_groups_owned_by_another_release_are_conflicts():
    ours = {"release": "mp-trust-manager", "namespace": "cert-manager", "crd_groups": ["trust.cert-manager.io"]}
    found = [
        crd("bundles.trust.cert-manager.io", "trust.cert-manager.io", "user-trust", "tools"),
        crd("certificates.cert-manager.io", "cert-manager.io", "user-cm", "tools"),  # another chart's group
        crd("clusterbundles.trust.cert-manager.io", "trust.cert-manager.io"),  # no owner: crds/ or kubectl
        crd("x.trust.cert-manager.io", "trust.cert-manager.io", "mp-trust-manager", "cert-manager"),  # ours
        crd("y.trust.cert-manager.io", "trust.cert-manager.io", "mp-trust-manager", "elsewhere"),  # same name, other ns
    ]
    assert ownership.crd_conflicts([ours], found) == [
        "CustomResourceDefinition bundles.trust.cert-manager.io belongs to Helm release tools/user-trust "
        "(ours is cert-manager/mp-trust-manager)",
        "CustomResourceDefinition y.trust.cert-manager.io belongs to Helm release elsewhere/mp-trust-manager "
        "(ours is cert-manager/mp-trust-manager)",
    ]
    assert ownership.crd_conflicts([{**ours, "crd_groups": []}], found) == []
    assert ownership.crd_conflicts([ours], []) == []


# --------------------------------------------------------------------------- values by chart

GROVE_KAI = [{"release": "mp-kai-scheduler", "chart": "kai-scheduler"},
             {"release": "mp-grove-charts", "chart": "grove-charts"}]


def test_values_are_keyed_by_chart_and_the_users_merge_over_the_roles_recursively():
    own = {"grove-charts": {"config": {"scheduler": {"defaultProfileName": "kai-scheduler", "profiles": [{"a": 1}]}}}}
    extra = {"grove-charts": {"config": {"scheduler": {"profiles": []}}, "replicaCount": 2},
             "kai-scheduler": {"global": {"tolerations": []}},
             # Another component's chart: that component's role takes it.
             "lws": {"replicaCount": 3}}
    assert ownership.chart_values(own, extra, GROVE_KAI) == {
        "kai-scheduler": {"global": {"tolerations": []}},
        # Lists are replaced, mappings merged key by key.
        "grove-charts": {"config": {"scheduler": {"defaultProfileName": "kai-scheduler", "profiles": []}},
                         "replicaCount": 2},
    }
    assert own["grove-charts"]["config"]["scheduler"]["profiles"] == [{"a": 1}], "the role's values are not changed"
    assert ownership.chart_values(None, None, GROVE_KAI) == {"kai-scheduler": {}, "grove-charts": {}}


@pytest.mark.parametrize(("own", "extra", "message"), [
    ({"node-feature-discovery": {}}, {},
     "roles/grove_kai/templates/values.yaml.j2: node-feature-discovery is not a chart of this component "
     "(its charts: kai-scheduler, grove-charts)"),
    ({}, {"grove-chart": {}}, "component_values.grove-chart: no component installs a chart of that name (charts: "),
    ({}, ["grove-charts"], "component_values: must be a mapping of chart name to Helm values"),
    ({}, {"grove-charts": [1]}, "component_values.grove-charts: must be a mapping of Helm values"),
    ({"grove-charts": "x"}, {}, "roles/grove_kai/templates/values.yaml.j2.grove-charts: must be a mapping"),
])
def test_values_for_what_is_not_a_chart_are_refused_by_name(own, extra, message):
    with pytest.raises(ownership.ValuesError) as raised:
        ownership.chart_values(own, extra, GROVE_KAI, "roles/grove_kai/templates/values.yaml.j2")
    assert str(raised.value).startswith(message)
