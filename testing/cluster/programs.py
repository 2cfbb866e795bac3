"""Which container images the pod runtime (`runtime.py`) runs as local processes, and with what.

One table: an image repository (the image reference without tag or digest, `docker.io/` spelled out) -> the
program that stands for that image's entrypoint, and the adjustments that cannot hold outside a container, each
with its reason. A program is a binary built from a Go module of ours (`tool` directives, the control plane's
build cache: see README.md) in the operators' bin folder; an image whose binary is not there keeps kwok's
simulation, unless the table says its webhook is answered by the admission stand-in meanwhile.

Standard library only: `kwok.py` reads it before the virtualenv matters.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class Adjustment:
    """Arguments appended to the container's (later flags win in Go's flag packages), and why."""

    args: tuple[str, ...]
    reason: str


@dataclass(frozen=True)
class Program:
    # The binary's name in the operators' bin folder; None: never built here.
    binary: str | None
    # Without the binary, the pod's webhook port is answered by the admission stand-in (allow everything).
    stand_in: bool = False
    # The stand-in makes the serving CA itself (the pod mounts no certificate: cert-manager's webhook).
    stand_in_own_ca: bool = False
    adjustments: tuple[Adjustment, ...] = ()


# Each pod runs in a network namespace of its own (runtime.py, "Pods"), so fixed listen ports (Envoy Gateway's
# 18000, 18002, 19001, 8080, 8081, 19000; prometheus-operator's 8080) need no adjustment, and the in-cluster
# configuration (the ServiceAccount token, KUBERNETES_SERVICE_HOST) is what a kubelet gives: none for that either.
PROGRAMS: dict[str, Program] = {
    "quay.io/jetstack/trust-manager": Program("trust-manager", stand_in=True),
    "docker.io/envoyproxy/gateway": Program("envoy-gateway"),
    "registry.k8s.io/lws/lws": Program("lws-controller", stand_in=True),
    "quay.io/prometheus-operator/prometheus-operator": Program("prometheus-operator", stand_in=True),
    "quay.io/prometheus-operator/admission-webhook": Program(None, stand_in=True),
    "quay.io/metallb/controller": Program("metallb-controller", stand_in=True),
    "quay.io/jetstack/cert-manager-webhook": Program(None, stand_in=True, stand_in_own_ca=True),
    "quay.io/jetstack/cert-manager-controller": Program("cert-manager-controller"),
    "quay.io/jetstack/cert-manager-cainjector": Program("cert-manager-cainjector"),
}


def repository(image: str) -> str:
    """The image's repository as the table spells it: no tag or digest, Docker Hub's implicit parts spelled out."""
    name = image.split("@", 1)[0]
    last_slash = name.rfind("/")
    if ":" in name[last_slash + 1:]:
        name = name[:name.rindex(":")]
    first, _, rest = name.partition("/")
    if not rest or not re.search(r"[.:]|^localhost$", first):
        name = f"docker.io/{name if rest else 'library/' + name}"
    return name


@dataclass(frozen=True)
class Runnable:
    """What the runtime starts for a container of this image: ``command`` replaces the image's entrypoint."""

    command: tuple[str, ...]
    extra_args: tuple[str, ...] = ()
    stand_in: bool = False
    stand_in_own_ca: bool = False


@dataclass
class Catalog:
    """The images this cluster runs: the table's whose binary is built, the stand-ins, and the test's own."""

    runnables: dict[str, Runnable] = field(default_factory=dict)

    def get(self, image: str) -> Runnable | None:
        return self.runnables.get(repository(image))

    def __bool__(self) -> bool:
        return bool(self.runnables)


def catalog(bin_dir: Path | None, extra: dict[str, str] | None = None, stand_ins: bool = True) -> Catalog:
    """The table resolved against ``bin_dir`` (None: nothing built), plus ``extra`` (image repository -> a
    command line: test programs). Stand-ins are listed only with ``stand_ins``."""
    runnables: dict[str, Runnable] = {}
    for repo, program in PROGRAMS.items():
        binary = bin_dir / program.binary if bin_dir is not None and program.binary else None
        if binary is not None and binary.is_file():
            extra_args = tuple(arg for adjustment in program.adjustments for arg in adjustment.args)
            runnables[repo] = Runnable((str(binary),), extra_args)
        elif program.stand_in and stand_ins:
            runnables[repo] = Runnable((), stand_in=True, stand_in_own_ca=program.stand_in_own_ca)
    for image, command in (extra or {}).items():
        runnables[repository(image)] = Runnable(tuple(shlex.split(command)))
    return Catalog(runnables)
