# Copyright 2026 The modelplane.serving authors
# Apache License 2.0 (see LICENSE)
"""The preflight: what the target cluster must offer before the first component installs.

A converge reads the cluster's ``/version``, its API groups (``/apis``) and one page of its Nodes, and
``check`` turns them, with the install plan, into problems (the converge refuses) and warnings:

* the cluster's Kubernetes is older than the oldest the pinned charts support: the newest of the lower bounds
  of their ``kubeVersion`` constraints (``CHART_KUBE_VERSIONS``);
* a planned component needs an API group the cluster does not serve (``API_NEEDS``: the NVIDIA DRA driver
  needs ``resource.k8s.io``, Dynamic Resource Allocation);
* (a warning) a planned component needs a gateway address (``Component.ingress``: the Gateway's LoadBalancer
  Service) and no Node shows a cloud provider: none has ``spec.providerID`` nor an ``ExternalIP`` address. A
  cluster without either often has no load-balancer controller either, and the Gateway would get no address
  (the ServingStack stays not Ready). The heuristic is cheap and can be wrong both ways (MetalLB on bare metal;
  kind sets a provider ID without a load balancer), so it only warns.

Pure functions of plain data; the ``servingstack_preflight`` lookup does the reads.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ansible_collections.modelplane.serving.plugins.module_utils.servingstack import versions
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

LOAD_BALANCER_FIX = (
    "install one (a cloud controller manager, MetalLB, cloud-provider-kind) unless the cluster has one the nodes "
    "do not show")


@dataclass(frozen=True)
class Floor:
    """The lowest Kubernetes one planned chart supports."""

    chart: str
    pin: str  # the version the plan installs
    read: str  # the version whose kubeVersion this is
    constraint: str
    minimum: versions.Version

    def describe(self) -> str:
        """``dra-driver-nvidia-gpu 0.4.0: >=1.32.0-0`` (``... as of 0.4.0`` for a later pin)."""
        since = "" if _same(self.pin, self.read) else f" as of {self.read}"
        return f"{self.chart} {self.pin}: {self.constraint}{since}"


@dataclass(frozen=True)
class Findings:
    kubernetes: str  # the cluster's gitVersion, "" when unknown
    problems: tuple[str, ...]
    warnings: tuple[str, ...]


def _same(left: str, right: str) -> bool:
    return versions.parse(left) == versions.parse(right)


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


def _core(version: versions.Version) -> tuple[int, int, int]:
    return (version.major, version.minor, version.patch)


def display(version: versions.Version) -> str:
    """``v1.32.0`` for 1.32.0-0: the release a ``-0`` bound (every pre-release and vendor build of it) starts at."""
    return f"v{version.major}.{version.minor}.{version.patch}"


def floors(plan: Iterable[dict[str, Any]]) -> list[Floor]:
    """The Kubernetes floors of the planned charts, in plan order (charts without a known constraint left out)."""
    found = []
    for component in plan:
        for release in component.get("releases") or []:
            read, constraint = CHART_KUBE_VERSIONS.get(release.get("chart"), ("", None))
            pin = str(release.get("version") or "")
            pinned, known = versions.parse(pin), versions.parse(read)
            if constraint is None or pinned is None or known is None:
                continue
            if pinned.release_key() < known.release_key():
                continue
            found.append(Floor(release["chart"], pin, read, constraint, lower_bound(constraint)))
    return found


def oldest_supported(found: list[Floor]) -> tuple[versions.Version, list[Floor]] | None:
    """The oldest Kubernetes every floor allows, and the charts that set it; None without floors."""
    if not found:
        return None
    highest = max(found, key=lambda floor: floor.minimum.release_key()).minimum
    return highest, [floor for floor in found if floor.minimum.release_key() == highest.release_key()]


def cluster_version(version_info: dict[str, Any]) -> versions.Version | None:
    """The Kubernetes release ``/version`` reports (``gitVersion``: v1.36.3, v1.32.1-gke.1200, v1.31.4+k3s1)."""
    return versions.parse(str((version_info or {}).get("gitVersion") or ""))


def version_problem(version_info: dict[str, Any], found: list[Floor]) -> str | None:
    """Why the cluster is too old for the planned charts, or None.

    A vendor's suffix (``-gke.1200``, ``-eks-...``) is not a pre-release of the release it builds: the cluster
    compares as its release (every ``-0`` bound admits those builds anyway).
    """
    oldest = oldest_supported(found)
    version = cluster_version(version_info)
    if oldest is None or version is None:
        return None
    minimum, charts = oldest
    if _core(version) >= _core(minimum):
        return None
    git_version = str(version_info.get("gitVersion"))
    return (f"cluster kubernetes {git_version} is older than {display(minimum)}, the oldest the pinned charts "
            f"support ({', '.join(floor.describe() for floor in charts)}): upgrade the cluster to {display(minimum)} "
            "or later")


def served_groups(api_group_list: dict[str, Any]) -> dict[str, list[str]]:
    """group -> its served versions, from ``/apis`` (an APIGroupList)."""
    served: dict[str, list[str]] = {}
    for group in (api_group_list or {}).get("groups") or []:
        if isinstance(group, dict) and group.get("name"):
            served[group["name"]] = [str(entry.get("version")) for entry in group.get("versions") or []
                                     if isinstance(entry, dict) and entry.get("version")]
    return served


def _chart_of(component: dict[str, Any]) -> str:
    releases = component.get("releases") or []
    return f" ({releases[0].get('chart')} {releases[0].get('version')})" if releases else ""


def api_problems(plan: Iterable[dict[str, Any]], served: dict[str, list[str]]) -> list[str]:
    """One problem per planned component that needs an API group the cluster does not serve."""
    problems = []
    for component in plan:
        need = API_NEEDS.get(component.get("name"))
        if need is None or set(served.get(need.group, ())) & set(need.versions):
            continue
        have = served.get(need.group)
        serves = f"serves {need.group} only as {', '.join(have)}" if have else f"serves no {need.group} API"
        title = component.get("title") or component.get("name")
        wanted = " or ".join([", ".join(need.versions[:-1]), need.versions[-1]] if len(need.versions) > 1
                             else need.versions)
        problems.append(f"cluster {serves} ({need.what}), which the {title}{_chart_of(component)} needs "
                        f"({need.group}/{wanted}): {need.fix}")
    return problems


def needs_gateway_address(plan: Iterable[dict[str, Any]]) -> bool:
    """Whether a planned component puts the stack's entry point behind a LoadBalancer Service (the components
    table's ``ingress``: the inference Gateway)."""
    return any(BY_NAME[component["name"]].ingress for component in plan if component.get("name") in BY_NAME)


