"""One real Kubernetes control plane with simulated nodes: kwokctl's binary runtime over our own binaries.

kube-apiserver, kube-controller-manager, kube-scheduler and etcd run as real processes on 127.0.0.1; kwok plays
the kubelets of fake nodes (pods become Running and Ready through kwok's stages, Job pods Succeeded). Nothing is
downloaded: every binary comes from `binaries.ensure_built()`. Standard library only (plus the operator double,
started with the caller's Python when asked).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from . import binaries, programs

HERE = Path(__file__).resolve().parent
KWOK_NODE_ANNOTATION = "kwok.x-k8s.io/node"
# What NFD's worker and the NVIDIA stack would put on a GPU node, and the taint GPU pools carry (our nfd role
# tolerates it; the DRA driver's kubelet plugin requires the pci-10de label).
GPU_LABELS = {
    "feature.node.kubernetes.io/pci-10de.present": "true",
    "nvidia.com/gpu.present": "true",
    "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
}
GPU_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
GPUS_PER_NODE = "8"
# The audit policy that records every request (metadata only: no bodies, so no Secret data) when asked.
AUDIT_POLICY = "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n"


class ClusterError(RuntimeError):
    """The cluster did not come up; the message says what failed and where its logs are."""


@dataclass
class Options:
    nodes: int = 3
    gpu_nodes: int = 2
    ready_after: float = 0.0
    runtime_config: str = ""
    audit: bool = False
    operator_double: bool = True
    # Extra kube-apiserver flags (name without dashes -> value), e.g. a token authentication webhook's.
    apiserver_args: dict[str, str] = field(default_factory=dict)
    # The pod runtime (runtime.py): off by choice, or when it has no program to run (no operator binary built,
    # no test program): then the cluster is kwok's simulation alone, as before the runtime existed.
    runtime: bool = True
    # Test programs: image repository -> command line, run like the table's programs (programs.py).
    programs: dict[str, str] = field(default_factory=dict)
    name: str = field(default_factory=lambda: f"mp-{os.getpid()}-{int(time.time() * 1000) % 100000}")


def node_manifest(index: int, gpu: bool) -> dict:
    name = f"kwok-gpu-{index}" if gpu else f"kwok-node-{index}"
    capacity = {"cpu": "32", "memory": "256Gi", "pods": "110", "ephemeral-storage": "1Ti"}
    if gpu:
        capacity["nvidia.com/gpu"] = GPUS_PER_NODE
    labels = {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
              "type": "kwok", **(GPU_LABELS if gpu else {})}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels, "annotations": {KWOK_NODE_ANNOTATION: "fake"}},
        "spec": {"taints": [GPU_TAINT] if gpu else []},
        "status": {"capacity": capacity, "allocatable": capacity},
    }


def runtime_selector(repositories: list[str]) -> str:
    """A kwok Stage matchExpression (gojq) that leaves out the pods the pod runtime runs: those with a container
    or init container of one of ``repositories``. A query that fails matches, so it must not fail on a pod without
    init containers; the regular expression needs no escapes (dots as ``[.]``)."""
    spellings = set(repositories)
    for repo in repositories:  # Docker Hub's may be written without docker.io/ (and library/): programs.repository
        for implicit in ("docker.io/library/", "docker.io/"):
            if repo.startswith(implicit):
                spellings.add(repo.removeprefix(implicit))
    alternatives = "|".join(repo.replace(".", "[.]") for repo in sorted(spellings))
    query = (f'[.spec.containers[].image, (.spec.initContainers // [])[].image] '
             f'| any(test("^({alternatives})([:@]|$)"))')
    return f"    - key: '{query}'\n      operator: 'NotIn'\n      values: ['true']\n"


def stages(stage_dir: Path, ready_after: float, runtime_images: list[str] | None = None) -> list[str]:
    """kwok's own default stages; with ``ready_after``, pods turn Ready (Job pods Succeeded) that long after; with
    ``runtime_images`` (image repositories), the pod stages leave out the pods the pod runtime runs."""
    docs = []
    for path in sorted(stage_dir.glob("*.yaml")):
        text = path.read_text()
        if ready_after > 0 and path.name in ("pod-ready.yaml", "pod-complete.yaml"):
            # Stage.spec.delay: the transition happens this long after the stage first matches the pod.
            delay = f"\nspec:\n  delay:\n    durationMilliseconds: {int(ready_after * 1000)}\n"
            text = text.replace("\nspec:\n", delay, 1)
        if runtime_images and path.name.startswith("pod-"):
            text = text.replace("    matchExpressions:\n", "    matchExpressions:\n" + runtime_selector(runtime_images),
                                1)
        docs.append(text)
    return docs


def operators_bin_dir() -> Path | None:
    """The folder of the operators' binaries (testing/cluster/build), if built: $MODELPLANE_OPERATORS_BIN, else
    `binaries.operators_bin_dir()` where the build provides it."""
    if os.environ.get("MODELPLANE_OPERATORS_BIN"):
        return Path(os.environ["MODELPLANE_OPERATORS_BIN"])
    find = getattr(binaries, "operators_bin_dir", None)
    return find() if find is not None else None


def egress_config(socket_path: Path) -> str:
    """kube-apiserver's EgressSelectorConfiguration: its `cluster` traffic (webhooks, aggregated APIs, nodes)
    through the pod runtime's HTTP CONNECT proxy on a Unix socket."""
    return json.dumps({"apiVersion": "apiserver.k8s.io/v1beta1", "kind": "EgressSelectorConfiguration",
                       "egressSelections": [{"name": "cluster", "connection": {
                           "proxyProtocol": "HTTPConnect", "transport": {"uds": {"udsName": str(socket_path)}}}}]})


