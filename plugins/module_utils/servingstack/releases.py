# Copyright 2026 The modelplane.serving authors
# Apache License 2.0 (see LICENSE)
"""What the cluster's Helm releases are, read from helm 3's own records, and which of ours differ.

Helm 3 keeps each release revision in a Secret ``sh.helm.release.v1.<name>.v<revision>`` (type
``helm.sh/release.v1``, label ``owner=helm``) whose ``data.release`` is base64(base64(gzip(JSON))).
Reading them with one list call lets the ``helm_release`` role skip ``helm`` entirely for releases
that already run the wanted chart version with the wanted values: the same comparison
``kubernetes.core.helm`` makes (``helm list`` chart + ``helm get values``), without a helm process
per release.
"""

from __future__ import annotations

import base64
import binascii
import gzip
import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

from ansible_collections.modelplane.serving.plugins.module_utils.servingstack.components import (
    COMPONENTS,
    RELEASE_PREFIX,
)


def decode_release(data: str) -> dict[str, Any]:
    """The release JSON from a Secret's ``data.release`` (as the API returns it: base64 of base64)."""
    raw = base64.b64decode(base64.b64decode(data))
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    return json.loads(raw)


def _normal(values: Any) -> Any:
    """Values as helm stores them: JSON types, no None for 'no values'."""
    return json.loads(json.dumps(values or {}, sort_keys=True, default=str))


_CRD_KIND = re.compile(r"^kind:\s*['\"]?CustomResourceDefinition['\"]?\s*$", re.MULTILINE)
_TOP_NAME = re.compile(r"^metadata:\s*\n(?:[ \t]+.*\n|\s*\n)*?[ \t]{2}name:\s*['\"]?([^\s'\"#]+)", re.MULTILINE)
_KEEP = re.compile(r"helm\.sh/resource-policy['\"]?\s*:\s*['\"]?keep\b")


def unkept_crds(manifest: str) -> list[str]:
    """Names of the CRDs a release manifest templates without ``helm.sh/resource-policy: keep``.

    An upgrade to a chart version that no longer renders one of them (lws v0.7.0 -> v0.8.0 moved its CRD from
    templates/ to crds/) makes helm delete it, and with it every object of its kind, unless the live CRD carries
    that annotation. A text scan, not a YAML parse: manifests of CRD-heavy charts are megabytes, read every run.
    """
    names: list[str] = []
    for document in re.split(r"^---\s*$", manifest or "", flags=re.MULTILINE):
        if _CRD_KIND.search(document) and not _KEEP.search(document):
            found = _TOP_NAME.search(document + "\n")
            if found:
                names.append(found.group(1))
    return sorted(set(names))


