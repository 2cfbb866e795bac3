"""Galaxy-grade packaging, checked on the built tarball as Galaxy and the collection's users see it.

`ansible-galaxy collection build` makes the tarball once; then:

- galaxy-importer (what Galaxy runs on an upload, without ansible-test) logs no ERROR;
- the tarball installed with `ansible-galaxy collection install` into a temporary collections path, beside
  kubernetes.core and awx.awx, passes `ansible-lint --profile production` and
  `antsibull-docs lint-collection-docs --plugin-docs`, and validates a ServingStack against its own CRD;
- the release notes are antsibull-changelog's: fragments and changelogs/changelog.yaml lint clean, CHANGELOG.rst is
  what `antsibull-changelog generate` makes of them, and galaxy.yml's version has a release there;
- every plugin's `version_added` names a release of the changelog or galaxy.yml's version, and the collection's
  documentation needs no other collection's doc fragment (Galaxy renders it without installing dependencies).

A failure prints the tool's own findings.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
GALAXY = yaml.safe_load((REPO / "galaxy.yml").read_text())
COLLECTION = f"{GALAXY['namespace']}.{GALAXY['name']}"
TARBALL = f"{GALAXY['namespace']}-{GALAXY['name']}-{GALAXY['version']}.tar.gz"
KUBERNETES_CORE = REPO / ".collections" / "ansible_collections" / "kubernetes" / "core"

# awx.awx (playbooks/awx_setup.yml) is not on Galaxy's side of this machine. The `ansible` community package carried
# it up to its 10.x series; 10.7.0 has awx.awx 24.6.1, awx.awx's last release and the one whose options
# tests/integration/test_awx_setup.py mirrors. Only that collection is taken from the wheel, once per checkout.
AWX_WHEEL = "ansible==10.7.0"
AWX_WHEEL_SHA256 = "0089f08e047ceb70edd011be009f5c6273add613fbe491e9697c0556c989d8ea"
AWX_VERSION = "24.6.1"
AWX_CACHE = REPO / ".cache" / f"awx.awx-{AWX_VERSION}"

# The plugin types whose every plugin documents itself in a DOCUMENTATION string.
DOCUMENTED_TYPES = ("modules", "lookup", "inventory")
# Doc fragments other than this collection's that Galaxy can resolve: ansible-core's own.
RESOLVABLE_FRAGMENT_PREFIXES = (f"{COLLECTION}.", "ansible.builtin.")


def _env(**extra: str) -> dict[str, str]:
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}", "NO_COLOR": "1", **extra}
    # The repository's ansible.cfg names its .collections, where modelplane.serving is this checkout, not the tarball.
    env.pop("ANSIBLE_CONFIG", None)
    return env


def _tool(name: str) -> str:
    path = BIN / name
    assert path.exists(), f"{name} is not installed in {BIN}: `make venv` installs it (tests/requirements.txt)"
    return str(path)


def _run(argv: list[str], cwd: Path, env: dict[str, str], timeout: int = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False)


@pytest.fixture(scope="module")
def tarball(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    result = _run([_tool("ansible-galaxy"), "collection", "build", "--output-path", str(out), str(REPO)], REPO, _env())
    assert result.returncode == 0, result.stdout + result.stderr
    return out / TARBALL


def _awx_collection(scratch: Path) -> Path:
    """A collections path holding awx.awx, taken from the hash-pinned `ansible` wheel the first time."""
    manifest = AWX_CACHE / "ansible_collections" / "awx" / "awx" / "MANIFEST.json"
    if not manifest.exists():
        (scratch / "requirements.txt").write_text(f"{AWX_WHEEL} --hash=sha256:{AWX_WHEEL_SHA256}\n")
        download = _run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--require-hashes",
                         "--only-binary=:all:", "--dest", str(scratch), "-r", str(scratch / "requirements.txt")],
                        scratch, _env())
        assert download.returncode == 0, (
            f"awx.awx comes from the {AWX_WHEEL} wheel on PyPI, which could not be downloaded:\n{download.stderr}")
        spec = importlib.util.spec_from_file_location("install_collections", REPO / "tools" / "install_collections.py")
        assert spec and spec.loader
        installer = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(installer)
        # Extracted beside the cache and renamed into place, so an interrupted run leaves no half-extracted cache.
        AWX_CACHE.parent.mkdir(parents=True, exist_ok=True)
        staging = AWX_CACHE.parent / f".{AWX_CACHE.name}.{os.getpid()}"
        shutil.rmtree(staging, ignore_errors=True)
        installer.extract(next(scratch.glob("ansible-*.whl")), staging, ("awx/awx",))
        try:
            staging.rename(AWX_CACHE)
        except OSError:
            shutil.rmtree(staging, ignore_errors=True)
            assert manifest.exists(), f"could not store awx.awx in {AWX_CACHE}"
    version = json.loads(manifest.read_text())["collection_info"]["version"]
    assert version == AWX_VERSION, f"{AWX_CACHE} holds awx.awx {version}, not {AWX_VERSION}: remove it"
    return AWX_CACHE


@pytest.fixture(scope="module")
def installed(tarball: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """The tarball installed as users install it: its folder, and the collections path to use with it."""
    root = tmp_path_factory.mktemp("installed")
    collections = root / "collections"
    (collections / "ansible_collections" / "kubernetes").mkdir(parents=True)
    assert (KUBERNETES_CORE / "MANIFEST.json").exists(), f"{KUBERNETES_CORE} is missing: run `make venv`"
    (collections / "ansible_collections" / "kubernetes" / "core").symlink_to(KUBERNETES_CORE)
    # --no-deps: Galaxy is not reachable; kubernetes.core is already beside it.
    result = _run([_tool("ansible-galaxy"), "collection", "install", "--no-deps", "-p", str(collections), str(tarball)],
                  root, _env(ANSIBLE_COLLECTIONS_PATH=str(collections)))
    assert result.returncode == 0, result.stdout + result.stderr
    path = os.pathsep.join([str(collections), str(_awx_collection(tmp_path_factory.mktemp("awx")))])
    return collections / "ansible_collections" / GALAXY["namespace"] / GALAXY["name"], path


def importer_errors(output: str) -> list[str]:
    """galaxy-importer's ERROR lines (its log prints one per line, `ERROR: ...`)."""
    return [line for line in output.splitlines() if line.startswith("ERROR")]


