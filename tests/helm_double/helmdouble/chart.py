"""A resolved chart version: metadata, default values, checks and the objects it installs."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import yaml

from helmdouble import values as vals
from helmdouble.catalog import ChartEntry, CrdSet, Version, upstream_dir

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

    def manifest(self, user: dict[str, Any]) -> str:
        """The release manifest: the templated objects (the chart's templated CRDs, a local chart's templates)."""
        docs = []
        for source, obj in self.crd_objects(user, "template") + self._template_objects():
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
