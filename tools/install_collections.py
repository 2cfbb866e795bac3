"""Install the collections this repository needs into a local collections path.

Users normally run ``ansible-galaxy collection install -r requirements.yml``. Machines
that reach PyPI but not Ansible Galaxy (CI here) take ``kubernetes.core`` from the
``ansible`` community package on PyPI instead: its wheel carries a released copy of
every included collection, and only ``ansible_collections/kubernetes/core`` is
extracted (about 1 MB). The repository itself is linked in as ``modelplane.serving``
so that playbooks and ``ansible-doc`` resolve the collection's FQCNs.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

# The community package only carries the collection here: it is downloaded, never installed, so its own
# Python floor (3.12 for ansible 13+) does not apply and pip is told to fetch the 3.12 wheel. ansible 14.5.0
# ships kubernetes.core 6.6.0, the first 6.x whose helm modules work with helm 4 (no `helm list --all`,
# --rollback-on-failure for atomic; kubernetes.core#1090, #1144); 6.2.0 fails every change under helm 4.
ANSIBLE_WHEEL = "ansible==14.5.0"
ANSIBLE_WHEEL_SHA256 = "245623ccc2d31d0f6f4bdb63168d550cad305fb032cc43d96e8f61ce8ab0ba84"
WANTED = ("kubernetes/core",)


def extract(wheel: Path, dest: Path, wanted: tuple[str, ...] = WANTED) -> list[str]:
    """Extract the wanted collections from an ``ansible`` wheel into ``dest``."""
    done: list[str] = []
    with zipfile.ZipFile(wheel) as archive:
        for collection in wanted:
            prefix = f"ansible_collections/{collection}/"
            members = [name for name in archive.namelist() if name.startswith(prefix)]
            if not members:
                raise SystemExit(f"{wheel.name} carries no {collection}")
            for name in members:
                archive.extract(name, dest)
            done.append(collection.replace("/", "."))
    return done


def requirement(directory: Path) -> str:
    """A requirements file pinning the ansible wheel by hash (pip checks it before anything is extracted)."""
    path = directory / "requirements.txt"
    path.write_text(f"{ANSIBLE_WHEEL} --hash=sha256:{ANSIBLE_WHEEL_SHA256}\n")
    return str(path)


def link_self(dest: Path, repo: Path) -> Path:
    """Expose the repository as ``ansible_collections/modelplane/serving``."""
    link = dest / "ansible_collections" / "modelplane" / "serving"
    link.parent.mkdir(parents=True, exist_ok=True)
    if link.is_symlink() or link.exists():
        link.unlink()
    link.symlink_to(repo.resolve(), target_is_directory=True)
    return link


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dest", type=Path, help="collections path to fill, e.g. .collections")
    parser.add_argument("--repo", type=Path, default=Path(__file__).resolve().parents[1])
    args = parser.parse_args(argv)
    marker = args.dest / "ansible_collections" / "kubernetes" / "core" / "MANIFEST.json"
    if not marker.exists():
        with tempfile.TemporaryDirectory() as tmp:
            subprocess.run(
                [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--require-hashes",
                 "--only-binary=:all:", "--python-version", "3.12", "--dest", tmp, "-r", requirement(Path(tmp))],
                check=True,
            )
            wheel = next(Path(tmp).glob("ansible-*.whl"))
            print("installed", ", ".join(extract(wheel, args.dest)), "from", wheel.name)
    link_self(args.dest, args.repo)
    return 0


if __name__ == "__main__":
    sys.exit(main())
