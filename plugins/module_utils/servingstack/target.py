# Copyright 2026 The modelplane.serving authors
# Apache License 2.0 (see LICENSE)
"""The target cluster's kubeconfig and cloud identity credential, from the spec's Secrets or given, checked; and every
kubernetes.core connection option from the kubeconfig, so that ``K8S_AUTH_*`` cannot redirect a task (README, "Which
cluster each task reaches").

kubernetes.core reads ``K8S_AUTH_<OPTION>`` for an option left ``None`` (``_create_auth_spec`` in
``module_utils/k8s/client.py``; helm's ``env_fallback`` in ``module_utils/helm_args_common.py``), so every option
is given, empty where the kubeconfig has none (an empty ``api_key`` keeps ``k8s`` loading the kubeconfig). helm gets
no ``context`` (the module's notes say why), and ``K8S_AUTH_CONTEXT`` is not cleared: helm would take even an empty
one as a ``context``. No message quotes a Secret's data, the kubeconfig or the credential.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import re
from typing import Any

from ansible_collections.modelplane.serving.plugins.module_utils.servingstack.cloud_identity import (
    AWS,
    GOOGLE,
    NEBIUS,
    REGION,
    CredentialError,
    write_private,
)

# option -> (kubeconfig section, the key naming a file, the file written for the same key + "-data", inline).
FILES: dict[str, tuple[str, str, str]] = {
    "ca_cert": ("cluster", "certificate-authority", "ca.crt"),
    "client_cert": ("user", "client-certificate", "client.crt"),
    "client_key": ("user", "client-key", "client.key"),
}
# What helm reads from its own environment (helm/pkg/cli/environment.go): cleared for the target's tasks.
HELM_ENV_CLEARED: dict[str, str] = {
    "HELM_KUBEAPISERVER": "",
    "HELM_KUBETOKEN": "",
    "HELM_KUBECAFILE": "",
    "HELM_KUBEINSECURE_SKIP_TLS_VERIFY": "false",
    "HELM_KUBEASUSER": "",
    "HELM_KUBEASGROUPS": "",
    "HELM_KUBETLS_SERVER_NAME": "",
}

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


def _named(kubeconfig: dict[str, Any], section: str, name: str) -> dict[str, Any]:
    for entry in kubeconfig.get(section) or []:
        if isinstance(entry, dict) and entry.get("name") == name:
            body = entry.get(section[:-1])
            return body if isinstance(body, dict) else {}
    raise ValueError(f"the kubeconfig has no {section[:-1]} named {name!r}")


def selected(kubeconfig: dict[str, Any]) -> tuple[str, dict[str, Any], dict[str, Any], dict[str, Any]]:
    """``(name, context, cluster, user)`` of the kubeconfig's current context."""
    name = kubeconfig.get("current-context") or ""
    if not name:
        raise ValueError("the kubeconfig has no current-context; set one so the cluster is unambiguous")
    body = _named(kubeconfig, "contexts", name)
    cluster = _named(kubeconfig, "clusters", str(body.get("cluster") or ""))
    if not cluster.get("server"):
        raise ValueError(f"the cluster of context {name!r} has no server")
    user = _named(kubeconfig, "users", str(body["user"])) if body.get("user") else {}
    return name, body, cluster, user


def load(text: str, where: str) -> dict[str, Any]:
    """The kubeconfig ``text`` if its current context names a cluster with a server; else ValueError, starting with
    ``where`` (the Secret and key, or the file)."""
    import yaml  # PyYAML ships with ansible-core; imported late so the module_utils imports without it

    try:
        config = yaml.safe_load(text)
    except yaml.YAMLError:
        raise ValueError(f"{where} is not YAML, so not a kubeconfig (the value is not shown)") from None
    if not isinstance(config, dict) or not isinstance(config.get("clusters"), list) or not config["clusters"]:
        raise ValueError(f"{where} is not a kubeconfig: it has no clusters (the value is not shown)")
    try:
        selected(config)
    except ValueError as error:
        raise ValueError(f"{where}: {error}") from None
    return config


