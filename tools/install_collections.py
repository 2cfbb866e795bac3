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

# ansible 12.x is the newest community package that installs on Python 3.11
# (ansible-core 2.20 needs 3.12); it ships kubernetes.core 6.x.
ANSIBLE_WHEEL_SPEC = "ansible>=11,<13"
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
                [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
                 "--only-binary=:all:", "--dest", tmp, ANSIBLE_WHEEL_SPEC],
                check=True,
            )
            wheel = next(Path(tmp).glob("ansible-*.whl"))
            print("installed", ", ".join(extract(wheel, args.dest)), "from", wheel.name)
    link_self(args.dest, args.repo)
    return 0


if __name__ == "__main__":
    sys.exit(main())
