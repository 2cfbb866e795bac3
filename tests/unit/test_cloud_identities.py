"""Every cloud identity type against local fakes of its token service and a real API server that demands the token.

The fake Google token URI, STS and Nebius IAM (testing/doubles/fake_clouds.py) verify signatures and forms; the
real API server (testing/cluster, one per module) authenticates bearer tokens through our token webhook
(testing/cluster/token_webhook.py), which asks the fakes (`FakeClouds.accepts`): it answers 401 Unauthorized
without a token they handed out, and without any credentials (anonymous-auth=false).
"""

from __future__ import annotations

import base64
import json
import os
import re
import stat
import subprocess
import sys
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
import yaml
from ansible_collections.modelplane.serving.plugins.module_utils.servingstack import cloud_identity as ci
from ansible_collections.modelplane.serving.plugins.module_utils.servingstack.target import parse_credential
from cluster.fixtures import running_cluster
from cluster.token_webhook import token_kubeconfig, token_webhook
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from doubles.fake_clouds import FakeClouds, b64url_decode, fake_clouds_fixture  # noqa: F401  # pylint: disable=unused-import
from doubles.token_endpoint import _self_signed, pem_private_key

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
WHERE = "spec.secrets[1]"
EKS_ARN = "arn:aws:eks:eu-west-1:123456789012:cluster/west-eks"
WEB_IDENTITY_TOKEN = "eyJhbGciOiJSUzI1NiJ9.web-identity-token-payload.signature-part"
# The token a target's kubeconfig carries: the module replaces it with the identity's; the API server refuses it.
KUBECONFIG_TOKEN = "kubeconfig-token-not-the-identity"


@pytest.fixture(scope="module")
def rsa_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


@pytest.fixture(scope="module")
def other_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def google_key(clouds: FakeClouds, key: rsa.RSAPrivateKey) -> str:
    return json.dumps({
        "type": "service_account", "project_id": "west", "private_key_id": "k1", "private_key": pem_private_key(key),
        "client_email": "stack@west.iam.gserviceaccount.com", "token_uri": clouds.url("/google/token"),
    })


def google_user(clouds: FakeClouds) -> str:
    return json.dumps({
        "type": "authorized_user", "client_id": "cid.apps.googleusercontent.com",
        "client_secret": "d-FL95Q19q7MQmFpd7hHD0Ty",
        "refresh_token": "1//0refresh-token-value", "token_uri": clouds.url("/google/token"),
    })


def aws_credential(clouds: FakeClouds, **extra: str) -> str:
    return json.dumps({"roleARN": clouds.role_arn, "webIdentityToken": WEB_IDENTITY_TOKEN,
                       "stsEndpoint": clouds.url("/sts/"), **extra})


def nebius_key(clouds: FakeClouds, key: rsa.RSAPrivateKey, flat: bool = False) -> str:
    if flat:
        return json.dumps({"private_key": pem_private_key(key), "public_key_id": "publickey-e00abc",
                           "account_id": "serviceaccount-e00xyz", "tokenEndpoint": clouds.url("/nebius/exchange")})
    return json.dumps({"subject-credentials": {
        "alg": "RS256", "private-key": pem_private_key(key), "kid": "publickey-e00abc",
        "iss": "serviceaccount-e00xyz", "sub": "serviceaccount-e00xyz",
    }, "tokenEndpoint": clouds.url("/nebius/exchange")})


def register(clouds: FakeClouds, key: rsa.RSAPrivateKey) -> None:
    """What the clouds know: the accounts' public keys, the web identity token, the EKS cluster name."""
    clouds.google_accounts["stack@west.iam.gserviceaccount.com"] = key.public_key()
    clouds.google_users["1//0refresh-token-value"] = ("cid.apps.googleusercontent.com", "d-FL95Q19q7MQmFpd7hHD0Ty")
    clouds.web_identity_tokens.add(WEB_IDENTITY_TOKEN)
    clouds.nebius_keys["publickey-e00abc"] = ("serviceaccount-e00xyz", key.public_key())
    clouds.eks_cluster = "west-eks"


def mint(clouds: FakeClouds, identity_type: str, credential: str, cluster: dict[str, str] | None = None,
         ca_file: str | None = None) -> ci.Minted:
    """What the module does: validate the credential, then mint a token with it, trusting the fake clouds' CA."""
    return ci.mint({"type": identity_type, "credential": parse_credential(identity_type, credential, WHERE),
                    "where": WHERE, "ca_file": ca_file or clouds.cert_file, "cluster": cluster})


