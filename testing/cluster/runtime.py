#!/usr/bin/env python3
"""The pod runtime of the test cluster: pods whose images it knows (`programs.py`) run as local processes, the way a
kubelet would run their containers, and kube-apiserver's cluster traffic (webhooks, aggregated APIs, node
connections) reaches them through its egress proxy. See RUNTIME.md.

Usage: python testing/cluster/runtime.py --kubeconfig FILE --state DIR --egress-socket PATH
                                         [--operators-bin DIR] [--program IMAGE=COMMAND ...] [--verbose]
Runs until SIGTERM or SIGINT, then stops every process it started (SIGTERM, then SIGKILL after 5 s).
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import ctypes
import datetime as dt
import ipaddress
import json
import logging
import os
import re
import shutil
import signal
import socket
import socketserver
import ssl
import subprocess
import sys
import threading
import time
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from cluster import programs
from cluster.operator_double import Api, ApiError

log = logging.getLogger("pod-runtime")
AGENT = "pod-runtime"  # its own requests (status, tokens, deletes): fixtures.py leaves them out of the counts
HERE = Path(__file__).resolve().parent
CLONE_NEWNET = 0x40000000
# Pod IPs of the pods the runtime runs: the shared address space (RFC 6598), apart from kwok's pod and Service
# ranges; they exist only on the loopback device of each pod's network namespace.
POD_NETWORK = ipaddress.ip_network("100.64.0.0/16")
TICK = 0.2  # seconds between looks at a pod's processes, probes and volumes
VOLUME_SYNC = 1.0  # seconds between Secret/ConfigMap refreshes of a pod's volumes (the kubelet: about a minute)
BACKOFF_START, BACKOFF_MAX = 10.0, 300.0  # the kubelet's restart back-off (the first restart is at once)
STOP_GRACE = 5.0  # seconds for each process when the runtime itself stops
CAINJECTOR = "quay.io/jetstack/cert-manager-cainjector"  # when its program runs, it injects, not the runtime
PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
libc = ctypes.CDLL(None, use_errno=True)


def now() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


# ------------------------------------------------------------------------------------------------ pure helpers


def expand(text: str, env: dict[str, str]) -> str:
    """The kubelet's $(VAR) expansion: defined variables are replaced, $$ is a literal $, the rest stays."""
    def replace(match: re.Match[str]) -> str:
        if match.group(0) == "$$":
            return "$"
        return env.get(match.group(1), match.group(0))
    return re.sub(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)", replace, text)


def field_value(pod: dict[str, Any], path: str) -> str:
    """A downward API fieldRef (metadata.name, metadata.labels['x'], status.podIP...)."""
    match = re.fullmatch(r"metadata\.(labels|annotations)\['(.+)'\]", path)
    if match:
        return (pod["metadata"].get(match.group(1)) or {}).get(match.group(2), "")
    if path in ("metadata.labels", "metadata.annotations"):
        items = pod["metadata"].get(path.split(".")[1]) or {}
        return "\n".join(f'{k}="{v}"' for k, v in sorted(items.items()))
    if path == "status.podIPs":
        return ",".join(ip["ip"] for ip in pod["status"].get("podIPs") or [])
    value: Any = pod
    for part in path.split("."):
        value = (value or {}).get(part) if isinstance(value, dict) else None
    return "" if value is None else str(value)