def test_importer_errors_are_the_error_lines_only():
    log = "Loading role lws\nERROR: Error running ansible-doc: x\nWARNING: ERROR    y\nINFO ERROR z\nERROR: w"
    assert importer_errors(log) == ["ERROR: Error running ansible-doc: x", "ERROR: w"]


@pytest.mark.slow
def test_galaxy_importer_reports_no_error(tarball: Path, tmp_path: Path, record_verdict):
    (tmp_path / "galaxy-importer.cfg").write_text(
        "[galaxy-importer]\n"
        # ansible-test sanity runs apart (tests/lint/test_sanity.py); Galaxy does not run it either.
        "RUN_ANSIBLE_TEST = False\n"
        "RUN_ANSIBLE_DOC = True\n"
        "RUN_ANSIBLE_LINT = True\n"
        "CHECK_CHANGELOG = True\n"
        f"ANSIBLE_LOCAL_TMP = {tmp_path / 'ansible-tmp'}\n"
        f"TMP_ROOT_DIR = {tmp_path}\n"
    )
    assert importlib.util.find_spec("galaxy_importer"), (
        "galaxy-importer is not installed: `make venv` installs it (tests/requirements.txt)")
    env = _env(GALAXY_IMPORTER_CONFIG=str(tmp_path / "galaxy-importer.cfg"), HOME=str(tmp_path))
    env.pop("ANSIBLE_COLLECTIONS_PATH", None)
    result = _run([sys.executable, "-m", "galaxy_importer.main", str(tarball)], tmp_path, env)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    errors = importer_errors(output)
    assert not errors, "galaxy-importer logged errors:\n" + "\n".join(errors)
    # It did read the collection's documentation: every module's, with its options.
    imported = json.loads((tmp_path / "importer_result.json").read_text())
    documented = {item["content_name"]: item for item in imported["docs_blob"]["contents"]
                  if item["content_type"] == "module"}
    modules = {path.stem for path in (REPO / "plugins" / "modules").glob("*.py")}
    assert set(documented) == modules
    options = documented["servingstack_kubeconfig"]["doc_strings"]["doc"]["options"]
    assert "kubeconfig" in {option["name"] for option in options}
    warnings = [line for line in output.splitlines() if line.startswith("WARNING")]
    record_verdict("galaxy-importer", f"{tarball.name}: 0 ERROR, {len(warnings)} WARNING lines, "
                                      f"{len(documented)} modules documented")


