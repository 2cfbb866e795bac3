"""pytest fixtures around the real test control plane (`testing/cluster/run`): `cluster`, `fresh_cluster`,
`run_playbook`, and `running_cluster(...)` for tests that need options (a readiness delay, APIs switched off).

The fixtures start `testing/cluster/run` (the same command the Molecule scenario and `make demo` use) and wait
for its kubeconfig. A handle offers what tests need from a cluster: the kubeconfig and an environment for the
real clients, `kubectl`, `run_playbook` (with the API requests of that run, read from kube-apiserver's audit
log), `deny_writes` (a ValidatingAdmissionPolicy that refuses writes) and `stop_apiserver` (a dead cluster).
"""

from __future__ import annotations

import base64
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
VENV_BIN = REPO / ".venv" / "bin"
RUN = Path(__file__).resolve().parent / "run"
RECAP = re.compile(r"^(\S+)\s*:\s*((?:\w+=\d+\s*)+)$")
WRITE_VERBS = frozenset({"create", "update", "patch", "delete", "deletecollection"})
# Requests that are not the test's: the control plane's own components, kwok, the operator double and the pod
# runtime (runtime.py; the programs it runs authenticate as their ServiceAccounts: see is_completed_request).
SYSTEM_AGENTS = ("kube-controller-manager", "kube-scheduler", "kube-apiserver", "kwok", "operator-double",
                 "pod-runtime")
START_TIMEOUT = float(os.environ.get("MODELPLANE_CLUSTER_START_TIMEOUT", "900"))


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


def is_completed_request(event: dict[str, Any], everyone: bool = False) -> bool:
    """A completed request on a resource (not discovery, /version, /readyz), by the test's clients unless
    ``everyone`` (then the control plane's, the operator double's and the pods' too: a pod's program authenticates
    as its ServiceAccount)."""
    return (event.get("stage") == "ResponseComplete" and bool((event.get("objectRef") or {}).get("resource"))
            and (everyone or not (str(event.get("userAgent", "")).startswith(SYSTEM_AGENTS)
                                  or str((event.get("user") or {}).get("username", "")).startswith(
                                      "system:serviceaccount:"))))


# The name of the ConfigMap `audit_events` reads (and never finds) to know when the log has caught up.
AUDIT_MARKER = "audit-mark-"


def count_requests(events: list[dict[str, Any]]) -> dict[str, Any]:
    """The test's clients' requests among audit events: `total`, `verbs`, `resources` ("verb resource[.group]")."""
    verbs: Counter[str] = Counter()
    resources: Counter[str] = Counter()
    for event in filter(is_completed_request, events):
        ref = event["objectRef"]
        verbs[event["verb"]] += 1
        resource = ref["resource"] + (f".{ref['apiGroup']}" if ref.get("apiGroup") else "")
        resources[f"{event['verb']} {resource}"] += 1
    return {"total": sum(verbs.values()), "verbs": dict(verbs), "resources": dict(resources)}


# The Lease a converge holds on its target (docs/interrupted-runs.md): taking, renewing and releasing it is the run's
# coordination with other runs, not a change of the stack, so the writes the tests judge leave it out.
RUN_LEASE = "leases.coordination.k8s.io"


def writes(requests: dict[str, Any]) -> dict[str, int]:
    """The write verbs among `count_requests`' requests, but for the run's Lease."""
    counted: Counter[str] = Counter()
    for request, n in requests.get("resources", {}).items():
        verb, resource = request.split(" ", 1)
        if verb in WRITE_VERBS and resource != RUN_LEASE:
            counted[verb] += n
    return dict(counted)


