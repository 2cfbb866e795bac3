"""A resolved chart version: metadata, default values, checks and the objects it installs."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import yaml

from helmdouble import values as vals
from helmdouble.catalog import ChartEntry, CrdSet, Fullname, Version, Workload, upstream_dir

KEEP_ANNOTATION = "helm.sh/resource-policy"
TEMPLATE_SUFFIXES = (".yaml", ".yml")
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml: CRD files are large
_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def load_all(text: str) -> list[Any]:
    return list(yaml.load_all(text, Loader=_LOADER))


def dump(data: Any) -> str:
    return yaml.dump(data, Dumper=_DUMPER, sort_keys=False, default_flow_style=False)


def _load_yaml(path: Path) -> Any:
    with path.open() as handle:
        return yaml.load(handle, Loader=_LOADER)


def _get(tree: dict[str, Any], path: str) -> Any:
    node: Any = tree
    for step in path.split("."):
        if not isinstance(node, dict) or step not in node:
            return None
        node = node[step]
    return node


def _trunc(text: str, size: int) -> str:
    """Sprig's ``trunc N | trimSuffix "-"``."""
    return text[:size].removesuffix("-")


# Helm's InstallOrder puts DaemonSets before Deployments (uninstall deletes in the reverse order).
_KIND_ORDER = {"DaemonSet": 0, "Deployment": 1}


@dataclass(frozen=True)
class Chart:
    entry: ChartEntry
    version: Version

    @property
    def name(self) -> str:
        return self.entry.name

    @property
    def folder(self) -> Path:
        return self.entry.folder_for(self.version)

    @cached_property
    def metadata(self) -> dict[str, Any]:
        """Chart.yaml as published: the in-repo placeholders replaced by the released version."""
        meta = _load_yaml(self.folder / "Chart.yaml") or {}
        meta["version"] = self.version.version
        meta["appVersion"] = self.version.app_version
        return meta

    @cached_property
    def defaults(self) -> dict[str, Any]:
        """values.yaml, with the values of local subcharts placed under their names (as helm coalesces)."""
        values_file = self.folder / "values.yaml"
        own = (_load_yaml(values_file) or {}) if values_file.exists() else {}
        for name, folder in self.entry.subchart_values.items():
            sub_file = upstream_dir() / folder / "values.yaml"
            if sub_file.exists():
                sub = _load_yaml(sub_file) or {}
                own[name] = vals.merge(sub, own.get(name) or {})
        return own

    @cached_property
    def schema(self) -> dict[str, Any] | None:
        if not self.entry.schema:
            return None
        return json.loads((self.folder / "values.schema.json").read_text())

    @property
    def free_form(self) -> set[str]:
        """Keys accepted without checking: remote subcharts (defaults not collected) and the allowlist."""
        remote = {
            dep.get("alias") or dep["name"] for dep in self.metadata.get("dependencies") or [] if dep.get("repository")
        }
        return remote | {path for path, _cite in self.entry.allow}

    def check(self, user: dict[str, Any]) -> list[str]:
        if self.schema is not None:
            return vals.check_against_schema(vals.coalesce(self.defaults, user), self.schema)
        return vals.check_against_defaults(user, self.defaults, self.free_form)

    def render_failures(self, user: dict[str, Any], namespace: str) -> list[str]:
        """Template ``fail`` calls the double reproduces (documented in shared/upstream/README.md)."""
        if self.name != "dra-driver-nvidia-gpu":
            return []
        values = vals.coalesce(self.defaults, user)
        problems = []
        if _get(values, "resources.gpus.enabled") and not _get(values, "gpuResourcesEnabledOverride"):
            problems.append("resources.gpus.enabled: GPU resources need gpuResourcesEnabledOverride=true")
        if namespace == "default" and not _get(values, "allowDefaultNamespace"):
            problems.append("namespace: the chart refuses the default namespace (set allowDefaultNamespace)")
        return problems

    def _enabled(self, crds: CrdSet, values: dict[str, Any]) -> bool:
        if crds.condition is None:
            return True
        if self.name == "cert-manager" and _get(values, "installCRDs") is True:
            return True  # deprecated alias of crds.enabled
        return bool(_get(values, crds.condition))

    def crd_objects(self, user: dict[str, Any], style: str) -> list[tuple[str, dict[str, Any]]]:
        """(source path, object) for every CRD of ``style`` the chart installs with these values."""
        values = vals.coalesce(self.defaults, user)
        out: list[tuple[str, dict[str, Any]]] = []
        for crds in self.entry.crds:
            if crds.style != style or not self._enabled(crds, values):
                continue
            keep = bool(_get(values, crds.keep)) if crds.keep else False
            for file in crds.files:
                path = upstream_dir() / file
                with path.open() as handle:
                    docs = list(yaml.load_all(handle, Loader=_LOADER))
                for doc in docs:
                    if not isinstance(doc, dict):
                        continue
                    if keep:
                        annotations = doc.setdefault("metadata", {}).setdefault("annotations", {}) or {}
                        annotations[KEEP_ANNOTATION] = "keep"
                        doc["metadata"]["annotations"] = annotations
                    folder = "crds" if style == "crds-dir" else "templates/crds"
                    out.append((f"{self.name}/{folder}/{Path(file).name}", doc))
        return out

    def _name(self, rule: Fullname, values: dict[str, Any]) -> str:
        """``<chart>.name``: ``nameOverride`` or the chart name."""
        override = _get(values, rule.name_override) if rule.name_override else None
        return _trunc(str(override or rule.chart or self.name), 63)

    def _fullname(self, rule: Fullname, values: dict[str, Any], release: str) -> str:
        """``<chart>.fullname``: ``fullnameOverride``; else the release name if it contains the name, else both."""
        override = _get(values, rule.override) if rule.override else None
        if override:
            return _trunc(str(override), rule.trunc)
        name = self._name(rule, values)
        return _trunc(release if name in release else f"{release}-{name}", rule.trunc)

    def _workload(self, work: Workload, values: dict[str, Any], release: str, namespace: str) -> dict[str, Any]:
        names = {"fullname": self._fullname(work.fullname, values, release), "name": self._name(work.fullname, values)}
        override = _get(values, work.override) if work.override else None
        name = _trunc(str(override), 63) if override else _trunc(work.name.format(**names), 63)
        app_version = str(self.metadata.get("appVersion") or "")
        selector = {
            "app.kubernetes.io/name": work.app.format(**names),
            "app.kubernetes.io/instance": release,
            "app.kubernetes.io/component": work.component,
        }
        labels = {
            **selector,
            "app.kubernetes.io/version": app_version,
            "app.kubernetes.io/managed-by": "Helm",
            "helm.sh/chart": f"{self.name}-{self.version.version}".replace("+", "_")[:63].removesuffix("-"),
        }
        container = {"name": work.component, "image": work.image.format(app_version=app_version)}
        spec: dict[str, Any] = {"replicas": 1} if work.kind == "Deployment" else {}
        spec["selector"] = {"matchLabels": dict(selector)}
        strategy = _get(values, work.strategy) if work.strategy else None
        if isinstance(strategy, dict) and strategy:
            spec["strategy" if work.kind == "Deployment" else "updateStrategy"] = json.loads(json.dumps(strategy))
        spec["template"] = {"metadata": {"labels": dict(selector)}, "spec": {"containers": [container]}}
        return {
            "apiVersion": "apps/v1",
            "kind": work.kind,
            "metadata": {"name": name, "namespace": namespace, "labels": labels},
            "spec": spec,
        }

    def workload_objects(self, user: dict[str, Any], release: str, namespace: str) -> list[tuple[str, dict[str, Any]]]:
        """(source path, object) for every controller the chart renders with these values (``ChartEntry.workloads``)."""
        values = vals.coalesce(self.defaults, user)
        enabled = [w for w in self.entry.workloads if not w.when or any(_get(values, path) for path in w.when)]
        enabled.sort(key=lambda w: _KIND_ORDER.get(w.kind, len(_KIND_ORDER)))  # stable: catalogue order within a kind
        return [(f"{self.name}/{w.template}", self._workload(w, values, release, namespace)) for w in enabled]

    def manifest(self, user: dict[str, Any], release: str = "release-name", namespace: str = "default") -> str:
        """The release manifest: the templated objects (the chart's templated CRDs, its controllers, a local chart's
        templates). ``release``/``namespace`` default to what ``helm template`` uses."""
        docs = []
        objects = self.crd_objects(user, "template") + self.workload_objects(user, release, namespace)
        for source, obj in objects + self._template_objects():
            body = dump(obj)
            docs.append(f"---\n# Source: {source}\n{body}")
        return "".join(docs)

    def _template_objects(self) -> list[tuple[str, dict[str, Any]]]:
        out: list[tuple[str, dict[str, Any]]] = []
        for file in self.entry.templates:
            path = Path(file)
            with path.open() as handle:
                docs = list(yaml.load_all(handle, Loader=_LOADER))
            out += [(f"{self.name}/templates/{path.name}", doc) for doc in docs if isinstance(doc, dict)]
        return out