def credential_for(kind: str, clouds: FakeClouds, key: rsa.RSAPrivateKey) -> tuple[str, str]:
    return {
        "google": (ci.GOOGLE, google_key(clouds, key)),
        "google-user": (ci.GOOGLE, google_user(clouds)),
        "aws": (ci.AWS, aws_credential(clouds)),
        "nebius": (ci.NEBIUS, nebius_key(clouds, key)),
        "nebius-flat": (ci.NEBIUS, nebius_key(clouds, key, flat=True)),
    }[kind]


SECRET_PARTS = ("PRIVATE KEY", "d-FL95Q19q7MQmFpd7hHD0Ty", "1//0refresh-token-value", "web-identity-token-payload")


def assert_no_secret(text: str, *extra: str) -> None:
    for part in (*SECRET_PARTS, *extra):
        assert part not in text


# --------------------------------------------------------------------------- minting against the fakes


@pytest.mark.parametrize("kind", ["google", "google-user", "aws", "nebius", "nebius-flat"])
def test_each_identity_mints_a_token_the_cloud_verified(fake_clouds, rsa_key, kind):
    register(fake_clouds, rsa_key)
    identity_type, credential = credential_for(kind, fake_clouds, rsa_key)
    minted = mint(fake_clouds, identity_type, credential,
                  cluster={"name": EKS_ARN, "server": "https://ABC.gr7.eu-west-1.eks.amazonaws.com"})
    assert fake_clouds.accepts(minted.token), fake_clouds.requests[-1][0]
    assert minted.expires_at > ci.time.time() + 600


def test_the_eks_token_is_a_presigned_get_caller_identity_for_the_cluster(fake_clouds, rsa_key):
    register(fake_clouds, rsa_key)
    token = mint(fake_clouds, ci.AWS, aws_credential(fake_clouds), cluster={"name": EKS_ARN, "server": "https://x"}).token
    assert token.startswith("k8s-aws-v1.") and "=" not in token
    url = b64url_decode(token[len("k8s-aws-v1."):]).decode()
    query = {k: v[0] for k, v in parse_qs(urlsplit(url).query).items()}
    assert url.startswith(fake_clouds.url("/sts/?Action=GetCallerIdentity&Version=2011-06-15&"))
    assert query["X-Amz-Expires"] == "60"
    assert query["X-Amz-SignedHeaders"] == "host;x-k8s-aws-id"
    assert query["X-Amz-Credential"].split("/")[2:] == ["eu-west-1", "sts", "aws4_request"]  # region of the ARN
    # The STS form was the unsigned AssumeRoleWithWebIdentity one.
    path, form, headers = fake_clouds.requests[-1]
    assert path == "/sts/" and form["RoleArn"] == [fake_clouds.role_arn] and "Authorization" not in headers
    # Signed for another cluster name, the signature no longer verifies.
    fake_clouds.eks_cluster = "another-cluster"
    assert not fake_clouds.eks_token_valid(token)
    fake_clouds.eks_cluster = "west-eks"
    tampered = "k8s-aws-v1." + base64.urlsafe_b64encode(url.replace("X-Amz-Expires=60", "X-Amz-Expires=61").encode()
                                                        ).decode().rstrip("=")
    assert fake_clouds.eks_token_valid(token) and not fake_clouds.eks_token_valid(tampered)


@pytest.mark.parametrize(
    ("cluster", "secret_extra", "expected"),
    [
        ({"name": EKS_ARN, "server": ""}, {}, {"cluster": "west-eks", "region": "eu-west-1"}),
        ({"name": "plain", "server": "https://ABC.yl4.ap-south-1.eks.amazonaws.com"}, {},
         {"cluster": "plain", "region": "ap-south-1"}),
        ({"name": "plain", "server": "https://203.0.113.9"}, {}, {"cluster": "plain", "region": "us-east-1"}),
        ({"name": EKS_ARN, "server": ""}, {"clusterName": "other", "region": "us-west-2"},
         {"cluster": "other", "region": "us-west-2"}),
    ],
)
def test_aws_cluster_name_and_region_resolution(cluster, secret_extra, expected):
    aws = parse_credential(ci.AWS, json.dumps({"roleARN": "arn:aws:iam::123456789012:role/r", "webIdentityToken": "t",
                                               **secret_extra}), WHERE)
    assert ci.aws_target(aws, cluster, WHERE) == expected


