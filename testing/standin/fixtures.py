"""pytest fixtures around the stand-in: `cluster`, `fresh_cluster`, `run_playbook` (loaded by tests/conftest.py and
testing/standin/tests/conftest.py)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from . import StandIn
from .auth import BearerCheck

REPO = Path(__file__).resolve().parents[2]
VENV_BIN = REPO / ".venv" / "bin"
# Upstream CRDs the self-tests load (read at test time only, never copied into the repository).
UPSTREAM = REPO.parent / "shared" / "upstream"
RECAP = re.compile(r"^(\S+)\s*:\s*((?:\w+=\d+\s*)+)$")


@dataclass
class PlaybookResult:
    rc: int
    stdout: str
    stderr: str
    recap: dict[str, dict[str, int]]
    requests: dict[str, Any] = field(default_factory=dict)

    @property
    def changed(self) -> int:
        return sum(host.get("changed", 0) for host in self.recap.values())

    @property
    def failed(self) -> int:
        return sum(host.get("failed", 0) + host.get("unreachable", 0) for host in self.recap.values())


def parse_recap(stdout: str) -> dict[str, dict[str, int]]:
    """host -> {ok, changed, unreachable, failed, skipped, rescued, ignored} from the PLAY RECAP block."""
    out: dict[str, dict[str, int]] = {}
    lines = stdout.splitlines()
    start = next((i for i in range(len(lines) - 1, -1, -1) if lines[i].startswith("PLAY RECAP")), None)
    if start is None:
        return out
    for line in lines[start + 1:]:
        m = RECAP.match(line.strip())
        if m:
            out[m.group(1)] = {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", m.group(2))}
    return out


class ClusterHandle:
    """What tests get from the `cluster` fixture."""

    def __init__(self, standin: StandIn, workdir: Path) -> None:
        self.standin = standin
        self.workdir = workdir
        self.kubeconfig = str(standin.write_kubeconfig(workdir / "kubeconfig"))
        self.url = standin.url
        self.controllers = standin.controllers
        self.api = standin.cluster
        cache = workdir / "kube-cache"
        # The kubernetes client caches API discovery in the temporary directory, by server URL. A stand-in's port is
        # reused by later stand-ins (a real cluster's address is not): one temporary directory per stand-in keeps a
        # cache of another stand-in's kinds from claiming kinds this one does not serve.
        tmp = workdir / "client-tmp"
        tmp.mkdir(parents=True, exist_ok=True)
        self.env: dict[str, str] = {
            **os.environ,
            "TMPDIR": str(tmp),
            "KUBECONFIG": self.kubeconfig,
            "K8S_AUTH_KUBECONFIG": self.kubeconfig,
            "KUBECACHEDIR": str(cache),
            # Go's collector at a quarter of its default pace: helm and kubectl run for a second or less, and at the
            # default a converge's 79 helm processes spend about 2 of their 7.6 CPU-seconds collecting (measured:
            # 5.5 s at 400, the largest process 128 MB instead of 76). They do the same work; only their memory is
            # freed later.
            "GOGC": "400",
            # The real helm and kubectl (tools/install_kube_binaries.py) come first.
            "PATH": f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}",
            # helm's own configuration and caches stay in this cluster's workdir, never the user's ~/.config/helm.
            "HELM_CONFIG_HOME": str(workdir / "helm" / "config"),
            "HELM_CACHE_HOME": str(workdir / "helm" / "cache"),
            "HELM_DATA_HOME": str(workdir / "helm" / "data"),
            "ANSIBLE_COLLECTIONS_PATH": str(REPO / ".collections"),
            "ANSIBLE_CONFIG": str(REPO / "ansible.cfg"),
            "ANSIBLE_FORCE_COLOR": "0",
            "ANSIBLE_NOCOLOR": "1",
            "ANSIBLE_LOCAL_TEMP": str(workdir / "ansible-tmp"),
        }

    def helm_spy(self, log: Path) -> dict[str, str]:
        """Environment under which every helm process appends its arguments (a JSON list, without the binary) to
        ``log``, then runs as the real helm: a spy in front of .venv/bin/helm, which it never replaces."""
        spy = self.workdir / "helm-spy"
        spy.mkdir(exist_ok=True)
        script = spy / "helm"
        script.write_text(f"""#!{sys.executable}
import json, os, sys
with open(os.environ["HELM_SPY_LOG"], "a", encoding="utf-8") as log:
    log.write(json.dumps(sys.argv[1:]) + "\\n")
