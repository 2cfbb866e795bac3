"""The test control plane's binaries, built from Go modules into a cache folder outside the repository, once per
machine (`testing/cluster/build` is the command line).

The pins are the three Go modules beside this file, each its own module so that one's requirements never move
another's: go.mod (k8s.io/kubernetes: kube-apiserver, kube-controller-manager, kube-scheduler, kubectl),
etcd/go.mod (go.etcd.io/etcd/server/v3: etcd) and kwok/go.mod (sigs.k8s.io/kwok: kwok, kwokctl). The cache
folder is keyed by a digest of those go.mod/go.sum files, the Go version and the build commands, so a changed pin
builds anew and an unchanged one is never rebuilt. Standard library only: it runs before the virtualenv exists.
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


def cache_root() -> Path:
    if os.environ.get("MODELPLANE_CONTROL_PLANE_CACHE"):
        return Path(os.environ["MODELPLANE_CONTROL_PLANE_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "modelplane-serving" / "control-plane"


def cache_key(go_version: str, todo: list[Binary]) -> str:
    """What decides the binaries: the pins (go.mod, go.sum), the Go version and each build command."""
    digest = hashlib.sha256(go_version.encode())
    for module_dir in MODULES:
        for name in ("go.mod", "go.sum"):
            digest.update((module_dir / name).read_bytes())
    digest.update(repr([(b.name, b.package, b.ldflags) for b in todo]).encode())
    digest.update(repr(KWOK_STAGES).encode())
    return digest.hexdigest()[:16]


def build(target: Path, todo: list[Binary], quiet: bool) -> None:
    say = (lambda *_: None) if quiet else (lambda msg: print(msg, file=sys.stderr, flush=True))
    staging = target.with_name(target.name + ".partial")
    (staging / "bin").mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "CGO_ENABLED": "0", "GOFLAGS": "-mod=readonly"}
    started = time.monotonic()
    say(f"building the test control plane into {target} (the first time takes long: Kubernetes is large)")
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
    kwok_dir = Path(module_info(HERE / "kwok", "sigs.k8s.io/kwok")["Dir"])
    (staging / "stages").mkdir(exist_ok=True)
    for stage in KWOK_STAGES:
        shutil.copyfile(kwok_dir / stage, staging / "stages" / Path(stage).name)
    os.replace(staging, target)
    say(f"test control plane built in {time.monotonic() - started:.0f} s: {target / 'bin'}")


def ensure_built(quiet: bool = False) -> Path:
    """The cache folder holding bin/ and stages/ for the current pins, built first if need be."""
    go_version = check_go()
    todo = binaries()
    root = cache_root()
    target = root / cache_key(go_version, todo)
    if not target.is_dir():
        root.mkdir(parents=True, exist_ok=True)
        # One build at a time per machine: parallel test workers all ask for the binaries at start.
        with open(root / ".lock", "w", encoding="utf-8") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not target.is_dir():
                build(target, todo, quiet)
                # Earlier pins' binaries are dead weight (about 450 MB each): keep the current set only.
                for old in root.iterdir():
                    if old.is_dir() and old != target:
                        shutil.rmtree(old, ignore_errors=True)
    return target


def sync_replaces() -> None:
    """Rewrite go.mod's replace block from k8s.io/kubernetes's own: each staging module at v0.<minor>.<patch>."""
    kube = module_info(HERE, "k8s.io/kubernetes")
    staging_version = "v0" + kube["Version"][2:]
    upstream = Path(kube["GoMod"]).read_text()
    block = re.search(r"^replace \((.*?)^\)", upstream, re.S | re.M)
    if not block:
        fail("k8s.io/kubernetes's go.mod has no replace block")
    modules = re.findall(r"^\s*(\S+) => \./staging/src/\S+\s*$", block.group(1), re.M)
    ours = (HERE / "go.mod").read_text()
    new_block = "replace (\n" + "".join(f"\t{m} => {m} {staging_version}\n" for m in modules) + ")\n"
    ours = re.sub(r"^replace \(.*?^\)\n", new_block, ours, flags=re.S | re.M) if "replace (" in ours \
        else ours + "\n" + new_block
    (HERE / "go.mod").write_text(ours)
    subprocess.run(["go", "mod", "tidy"], cwd=HERE, check=True)
    print(f"go.mod: {len(modules)} staging modules replaced at {staging_version}")