def secret_refs(spec: dict[str, Any], namespace: str | None) -> list[dict[str, Any]]:
    """The entries of ``spec.secrets`` to read, each ``{type, name, namespace, key, path}``: the Kubeconfig one, then
    the first other one (the cloud identity) if any. ``namespace`` (the ServingStack's) fills in an entry's missing
    one. ValueError naming, as ``<path>: <problem>``, every gap that keeps a Secret from being found."""
    secrets = spec.get("secrets")
    if not isinstance(secrets, list) or not secrets:
        raise ValueError("spec.secrets: a Kubeconfig secret is required to reach the target cluster")
    entries = [(index, entry) for index, entry in enumerate(secrets) if isinstance(entry, dict)]
    kubeconfigs = [(index, entry) for index, entry in entries if entry.get("type") == "Kubeconfig"]
    if not kubeconfigs:
        raise ValueError("spec.secrets: no entry has type Kubeconfig; one is required to reach the target cluster")
    if len(kubeconfigs) > 1:
        paths = ", ".join(f"spec.secrets[{index}]" for index, _entry in kubeconfigs)
        raise ValueError(f"spec.secrets: {len(kubeconfigs)} entries have type Kubeconfig ({paths}); exactly one is "
                         "allowed")
    refs, problems = [], []
    for index, entry in kubeconfigs + [(i, e) for i, e in entries if e.get("type") != "Kubeconfig"][:1]:
        ref = {"type": entry["type"], "name": entry.get("name"), "namespace": entry.get("namespace") or namespace,
               "key": entry.get("key"), "path": f"spec.secrets[{index}]"}
        if not ref["namespace"]:
            problems.append(f"{ref['path']}.namespace: the Secret's namespace is unknown (the ServingStack has no "
                            "metadata.namespace and the entry sets none)")
        problems += [f"{ref['path']}.{field}: is required" for field in ("name", "key")
                     if not isinstance(ref[field], str) or not ref[field]]
        refs.append(ref)
    if problems:
        raise ValueError("; ".join(problems))
    return refs