os.execv({str(VENV_BIN / "helm")!r}, [{str(VENV_BIN / "helm")!r}, *sys.argv[1:]])
""")
        script.chmod(0o755)
        return {"PATH": f"{spy}{os.pathsep}{self.env['PATH']}", "HELM_SPY_LOG": str(log)}

    def client(self) -> Any:
        """A kubernetes ApiClient configured for this stand-in."""
        from kubernetes import config

        return config.new_client_from_config(config_file=self.kubeconfig)

    def dynamic(self) -> Any:
        from kubernetes.dynamic import DynamicClient

        return DynamicClient(self.client())

    def stats(self) -> dict[str, Any]:
        return self.standin.stats()

    def reset_stats(self) -> None:
        self.standin.reset_stats()

    def kubectl(self, *args: str, input: str | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
        """Run the real kubectl (.venv/bin/kubectl) against the stand-in."""
        proc = subprocess.run([str(VENV_BIN / "kubectl"), *args], input=input, capture_output=True, text=True,
                              env=self.env, timeout=120, check=False)
        if check and proc.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed ({proc.returncode}):\n{proc.stderr}")
        return proc

    def run_playbook(self, playbook: str | os.PathLike[str], *, extra_vars: dict[str, Any] | None = None,
                     check: bool = False, diff: bool = False, tags: list[str] | str | None = None,
                     env: dict[str, str] | None = None, timeout: float = 600, inventory: str | None = None,
                     forks: int | None = None) -> PlaybookResult:
        """ansible-playbook on localhost, or on ``inventory`` (a path, its hosts' connection their own)."""
        hosts = ["-i", inventory] if inventory else ["-i", "localhost,", "-c", "local"]
        cmd = [str(VENV_BIN / "ansible-playbook"), *hosts,
               str(playbook), "-e", f"ansible_python_interpreter={sys.executable}"]
        if forks:
            cmd += ["--forks", str(forks)]
        if extra_vars:
            varfile = Path(tempfile.mkstemp(prefix="vars-", suffix=".yml", dir=self.workdir)[1])
            varfile.write_text(yaml.safe_dump(extra_vars))
            cmd += ["-e", f"@{varfile}"]
        if check:
            cmd.append("--check")
        if diff:
            cmd.append("--diff")
        if tags:
            cmd += ["--tags", tags if isinstance(tags, str) else ",".join(tags)]
        before = self.stats()
        proc = subprocess.run(cmd, capture_output=True, text=True, env={**self.env, **(env or {})}, cwd=REPO,
                              timeout=timeout, check=False)
        after = self.stats()
        requests = {
            "total": after["total"] - before["total"],
            "verbs": dict(Counter(after["verbs"]) - Counter(before["verbs"])),
            "resources": dict(Counter(after["resources"]) - Counter(before["resources"])),
        }
        return PlaybookResult(proc.returncode, proc.stdout, proc.stderr, parse_recap(proc.stdout), requests)


@contextmanager
def running_cluster(workdir: Path, *, simulate_controllers: bool = True, ready_after: float = 0.0,
                    bearer_token: BearerCheck = None) -> Iterator[ClusterHandle]:
    """A started stand-in; `ready_after` seconds delay workload readiness, `bearer_token` demands a token (see
    StandIn)."""
    standin = StandIn(simulate_controllers=simulate_controllers, ready_after=ready_after,
                      bearer_token=bearer_token).start()
    handle = ClusterHandle(standin, workdir)
    saved = {k: os.environ.get(k) for k in ("KUBECONFIG", "K8S_AUTH_KUBECONFIG")}
    os.environ["KUBECONFIG"] = handle.kubeconfig
    os.environ["K8S_AUTH_KUBECONFIG"] = handle.kubeconfig
    try:
        yield handle
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        standin.stop()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ClusterHandle]:
    """A stand-in API server (with simulated controllers) shared by one test module."""
    with running_cluster(tmp_path_factory.mktemp("cluster")) as handle:
        yield handle


@pytest.fixture
def fresh_cluster(tmp_path: Path) -> Iterator[ClusterHandle]:
    """A stand-in of its own for one test (function scope)."""
    with running_cluster(tmp_path) as handle:
        yield handle


@pytest.fixture
def run_playbook(cluster: ClusterHandle) -> Callable[..., PlaybookResult]:
    """`run_playbook(playbook, *, extra_vars=None, check=False, diff=False, tags=None, env=None)` on `cluster`."""
    return cluster.run_playbook
