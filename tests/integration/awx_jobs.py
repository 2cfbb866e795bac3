"""Launch a job template's playbook as AWX runs it, without AWX: through `ansible-runner`, the program AWX's execution
nodes run, on a private data dir laid out as AWX's task code lays it (awx/main/tasks/jobs.py, BaseTask.run):

- ``project/``: the project's checkout (this repository, less what a clone does not have: .venv, .collections, ...);
- ``inventory/hosts``: an executable script printing the job's inventory as JSON (AWX's get_script_data; for a slice
  of a sliced job, only the slice's hosts: `sliced_hosts`), mode 0700;
- ``env/extravars``: the job's extra vars (template and survey answers), YAML;
- ``env/cmdline``: the job template's ansible-playbook arguments (``-u root``, ``--forks=N``, ``--check``, ``--diff``);
- ``env/settings``: the job timeout, ansible's output not echoed;
- ``env/envvars``: the job's environment, with each credential injected as AWX injects it: a custom credential
  type's injectors rendered (files in ``env/``, 0600), and AWX's Kubernetes bearer-token type as its
  ``kubernetes_bearer_token`` injector sets it (K8S_AUTH_HOST, K8S_AUTH_API_KEY, K8S_AUTH_VERIFY_SSL, and the CA
  written to a file in ``env/`` named by K8S_AUTH_SSL_CA_CERT).

AWX hands ansible-runner its environment as arguments (``envvars``) and runs it in the execution environment's image;
here the variables are the env/envvars file and the EE's installed collections are the checkout's .collections, named
by ANSIBLE_COLLECTIONS_PATH (as the EE's own setting would). ansible-runner starts from a bare environment (PATH, HOME,
LANG), as a container would, so nothing of the test process reaches the job but what AWX would give it.

A job's host summary is read as AWX reads it: from the ``playbook_on_stats`` event ansible-runner records.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from jinja2.sandbox import ImmutableSandboxedEnvironment

REPO = Path(__file__).resolve().parents[2]
VENV_BIN = Path(sys.executable).parent
AWX_VARS = REPO / "playbooks" / "vars" / "awx.yml"
MANAGEMENT_TYPE = "Modelplane management cluster kubeconfig"  # the credential type every template's jobs get
# What a project checkout does not hold (.gitignore'd or made by `make`).
NOT_IN_A_CLONE = shutil.ignore_patterns(".git", ".venv", ".collections", ".cache", ".pytest_cache", ".ruff_cache",
                                        ".hypothesis", ".ansible", "__pycache__", "build", "*.tar.gz")
# The counters of ansible-playbook's stats, as AWX's host summary names them (JobHostSummary) -> the recap's words.
RECAP_FIELDS = {"ok": "ok", "changed": "changed", "dark": "unreachable", "failures": "failed", "skipped": "skipped",
                "rescued": "rescued", "ignored": "ignored"}


class _Loader(yaml.SafeLoader):
    """awx.yml as Ansible reads it: `!unsafe` strings are plain strings to AWX, which renders them."""


_Loader.add_constructor("!unsafe", lambda loader, node: loader.construct_scalar(node))


def awx_vars() -> dict[str, Any]:
    return yaml.load(AWX_VARS.read_text(), Loader=_Loader)


def job_template(playbook: str, job_type: str = "run") -> dict[str, Any]:
    """The job template of awx.yml that runs ``playbook`` with ``job_type``."""
    (found,) = [t for t in awx_vars()["controller_templates"]
                if t["playbook"] == playbook and t.get("job_type", "run") == job_type]
    return found


def credential_type(name: str) -> dict[str, Any]:
    (found,) = [t for t in awx_vars()["controller_credential_types"] if t["name"] == name]
    return found


def sliced_hosts(hosts: list[str], number: int, count: int) -> list[str]:
    """AWX's slice ``number`` (1-based) of ``count`` (Inventory.get_sliced_hosts): the hosts ordered by name, every
    count-th from number-1."""
    return sorted(hosts)[number - 1::count] if count > 1 else sorted(hosts)


def script_data(exported: dict[str, Any], number: int = 1, count: int = 1) -> dict[str, Any]:
    """The inventory AWX hands a job (Inventory.get_script_data with hostvars and towervars): the slice's hosts, each
    group with those of its hosts in the slice, its children and its vars (a group with none of them is left out),
    every group a child of ``all``, the hosts in no group under ``all``, and each host's variables."""
    groups = {name: group for name, group in exported.items() if name not in ("_meta", "all", "ungrouped")}
    everyone = set(exported.get("_meta", {}).get("hostvars", {})) | {
        host for group in exported.values() if isinstance(group, dict) for host in group.get("hosts", [])}
    chosen = sliced_hosts(list(everyone), number, count)
    data: dict[str, Any] = {"all": {}}
    if exported.get("all", {}).get("vars"):
        data["all"]["vars"] = exported["all"]["vars"]
    grouped: set[str] = set()
    for name, group in groups.items():
        info: dict[str, Any] = {}
        members = [host for host in group.get("hosts", []) if host in chosen]
        grouped.update(members)
        if members:
            info["hosts"] = members
        if group.get("children"):
            info["children"] = group["children"]
        if group.get("vars"):
            info["vars"] = group["vars"]
        if info:
            data[name] = info
    data["all"]["hosts"] = [host for host in chosen if host not in grouped]
    if groups:
        data["all"]["children"] = list(groups)
    hostvars = exported.get("_meta", {}).get("hostvars", {})
    data["_meta"] = {"hostvars": {}}
    for index, host in enumerate(chosen, 1):
        variables = dict(hostvars.get(host, {}))
        for prefix in ("host", "tower"):
            variables.update({f"remote_{prefix}_enabled": "true", f"remote_{prefix}_id": index})
        data["_meta"]["hostvars"][host] = variables
    return data


