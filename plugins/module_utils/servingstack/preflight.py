# Copyright 2026 The modelplane.serving authors
# Apache License 2.0 (see LICENSE)
"""The preflight: ``check`` turns what the ``servingstack_preflight`` lookup read of the target cluster, with the
install plan, into the problems and warnings its DOCUMENTATION lists."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ansible_collections.modelplane.serving.plugins.module_utils.servingstack import ownership, versions
from ansible_collections.modelplane.serving.plugins.module_utils.servingstack.components import BY_NAME, COMPONENTS

# Every chart's ``kubeVersion`` and the release it was read from, by chart name (the components table's
# ``Chart.kube_version``). A later pin is held to the same lower bound (charts raise theirs, they do not lower them);
# an earlier one to none here, helm still checks its own constraint when it installs.
CHART_KUBE_VERSIONS: dict[str, tuple[str, str | None]] = {
    chart.name: chart.kube_version for component in COMPONENTS for chart in component.charts if chart.kube_version
}


@dataclass(frozen=True)
class ApiNeed:
    """An API group a component cannot work without, and what to do when the cluster does not serve it."""

    group: str
    versions: tuple[str, ...]  # any one of them will do
    what: str
    fix: str


# Components that need an API group every cluster does not serve.
API_NEEDS: dict[str, ApiNeed] = {
    # The chart renders its DeviceClass for the newest of these the cluster serves (values.yaml resourceApiVersion),
    # and the driver publishes ResourceSlices through it.
    "nvidia_dra": ApiNeed(
        group="resource.k8s.io",
        versions=("v1", "v1beta2", "v1beta1"),
        what="Dynamic Resource Allocation",
        fix=("serve resource.k8s.io/v1 (on by default from Kubernetes 1.34; on 1.32 and 1.33 enable the "
             "DynamicResourceAllocation feature gate and resource.k8s.io/v1beta1 or v1beta2 through kube-apiserver "
             "--runtime-config)"),
    ),
}

_LOWER_BOUND = re.compile(r"^\s*>=\s*(\S+)\s*$")


def lower_bound(constraint: str) -> versions.Version:
    """The version a ``kubeVersion`` constraint starts at: ``>=1.32.0-0`` gives 1.32.0-0.

    Only a single ``>=`` clause is understood (every pinned chart's constraint is one); anything else raises
    ValueError, so a table entry this cannot read fails the unit tests, not a converge.
    """
    match = _LOWER_BOUND.match(constraint)
    version = versions.parse(match.group(1)) if match else None
    if version is None:
        raise ValueError(f"kubeVersion {constraint!r} is not a single '>=' lower bound")
    return version


def floors(plan: Iterable[dict[str, Any]]) -> list[tuple[versions.Version, str]]:
    """The Kubernetes floors of the planned charts in plan order, each with how a message names it
    (``dra-driver-nvidia-gpu 0.4.0: >=1.32.0-0``, ``... as of 0.4.0`` for a later pin); charts without a known
    constraint are left out."""
    found = []
    for release in (release for component in plan for release in component.get("releases") or []):
        read, constraint = CHART_KUBE_VERSIONS.get(release.get("chart"), ("", None))
        pin = str(release.get("version") or "")
        pinned, known = versions.parse(pin), versions.parse(read)
        if constraint is None or pinned is None or known is None or pinned.release_key() < known.release_key():
            continue
        since = "" if pinned == known else f" as of {read}"
        found.append((lower_bound(constraint), f"{release['chart']} {pin}: {constraint}{since}"))
    return found


def version_problem(git_version: str, found: list[tuple[versions.Version, str]]) -> str | None:
    """Why a cluster at ``git_version`` (``/version``'s: v1.36.3, v1.32.1-gke.1200, v1.31.4+k3s1) is too old for
    the ``found`` floors, or None.

    A vendor's suffix (``-gke.1200``, ``-eks-...``) is not a pre-release of the release it builds: the cluster
    compares as its release, and the floor reads as the release a ``-0`` bound starts at (it admits every
    pre-release and vendor build of it).
    """
    version = versions.parse(git_version)
    if not found or version is None:
        return None
    minimum = max((bound for bound, _text in found), key=versions.Version.release_key)
    if (version.major, version.minor, version.patch) >= (minimum.major, minimum.minor, minimum.patch):
        return None
    floor = f"v{minimum.major}.{minimum.minor}.{minimum.patch}"
    charts = ", ".join(text for bound, text in found if bound.release_key() == minimum.release_key())
    return (f"cluster kubernetes {git_version} is older than {floor}, the oldest the pinned charts support "
            f"({charts}): upgrade the cluster to {floor} or later")


def api_problems(plan: Iterable[dict[str, Any]], api_group_list: dict[str, Any]) -> list[str]:
    """One problem per planned component that needs an API group the cluster does not serve (``api_group_list``:
    ``/apis``)."""
    served = {group["name"]: [entry["version"] for entry in group.get("versions") or []]
              for group in api_group_list.get("groups") or []}
    problems = []
    for component in plan:
        need = API_NEEDS.get(component.get("name"))
        if need is None or set(served.get(need.group, ())) & set(need.versions):
            continue
        have = served.get(need.group)
        serves = f"serves {need.group} only as {', '.join(have)}" if have else f"serves no {need.group} API"
        releases = component.get("releases") or []
        chart = f" ({releases[0]['chart']} {releases[0]['version']})" if releases else ""
        wanted = " or ".join(filter(None, [", ".join(need.versions[:-1]), need.versions[-1]]))
        problems.append(f"cluster {serves} ({need.what}), which the {component.get('title') or component['name']}"
                        f"{chart} needs ({need.group}/{wanted}): {need.fix}")
    return problems


def load_balancer_warning(plan: Iterable[dict[str, Any]], nodes: list[dict[str, Any]]) -> str | None:
    """Why the gateway may get no address, or None: only a warning, as no provider ID nor ExternalIP on the Nodes
    often means no load-balancer controller, but not always (MetalLB on bare metal; kind sets a provider ID without
    a load balancer)."""
    if not any(BY_NAME[component["name"]].ingress for component in plan if component.get("name") in BY_NAME):
        return None
    if any((node.get("spec") or {}).get("providerID")
           or any(address.get("type") == "ExternalIP" and address.get("address")
                  for address in (node.get("status") or {}).get("addresses") or [])
           for node in nodes):
        return None
    return ("the cluster may have no load-balancer controller: no node has a cloud provider ID (spec.providerID) or "
            "an ExternalIP address, so the inference Gateway's LoadBalancer Service may get no address and the "
            "ServingStack would stay not Ready (GatewayAddressPending): install one (a cloud controller manager, "
            "MetalLB, cloud-provider-kind) unless the cluster has one the nodes do not show")


def check(plan: list[dict[str, Any]], version_info: dict[str, Any] | None = None,
          api_group_list: dict[str, Any] | None = None, nodes: list[dict[str, Any]] | None = None,
          secrets: list[dict[str, Any]] | None = None, crds: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """What the preflight finds in what the lookup read (None: not read, that check is skipped): the cluster's
    ``kubernetes`` version ("" when not read), the ``problems`` that refuse the converge, and the ``warnings``."""
    git_version = str((version_info or {}).get("gitVersion") or "")
    problems: list[str] = []
    warnings: list[str] = []
    if version_info is not None:
        problems += filter(None, [version_problem(git_version, floors(plan))])
        if versions.parse(git_version) is None:
            warnings.append(f"cannot read the cluster's Kubernetes version from /version (gitVersion "
                            f"{version_info.get('gitVersion')!r}): the version check is skipped")
    if api_group_list is not None:
        problems += api_problems(plan, api_group_list)
    if secrets is not None and crds is not None:
        releases = [release for component in plan for release in component.get("releases") or []]
        problems += [f"{problem}: remove it, or set servingstack_adopt to take it over" for problem in
                     ownership.foreign_releases(releases, secrets) + ownership.crd_conflicts(releases, crds)]
    if nodes is not None:
        warnings += filter(None, [load_balancer_warning(plan, nodes)])
    return {"kubernetes": git_version, "problems": problems, "warnings": warnings}
