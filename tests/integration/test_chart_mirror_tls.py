"""servingstack_chart_mirror against a mirror that demands TLS with a private CA and credentials.

The test charts are served over HTTPS (a CA of the test's own) with HTTP basic auth on 127.0.0.1; site.yml converges
the Standard stack from there with the real helm. The password must never reach the run's output nor stay on disk,
nor any helm process's command line (which any local user reads in /proc while helm runs): helm repo add and helm
registry login take it on stdin.
"""

from __future__ import annotations

import datetime
import ipaddress
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from realclients import HELM_BINARIES, binary, helm_params
from stack_support import CHARTS, REPO, SITE, helm_calls, output, releases, stack_vars

pytestmark = [pytest.mark.playbook, pytest.mark.slow]

USER, PASSWORD = "robot$ci", "s3cret-mirror-pa55word"


def ca_and_server_cert(directory: Path) -> tuple[Path, Path, Path]:
    """(ca.pem, server.pem, server.key): a CA and a certificate for 127.0.0.1 it signs."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "test mirror CA")])
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name).public_key(ca_key.public_key())
          .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
          .not_valid_after(now + datetime.timedelta(days=1))
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True).sign(ca_key, hashes.SHA256()))
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (x509.CertificateBuilder().subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")]))
            .issuer_name(ca_name).public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                           critical=False).sign(ca_key, hashes.SHA256()))
    paths = (directory / "ca.pem", directory / "server.pem", directory / "server.key")
    paths[0].write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    paths[1].write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    paths[2].write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    os.chmod(paths[2], 0o600)
    return paths


@pytest.fixture(scope="module")
def secure_mirror(tmp_path_factory):
    import sys

    if str(CHARTS) not in sys.path:
        sys.path.insert(0, str(CHARTS))
    import fixtures  # testing/charts/fixtures.py

    fixtures.skip_without_upstream()
    work = tmp_path_factory.mktemp("secure-mirror")
    ca, cert, key = ca_and_server_cert(work)
    charts = work / "charts"
    # Relative chart URLs in index.yaml: helm fetches them from the mirror it was given, with its credentials.
    fixtures.load_build().build(charts, helm=fixtures.helm_binary(), upstream=fixtures.upstream_dir())
    server = fixtures.serve(charts, 1800, tls=(cert, key), basic_auth=(USER, PASSWORD))
    yield server, ca
    server.stop()


def test_a_converge_from_a_tls_mirror_with_credentials_keeps_the_password_out_of_sight(
        fresh_cluster, secure_mirror):
    cluster = fresh_cluster
    server, ca = secure_mirror
    mirror = {"url": server.url, "username": USER, "password": PASSWORD, "ca_file": str(ca)}
    private_tmp = Path(cluster.workdir) / "tmp"
    private_tmp.mkdir()
    spied = Path(cluster.workdir) / "helm-argv.log"
    result = cluster.run_playbook(SITE, extra_vars=stack_vars(cluster, servingstack_chart_mirror=mirror),
                                  env={"TMPDIR": str(private_tmp), **cluster.helm_spy(spied)})
    assert result.rc == 0, output(result)
    # No helm process had the password on its command line; the repository was added (once per component that
    # installs from it) with it on stdin.
    calls = helm_calls(spied)
    assert [call for call in calls if any(PASSWORD in arg for arg in call)] == []
    added = [call for call in calls if call[:2] == ["repo", "add"]]
    assert added and all("--password-stdin" in call for call in added), added
    # The run's private directory (kubeconfig files and helm's repository configuration with the credentials) is gone.
    assert [path.name for path in private_tmp.iterdir() if "servingstack" in path.name] == []
    assert {r["status"] for r in releases(cluster).values()} == {"deployed"} and len(releases(cluster)) == 9
    # Every chart came from the mirror, with the credentials (a request without them is refused and retried by
    # helm with them: at least one authorized download per release).
    downloads = [path for path, authorized in server.seen if authorized and path.endswith(".tgz")]
    assert len(downloads) >= 9, server.seen
    assert PASSWORD not in result.stdout + result.stderr
    # Not in helm's own configuration either (the private one is removed with the run's directory). The extra-vars
    # file run_playbook wrote (vars-*.yml) is this test's input, not something the run left.
    leftovers = [path for path in Path(cluster.workdir).rglob("*") if path.is_file()
                 and not path.name.startswith("vars-") and PASSWORD.encode() in path.read_bytes()]
    assert leftovers == [], leftovers


def test_a_wrong_password_fails_clearly_and_says_nothing_of_it(fresh_cluster, secure_mirror):
    cluster = fresh_cluster
    server, ca = secure_mirror
    wrong = "not-the-pa55word-at-all"
    mirror = {"url": server.url, "username": USER, "password": wrong, "ca_file": str(ca)}
    result = cluster.run_playbook(SITE, extra_vars=stack_vars(cluster, servingstack_chart_mirror=mirror))
    assert result.rc != 0, output(result)
    assert wrong not in result.stdout + result.stderr
    assert "401" in result.stdout or "Unauthorized" in result.stdout, output(result)


def test_without_the_ca_helm_refuses_the_mirrors_certificate(fresh_cluster, secure_mirror):
    cluster = fresh_cluster
    server, _ca = secure_mirror
    mirror = {"url": server.url, "username": USER, "password": PASSWORD}
    result = cluster.run_playbook(SITE, extra_vars=stack_vars(cluster, servingstack_chart_mirror=mirror))
    assert result.rc != 0, output(result)
    assert "certificate signed by unknown authority" in result.stdout, output(result)
    assert PASSWORD not in result.stdout + result.stderr


# The login tasks alone (roles/component/tasks/login.yml), with no cluster: what a helm process is given.
LOGIN_PLAY = """
- name: Log in to the chart mirror, as a component does before its releases reach helm.
  hosts: localhost
  gather_facts: false
  tasks:
    - name: Run the component role's login tasks.
      ansible.builtin.include_role:
        name: modelplane.serving.component
        tasks_from: login.yml