def _private_file(directory: Path, content: str, mode: int = 0o600) -> Path:
    """A file of the job: a new name in ``directory``, as AWX's tempfile.mkstemp, with ``mode``."""
    handle, name = tempfile.mkstemp(dir=directory)
    os.close(handle)
    path = Path(name)
    path.chmod(mode)
    path.write_text(content)
    return path


def inject_custom_credential(private_data_dir: Path, ctype: dict[str, Any], inputs: dict[str, str]) -> dict[str, str]:
    """The environment a credential of a custom type gives a job (CredentialType.inject_credential): each file
    injector rendered into a file of ``env/``, then the env injectors rendered, `tower.filename` naming the file.
    Extra vars injectors are not handled here (none of the management cluster's type)."""
    injectors = ctype["injectors"]
    assert not injectors.get("extra_vars"), f"{ctype['name']}: extra vars injectors are not handled here"
    render = ImmutableSandboxedEnvironment()
    namespace: dict[str, Any] = {key: value for key, value in inputs.items() if value}
    files = {key: _private_file(private_data_dir / "env", render.from_string(template).render(namespace))
             for key, template in injectors.get("file", {}).items()}
    if list(files) == ["template"]:
        filename: Any = str(files["template"])
    else:
        filename = type("Files", (), {key.split(".", 1)[1]: str(path) for key, path in files.items()})()
    namespace["tower"] = namespace["awx"] = type("Tower", (), {"filename": filename})()
    return {key: render.from_string(template).render(namespace) for key, template in injectors.get("env", {}).items()}


def inject_kubernetes_bearer_token(private_data_dir: Path, host: str, bearer_token: str,
                                   ssl_ca_cert: str | None) -> dict[str, str]:
    """AWX's built-in "OpenShift or Kubernetes API Bearer Token" credential (its kubernetes_bearer_token injector):
    host and token, TLS verification on with the CA written to a file of ``env/`` (0660) when a CA is given."""
    env = {"K8S_AUTH_HOST": host, "K8S_AUTH_API_KEY": bearer_token}
    if ssl_ca_cert:
        env["K8S_AUTH_VERIFY_SSL"] = "True"
        env["K8S_AUTH_SSL_CA_CERT"] = str(_private_file(private_data_dir / "env", ssl_ca_cert, mode=0o660))
    else:
        env["K8S_AUTH_VERIFY_SSL"] = "False"
    return env


@dataclass
class Job:
    """One launched job: ansible-runner's exit status and its artifacts."""

    ident: str
    private_data_dir: Path
    rc: int
    status: str
    stdout: str
    stderr: str
    events: list[dict[str, Any]] = field(repr=False)

    @property
    def recap(self) -> dict[str, dict[str, int]]:
        """Host -> counters, from the playbook_on_stats event (what AWX's job host summaries hold)."""
        stats = [event["event_data"] for event in self.events if event.get("event") == "playbook_on_stats"]
        assert stats, f"job {self.ident} recorded no playbook_on_stats event:\n{self.stdout[-3000:]}{self.stderr}"
        hosts = {host for data in stats for key in RECAP_FIELDS for host in data.get(key) or {}}
        return {host: {word: int((stats[-1].get(key) or {}).get(host, 0)) for key, word in RECAP_FIELDS.items()}
                for host in sorted(hosts)}

    def output(self) -> str:
        return (f"job {self.ident}: status={self.status} rc={self.rc}\n{self.stdout[-6000:]}\n{self.stderr[-3000:]}")


