"""releases.py: helm 3 release records read from their Secrets, and which of our releases need helm."""

from __future__ import annotations

import base64
import gzip
import json

import pytest
import yaml
from ansible_collections.modelplane.serving.plugins.module_utils.servingstack import releases


def record_secret(name, namespace, revision, status, chart, version, config=None, kind="helm.sh/release.v1"):
    release = {"name": name, "namespace": namespace, "version": revision, "info": {"status": status},
               "chart": {"metadata": {"name": chart, "version": version}}}
    if config is not None:
        release["config"] = config
    packed = base64.b64encode(gzip.compress(json.dumps(release).encode()))
    return {"type": kind, "metadata": {"namespace": namespace, "uid": f"{name}.v{revision}"},
            "data": {"release": base64.b64encode(packed).decode()}}


OURS = {"release": "mp-cert-manager", "chart": "cert-manager", "chart_ref": "cert-manager",
        "chart_repo_url": "https://charts.jetstack.io", "version": "v1.21.1", "namespace": "cert-manager"}
VALUES = {"cert-manager": {"crds": {"enabled": True, "keep": True}}}


def test_records_keep_the_latest_revision_and_skip_other_secrets():
    found = releases.records([
        record_secret("mp-cert-manager", "cert-manager", 1, "superseded", "cert-manager", "v1.21.0"),
        record_secret("mp-cert-manager", "cert-manager", 2, "deployed", "cert-manager", "v1.21.1", {"a": 1}),
        record_secret("x", "y", 1, "deployed", "c", "1", kind="Opaque"),
        {"type": "helm.sh/release.v1", "metadata": {}, "data": {"release": "garbage"}},
    ])
    assert found == [{"name": "mp-cert-manager", "uid": "mp-cert-manager.v2", "namespace": "cert-manager",
                      "revision": 2, "status": "deployed",
                      "chart": "cert-manager", "version": "v1.21.1", "config": {"a": 1}, "unkept_crds": []}]


def test_a_users_release_values_are_never_kept():
    found = releases.records([
        record_secret("cm", "tools", 1, "deployed", "cert-manager", "v1.21.1", {"password": "hunter2"}),
        record_secret("mp-lws", "lws-system", 1, "deployed", "lws", "v0.8.0", {"a": 1}),
    ])
    by_name = {record["name"]: record for record in found}
    assert by_name["cm"]["config"] == {}
    assert by_name["cm"]["chart"] == "cert-manager"  # still known, for the conflict check
    assert by_name["mp-lws"]["config"] == {"a": 1}


def test_a_deployed_release_with_the_same_version_and_values_needs_no_helm():
    found = releases.records([record_secret("mp-cert-manager", "cert-manager", 1, "deployed", "cert-manager",
                                            "v1.21.1", VALUES["cert-manager"])])
    assert releases.changes([OURS], VALUES, found) == {"todo": [], "conflicts": []}


def test_version_values_status_or_absence_send_it_to_helm():
    def todo(**record):
        base = {"name": "mp-cert-manager", "namespace": "cert-manager", "revision": 1, "status": "deployed",
                "chart": "cert-manager", "version": "v1.21.1", "config": VALUES["cert-manager"]}
        return releases.changes([OURS], VALUES, [{**base, **record}])["todo"]

    assert todo() == []
    assert todo(version="1.21.1") == []  # helm matches versions with or without the v
    assert todo(version="v1.21.0")[0]["installed"] is True
    assert todo(config={})[0]["values"] == VALUES["cert-manager"]
    assert todo(status="failed")
    assert releases.changes([OURS], VALUES, [])["todo"][0]["installed"] is False


def test_a_foreign_release_of_the_same_chart_is_a_conflict():
    found = [{"name": "cm", "namespace": "tools", "revision": 3, "status": "deployed", "chart": "cert-manager",
              "version": "v1.17.1", "config": {}}]
    assert releases.changes([OURS], VALUES, found)["conflicts"] == [
        "tools/cm (chart cert-manager, ours is cert-manager/mp-cert-manager)"]


@pytest.mark.parametrize("state", ["uninstalled", "uninstalling"])
def test_an_uninstalled_release_of_the_same_chart_is_no_conflict(state):
    # helm uninstall --keep-history leaves the records behind; the release is gone.
    found = releases.records([record_secret("cm", "tools", 2, state, "cert-manager", "v1.17.1")])
    assert found[0]["status"] == state
    assert releases.changes([OURS], VALUES, found)["conflicts"] == []


@pytest.mark.parametrize("state", ["failed", "superseded", "pending-upgrade"])
def test_a_foreign_release_in_any_other_state_is_a_conflict(state):
    found = [{"name": "cm", "namespace": "tools", "revision": 3, "status": state, "chart": "cert-manager",
              "version": "v1.17.1", "config": {}}]
    assert releases.changes([OURS], VALUES, found)["conflicts"] == [
        "tools/cm (chart cert-manager, ours is cert-manager/mp-cert-manager)"]