def resource_value(container: dict[str, Any], ref: dict[str, Any]) -> str:
    """A downward API resourceFieldRef, in the divisor's units (whole numbers rounded up, as the kubelet)."""
    from kubernetes.utils.quantity import parse_quantity

    kind, _, name = ref["resource"].partition(".")
    value = ((container.get("resources") or {}).get(kind) or {}).get(name)
    if value is None:  # no limit: the node's allocatable, which kwok's nodes report as large
        value = "32" if name == "cpu" else "256Gi"
    divisor = parse_quantity(ref.get("divisor") or "1")
    quotient = parse_quantity(value) / divisor
    return str(int(-(-quotient // 1)))


def probe_port(port: Any, container: dict[str, Any]) -> int:
    """A probe's or Service's port: a number, or the name of one of the container's ports."""
    if isinstance(port, int) or str(port).isdigit():
        return int(port)
    for entry in container.get("ports") or []:
        if entry.get("name") == port:
            return int(entry["containerPort"])
    raise ValueError(f"no container port named {port!r}")


def backoff_delay(restarts: int) -> float:
    """Seconds before restart number ``restarts + 1``: at once the first time, then 10 s doubling up to 300 s."""
    return 0.0 if restarts == 0 else min(BACKOFF_START * 2 ** (restarts - 1), BACKOFF_MAX)


def target_port(service: dict[str, Any], port: int) -> Any:
    """The targetPort (number or name) of the Service port ``port``, or None."""
    for entry in (service.get("spec") or {}).get("ports") or []:
        if entry.get("port") == port and entry.get("protocol", "TCP") == "TCP":
            return entry.get("targetPort", port)
    return None


def stand_in_flags(args: list[str]) -> dict[str, str]:
    """``--name=value`` and ``--name value`` flags of a command line, by name."""
    flags: dict[str, str] = {}
    for index, arg in enumerate(args):
        if arg.startswith("--"):
            name, eq, value = arg[2:].partition("=")
            if not eq and index + 1 < len(args) and not args[index + 1].startswith("-"):
                value = args[index + 1]
            flags[name] = value
    return flags


def selects(selector: dict[str, str] | None, labels: dict[str, str] | None) -> bool:
    return bool(selector) and all((labels or {}).get(k) == v for k, v in selector.items())


# ------------------------------------------------------------------------------------------------ namespaces


def netns_socket(netns: str | None, family: int = socket.AF_INET) -> socket.socket:
    """A TCP socket of the network namespace ``netns`` (a /proc/<pid>/ns/net path; None: the runtime's own).
    setns applies to the calling thread only, and a socket stays in the namespace it was made in: a short-lived
    thread enters the namespace and makes it."""
    if netns is None:
        return socket.socket(family, socket.SOCK_STREAM)
    made: list[socket.socket | BaseException] = []

    def enter() -> None:
        try:
            fd = os.open(netns, os.O_RDONLY)
            try:
                if libc.setns(fd, CLONE_NEWNET) != 0:
                    err = ctypes.get_errno()
                    raise OSError(err, f"setns {netns}: {os.strerror(err)}")
            finally:
                os.close(fd)
            made.append(socket.socket(family, socket.SOCK_STREAM))
        except BaseException as err:  # handed to the caller
            made.append(err)

    thread = threading.Thread(target=enter, name="netns")
    thread.start()
    thread.join()
    if isinstance(made[0], BaseException):
        raise made[0]
    return made[0]


def connect(netns: str | None, host: str, port: int, timeout: float = 5.0) -> socket.socket:
    sock = netns_socket(netns, socket.AF_INET6 if ":" in host else socket.AF_INET)
    sock.settimeout(timeout)
    try:
        sock.connect((host, port))
    except OSError:
        sock.close()
        raise
    sock.settimeout(None)
    return sock


def pipe(a: socket.socket, b: socket.socket) -> None:
    """Copy both ways until both sides are done, then close both."""
    def copy(src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        with contextlib.suppress(OSError):
            dst.shutdown(socket.SHUT_WR)

    other = threading.Thread(target=copy, args=(b, a), daemon=True)
    other.start()
    copy(a, b)
    other.join()
    a.close()
    b.close()


class Forwarder:
    """A listener on 127.0.0.1:``port`` inside a pod's network namespace whose connections reach the API server on
    the runtime's loopback: the pod's way to the cluster's API (its KUBERNETES_SERVICE_HOST)."""

    def __init__(self, netns: str, port: int) -> None:
        self.listener = netns_socket(netns)
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", port))
        self.listener.listen(64)
        self.port = port
        threading.Thread(target=self._serve, name=f"forward {netns}", daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            try:
                upstream = connect(None, "127.0.0.1", self.port)
            except OSError:
                client.close()
                continue
            threading.Thread(target=pipe, args=(client, upstream), daemon=True).start()

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.listener.shutdown(socket.SHUT_RDWR)
        self.listener.close()


def start_netns(ip: str) -> subprocess.Popen[bytes]:
    """The pod's network namespace, held by a sleeping process (the pause container): loopback up, the pod IP on
    it. No other device: nothing in it reaches beyond, except through the runtime's forwarder."""
    holder = subprocess.Popen(
        ["unshare", "--net", "--", "sh", "-c", f"ip link set lo up && ip addr add {ip}/32 dev lo && echo up "
                                               "&& exec sleep infinity"], stdout=subprocess.PIPE)
    assert holder.stdout is not None
    if holder.stdout.readline().strip() != b"up":
        holder.kill()
        holder.wait()
        raise OSError(f"could not make a network namespace with {ip}")
    return holder


# ------------------------------------------------------------------------------------------------ probes


def run_probe(probe: dict[str, Any], container: dict[str, Any], netns: str, ip: str,
              exec_in: Callable[[list[str], float], int]) -> bool:
    """One try of a readiness probe against the process: httpGet, tcpSocket, exec (grpc: its port accepting)."""
    timeout = float(probe.get("timeoutSeconds") or 1)
    try:
        if "httpGet" in probe:
            action = probe["httpGet"]
            port = probe_port(action["port"], container)
            host = action.get("host") or ip
            sock = connect(netns, host, port, timeout)
            sock.settimeout(timeout)
            if action.get("scheme", "HTTP").upper() == "HTTPS":  # the kubelet does not verify the certificate
                context = ssl.create_default_context()
                context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
                sock = context.wrap_socket(sock, server_hostname=host)
            headers = "".join(f"{h['name']}: {h['value']}\r\n" for h in action.get("httpHeaders") or [])
            sock.sendall(f"GET {action.get('path') or '/'} HTTP/1.1\r\nHost: {host}:{port}\r\n"
                         f"User-Agent: kube-probe/1.36\r\n{headers}Connection: close\r\n\r\n".encode())
            status_line = sock.recv(1024).split(b"\r\n", 1)[0].split()
            sock.close()
            return len(status_line) >= 2 and 200 <= int(status_line[1]) < 400
        if "tcpSocket" in probe or "grpc" in probe:
            action = probe.get("tcpSocket") or probe["grpc"]
            connect(netns, action.get("host") or ip, probe_port(action["port"], container), timeout).close()
            return True
        if "exec" in probe:
            return exec_in(probe["exec"]["command"], timeout) == 0
    except (OSError, ValueError, ssl.SSLError, subprocess.TimeoutExpired):
        return False
    return False


# ------------------------------------------------------------------------------------------------ containers


@dataclass
class Container:
    """One container of a pod the runtime runs: its process (None for an image it does not know: simulated
    as running and ready, like kwok does) and what a kubelet reports of it."""

    spec: dict[str, Any]
    runnable: programs.Runnable | None
    init: bool = False
    process: subprocess.Popen[bytes] | None = None
    restarts: int = 0
    started_at: str = ""
    exit_code: int | None = None
    finished_at: str = ""
    last_state: dict[str, Any] = field(default_factory=dict)
    ready: bool = False
    successes: int = 0
    failures: int = 0
    next_probe: float = 0.0
    restart_at: float | None = None

    @property
    def name(self) -> str:
        return self.spec["name"]

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def state(self) -> dict[str, Any]:
        if self.runnable is None:
            return {"running": {"startedAt": self.started_at}}
        if self.running:
            return {"running": {"startedAt": self.started_at}}
        if self.restart_at is not None:
            return {"waiting": {"reason": "CrashLoopBackOff",
                                "message": f"back-off restarting failed container {self.name}"}}
        if self.exit_code is not None:
            return {"terminated": self.terminated()}
        return {"waiting": {"reason": "ContainerCreating"}}

    def terminated(self) -> dict[str, Any]:
        return {"exitCode": self.exit_code, "reason": "Completed" if self.exit_code == 0 else "Error",
                "startedAt": self.started_at, "finishedAt": self.finished_at}

    def status(self) -> dict[str, Any]:
        out = {"name": self.name, "image": self.spec["image"], "imageID": "", "containerID": "",
               "ready": self.ready, "restartCount": self.restarts, "started": self.running or self.runnable is None,
               "state": self.state()}
        if self.last_state:
            out["lastState"] = self.last_state
        if self.process is not None:
            out["containerID"] = f"process://{self.process.pid}"
        return out


# ------------------------------------------------------------------------------------------------ pods


class PodWorker:
    """One pod: its network namespace, volumes, processes, probes and status, from the first sight of it bound to
    a node until it is deleted (or the runtime stops)."""

    def __init__(self, runtime: Runtime, pod: dict[str, Any], ip: str) -> None:
        self.runtime, self.pod, self.ip = runtime, pod, ip
        meta = pod["metadata"]
        self.key = f"{meta['namespace']}/{meta['name']}"
        self.dir = runtime.state / "pods" / meta["uid"]
        self.dir.mkdir(parents=True, mode=0o700)
        self.volumes = Volumes(runtime, pod, self.dir / "volumes")
        self.holder: subprocess.Popen[bytes] | None = None
        self.forwarder: Forwarder | None = None
        self.changed = threading.Event()
        self.stop_now = threading.Event()
        self.init_containers = [Container(c, runtime.catalog.get(c["image"]), init=True)
                                for c in pod["spec"].get("initContainers") or []]
        self.containers = [Container(c, runtime.catalog.get(c["image"])) for c in pod["spec"]["containers"]]
        self.phase = "Pending"
        self.started = now()
        self.written: str | None = None
        self.transitions: dict[str, tuple[str, str]] = {}  # condition type -> (status, since)
        self.thread = threading.Thread(target=self.run, name=f"pod {self.key}", daemon=True)

    @property
    def netns(self) -> str:
        assert self.holder is not None
        return f"/proc/{self.holder.pid}/ns/net"

    def update(self, pod: dict[str, Any]) -> None:
        self.pod = pod
        self.changed.set()

    # -- the pod's life ----------------------------------------------------------------------------------------
    def run(self) -> None:
        try:
            self.holder = start_netns(self.ip)
            self.runtime.record(self.holder.pid)
            self.forwarder = Forwarder(self.netns, self.runtime.api_port)
            self.volumes.sync(first=True)
            self.loop()
        except Exception as err:
            log.exception("pod %s: %s", self.key, err)
        finally:
            self.teardown()

    def loop(self) -> None:
        next_sync = time.monotonic() + VOLUME_SYNC
        init = list(self.init_containers)
        while not self.stop_now.is_set():
            if self.pod["metadata"].get("deletionTimestamp"):
                self.terminate(float(self.pod["metadata"].get("deletionGracePeriodSeconds") or 30))
                self.runtime.delete_pod(self.pod)
                return
            if self.volumes.missing and self.phase == "Pending":  # the kubelet: ContainerCreating until they exist
                self.volumes.sync()
                self.write_status()
                self.changed.wait(VOLUME_SYNC)
                continue
            if time.monotonic() >= next_sync:
                self.volumes.sync()
                next_sync = time.monotonic() + VOLUME_SYNC
            if init:  # init containers one after the other, each to completion
                if self.step_init(init[0]):
                    init.pop(0)
            elif self.phase in ("Pending", "Running"):
                self.phase = "Running"
                for container in self.containers:
                    self.step(container)
                self.phase = self.finished_phase() or "Running"
            self.write_status()
            if self.phase in ("Succeeded", "Failed"):  # the pod stays; its namespace and files go
                return
            self.changed.wait(TICK)
            self.changed.clear()

    def step_init(self, container: Container) -> bool:
        """Advance an init container; True once it has completed."""
        if container.runnable is None:
            container.exit_code, container.started_at = 0, container.started_at or now()
            container.finished_at = container.finished_at or now()
            return True
        if container.process is None:
            self.start(container)
            return False
        if container.running:
            return False
        self.reap(container)
        if container.exit_code == 0:
            return True
        if self.pod["spec"].get("restartPolicy", "Always") == "Never":
            self.phase = "Failed"
        else:
            self.schedule_restart(container)
        return False

    def step(self, container: Container) -> None:
        if container.runnable is None:
            container.started_at, container.ready = container.started_at or now(), True
            return
        if container.process is None and container.restart_at is None and container.exit_code is None:
            self.start(container)
        elif container.restart_at is not None and time.monotonic() >= container.restart_at:
            container.restart_at = None
            self.start(container)
        elif container.process is not None and not container.running and container.finished_at == "":
            self.reap(container)
            policy = self.pod["spec"].get("restartPolicy", "Always")
            if policy == "Always" or (policy == "OnFailure" and container.exit_code != 0):
                self.schedule_restart(container)
        if container.running:
            self.probe(container)

    def start(self, container: Container) -> None:
        assert container.runnable is not None
        if container.process is not None:  # a restart: what it ended with is now its last state
            container.last_state = {"terminated": container.terminated()}
            container.restarts += 1
        container.exit_code, container.finished_at, container.ready = None, "", False
        container.successes = container.failures = 0
        probe = container.spec.get("readinessProbe") or {}
        container.next_probe = time.monotonic() + float(probe.get("initialDelaySeconds") or 0)
        spec = self.exec_spec(container)
        spec_file = self.dir / f"{container.name}.exec.json"
        spec_file.write_text(json.dumps(spec))
        spec_file.chmod(0o600)
        (self.dir / f"root-{container.name}").mkdir(exist_ok=True, mode=0o700)
        out = open(self.dir / f"{container.name}.log", "ab")  # noqa: SIM115  (the process keeps it)
        container.process = subprocess.Popen([sys.executable, str(HERE / "pod_exec.py"), str(spec_file)],
                                             stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        out.close()
        container.started_at = now()
        self.runtime.record(container.process.pid)
        log.info("pod %s: started %s (pid %d, restart %d): %s", self.key, container.name, container.process.pid,
                 container.restarts, " ".join(spec["argv"][:1]))

    def reap(self, container: Container) -> None:
        assert container.process is not None
        code = container.process.wait()
        container.exit_code = 128 - code if code < 0 else code  # a signal: 128 + its number, as a shell says
        container.finished_at, container.ready = now(), False
        log.info("pod %s: %s exited with %d", self.key, container.name, container.exit_code)

    def schedule_restart(self, container: Container) -> None:
        container.restart_at = time.monotonic() + backoff_delay(container.restarts)

    def probe(self, container: Container) -> None:
        probe = container.spec.get("readinessProbe")
        if not probe:
            container.ready = True
            return
        if time.monotonic() < container.next_probe:
            return
        container.next_probe = time.monotonic() + float(probe.get("periodSeconds") or 10)
        assert container.process is not None
        enter = ["nsenter", "-t", str(container.process.pid), "-m", "-n", "-r", "-w", "--"]
        ok = run_probe(probe, container.spec, self.netns, self.ip,
                       lambda cmd, timeout: subprocess.run([*enter, *cmd], capture_output=True, timeout=timeout,
                                                           check=False).returncode)
        if ok:
            container.successes, container.failures = container.successes + 1, 0
            if container.successes >= int(probe.get("successThreshold") or 1):
                container.ready = True
        else:
            container.failures, container.successes = container.failures + 1, 0
            if container.failures >= int(probe.get("failureThreshold") or 3):
                container.ready = False

    def finished_phase(self) -> str | None:
        """Succeeded or Failed once every container has ended for good (restartPolicy Never or OnFailure)."""
        policy = self.pod["spec"].get("restartPolicy", "Always")
        if policy == "Always" or any(c.runnable is None for c in self.containers):
            return None
        if any(c.running or c.restart_at is not None or c.exit_code is None for c in self.containers):
            return None
        return "Succeeded" if all(c.exit_code == 0 for c in self.containers) else "Failed"

    def terminate(self, grace: float) -> None:
        """SIGTERM to every process, SIGKILL to those left after ``grace`` seconds."""
        running = [c for c in self.containers + self.init_containers if c.running]
        for container in running:
            assert container.process is not None
            with contextlib.suppress(ProcessLookupError):
                container.process.terminate()
        deadline = time.monotonic() + grace
        for container in running:
            assert container.process is not None
            try:
                container.process.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                container.process.kill()
                container.process.wait()
                log.info("pod %s: %s killed after the %.0f s grace period", self.key, container.name, grace)

    def teardown(self) -> None:
        self.terminate(STOP_GRACE if self.stop_now.is_set() else 0.0)
        if self.forwarder is not None:
            self.forwarder.close()
        if self.holder is not None:
            self.holder.kill()
            self.holder.wait()
        shutil.rmtree(self.dir, ignore_errors=True)
        self.runtime.forget_pod(self)

    # -- what a container gets ---------------------------------------------------------------------------------
    def env(self, container: dict[str, Any]) -> dict[str, str]:
        meta = self.pod["metadata"]
        env = {"PATH": PATH, "HOSTNAME": meta["name"], "HOME": "/root",
               "KUBERNETES_SERVICE_HOST": "127.0.0.1", "KUBERNETES_SERVICE_PORT": str(self.runtime.api_port),
               "KUBERNETES_SERVICE_PORT_HTTPS": str(self.runtime.api_port)}
        for source in container.get("envFrom") or []:
            ref = source.get("configMapRef") or source.get("secretRef") or {}
            kind = "configmaps" if "configMapRef" in source else "secrets"
            data = self.runtime.object_data(kind, meta["namespace"], ref.get("name", "")) or {}
            env.update({(source.get("prefix") or "") + k: v for k, v in data.items()})
        for var in container.get("env") or []:
            if "value" in var or "valueFrom" not in var:
                env[var["name"]] = expand(var.get("value", ""), env)
                continue
            source = var["valueFrom"]
            if "fieldRef" in source:
                env[var["name"]] = field_value(self.pod, source["fieldRef"]["fieldPath"])
            elif "resourceFieldRef" in source:
                env[var["name"]] = resource_value(container, source["resourceFieldRef"])
            else:
                ref = source.get("configMapKeyRef") or source.get("secretKeyRef") or {}
                kind = "configmaps" if "configMapKeyRef" in source else "secrets"
                data = self.runtime.object_data(kind, meta["namespace"], ref.get("name", "")) or {}
                if ref.get("key") in data:
                    env[var["name"]] = data[ref["key"]]
        return env

    def exec_spec(self, container: Container) -> dict[str, Any]:
        spec = container.spec
        env = self.env(spec)
        assert container.runnable is not None
        if container.runnable.stand_in:
            argv = self.runtime.stand_in_argv(self, spec, env)
        else:
            image_args = [expand(arg, env) for arg in (spec.get("command") or [])[1:] + (spec.get("args") or [])]
            argv = [*container.runnable.command, *image_args, *container.runnable.extra_args]
        mounts = []
        for mount in spec.get("volumeMounts") or []:
            source = self.volumes.path(mount["name"])
            if source is None:
                continue
            if mount.get("subPath"):
                source = source / expand(mount["subPath"], env)
            mounts.append([str(source), mount["mountPath"], bool(mount.get("readOnly"))
                           or self.volumes.read_only(mount["name"])])
        return {"netns": self.netns, "root": str(self.dir / f"root-{container.name}"), "mounts": mounts,
                "argv": argv, "env": env, "cwd": spec.get("workingDir") or "/"}

    # -- status --------------------------------------------------------------------------------------------
    def status(self) -> dict[str, Any]:
        initialized = all(c.exit_code == 0 for c in self.init_containers)
        ready = self.phase == "Running" and initialized and all(c.ready for c in self.containers)
        stamp = now()

        def cond(kind: str, value: bool) -> dict[str, Any]:
            status = "True" if value else "False"
            old = self.transitions.get(kind)
            if old is None or old[0] != status:
                self.transitions[kind] = old = (status, stamp)
            return {"type": kind, "status": status, "lastTransitionTime": old[1]}

        out: dict[str, Any] = {
            "phase": self.phase, "podIP": self.ip, "podIPs": [{"ip": self.ip}], "startTime": self.started,
            "hostIP": self.runtime.node_ip, "hostIPs": [{"ip": self.runtime.node_ip}],
            "conditions": [cond("PodReadyToStartContainers", True), cond("Initialized", initialized),
                           cond("ContainersReady", ready), cond("Ready", ready)],
            "containerStatuses": [c.status() for c in self.containers],
        }
        if self.init_containers:
            out["initContainerStatuses"] = [c.status() for c in self.init_containers]
        return out

    def write_status(self) -> None:
        status = self.status()
        comparable = json.dumps(status, sort_keys=True)
        if comparable == self.written:
            return
        try:
            self.runtime.api.request("PATCH", f"/api/v1/namespaces/{self.pod['metadata']['namespace']}/pods/"
                                              f"{self.pod['metadata']['name']}/status", body={"status": status},
                                     content_type="application/strategic-merge-patch+json")
            self.written = comparable
        except ApiError as err:
            if err.status == 404:
                self.stop_now.set()
            log.warning("pod %s: status not written: %s", self.key, err)


# ------------------------------------------------------------------------------------------------ volumes


class Volumes:
    """A pod's Secret, ConfigMap, projected (ServiceAccount token, ConfigMap, Secret, downward API), downwardAPI and
    emptyDir volumes as files under the pod's private folder, kept current as the kubelet does: each volume's
    files are rewritten when their content changes (a new file renamed into place). Other volume types (hostPath,
    PersistentVolumeClaims...) are empty folders: nothing on this machine is theirs to show."""

    def __init__(self, runtime: Runtime, pod: dict[str, Any], root: Path) -> None:
        self.runtime, self.pod, self.root = runtime, pod, root
        root.mkdir(mode=0o700)
        self.tokens: dict[str, tuple[str, float]] = {}  # file -> (token, when to renew)
        self.missing: set[str] = set()  # Secrets and ConfigMaps a volume needs that do not exist (yet)

    def spec(self, name: str) -> dict[str, Any] | None:
        return next((v for v in self.pod["spec"].get("volumes") or [] if v["name"] == name), None)

    def path(self, name: str) -> Path | None:
        return self.root / name if self.spec(name) is not None else None

    def read_only(self, name: str) -> bool:
        volume = self.spec(name) or {}
        return any(kind in volume for kind in ("secret", "configMap", "projected", "downwardAPI"))

    def sync(self, first: bool = False) -> None:
        self.missing = set()
        for volume in self.pod["spec"].get("volumes") or []:
            target = self.root / volume["name"]
            target.mkdir(mode=0o700, exist_ok=True)
            if first or not any(k in volume for k in ("emptyDir", "hostPath", "persistentVolumeClaim")):
                files = self.files(volume)
                for rel, content in files.items():
                    self.write(target / rel, content)

    def files(self, volume: dict[str, Any]) -> dict[str, bytes]:
        namespace = self.pod["metadata"]["namespace"]
        if "secret" in volume:
            return self.keyed("secrets", namespace, volume["secret"].get("secretName", ""), volume["secret"])
        if "configMap" in volume:
            return self.keyed("configmaps", namespace, volume["configMap"].get("name", ""), volume["configMap"])
        if "downwardAPI" in volume:
            return self.downward(volume["downwardAPI"].get("items") or [])
        if "projected" in volume:
            out: dict[str, bytes] = {}
            for source in volume["projected"].get("sources") or []:
                if "serviceAccountToken" in source:
                    out.update(self.token(source["serviceAccountToken"]))
                elif "secret" in source:
                    out.update(self.keyed("secrets", namespace, source["secret"].get("name", ""), source["secret"]))
                elif "configMap" in source:
                    out.update(self.keyed("configmaps", namespace, source["configMap"].get("name", ""),
                                          source["configMap"]))
                elif "downwardAPI" in source:
                    out.update(self.downward(source["downwardAPI"].get("items") or []))
            return out
        return {}

    def keyed(self, kind: str, namespace: str, name: str, source: dict[str, Any]) -> dict[str, bytes]:
        data = self.runtime.object_data(kind, namespace, name, raw=True)
        if data is None:
            if not source.get("optional"):
                self.missing.add(f"{kind} {namespace}/{name}")
            return {}
        items = source.get("items")
        if items:
            return {item.get("path", item["key"]): data[item["key"]] for item in items if item["key"] in data}
        return dict(data)

    def downward(self, items: list[dict[str, Any]]) -> dict[str, bytes]:
        out = {}
        for item in items:
            if "fieldRef" in item:
                out[item["path"]] = field_value(self.pod, item["fieldRef"]["fieldPath"]).encode()
        return out

    def token(self, source: dict[str, Any]) -> dict[str, bytes]:
        """A TokenRequest for the pod's ServiceAccount, bound to the pod, renewed at 80% of its life (the
        kubelet's rule); the API server validates it as any ServiceAccount token."""
        path = source.get("path", "token")
        held = self.tokens.get(path)
        if held and time.time() < held[1]:
            return {path: held[0].encode()}
        meta, spec = self.pod["metadata"], self.pod["spec"]
        seconds = int(source.get("expirationSeconds") or 3600)
        request = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                   "spec": {"expirationSeconds": seconds,
                            "boundObjectRef": {"apiVersion": "v1", "kind": "Pod", "name": meta["name"],
                                               "uid": meta["uid"]},
                            **({"audiences": [source["audience"]]} if source.get("audience") else {})}}
        account = spec.get("serviceAccountName") or "default"
        answer = self.runtime.api.request("POST", f"/api/v1/namespaces/{meta['namespace']}/serviceaccounts/"
                                                  f"{account}/token", body=request)
        token = answer["status"]["token"]
        self.tokens[path] = (token, time.time() + 0.8 * seconds)
        return {path: token.encode()}

    @staticmethod
    def write(path: Path, content: bytes) -> None:
        if path.is_file() and path.read_bytes() == content:
            return
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        tmp = path.with_name(f".{path.name}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as handle:
            handle.write(content)
        os.replace(tmp, path)


# ------------------------------------------------------------------------------------------------ egress proxy


class Unreachable(Exception):
    """The CONNECT target maps to nothing the runtime serves: answered 502 with this message."""


class EgressProxy(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    """kube-apiserver's `cluster` egress: HTTP CONNECT on a Unix socket. A pod IP of a pod the runtime runs, or a
    Service ClusterIP:port whose selector picks one, is connected inside that pod's network namespace; loopback
    targets (kwok's kubelet endpoints: logs, exec, port-forward) are connected as they are. Nothing else: no
    connection leaves loopback."""

    daemon_threads = True

    def __init__(self, path: str, resolve: Callable[[str, int], tuple[str | None, str, int]]) -> None:
        self.resolve = resolve
        super().__init__(path, EgressHandler)
        os.chmod(path, 0o600)


class EgressHandler(socketserver.BaseRequestHandler):
    server: EgressProxy

    def handle(self) -> None:
        sock: socket.socket = self.request
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = sock.recv(4096)
            if not chunk:
                return
            head += chunk
            if len(head) > 65536:
                return
        request_line = head.split(b"\r\n", 1)[0].decode(errors="replace").split()
        if len(request_line) < 2 or request_line[0] != "CONNECT":
            sock.sendall(b"HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\n\r\n")
            return
        host, _, port = request_line[1].rpartition(":")
        try:
            netns, ip, target = self.server.resolve(host.strip("[]"), int(port))
            upstream = connect(netns, ip, target)
        except (Unreachable, OSError, ValueError) as err:
            message = f"{request_line[1]}: {err}".encode()
            log.info("egress %s refused: %s", request_line[1], err)
            sock.sendall(b"HTTP/1.1 502 Bad Gateway\r\nContent-Type: text/plain\r\nContent-Length: "
                         + str(len(message)).encode() + b"\r\n\r\n" + message)
            return
        sock.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
        rest = head.split(b"\r\n\r\n", 1)[1]
        if rest:
            upstream.sendall(rest)
        pipe(sock, upstream)


# ------------------------------------------------------------------------------------------------ the runtime


class Runtime:
    """Watches the pods bound to nodes and runs those with a known image (`programs.Catalog`), one `PodWorker`
    each; resolves the egress proxy's targets."""

    def __init__(self, api: Api, catalog: programs.Catalog, state: Path, api_port: int) -> None:
        self.api, self.catalog, self.state, self.api_port = api, catalog, state, api_port
        self.pods: dict[str, PodWorker] = {}  # by uid
        self.done: set[str] = set()  # uids of pods that ended (Succeeded/Failed) or were deleted
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.node_ip = "127.0.0.1"
        self.next_ip = 2
        self.pids_file = state / "pids"
        self.own_cas: set[str] = set()  # "namespace/name" of CA Secrets the stand-in makes (cert-manager's webhook)

    def record(self, pid: int) -> None:
        """Every process started, one pid a line: what `kwok.py` kills if the runtime itself is killed."""
        with open(self.pids_file, "a", encoding="utf-8") as handle:
            handle.write(f"{pid}\n")

    def claims(self, pod: dict[str, Any]) -> bool:
        spec = pod.get("spec") or {}
        return bool(spec.get("nodeName")) and any(
            self.catalog.get(c.get("image", "")) for c in (spec.get("containers") or [])
            + (spec.get("initContainers") or []))

    def allocate_ip(self) -> str:
        with self.lock:
            used = {worker.ip for worker in self.pods.values()}
            while True:
                ip = str(POD_NETWORK[self.next_ip])
                self.next_ip = self.next_ip + 1 if self.next_ip < POD_NETWORK.num_addresses - 2 else 2
                if ip not in used:
                    return ip

    def seen(self, event: str, pod: dict[str, Any]) -> None:
        uid = pod["metadata"]["uid"]
        with self.lock:
            worker = self.pods.get(uid)
        if worker is not None:
            if event == "DELETED":
                worker.stop_now.set()
                worker.changed.set()
            else:
                worker.update(pod)
            return
        if event == "DELETED" or not self.claims(pod):
            return
        if uid in self.done:  # ended: only its deletion is left to the runtime (kwok's stages leave it alone)
            if pod["metadata"].get("deletionTimestamp"):
                self.delete_pod(pod)
            return
        if pod.get("status", {}).get("phase") in ("Succeeded", "Failed"):
            return
        if pod["metadata"].get("deletionTimestamp"):  # never started: nothing to stop
            self.delete_pod(pod)
            return
        worker = PodWorker(self, pod, self.allocate_ip())
        with self.lock:
            self.pods[uid] = worker
        worker.thread.start()

    def forget_pod(self, worker: PodWorker) -> None:
        with self.lock:
            self.pods.pop(worker.pod["metadata"]["uid"], None)
            self.done.add(worker.pod["metadata"]["uid"])

    def delete_pod(self, pod: dict[str, Any]) -> None:
        """What the kubelet does once the containers are gone: the final delete, at once, of this very pod."""
        meta = pod["metadata"]
        body = {"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0,
                "preconditions": {"uid": meta["uid"]}}
        with contextlib.suppress(ApiError):
            self.api.request("DELETE", f"/api/v1/namespaces/{meta['namespace']}/pods/{meta['name']}", body=body)
        with self.lock:
            self.done.add(meta["uid"])

    def object_data(self, kind: str, namespace: str, name: str, raw: bool = False
                    ) -> dict[str, Any] | None:
        """A Secret's or ConfigMap's data (decoded; bytes with ``raw``), or None when it does not exist."""
        try:
            obj = self.api.request("GET", f"/api/v1/namespaces/{namespace}/{kind}/{name}")
        except ApiError as err:
            if err.status == 404:
                return None
            raise
        if kind == "secrets":
            data = {k: base64.b64decode(v) for k, v in (obj.get("data") or {}).items()}
        else:
            data = {k: v.encode() for k, v in (obj.get("data") or {}).items()}
            data.update({k: base64.b64decode(v) for k, v in (obj.get("binaryData") or {}).items()})
        return data if raw else {k: v.decode(errors="replace") for k, v in data.items()}

    # -- egress ------------------------------------------------------------------------------------------------
    def resolve(self, host: str, port: int) -> tuple[str | None, str, int]:
        """Where a CONNECT to host:port goes: (network namespace, address, port)."""
        if host == "localhost":  # kwok's nodes: their only address is the Hostname localhost (kubelet endpoints)
            return None, "127.0.0.1", port
        try:
            address = ipaddress.ip_address(host)
        except ValueError:
            raise Unreachable(f"{host} is not an address (kube-apiserver resolves Services itself)") from None
        with self.lock:
            workers = list(self.pods.values())
        for worker in workers:
            if worker.ip == host and worker.holder is not None:
                return worker.netns, host, port
        if address.is_loopback:
            return None, host, port
        services = self.api.request("GET", "/api/v1/services").get("items", [])
        service = next((s for s in services if host in ((s.get("spec") or {}).get("clusterIPs") or [])), None)
        if service is None:
            raise Unreachable("no pod of this runtime and no Service has this address")
        wanted = target_port(service, port)
        if wanted is None:
            raise Unreachable(f"Service {service['metadata']['name']} has no TCP port {port}")
        selector = service["spec"].get("selector")
        candidates = [w for w in workers if w.holder is not None
                      and w.pod["metadata"]["namespace"] == service["metadata"]["namespace"]
                      and selects(selector, w.pod["metadata"].get("labels"))]
        candidates.sort(key=lambda w: not all(c.ready for c in w.containers))  # ready pods first
        for worker in candidates:
            for container in worker.containers:
                with contextlib.suppress(ValueError):
                    return worker.netns, worker.ip, probe_port(wanted, container.spec)
        raise Unreachable(f"Service {service['metadata']['namespace']}/{service['metadata']['name']} selects no "
                          "pod this runtime runs (kwok's simulated pods serve nothing)")

    # -- stand-in ----------------------------------------------------------------------------------------------
    def stand_in_argv(self, worker: PodWorker, spec: dict[str, Any], env: dict[str, str]) -> list[str]:
        """The admission stand-in (admission_stand_in.py) for a container whose program is not built: on its TCP
        ports, with the certificate the pod mounts (a volume holding tls.crt and tls.key), or for cert-manager's
        webhook a CA of its own, as its flags name it."""
        argv = [sys.executable, str(HERE / "admission_stand_in.py")]
        ports = {str(p["containerPort"]) for p in spec.get("ports") or [] if p.get("protocol", "TCP") == "TCP"}
        runnable = self.catalog.get(spec["image"])
        if runnable is not None and runnable.stand_in_own_ca:
            flags = stand_in_flags([expand(arg, env) for arg in (spec.get("command") or [])[1:]
                                    + (spec.get("args") or [])])
            ports.add(flags.get("secure-port", "10250"))
            secret = (f"{flags.get('dynamic-serving-ca-secret-namespace', worker.pod['metadata']['namespace'])}/"
                      f"{flags.get('dynamic-serving-ca-secret-name', 'cert-manager-webhook-ca')}")
            with self.lock:
                self.own_cas.add(secret)
            return [*argv, "--ports", ",".join(sorted(ports)), "--own-ca", secret,
                    "--dns-names", flags.get("dynamic-serving-dns-names", "")]
        for mount in spec.get("volumeMounts") or []:
            folder = worker.volumes.path(mount["name"])
            if folder is not None and not mount.get("subPath") and (folder / "tls.crt").is_file() \
                    and (folder / "tls.key").is_file():
                base = mount["mountPath"].rstrip("/")
                return [*argv, "--ports", ",".join(sorted(ports)), "--cert", f"{base}/tls.crt",
                        "--key", f"{base}/tls.key"]
        log.warning("pod %s: %s mounts no tls.crt/tls.key: the stand-in cannot serve it", worker.key, spec["name"])
        return [*argv, "--ports", ",".join(sorted(ports))]

    def inject_ca_bundles(self) -> None:
        """cert-manager's cainjector, for the CA Secrets the stand-in made (`cert-manager.io/inject-ca-from-secret`
        on webhook configurations): while the real cainjector does not run here, each webhook's caBundle is that
        Secret's ca.crt."""
        annotation = "cert-manager.io/inject-ca-from-secret"
        while not self.stop.wait(1.0):
            with self.lock:
                wanted = set(self.own_cas)
            if not wanted:
                continue
            for kind in ("validatingwebhookconfigurations", "mutatingwebhookconfigurations"):
                path = f"/apis/admissionregistration.k8s.io/v1/{kind}"
                try:
                    for config in self.api.request("GET", path).get("items", []):
                        source = (config["metadata"].get("annotations") or {}).get(annotation)
                        if source not in wanted:
                            continue
                        namespace, name = source.split("/", 1)
                        ca = (self.object_data("secrets", namespace, name) or {}).get("ca.crt")
                        if not ca:
                            continue
                        bundle = base64.b64encode(ca.encode()).decode()
                        patch = [{"op": "add", "path": f"/webhooks/{i}/clientConfig/caBundle", "value": bundle}
                                 for i, hook in enumerate(config.get("webhooks") or [])
                                 if hook.get("clientConfig", {}).get("caBundle") != bundle]
                        if patch:
                            self.api.request("PATCH", f"{path}/{config['metadata']['name']}", body=patch,
                                             content_type="application/json-patch+json")
                            log.info("caBundle of %s %s from Secret %s", kind, config["metadata"]["name"], source)
                except ApiError as err:
                    log.warning("caBundle injection: %s", err)

    # -- watching ----------------------------------------------------------------------------------------------
    def watch(self) -> None:
        version: str | None = None
        while not self.stop.is_set():
            try:
                if version is None:
                    listed = self.api.request("GET", "/api/v1/pods")
                    version = listed["metadata"]["resourceVersion"]
                    for pod in listed.get("items", []):
                        self.seen("ADDED", pod)
                resp = self.api.open("GET", "/api/v1/pods", query={"watch": "1", "resourceVersion": version,
                                                                   "timeoutSeconds": "50",
                                                                   "allowWatchBookmarks": "true"},
                                     timeout=(5.0, 60.0))
                try:
                    buffer = b""
                    for chunk in resp.stream(None, decode_content=False):
                        buffer += chunk
                        *lines, buffer = buffer.split(b"\n")
                        for line in filter(None, (line.strip() for line in lines)):
                            event = json.loads(line)
                            if event["type"] == "ERROR":
                                version = None
                                break
                            version = event["object"]["metadata"].get("resourceVersion") or version
                            if event["type"] != "BOOKMARK":
                                self.seen(event["type"], event["object"])
                        if version is None:
                            break
                finally:
                    resp.release_conn()
            except Exception as err:
                if not self.stop.is_set():
                    log.warning("pod watch interrupted: %r", err)
                    version = None
                    self.stop.wait(1.0)

    def shutdown(self) -> None:
        """Stop every pod's processes (SIGTERM, then SIGKILL after STOP_GRACE) and namespace holders."""
        self.stop.set()
        with self.lock:
            workers = list(self.pods.values())
        for worker in workers:
            worker.stop_now.set()
            worker.changed.set()
        for worker in workers:
            worker.thread.join(STOP_GRACE + 5)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kubeconfig", required=True, help="the cluster's admin kubeconfig (waited for)")
    parser.add_argument("--state", required=True, help="a private folder for the pods' files")
    parser.add_argument("--egress-socket", required=True, help="the Unix socket of the egress proxy")
    parser.add_argument("--operators-bin", default=None, help="the folder of the operators' binaries")
    parser.add_argument("--program", action="append", default=[], metavar="IMAGE=COMMAND",
                        help="also run pods of IMAGE (a repository) with COMMAND (tests)")
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO, stream=sys.stderr,
                        format="%(asctime)s pod-runtime %(levelname)s %(message)s")
    logging.getLogger("urllib3").setLevel(logging.ERROR)
    logging.getLogger("kubernetes").setLevel(logging.WARNING)
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    state = Path(args.state)
    state.mkdir(parents=True, exist_ok=True, mode=0o700)
    state.chmod(0o700)
    extra = dict(spec.split("=", 1) for spec in args.program)
    catalog = programs.catalog(Path(args.operators_bin) if args.operators_bin else None, extra)
    runtime: Runtime | None = None
    # The proxy first: kube-apiserver starts before the kubeconfig exists, and may dial nodes early.
    proxy = EgressProxy(args.egress_socket, lambda host, port: (runtime or _loopback_only).resolve(host, port))
    threading.Thread(target=proxy.serve_forever, name="egress", daemon=True).start()
    kubeconfig = Path(args.kubeconfig)
    while not kubeconfig.exists() and not stop.wait(0.1):
        pass
    if not stop.is_set():
        api = Api(str(kubeconfig))
        api.client.user_agent = AGENT
        server = urllib.parse.urlparse(api.client.configuration.host)
        runtime = Runtime(api, catalog, state, server.port or 443)
        log.info("started: runs %s", ", ".join(sorted(catalog.runnables)) or "nothing")
        threading.Thread(target=runtime.watch, name="watch pods", daemon=True).start()
        if not any(not r.stand_in for repo, r in catalog.runnables.items() if repo == CAINJECTOR):
            threading.Thread(target=runtime.inject_ca_bundles, name="inject caBundles", daemon=True).start()
        stop.wait()
        runtime.shutdown()
    proxy.shutdown()
    proxy.server_close()
    log.info("stopped")
    return 0


class _LoopbackOnly:
    """The egress resolver before the runtime has the API: loopback targets only (kwok's kubelet endpoints)."""

    @staticmethod
    def resolve(host: str, port: int) -> tuple[str | None, str, int]:
        if host == "localhost":
            return None, "127.0.0.1", port
        try:
            if ipaddress.ip_address(host).is_loopback:
                return None, host, port
        except ValueError:
            pass
        raise Unreachable("the runtime is not connected to the API yet")


_loopback_only = _LoopbackOnly()


if __name__ == "__main__":
    sys.exit(main())
