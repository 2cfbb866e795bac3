"""kubernetes.core.helm / helm_info run through ansible-playbook against the helm test double and the stand-in.

Proves the double satisfies the real module's calls: install, an unchanged re-run (the module's own
idempotence check reads `helm list` and `helm get values`), a version bump, uninstall, and the errors.
"""

from __future__ import annotations

import base64
import gzip
import json
from pathlib import Path

import pytest
import yaml
from conftest import UPSTREAM

pytestmark = [
    pytest.mark.playbook,
    pytest.mark.slow,
    pytest.mark.skipif(not UPSTREAM.is_dir(), reason=f"upstream reference data absent: {UPSTREAM}"),
]

NS = "hd-playbook"
RELEASE = "mp-cert-manager"

CYCLE = """
- name: Drive cert-manager through kubernetes.core.helm.
  hosts: localhost
  gather_facts: false
  tasks:
    - name: Apply the cert-manager release.
      kubernetes.core.helm:
        name: "{{ release }}"
        chart_ref: cert-manager
        chart_repo_url: https://charts.jetstack.io
        chart_version: "{{ chart_version }}"
        release_namespace: "{{ namespace }}"
        release_state: "{{ state }}"
        create_namespace: true
        wait: true
        atomic: true
        timeout: 5m0s
        release_values:
          crds:
            enabled: true
      register: applied

    - name: Read the release back.
      kubernetes.core.helm_info:
        name: "{{ release }}"
        release_namespace: "{{ namespace }}"
        release_state: [all]
      register: info

    - name: Save what the modules returned.
      ansible.builtin.copy:
        content: "{{ {'applied': applied, 'info': info} | to_json }}"
        dest: "{{ out }}"
        mode: "0600"
"""

ERRORS = """
- name: Feed kubernetes.core.helm inputs helm would reject.
  hosts: localhost
  gather_facts: false
  vars:
    nfd: oci://registry.k8s.io/nfd/charts/node-feature-discovery
  tasks:
    - name: Install NFD with a misspelt key.
      kubernetes.core.helm:
        name: hd-typo
        chart_ref: "{{ nfd }}"
        chart_version: 0.18.3
        release_namespace: hd-errors
        create_namespace: true
        release_values:
          worker:
            tolerationz: [{key: nvidia.com/gpu, operator: Exists}]
      register: unknown_key
      ignore_errors: true

    - name: Install cert-manager with a value its schema rejects.
      kubernetes.core.helm:
        name: hd-schema
        chart_ref: cert-manager
        chart_repo_url: https://charts.jetstack.io
        chart_version: v1.21.1
        release_namespace: hd-errors
        create_namespace: true
        release_values:
          crds:
            enabled: "yes"
      register: schema
      ignore_errors: true

    - name: Install a chart the repository does not have.
      kubernetes.core.helm:
        name: hd-nochart
        chart_ref: no-such-chart
        chart_repo_url: https://charts.jetstack.io
        chart_version: v1.0.0
        release_namespace: hd-errors
      register: no_chart
      ignore_errors: true

    - name: Install a version the registry does not have.
      kubernetes.core.helm:
        name: hd-noversion
        chart_ref: "{{ nfd }}"
        chart_version: 9.9.9
        release_namespace: hd-errors
      register: no_version
      ignore_errors: true

    - name: Install NFD properly, with the GPU toleration.
      kubernetes.core.helm:
        name: hd-nfd
        chart_ref: "{{ nfd }}"
        chart_version: 0.18.3
        release_namespace: hd-errors
        create_namespace: true
        release_values:
          worker:
            tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]
      register: good

    - name: Save what the modules returned.
      ansible.builtin.copy:
        content: "{{ {'unknown_key': unknown_key, 'schema': schema, 'no_chart': no_chart,
                      'no_version': no_version, 'good': good} | to_json }}"
        dest: "{{ out }}"
        mode: "0600"
"""


def _secrets(cluster) -> dict[str, dict]:
    from kubernetes import client as k8s

    api = k8s.CoreV1Api(cluster.client())
    items = api.list_namespaced_secret(NS, label_selector=f"owner=helm,name={RELEASE}").items
    return {s.metadata.name: s for s in items}


def _crds(cluster) -> set[str]:
    from kubernetes import client as k8s

    return {c.metadata.name for c in k8s.ApiextensionsV1Api(cluster.client()).list_custom_resource_definition().items}


def _helm_calls(log: Path) -> list[list[str]]:
    calls = [json.loads(line)["argv"] for line in log.read_text().splitlines()] if log.exists() else []
    log.unlink(missing_ok=True)
    return calls


