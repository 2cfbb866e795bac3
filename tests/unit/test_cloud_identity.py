"""Cloud identity authentication: Google credentials to bearer tokens through google-auth."""

from __future__ import annotations

import base64
import json
import re
import time
import urllib.parse

import pytest
import yaml
from ansible_collections.modelplane.serving.plugins.module_utils.servingstack import cloud_identity as ci
from ansible_collections.modelplane.serving.plugins.module_utils.servingstack.target import parse_credential
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa

# Importing the fixture function registers the token_server fixture for this module.
from doubles.token_endpoint import token_server_fixture  # noqa: F401  # pylint: disable=unused-import

WHERE = "spec.secrets[1]"


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


def test_mint_posts_a_jwt_signed_with_the_key_for_the_account_and_returns_the_token(rsa_key, sa_json, token_server):
    url, cert_file, received = token_server
    credential = parse_credential(ci.GOOGLE, json.dumps({**json.loads(sa_json), "token_uri": url}), WHERE)
    before = time.time()
    minted = ci.mint({"type": ci.GOOGLE, "credential": credential, "where": WHERE, "ca_file": str(cert_file)})
    # The local endpoint answers no expires_in: the token is taken to last the hour Google gives.
    assert minted.token == "local-token" and before + 3500 < minted.expires_at < time.time() + 3700
    [form] = [urllib.parse.parse_qs(body.decode()) for body in received]
    assert form["grant_type"] == ["urn:ietf:params:oauth:grant-type:jwt-bearer"]
    header_b64, claims_b64, signature_b64 = form["assertion"][0].split(".")
    header, claims = json.loads(_b64url_decode(header_b64)), json.loads(_b64url_decode(claims_b64))
    assert header == {"alg": "RS256", "typ": "JWT", "kid": "k1"}
    # Google's audience for every JWT-bearer grant, whichever token_uri the grant is posted to.
    assert claims["iss"] == "stack@west.iam.gserviceaccount.com"
    assert claims["aud"] == "https://oauth2.googleapis.com/token"
    assert claims["exp"] - claims["iat"] == 3600
    assert set(claims["scope"].split()) == set(ci.GOOGLE_SCOPES)
    # Raises InvalidSignature if the signature does not match the account's key.
    rsa_key.public_key().verify(
        _b64url_decode(signature_b64), f"{header_b64}.{claims_b64}".encode(), padding.PKCS1v15(), hashes.SHA256()
    )


@pytest.mark.parametrize(
    ("credential", "expected"),
    [
        ("not json at all", "is not a Google credential"),
        (json.dumps({"type": "authorized_user"}), "lacks client_id, client_secret, refresh_token"),
        (json.dumps({"type": "external_account"}), "type is external_account: only service_account"),
        (json.dumps({"type": "service_account"}), "lacks client_email, private_key"),
        (json.dumps({"type": "service_account", "client_email": "a@b"}), "lacks private_key"),
    ],
)
def test_bad_google_credentials_are_refused_without_echoing_them(credential, expected):
    with pytest.raises(ci.CredentialError) as error:
        parse_credential(ci.GOOGLE, credential, WHERE)
    assert str(error.value).startswith(f"{WHERE}: ")
    assert expected in str(error.value)
    assert credential not in str(error.value)


def test_a_non_rsa_key_is_refused(sa_json):
    info = json.loads(sa_json)
    info["private_key"] = _pem(ec.generate_private_key(ec.SECP256R1()))
    with pytest.raises(ci.CredentialError, match=r"^spec.secrets\[1\]: private_key is not an RSA key$"):
        parse_credential(ci.GOOGLE, json.dumps(info), WHERE)


@pytest.mark.parametrize("identity_type", [ci.AWS, ci.NEBIUS])
def test_other_identities_refuse_a_credential_that_is_not_json(identity_type):
    # Every type is supported; test_cloud_identities.py covers AWS and Nebius end to end.
    with pytest.raises(ci.CredentialError, match=r"^spec.secrets\[1\]: is not an? .*expected a JSON object"):
        parse_credential(identity_type, "whatever", WHERE)


def test_an_unknown_identity_type_is_refused_naming_the_known_ones():
    with pytest.raises(ci.CredentialError, match=r"'Kubeconfig' is not a cloud identity type \(GoogleApp"):
        parse_credential("Kubeconfig", "{}", WHERE)


# --- the libraries' transport against a real local HTTPS endpoint: verification is on ---


def test_an_endpoint_the_ca_does_not_vouch_for_is_refused_before_any_request(sa_json, token_server, monkeypatch):
    url, _cert_file, received = token_server
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.delenv("REQUESTS_CA_BUNDLE", raising=False)
    credential = parse_credential(ci.GOOGLE, json.dumps({**json.loads(sa_json), "token_uri": url}), WHERE)
    expected = rf"^{re.escape(WHERE)}: token endpoint https://localhost:\d+/token: CERTIFICATE_VERIFY_FAILED$"
    with pytest.raises(ci.CredentialError, match=expected):
        ci.mint({"type": ci.GOOGLE, "credential": credential, "where": WHERE})
    assert received == []