def kwokctl_config(bin_dir: Path, stage_dir: Path, workdir: Path, options: Options,
                   runtime_images: list[str] | None = None) -> str:
    opts = {
        "runtime": "binary",
        "bindAddress": "127.0.0.1",
        "kubeApiserverBinary": str(bin_dir / "kube-apiserver"),
        "kubeControllerManagerBinary": str(bin_dir / "kube-controller-manager"),
        "kubeSchedulerBinary": str(bin_dir / "kube-scheduler"),
        "kubectlBinary": str(bin_dir / "kubectl"),
        "kwokControllerBinary": str(bin_dir / "kwok"),
        "etcdBinary": str(bin_dir / "etcd"),
        "cacheDir": str(workdir / "cache"),
        "quietPull": True,
        "disableQPSLimits": True,
    }
    if options.runtime_config:
        opts["kubeRuntimeConfig"] = options.runtime_config
    if options.audit:
        policy = workdir / "audit-policy.yaml"
        policy.write_text(AUDIT_POLICY)
        opts["kubeAuditPolicy"] = str(policy)
    patches = [{"name": "kube-apiserver",
                "extraArgs": [{"key": key, "value": value} for key, value in options.apiserver_args.items()]}]
    head = json.dumps({"apiVersion": "config.kwok.x-k8s.io/v1alpha1", "kind": "KwokctlConfiguration",
                       "options": opts, "componentsPatches": patches if options.apiserver_args else []})
    return "\n---\n".join([head, *stages(stage_dir, options.ready_after, runtime_images)]) + "\n"


