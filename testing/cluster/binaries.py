"""The test control plane's binaries, built from Go modules into a cache folder outside the repository, once per
machine (`testing/cluster/build` is the command line).

The pins are the three Go modules beside this file, each its own module so that one's requirements never move
another's: go.mod (k8s.io/kubernetes: kube-apiserver, kube-controller-manager, kube-scheduler, kubectl),
etcd/go.mod (go.etcd.io/etcd/server/v3: etcd) and kwok/go.mod (sigs.k8s.io/kwok: kwok, kwokctl). The cache
folder is keyed by a digest of those go.mod/go.sum files, the Go version and the build commands, so a changed pin
builds anew and an unchanged one is never rebuilt. Standard library only: it runs before the virtualenv exists.

The operators the charts deploy (trust-manager, Envoy Gateway, LWS, prometheus-operator, MetalLB's controller) are
built the same way from one module each under operators/ (each builds with exactly the requirements of its own
release), into a cache folder of their own with a key of their own: a changed operator pin never rebuilds the
control plane, nor the other way round.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
COMMAND = "testing/cluster/build"
MODULES = (HERE, HERE / "etcd", HERE / "kwok")
# kwok's own stages (pod, node), copied next to the binaries so that `run` can give them a delay.
KWOK_STAGES = ("kustomize/stage/node/fast/node-initialize.yaml", "kustomize/stage/node/heartbeat/node-heartbeat.yaml",
               "kustomize/stage/pod/fast/pod-ready.yaml", "kustomize/stage/pod/fast/pod-complete.yaml",
               "kustomize/stage/pod/fast/pod-delete.yaml")


@dataclass(frozen=True)
class Binary:
    name: str
    module_dir: Path
    package: str
    ldflags: tuple[str, ...] = ()


OPERATORS = HERE / "operators"
# The module path of operators/<folder>/ (ours), for the main packages we write ourselves.
OURS = "modelplane.ai/serving/testing/cluster/operators"
# binary name -> (module folder under operators/, the module it builds from, its main package)
OPERATOR_PACKAGES = {
    "trust-manager": ("trust-manager", "github.com/cert-manager/trust-manager",
                      "github.com/cert-manager/trust-manager/cmd/trust-manager"),
    "envoy-gateway": ("envoy-gateway", "github.com/envoyproxy/gateway",
                      "github.com/envoyproxy/gateway/cmd/envoy-gateway"),
    "lws-controller": ("lws", "sigs.k8s.io/lws", "sigs.k8s.io/lws/cmd"),
    "prometheus-operator": ("prometheus-operator", "github.com/prometheus-operator/prometheus-operator",
                            "github.com/prometheus-operator/prometheus-operator/cmd/operator"),
    "metallb-controller": ("metallb", "go.universe.tf/metallb", "go.universe.tf/metallb/controller"),
    # cert-manager's main packages are in modules the Go module proxy does not serve (.../controller-binary,
    # .../cainjector-binary): mains of ours over its public packages (README.md, "cert-manager").
    "cert-manager-controller": ("cert-manager", "github.com/cert-manager/cert-manager",
                                f"{OURS}/cert-manager/controller"),
    "cert-manager-cainjector": ("cert-manager", "github.com/cert-manager/cert-manager",
                                f"{OURS}/cert-manager/cainjector"),
}
# The version variables each project's release build sets (their Makefiles; {version} is the tag, {bare} without
# its "v", as each sets it), so that `--version` and what depends on it report the release: prometheus-operator
# derives its default config-reloader image from it. MetalLB's and trust-manager's builds set only commit data.
OPERATOR_VERSION_LDFLAGS = {
    "envoy-gateway": ("github.com/envoyproxy/gateway/internal/cmd/version.envoyGatewayVersion={version}",),
    "lws-controller": ("sigs.k8s.io/lws/pkg/version.GitVersion={version}",),
    "prometheus-operator": ("github.com/prometheus/common/version.Version={bare}",),
}
# Modules whose go.mod replaces modules of their own repository with local folders, which `go build` refuses in a
# dependency's go.mod: ours repeats each replace at the version below (see sync_replaces).
SYNCED_REPLACES = {
    HERE: "k8s.io/kubernetes",
    OPERATORS / "prometheus-operator": "github.com/prometheus-operator/prometheus-operator",
}


def fail(message: str) -> None:
    print(f"{COMMAND}: {message}", file=sys.stderr)
    sys.exit(1)


def required_version(module_dir: Path, path: str) -> str:
    """The version go.mod requires of ``path``."""
    text = (module_dir / "go.mod").read_text()
    match = re.search(rf"^\s*(?:require\s+)?{re.escape(path)} (v\S+)", text, re.M)
    if not match:
        fail(f"{module_dir / 'go.mod'} requires no {path}")
    return match.group(1)


def go_min_version() -> tuple[int, ...]:
    match = re.search(r"^go (\d+)\.(\d+)", (HERE / "go.mod").read_text(), re.M)
    return tuple(int(part) for part in match.groups()) if match else (1, 26)


def check_go() -> str:
    """The `go version` line; exits with one line when go is missing or older than go.mod asks."""
    go = shutil.which("go")
    want = ".".join(map(str, go_min_version()))
    if go is None:
        fail(f"no 'go' on PATH: Go {want} or newer builds the test control plane (https://go.dev/doc/install)")
    out = subprocess.run([go, "version"], capture_output=True, text=True, check=False).stdout.strip()
    match = re.search(r"go(\d+)\.(\d+)", out)
    if not match or tuple(map(int, match.groups())) < go_min_version():
        fail(f"'{out}' is too old: Go {want} or newer builds the test control plane")
    return out


def module_info(module_dir: Path, path: str) -> dict[str, str]:
    """`go mod download -json` of the pinned version: its source directory, and the release time."""
    version = required_version(module_dir, path)
    proc = subprocess.run(["go", "mod", "download", "-json", f"{path}@{version}"], cwd=module_dir,
                          capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        fail(f"go mod download {path}@{version} failed: {proc.stderr.strip() or proc.stdout.strip()}")
    info = json.loads(proc.stdout)
    with open(info["Info"], encoding="utf-8") as handle:
        info["Time"] = json.load(handle).get("Time", "1970-01-01T00:00:00Z")
    return info


def binaries() -> list[Binary]:
    kube = module_info(HERE, "k8s.io/kubernetes")
    version = kube["Version"]
    major, minor = re.match(r"v(\d+)\.(\d+)", version).groups()
    # What the Kubernetes release build sets (hack/lib/version.sh): /version and `kubectl version` report it.
    kube_ldflags = tuple(
        f"-X {package}.{name}={value}"
        for package in ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version")
        for name, value in (("gitVersion", version), ("gitMajor", major), ("gitMinor", minor),
                            ("gitTreeState", "clean"), ("buildDate", kube["Time"]))
    )
    kwok_version = required_version(HERE / "kwok", "sigs.k8s.io/kwok")
    # kwokctl's default component versions and flags follow consts.KubeVersion: it must be the one we build.
    kwok_ldflags = (f"-X sigs.k8s.io/kwok/pkg/consts.Version={kwok_version.lstrip('v')}",
                    f"-X sigs.k8s.io/kwok/pkg/consts.KubeVersion={version.lstrip('v')}")
    return [
        *(Binary(name, HERE, f"k8s.io/kubernetes/cmd/{name}", kube_ldflags)
          for name in ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl")),
        Binary("etcd", HERE / "etcd", "go.etcd.io/etcd/server/v3"),
        Binary("kwok", HERE / "kwok", "sigs.k8s.io/kwok/cmd/kwok", kwok_ldflags),
        Binary("kwokctl", HERE / "kwok", "sigs.k8s.io/kwok/cmd/kwokctl", kwok_ldflags),
    ]


def operator_versions() -> dict[str, str]:
    """Each operator binary's release: the version its module requires (no download, no Go needed)."""
    return {name: required_version(OPERATORS / folder, module)
            for name, (folder, module, _package) in OPERATOR_PACKAGES.items()}


