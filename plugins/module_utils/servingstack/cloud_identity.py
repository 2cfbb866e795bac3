# Copyright 2026 The modelplane.serving authors
# Apache License 2.0 (see LICENSE)
"""Authenticate to the target cluster as a cloud identity instead of the kubeconfig's own user.

The reference: a ServingStack secret of a cloud identity type makes the serving stack
"authenticate to the cluster as that identity instead of using the kubeconfig's embedded
credentials". This module turns such a credential into a bearer token, and a kubeconfig whose
current user gets that token from a kubeconfig ``exec`` credential plugin (this very file, run
with ``plugin_main``), so long runs get fresh tokens.

Credential formats (the Secret key's value; every one is validated before any network call, and a
wrong shape is refused with ``<path>: <problem>`` naming the field, never quoting the value):

``GoogleApplicationCredentials``
    The JSON key files Google issues. ``type: service_account`` (``client_email``, ``private_key``,
    ``private_key_id``, ``token_uri``): a signed RS256 JWT (``iss`` the account, ``scope``
    cloud-platform and userinfo.email, ``aud`` the ``token_uri``, one hour) is exchanged for an access
    token with the JWT-bearer grant (RFC 7523) at ``token_uri``. ``type: authorized_user``
    (``client_id``, ``client_secret``, ``refresh_token``, what ``gcloud auth application-default
    login`` writes): the OAuth 2.0 refresh-token grant (RFC 6749 section 6) at ``token_uri`` (default
    ``https://oauth2.googleapis.com/token``). ``external_account`` (workload identity federation) and
    ``impersonated_service_account`` are refused by name: not implemented.

``AWSWebIdentityCredentials``
    A JSON object: ``roleARN`` and ``webIdentityToken`` (an OIDC token AWS IAM trusts), optional
    ``roleSessionName`` (default ``modelplane-serving``), ``region``, ``stsEndpoint`` and
    ``clusterName``. The token is exchanged at STS with ``AssumeRoleWithWebIdentity`` (an unsigned
    form POST: ``Action``, ``Version=2011-06-15``, ``RoleArn``, ``RoleSessionName``,
    ``WebIdentityToken``, ``DurationSeconds``); with the temporary credentials it returns, an EKS
    bearer token is made as ``aws eks get-token`` and aws-iam-authenticator do: a SigV4
    query-presigned ``GET https://<sts>/?Action=GetCallerIdentity&Version=2011-06-15`` with
    ``X-Amz-Expires=60`` and the signed header ``x-k8s-aws-id: <cluster name>``, base64url without
    padding, prefixed ``k8s-aws-v1.`` (valid 15 minutes). The cluster name is ``clusterName``, else
    the kubeconfig's current context's cluster name, the last path segment of it when it is an EKS
    cluster ARN, as Crossplane provider-kubernetes does for this identity type. The region is
    ``region``, else the one in that ARN, else the one in the EKS endpoint's host name, else
    ``us-east-1``; the STS endpoint is ``stsEndpoint``, else ``https://sts.<region>.amazonaws.com``.
    SigV4 comes from botocore, the maintained implementation.

``NebiusServiceAccountCredentials``
    The credentials JSON the Nebius CLI writes: ``{"subject-credentials": {"alg": "RS256",
    "private-key": <PEM>, "kid": <public key id>, "iss": <service account id>, "sub": <same>}}``; the
    flat form of provider-nebius (``private_key``, ``public_key_id``, ``account_id``) is accepted too.
    A JWT (RS256, header ``kid``; claims ``iss`` = ``sub`` = the account, ``aud``
    ``token-service.iam.new.nebiuscloud.net``, ``iat``, ``exp`` one minute later, as the Nebius SDKs
    sign it) is exchanged with the RFC 8693 token-exchange form (``grant_type``
    ``urn:ietf:params:oauth:grant-type:token-exchange``, ``requested_token_type``
    ``urn:ietf:params:oauth:token-type:access_token``, ``subject_token``, ``subject_token_type``
    ``urn:ietf:params:oauth:token-type:jwt``) at ``https://auth.nebius.com/oauth2/token/exchange``
    (override with ``tokenEndpoint`` beside ``subject-credentials``). That HTTPS form carries the same
    fields as the gRPC ``nebius.iam.v1.TokenExchangeService/Exchange`` at
    ``tokens.iam.api.nebius.cloud:443`` and needs no gRPC stack.

Endpoints are HTTPS only, certificates verified. Nothing here ever puts credential data or tokens
in a message, an argument vector or the environment.
"""