class KwokCluster:
    """``start()`` brings the cluster up and returns its flattened kubeconfig text; ``stop()`` removes it all."""

    def __init__(self, options: Options, workdir: Path | None = None, log: Callable[[str], None] = print) -> None:
        self.options = options
        self.log = log
        self.workdir = workdir or Path(tempfile.mkdtemp(prefix="modelplane-kwok-"))
        self.env = {**os.environ, "KWOK_WORKDIR": str(self.workdir / "kwok"), "GOGC": "400"}
        self.env.pop("KUBECONFIG", None)
        self.bin_dir: Path | None = None
        self.double: subprocess.Popen | None = None
        self.runtime: subprocess.Popen | None = None
        self.kubeconfig_path = self.workdir / "kubeconfig"
        self.catalog = programs.Catalog()
        # The egress socket's path must fit a sockaddr_un (108 bytes): a short folder of its own, not the workdir.
        self.socket_dir: Path | None = None

    # -- helpers -----------------------------------------------------------------------------------------------
    def _kwokctl(self, *args: str, check: bool = True, timeout: float = 300) -> subprocess.CompletedProcess:
        proc = subprocess.run([str(self.bin_dir / "kwokctl"), *args, "--name", self.options.name],
                              env=self.env, capture_output=True, text=True, timeout=timeout, check=False)
        if check and proc.returncode != 0:
            raise ClusterError(f"kwokctl {args[0]} {args[1] if len(args) > 1 else ''} failed "
                               f"({proc.returncode}): {proc.stderr.strip()[-2000:]}")
        return proc

    def kubectl(self, *args: str, input: str | None = None, timeout: float = 120) -> str:
        try:
            proc = subprocess.run([str(self.bin_dir / "kubectl"), "--kubeconfig", str(self.kubeconfig_path), *args],
                                  input=input, env=self.env, capture_output=True, text=True, timeout=timeout,
                                  check=False)
        except subprocess.TimeoutExpired:
            raise ClusterError(f"kubectl {' '.join(args)} took more than {timeout:.0f} s") from None
        if proc.returncode != 0:
            raise ClusterError(f"kubectl {' '.join(args)} failed: {proc.stderr.strip()}")
        return proc.stdout

    @property
    def cluster_dir(self) -> Path:
        return self.workdir / "kwok" / "clusters" / self.options.name

    # -- lifecycle ---------------------------------------------------------------------------------------------
    def start(self) -> str:
        built = binaries.ensure_built(quiet=False)
        self.bin_dir = built / "bin"
        if self.options.runtime:
            catalog = programs.catalog(operators_bin_dir(), self.options.programs)
            if any(not runnable.stand_in for runnable in catalog.runnables.values()):
                self.catalog = catalog
                self._start_runtime()
        config = self.workdir / "kwokctl.yaml"
        config.write_text(kwokctl_config(self.bin_dir, built / "stages", self.workdir, self.options,
                                         sorted(self.catalog.runnables)))
        started = time.monotonic()
        # kwokctl picks each component's port by trying them in turn from the same starting point: two clusters
        # created at once pick the same ports and one of them fails to bind. One creation at a time per machine;
        # a created cluster's ports are taken, so the next creation skips them.
        with open(binaries.cache_root() / ".create.lock", "w", encoding="utf-8") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            self._kwokctl("create", "cluster", "--config", str(config), "--kubeconfig", "", "--wait", "120s",
                          timeout=300)
        kubeconfig = self._kwokctl("get", "kubeconfig").stdout
        fd = os.open(self.kubeconfig_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write(kubeconfig)
        kubeconfig = self.kubectl("config", "view", "--flatten", "--raw")
        fd = os.open(self.kubeconfig_path, os.O_WRONLY | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write(kubeconfig)
        if self.runtime is not None:
            tmp = self.workdir / "runtime.kubeconfig.tmp"
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w") as handle:
                handle.write(kubeconfig)
            os.replace(tmp, self.workdir / "runtime.kubeconfig")
        self._wait_ready()
        nodes = [node_manifest(i, gpu=i > self.options.nodes - self.options.gpu_nodes)
                 for i in range(1, self.options.nodes + 1)]
        self.kubectl("apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": nodes}))
        # kwok marks the nodes Ready within a second on an idle machine; a loaded one (a fleet starting) takes longer.
        self.kubectl("wait", "--for=condition=Ready", "node", "--all", "--timeout=300s", timeout=330)
        if self.options.operator_double:
            self._start_double()
        self.log(f"kwok cluster {self.options.name} up in {time.monotonic() - started:.1f} s: "
                 f"{self.server()} ({self.options.nodes} nodes, {self.options.gpu_nodes} with GPUs)")
        return kubeconfig

    def server(self) -> str:
        match = re.search(r"server:\s*(\S+)", self.kubeconfig_path.read_text())
        return match.group(1) if match else "?"

    def _wait_ready(self, timeout: float = 180) -> None:
        deadline = time.monotonic() + timeout
        while True:
            proc = subprocess.run([str(self.bin_dir / "kubectl"), "--kubeconfig", str(self.kubeconfig_path),
                                   "get", "--raw", self._readyz()], env=self.env, capture_output=True, text=True,
                                  check=False)
            if proc.returncode == 0:
                return
            if time.monotonic() > deadline:
                raise ClusterError(f"kube-apiserver not ready after {timeout:.0f} s: {proc.stderr.strip()}")
            time.sleep(0.3)

    def _readyz(self) -> str:
        """With APIs switched off, the informers of the API server's built-in admission for them (DRA's, which
        cannot be disabled since it went GA) never sync: readiness is then everything else."""
        return "/readyz?exclude=informer-sync" if self.options.runtime_config else "/readyz"

    def _start_double(self) -> None:
        script = HERE / "operator_double.py"
        log = open(self.workdir / "operator-double.log", "ab")  # noqa: SIM115  (closed with the process)
        self.double = subprocess.Popen([sys.executable, str(script), "--kubeconfig", str(self.kubeconfig_path)],
                                       stdout=log, stderr=subprocess.STDOUT, env=self.env)

    def _start_runtime(self) -> None:
        """The pod runtime and its egress proxy, before kube-apiserver (which is told the proxy's socket); it
        waits for its kubeconfig. Its own session: on stop, its process group is what is left of it."""
        self.socket_dir = Path(tempfile.mkdtemp(prefix="mp-egress-", dir="/tmp"))
        sock = self.socket_dir / "egress.sock"
        (self.workdir / "egress-selector.yaml").write_text(egress_config(sock))
        self.options.apiserver_args = {**self.options.apiserver_args,
                                       "egress-selector-config-file": str(self.workdir / "egress-selector.yaml")}
        cmd = [sys.executable, str(HERE / "runtime.py"), "--kubeconfig", str(self.workdir / "runtime.kubeconfig"),
               "--state", str(self.workdir / "runtime"), "--egress-socket", str(sock)]
        if operators_bin_dir() is not None:
            cmd += ["--operators-bin", str(operators_bin_dir())]
        for image, command in self.options.programs.items():
            cmd += ["--program", f"{image}={command}"]
        log = open(self.workdir / "pod-runtime.log", "ab")  # noqa: SIM115  (closed with the process)
        self.runtime = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=self.env,
                                        start_new_session=True)
        deadline = time.monotonic() + 30
        while not sock.exists():
            if self.runtime.poll() is not None or time.monotonic() > deadline:
                raise ClusterError(f"the pod runtime did not start: see {self.workdir / 'pod-runtime.log'}")
            time.sleep(0.05)

    def _stop_runtime(self) -> None:
        """SIGTERM (it stops its pods' processes), then SIGKILL to whatever of it is left: its process group and
        every process it recorded."""
        if self.runtime is None:
            return
        if self.runtime.poll() is None:
            self.runtime.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.runtime.wait(20)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.runtime.pid, signal.SIGKILL)
        self.runtime.wait()
        pids = []
        with contextlib.suppress(OSError):
            pids = [int(line) for line in (self.workdir / "runtime" / "pids").read_text().split()]
        # A recorded pid whose process ended long ago may be another's now: only those still in its session.
        pids = [pid for pid in pids if _session(pid) == self.runtime.pid]
        _kill(pids)
        _wait_gone(pids, timeout=10)
        if self.socket_dir is not None:
            shutil.rmtree(self.socket_dir, ignore_errors=True)

    def stop(self) -> None:
        self._stop_runtime()
        if self.double and self.double.poll() is None:
            self.double.terminate()
            try:
                self.double.wait(10)
            except subprocess.TimeoutExpired:
                self.double.kill()
        pids = self._recorded_pids()
        if self.bin_dir is not None and self.cluster_dir.exists():
            # OSError: the binaries were rebuilt under another key meanwhile; the pid files still say what to stop.
            with contextlib.suppress(subprocess.TimeoutExpired, OSError):
                self._kwokctl("delete", "cluster", check=False, timeout=120)
        if self.cluster_dir.exists():
            # kwokctl delete did not finish (it removes the directory last): stop what it recorded ourselves.
            _kill(pids)
        # Even what kwokctl delete stopped may still be dying: it sends SIGKILL and cannot wait for a process that is
        # not its child. Wait here until each has exited, so that nothing of this cluster outlives stop().
        _wait_gone(pids, timeout=30)
        shutil.rmtree(self.workdir, ignore_errors=True)

    def _recorded_pids(self) -> list[int]:
        """Every process kwokctl started for this cluster that still runs, as its pid files say. A pid file outlives
        its process (a test kills kube-apiserver), and pids are reused within minutes of a long test run (pid_max is
        often 32768): a process counts only while its command line names this cluster's directory, as each of
        kwokctl's does (its binary and flags are in there)."""
        pids = []
        for pid_file in (self.cluster_dir / "pids").glob("*.pid") if self.cluster_dir.exists() else ():
            with contextlib.suppress(ValueError, OSError):
                pid = int(pid_file.read_text().strip())
                if str(self.cluster_dir).encode() in Path(f"/proc/{pid}/cmdline").read_bytes():
                    pids.append(pid)
        return pids


def _kill(pids: list[int]) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)


def _wait_gone(pids: list[int], timeout: float) -> None:
    """Until none of ``pids`` is _alive, or ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while any(map(_alive, pids)) and time.monotonic() < deadline:
        time.sleep(0.05)


def _session(pid: int) -> int | None:
    """The session id of a process, None if it is gone."""
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[3])
    except (OSError, IndexError, ValueError):
        return None


def _alive(pid: int) -> bool:
    """Running, that is: neither gone nor a zombie waiting for a parent that does not reap (PID 1 in a container)."""
    try:
        return "zombie" not in Path(f"/proc/{pid}/status").read_text().lower()
    except OSError:
        return False
