# Copyright 2026 The modelplane.serving authors
# Apache License 2.0 (see LICENSE)
"""Authenticate to the target cluster as a cloud identity instead of the kubeconfig's own user.

The reference: a ServingStack secret of a cloud identity type makes the serving stack
"authenticate to the cluster as that identity instead of using the kubeconfig's embedded
credentials". This module turns such a credential into a bearer token and a kubeconfig that
carries it. Pure functions: the one network call, a form POST to a token endpoint, is passed in.

No message here ever includes credential data or tokens.
"""

from __future__ import annotations

import base64
import copy
import json
import time
import urllib.parse
from collections.abc import Callable
from typing import Any

GOOGLE = "GoogleApplicationCredentials"
AWS = "AWSWebIdentityCredentials"
NEBIUS = "NebiusServiceAccountCredentials"
CLOUD_IDENTITY_TYPES = (GOOGLE, AWS, NEBIUS)

GOOGLE_TOKEN_URI = "https://oauth2.googleapis.com/token"
# GKE accepts any Google OAuth access token with the cloud-platform scope (what gcloud's
# gke-gcloud-auth-plugin mints); the userinfo.email scope lets RBAC see the account's email.
GOOGLE_SCOPES = (
    "https://www.googleapis.com/auth/cloud-platform",
    "https://www.googleapis.com/auth/userinfo.email",
)
JWT_BEARER_GRANT = "urn:ietf:params:oauth:grant-type:jwt-bearer"
TOKEN_LIFETIME_SECONDS = 3600


class CredentialError(ValueError):
    """A credential that cannot be used; the message never quotes the credential."""


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def load_google_service_account(text: str, where: str) -> dict[str, str]:
    """The fields of a Google service-account key (the JSON ``gcloud iam service-accounts keys create`` writes)."""
    try:
        info = json.loads(text)
    except (TypeError, ValueError):
        raise CredentialError(
            f"{where}: is not a Google service-account key (expected the JSON key file; the value is not shown)"
        ) from None
    if not isinstance(info, dict) or info.get("type") != "service_account":
        raise CredentialError(f"{where}: is not a Google service-account key (its JSON has no type service_account)")
    missing = [field for field in ("client_email", "private_key") if not isinstance(info.get(field), str)]
    if missing:
        raise CredentialError(f"{where}: the service-account key lacks {', '.join(missing)}")
    return {
        "client_email": info["client_email"],
        "private_key": info["private_key"],
        "private_key_id": str(info.get("private_key_id") or ""),
        "token_uri": str(info.get("token_uri") or GOOGLE_TOKEN_URI),
    }


def google_assertion(account: dict[str, str], now: int) -> str:
    """A signed RS256 JWT asserting ``account`` for the OAuth 2.0 JWT-bearer grant (RFC 7523)."""
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import padding, rsa

    try:
        key = serialization.load_pem_private_key(account["private_key"].encode("utf-8"), password=None)
    except (ValueError, TypeError):
        raise CredentialError("the service-account key's private_key is not a PEM private key") from None
    if not isinstance(key, rsa.RSAPrivateKey):
        raise CredentialError("the service-account key's private_key is not an RSA key")
    header = {"alg": "RS256", "typ": "JWT"}
    if account.get("private_key_id"):
        header["kid"] = account["private_key_id"]
    claims = {
        "iss": account["client_email"],
        "scope": " ".join(GOOGLE_SCOPES),
        "aud": account["token_uri"],
        "iat": now,
        "exp": now + TOKEN_LIFETIME_SECONDS,
    }
    signing_input = f"{_b64url(json.dumps(header).encode())}.{_b64url(json.dumps(claims).encode())}"
    signature = key.sign(signing_input.encode("ascii"), padding.PKCS1v15(), hashes.SHA256())
    return f"{signing_input}.{_b64url(signature)}"


def google_token_request(account: dict[str, str], now: int) -> tuple[str, bytes]:
    """The URL and form body that exchange ``account``'s assertion for an access token."""
    body = urllib.parse.urlencode({"grant_type": JWT_BEARER_GRANT, "assertion": google_assertion(account, now)})
    return account["token_uri"], body.encode("ascii")


def access_token_from(response_body: bytes, where: str) -> str:
    """The ``access_token`` of an OAuth 2.0 token response."""
    try:
        payload = json.loads(response_body)
    except ValueError:
        raise CredentialError(f"{where}: the token endpoint did not answer with JSON") from None
    token = payload.get("access_token") if isinstance(payload, dict) else None
    if not isinstance(token, str) or not token:
        error = payload.get("error") if isinstance(payload, dict) else None
        raise CredentialError(f"{where}: the token endpoint returned no access_token ({error or 'no error given'})")
    return token


# POSTs a form body to a URL and returns the response body. The module passes one built on
# ansible.module_utils.urls.open_url (certificate verification on); tests pass their own.
Poster = Callable[[str, bytes], bytes]


def exchange(identity_type: str, credential: str, where: str, post: Poster, now: int | None = None) -> str:
    """A bearer token for the cloud identity ``credential`` of type ``identity_type``."""
    issued_at = int(time.time()) if now is None else now
    if identity_type == GOOGLE:
        account = load_google_service_account(credential, where)
        url, body = google_token_request(account, issued_at)
        return access_token_from(post(url, body), where)
    if identity_type in (AWS, NEBIUS):
        raise CredentialError(
            f"{where}: {identity_type} is not supported by this release of modelplane.serving yet; "
            "remove the entry to use the kubeconfig's own credentials, or use GoogleApplicationCredentials"
        )
    known = ", ".join(CLOUD_IDENTITY_TYPES)
    raise CredentialError(f"{where}: {identity_type!r} is not a cloud identity type ({known})")


def kubeconfig_with_token(kubeconfig_text: str, token: str) -> str:
    """``kubeconfig_text`` with the current context's user replaced by a bearer ``token``.

    Only that user changes: its client certificates, exec plugin or auth provider are dropped,
    since the point is to authenticate as the cloud identity instead of them.
    """
    import yaml  # PyYAML ships with ansible-core; imported late so the module imports without it

    config = yaml.safe_load(kubeconfig_text)
    if not isinstance(config, dict):
        raise CredentialError("the kubeconfig is not a YAML mapping (the value is not shown)")
    config = copy.deepcopy(config)
    contexts = {c.get("name"): c.get("context") or {} for c in config.get("contexts") or [] if isinstance(c, dict)}
    current = config.get("current-context") or (next(iter(contexts)) if len(contexts) == 1 else None)
    if current not in contexts:
        raise CredentialError("the kubeconfig has no current-context to authenticate")
    user_name = contexts[current].get("user") or "modelplane-cloud-identity"
    users = [u for u in config.get("users") or [] if isinstance(u, dict) and u.get("name") != user_name]
    users.append({"name": user_name, "user": {"token": token}})
    config["users"] = users
    for entry in config.get("contexts") or []:
        if isinstance(entry, dict) and entry.get("name") == current:
            entry.setdefault("context", {})["user"] = user_name
    config["current-context"] = current
    return yaml.safe_dump(config, default_flow_style=False, sort_keys=False)


def select_cloud_identity(secrets: list[dict[str, Any]]) -> tuple[int, dict[str, Any]] | None:
    """The one cloud-identity entry of ``spec.secrets`` and its index, or None (the spec allows at most one)."""
    found = [(i, s) for i, s in enumerate(secrets) if isinstance(s, dict) and s.get("type") in CLOUD_IDENTITY_TYPES]
    return found[0] if found else None