from __future__ import annotations

import base64
import copy
import datetime
import http.client
import json
import os
import re
import ssl
import sys
import tempfile
import time
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from xml.etree import ElementTree

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

STS_VERSION = "2011-06-15"
STS_NS = "{https://sts.amazonaws.com/doc/2011-06-15/}"
EKS_TOKEN_PREFIX = "k8s-aws-v1."
EKS_CLUSTER_HEADER = "x-k8s-aws-id"
EKS_PRESIGN_SECONDS = 60
# aws-iam-authenticator accepts a token for 15 minutes; `aws eks get-token` reports 14.
EKS_TOKEN_LIFETIME_SECONDS = 14 * 60
AWS_DEFAULT_REGION = "us-east-1"
AWS_SESSION_NAME = "modelplane-serving"
ROLE_ARN = re.compile(r"^arn:aws[a-z-]*:iam::\d{12}:role/[\w+=,.@/-]{1,512}$")
SESSION_NAME = re.compile(r"^[\w+=,.@-]{2,64}$")
REGION = re.compile(r"^[a-z]{2}(-[a-z]+)+-\d{1,2}$")
EKS_HOST_REGION = re.compile(r"\.([a-z]{2}(?:-[a-z]+)+-\d{1,2})\.eks\.amazonaws\.com(?:\.cn)?$")

NEBIUS_TOKEN_ENDPOINT = "https://auth.nebius.com/oauth2/token/exchange"
NEBIUS_AUDIENCE = "token-service.iam.new.nebiuscloud.net"
NEBIUS_JWT_SECONDS = 60
TOKEN_EXCHANGE_GRANT = "urn:ietf:params:oauth:grant-type:token-exchange"
ACCESS_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:access_token"
JWT_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:jwt"

EXEC_API_VERSION = "client.authentication.k8s.io/v1"
# The plugin mints a new token when the cached one has less than this left.
REFRESH_MARGIN_SECONDS = 300


class CredentialError(ValueError):
    """A credential that cannot be used; the message never quotes the credential."""


@dataclass(frozen=True)
class Minted:
    """A bearer token and when it expires (epoch seconds)."""

    token: str
    expires_at: int


