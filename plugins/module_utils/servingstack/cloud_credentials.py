# Copyright 2026 The modelplane.serving authors
# Apache License 2.0 (see LICENSE)
"""Checks on the credential a ServingStack cloud identity secret holds, before anything uses it.

``validate`` turns the secret's value into the parsed form ``cloud_identity.mint`` takes (the formats: the
servingstack_kubeconfig module's documentation), or refuses it as ``<path>: <problem>`` naming the field and
the rule, never quoting the value: it is a private key or a token. Nothing here touches the network.
"""

from __future__ import annotations

import json
import re
from typing import Any

from ansible_collections.modelplane.serving.plugins.module_utils.servingstack.cloud_identity import (
    AWS,
    GOOGLE,
    NEBIUS,
    REGION,
    CredentialError,
)

GOOGLE_REQUIRED = {"service_account": ("client_email", "private_key"),
                   "authorized_user": ("client_id", "client_secret", "refresh_token")}
HTTPS = re.compile(r"https://[^/?#\s]+")
AWS_RULES = {  # field -> (what a value must match, the rule as messages state it)
    "roleARN": (re.compile(r"arn:aws[a-z-]*:iam::\d{12}:role/[\w+=,.@/-]{1,512}$"),
                "must be an IAM role ARN (arn:aws:iam::<account>:role/<name>)"),
    "webIdentityToken": (re.compile(r"\S"), "must be a non-empty string"),
    "roleSessionName": (re.compile(r"[\w+=,.@-]{2,64}$"), "must be 2-64 letters, digits and +=,.@_-"),
    "region": (REGION, "must be an AWS region name (like us-west-2)"),
    "stsEndpoint": (HTTPS, "must be an https:// URL"),
    "clusterName": (re.compile(r"\S"), "must be a non-empty string"),
}


def _json_object(text: str, where: str, what: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except (TypeError, ValueError):
        raise CredentialError(f"{where}: is not {what} (expected a JSON object; the value is not shown)") from None
    if not isinstance(value, dict):
        raise CredentialError(f"{where}: is not {what} (expected a JSON object, not a JSON {type(value).__name__})")
    return value


def _require(info: dict[str, Any], fields: tuple[str, ...], where: str, what: str, prefix: str = "") -> None:
    missing = [prefix + name for name in fields if not isinstance(info.get(name), str) or not info[name].strip()]
    if missing:
        raise CredentialError(f"{where}: the {what} lacks {', '.join(missing)} (a non-empty string each)")


def _https(url: Any, where: str, field: str) -> str:
    if not isinstance(url, str) or not HTTPS.match(url):
        raise CredentialError(f"{where}: {field} must be an https:// URL")
    return url


def _rsa_key(pem: str, where: str, field: str) -> None:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    try:
        key = serialization.load_pem_private_key(pem.encode("utf-8"), password=None)
    except (ValueError, TypeError):
        raise CredentialError(f"{where}: {field} is not a PEM private key (the value is not shown)") from None
    if not isinstance(key, rsa.RSAPrivateKey):
        raise CredentialError(f"{where}: {field} is not an RSA key")


def load_google_credential(text: str, where: str) -> dict[str, Any]:
    info = _json_object(text, where, "a Google credential")
    kind = info.get("type")
    if kind not in GOOGLE_REQUIRED:
        shown = kind if isinstance(kind, str) and re.fullmatch(r"[a-z_]{1,40}", kind) else "missing or unknown"
        raise CredentialError(f"{where}: type is {shown}: only service_account and authorized_user Google "
                              "credentials are supported")
    _require(info, GOOGLE_REQUIRED[kind], where, kind.replace("_", " ") + " credential")
    if kind == "service_account":
        _rsa_key(info["private_key"], where, "private_key")
    return {**info, "token_uri": _https(info.get("token_uri", "https://oauth2.googleapis.com/token"), where,
                                        "token_uri")}


def load_aws_web_identity(text: str, where: str) -> dict[str, str]:
    info = _json_object(text, where, "an AWS web identity credential")
    _require(info, ("roleARN", "webIdentityToken"), where, "AWS web identity credential")
    unknown = sorted(set(info) - set(AWS_RULES))
    if unknown:
        raise CredentialError(f"{where}: unknown fields {', '.join(unknown)[:200]} in the AWS web identity credential")
    for field, (rule, problem) in AWS_RULES.items():
        if info.get(field) is not None and not (isinstance(info[field], str) and rule.match(info[field].strip())):
            raise CredentialError(f"{where}: {field} {problem}")
    return {field: info[field].strip() for field in AWS_RULES if info.get(field) is not None}


def load_nebius_key(text: str, where: str) -> dict[str, str]:
    """The Nebius CLI's ``subject-credentials`` or provider-nebius's flat form, ``tokenEndpoint`` beside."""
    info, what = _json_object(text, where, "a Nebius service-account credential"), "Nebius service-account credential"
    endpoint = _https(info.get("tokenEndpoint", "https://auth.nebius.com/oauth2/token/exchange"), where,
                      "tokenEndpoint")
    subject = info.get("subject-credentials")
    if subject is None:
        _require(info, ("private_key", "public_key_id", "account_id"), where, what)
        _rsa_key(info["private_key"], where, "private_key")
        return {"key": info["private_key"], "kid": info["public_key_id"], "account": info["account_id"],
                "endpoint": endpoint}
    if not isinstance(subject, dict):
        raise CredentialError(f"{where}: subject-credentials must be a JSON object")
    _require(subject, ("private-key", "kid", "iss", "sub"), where, what, "subject-credentials.")
    if subject.get("alg", "RS256") != "RS256":
        raise CredentialError(f"{where}: subject-credentials.alg: only RS256 is supported")
    if subject["iss"] != subject["sub"]:
        raise CredentialError(f"{where}: subject-credentials: iss and sub must both be the service account ID")
    _rsa_key(subject["private-key"], where, "subject-credentials.private-key")
    return {"key": subject["private-key"], "kid": subject["kid"], "account": subject["sub"], "endpoint": endpoint}


def validate(identity_type: str, credential: str, where: str) -> dict[str, Any]:
    """The parsed credential of ``identity_type``; CredentialError (never quoting it) if it has the wrong shape."""
    loaders = {GOOGLE: load_google_credential, AWS: load_aws_web_identity, NEBIUS: load_nebius_key}
    if identity_type not in loaders:
        raise CredentialError(f"{where}: {identity_type!r} is not a cloud identity type ({', '.join(loaders)})")
    return loaders[identity_type](credential, where)