class LocalChartError(Exception):
    """Raised with the message helm (or, for what it does not do, the double) prints."""


def local_chart(folder: Path) -> Chart:
    """A chart directory given as the chart reference (helm looks for a local path first).

    Only plain YAML is supported: no Go template is rendered, so a template with ``{{`` is refused
    rather than applied half-understood. ``crds/`` is honoured like a published chart's.
    """
    if not folder.is_dir():
        raise LocalChartError(f"helm test double: only chart directories are supported, not {folder}")
    meta_file = folder / "Chart.yaml"
    if not meta_file.exists():
        raise LocalChartError("Chart.yaml file is missing")
    meta = _load_yaml(meta_file) or {}
    for key in ("name", "version"):
        if not meta.get(key):
            raise LocalChartError(f"validation: chart.metadata.{key} is required")
    templates = tuple(
        str(path)
        for path in sorted((folder / "templates").glob("*"))
        if path.suffix in TEMPLATE_SUFFIXES and not path.name.startswith("_")
    )
    for file in templates:
        if "{{" in Path(file).read_text():
            raise LocalChartError(f"helm test double: {file} is a Go template; local charts must be plain YAML")
    crd_files = tuple(str(path) for path in sorted((folder / "crds").glob("*")) if path.suffix in TEMPLATE_SUFFIXES)
    entry = ChartEntry(
        name=str(meta["name"]),
        folder=str(folder.resolve()),  # absolute: upstream_dir() / folder is the folder itself
        versions=(Version(str(meta["version"]), str(meta.get("appVersion") or "")),),
        crds=(CrdSet("crds-dir", crd_files),) if crd_files else (),
        templates=templates,
    )
    return Chart(entry, entry.versions[0])