class PrivateDataDir:
    """A job's private data dir, laid out as AWX lays it, and its launch with ansible-runner."""

    def __init__(self, root: Path, ident: str) -> None:
        self.ident = ident
        self.path = Path(tempfile.mkdtemp(prefix=f"awx_{ident}_", dir=root))
        self.path.chmod(0o700)
        for sub in ("inventory", "env"):
            (self.path / sub).mkdir(mode=0o700)
        shutil.copytree(REPO, self.path / "project", ignore=NOT_IN_A_CLONE, symlinks=True)
        self.env: dict[str, str] = {}

    def write_inventory(self, data: dict[str, Any]) -> Path:
        script = self.path / "inventory" / "hosts"
        script.write_text(f"#! /usr/bin/env python3\n# -*- coding: utf-8 -*-\nprint({json.dumps(data)!r})\n")
        script.chmod(0o700)
        return script

    def write_extra_vars(self, extra_vars: dict[str, Any]) -> None:
        path = self.path / "env" / "extravars"
        path.write_text(yaml.safe_dump(extra_vars))
        path.chmod(0o600)

    def write_cmdline(self, template: dict[str, Any]) -> None:
        """The arguments AWX gives ansible-playbook for a job of ``template`` (RunJob.build_args)."""
        args = ["-u", "root"]
        if template.get("job_type") == "check":
            args.append("--check")
        if template.get("diff_mode"):
            args.append("--diff")
        if template.get("forks"):
            args.append(f"--forks={template['forks']}")
        (self.path / "env" / "cmdline").write_text(" ".join(args))

    def launch(self, playbook: str, environment: dict[str, str], timeout: int) -> Job:
        """`ansible-runner run` on this private data dir: ``environment`` is what AWX's build_env gives the job
        (besides the credentials already injected into ``self.env``)."""
        (self.path / "env" / "envvars").write_text(yaml.safe_dump({**environment, **self.env}))
        (self.path / "env" / "envvars").chmod(0o600)
        (self.path / "env" / "settings").write_text(json.dumps({"job_timeout": timeout,
                                                                "suppress_ansible_output": True}))
        bare = {"PATH": environment.get("PATH", f"{VENV_BIN}{os.pathsep}/usr/bin:/bin"),
                "HOME": environment.get("HOME", str(self.path)), "LANG": "C.UTF-8"}
        result = subprocess.run([str(VENV_BIN / "ansible-runner"), "run", str(self.path), "--ident", self.ident,
                                 "-p", playbook, "--inventory", str(self.path / "inventory" / "hosts")],
                                env=bare, capture_output=True, text=True, timeout=timeout + 120, check=False)
        artifacts = self.path / "artifacts" / self.ident
        status = (artifacts / "status").read_text().strip() if (artifacts / "status").exists() else "missing"
        rc = int((artifacts / "rc").read_text()) if (artifacts / "rc").exists() else result.returncode
        event_files = sorted((artifacts / "job_events").glob("*.json"), key=lambda p: int(p.name.split("-", 1)[0]))
        events = [json.loads(path.read_text()) for path in event_files]
        stdout = (artifacts / "stdout").read_text() if (artifacts / "stdout").exists() else ""
        return Job(self.ident, self.path, rc, status, stdout, result.stdout + result.stderr, events)


def launch_job(root: Path, ident: str, template: dict[str, Any], inventory: dict[str, Any],
               extra_vars: dict[str, Any], management_kubeconfig: str, timeout: int, *,
               bearer_token: tuple[str, str, str] | None = None, environment: dict[str, str] | None = None) -> Job:
    """A job of ``template`` as AWX launches one: a private data dir with the inventory AWX hands the job (a slice's,
    from ``script_data``), the launch's ``extra_vars``, the template's arguments and the management cluster's
    credential (``management_kubeconfig``, the kubeconfig's text) injected, and AWX's own Kubernetes bearer-token
    credential too where ``bearer_token`` (host, token, CA certificate) is given; then ansible-runner. The job's
    environment is the execution environment's: its collections, helm and kubectl on PATH, a /tmp of its own
    (the job's ``tmp/``); ``environment`` adds to it."""
    job = PrivateDataDir(root, ident)
    job.write_inventory(inventory)
    job.write_extra_vars(extra_vars)
    job.write_cmdline(template)
    job.env.update(inject_custom_credential(job.path, credential_type(MANAGEMENT_TYPE),
                                            {"kubeconfig": management_kubeconfig}))
    if bearer_token:
        job.env.update(inject_kubernetes_bearer_token(job.path, *bearer_token))
    (job.path / "tmp").mkdir(mode=0o700)
    return job.launch(template["playbook"], {"PATH": f"{VENV_BIN}{os.pathsep}/usr/bin:/bin",
                                             "ANSIBLE_COLLECTIONS_PATH": str(REPO / ".collections"),
                                             "ANSIBLE_NOCOLOR": "1", "TMPDIR": str(job.path / "tmp"),
                                             **(environment or {})}, timeout)