def shows_cloud_provider(node: dict[str, Any]) -> bool:
    """Whether a Node shows a cloud provider: ``spec.providerID`` set, or an ``ExternalIP`` address."""
    if (node.get("spec") or {}).get("providerID"):
        return True
    return any(isinstance(address, dict) and address.get("type") == "ExternalIP" and address.get("address")
               for address in (node.get("status") or {}).get("addresses") or [])


def load_balancer_warning(plan: list[dict[str, Any]], nodes: list[dict[str, Any]] | None) -> str | None:
    """Why the gateway may get no address (a warning), or None. ``nodes`` None: they could not be read."""
    if not needs_gateway_address(plan) or nodes is None:
        return None
    if any(shows_cloud_provider(node) for node in nodes):
        return None
    return ("the cluster may have no load-balancer controller: no node has a cloud provider ID (spec.providerID) or "
            "an ExternalIP address, so the inference Gateway's LoadBalancer Service may get no address and the "
            f"ServingStack would stay not Ready (GatewayAddressPending): {LOAD_BALANCER_FIX}")


def check(plan: list[dict[str, Any]], version_info: dict[str, Any], api_group_list: dict[str, Any],
          nodes: list[dict[str, Any]] | None) -> Findings:
    """What the preflight finds: the problems that refuse the converge, and the warnings."""
    problems = [problem for problem in [version_problem(version_info, floors(plan))] if problem]
    problems += api_problems(plan, served_groups(api_group_list))
    warnings = [warning for warning in [load_balancer_warning(plan, nodes)] if warning]
    if cluster_version(version_info) is None:
        warnings.append(f"cannot read the cluster's Kubernetes version from /version (gitVersion "
                        f"{(version_info or {}).get('gitVersion')!r}): the version check is skipped")
    return Findings(str((version_info or {}).get("gitVersion") or ""), tuple(problems), tuple(warnings))