@pytest.mark.slow
def test_ansible_lint_production_profile_passes_on_the_installed_collection(installed, tmp_path: Path,
                                                                            record_verdict):
    folder, collections_path = installed
    result = _run([_tool("ansible-lint"), "--offline", "--nocolor", "--format=pep8", "--profile", "production"],
                  folder, _env(ANSIBLE_COLLECTIONS_PATH=collections_path, ANSIBLE_HOME=str(tmp_path / "ansible")))
    assert result.returncode == 0, result.stdout + result.stderr
    # Its last line: "Passed: 0 failure(s), 0 warning(s) in N files processed ... Profile 'production' was required".
    last_line = (result.stderr.strip() or result.stdout.strip()).splitlines()[-1]
    record_verdict("ansible-lint --profile production", last_line)


@pytest.mark.slow
def test_antsibull_docs_lint_passes_on_the_installed_collection(installed: tuple[Path, str], record_verdict):
    folder, collections_path = installed
    result = _run([_tool("antsibull-docs"), "lint-collection-docs", "--plugin-docs", "."],
                  folder, _env(ANSIBLE_COLLECTIONS_PATH=collections_path))
    assert result.returncode == 0, result.stdout + result.stderr
    record_verdict("antsibull-docs lint-collection-docs --plugin-docs",
                   f"exit 0, {len((result.stdout + result.stderr).strip().splitlines())} problem lines")


@pytest.mark.slow
def test_the_installed_collection_validates_a_servingstack_against_its_own_crd(installed, tmp_path: Path):
    # The action plugin reads the ServingStack CRD from the collection's crds/: the installed collection has it.
    folder, collections_path = installed
    assert (folder / "crds" / "servingstacks.infrastructure.modelplane.ai.yaml").is_file()
    result = _run([_tool("ansible-playbook"), f"{COLLECTION}.plan", "-e",
                   f"servingstack_src={REPO / 'examples' / 'dynamo.yaml'}"],
                  tmp_path, _env(ANSIBLE_COLLECTIONS_PATH=collections_path, ANSIBLE_HOME=str(tmp_path / "ansible")))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "(Dynamo stack) installs, in order:" in result.stdout


def test_the_tarball_ships_the_release_notes(tarball: Path):
    with tarfile.open(tarball) as tar:
        names = set(tar.getnames())
    assert {"CHANGELOG.rst", "changelogs/changelog.yaml", "changelogs/config.yaml"} <= names
    assert not {name for name in names if name.startswith((".ansible/", "changelogs/.plugin-cache"))}


def test_changelog_fragments_and_changelog_yaml_lint_clean():
    result = _run([_tool("antsibull-changelog"), "lint"], REPO, _env())
    assert result.returncode == 0 and not result.stdout.strip(), result.stdout + result.stderr
    result = _run([_tool("antsibull-changelog"), "lint-changelog-yaml", "--strict", "changelogs/changelog.yaml"],
                  REPO, _env())
    assert result.returncode == 0 and not result.stdout.strip(), result.stdout + result.stderr


def test_changelog_rst_is_generated_from_changelog_yaml(tmp_path: Path):
    shutil.copytree(REPO / "changelogs", tmp_path / "changelogs", ignore=shutil.ignore_patterns(".plugin-cache.yaml"))
    shutil.copy(REPO / "galaxy.yml", tmp_path)
    result = _run([_tool("antsibull-changelog"), "generate"], tmp_path, _env())
    assert result.returncode == 0, result.stdout + result.stderr
    assert (tmp_path / "CHANGELOG.rst").read_text() == (REPO / "CHANGELOG.rst").read_text(), (
        "CHANGELOG.rst differs from what changelogs/changelog.yaml makes: run `antsibull-changelog generate`")


def released_versions() -> set[str]:
    return set(yaml.safe_load((REPO / "changelogs" / "changelog.yaml").read_text())["releases"])


def test_galaxy_version_has_a_release_in_the_changelog():
    assert GALAXY["version"] in released_versions(), (
        f"changelogs/changelog.yaml has no release {GALAXY['version']} (galaxy.yml's version): "
        f"run `antsibull-changelog release`")


def _documentation_in(body: list[ast.stmt]) -> dict | None:
    for node in body:
        if (isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "DOCUMENTATION" for t in node.targets)
                and isinstance(node.value, ast.Constant)):
            return yaml.safe_load(node.value.value)
    return None


def documentation(path: Path) -> dict | None:
    """A plugin file's DOCUMENTATION, parsed, without importing the plugin; None when it has none."""
    return _documentation_in(ast.parse(path.read_text()).body)