def records(secrets: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One record per release (its latest revision): name, uid (of its record Secret), namespace, revision, status,
    chart, version, config, unkept_crds.

    Secrets that are not helm release records, or do not decode, are skipped.
    """
    latest: dict[tuple[str, str], dict[str, Any]] = {}
    for secret in secrets or []:
        if secret.get("type", "helm.sh/release.v1") != "helm.sh/release.v1":
            continue
        data = (secret.get("data") or {}).get("release")
        if not data:
            continue
        try:
            release = decode_release(data)
        except (binascii.Error, OSError, ValueError, EOFError):
            continue
        metadata = (release.get("chart") or {}).get("metadata") or {}
        ours = str(release.get("name", "")).startswith(RELEASE_PREFIX)
        record = {
            "name": release.get("name"),
            # Which record Secret: a release installed again has a new one at the same revision.
            "uid": (secret.get("metadata") or {}).get("uid", ""),
            "namespace": release.get("namespace") or (secret.get("metadata") or {}).get("namespace"),
            "revision": int(release.get("version") or 0),
            "status": (release.get("info") or {}).get("status", ""),
            "chart": metadata.get("name", ""),
            "version": metadata.get("version", ""),
            # Only our own releases' values are kept (to compare with what we want); a user's
            # release may carry credentials in its values and we never need them.
            "config": _normal(release.get("config")) if ours else {},
            "unkept_crds": unkept_crds(release.get("manifest", "")) if ours else [],
        }
        key = (record["namespace"], record["name"])
        if key not in latest or latest[key]["revision"] < record["revision"]:
            latest[key] = record
    return sorted(latest.values(), key=lambda record: (record["namespace"], record["name"]))


def _same_version(have: str, want: str) -> bool:
    return have == want or have.lstrip("v") == str(want).lstrip("v")


def changes(releases: list[dict[str, Any]], values: dict[str, Any], found: list[dict[str, Any]]) -> dict[str, Any]:
    """Which of ``releases`` (plan entries) need helm, and which foreign releases share their charts.

    ``values``: the Helm values of each release, by chart name (``chart_values``).
    Returns ``{"todo": [entry + values + installed], "conflicts": ["ns/name (chart c, ours is ns/name)"]}``.
    A release needs helm unless it is deployed, under our name and namespace, at the wanted chart
    version, with exactly the wanted values.
    """
    by_key = {(record["namespace"], record["name"]): record for record in found}
    todo: list[dict[str, Any]] = []
    conflicts: list[str] = []
    for release in releases:
        wanted = _normal(values.get(release["chart"]))
        current = by_key.get((release["namespace"], release["release"]))
        if not (current and current["status"] == "deployed" and current["chart"] == release["chart"]
                and _same_version(current["version"], release["version"]) and current["config"] == wanted):
            # An upgrade keeps the CRDs the installed revision templates (see unkept_crds).
            todo.append({**release, "values": wanted, "installed": bool(current),
                         "unkept_crds": current.get("unkept_crds", []) if current else []})
        for record in found:
            if record["chart"] == release["chart"] and record["name"] != release["release"] \
                    and not record["status"].startswith("uninstall"):
                conflicts.append(f"{record['namespace']}/{record['name']} (chart {record['chart']}, ours is "
                                 f"{release['namespace']}/{release['release']})")
    return {"todo": todo, "conflicts": conflicts}


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
        groups = set(release.get("crd_groups") or [])
        for crd in crds or []:
            annotations = (crd.get("metadata") or {}).get("annotations") or {}
            owner = annotations.get(RELEASE_NAME)
            owner_namespace = annotations.get(RELEASE_NAMESPACE)
            group = (crd.get("spec") or {}).get("group")
            if group in groups and owner and (owner, owner_namespace) != (release["release"], release["namespace"]):
                lines.append(f"CustomResourceDefinition {crd['metadata']['name']} belongs to Helm release "
                             f"{owner_namespace or '?'}/{owner} (ours is {release['namespace']}/{release['release']})")
    return lines


# kubernetes.core.helm 6.6 drives helm 3 and helm 4; take_ownership (adopting) needs helm 3.17.
HELM_SUPPORTED = ((3, 17, 0), (5, 0, 0))


def helm_semver(version: str) -> tuple[int, int, int] | None:
    """(major, minor, patch) of what ``helm version --short`` prints (``v3.17.2+gcc0ef0b``), None when it is not one."""
    found = re.match(r"^v?(\d+)\.(\d+)\.(\d+)", str(version or "").strip())
    return (int(found.group(1)), int(found.group(2)), int(found.group(3))) if found else None


def refusals(helm_version: str, binary: str, conflicts: list[str], crd_conflicts_: list[str],
             adopt: bool) -> list[str]:
    """Why these releases must not reach helm, one sentence each; none when they may.

    A helm this collection does not work with (older than 3.17, not helm 3 or 4, or not saying its version);
    unless adopting, another release of one of their charts (``conflicts``: its namespace/name) or CRDs of their
    charts that another release owns (``crd_conflicts_``: crd_conflicts's lines).
    """
    found: list[str] = []
    semver = helm_semver(helm_version)
    if semver is None or not HELM_SUPPORTED[0] <= semver < HELM_SUPPORTED[1]:
        found.append(f"helm {str(helm_version or '').strip() or '(no version)'} ({binary}): modelplane.serving needs "
                     "helm 3.17 or newer, or helm 4; install one of those (or point helm_release_binary at it).")
    if conflicts and not adopt:
        found.append(f"existing Helm releases {', '.join(conflicts)} install the same chart as this stack. Remove "
                     "them, or set servingstack_adopt (helm_release_adopt) to true to install ours next to them and "
                     "take ownership of their objects.")
    if crd_conflicts_ and not adopt:
        found.append(f"{'; '.join(crd_conflicts_)}. Helm will not install our templates over them: set "
                     "servingstack_adopt (helm_release_adopt) to true to take them over, or remove the other "
                     "release's meta.helm.sh ownership annotations from them (do not delete them: that deletes every "
                     "object of their kinds).")
    return found


def source_flags(source: dict[str, Any]) -> list[str]:
    """helm CLI flags for a chart mirror's TLS settings (a release's ``chart_source``; credentials go by login)."""
    flags = [f"--ca-file={source['ca_file']}"] if source.get("ca_file") else []
    flags += ["--insecure-skip-tls-verify"] if source.get("insecure_skip_tls_verify") else []
    return flags + (["--plain-http"] if source.get("plain_http") else [])


def show_crds_commands(found: list[dict[str, Any]], releases: list[dict[str, Any]],
                       binary: str = "helm") -> list[dict[str, Any]]:
    """``{name, argv}`` of ``helm show crds`` for each installed release in ``found`` that is one of ``releases``.

    Helm installs a chart's ``crds/`` folder on first install and never deletes it (not on uninstall
    either), and those CRDs are not in the release manifest: the chart is the only record of them.
    The chart version is the installed one (the version that brought the CRDs), not the wanted one.
    Releases of other names (a user's own) are never looked at.
    """
    by_name = {(release["namespace"], release["release"]): release for release in releases}
    commands: list[dict[str, Any]] = []
    for record in found:
        release = by_name.get((record.get("namespace"), record.get("name")))
        if release is None:
            continue
        installed = str(record.get("version") or "")
        # The plan's spelling when it is the installed version ("v0.8.0" vs helm's "0.8.0"), else the installed one.
        version = release["version"] if not installed or _same_version(installed, release["version"]) else installed
        argv = [binary, "show", "crds", release["chart_ref"], "--version", str(version)]
        if release.get("chart_repo_url"):
            argv += ["--repo", release["chart_repo_url"]]
        argv += source_flags(release.get("chart_source") or {})
        commands.append({"name": record["name"], "argv": argv})
    return commands


def crd_names(docs: Iterable[Any]) -> list[str]:
    """The names of the CustomResourceDefinitions among parsed YAML documents (helm output), first seen first.

    Lists (``kind: ...List``) are looked into; anything else is ignored. The caller parses the YAML:
    module_utils stay standard library only.
    """
    names: list[str] = []
    for doc in docs:
        items = doc.get("items") if isinstance(doc, dict) and str(doc.get("kind", "")).endswith("List") else [doc]
        for item in items or []:
            if not isinstance(item, dict) or item.get("kind") != "CustomResourceDefinition":
                continue
            name = (item.get("metadata") or {}).get("name")
            if name and name not in names:
                names.append(name)
    return names