"""

# A helm that records its arguments and what it reads on stdin (one JSON line per process), then runs the helm
# HELM_SPY_REAL names, if any, with the same arguments and stdin.
SPY = """#!{python}
import json, os, sys
data = sys.stdin.read() if not sys.stdin.isatty() else ""
if sys.argv[1:] == ["version"] and not os.environ.get("HELM_SPY_REAL"):
    print('version.BuildInfo{{Version:"v3.17.2", GitCommit:"", GitTreeState:"clean", GoVersion:"go1.23.7"}}')
    sys.exit(0)
with open(os.environ["HELM_SPY_LOG"], "a", encoding="utf-8") as log:
    log.write(json.dumps({{"argv": sys.argv[1:], "stdin": data}}) + "\\n")
real = os.environ.get("HELM_SPY_REAL")
if real:
    import subprocess
    sys.exit(subprocess.run([real, *sys.argv[1:]], input=data, text=True).returncode)
"""


def spy_helm(directory: Path) -> Path:
    (directory / "bin").mkdir()
    script = directory / "bin" / "helm"
    script.write_text(SPY.format(python=sys.executable))
    script.chmod(0o755)
    return script


def run_logins(work: Path, mirror: Any, helm: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """login.yml for every login of ``mirror``, with ``helm`` as the helm binary; its configuration in ``work``."""
    from ansible_collections.modelplane.serving.plugins.module_utils.servingstack import mirror as mirrors

    logins = mirrors.logins(mirrors.parse(mirror))
    playbook = work / "login.yml"
    playbook.write_text(LOGIN_PLAY)
    variables = work / "vars.yml"
    # What roles/component/tasks/main.yml sets: the component's charts, with the logins their releases use.
    variables.write_text(yaml.safe_dump({"component_charts": {"logins": logins}, "component_helm_binary": str(helm)}))
    helm_home = {"HELM_REPOSITORY_CONFIG": str(work / "helm" / "repositories.yaml"),
                 "HELM_REPOSITORY_CACHE": str(work / "helm" / "cache"),
                 "HELM_REGISTRY_CONFIG": str(work / "helm" / "registry.json"),
                 "HELM_CONFIG_HOME": str(work / "helm"), "HELM_CACHE_HOME": str(work / "helm" / "cache"),
                 "HELM_DATA_HOME": str(work / "helm" / "data")}
    return subprocess.run(
        [str(REPO / ".venv" / "bin" / "ansible-playbook"), "-i", "localhost,", "-c", "local", str(playbook),
         "-e", f"ansible_python_interpreter={sys.executable}", "-e", f"@{variables}"],
        capture_output=True, text=True, cwd=REPO, timeout=300, check=False,
        env={**os.environ, **helm_home, "HELM_SPY_LOG": str(work / "helm-spy.log"), **env})


def spied(work: Path) -> list[dict[str, Any]]:
    log = work / "helm-spy.log"
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def test_mirror_logins_give_helm_the_password_on_stdin_never_on_its_command_line(tmp_path):
    """A classic repository (helm repo add) and an OCI registry (helm registry login), each with credentials."""
    mirror = {"url": "oci://registry.example.internal/charts", "username": USER, "password": PASSWORD,
              "charts": {"kube-prometheus-stack": {"url": "https://charts.example.internal/prometheus",
                                                   "username": "robot$prom", "password": PASSWORD + "-2",
                                                   "insecure_skip_tls_verify": True}}}
    result = run_logins(tmp_path, mirror, spy_helm(tmp_path), {})
    assert result.returncode == 0, result.stdout + result.stderr
    calls = spied(tmp_path)
    assert sorted(call["argv"][:2] for call in calls) == [["registry", "login"], ["repo", "add"]], calls
    for call in calls:
        assert not any(PASSWORD in arg for arg in call["argv"]), call["argv"]
        assert "--password-stdin" in call["argv"]
    repo_add = next(call for call in calls if call["argv"][:2] == ["repo", "add"])
    assert repo_add["stdin"].rstrip("\n") == PASSWORD + "-2"
    assert repo_add["argv"][3:] == ["https://charts.example.internal/prometheus", "--username", "robot$prom",
                                    "--password-stdin", "--insecure-skip-tls-verify"]
    login = next(call for call in calls if call["argv"][:2] == ["registry", "login"])
    assert login["stdin"].rstrip("\n") == PASSWORD
    assert PASSWORD not in result.stdout + result.stderr


@pytest.mark.parametrize("major", helm_params())
def test_the_real_helm_adds_a_credentialed_repository_from_stdin(tmp_path, secure_mirror, major):
    """helm 3 and 4 read the password from stdin: the repository they record then downloads a chart."""
    server, ca = secure_mirror
    real = binary(HELM_BINARIES[major])
    mirror = {"url": server.url, "username": USER, "password": PASSWORD, "ca_file": str(ca)}
    result = run_logins(tmp_path, mirror, spy_helm(tmp_path), {"HELM_SPY_REAL": str(real)})
    assert result.returncode == 0, result.stdout + result.stderr
    [call] = spied(tmp_path)
    assert call["argv"][:2] == ["repo", "add"] and "--password-stdin" in call["argv"]
    assert not any(PASSWORD in arg for arg in call["argv"])
    repositories = tmp_path / "helm" / "repositories.yaml"
    assert repositories.stat().st_mode & 0o077 == 0, oct(repositories.stat().st_mode)
    [entry] = yaml.safe_load(repositories.read_text())["repositories"]
    assert (entry["url"], entry["username"], entry["password"]) == (server.url, USER, PASSWORD)
    # The credentials helm recorded work: the mirror answers an authorized chart download.
    env = {**os.environ, "HELM_REPOSITORY_CONFIG": str(repositories),
           "HELM_REPOSITORY_CACHE": str(tmp_path / "helm" / "cache"), "HELM_CONFIG_HOME": str(tmp_path / "helm"),
           "HELM_CACHE_HOME": str(tmp_path / "helm" / "cache"), "HELM_DATA_HOME": str(tmp_path / "helm" / "data"),
           "SSL_CERT_FILE": str(ca)}
    (tmp_path / "pulled").mkdir()
    pulled = subprocess.run([str(real), "pull", f"{entry['name']}/cert-manager", "-d", str(tmp_path / "pulled")],
                            capture_output=True, text=True, env=env, timeout=120, check=False)
    assert pulled.returncode == 0, pulled.stderr
    [chart] = (tmp_path / "pulled").iterdir()
    assert chart.name.startswith("cert-manager-")


def test_a_repository_helm_cannot_add_is_named_with_helms_reason_and_no_password(tmp_path, secure_mirror):
    server, ca = secure_mirror
    wrong = "not-the-pa55word-at-all"
    mirror = {"url": server.url, "username": USER, "password": wrong, "ca_file": str(ca)}
    result = run_logins(tmp_path, mirror, binary(HELM_BINARIES[3]), {})
    assert result.returncode != 0
    assert f"servingstack_chart_mirror: helm repo add {server.url} failed:" in result.stdout, result.stdout
    assert "401 Unauthorized" in result.stdout, result.stdout
    assert wrong not in result.stdout + result.stderr


def test_no_task_hands_helm_a_password_for_its_command_line():
    """kubernetes.core.helm puts chart_repo_username/chart_repo_password on helm's command line, and
    kubernetes.core.helm_repository repo_password (--password=): no task of the collection uses either. A
    credentialed classic repository is added by login.yml (stdin) and charts named <repository>/<chart>; an OCI
    registry is logged in with kubernetes.core.helm_registry_auth (--password-stdin)."""
    offending = []
    for path in sorted([*(REPO / "roles").rglob("*.yml"), *(REPO / "playbooks").glob("*.yml")]):
        for task in _tasks(yaml.safe_load(path.read_text())):
            for module in ("kubernetes.core.helm", "kubernetes.core.helm_repository", "helm", "helm_repository"):
                args = task.get(module)
                if isinstance(args, dict) and {"chart_repo_password", "repo_password", "password",
                                               "pass_credentials"} & set(args):
                    offending.append(f"{path.relative_to(REPO)}: {task.get('name')}")
    assert offending == []


def _tasks(node: Any) -> list[dict[str, Any]]:
    """Every task mapping in a parsed task file or playbook, blocks and plays included."""
    if isinstance(node, list):
        return [task for item in node for task in _tasks(item)]
    if not isinstance(node, dict):
        return []
    found = [node]
    for key in ("tasks", "pre_tasks", "post_tasks", "handlers", "block", "rescue", "always"):
        found += _tasks(node.get(key))
    return found
