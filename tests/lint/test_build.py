"""The built collection: `ansible-galaxy collection build` ships the collection and leaves every test double out.

The test tooling (the test control plane and its operator double in testing/cluster, the cloud token services in
testing/doubles) and the test charts live under testing/, which galaxy.yml's build_ignore leaves out. The real build
runs into a temporary directory; the tarball's members, MANIFEST.json and FILES.json are read back.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tarfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
# What the collection is: these folders ship whole (crds/ too: the plugins read the ServingStack CRD from there).
COLLECTION_FOLDERS = ("plugins", "roles", "playbooks", "meta", "crds")
# Where the test doubles live.
DOUBLES_FOLDERS = ("testing/cluster", "testing/doubles")
# Names that only a test double has, wherever a copy of one might land.
DOUBLE_NAMES = {"operator_double", "doubles", "fake_clouds", "token_endpoint", "kwok"}


@dataclass
class Build:
    galaxy: dict
    members: set[str]  # regular files in the tarball
    manifest: dict
    files: dict[str, str | None]  # FILES.json: name -> sha256 (None for folders)


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _repo_files(*folders: str) -> list[str]:
    """Files git tracks or would track (new, not ignored) under `folders`."""
    listing = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "--", *folders], cwd=REPO,
                             capture_output=True, text=True, check=True)
    return [name for name in listing.stdout.splitlines() if (REPO / name).is_file()]


@pytest.fixture(scope="module")
def build(tmp_path_factory) -> Build:
    out = tmp_path_factory.mktemp("build")
    env = {**os.environ, "ANSIBLE_COLLECTIONS_PATH": str(REPO / ".collections"),
           "ANSIBLE_CONFIG": str(REPO / "ansible.cfg"), "NO_COLOR": "1"}
    result = subprocess.run([str(BIN / "ansible-galaxy"), "collection", "build", "--output-path", str(out), str(REPO)],
                            cwd=REPO, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    galaxy = yaml.safe_load((REPO / "galaxy.yml").read_text())
    tarball = out / f"{galaxy['namespace']}-{galaxy['name']}-{galaxy['version']}.tar.gz"
    assert [path.name for path in out.iterdir()] == [tarball.name], result.stdout
    with tarfile.open(tarball) as tar:
        members = {member.name for member in tar.getmembers() if member.isfile()}
        manifest = json.load(tar.extractfile("MANIFEST.json"))
        files = {entry["name"]: entry["chksum_sha256"] for entry in json.load(tar.extractfile("FILES.json"))["files"]}
    return Build(galaxy, members, manifest, files)


def test_the_manifest_names_the_collection_of_galaxy_yml(build):
    info = build.manifest["collection_info"]
    for key in ("namespace", "name", "version", "dependencies"):
        assert info[key] == build.galaxy[key], key
    listed = {name for name, sha in build.files.items() if sha is not None}
    assert listed == build.members - {"MANIFEST.json", "FILES.json"}


def test_the_plugins_roles_playbooks_meta_and_crds_ship_byte_for_byte(build):
    expected = _repo_files(*COLLECTION_FOLDERS)
    assert {name.split("/")[0] for name in expected} == set(COLLECTION_FOLDERS)
    for name in ("plugins/modules/servingstack_spec.py", "roles/servingstack/tasks/main.yml", "playbooks/site.yml",
                 "meta/runtime.yml", "crds/servingstacks.infrastructure.modelplane.ai.yaml"):
        assert name in expected, name
    missing = [name for name in expected if name not in build.members]
    assert not missing, f"left out of the build: {missing}"
    differing = [name for name in expected if build.files[name] != _sha256(REPO / name)]
    assert not differing, f"shipped with other content: {differing}"


def test_no_test_double_and_nothing_under_testing_ships(build):
    under_testing = sorted(name for name in build.members if name.startswith("testing/"))
    assert not under_testing, f"under testing/, shipped: {under_testing}"
    named = sorted(name for name in build.members
                   if DOUBLE_NAMES & {*PurePosixPath(name).parts[:-1], PurePosixPath(name).stem})
    assert not named, f"test doubles, shipped: {named}"


def test_no_shipped_file_is_a_copy_of_a_test_double(build):
    doubles = {_sha256(REPO / name): name for name in _repo_files(*DOUBLES_FOLDERS) if (REPO / name).stat().st_size}
    # The check means something only if it sees the doubles themselves.
    for name in ("testing/cluster/operator_double.py", "testing/cluster/fixtures.py", "testing/doubles/fake_clouds.py",
                 "testing/doubles/token_endpoint.py"):
        assert name in doubles.values(), name
    copies = sorted(f"{name} (= {doubles[sha]})" for name, sha in build.files.items() if sha in doubles)
    assert not copies, f"copies of test doubles, shipped: {copies}"


def test_every_released_plugin_ships_or_has_a_tombstone():
    # A playbook written for a release must either still work or fail saying what to use instead (meta/runtime.yml).
    releases = yaml.safe_load((REPO / "changelogs" / "changelog.yaml").read_text())["releases"]
    routing = yaml.safe_load((REPO / "meta" / "runtime.yml").read_text()).get("plugin_routing", {})
    released = {("modules", module["name"]) for release in releases.values() for module in release.get("modules", [])}
    released |= {(kind, plugin["name"]) for release in releases.values()
                 for kind, plugins in release.get("plugins", {}).items() for plugin in plugins}
    assert released, "changelog.yaml lists no released plugin"
    missing = []
    for kind, name in sorted(released):
        folder = REPO / "plugins" / kind
        if (folder / f"{name}.py").exists():
            assert name not in routing.get(kind, {}), f"{kind}/{name} ships and has a tombstone"
        elif "tombstone" not in routing.get(kind, {}).get(name, {}):
            missing.append(f"{kind}/{name}")
    assert not missing, f"released, removed and without a tombstone in meta/runtime.yml: {missing}"