def operator_binaries() -> list[Binary]:
    versions = operator_versions()
    return [Binary(name, OPERATORS / folder, package,
                   tuple("-X " + flag.format(version=versions[name], bare=versions[name].lstrip("v"))
                         for flag in OPERATOR_VERSION_LDFLAGS.get(name, ())))
            for name, (folder, _module, package) in OPERATOR_PACKAGES.items()]


def operator_modules() -> list[Path]:
    return sorted({binary.module_dir for binary in operator_binaries()})


def _cache_base() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")) / "modelplane-serving"


def cache_root() -> Path:
    if os.environ.get("MODELPLANE_CONTROL_PLANE_CACHE"):
        return Path(os.environ["MODELPLANE_CONTROL_PLANE_CACHE"])
    return _cache_base() / "control-plane"


def operator_cache_root() -> Path:
    if os.environ.get("MODELPLANE_OPERATOR_CACHE"):
        return Path(os.environ["MODELPLANE_OPERATOR_CACHE"])
    return _cache_base() / "operators"


def _digest(go_version: str, modules: list[Path], todo: list[Binary], *extra: object) -> str:
    """What decides the binaries: the pins (go.mod, go.sum), the Go version and each build command."""
    digest = hashlib.sha256(go_version.encode())
    for module_dir in modules:
        for name in ("go.mod", "go.sum"):
            digest.update((module_dir / name).read_bytes())
    digest.update(repr([(b.name, b.package, b.ldflags) for b in todo]).encode())
    for item in extra:
        digest.update(repr(item).encode())
    return digest.hexdigest()[:16]


