# Copyright 2026 The modelplane.serving authors
# Apache License 2.0 (see LICENSE)
"""Filters the helm_release role uses to compare the cluster's Helm releases with its own."""

from __future__ import annotations

from typing import Any

import yaml
from ansible.errors import AnsibleFilterError
from ansible_collections.modelplane.serving.plugins.module_utils.servingstack import releases

# libyaml's loader where PyYAML has it: the CRDs of a teardown's charts are megabytes of YAML, which the pure-Python
# loader takes seconds to read (about 12x slower, measured on the upstream CRDs).
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def helm_release_records(secrets: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Helm release Secrets (as k8s_info returns them) -> one record per release, latest revision."""
    return releases.records(secrets)


def helm_release_changes(entries: list[dict[str, Any]], values: dict[str, Any],
                         records: list[dict[str, Any]]) -> dict[str, Any]:
    """``{todo, conflicts}``: our releases that need helm, and foreign releases of the same charts (``values``: the
    Helm values by chart name)."""
    return releases.changes(entries, values or {}, records or [])


def servingstack_chart_values(own: Any, extra: Any, releases_: list[dict[str, Any]],
                              source: str = "values") -> dict[str, Any]:
    """Helm values by chart name for a component's releases: the role's own (``own``, read from ``source``) with
    ``extra`` (the user's ``component_values``) merged over them recursively."""
    try:
        return releases.chart_values(own, extra, releases_ or [], source)
    except releases.ValuesError as error:
        raise AnsibleFilterError(str(error)) from None


def helm_release_crd_conflicts(entries: list[dict[str, Any]], crds: list[dict[str, Any]]) -> list[str]:
    """CRDs of these releases' charts that another Helm release owns (``crds``: the cluster's CRDs)."""
    return releases.crd_conflicts(entries or [], crds or [])


def helm_release_refusals(helm_version: str, binary: str, conflicts: list[str], crd_conflicts: list[str],
                          adopt: bool = False) -> list[str]:
    """Why these releases must not reach helm (an unsupported helm, what is not ours to take over), one line each."""
    return releases.refusals(helm_version, binary, conflicts or [], crd_conflicts or [], bool(adopt))


def helm_release_show_crds(records: list[dict[str, Any]], entries: list[dict[str, Any]],
                           binary: str = "helm") -> list[dict[str, Any]]:
    """``[{name, argv}]``: the ``helm show crds`` command for each of our installed releases."""
    return releases.show_crds_commands(records or [], entries or [], binary)


def helm_release_crd_refs(texts: list[str]) -> list[dict[str, Any]]:
    """CustomResourceDefinition references (apiVersion, kind, metadata.name) for the CRDs in helm outputs."""
    docs: list[Any] = []
    for text in texts or []:
        try:
            docs.extend(yaml.load_all(str(text or ""), Loader=_LOADER))
        except yaml.YAMLError as exc:
            raise AnsibleFilterError(f"helm_release_crd_refs: helm output is not YAML: {exc}") from None
    names = releases.crd_names(docs)
    return [{"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": {"name": name}}
            for name in names]


class FilterModule:
    """modelplane.serving Helm release filters."""

    def filters(self) -> dict[str, Any]:
        return {
            "helm_release_records": helm_release_records,
            "helm_release_changes": helm_release_changes,
            "helm_release_refusals": helm_release_refusals,
            "servingstack_chart_values": servingstack_chart_values,
            "helm_release_crd_conflicts": helm_release_crd_conflicts,
            "helm_release_show_crds": helm_release_show_crds,
            "helm_release_crd_refs": helm_release_crd_refs,
        }