SHOWN_CRDS = """\
---
# Source: node-feature-discovery/crds/nfd-api-crds.yaml
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: nodefeatures.nfd.k8s-sigs.io
spec: {}
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: nodefeaturerules.nfd.k8s-sigs.io
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: not-a-crd
---
"""


def test_crd_names_come_from_every_document_once_and_nothing_else():
    listed = {"apiVersion": "v1", "kind": "List",
              "items": [{"kind": "CustomResourceDefinition", "metadata": {"name": "a.example.io"}}, None]}
    docs = [*yaml.safe_load_all(SHOWN_CRDS), *yaml.safe_load_all(SHOWN_CRDS), None, "text", listed,
            {"kind": "CustomResourceDefinition", "metadata": {}}]
    assert releases.crd_names(docs) == [
        "nodefeatures.nfd.k8s-sigs.io", "nodefeaturerules.nfd.k8s-sigs.io", "a.example.io"]
    assert releases.crd_names([]) == []


def test_show_crds_commands_cover_only_our_installed_releases():
    lws = {"release": "mp-lws", "chart": "lws", "chart_ref": "oci://registry.k8s.io/lws/charts/lws",
           "chart_repo_url": None, "version": "v0.8.0", "namespace": "lws-system"}
    found = [
        {"name": "mp-cert-manager", "namespace": "cert-manager", "version": "v1.21.0", "chart": "cert-manager"},
        {"name": "mp-lws", "namespace": "lws-system", "version": "0.8.0", "chart": "lws"},
        {"name": "my-lws", "namespace": "user-lws", "version": "0.8.0", "chart": "lws"},
        {"name": "mp-lws", "namespace": "elsewhere", "version": "0.8.0", "chart": "lws"},
    ]
    assert releases.show_crds_commands(found, [OURS, lws], "/opt/helm") == [
        # The installed version (it brought the CRDs), with the chart's repository.
        {"name": "mp-cert-manager", "argv": ["/opt/helm", "show", "crds", "cert-manager", "--version", "v1.21.0",
                                             "--repo", "https://charts.jetstack.io"]},
        # OCI: no --repo; the plan's spelling of the same version.
        {"name": "mp-lws", "argv": ["/opt/helm", "show", "crds", "oci://registry.k8s.io/lws/charts/lws",
                                    "--version", "v0.8.0"]},
    ]
    assert releases.show_crds_commands([], [OURS]) == []


def test_the_crd_refs_filter_makes_deletable_definitions_and_names_bad_output():
    from ansible.errors import AnsibleFilterError
    from ansible_collections.modelplane.serving.plugins.filter import helm

    assert helm.helm_release_crd_refs([SHOWN_CRDS]) == [
        {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
         "metadata": {"name": name}} for name in ("nodefeatures.nfd.k8s-sigs.io", "nodefeaturerules.nfd.k8s-sigs.io")]
    assert helm.helm_release_crd_refs([]) == []
    assert helm.helm_release_crd_refs(["", "# only a comment\n", SHOWN_CRDS])[0]["metadata"]["name"] \
        == "nodefeatures.nfd.k8s-sigs.io"
    with pytest.raises(AnsibleFilterError, match="helm_release_crd_refs: helm output is not YAML"):
        helm.helm_release_crd_refs(["a: [b"])


def crd(name: str, group: str, owner: str | None = None, namespace: str | None = None) -> dict:
    annotations = {}
    if owner:
        annotations = {releases.RELEASE_NAME: owner, releases.RELEASE_NAMESPACE: namespace}
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
    assert releases.crd_conflicts([ours], found) == [
        "CustomResourceDefinition bundles.trust.cert-manager.io belongs to Helm release tools/user-trust "
        "(ours is cert-manager/mp-trust-manager)",
        "CustomResourceDefinition y.trust.cert-manager.io belongs to Helm release elsewhere/mp-trust-manager "
        "(ours is cert-manager/mp-trust-manager)",
    ]
    assert releases.crd_conflicts([{**ours, "crd_groups": []}], found) == []
    assert releases.crd_conflicts([ours], []) == []


def test_unkept_crds_finds_templated_crds_without_keep() -> None:
    manifest = """---
# Source: lws/templates/crds/leaderworkerset.yaml
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  annotations:
    controller-gen.kubebuilder.io/version: v0.17.2
  name: leaderworkersets.leaderworkerset.x-k8s.io
spec:
  names:
    name: not-this
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: certificates.cert-manager.io
  annotations:
    "helm.sh/resource-policy": keep
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: lws-controller-manager
"""
    assert releases.unkept_crds(manifest) == ["leaderworkersets.leaderworkerset.x-k8s.io"]
    assert releases.unkept_crds("") == []