# POSTs a form body to a URL and returns the response body (error answers included). The module
# passes one built on ansible.module_utils.urls.open_url; the exec plugin uses https_post.
Poster = Callable[[str, bytes], bytes]


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _json_object(text: str, where: str, what: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except (TypeError, ValueError):
        raise CredentialError(f"{where}: is not {what} (expected a JSON object; the value is not shown)") from None
    if not isinstance(value, dict):
        raise CredentialError(f"{where}: is not {what} (expected a JSON object, not a JSON {type(value).__name__})")
    return value


def _required_strings(info: dict[str, Any], fields: tuple[str, ...], where: str, what: str) -> None:
    missing = [field for field in fields if not isinstance(info.get(field), str) or not info[field].strip()]
    if missing:
        raise CredentialError(f"{where}: the {what} lacks {', '.join(missing)} (a non-empty string each)")


def _https(url: str, where: str, field: str) -> str:
    parts = urllib.parse.urlsplit(url)
    if parts.scheme != "https" or not parts.hostname:
        raise CredentialError(f"{where}: {field} must be an https:// URL")
    return url


def _rsa_key(pem: str, where: str, field: str) -> Any:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    try:
        key = serialization.load_pem_private_key(pem.encode("utf-8"), password=None)
    except (ValueError, TypeError):
        raise CredentialError(f"{where}: {field} is not a PEM private key (the value is not shown)") from None
    if not isinstance(key, rsa.RSAPrivateKey):
        raise CredentialError(f"{where}: {field} is not an RSA key")
    return key


def _rs256_jwt(key_pem: str, header: dict[str, str], claims: dict[str, Any], where: str, field: str) -> str:
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import padding

    key = _rsa_key(key_pem, where, field)
    signing_input = f"{_b64url(json.dumps(header).encode())}.{_b64url(json.dumps(claims).encode())}"
    signature = key.sign(signing_input.encode("ascii"), padding.PKCS1v15(), hashes.SHA256())
    return f"{signing_input}.{_b64url(signature)}"


# --------------------------------------------------------------------------- Google


def load_google_credential(text: str, where: str) -> dict[str, str]:
    """The fields of a Google credential JSON: a service-account key or an authorized-user file."""
    info = _json_object(text, where, "a Google credential")
    kind = info.get("type")
    if kind == "service_account":
        _required_strings(info, ("client_email", "private_key"), where, "service-account key")
        _rsa_key(info["private_key"], where, "private_key")
        return {
            "type": kind,
            "client_email": info["client_email"],
            "private_key": info["private_key"],
            "private_key_id": str(info.get("private_key_id") or ""),
            "token_uri": _https(str(info.get("token_uri") or GOOGLE_TOKEN_URI), where, "token_uri"),
        }
    if kind == "authorized_user":
        _required_strings(info, ("client_id", "client_secret", "refresh_token"), where, "authorized-user credential")
        return {
            "type": kind,
            "client_id": info["client_id"],
            "client_secret": info["client_secret"],
            "refresh_token": info["refresh_token"],
            "token_uri": _https(str(info.get("token_uri") or GOOGLE_TOKEN_URI), where, "token_uri"),
        }
    if kind in ("external_account", "impersonated_service_account", "external_account_authorized_user"):
        raise CredentialError(
            f"{where}: type {kind} Google credentials are not supported by this release; use a service_account "
            "key or an authorized_user credential"
        )
    shown = kind if isinstance(kind, str) and re.fullmatch(r"[a-z_]{1,40}", kind) else "missing or unknown"
    raise CredentialError(
        f"{where}: is not a Google credential: type is {shown}, expected service_account or authorized_user"
    )


def google_assertion(account: dict[str, str], now: int) -> str:
    """A signed RS256 JWT asserting ``account`` for the OAuth 2.0 JWT-bearer grant (RFC 7523)."""
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
    return _rs256_jwt(account["private_key"], header, claims, "the service-account key", "private_key")


def google_token_request(account: dict[str, str], now: int) -> tuple[str, bytes]:
    """The URL and form body that exchange ``account`` for an access token."""
    if account.get("type") == "authorized_user":
        form = {
            "grant_type": "refresh_token",
            "client_id": account["client_id"],
            "client_secret": account["client_secret"],
            "refresh_token": account["refresh_token"],
        }
    else:
        form = {"grant_type": JWT_BEARER_GRANT, "assertion": google_assertion(account, now)}
    return account["token_uri"], urllib.parse.urlencode(form).encode("ascii")


def token_response(response_body: bytes, where: str, default_lifetime: int = TOKEN_LIFETIME_SECONDS) -> tuple[str, int]:
    """The ``access_token`` of an OAuth 2.0 token response and its lifetime in seconds."""
    try:
        payload = json.loads(response_body)
    except ValueError:
        raise CredentialError(f"{where}: the token endpoint did not answer with JSON") from None
    token = payload.get("access_token") if isinstance(payload, dict) else None
    if not isinstance(token, str) or not token:
        error = payload.get("error") if isinstance(payload, dict) else None
        if not (isinstance(error, str) and re.fullmatch(r"[\w.-]{1,64}", error)):
            error = "no error given"
        raise CredentialError(f"{where}: the token endpoint returned no access_token ({error})")
    lifetime = payload.get("expires_in")
    try:
        seconds = int(lifetime) if lifetime is not None else default_lifetime
    except (TypeError, ValueError):
        seconds = default_lifetime
    return token, max(seconds, 0)


# --------------------------------------------------------------------------- AWS


def load_aws_web_identity(text: str, where: str) -> dict[str, str]:
    """The fields of an ``AWSWebIdentityCredentials`` secret (see the module docstring)."""
    info = _json_object(text, where, "an AWS web identity credential")
    _required_strings(info, ("roleARN", "webIdentityToken"), where, "AWS web identity credential")
    if not ROLE_ARN.match(info["roleARN"]):
        raise CredentialError(f"{where}: roleARN is not an IAM role ARN (arn:aws:iam::<account>:role/<name>)")
    result = {"roleARN": info["roleARN"], "webIdentityToken": info["webIdentityToken"].strip()}
    for field in ("roleSessionName", "region", "stsEndpoint", "clusterName"):
        value = info.get(field)
        if value is None:
            continue
        if not isinstance(value, str) or not value.strip():
            raise CredentialError(f"{where}: {field} must be a non-empty string when set")
        result[field] = value.strip()
    if "roleSessionName" in result and not SESSION_NAME.match(result["roleSessionName"]):
        raise CredentialError(f"{where}: roleSessionName must be 2-64 characters of letters, digits and +=,.@_-")
    if "region" in result and not REGION.match(result["region"]):
        raise CredentialError(f"{where}: region is not an AWS region name (like us-west-2)")
    if "stsEndpoint" in result:
        _https(result["stsEndpoint"], where, "stsEndpoint")
    unknown = sorted(set(info) - {"roleARN", "webIdentityToken", "roleSessionName", "region", "stsEndpoint",
                                  "clusterName"})
    if unknown:
        raise CredentialError(f"{where}: unknown fields {', '.join(unknown)[:200]} in the AWS web identity credential")
    return result


def eks_cluster_name(name: str) -> str:
    """The EKS cluster name in ``name``: the last segment of an EKS cluster ARN, or ``name`` itself."""
    if name.startswith("arn:") and ":cluster/" in name:
        return name.rsplit("/", 1)[-1]
    return name


def aws_target(aws: dict[str, str], cluster: dict[str, str], where: str) -> dict[str, str]:
    """The cluster name, region and STS endpoint for ``aws`` against the kubeconfig's ``cluster``."""
    raw_name = aws.get("clusterName") or cluster.get("name") or ""
    name = eks_cluster_name(raw_name)
    if not name:
        raise CredentialError(f"{where}: clusterName is needed: the kubeconfig's current context names no cluster")
    region = aws.get("region")
    if not region and raw_name.startswith("arn:"):
        parts = raw_name.split(":")
        region = parts[3] if len(parts) > 3 and REGION.match(parts[3]) else None
    if not region:
        match = EKS_HOST_REGION.search(urllib.parse.urlsplit(cluster.get("server") or "").hostname or "")
        region = match.group(1) if match else AWS_DEFAULT_REGION
    endpoint = aws.get("stsEndpoint") or f"https://sts.{region}.amazonaws.com"
    return {"cluster": name, "region": region, "endpoint": endpoint.rstrip("/") + "/"}


def sts_request(aws: dict[str, str], endpoint: str) -> tuple[str, bytes]:
    """The ``AssumeRoleWithWebIdentity`` form POST (unsigned: the web identity token authenticates it)."""
    form = {
        "Action": "AssumeRoleWithWebIdentity",
        "Version": STS_VERSION,
        "RoleArn": aws["roleARN"],
        "RoleSessionName": aws.get("roleSessionName") or AWS_SESSION_NAME,
        "WebIdentityToken": aws["webIdentityToken"],
        "DurationSeconds": str(TOKEN_LIFETIME_SECONDS),
    }
    return endpoint, urllib.parse.urlencode(form).encode("ascii")


def sts_credentials(response_body: bytes, where: str) -> dict[str, str]:
    """The temporary credentials of an ``AssumeRoleWithWebIdentity`` answer, or its error code."""
    try:
        root = ElementTree.fromstring(response_body)
    except ElementTree.ParseError:
        raise CredentialError(f"{where}: STS did not answer with XML") from None

    def text(path: str) -> str:
        found = root.find(path.replace("{ns}", STS_NS))
        if found is None:
            found = root.find(path.replace("{ns}", ""))
        return (found.text or "").strip() if found is not None else ""

    creds = {
        "access_key": text(".//{ns}Credentials/{ns}AccessKeyId"),
        "secret_key": text(".//{ns}Credentials/{ns}SecretAccessKey"),
        "token": text(".//{ns}Credentials/{ns}SessionToken"),
    }
    if not all(creds.values()):
        code = text(".//{ns}Error/{ns}Code")
        code = code if re.fullmatch(r"[\w.]{1,64}", code) else "no error code given"
        raise CredentialError(f"{where}: STS AssumeRoleWithWebIdentity returned no credentials ({code})")
    return creds


def eks_token(creds: dict[str, str], target: dict[str, str]) -> str:
    """The EKS bearer token: a presigned ``GetCallerIdentity`` URL, as aws-iam-authenticator expects it."""
    from botocore.auth import SigV4QueryAuth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    query = urllib.parse.urlencode({"Action": "GetCallerIdentity", "Version": STS_VERSION})
    request = AWSRequest(method="GET", url=f"{target['endpoint']}?{query}",
                         headers={EKS_CLUSTER_HEADER: target["cluster"]})
    credentials = Credentials(creds["access_key"], creds["secret_key"], creds["token"])
    SigV4QueryAuth(credentials, "sts", target["region"], expires=EKS_PRESIGN_SECONDS).add_auth(request)
    return EKS_TOKEN_PREFIX + _b64url(request.url.encode("utf-8"))


# --------------------------------------------------------------------------- Nebius


def load_nebius_key(text: str, where: str) -> dict[str, str]:
    """The fields of a Nebius service-account credentials JSON (the CLI's or provider-nebius's form)."""
    info = _json_object(text, where, "a Nebius service-account credential")
    endpoint = info.get("tokenEndpoint", NEBIUS_TOKEN_ENDPOINT)
    if not isinstance(endpoint, str):
        raise CredentialError(f"{where}: tokenEndpoint must be a string")
    _https(endpoint, where, "tokenEndpoint")
    if "subject-credentials" in info:
        subject = info["subject-credentials"]
        field = f"{where}: subject-credentials"
        if not isinstance(subject, dict):
            raise CredentialError(f"{field} must be a JSON object")
        _required_strings(subject, ("private-key", "kid", "iss", "sub"), field, "Nebius service-account credential")
        if subject.get("alg", "RS256") != "RS256":
            raise CredentialError(f"{field}.alg: only RS256 is supported")
        if subject.get("type", "JWT") not in ("", "JWT"):
            raise CredentialError(f"{field}.type: only JWT is supported")
        if subject["iss"] != subject["sub"]:
            raise CredentialError(f"{field}: iss and sub must both be the service account ID")
        key, kid, account = subject["private-key"], subject["kid"], subject["sub"]
        _rsa_key(key, where, "subject-credentials.private-key")
    elif "private_key" in info or "account_id" in info:
        _required_strings(info, ("private_key", "public_key_id", "account_id"), where,
                          "Nebius service-account credential")
        key, kid, account = info["private_key"], info["public_key_id"], info["account_id"]
        _rsa_key(key, where, "private_key")
    else:
        raise CredentialError(
            f"{where}: is not a Nebius service-account credential: it has neither subject-credentials "
            "(the Nebius CLI's form) nor private_key, public_key_id and account_id"
        )
    return {"private_key": key, "kid": kid, "account": account, "endpoint": endpoint}


def nebius_assertion(key: dict[str, str], now: int) -> str:
    """The self-signed JWT the Nebius SDKs exchange for an access token."""
    header = {"alg": "RS256", "typ": "JWT", "kid": key["kid"]}
    claims = {"iss": key["account"], "sub": key["account"], "aud": NEBIUS_AUDIENCE, "iat": now,
              "exp": now + NEBIUS_JWT_SECONDS}
    return _rs256_jwt(key["private_key"], header, claims, "the Nebius credential", "private key")


def nebius_token_request(key: dict[str, str], now: int) -> tuple[str, bytes]:
    """The RFC 8693 token-exchange form for ``key``."""
    form = {
        "grant_type": TOKEN_EXCHANGE_GRANT,
        "requested_token_type": ACCESS_TOKEN_TYPE,
        "subject_token": nebius_assertion(key, now),
        "subject_token_type": JWT_TOKEN_TYPE,
    }
    return key["endpoint"], urllib.parse.urlencode(form).encode("ascii")


# --------------------------------------------------------------------------- minting


def validate(identity_type: str, credential: str, where: str) -> dict[str, str]:
    """The parsed credential of ``identity_type``; CredentialError (never quoting it) if it has the wrong shape."""
    if identity_type == GOOGLE:
        return load_google_credential(credential, where)
    if identity_type == AWS:
        return load_aws_web_identity(credential, where)
    if identity_type == NEBIUS:
        return load_nebius_key(credential, where)
    known = ", ".join(CLOUD_IDENTITY_TYPES)
    raise CredentialError(f"{where}: {identity_type!r} is not a cloud identity type ({known})")


def mint(identity_type: str, credential: str, where: str, post: Poster, now: int | None = None,
         cluster: dict[str, str] | None = None) -> Minted:
    """A bearer token for the cloud identity ``credential`` of type ``identity_type``.

    ``cluster`` is the kubeconfig's current cluster (``name``, ``server``), which AWS needs.
    """
    issued_at = int(time.time()) if now is None else now
    parsed = validate(identity_type, credential, where)
    if identity_type == GOOGLE:
        url, body = google_token_request(parsed, issued_at)
        token, lifetime = token_response(post(url, body), where)
        return Minted(token, issued_at + lifetime)
    if identity_type == AWS:
        target = aws_target(parsed, cluster or {}, where)
        url, body = sts_request(parsed, target["endpoint"])
        creds = sts_credentials(post(url, body), where)
        return Minted(eks_token(creds, target), issued_at + EKS_TOKEN_LIFETIME_SECONDS)
    url, body = nebius_token_request(parsed, issued_at)
    token, lifetime = token_response(post(url, body), where)
    return Minted(token, issued_at + lifetime)


def https_post(url: str, body: bytes, ca_file: str | None = None, timeout: float = 30.0) -> bytes:
    """POST a form to an HTTPS endpoint, certificate verified, and return the body (error answers too).

    The exec plugin's transport: plain ``http.client`` with the default TLS context (hostname and
    chain verified), since the plugin runs outside Ansible and cannot use ``open_url``.
    """
    parts = urllib.parse.urlsplit(url)
    if parts.scheme != "https" or not parts.hostname:
        raise CredentialError(f"token endpoint {url!r}: only https:// endpoints are used")
    context = ssl.create_default_context(cafile=ca_file or None)
    path = urllib.parse.urlunsplit(("", "", parts.path or "/", parts.query, ""))
    connection = http.client.HTTPSConnection(parts.hostname, parts.port, timeout=timeout, context=context)
    try:
        connection.request("POST", path, body=body, headers={
            "Content-Type": "application/x-www-form-urlencoded", "Accept": "application/json, text/xml",
        })
        return connection.getresponse().read()
    except (OSError, http.client.HTTPException) as error:
        reason = getattr(error, "reason", None) or type(error).__name__
        raise CredentialError(f"token endpoint {url}: {reason}") from None
    finally:
        connection.close()


# --------------------------------------------------------------------------- kubeconfig


def _load_kubeconfig(kubeconfig_text: str) -> tuple[dict[str, Any], str]:
    import yaml  # PyYAML ships with ansible-core; imported late so the module imports without it

    config = yaml.safe_load(kubeconfig_text)
    if not isinstance(config, dict):
        raise CredentialError("the kubeconfig is not a YAML mapping (the value is not shown)")
    contexts = {c.get("name"): c.get("context") or {} for c in config.get("contexts") or [] if isinstance(c, dict)}
    current = config.get("current-context") or (next(iter(contexts)) if len(contexts) == 1 else None)
    if current not in contexts:
        raise CredentialError("the kubeconfig has no current-context to authenticate")
    return copy.deepcopy(config), current


def current_cluster(kubeconfig_text: str) -> dict[str, str]:
    """The name and server of the kubeconfig's current cluster."""
    config, current = _load_kubeconfig(kubeconfig_text)
    context = next(c.get("context") or {} for c in config.get("contexts") or []
                   if isinstance(c, dict) and c.get("name") == current)
    name = str(context.get("cluster") or "")
    server = next((str((c.get("cluster") or {}).get("server") or "") for c in config.get("clusters") or []
                   if isinstance(c, dict) and c.get("name") == name), "")
    return {"name": name, "server": server}


def _with_user(kubeconfig_text: str, user: dict[str, Any]) -> str:
    import yaml

    config, current = _load_kubeconfig(kubeconfig_text)
    context = next(c for c in config.get("contexts") or [] if isinstance(c, dict) and c.get("name") == current)
    user_name = (context.get("context") or {}).get("user") or "modelplane-cloud-identity"
    users = [u for u in config.get("users") or [] if isinstance(u, dict) and u.get("name") != user_name]
    users.append({"name": user_name, "user": user})
    config["users"] = users
    context.setdefault("context", {})["user"] = user_name
    config["current-context"] = current
    return yaml.safe_dump(config, default_flow_style=False, sort_keys=False)


def kubeconfig_with_exec(kubeconfig_text: str, argv: list[str]) -> str:
    """``kubeconfig_text`` with the current context's user replaced by the exec credential plugin ``argv``.

    Only that user changes: its client certificates, static token or auth provider are dropped, since the
    point is to authenticate as the cloud identity instead of them.
    """
    return _with_user(kubeconfig_text, {"exec": {
        "apiVersion": EXEC_API_VERSION,
        "command": argv[0],
        "args": argv[1:],
        "interactiveMode": "Never",
        "provideClusterInfo": False,
    }})


# --------------------------------------------------------------------------- exec credential plugin
#
# The module writes, into a private directory (0700) beside the kubeconfig: this file as the plugin,
# ``config.json`` (0600: identity type, credential, message path, CA file, current cluster) and
# ``token.json`` (0600: the cached token and its expiry). The kubeconfig's user runs
# ``<python> <dir>/plugin.py <dir>/config.json``: only paths are in argv, nothing in the environment.
# kubernetes.core (the Python client) and helm (client-go) run it when they load the kubeconfig and
# again when the token's expirationTimestamp passes; the plugin answers from the cache until the
# token is within REFRESH_MARGIN_SECONDS of expiry, then mints a new one (one token request per
# refresh, not per task). The caller removes the directory with the kubeconfig.


def write_private(path: str, text: str) -> None:
    """Write ``text`` to ``path`` readable by the owner only, never wider even for a moment."""
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path) or ".", prefix=".servingstack-")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _rfc3339(epoch: int) -> str:
    return datetime.datetime.fromtimestamp(epoch, tz=datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def exec_credential(minted: Minted) -> dict[str, Any]:
    """The ExecCredential a kubeconfig exec plugin prints for ``minted``."""
    return {
        "apiVersion": EXEC_API_VERSION,
        "kind": "ExecCredential",
        "status": {"token": minted.token, "expirationTimestamp": _rfc3339(minted.expires_at)},
    }


def cached_token(cache_file: str, now: int) -> Minted | None:
    """The cached token if it has more than REFRESH_MARGIN_SECONDS left."""
    try:
        with open(cache_file, encoding="utf-8") as handle:
            cached = json.load(handle)
        minted = Minted(str(cached["token"]), int(cached["expires_at"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return minted if minted.token and minted.expires_at - now > REFRESH_MARGIN_SECONDS else None


def store_token(cache_file: str, minted: Minted) -> None:
    write_private(cache_file, json.dumps({"token": minted.token, "expires_at": minted.expires_at}))


def plugin_token(config: dict[str, Any], post: Poster | None = None, now: int | None = None) -> Minted:
    """The token the exec plugin hands out for ``config`` (cached, or freshly minted and cached)."""
    current = int(time.time()) if now is None else now
    cache_file = str(config["cache"])
    minted = cached_token(cache_file, current)
    if minted is None:
        ca_file = config.get("ca_file")

        def default_post(url: str, body: bytes) -> bytes:
            return https_post(url, body, ca_file=ca_file)

        minted = mint(config["type"], config["credential"], config["where"], post or default_post,
                      now=current, cluster=config.get("cluster") or {})
        store_token(cache_file, minted)
    return minted


def plugin_main(argv: list[str]) -> int:
    """The exec credential plugin: ``plugin.py <config.json>``; prints an ExecCredential."""
    if len(argv) != 1:
        sys.stderr.write("usage: plugin.py <config.json>\n")
        return 2
    try:
        with open(argv[0], encoding="utf-8") as handle:
            config = json.load(handle)
        minted = plugin_token(config)
    except CredentialError as error:
        sys.stderr.write(f"modelplane.serving cloud identity: {error}\n")
        return 1
    except (OSError, ValueError, KeyError, TypeError) as error:
        sys.stderr.write(f"modelplane.serving cloud identity: cannot read the plugin configuration "
                         f"({type(error).__name__})\n")
        return 1
    sys.stdout.write(json.dumps(exec_credential(minted)))
    return 0
