"""Cloud identity authentication: Google service-account keys to bearer tokens, kubeconfig rewriting."""

from __future__ import annotations

import base64
import json
import urllib.parse

import pytest
import yaml
from ansible_collections.modelplane.serving.plugins.module_utils.servingstack import cloud_identity as ci
from ansible_collections.modelplane.serving.plugins.modules.servingstack_kubeconfig import post_form
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa

# Importing the fixture function registers the token_server fixture for this module.
from doubles.token_endpoint import token_server_fixture  # noqa: F401  # pylint: disable=unused-import


def _b64url_decode(part: str) -> bytes:
    return base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))


@pytest.fixture(scope="module")
def rsa_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def _pem(key) -> str:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()


@pytest.fixture(scope="module")
def sa_json(rsa_key) -> str:
    return json.dumps({
        "type": "service_account",
        "project_id": "west",
        "private_key_id": "k1",
        "private_key": _pem(rsa_key),
        "client_email": "stack@west.iam.gserviceaccount.com",
        "token_uri": "https://oauth2.example.test/token",
    })


KUBECONFIG = yaml.safe_dump({
    "apiVersion": "v1",
    "kind": "Config",
    "clusters": [{"name": "gke", "cluster": {"server": "https://203.0.113.5"}}],
    "users": [
        {"name": "gke-user", "user": {"exec": {"command": "gke-gcloud-auth-plugin", "apiVersion": "x"}}},
        {"name": "other", "user": {"token": "keep-me"}},
    ],
    "contexts": [{"name": "west", "context": {"cluster": "gke", "user": "gke-user"}}],
    "current-context": "west",
})


def test_google_assertion_is_a_valid_rs256_jwt_for_the_account(rsa_key, sa_json):
    account = ci.load_google_credential(sa_json, "spec.secrets[1]")
    token = ci.google_assertion(account, now=1_700_000_000)
    header_b64, claims_b64, signature_b64 = token.split(".")
    header = json.loads(_b64url_decode(header_b64))
    claims = json.loads(_b64url_decode(claims_b64))
    assert header == {"alg": "RS256", "typ": "JWT", "kid": "k1"}
    assert claims["iss"] == "stack@west.iam.gserviceaccount.com"
    assert claims["aud"] == "https://oauth2.example.test/token"
    assert claims["exp"] - claims["iat"] == 3600
    assert "https://www.googleapis.com/auth/cloud-platform" in claims["scope"].split()
    # Raises InvalidSignature if the signature does not match the account's key.
    rsa_key.public_key().verify(
        _b64url_decode(signature_b64), f"{header_b64}.{claims_b64}".encode(), padding.PKCS1v15(), hashes.SHA256()
    )


def test_mint_posts_the_jwt_bearer_grant_and_returns_the_token_and_its_expiry(sa_json):
    seen: dict[str, object] = {}

    def post(url: str, body: bytes) -> bytes:
        seen["url"] = url
        seen["form"] = urllib.parse.parse_qs(body.decode())
        return json.dumps({"access_token": "ya29.token", "expires_in": 3599, "token_type": "Bearer"}).encode()

    minted = ci.mint(ci.GOOGLE, sa_json, "spec.secrets[1]", post=post, now=1_700_000_000)
    assert (minted.token, minted.expires_at) == ("ya29.token", 1_700_000_000 + 3599)
    assert seen["url"] == "https://oauth2.example.test/token"
    form = seen["form"]
    assert form["grant_type"] == ["urn:ietf:params:oauth:grant-type:jwt-bearer"]
    assert form["assertion"][0].count(".") == 2


@pytest.mark.parametrize(
    ("credential", "expected"),
    [
        ("not json at all", "is not a Google credential"),
        (json.dumps({"type": "authorized_user"}), "lacks client_id, client_secret, refresh_token"),
        (json.dumps({"type": "external_account"}), "type external_account Google credentials are not supported"),
        (json.dumps({"type": "service_account", "client_email": "a@b"}), "lacks private_key"),
    ],
)
def test_bad_google_credentials_are_refused_without_echoing_them(credential, expected):
    with pytest.raises(ci.CredentialError) as error:
        ci.mint(ci.GOOGLE, credential, "spec.secrets[1]", post=lambda *args: b"{}")
    assert str(error.value).startswith("spec.secrets[1]: ")
    assert expected in str(error.value)
    assert credential not in str(error.value)


def test_a_non_rsa_key_is_refused(sa_json):
    info = json.loads(sa_json)
    info["private_key"] = _pem(ec.generate_private_key(ec.SECP256R1()))
    with pytest.raises(ci.CredentialError, match="not an RSA key"):
        ci.mint(ci.GOOGLE, json.dumps(info), "spec.secrets[1]", post=lambda *args: b"{}")


def test_a_token_endpoint_error_is_reported_by_its_oauth_error_code(sa_json):
    with pytest.raises(ci.CredentialError, match=r"no access_token \(invalid_grant\)"):
        ci.mint(ci.GOOGLE, sa_json, "spec.secrets[1]", post=lambda *args: b'{"error": "invalid_grant"}')


@pytest.mark.parametrize("identity_type", [ci.AWS, ci.NEBIUS])
def test_other_identities_refuse_a_credential_that_is_not_json(identity_type):
    # Every type is supported; test_cloud_identities.py covers AWS and Nebius end to end.
    with pytest.raises(ci.CredentialError, match=r"^spec.secrets\[1\]: is not an? .*expected a JSON object"):
        ci.mint(identity_type, "whatever", "spec.secrets[1]", post=lambda *args: b"{}")


def test_kubeconfig_with_exec_replaces_only_the_current_user():
    argv = ["/usr/bin/python3", "/private/plugin.py", "/private/config.json"]
    rewritten = yaml.safe_load(ci.kubeconfig_with_exec(KUBECONFIG, argv))
    users = {u["name"]: u["user"] for u in rewritten["users"]}
    assert users["gke-user"] == {"exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": argv[0],
                                          "args": argv[1:], "interactiveMode": "Never", "provideClusterInfo": False}}
    assert users["other"] == {"token": "keep-me"}
    assert rewritten["current-context"] == "west"
    assert rewritten["clusters"] == yaml.safe_load(KUBECONFIG)["clusters"]


def test_kubeconfig_without_a_current_context_is_refused():
    config = yaml.safe_load(KUBECONFIG)
    config["contexts"].append({"name": "east", "context": {"cluster": "gke", "user": "other"}})
    del config["current-context"]
    with pytest.raises(ci.CredentialError, match="no current-context"):
        ci.kubeconfig_with_exec(yaml.safe_dump(config), ["plugin"])


# --- the module's post_form against a real local HTTPS endpoint: verification is on by default ---


def test_post_form_verifies_the_endpoint_certificate_by_default(token_server):
    url, _cert_file, received = token_server
    with pytest.raises(ci.CredentialError, match="CERTIFICATE_VERIFY_FAILED"):
        post_form(url, b"a=b")
    assert received == []


def test_post_form_trusts_a_given_ca_and_returns_the_body(token_server):
    url, cert_file, received = token_server
    assert json.loads(post_form(url, b"a=b", ca_file=str(cert_file))) == {"access_token": "local-token"}
    assert received == [b"a=b"]


def test_post_form_refuses_plain_http():
    with pytest.raises(ci.CredentialError, match="only https://"):
        post_form("http://127.0.0.1:1/token", b"a=b")