@pytest.mark.parametrize("kind", ["google", "aws", "nebius"])
def test_a_wrong_key_fails_clearly_without_quoting_it(fake_clouds, rsa_key, other_key, kind):
    register(fake_clouds, rsa_key)
    identity_type, credential = credential_for(kind, fake_clouds, other_key)
    if kind == "aws":
        credential = aws_credential(fake_clouds).replace("web-identity-token-payload", "web-identity-token-payloaX")
    with pytest.raises(ci.CredentialError) as error:
        mint(fake_clouds, identity_type, credential, cluster={"name": EKS_ARN, "server": ""})
    message = str(error.value)
    assert message.startswith(f"{WHERE}: ")
    assert ("invalid_grant" in message) if kind != "aws" else ("InvalidIdentityToken" in message)
    assert_no_secret(message, "payloaX")


# --------------------------------------------------------------------------- validation before any network call


def _pem(curve_key) -> str:
    return pem_private_key(curve_key)


ROLE = "arn:aws:iam::123456789012:role/r"
BAD = [
    (ci.GOOGLE, "not json at all", "is not a Google credential"),
    (ci.GOOGLE, json.dumps(["a"]), "expected a JSON object"),
    (ci.GOOGLE, json.dumps({"type": "service_account", "client_email": "a@b"}), "lacks private_key"),
    (ci.GOOGLE, json.dumps({"type": "authorized_user", "client_id": "c", "refresh_token": "r"}), "lacks client_secret"),
    (ci.GOOGLE, json.dumps({"type": "external_account", "audience": "//iam"}), "type is external_account: only"),
    (ci.GOOGLE, json.dumps({"type": "service_account", "client_email": "a@b",
                            "private_key": "-----BEGIN PRIVATE KEY-----\nQUJD\n-----END PRIVATE KEY-----\n"}),
     "private_key is not a PEM private key"),
    (ci.GOOGLE, json.dumps({"type": "authorized_user", "client_id": "c", "client_secret": "s", "refresh_token": "r",
                            "token_uri": "http://plain.example/token"}), "token_uri must be an https:// URL"),
    (ci.AWS, "roleARN: x", "expected a JSON object"),
    (ci.AWS, json.dumps({"webIdentityToken": "secret-web-token"}), "lacks roleARN"),
    (ci.AWS, json.dumps({"roleARN": ROLE}), "lacks webIdentityToken"),
    (ci.AWS, json.dumps({"roleARN": "role/r", "webIdentityToken": "secret-web-token"}),
     "roleARN must be an IAM role ARN"),
    (ci.AWS, json.dumps({"roleARN": ROLE, "webIdentityToken": "secret-web-token", "region": "mars"}),
     "region must be an AWS region name"),
    (ci.AWS, json.dumps({"roleARN": ROLE, "webIdentityToken": "secret-web-token", "roleSessionName": "x"}),
     "roleSessionName must be 2-64 letters"),
    (ci.AWS, json.dumps({"roleARN": ROLE, "webIdentityToken": "secret-web-token", "clusterName": 5}),
     "clusterName must be a non-empty string"),
    (ci.AWS, json.dumps({"roleARN": ROLE, "webIdentityToken": "secret-web-token", "stsEndpoint": "http://sts"}),
     "stsEndpoint must be an https:// URL"),
    (ci.AWS, json.dumps({"roleARN": ROLE, "webIdentityToken": "secret-web-token", "secretAccessKey": "x"}),
     "unknown fields secretAccessKey"),
    (ci.NEBIUS, json.dumps({"foo": 1}), "lacks private_key, public_key_id, account_id"),
    (ci.NEBIUS, json.dumps({"subject-credentials": "x"}), "subject-credentials must be a JSON object"),
    (ci.NEBIUS, json.dumps({"subject-credentials": {"alg": "RS256", "kid": "k", "iss": "a", "sub": "a"}}),
     "lacks subject-credentials.private-key"),
    (ci.NEBIUS, json.dumps({"subject-credentials": {"alg": "ES256", "private-key": "secret-pem", "kid": "k",
                                                    "iss": "a", "sub": "a"}}), "subject-credentials.alg: only RS256"),
    (ci.NEBIUS, json.dumps({"subject-credentials": {"private-key": "secret-pem", "kid": "k", "iss": "a",
                                                    "sub": "b"}}), "iss and sub must both be"),
    (ci.NEBIUS, json.dumps({"subject-credentials": {"private-key": "secret-pem", "kid": "k", "iss": "a", "sub": "a"}}),
     "subject-credentials.private-key is not a PEM private key"),
    (ci.NEBIUS, json.dumps({"private_key": "secret-pem", "account_id": "a"}), "lacks public_key_id"),
    (ci.NEBIUS, json.dumps({"private_key": "secret-pem", "account_id": "a", "public_key_id": "k",
                            "tokenEndpoint": "ftp://x"}), "tokenEndpoint must be an https:// URL"),
]


