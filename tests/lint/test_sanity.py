"""`ansible-test sanity` on a copy of the collection laid out as ansible_collections/modelplane/serving.

ansible-test insists on that layout, so the files git would ship (tracked, plus new files it
does not ignore) are copied to a temporary tree first. The ``import`` test builds a bare
virtualenv with pip's ``get-pip.py`` bootstrap, which ansible-test downloads from a host this
machine cannot reach; a stand-in bootstrap is written into a private HOME instead, so the real
import test still runs.
"""

from __future__ import annotations

import fnmatch
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
import yaml
from packaging.specifiers import SpecifierSet
from packaging.version import Version

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent

GET_PIP_SHIM = '''\
"""Stand-in for pip's get-pip.py bootstrap: the test's own pip installs the requested pip here."""
import subprocess
import sys

# pip --python installs into an environment that has no pip yet. ensurepip would install its bundled pip and
# setuptools first, only for ansible-test's pin to replace them: a third of the sanity run's CPU for eight venvs.
args = [a for a in sys.argv[1:] if a not in ("--no-setuptools", "--no-wheel")]
sys.exit(subprocess.call([{outer!r}, "-m", "pip", "--python", sys.executable, "install", *args]))
'''


def _ignored_by_build(name: str, patterns: list[str]) -> bool:
    """Whether galaxy.yml's build_ignore leaves `name` out of the built collection (a glob or a folder)."""
    return any(fnmatch.fnmatch(name, p) or name.startswith(p.rstrip("/") + "/") for p in patterns)


def _shipped_files() -> list[str]:
    listing = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard"], cwd=REPO, capture_output=True, text=True, check=True
    )
    ignored = yaml.safe_load((REPO / "galaxy.yml").read_text())["build_ignore"]
    return [name for name in listing.stdout.splitlines()
            if (REPO / name).is_file() and not _ignored_by_build(name, ignored)]


@pytest.fixture(scope="module")
def collection_copy(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("sanity")
    dest = root / "ansible_collections" / "modelplane" / "serving"
    dest.mkdir(parents=True)
    archive = root / "files.tar"
    with tarfile.open(archive, "w") as tar:
        for name in _shipped_files():
            tar.add(REPO / name, arcname=name)
    with tarfile.open(archive) as tar:
        tar.extractall(dest, filter="data")
    # kubernetes.core must resolve for the import and validate-modules tests.
    shutil.copytree(
        REPO / ".collections" / "ansible_collections" / "kubernetes",
        root / "ansible_collections" / "kubernetes",
    )
    return dest


@pytest.mark.slow
def test_ansible_test_sanity_passes(collection_copy: Path, tmp_path: Path):
    home = tmp_path / "home"
    cache = home / ".ansible" / "test" / "cache"
    cache.mkdir(parents=True)
    pip_version = "24_2"
    (cache / f"get_pip_{pip_version}.py").write_text(GET_PIP_SHIM.format(outer=sys.executable))
    env = {
        **os.environ,
        "HOME": str(home),
        "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        "ANSIBLE_COLLECTIONS_PATH": str(collection_copy.parents[2]),
    }
    env.pop("ANSIBLE_CONFIG", None)
    result = subprocess.run(
        [str(BIN / "ansible-test"), "sanity", "--python", f"{sys.version_info.major}.{sys.version_info.minor}",
         "--color", "no"],
        cwd=collection_copy, env=env, capture_output=True, text=True, timeout=1200, check=False
    )
    assert result.returncode == 0, result.stdout[-8000:] + result.stderr[-8000:]


def supported_ansible_core() -> list[str]:
    """The ansible-core minor versions the collection supports: meta/runtime.yml's floor, requirements.txt's range."""
    floor = SpecifierSet(yaml.safe_load((REPO / "meta" / "runtime.yml").read_text())["requires_ansible"])
    pinned = next(line.split("ansible-core", 1)[1] for line in (REPO / "requirements.txt").read_text().splitlines()
                  if line.startswith("ansible-core"))
    allowed = floor & SpecifierSet(pinned)
    return [f"2.{minor}" for minor in range(10, 40) if Version(f"2.{minor}.0") in allowed]


def test_one_sanity_ignore_file_per_supported_ansible_core():
    # ansible-test reads only tests/sanity/ignore-<its own major.minor>.txt, so each supported version needs its own.
    supported = supported_ansible_core()
    assert supported, "no ansible-core version satisfies meta/runtime.yml and requirements.txt"
    found = sorted(path.name for path in (REPO / "tests" / "sanity").glob("ignore-*.txt"))
    assert found == [f"ignore-{version}.txt" for version in supported]


@pytest.mark.parametrize("version", supported_ansible_core())
def test_every_sanity_ignore_is_justified(version):
    for number, line in enumerate((REPO / "tests" / "sanity" / f"ignore-{version}.txt").read_text().splitlines(), 1):
        entry, separator, why = line.partition(" # ")
        path = entry.split(" ")[0]
        assert (REPO / path).is_file(), f"ignore-{version}.txt:{number}: {path} does not exist"
        assert separator and len(why.strip()) > 10, f"ignore-{version}.txt:{number}: say why it is needed after ' # '"