def test_an_upgrade_carries_the_installed_revisions_unkept_crds() -> None:
    entry = {"release": "mp-lws", "chart": "lws", "version": "v0.8.0", "namespace": "lws-system"}
    record = {"name": "mp-lws", "namespace": "lws-system", "status": "deployed", "chart": "lws", "version": "v0.7.0",
              "config": {}, "unkept_crds": ["leaderworkersets.leaderworkerset.x-k8s.io"]}
    [todo] = releases.changes([entry], {}, [record])["todo"]
    assert (todo["installed"], todo["unkept_crds"]) == (True, ["leaderworkersets.leaderworkerset.x-k8s.io"])
    [fresh] = releases.changes([entry], {}, [])["todo"]
    assert (fresh["installed"], fresh["unkept_crds"]) == (False, [])


# --------------------------------------------------------------------------- values by chart

GROVE_KAI = [{"release": "mp-kai-scheduler", "chart": "kai-scheduler"},
             {"release": "mp-grove-charts", "chart": "grove-charts"}]


def test_values_are_keyed_by_chart_and_the_users_merge_over_the_roles_recursively():
    own = {"grove-charts": {"config": {"scheduler": {"defaultProfileName": "kai-scheduler", "profiles": [{"a": 1}]}}}}
    extra = {"grove-charts": {"config": {"scheduler": {"profiles": []}}, "replicaCount": 2},
             "kai-scheduler": {"global": {"tolerations": []}},
             # Another component's chart: that component's role takes it.
             "lws": {"replicaCount": 3}}
    assert releases.chart_values(own, extra, GROVE_KAI) == {
        "kai-scheduler": {"global": {"tolerations": []}},
        # Lists are replaced, mappings merged key by key.
        "grove-charts": {"config": {"scheduler": {"defaultProfileName": "kai-scheduler", "profiles": []}},
                         "replicaCount": 2},
    }
    assert own["grove-charts"]["config"]["scheduler"]["profiles"] == [{"a": 1}], "the role's values are not changed"
    assert releases.chart_values(None, None, GROVE_KAI) == {"kai-scheduler": {}, "grove-charts": {}}


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
    with pytest.raises(releases.ValuesError) as raised:
        releases.chart_values(own, extra, GROVE_KAI, "roles/grove_kai/templates/values.yaml.j2")
    assert str(raised.value).startswith(message)


@pytest.mark.parametrize(("printed", "semver"), [
    ("v3.17.2+gcc0ef0b", (3, 17, 2)), ("v4.1.4", (4, 1, 4)), ("3.18.0", (3, 18, 0)), (" v3.17.0\n", (3, 17, 0)),
    ("v2.16.1+ge13bc94", (2, 16, 1)), ("unknown", None), ("", None), (None, None), ("v3.17", None),
])
def test_the_helm_version_is_read_from_what_helm_version_short_prints(printed, semver):
    assert releases.helm_semver(printed) == semver


@pytest.mark.parametrize("printed", ["v3.17.0+g1", "v3.18.4", "v4.0.0", "v4.3.1+gabc"])
def test_helm_3_17_and_newer_and_helm_4_are_not_refused(printed):
    assert releases.refusals(printed, "helm", [], [], False) == []


@pytest.mark.parametrize("printed", ["v3.16.4+g1", "v3.12.3+g3a31588", "v2.17.0", "v5.0.0", "garbage", ""])
def test_an_older_newer_or_unknown_helm_is_refused_naming_it_and_the_binary(printed):
    [refusal] = releases.refusals(printed, "/opt/helm", [], [], False)
    assert refusal == (f"helm {printed or '(no version)'} (/opt/helm): modelplane.serving needs helm 3.17 or newer, "
                       "or helm 4; install one of those (or point helm_release_binary at it).")


def test_releases_and_crds_of_another_release_are_refused_unless_adopted():
    crd_line = ("CustomResourceDefinition bundles.trust.cert-manager.io belongs to Helm release tools/user-trust "
                "(ours is cert-manager/mp-trust-manager)")
    found = releases.refusals("v3.17.2", "helm", ["user-lws/my-lws", "x/y"], [crd_line], False)
    assert len(found) == 2
    assert found[0].startswith("existing Helm releases user-lws/my-lws, x/y install the same chart as this stack.")
    assert found[1].startswith(crd_line + ". Helm will not install our templates over them: set servingstack_adopt")
    assert releases.refusals("v3.17.2", "helm", ["user-lws/my-lws"], [crd_line], True) == []
    # Adopting never lets an unsupported helm through, and every refusal is said at once.
    assert len(releases.refusals("v3.12.3", "helm", ["a/b"], [crd_line], True)) == 1
    assert len(releases.refusals("v3.12.3", "helm", ["a/b"], [crd_line], False)) == 3
