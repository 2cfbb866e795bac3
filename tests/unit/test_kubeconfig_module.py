"""The servingstack_kubeconfig module through ansible-playbook: 0600 files, token minted, nothing secret in output."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import yaml

# Importing the fixture function registers the token_server fixture for this module.
from doubles.token_endpoint import token_server_fixture  # noqa: F401  # pylint: disable=unused-import
from test_cloud_identity import KUBECONFIG, _pem

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def _playbook(tmp_path: Path, args: dict, no_log: bool = True, env: dict | None = None
              ) -> subprocess.CompletedProcess[str]:
    play = [{
        "name": "Write a kubeconfig",
        "hosts": "localhost",
        "connection": "local",
        "gather_facts": False,
        "tasks": [{
            "name": "Write it.",
            "modelplane.serving.servingstack_kubeconfig": args,
            "no_log": no_log,
            "register": "written",
        }, {
            "name": "Show what is safe to show.",
            "ansible.builtin.debug": {"msg": "{{ written.authenticated_as }} {{ written.k8s.kubeconfig }}"},
        }],
    }]
    path = tmp_path / "play.yml"
    path.write_text(yaml.safe_dump(play))
    env = {
        **os.environ,
        "ANSIBLE_COLLECTIONS_PATH": str(REPO / ".collections"),
        "ANSIBLE_CONFIG": str(REPO / "ansible.cfg"),
        "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}",
        **(env or {}),
    }
    return subprocess.run(
        [str(BIN / "ansible-playbook"), "-vvv", "-e", "ansible_python_interpreter=" + sys.executable, str(path)],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=120, check=False,
    )


def test_writes_the_kubeconfig_private_and_unchanged_into_a_new_private_dir(tmp_path):
    result = _playbook(tmp_path, {"content": KUBECONFIG}, env={"TMPDIR": str(tmp_path)})
    assert result.returncode == 0, result.stdout + result.stderr
    [made] = tmp_path.glob("*.servingstack")
    dest = made / "kubeconfig"
    assert stat.S_IMODE(made.stat().st_mode) == 0o700 and stat.S_IMODE(dest.stat().st_mode) == 0o600
    assert yaml.safe_load(dest.read_text()) == yaml.safe_load(KUBECONFIG)
    assert "kubeconfig " + str(dest) in result.stdout
    assert "gke-gcloud-auth-plugin" not in result.stdout + result.stderr


def test_a_kubeconfig_file_is_used_in_place(tmp_path):
    src = tmp_path / "target.yaml"
    src.write_text(KUBECONFIG)
    (tmp_path / "private").mkdir()
    result = _playbook(tmp_path, {"src": str(src), "dest": str(tmp_path / "private")})
    assert result.returncode == 0, result.stdout + result.stderr
    assert "kubeconfig " + str(src) in result.stdout
    assert list((tmp_path / "private").iterdir()) == []


def test_google_identity_replaces_the_user_and_never_shows_the_token(tmp_path, token_server):
    from cryptography.hazmat.primitives.asymmetric import rsa

    url, cert_file, received = token_server
    key_json = json.dumps({
        "type": "service_account",
        "private_key_id": "k1",
        "private_key": _pem(rsa.generate_private_key(public_exponent=65537, key_size=2048)),
        "client_email": "stack@west.iam.gserviceaccount.com",
        "token_uri": url,
    })
    dest = tmp_path / "kubeconfig"
    result = _playbook(tmp_path, {
        "content": KUBECONFIG,
        "dest": str(tmp_path),
        "identity_type": "GoogleApplicationCredentials",
        "identity_credential": key_json,
        "identity_path": "spec.secrets[1]",
        "ca_file": str(cert_file),
    })
    assert result.returncode == 0, result.stdout + result.stderr
    users = {u["name"]: u["user"] for u in yaml.safe_load(dest.read_text())["users"]}
    # The user is the exec credential plugin, whose cache holds the token minted by the module.
    identity_dir = tmp_path / "identity"
    assert users["gke-user"]["exec"]["args"] == [str(identity_dir / "plugin.py"), str(identity_dir / "config.json")]
    assert json.loads((identity_dir / "token.json").read_text())["token"] == "local-token"
    assert len(received) == 1
    output = result.stdout + result.stderr
    assert "GoogleApplicationCredentials " + str(dest) in output
    for secret in ("local-token", "BEGIN PRIVATE KEY", "gke-gcloud-auth-plugin"):
        assert secret not in output


def test_a_kubeconfig_that_is_not_one_fails_cleanly_and_leaves_no_directory(tmp_path):
    result = _playbook(tmp_path, {"content": "just: text"}, no_log=False, env={"TMPDIR": str(tmp_path)})
    assert result.returncode == 2
    assert "failed: content is not a kubeconfig: it has no clusters" in result.stdout + result.stderr
    assert "Traceback" not in result.stdout + result.stderr
    assert list(tmp_path.glob("*.servingstack")) == []


def test_a_spec_whose_secrets_name_no_secret_fails_naming_every_gap_before_any_read(tmp_path):
    spec = {"secrets": [{"type": "Kubeconfig", "name": "kc"}, {"type": "AWSWebIdentityCredentials", "key": "k"}]}
    result = _playbook(tmp_path, {"spec": spec, "namespace": "platform"}, no_log=False, env={"TMPDIR": str(tmp_path)})
    assert result.returncode == 2
    output = result.stdout + result.stderr
    assert "failed: spec.secrets[0].key: is required; spec.secrets[1].name: is required" in output
    assert list(tmp_path.glob("*.servingstack")) == []


def test_with_a_spec_the_identity_comes_from_its_secret_only(tmp_path):
    spec = {"secrets": [{"type": "Kubeconfig", "name": "kc", "key": "kubeconfig", "namespace": "platform"}]}
    args = {"spec": spec, "dest": str(tmp_path), "identity_type": "AWSWebIdentityCredentials",
            "identity_credential": "{}"}
    result = _playbook(tmp_path, args, no_log=False)
    assert result.returncode == 2
    assert "missing parameter(s) required by 'identity_type': content" in result.stdout + result.stderr
    assert not (tmp_path / "kubeconfig").exists()


def test_credentials_read_from_secrets_are_censored_in_every_message(monkeypatch):
    """What the module reads itself was never a no_log option: it must tell Ansible, which then censors both values
    in any message or result (a library error quoting them included)."""
    import base64
    from types import SimpleNamespace

    from ansible_collections.modelplane.serving.plugins.modules import servingstack_kubeconfig as module_file

    credential = '{"type": "service_account", "private_key": "s3cr3t"}'
    secret = {"data": {"kubeconfig": base64.b64encode(KUBECONFIG.encode()).decode(),
                       "credentials.json": base64.b64encode(credential.encode()).decode()}}
    monkeypatch.setattr(module_file, "read_secrets", lambda _module, refs: [secret] * len(refs))
    fake = SimpleNamespace(params={"spec": {"secrets": [
        {"type": "Kubeconfig", "name": "west", "key": "kubeconfig"},
        {"type": "GoogleApplicationCredentials", "name": "west", "key": "credentials.json"}]},
        "namespace": "platform", "content": None, "src": None}, _module=SimpleNamespace(no_log_values=set()))
    config, identity = module_file.target_config(fake)
    assert config == yaml.safe_load(KUBECONFIG)
    assert identity == ("GoogleApplicationCredentials", credential, "spec.secrets[1]")
    assert fake._module.no_log_values == {KUBECONFIG, credential}