def fragment_documentation(path: Path) -> dict:
    """A doc fragment's DOCUMENTATION (the ModuleDocFragment class attribute), parsed."""
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.ClassDef) and node.name == "ModuleDocFragment":
            doc = _documentation_in(node.body)
            assert doc is not None, f"{path.relative_to(REPO)}: ModuleDocFragment has no DOCUMENTATION"
            return doc
    raise AssertionError(f"{path.relative_to(REPO)}: no ModuleDocFragment")


def documented_plugins() -> dict[str, dict]:
    """Every plugin documentation of the collection, by path: DOCUMENTATION strings and sidecar YAML files."""
    found: dict[str, dict] = {}
    for path in sorted((REPO / "plugins").glob("*/*.py")):
        if path.parent.name in ("doc_fragments", "module_utils", "plugin_utils"):
            continue
        doc = documentation(path)
        if doc is not None:
            found[str(path.relative_to(REPO))] = doc
    for path in sorted((REPO / "plugins").glob("*/*.y*ml")):
        doc = (yaml.safe_load(path.read_text()) or {}).get("DOCUMENTATION")
        if doc is not None:
            found[str(path.relative_to(REPO))] = doc
    return found


def version_added_problems(where: str, doc: dict, allowed: set[str]) -> list[str]:
    """`version_added` of a plugin and of each of its options (at any depth) that names no release of ours."""
    problems = []
    if str(doc.get("version_added")) not in allowed:
        problems.append(f"{where}: version_added {doc.get('version_added')!r}")

    def walk(options: dict, prefix: str) -> None:
        for name, option in (options or {}).items():
            if "version_added" in option and str(option["version_added"]) not in allowed:
                problems.append(f"{where}: option {prefix}{name}: version_added {option['version_added']!r}")
            walk(option.get("suboptions"), f"{prefix}{name}.")

    walk(doc.get("options"), "")
    return problems


def test_version_added_problems_names_each_wrong_version():
    doc = {"version_added": "0.2.0", "options": {"a": {"version_added": "0.1.0"},
                                                 "b": {"suboptions": {"c": {"version_added": "1.0.0"}}}}}
    assert version_added_problems("p.py", doc, {"0.1.0"}) == [
        "p.py: version_added '0.2.0'", "p.py: option b.c: version_added '1.0.0'"]
    assert version_added_problems("p.py", {"options": {}}, {"0.1.0"}) == ["p.py: version_added None"]


def test_every_plugin_documents_a_version_added_of_a_release():
    allowed = released_versions() | {GALAXY["version"]}
    plugins = documented_plugins()
    for kind in DOCUMENTED_TYPES:
        for path in (REPO / "plugins" / kind).glob("*.py"):
            assert str(path.relative_to(REPO)) in plugins, f"{path.relative_to(REPO)}: no DOCUMENTATION"
    # An action plugin is documented by the module of its name.
    for path in (REPO / "plugins" / "action").glob("*.py"):
        assert f"plugins/modules/{path.name}" in plugins, f"{path.relative_to(REPO)}: no module documents it"
    problems = [problem for where, doc in plugins.items() for problem in version_added_problems(where, doc, allowed)]
    assert not problems, f"version_added must be one of {sorted(allowed)} (changelog releases, galaxy.yml):\n" + (
        "\n".join(problems))


def test_documentation_extends_only_fragments_galaxy_resolves():
    foreign = [f"{where}: {fragment}" for where, doc in documented_plugins().items()
               for fragment in doc.get("extends_documentation_fragment") or []
               if not fragment.startswith(RESOLVABLE_FRAGMENT_PREFIXES)]
    assert not foreign, ("Galaxy renders documentation without the collection's dependencies; document these options "
                         "in plugins/doc_fragments instead:\n" + "\n".join(foreign))


def _spec_shape(spec: dict) -> dict:
    """What documentation states of an argument spec: type, elements, aliases and suboptions (no_log is not shown)."""
    return {name: {"type": option.get("type", "str"), "elements": option.get("elements"),
                   "aliases": sorted(option.get("aliases") or []),
                   "suboptions": _spec_shape(option.get("options") or option.get("suboptions") or {})}
            for name, option in spec.items()}


def test_the_kubernetes_auth_fragment_documents_kubernetes_core_connection_options():
    from ansible_collections.kubernetes.core.plugins.module_utils.args_common import AUTH_ARG_SPEC

    documented = fragment_documentation(REPO / "plugins" / "doc_fragments" / "kubernetes_auth.py")["options"]
    assert _spec_shape(documented) == _spec_shape(AUTH_ARG_SPEC)
