"""releases.py: helm 3 release records read from their Secrets, and which of our releases need helm."""

from __future__ import annotations

import base64
import gzip
import json

from ansible_collections.modelplane.serving.plugins.module_utils.servingstack import releases


def record_secret(name, namespace, revision, status, chart, version, config=None, kind="helm.sh/release.v1"):
    release = {"name": name, "namespace": namespace, "version": revision, "info": {"status": status},
               "chart": {"metadata": {"name": chart, "version": version}}}
    if config is not None:
        release["config"] = config
    packed = base64.b64encode(gzip.compress(json.dumps(release).encode()))
    return {"type": kind, "metadata": {"namespace": namespace}, "data": {"release": base64.b64encode(packed).decode()}}


OURS = {"release": "mp-cert-manager", "chart": "cert-manager", "chart_ref": "cert-manager",
        "chart_repo_url": "https://charts.jetstack.io", "version": "v1.21.1", "namespace": "cert-manager"}
VALUES = {"mp-cert-manager": {"crds": {"enabled": True, "keep": True}}}


def test_records_keep_the_latest_revision_and_skip_other_secrets():
    found = releases.records([
        record_secret("mp-cert-manager", "cert-manager", 1, "superseded", "cert-manager", "v1.21.0"),
        record_secret("mp-cert-manager", "cert-manager", 2, "deployed", "cert-manager", "v1.21.1", {"a": 1}),
        record_secret("x", "y", 1, "deployed", "c", "1", kind="Opaque"),
        {"type": "helm.sh/release.v1", "metadata": {}, "data": {"release": "garbage"}},
    ])
    assert found == [{"name": "mp-cert-manager", "namespace": "cert-manager", "revision": 2, "status": "deployed",
                      "chart": "cert-manager", "version": "v1.21.1", "config": {"a": 1}}]


def test_a_deployed_release_with_the_same_version_and_values_needs_no_helm():
    found = releases.records([record_secret("mp-cert-manager", "cert-manager", 1, "deployed", "cert-manager",
                                            "v1.21.1", VALUES["mp-cert-manager"])])
    assert releases.changes([OURS], VALUES, found) == {"todo": [], "conflicts": []}


def test_version_values_status_or_absence_send_it_to_helm():
    def todo(**record):
        base = {"name": "mp-cert-manager", "namespace": "cert-manager", "revision": 1, "status": "deployed",
                "chart": "cert-manager", "version": "v1.21.1", "config": VALUES["mp-cert-manager"]}
        return releases.changes([OURS], VALUES, [{**base, **record}])["todo"]

    assert todo() == []
    assert todo(version="1.21.1") == []  # helm matches versions with or without the v
    assert todo(version="v1.21.0")[0]["installed"] is True
    assert todo(config={})[0]["values"] == VALUES["mp-cert-manager"]
    assert todo(status="failed")
    assert releases.changes([OURS], VALUES, [])["todo"][0]["installed"] is False


def test_a_foreign_release_of_the_same_chart_is_a_conflict():
    found = [{"name": "cm", "namespace": "tools", "revision": 3, "status": "deployed", "chart": "cert-manager",
              "version": "v1.17.1", "config": {}}]
    assert releases.changes([OURS], VALUES, found)["conflicts"] == [
        "tools/cm (chart cert-manager, ours is cert-manager/mp-cert-manager)"]


def test_chart_names_come_out_of_helm_list_strings():
    assert releases.chart_of("dra-driver-nvidia-gpu-0.4.0") == "dra-driver-nvidia-gpu"
    assert releases.chart_of("grove-charts-v0.1.0-alpha.12-rc2") == "grove-charts"