def test_install_rerun_upgrade_uninstall_cycle(cluster, run_playbook, tmp_path):
    playbook = tmp_path / "cycle.yml"
    playbook.write_text(CYCLE)
    log = tmp_path / "helm.jsonl"

    def run(step: str, version: str, state: str = "present") -> dict:
        out = tmp_path / f"{step}.json"
        result = run_playbook(
            playbook,
            extra_vars={"release": RELEASE, "namespace": NS, "chart_version": version, "state": state, "out": str(out)},
            env={"HELM_DOUBLE_LOG": str(log)},
        )
        assert result.rc == 0, result.stdout[-6000:] + result.stderr[-3000:]
        return json.loads(out.read_text())

    first = run("install", "v1.21.0")
    assert first["applied"]["changed"] is True
    assert first["applied"]["status"]["chart"] == "cert-manager-v1.21.0"
    assert first["applied"]["status"]["revision"] == "1"
    assert first["applied"]["status"]["values"] == {"crds": {"enabled": True}}
    assert first["info"]["status"]["status"] == "deployed"
    assert first["info"]["status"]["app_version"] == "v1.21.0"
    assert any(
        doc and doc["metadata"]["name"] == "certificates.cert-manager.io" for doc in first["info"]["status"]["manifest"]
    )
    assert {"certificates.cert-manager.io", "issuers.cert-manager.io", "clusterissuers.cert-manager.io"} <= _crds(
        cluster
    )
    calls = _helm_calls(log)
    upgrades = [c for c in calls if "upgrade" in c]
    assert len(upgrades) == 1 and "--create-namespace" in upgrades[0] and "--atomic" in upgrades[0]

    again = run("rerun", "v1.21.0")
    assert again["applied"]["changed"] is False
    assert not [c for c in _helm_calls(log) if "upgrade" in c]  # the module decided nothing changed

    bumped = run("upgrade", "v1.21.1")
    assert bumped["applied"]["changed"] is True
    assert bumped["applied"]["status"]["revision"] == "2"
    assert bumped["applied"]["status"]["chart"] == "cert-manager-v1.21.1"
    secrets = _secrets(cluster)
    assert {name: s.metadata.labels["status"] for name, s in secrets.items()} == {
        f"sh.helm.release.v1.{RELEASE}.v1": "superseded",
        f"sh.helm.release.v1.{RELEASE}.v2": "deployed",
    }
    body = json.loads(
        gzip.decompress(base64.b64decode(base64.b64decode(secrets[f"sh.helm.release.v1.{RELEASE}.v2"].data["release"])))
    )
    assert body["chart"]["metadata"]["version"] == "v1.21.1" and body["info"]["status"] == "deployed"

    gone = run("uninstall", "v1.21.1", state="absent")
    assert gone["applied"]["changed"] is True
    assert gone["info"].get("status") is None
    assert _secrets(cluster) == {}
    assert "certificates.cert-manager.io" in _crds(cluster)  # crds.keep (default true) keeps them
    assert any("uninstall" in c for c in _helm_calls(log))

    still_gone = run("uninstall-again", "v1.21.1", state="absent")
    assert still_gone["applied"]["changed"] is False


def test_errors_are_reported_like_helm(cluster, run_playbook, tmp_path):
    playbook = tmp_path / "errors.yml"
    playbook.write_text(ERRORS)
    out = tmp_path / "errors.json"
    result = run_playbook(playbook, extra_vars={"out": str(out)})
    assert result.rc == 0, result.stdout[-6000:] + result.stderr[-3000:]
    got = json.loads(out.read_text())

    assert got["unknown_key"]["failed"] is True
    assert "- worker.tolerationz: unknown key" in got["unknown_key"]["stderr"]
    assert got["schema"]["failed"] is True
    assert "values don't meet the specifications of the schema(s)" in got["schema"]["stderr"]
    assert "crds.enabled" in got["schema"]["stderr"]
    assert got["no_chart"]["failed"] is True
    assert (
        'Error: chart "no-such-chart" version "v1.0.0" not found in https://charts.jetstack.io repository'
        in got["no_chart"]["stderr"]
    )
    assert got["no_version"]["failed"] is True
    assert 'Error: failed to perform "FetchReference" on source: ' in got["no_version"]["stderr"]
    assert got["good"]["changed"] is True and got["good"]["status"]["status"] == "deployed"
    assert {"nodefeatures.nfd.k8s-sigs.io", "nodefeaturerules.nfd.k8s-sigs.io"} <= _crds(cluster)
    assert yaml.safe_load(yaml.safe_dump(got["good"]["status"]["values"])) == {
        "worker": {"tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]}
    }
