# Copyright 2026 The modelplane.serving authors
# Apache License 2.0 (see LICENSE)
"""A component's Helm values by chart, and the Helm releases and CRDs that are not ours to take over.

kubernetes.core.helm decides whether a release of ours needs an upgrade. What it does not do is refuse to install
next to a user's own release of the same chart (two controllers would fight over one cluster), or over a CRD another
release's templates installed: ``foreign_releases`` and ``crd_conflicts`` say so, one line each, before any release
reaches helm.
"""

from __future__ import annotations

import base64
import binascii
import gzip
import json
from collections.abc import Mapping
from typing import Any

from ansible_collections.modelplane.serving.plugins.module_utils.servingstack.components import COMPONENTS


def release_chart(secret: dict[str, Any]) -> tuple[str, str, str] | None:
    """``(namespace, release, chart)`` of a Helm release Secret (type ``helm.sh/release.v1``, whose
    ``data.release`` is base64(base64(gzip(JSON)))), None when it does not decode."""
    try:
        raw = base64.b64decode(base64.b64decode((secret.get("data") or {}).get("release") or ""))
        release = json.loads(gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw)
    except (binascii.Error, OSError, ValueError, EOFError):
        return None
    if not isinstance(release, dict):
        return None
    chart = ((release.get("chart") or {}).get("metadata") or {}).get("name", "")
    namespace = release.get("namespace") or (secret.get("metadata") or {}).get("namespace", "")
    return namespace, str(release.get("name", "")), chart


def foreign_releases(releases: list[dict[str, Any]], secrets: list[dict[str, Any]]) -> list[str]:
    """Releases of the same charts as ``releases`` (plan entries) under another name, one line each."""
    found = {chart for chart in map(release_chart, secrets) if chart}
    return sorted(
        f"Helm release {namespace}/{name} installs the chart {chart} too (ours is "
        f"{release['namespace']}/{release['release']})"
        for release in releases for namespace, name, chart in found
        if chart == release["chart"] and (namespace, name) != (release["namespace"], release["release"]))


class ValuesError(ValueError):
    """Helm values keyed by something that is not a chart: the message names the key and the rule."""


def _mapping_of_charts(values: Any, what: str) -> Mapping[str, Any]:
    if values is None:
        return {}
    if not isinstance(values, Mapping):
        raise ValuesError(f"{what}: must be a mapping of chart name to Helm values")
    for chart, chart_values in values.items():
        if chart_values is not None and not isinstance(chart_values, Mapping):
            raise ValuesError(f"{what}.{chart}: must be a mapping of Helm values")
    return values


def merge(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    """``over`` merged into ``base`` recursively: mappings key by key, anything else (lists too) replaced,
    as ``ansible.builtin.combine(recursive=true)`` does."""
    merged = dict(base)
    for key, value in over.items():
        current = merged.get(key)
        merged[key] = merge(current, value) if isinstance(current, Mapping) and isinstance(value, Mapping) else value
    return merged


def chart_values(own: Any, extra: Any, releases: list[dict[str, Any]], source: str = "values") -> dict[str, Any]:
    """The Helm values of each of ``releases``' charts, by chart name: the component role's own (``own``, from
    ``source``) with the user's (``extra``, ``component_values``) merged over them.

    Keys are chart names, never release names. A role's value for a chart it does not install is a mistake of the
    role's; a user's value for a chart no component installs is refused, naming it, so a typo does not go unnoticed.
    """
    charts = [release["chart"] for release in releases]
    own = _mapping_of_charts(own, source)
    extra = _mapping_of_charts(extra, "component_values")
    for chart in own:
        if chart not in charts:
            raise ValuesError(f"{source}: {chart} is not a chart of this component (its charts: "
                              f"{', '.join(charts) or 'none'})")
    known = [chart.name for component in COMPONENTS for chart in component.charts]
    for chart in extra:
        if chart not in known:
            raise ValuesError(f"component_values.{chart}: no component installs a chart of that name (charts: "
                              f"{', '.join(known)})")
    return {chart: merge(own.get(chart) or {}, extra.get(chart) or {}) for chart in charts}


RELEASE_NAME = "meta.helm.sh/release-name"
RELEASE_NAMESPACE = "meta.helm.sh/release-namespace"


def crd_conflicts(releases: list[dict[str, Any]], crds: list[dict[str, Any]]) -> list[str]:
    """CRDs of ``releases``' charts (by ``crd_groups``) that another Helm release owns, one line each.

    Helm marks what a release's templates installed with the release-name and release-namespace
    annotations, and refuses to install a template over an object another release owns (unless
    told to take ownership). CRDs without the marks (a chart's crds/ folder, kubectl) are helm's
    to skip or report, so only marked ones are listed here.
    """
    lines: list[str] = []
    for release in releases:
        ours = (release["namespace"], release["release"])
        for crd in crds:
            annotations = crd["metadata"].get("annotations") or {}
            owner = (annotations.get(RELEASE_NAMESPACE), annotations.get(RELEASE_NAME))
            if owner[1] and owner != ours and crd["spec"]["group"] in (release.get("crd_groups") or []):
                lines.append(f"CustomResourceDefinition {crd['metadata']['name']} belongs to Helm release "
                             f"{owner[0] or '?'}/{owner[1]} (ours is {'/'.join(ours)})")
    return lines