def wait_for(predicate: Callable[[], Any], timeout: float = 60.0, interval: float = 0.3) -> Any:
    """``predicate()``'s first truthy value, polled every ``interval`` seconds; its last value after ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(interval)


class ClusterHandle:
    """What tests get from the fixtures: one real cluster served by `testing/cluster/run`."""

    def __init__(self, kubeconfig: Path, workdir: Path, cluster_workdir: Path | None = None,
                 process: subprocess.Popen | None = None) -> None:
        self.workdir = workdir
        self.kubeconfig = str(kubeconfig)
        self.process = process
        self.cluster_workdir = cluster_workdir
        self._port_holder: socket.socket | None = None
        config = yaml.safe_load(kubeconfig.read_text())
        self.url = config["clusters"][0]["cluster"]["server"]
        # The cluster's CA, for clients given a host rather than a kubeconfig (K8S_AUTH_HOST, K8S_AUTH_SSL_CA_CERT).
        self.ca_file = str(workdir / "cluster-ca.crt")
        Path(self.ca_file).write_bytes(base64.b64decode(config["clusters"][0]["cluster"]["certificate-authority-data"]))
        tmp = workdir / "client-tmp"
        tmp.mkdir(parents=True, exist_ok=True)
        self._marker_api: Any = None
        self.env: dict[str, str] = {
            **os.environ,
            "TMPDIR": str(tmp),
            "KUBECONFIG": self.kubeconfig,
            "K8S_AUTH_KUBECONFIG": self.kubeconfig,
            "KUBECACHEDIR": str(workdir / "kube-cache"),
            # helm and kubectl run for a second or less: their collector at a quarter of its default pace.
            "GOGC": "400",
            # The real helm and kubectl (tools/install_kube_binaries.py) come first.
            "PATH": f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}",
            # helm's configuration and caches stay in this cluster's workdir, never the user's ~/.config/helm.
            "HELM_CONFIG_HOME": str(workdir / "helm" / "config"),
            "HELM_CACHE_HOME": str(workdir / "helm" / "cache"),
            "HELM_DATA_HOME": str(workdir / "helm" / "data"),
            "ANSIBLE_COLLECTIONS_PATH": str(REPO / ".collections"),
            "ANSIBLE_CONFIG": str(REPO / "ansible.cfg"),
            "ANSIBLE_FORCE_COLOR": "0",
            "ANSIBLE_NOCOLOR": "1",
            "ANSIBLE_LOCAL_TEMP": str(workdir / "ansible-tmp"),
        }

    # -- clients ---------------------------------------------------------------------------------------------
    def client(self) -> Any:
        """A kubernetes ApiClient for this cluster."""
        from kubernetes import config

        return config.new_client_from_config(config_file=self.kubeconfig)

    def dynamic(self) -> Any:
        from kubernetes.dynamic import DynamicClient

        return DynamicClient(self.client())

    def kubectl(self, *args: str, input: str | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
        """Run the real kubectl (.venv/bin/kubectl) against the cluster."""
        proc = subprocess.run([str(VENV_BIN / "kubectl"), *args], input=input, capture_output=True, text=True,
                              env=self.env, timeout=120, check=False)
        if check and proc.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed ({proc.returncode}):\n{proc.stderr}")
        return proc

    def wait_established(self, *crds: str, timeout: float = 60.0) -> None:
        """Wait until each CustomResourceDefinition (by name) is Established, as the API server serves its kind only
        then. Not ``kubectl wait --for=condition=Established``: a CRD created a moment ago has ``status.conditions:
        null`` until the establishing controller writes it, and kubectl wait stops at that with an accessor error
        instead of waiting (CI met it on a loaded runner)."""
        query = '{.status.conditions[?(@.type=="Established")].status}'
        for crd in crds:
            if not wait_for(lambda crd=crd: self.kubectl("get", "customresourcedefinition", crd, "-o",
                                                         f"jsonpath={query}", check=False).stdout.strip() == "True",
                            timeout=timeout):
                raise AssertionError(f"the CRD {crd} was not Established within {timeout:g} s")

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

    # -- what the API server saw -----------------------------------------------------------------------------
    @property
    def audit_log(self) -> Path | None:
        if self.cluster_workdir is None:
            return None
        found = list(self.cluster_workdir.glob("kwok/clusters/*/logs/audit.log"))
        return found[0] if found else None

    def audit_mark(self) -> int:
        log = self.audit_log
        return log.stat().st_size if log and log.exists() else 0

    def audit_events(self, mark: int, *, everyone: bool = False, timeout: float = 10.0) -> list[dict[str, Any]]:
        """The completed requests logged since ``mark`` (`audit_mark()`), in the order they completed: the test's
        clients' only, or with ``everyone`` the control plane's and the operator double's too (see
        `is_completed_request`). Read line by line, keeping only those: the log of a long-lived cluster is large."""
        log = self.audit_log
        if log is None:
            return []
        self._await_audit(log, timeout)
        events = []
        with open(log, "rb") as handle:
            handle.seek(mark)
            for line in handle:
                if not line.endswith(b"\n"):  # a line still being written is left out
                    break
                event = json.loads(line)
                if is_completed_request(event, everyone) and not str(
                        (event.get("objectRef") or {}).get("name", "")).startswith(AUDIT_MARKER):
                    events.append(event)
        return sorted(events, key=lambda event: event["stageTimestamp"])

    def _await_audit(self, log: Path, timeout: float) -> None:
        """Wait until the requests made so far are in the log. The log backend writes an event after the response:
        a client that has exited may not be logged yet, and the control plane logs without end (kwok's leases), so
        a quiet log never comes. One request of ours, made now, is logged after every earlier one completed: wait
        for it. A server that no longer answers logs nothing more."""
        from kubernetes import client

        name = f"{AUDIT_MARKER}{uuid.uuid4().hex[:8]}"
        if self._marker_api is None:
            self._marker_api = client.CoreV1Api(self.client())
        try:
            self._marker_api.read_namespaced_config_map(name, "default", _request_timeout=5)
        except client.ApiException:
            pass  # 404: it is logged all the same
        except Exception:  # the server is gone (stop_apiserver): nothing more will be logged
            return
        wanted, deadline = name.encode(), time.monotonic() + timeout
        with open(log, "rb") as handle:
            handle.seek(max(0, log.stat().st_size - (1 << 20)))
            tail = b""
            while True:
                tail = tail[-len(wanted):] + handle.read()
                if wanted in tail:
                    return
                if time.monotonic() > deadline:
                    raise AssertionError(f"the audit log did not record the request {name} within {timeout} s")
                time.sleep(0.05)

    def requests_since(self, mark: int) -> dict[str, Any]:
        """The test's clients' requests logged since ``mark`` (see `count_requests`)."""
        return count_requests(self.audit_events(mark)) if self.audit_log else {}

    # -- failures made with real mechanisms ------------------------------------------------------------------
    def deny_writes(self, kind: str, namespace: str, name_prefix: str) -> Callable[[], None]:
        """Refuse creates and updates of ``kind`` objects in ``namespace`` whose name starts with ``name_prefix``,
        with a ValidatingAdmissionPolicy (and its binding) named in the refusal; returns the function that lifts
        it. The way tests make a helm install or an object apply fail."""
        api_version, plural = self._resource_of(kind)
        group = api_version.rpartition("/")[0]
        name = f"deny-{plural}-{uuid.uuid4().hex[:6]}"
        policy = {
            "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
            "metadata": {"name": name},
            "spec": {
                "failurePolicy": "Fail",
                "matchConstraints": {"resourceRules": [{
                    "apiGroups": [group], "apiVersions": ["*"], "operations": ["CREATE", "UPDATE"],
                    "resources": [plural]}]},
                "validations": [{
                    "expression": f"!object.metadata.name.startsWith({json.dumps(name_prefix)}) || "
                                  f"object.metadata.namespace != {json.dumps(namespace)}",
                    "message": f"writes of {kind} {namespace}/{name_prefix}* are refused by the test"}],
            },
        }
        binding = {
            "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
            "metadata": {"name": name},
            "spec": {"policyName": name, "validationActions": ["Deny"]},
        }
        self.kubectl("apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List",
                                                             "items": [policy, binding]}))
        self._wait_policy_active(kind, namespace, name_prefix, api_version)

        def allow() -> None:
            self.kubectl("delete", "validatingadmissionpolicybinding,validatingadmissionpolicy", name,
                         "--ignore-not-found", "--wait")
            time.sleep(1.5)  # the API server's policy cache follows deletes within about a second

        return allow

    def _resource_of(self, kind: str) -> tuple[str, str]:
        lines = self.kubectl("api-resources", "--no-headers", "-o", "wide").stdout.splitlines()
        for line in lines:
            cols = line.split()
            if kind in cols:
                i = cols.index(kind)
                return cols[i - 2], cols[0]
        raise AssertionError(f"the cluster serves no kind {kind}")

    def _wait_policy_active(self, kind: str, namespace: str, prefix: str, api_version: str) -> None:
        """The API server loads new policies asynchronously: probe with a dry-run create until it refuses."""
        probe = {"apiVersion": api_version, "kind": kind,
                 "metadata": {"name": f"{prefix}-policy-probe", "namespace": namespace}}
        if self.kubectl("get", "namespace", namespace, check=False).returncode != 0:
            time.sleep(2)
            return
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            proc = self.kubectl("create", "--dry-run=server", "-f", "-", input=json.dumps(probe), check=False)
            if "refused by the test" in proc.stderr:
                return
            time.sleep(0.3)

    def stop_apiserver(self) -> None:
        """Kill kube-apiserver: the cluster is dead from here on (the fixture still cleans up). Its port stays
        bound, not listening, so that every connection is refused rather than reaching whatever server of a later
        cluster picks the freed port."""
        assert self.cluster_workdir is not None
        for pid_file in self.cluster_workdir.glob("kwok/clusters/*/pids/kube-apiserver.pid"):
            os.kill(int(pid_file.read_text().strip()), signal.SIGKILL)
        port = int(self.url.rsplit(":", 1)[1])
        deadline = time.monotonic() + 10
        while True:
            holder = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            # SO_REUSEADDR to bind past the dead server's connections in TIME_WAIT, then off: a socket bound with it
            # on lets every later SO_REUSEADDR socket (Go's listeners, kwokctl's free-port probe) bind and listen
            # on the same port, and connections would reach that server instead of being refused.
            holder.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                holder.bind(("127.0.0.1", port))
                holder.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 0)
                self._port_holder = holder
                return
            except OSError:
                holder.close()
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)

    # -- playbooks --------------------------------------------------------------------------------------------
    def run_playbook(self, playbook: str | os.PathLike[str], *, extra_vars: dict[str, Any] | None = None,
                     check: bool = False, diff: bool = False, tags: list[str] | str | None = None,
                     env: dict[str, str] | None = None, timeout: float = 900, inventory: str | None = None,
                     forks: int | None = None, limit: str | None = None) -> PlaybookResult:
        """ansible-playbook on localhost, or on ``inventory`` (a path, its hosts' connection their own); ``limit``
        is --limit."""
        hosts = ["-i", inventory] if inventory else ["-i", "localhost,", "-c", "local"]
        cmd = [str(VENV_BIN / "ansible-playbook"), *hosts,
               str(playbook), "-e", f"ansible_python_interpreter={sys.executable}"]
        if forks:
            cmd += ["--forks", str(forks)]
        if limit:
            cmd += ["--limit", limit]
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
        mark = self.audit_mark()
        proc = subprocess.run(cmd, capture_output=True, text=True, env={**self.env, **(env or {})}, cwd=REPO,
                              timeout=timeout, check=False)
        return PlaybookResult(proc.returncode, proc.stdout, proc.stderr, parse_recap(proc.stdout),
                              self.requests_since(mark))


def start_cluster(workdir: Path, *, ready_after: float = 0.0, nodes: int | None = None,
                  gpu_nodes: int | None = None, runtime_config: str = "", audit: bool = True,
                  operator_double: bool = True, apiserver_args: dict[str, str] | None = None,
                  programs: dict[str, str] | None = None, runtime: bool = True) -> ClusterHandle:
    """Start `testing/cluster/run` in the background and return its handle once its kubeconfig is written."""
    workdir.mkdir(parents=True, exist_ok=True)
    kubeconfig = workdir / "kubeconfig"
    cmd = [sys.executable, str(RUN), "--kubeconfig", str(kubeconfig), "--ready-after", str(ready_after),
           "--stop-with-parent"]
    cmd += ["--nodes", str(nodes)] if nodes is not None else []
    cmd += ["--gpu-nodes", str(gpu_nodes)] if gpu_nodes is not None else []
    cmd += ["--runtime-config", runtime_config] if runtime_config else []
    cmd += ["--audit"] if audit else []
    for name, value in (apiserver_args or {}).items():
        cmd += ["--apiserver-arg", f"{name}={value}"]
    cmd += [] if operator_double else ["--no-operator-double"]
    cmd += [] if runtime else ["--no-runtime"]
    for image, command in (programs or {}).items():
        cmd += ["--program", f"{image}={command}"]
    log_path = workdir / "cluster-run.log"
    log = open(log_path, "w", encoding="utf-8")  # noqa: SIM115  (closed when the process ends)
    env = {**os.environ, "TMPDIR": str(workdir)}
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    deadline = time.monotonic() + START_TIMEOUT
    while not kubeconfig.exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            stop_cluster(proc)
            raise RuntimeError(f"testing/cluster/run did not start a cluster:\n{log_path.read_text()[-3000:]}")
        time.sleep(0.2)
    match = re.search(r"workdir (\S+)", log_path.read_text())
    return ClusterHandle(kubeconfig, workdir, Path(match.group(1)) if match else None, proc)


def stop_cluster(proc: subprocess.Popen | None) -> None:
    if proc is None or proc.poll() is not None:
        return
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(120)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


@contextmanager
def running_cluster(workdir: Path, **options: Any) -> Iterator[ClusterHandle]:
    """A started cluster for the duration of the block; options as `start_cluster`. Sets KUBECONFIG meanwhile."""
    handle = start_cluster(workdir, **options)
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
        stop_cluster(handle.process)
        if handle._port_holder is not None:
            handle._port_holder.close()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ClusterHandle]:
    """A real cluster (with the operator double) shared by one test module."""
    with running_cluster(tmp_path_factory.mktemp("cluster")) as handle:
        yield handle


@pytest.fixture
def fresh_cluster(tmp_path: Path) -> Iterator[ClusterHandle]:
    """A real cluster of its own for one test (function scope)."""
    with running_cluster(tmp_path) as handle:
        yield handle


@pytest.fixture
def run_playbook(cluster: ClusterHandle) -> Callable[..., PlaybookResult]:
    """`run_playbook(playbook, *, extra_vars=None, check=False, diff=False, tags=None, env=None)` on `cluster`."""
    return cluster.run_playbook