def cache_key(go_version: str, todo: list[Binary]) -> str:
    return _digest(go_version, list(MODULES), todo, KWOK_STAGES)


def operator_cache_key(go_version: str, todo: list[Binary]) -> str:
    # The main packages we write ourselves (operators/cert-manager) decide their binaries too.
    sources = [(str(path.relative_to(OPERATORS)), path.read_bytes()) for path in sorted(OPERATORS.rglob("*.go"))]
    return _digest(go_version, operator_modules(), todo, sources)


def _go_build(staging: Path, todo: list[Binary], say: Callable[[str], None]) -> None:
    env = {**os.environ, "CGO_ENABLED": "0", "GOFLAGS": "-mod=readonly"}
    for index, binary in enumerate(todo, 1):
        out = staging / "bin" / binary.name
        if out.exists():
            continue
        say(f"[{index}/{len(todo)}] go build {binary.package}")
        step = time.monotonic()
        cmd = ["go", "build", "-trimpath", "-ldflags", " ".join(("-s", "-w", *binary.ldflags)),
               "-o", str(out) + ".tmp", binary.package]
        proc = subprocess.run(cmd, cwd=binary.module_dir, env=env, check=False)
        if proc.returncode != 0:
            fail(f"go build {binary.package} failed (exit {proc.returncode})")
        os.replace(str(out) + ".tmp", out)
        say(f"[{index}/{len(todo)}] {binary.name}: {time.monotonic() - step:.0f} s")


def _say(quiet: bool) -> Callable[[str], None]:
    return (lambda *_: None) if quiet else (lambda msg: print(msg, file=sys.stderr, flush=True))


def build(target: Path, todo: list[Binary], quiet: bool, what: str,
          finish: Callable[[Path], None] | None = None) -> None:
    """Build ``todo`` into ``target``/bin through a staging folder (``finish`` adds to it), saying what is built."""
    say = _say(quiet)
    staging = target.with_name(target.name + ".partial")
    (staging / "bin").mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    say(f"building {what} into {target}")
    _go_build(staging, todo, say)
    if finish:
        finish(staging)
    os.replace(staging, target)
    say(f"{what} built in {time.monotonic() - started:.0f} s: {target / 'bin'}")