def secret_text(secret: dict[str, Any] | None, where: str, key: str) -> str:
    """The text stored under ``key`` of ``secret`` (None: not found), ``where`` naming it; ValueError otherwise."""
    if not secret:
        raise ValueError(f"{where} was not found on the management cluster")
    data = secret.get("data") or {}  # the API server keeps stringData there too
    if key not in data:
        raise ValueError(f"{where} has no key {key!r} (keys: {', '.join(sorted(data)) or 'none'})")
    try:
        return base64.b64decode(str(data[key]), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        raise ValueError(f"{where} key {key!r} is not base64-encoded UTF-8 text") from None


def from_secrets(secrets: list[dict[str, Any] | None], refs: list[dict[str, Any]]) -> tuple[dict[str, Any], list[str]]:
    """The kubeconfig (parsed) and the texts of ``refs`` (the kubeconfig's, then the identity's) out of ``secrets``,
    the Secret objects of ``refs`` in order (None for one that does not exist). ValueError with every problem at
    once, joined by ``; ``."""
    texts, problems, config = [], [], {}
    for secret, ref in zip(secrets, refs, strict=True):
        where = f"{ref['path']}: Secret {ref['namespace']}/{ref['name']}"
        try:
            texts.append(secret_text(secret, where, ref["key"]))
            if ref is refs[0]:
                config = load(texts[-1], f"{where} key {ref['key']!r}")
        except ValueError as error:
            problems.append(str(error))
    if problems:
        raise ValueError("; ".join(problems))
    return config, texts


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


def _google(info: dict[str, Any], where: str) -> dict[str, Any]:
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


def _aws(info: dict[str, Any], where: str) -> dict[str, str]:
    _require(info, ("roleARN", "webIdentityToken"), where, "AWS web identity credential")
    unknown = sorted(set(info) - set(AWS_RULES))
    if unknown:
        raise CredentialError(f"{where}: unknown fields {', '.join(unknown)[:200]} in the AWS web identity credential")
    for field, (rule, problem) in AWS_RULES.items():
        if info.get(field) is not None and not (isinstance(info[field], str) and rule.match(info[field].strip())):
            raise CredentialError(f"{where}: {field} {problem}")
    return {field: info[field].strip() for field in AWS_RULES if info.get(field) is not None}


def _nebius(info: dict[str, Any], where: str) -> dict[str, str]:
    """The Nebius CLI's ``subject-credentials`` or provider-nebius's flat form, ``tokenEndpoint`` beside."""
    what = "Nebius service-account credential"
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


def parse_credential(identity_type: str, credential: str, where: str) -> dict[str, Any]:
    """The cloud identity's credential parsed into what ``cloud_identity.mint`` takes (the formats: the module's
    documentation); CredentialError naming the field and the rule (never quoting it) if it has the wrong shape. No
    network call."""
    loaders = {GOOGLE: ("a Google credential", _google), AWS: ("an AWS web identity credential", _aws),
               NEBIUS: ("a Nebius service-account credential", _nebius)}
    if identity_type not in loaders:
        raise CredentialError(f"{where}: {identity_type!r} is not a cloud identity type ({', '.join(loaders)})")
    what, loader = loaders[identity_type]
    try:
        info = json.loads(credential)
    except (TypeError, ValueError):
        raise CredentialError(f"{where}: is not {what} (expected a JSON object; the value is not shown)") from None
    if not isinstance(info, dict):
        raise CredentialError(f"{where}: is not {what} (expected a JSON object, not a JSON {type(info).__name__})")
    return loader(info, where)


def with_exec(kubeconfig: dict[str, Any], argv: list[str]) -> dict[str, Any]:
    """``kubeconfig`` with its current user (only that one: its certificates, token or auth provider dropped, since
    the point is to authenticate as the cloud identity instead) replaced by the exec credential plugin ``argv``."""
    context = selected(kubeconfig)[1]
    user = context.setdefault("user", "modelplane-cloud-identity")
    plugin = {"apiVersion": "client.authentication.k8s.io/v1", "command": argv[0], "args": argv[1:],
              "interactiveMode": "Never", "provideClusterInfo": False}
    users = [u for u in kubeconfig.get("users") or [] if isinstance(u, dict) and u.get("name") != user]
    kubeconfig["users"] = [*users, {"name": user, "user": {"exec": plugin}}]
    return kubeconfig


def connection(kubeconfig: dict[str, Any], path: str, dest: str) -> dict[str, Any]:
    """The options of ``kubernetes.core.k8s``/``k8s_info`` (every one of ``AUTH_ARG_SPEC``, none ``None``) and of
    ``kubernetes.core.helm``, and the task environment, for the kubeconfig found at ``path``. Its inline certificate
    data is written into ``dest`` (files ``0600``)."""
    name, _context, cluster, user = selected(kubeconfig)
    sections = {"cluster": cluster, "user": user}
    base = os.path.dirname(os.path.abspath(path))
    files, data = {}, {}
    for option, (section, key, file_name) in FILES.items():
        if sections[section].get(key + "-data"):
            try:
                data[option] = base64.b64decode(str(sections[section][key + "-data"]), validate=True)
            except binascii.Error:
                raise ValueError(f"{path}: {key}-data is not base64") from None
            files[option] = os.path.join(dest, file_name)
        else:  # kubectl resolves relative paths against the kubeconfig's folder
            files[option] = os.path.join(base, str(sections[section][key])) if sections[section].get(key) else ""
    for option, content in data.items():
        write_private(files[option], content)
    k8s = {
        "kubeconfig": path,
        "context": name,
        "host": str(cluster["server"]),
        "api_key": str(user.get("token") or ""),
        "username": str(user.get("username") or ""),
        "password": str(user.get("password") or ""),
        "validate_certs": not bool(cluster.get("insecure-skip-tls-verify")),
        **files,
        "proxy": str(cluster.get("proxy-url") or ""),
        "no_proxy": "",
        "proxy_headers": {},
        "impersonate_user": str(user.get("as") or ""),
        "impersonate_groups": [str(group) for group in user.get("as-groups") or []],
        "persist_config": False,
    }
    helm = {"kubeconfig": path, "host": "", "api_key": "", "ca_cert": "", "validate_certs": True}
    environment = {"KUBECONFIG": path, "K8S_AUTH_KUBECONFIG": path, "K8S_AUTH_HOST": "", "K8S_AUTH_API_KEY": "",
                   "HELM_KUBECONTEXT": name, **HELM_ENV_CLEARED}
    return {"k8s": k8s, "helm": helm, "environment": environment}