@pytest.mark.parametrize(("identity_type", "credential", "expected"), BAD)
def test_a_wrong_shape_is_refused_naming_the_field_and_the_rule(identity_type, credential, expected):
    with pytest.raises(ci.CredentialError) as error:
        parse_credential(identity_type, credential, WHERE)
    message = str(error.value)
    assert message.startswith(f"{WHERE}: ")
    assert expected in message
    assert_no_secret(message, "secret-web-token", "secret-pem", "QUJD")


def test_an_ec_key_is_refused_as_not_rsa():
    credential = json.dumps({"subject-credentials": {"private-key": _pem(ec.generate_private_key(ec.SECP256R1())),
                                                     "kid": "k", "iss": "a", "sub": "a"}})
    with pytest.raises(ci.CredentialError, match=r"subject-credentials.private-key is not an RSA key"):
        parse_credential(ci.NEBIUS, credential, WHERE)


# --------------------------------------------------------------------------- TLS: the libraries verify the endpoints


@pytest.mark.parametrize("kind", ["google", "aws", "nebius"])
def test_an_endpoint_the_ca_file_does_not_vouch_for_is_refused_before_any_request(
        fake_clouds, rsa_key, kind, monkeypatch, tmp_path):
    register(fake_clouds, rsa_key)
    identity_type, credential = credential_for(kind, fake_clouds, rsa_key)
    # The libraries' own CA variables would trust the fake clouds: the given ca_file must win over them.
    for variable in ("REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "AWS_CA_BUNDLE", "SSL_CERT_FILE"):
        monkeypatch.setenv(variable, fake_clouds.cert_file)
    (tmp_path / "other").mkdir()
    other_ca, _key = _self_signed(tmp_path / "other")
    with pytest.raises(ci.CredentialError) as error:
        mint(fake_clouds, identity_type, credential, cluster={"name": EKS_ARN, "server": ""}, ca_file=str(other_ca))
    assert re.fullmatch(rf"{re.escape(WHERE)}: token endpoint https://localhost:\d+/\S*: CERTIFICATE_VERIFY_FAILED",
                        str(error.value)), str(error.value)
    assert fake_clouds.requests == []


@pytest.mark.parametrize("kind", ["google", "aws", "nebius"])
def test_without_a_ca_file_the_system_trust_store_is_used_as_ssl_cert_file_sets_it(
        fake_clouds, rsa_key, kind, monkeypatch):
    register(fake_clouds, rsa_key)
    identity_type, credential = credential_for(kind, fake_clouds, rsa_key)
    validated = parse_credential(identity_type, credential, WHERE)
    cluster = {"name": EKS_ARN, "server": ""}
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    with pytest.raises(ci.CredentialError, match="CERTIFICATE_VERIFY_FAILED"):
        ci.mint({"type": identity_type, "credential": validated, "where": WHERE, "cluster": cluster})
    monkeypatch.setenv("SSL_CERT_FILE", fake_clouds.cert_file)
    assert fake_clouds.accepts(ci.mint({"type": identity_type, "credential": validated, "where": WHERE,
                                        "cluster": cluster}).token)


# --------------------------------------------------------------------------- the exec plugin's cache


def test_the_plugin_answers_from_its_cache_and_refreshes_near_expiry(fake_clouds, rsa_key, tmp_path, capsys):
    register(fake_clouds, rsa_key)
    config = {"type": ci.NEBIUS, "credential": parse_credential(ci.NEBIUS, nebius_key(fake_clouds, rsa_key), WHERE),
              "where": WHERE, "ca_file": fake_clouds.cert_file, "cluster": {}, "cache": str(tmp_path / "token.json")}
    now = int(ci.time.time())
    first = ci.plugin_token(config, now=now)
    assert stat.S_IMODE(os.stat(config["cache"]).st_mode) == 0o600
    calls = len(fake_clouds.requests)
    assert ci.plugin_token(config, now=now + 600) == first  # cached: no new request
    assert len(fake_clouds.requests) == calls
    # Within five minutes of expiry a new token is minted (the fake issues unique tokens).
    ci.store_token(config["cache"], ci.Minted(first.token, now + ci.REFRESH_MARGIN_SECONDS - 1))
    refreshed = ci.plugin_token(config, now=now)
    assert refreshed.token != first.token and len(fake_clouds.requests) == calls + 1
    # The plugin prints it as an ExecCredential, from the cache.
    (tmp_path / "config.json").write_text(json.dumps(config))
    assert ci.plugin_main([str(tmp_path / "config.json")]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert (printed["kind"], printed["status"]["token"]) == ("ExecCredential", refreshed.token)
    assert printed["status"]["expirationTimestamp"] == ci.datetime.datetime.fromtimestamp(
        refreshed.expires_at, tz=ci.datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert len(fake_clouds.requests) == calls + 1


def test_the_plugin_reports_a_missing_configuration_without_a_traceback(tmp_path, capsys):
    assert ci.plugin_main([str(tmp_path / "absent.json")]) == 1
    assert ci.plugin_main([]) == 1
    errors = capsys.readouterr().err.splitlines()
    assert [line.split(": ")[0] for line in errors] == ["modelplane.serving cloud identity"] * 2
    assert "FileNotFoundError" in errors[0] and "IndexError" in errors[1]


# --------------------------------------------------------------------------- the API server's token check


@pytest.fixture(scope="module")
def token_cluster(tmp_path_factory):
    """One real cluster for the module whose API server takes bearer tokens through our webhook and refuses
    requests without credentials; the kubeconfig's client certificate (the admin) keeps working."""
    workdir = tmp_path_factory.mktemp("identities")
    with token_webhook(workdir / "webhook", anonymous=False) as webhook, \
            running_cluster(workdir / "cluster", nodes=1, gpu_nodes=0, operator_double=False, audit=False,
                            apiserver_args=webhook.apiserver_args) as handle:
        yield handle, webhook


@pytest.fixture
def target(token_cluster):
    """The cluster and its webhook, accepting nothing until the test says what (``tokens``, ``accept``)."""
    handle, webhook = token_cluster
    webhook.tokens.clear()
    webhook.accept = None
    webhook.reviews.clear()
    yield handle, webhook
    webhook.tokens.clear()
    webhook.accept = None


def test_the_api_server_answers_401_without_an_accepted_bearer_token(target):
    import ssl
    import urllib.error
    import urllib.request

    cluster, webhook = target
    webhook.tokens.add("right-token")
    context = ssl.create_default_context(cafile=cluster.ca_file)

    def get(token: str | None) -> tuple[int, dict]:
        request = urllib.request.Request(cluster.url + "/api/v1/namespaces")
        if token:
            request.add_header("Authorization", f"Bearer {token}")
        try:
            with urllib.request.urlopen(request, context=context, timeout=30) as response:
                return response.status, json.loads(response.read())
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read())

    for token in (None, "wrong-token"):
        code, status = get(token)
        assert (code, status["reason"], status["message"]) == (401, "Unauthorized", "Unauthorized")
    assert get("right-token")[0] == 200
    assert [(review.token, bool(review.username)) for review in webhook.reviews] == [
        ("wrong-token", False), ("right-token", True)]


# --------------------------------------------------------------------------- module -> kubeconfig -> cluster read


def target_kubeconfig(cluster, name: str) -> str:
    """The target cluster's kubeconfig as a Kubeconfig secret would hold it: the real API server, its CA, and a
    token the API server refuses (the module must authenticate as the identity instead)."""
    return yaml.safe_dump(token_kubeconfig(cluster.url, cluster.ca_file, token=KUBECONFIG_TOKEN, name=name))


def without_cluster_env() -> dict[str, str]:
    """This process's environment without the admin kubeconfig running_cluster puts there: only the kubeconfig
    the module writes may reach the cluster."""
    return {key: value for key, value in os.environ.items() if key not in ("KUBECONFIG", "K8S_AUTH_KUBECONFIG")}


def _run_module_and_read(tmp_path: Path, cluster, identity_type: str, credential: str, ca_file: str,
                         cluster_name: str = "target") -> subprocess.CompletedProcess[str]:
    """The servingstack_kubeconfig module, then kubernetes.core.k8s_info with the kubeconfig, under -vvv."""
    dest = tmp_path / "kubeconfig"  # where the module writes it, in tmp_path given as its dest
    play = [{
        "name": "Authenticate as the cloud identity and read the cluster",
        "hosts": "localhost", "connection": "local", "gather_facts": False,
        "tasks": [
            {"name": "Write the kubeconfig.", "no_log": True, "register": "written",
             "modelplane.serving.servingstack_kubeconfig": {
                 "content": target_kubeconfig(cluster, cluster_name),
                 "dest": str(tmp_path), "identity_type": identity_type, "identity_credential": credential,
                 "identity_path": WHERE, "ca_file": ca_file}},
            {"name": "Read namespaces as that identity.", "register": "read",
             "kubernetes.core.k8s_info": {"kubeconfig": str(dest), "kind": "Namespace", "api_version": "v1"}},
            {"name": "Report.", "ansible.builtin.debug": {
                "msg": "read {{ read.resources | length }} namespaces as {{ written.authenticated_as }}"}},
        ],
    }]
    path = tmp_path / "play.yml"
    path.write_text(yaml.safe_dump(play))
    env = {**without_cluster_env(), "ANSIBLE_COLLECTIONS_PATH": str(REPO / ".collections"),
           "ANSIBLE_CONFIG": str(REPO / "ansible.cfg"), "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}",
           "ANSIBLE_NOCOLOR": "1"}
    return subprocess.run(
        [str(BIN / "ansible-playbook"), "-vvv", "-i", "localhost,", "-e",
         "ansible_python_interpreter=" + sys.executable, str(path)],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=300, check=False)


@pytest.mark.parametrize("kind", ["google", "aws", "nebius"])
def test_each_identity_reads_a_cluster_that_demands_its_token(fake_clouds, rsa_key, tmp_path, kind, target):
    register(fake_clouds, rsa_key)
    identity_type, credential = credential_for(kind, fake_clouds, rsa_key)
    cluster, webhook = target
    webhook.accept = fake_clouds.accepts
    result = _run_module_and_read(tmp_path, cluster, identity_type, credential, fake_clouds.cert_file,
                                  cluster_name=EKS_ARN if kind == "aws" else "target")
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert f"namespaces as {identity_type}" in output
    assert fake_clouds.rejected == []
    # The API server asked the webhook: the read went through a token the fake cloud issued.
    assert webhook.accepted() and webhook.refused() == []
    # The kubeconfig's user is the exec plugin; its directory and files are private.
    dest = tmp_path / "kubeconfig"
    identity_dir = tmp_path / "identity"
    assert stat.S_IMODE(identity_dir.stat().st_mode) == 0o700
    for path in (dest, *identity_dir.iterdir()):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
    config = yaml.safe_load(dest.read_text())
    user_name = config["contexts"][0]["context"]["user"]
    user = next(u["user"] for u in config["users"] if u["name"] == user_name)
    assert set(user) == {"exec"}
    assert user["exec"]["args"] == [str(identity_dir / "plugin.py"), str(identity_dir / "config.json")]
    # The Python client, run anew, reads through the plugin too.
    from kubernetes import client as kclient
    from kubernetes import config as kconfig

    api = kclient.CoreV1Api(kconfig.new_client_from_config(config_file=str(dest)))
    assert api.list_namespace().items is not None
    # So do the real helm and kubectl (client-go's exec credential support).
    for tool in (["kubectl", "get", "namespaces"], ["helm", "list", "--all-namespaces", "--output", "json"]):
        run = subprocess.run([str(BIN / tool[0]), *tool[1:], "--kubeconfig", str(dest)], capture_output=True,
                             text=True, timeout=120, check=False, env={**without_cluster_env(), "HOME": str(tmp_path)})
        assert run.returncode == 0, run.stderr
    assert fake_clouds.rejected == []
    # A long run: the cached token is about to expire, so the next client gets a freshly minted one.
    cache = identity_dir / "token.json"
    stale = json.loads(cache.read_text())
    ci.store_token(str(cache), ci.Minted(stale["token"], int(ci.time.time()) + 60))
    minted_before = len(fake_clouds.issued) + len(fake_clouds.sts_credentials)
    run = subprocess.run([str(BIN / "kubectl"), "get", "namespaces", "--kubeconfig", str(dest)],
                         capture_output=True, text=True, timeout=120, check=False, env=without_cluster_env())
    assert run.returncode == 0, run.stderr
    assert len(fake_clouds.issued) + len(fake_clouds.sts_credentials) == minted_before + 1
    fresh = json.loads(cache.read_text())["token"]
    assert fresh != stale["token"]
    assert webhook.accepted()[-1] == fresh, "the API server was last shown the fresh token"
    tokens = [*fake_clouds.issued, *(part for pair in fake_clouds.sts_credentials.values() for part in pair)]
    assert_no_secret(output, "k8s-aws-v1.", *tokens)
    assert "PRIVATE" not in dest.read_text()


def test_a_wrong_key_through_the_module_fails_clearly_and_shows_no_secret(
        fake_clouds, rsa_key, other_key, tmp_path, target):
    register(fake_clouds, rsa_key)
    credential = nebius_key(fake_clouds, other_key)
    cluster, webhook = target
    webhook.accept = fake_clouds.accepts
    result = _run_module_and_read(tmp_path, cluster, ci.NEBIUS, credential, fake_clouds.cert_file)
    output = result.stdout + result.stderr
    assert result.returncode == 2, output
    assert f"{WHERE}: the token endpoint returned no access_token (invalid_grant)" in output
    assert "Traceback" not in output
    key_body = "".join(pem_private_key(other_key).splitlines()[1:-1])
    for chunk in range(0, len(key_body) - 24, 24):
        assert key_body[chunk:chunk + 24] not in output
    assert_no_secret(output)
    assert not (tmp_path / "kubeconfig").exists()
    assert webhook.reviews == [], "the module failed before any request to the cluster"


def test_a_malformed_credential_through_the_module_fails_before_any_request(fake_clouds, rsa_key, tmp_path, target):
    register(fake_clouds, rsa_key)
    cluster, webhook = target
    credential = aws_credential(fake_clouds, region="mars")
    result = _run_module_and_read(tmp_path, cluster, ci.AWS, credential, fake_clouds.cert_file)
    output = result.stdout + result.stderr
    assert result.returncode == 2, output
    assert f"{WHERE}: region must be an AWS region name (like us-west-2)" in output
    assert "Traceback" not in output
    assert_no_secret(output)
    assert fake_clouds.requests == [] and webhook.reviews == []
    assert not (tmp_path / "kubeconfig").exists()


@pytest.mark.parametrize("token", [KUBECONFIG_TOKEN, None], ids=["refused-token", "no-credentials"])
def test_an_unauthenticated_kubeconfig_gets_401_from_the_api_server(tmp_path, target, token):
    from kubernetes import client as kclient
    from kubernetes import config as kconfig

    cluster, webhook = target
    webhook.tokens.add("only-this")
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(token_kubeconfig(cluster.url, cluster.ca_file, token=token)))
    api = kclient.CoreV1Api(kconfig.new_client_from_config(config_file=str(path)))
    with pytest.raises(kclient.ApiException) as error:
        api.list_namespace()
    assert error.value.status == 401


def test_the_plugin_script_runs_on_its_own(fake_clouds, rsa_key, tmp_path):
    """The module's copy of cloud_identity.py runs as a plugin: an ExecCredential on stdout, nothing secret in argv."""
    from ansible_collections.modelplane.serving.plugins.modules import servingstack_kubeconfig as module

    register(fake_clouds, rsa_key)
    config = {"type": ci.GOOGLE, "credential": parse_credential(ci.GOOGLE, google_key(fake_clouds, rsa_key), WHERE),
              "where": WHERE, "ca_file": fake_clouds.cert_file, "cluster": {}}
    seed = ci.Minted("seed-token", 0)  # already expired: the plugin must mint a new one
    argv = module.write_identity_dir(str(tmp_path / "identity"), config, seed)
    assert all("PRIVATE" not in arg for arg in argv)
    result = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 0, result.stderr
    credential = json.loads(result.stdout)
    assert credential["apiVersion"] == "client.authentication.k8s.io/v1"
    assert credential["status"]["token"] in fake_clouds.issued


# --------------------------------------------------------------------------- through the servingstack role


def run_play(tmp_path, play: list, cluster, **env: str) -> tuple[subprocess.CompletedProcess[str], str]:
    """ansible-playbook -vvv of ``play`` on localhost, reading the management cluster ``cluster`` through
    K8S_AUTH_KUBECONFIG (with ``env`` added): the run and its whole output."""
    (tmp_path / "play.yml").write_text(yaml.safe_dump(play))
    env = {**without_cluster_env(), "ANSIBLE_COLLECTIONS_PATH": str(REPO / ".collections"),
           "ANSIBLE_CONFIG": str(REPO / "ansible.cfg"), "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}",
           "K8S_AUTH_KUBECONFIG": cluster.kubeconfig, "ANSIBLE_NOCOLOR": "1", **env}
    result = subprocess.run(
        [str(BIN / "ansible-playbook"), "-vvv", "-i", "localhost,", "-e",
         "ansible_python_interpreter=" + sys.executable, str(tmp_path / "play.yml")],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=300, check=False)
    return result, result.stdout + result.stderr


@pytest.mark.parametrize("kind", ["aws", "nebius"])
def test_the_role_reads_the_identity_secret_and_cleans_up(fake_clouds, rsa_key, tmp_path, kind, target):
    """roles/servingstack connect.yml (servingstack_kubeconfig with the spec) -> k8s_info on the target as the
    identity -> disconnect.yml removes the private directory with the kubeconfig and the identity's files in it. One
    real cluster plays both: the management cluster (its admin kubeconfig holds the secrets) and the target (reached
    by the token alone)."""
    from kubernetes import client as kclient
    from kubernetes import config as kconfig

    register(fake_clouds, rsa_key)
    identity_type, credential = credential_for(kind, fake_clouds, rsa_key)
    cluster, webhook = target
    webhook.accept = fake_clouds.accepts
    namespace = f"platform-{kind}"
    api = kclient.CoreV1Api(kconfig.new_client_from_config(config_file=cluster.kubeconfig))
    api.create_namespace({"metadata": {"name": namespace}})
    for name, key, value in (("west-kubeconfig", "kubeconfig", target_kubeconfig(cluster, EKS_ARN)),
                             ("west-identity", "credentials.json", credential)):
        api.create_namespaced_secret(namespace, {"metadata": {"name": name}, "stringData": {key: value}})
    spec = {"secrets": [{"type": "Kubeconfig", "name": "west-kubeconfig", "key": "kubeconfig"},
                        {"type": identity_type, "name": "west-identity", "key": "credentials.json"}]}
    play = [{
        "name": "Credentials through the role", "hosts": "localhost", "connection": "local",
        "gather_facts": False,
        "vars": {"servingstack_spec": spec, "servingstack_manifest": {"metadata": {"namespace": namespace}}},
        "tasks": [
            {"name": "Fetch the credentials.", "ansible.builtin.include_role": {
                "name": "modelplane.serving.servingstack", "tasks_from": "connect"}},
            {"name": "Read the target.", "register": "read", "kubernetes.core.k8s_info": {
                "kubeconfig": "{{ servingstack_target_kubeconfig }}", "kind": "Namespace", "api_version": "v1"}},
            {"name": "Remember the paths.", "ansible.builtin.set_fact": {
                "written": "{{ servingstack_target_kubeconfig }}"}},
            {"name": "Clean up.", "ansible.builtin.include_role": {
                "name": "modelplane.serving.servingstack", "tasks_from": "disconnect"}},
            {"name": "Report.", "ansible.builtin.debug": {"msg": "wrote {{ written }}"}},
        ],
    }]
    # The role passes no CA file: the fake clouds' CA is trusted the way a private CA would be.
    result, output = run_play(tmp_path, play, cluster, SSL_CERT_FILE=fake_clouds.cert_file)
    assert result.returncode == 0, output
    assert fake_clouds.rejected == [] and (fake_clouds.issued or fake_clouds.sts_credentials)
    # The target was read with the identity's token (the management reads with the admin's client certificate).
    assert webhook.accepted() and webhook.refused() == []
    written = Path(re.search(r"wrote (/\S+/kubeconfig)\s", output).group(1))
    assert written.parent.name.endswith(".servingstack")
    assert not written.parent.exists()
    assert_no_secret(output, "k8s-aws-v1.", *fake_clouds.issued)


def test_the_module_names_every_unusable_secret_at_once_and_writes_nothing(tmp_path, target):
    """servingstack_kubeconfig with a spec reads both Secrets from the management cluster (K8S_AUTH_KUBECONFIG) and
    fails naming each that cannot serve, one missing and one without the key, never their data."""
    from kubernetes import client as kclient
    from kubernetes import config as kconfig

    cluster, _webhook = target
    namespace = "platform-unusable"
    api = kclient.CoreV1Api(kconfig.new_client_from_config(config_file=cluster.kubeconfig))
    api.create_namespace({"metadata": {"name": namespace}})
    api.create_namespaced_secret(namespace, {"metadata": {"name": "west-identity"},
                                             "stringData": {"other": "s3cr3t-credential"}})
    spec = {"secrets": [{"type": "Kubeconfig", "name": "west-missing", "key": "kubeconfig"},
                        {"type": ci.GOOGLE, "name": "west-identity", "key": "credentials.json"}]}
    play = [{"name": "Credentials from the spec", "hosts": "localhost", "connection": "local", "gather_facts": False,
             "tasks": [{"name": "Write the kubeconfig.", "modelplane.serving.servingstack_kubeconfig": {
                 "spec": spec, "namespace": namespace}}]}]
    result, output = run_play(tmp_path, play, cluster, TMPDIR=str(tmp_path))
    assert result.returncode == 2, output
    assert (f"failed: spec.secrets[0]: Secret {namespace}/west-missing was not found on the management cluster; "
            f"spec.secrets[1]: Secret {namespace}/west-identity has no key 'credentials.json' (keys: other)") in output
    assert "s3cr3t" not in output
    assert list(tmp_path.glob("*.servingstack")) == []