def copy_kwok_stages(staging: Path) -> None:
    kwok_dir = Path(module_info(HERE / "kwok", "sigs.k8s.io/kwok")["Dir"])
    (staging / "stages").mkdir(exist_ok=True)
    for stage in KWOK_STAGES:
        shutil.copyfile(kwok_dir / stage, staging / "stages" / Path(stage).name)


def _ensure(root: Path, target: Path, make: Callable[[], None]) -> Path:
    if not target.is_dir():
        root.mkdir(parents=True, exist_ok=True)
        # One build at a time per machine: parallel test workers all ask for the binaries at start.
        with open(root / ".lock", "w", encoding="utf-8") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not target.is_dir():
                make()
                # Earlier pins' binaries are dead weight (hundreds of MB each): keep the current set only.
                for old in root.iterdir():
                    if old.is_dir() and old != target:
                        shutil.rmtree(old, ignore_errors=True)
    return target


def ensure_built(quiet: bool = False) -> Path:
    """The cache folder holding bin/ and stages/ for the current pins, built first if need be."""
    go_version = check_go()
    todo = binaries()
    target = cache_root() / cache_key(go_version, todo)
    what = "the test control plane (the first time takes long: Kubernetes is large)"
    return _ensure(cache_root(), target, lambda: build(target, todo, quiet, what, copy_kwok_stages))


def ensure_operators_built(quiet: bool = False) -> Path:
    """The cache folder holding the operators' bin/ for the current operator pins, built first if need be."""
    go_version = check_go()
    todo = operator_binaries()
    target = operator_cache_root() / operator_cache_key(go_version, todo)
    return _ensure(operator_cache_root(), target, lambda: build(target, todo, quiet, "the operators"))


def operator_bin_dir(quiet: bool = True) -> Path:
    """The folder holding the operator binaries (OPERATOR_PACKAGES' names), built first if need be."""
    return ensure_operators_built(quiet) / "bin"


def local_replace_version(path: str, version: str) -> str:
    """The released version of a module that ``path``'s go.mod replaces with a folder of its own repository:
    Kubernetes tags its staging modules v0.<minor>.<patch> (v1.36.3 -> v0.36.3); other repositories tag their
    nested modules with the release's own version."""
    return "v0" + version[2:] if path == "k8s.io/kubernetes" else version


def sync_replaces() -> None:
    """Rewrite each SYNCED_REPLACES module's replace block from its dependency's own go.mod: every module that go.mod
    replaces with a local folder, replaced by that module at its released version (never picked by hand)."""
    for module_dir, path in SYNCED_REPLACES.items():
        info = module_info(module_dir, path)
        version = local_replace_version(path, info["Version"])
        upstream = Path(info["GoMod"]).read_text()
        block = re.search(r"^replace \((.*?)^\)", upstream, re.S | re.M)
        if not block:
            fail(f"{path}'s go.mod has no replace block")
        modules = re.findall(r"^\s*(\S+) => \./\S+\s*$", block.group(1), re.M)
        before = (module_dir / "go.mod").read_text()
        new_block = "replace (\n" + "".join(f"\t{m} => {m} {version}\n" for m in modules) + ")\n"
        ours = re.sub(r"^replace \(.*?^\)\n", new_block, before, flags=re.S | re.M) if "replace (" in before \
            else before + "\n" + new_block
        if ours != before:
            # Only a changed module is tidied: tidying another would touch its go.sum, hence its cache key.
            (module_dir / "go.mod").write_text(ours)
            subprocess.run(["go", "mod", "tidy"], cwd=module_dir, check=True)
        print(f"{module_dir / 'go.mod'}: {len(modules)} modules of {path} replaced at {version}"
              + ("" if ours != before else " (unchanged)"))
