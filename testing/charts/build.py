#!/usr/bin/env python3
"""Build the test charts into a classic Helm chart repository (``index.yaml`` + ``.tgz``).

TEST DOUBLES, not the upstream charts. The upstream charts cannot be fetched here and their templates are
upstream code we do not copy, so each test chart is assembled at build time from:

* the chart facts in ``<chart>/facts.yaml`` (ours): name, the versions to build, each version's appVersion,
  which upstream data folder it reads, which CRD files go to ``crds/`` and which are rendered as templates,
  local subcharts and the release-time rewrites upstream's release pipeline applies to ``values.yaml``;
* the upstream data (``Chart.yaml``, ``values.yaml``, ``values.schema.json``, CRD files) read from
  ``<repo>/../shared/upstream`` and copied into the build directory only, never into this repository;
* templates of our own (``<chart>/templates/``, ``<chart>/subcharts/<name>/``), each citing the upstream
  template it follows.

Then ``helm package`` (real helm) per chart version and ``helm repo index`` over the output directory.

``facts.yaml`` keys: ``name``; ``upstream`` (folder with Chart.yaml, values.yaml and any values.schema.json);
optional ``values`` (another values file, e.g. a ``values.tmpl.yaml``), ``values_replace`` (``[old, new]``
text rewrites; each must match; ``{version}`` / ``{appVersion}`` are filled in), ``kubeVersion``,
``dependencies`` (replace upstream Chart.yaml's), ``subcharts`` (name -> ``source`` folder of ours,
``upstream`` folder for Chart.yaml/values.yaml, ``crds`` list), ``crds`` / ``templateCrds`` (defaults for
every version), ``note``; ``versions``: ``version``, ``appVersion`` and optionally ``upstream``, ``crds``,
``templateCrds`` and ``note`` (e.g. which version's data stands in for it). ``crds`` files go to the chart's
``crds/``; ``templateCrds`` files go to ``files/crds/``, where the chart's own ``templates/crds.yaml``
renders them into the release manifest.

Usage: ``build.py [--helm PATH] [--url URL] [--upstream DIR] OUTPUT_DIR``.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
REPO_ROOT = HERE.parents[1]
FACTS = "facts.yaml"


class BuildError(Exception):
    """The build cannot go on; the message says why."""


def default_upstream() -> Path:
    return REPO_ROOT.parent / "shared" / "upstream"


def require_upstream(upstream: Path) -> Path:
    if not (upstream / "provenance.yaml").is_file():
        raise BuildError(
            f"upstream reference data not found at {upstream} (expected <repo>/../shared/upstream with "
            "provenance.yaml): the test charts copy their values.yaml, values.schema.json and CRD files "
            "from there at build time and cannot be built without it"
        )
    return upstream


def chart_sources() -> list[Path]:
    """Every chart folder of ours (one with a facts.yaml), in name order."""
    return sorted(path.parent for path in HERE.glob(f"*/{FACTS}"))


def load_facts(source: Path) -> dict[str, Any]:
    with (source / FACTS).open() as handle:
        return yaml.safe_load(handle)


def _upstream_file(upstream: Path, relative: str) -> Path:
    path = upstream / relative
    if not path.is_file():
        raise BuildError(f"upstream file missing: {path}")
    return path


def _fill(text: str, version: dict[str, Any]) -> str:
    return text.replace("{version}", str(version["version"])).replace("{appVersion}", str(version["appVersion"]))


def _values_text(facts: dict[str, Any], version: dict[str, Any], upstream: Path, folder: str) -> str:
    source = facts.get("values") or f"{folder}/values.yaml"
    text = _upstream_file(upstream, source).read_text()
    for old, new in facts.get("values_replace", []):
        if old not in text:
            raise BuildError(f"{facts['name']}: values rewrite {old!r} matches nothing in {source}")
        text = text.replace(old, _fill(new, version))
    return text


def _description(facts: dict[str, Any], version: dict[str, Any], meta: dict[str, Any]) -> str:
    notes = [note for note in (facts.get("note"), version.get("note")) if note]
    text = f"TEST CHART of modelplane.serving (testing/charts/{facts['name']}), not the upstream chart. "
    text += f"Upstream: {' '.join(str(meta.get('description', '')).split())}"
    return text + ("" if not notes else " " + " ".join(notes))


def _chart_yaml(facts: dict[str, Any], version: dict[str, Any], upstream: Path, folder: str) -> dict[str, Any]:
    meta = yaml.safe_load(_upstream_file(upstream, f"{folder}/Chart.yaml").read_text())
    meta["version"] = str(version["version"])
    meta["appVersion"] = str(version["appVersion"])
    meta["description"] = _description(facts, version, meta)
    if "kubeVersion" in facts:
        meta["kubeVersion"] = facts["kubeVersion"]
    if "dependencies" in facts:
        meta["dependencies"] = facts["dependencies"]
    if not meta.get("dependencies"):
        meta.pop("dependencies", None)
    return meta


def _copy_crds(upstream: Path, files: list[str], dest: Path) -> None:
    if not files:
        return
    dest.mkdir(parents=True, exist_ok=True)
    for relative in files:
        shutil.copyfile(_upstream_file(upstream, relative), dest / Path(relative).name)


def _copy_tree(source: Path, dest: Path) -> None:
    if source.is_dir():
        shutil.copytree(source, dest, dirs_exist_ok=True)


def _write_yaml(path: Path, data: dict[str, Any]) -> None:
    path.write_text(yaml.safe_dump(data, sort_keys=False))


def _subchart(source: Path, name: str, spec: dict[str, Any], upstream: Path, dest: Path) -> None:
    target = dest / "charts" / name
    target.mkdir(parents=True)
    if spec.get("source"):
        _copy_tree(source / spec["source"], target)
    if spec.get("upstream"):
        shutil.copyfile(_upstream_file(upstream, f"{spec['upstream']}/Chart.yaml"), target / "Chart.yaml")
        values = upstream / spec["upstream"] / "values.yaml"
        if values.is_file():
            shutil.copyfile(values, target / "values.yaml")
    _copy_crds(upstream, spec.get("crds", []), target / "crds")


def assemble(source: Path, facts: dict[str, Any], version: dict[str, Any], upstream: Path, dest: Path) -> Path:
    """Lay out one chart version in ``dest/<name>`` and return that directory."""
    chart = dest / facts["name"]
    chart.mkdir(parents=True)
    folder = version.get("upstream") or facts["upstream"]
    _write_yaml(chart / "Chart.yaml", _chart_yaml(facts, version, upstream, folder))
    (chart / "values.yaml").write_text(_values_text(facts, version, upstream, folder))
    schema = upstream / folder / "values.schema.json"
    if schema.is_file():
        shutil.copyfile(schema, chart / "values.schema.json")
    _copy_tree(source / "templates", chart / "templates")
    _copy_crds(upstream, version.get("crds", facts.get("crds", [])), chart / "crds")
    _copy_crds(upstream, version.get("templateCrds", facts.get("templateCrds", [])), chart / "files" / "crds")
    for name, spec in (facts.get("subcharts") or {}).items():
        _subchart(source, name, spec, upstream, chart)
    return chart


def _run(argv: list[str]) -> str:
    result = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=300)
    if result.returncode != 0:
        raise BuildError(f"{' '.join(argv)} failed ({result.returncode}): {result.stderr.strip() or result.stdout}")
    return result.stdout


def package(helm: str, chart: Path, output: Path) -> None:
    _run([helm, "package", str(chart), "--destination", str(output)])


def build(output: Path, helm: str = "helm", url: str | None = None, upstream: Path | None = None) -> list[str]:
    """Build every chart version into ``output`` and index it; return ``<name>-<version>`` of each."""
    upstream = require_upstream(upstream or default_upstream())
    output.mkdir(parents=True, exist_ok=True)
    built: list[str] = []
    with tempfile.TemporaryDirectory(prefix="test-charts-") as work:
        for source in chart_sources():
            facts = load_facts(source)
            for version in facts["versions"]:
                stage = Path(work) / f"{facts['name']}-{version['version']}"
                package(helm, assemble(source, facts, version, upstream, stage), output)
                built.append(f"{facts['name']}-{version['version']}")
    _run([helm, "repo", "index", str(output), *(["--url", url] if url else [])])
    return built


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("output", type=Path, help="directory to write the chart repository into")
    parser.add_argument("--helm", default="helm", help="helm binary (default: helm on PATH)")
    parser.add_argument("--url", help="URL the repository will be served at (index.yaml entries)")
    parser.add_argument("--upstream", type=Path, help="upstream data (default: <repo>/../shared/upstream)")
    args = parser.parse_args(argv)
    try:
        built = build(args.output, args.helm, args.url, args.upstream)
    except BuildError as error:
        print(f"build.py: {error}", file=sys.stderr)
        return 1
    print(f"built {len(built)} chart versions into {args.output}: {' '.join(built)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
