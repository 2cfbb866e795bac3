# Copyright 2026 The modelplane.serving authors
# Apache License 2.0 (see LICENSE)
"""A cloud identity's credential to a bearer token, and the kubeconfig ``exec`` plugin that refreshes it.

The credential comes parsed by ``target.parse_credential`` (which refuses a wrong shape before any network
call). google-auth (Google, and the Nebius JWT), botocore (STS and the EKS token) and requests (the Nebius token
exchange) mint the token over verified HTTPS. The module copies this very file as the plugin, run as a script
(``plugin_main``): it stands alone. No credential or token goes into a message, argv or the environment.
"""

from __future__ import annotations

import base64
import datetime
import functools
import json
import os
import re
import ssl
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from typing import Any

GOOGLE = "GoogleApplicationCredentials"
AWS = "AWSWebIdentityCredentials"
NEBIUS = "NebiusServiceAccountCredentials"
CLOUD_IDENTITY_TYPES = (GOOGLE, AWS, NEBIUS)

# GKE takes any access token with the cloud-platform scope; userinfo.email lets RBAC see the account's email.
GOOGLE_SCOPES = ("https://www.googleapis.com/auth/cloud-platform", "https://www.googleapis.com/auth/userinfo.email")
REGION = re.compile(r"[a-z]{2}(-[a-z]+)+-\d{1,2}$")
EKS_HOST_REGION = re.compile(r"\.([a-z]{2}(?:-[a-z]+)+-\d{1,2})\.eks\.amazonaws\.com(?:\.cn)?(?::\d+)?(?:/|$)")
# aws-iam-authenticator accepts an EKS token for 15 minutes; `aws eks get-token` reports 14.
EKS_TOKEN_LIFETIME_SECONDS = 14 * 60
LIFETIME_SECONDS = 3600
# The plugin mints a new token when the cached one has less than this left.
REFRESH_MARGIN_SECONDS = 300


class CredentialError(ValueError):
    """A credential that cannot be used; the message never quotes the credential."""


@dataclass(frozen=True)
class Minted:
    token: str
    expires_at: int  # epoch seconds


def _verify(ca_file: str | None) -> str | bool:
    """``ca_file``, else the system's trust (SSL_CERT_FILE honoured, as helm does), else the libraries' bundle."""
    paths = ssl.get_default_verify_paths()
    return ca_file or paths.cafile or paths.capath or True


def _no_token(where: str, payload: Any) -> CredentialError:
    error = payload.get("error") if isinstance(payload, dict) else None
    error = error if isinstance(error, str) and re.fullmatch(r"[\w.-]{1,64}", error) else "no error given"
    return CredentialError(f"{where}: the token endpoint returned no access_token ({error})")


def _unreachable(where: str, url: str, error: BaseException) -> CredentialError:
    """A transport failure named by its TLS reason or its class: library messages may quote request data."""
    seen: Any = error
    for _link in range(16):  # a chain is a few links; the bound guards against one that loops
        if not isinstance(seen, BaseException) or isinstance(seen, ssl.SSLError):
            break
        seen = seen.__cause__ or seen.__context__ or getattr(seen, "reason", None)
    reason = (seen.reason or "TLS error") if isinstance(seen, ssl.SSLError) else type(error).__name__
    return CredentialError(f"{where}: token endpoint {url}: {reason}")


def aws_target(aws: dict[str, str], cluster: dict[str, str], where: str) -> dict[str, str]:
    """The EKS cluster name and region for ``aws`` against the kubeconfig's current ``cluster``."""
    raw = aws.get("clusterName") or cluster.get("name") or ""
    name = raw.rsplit("/", 1)[-1] if raw.startswith("arn:") and ":cluster/" in raw else raw
    if not name:
        raise CredentialError(f"{where}: clusterName is needed: the kubeconfig's current context names no cluster")
    arn_region = raw.split(":")[3] if raw.startswith("arn:") and raw.count(":") > 3 else ""
    host = EKS_HOST_REGION.search(cluster.get("server") or "")
    region = aws.get("region") or (arn_region if REGION.match(arn_region) else "") or (host and host.group(1))
    return {"cluster": name, "region": region or "us-east-1"}


def _google_token(info: dict[str, Any], verify: str | bool, where: str) -> Minted:
    import requests
    from google.auth.exceptions import RefreshError, TransportError
    from google.auth.transport.requests import Request
    from google.oauth2 import credentials, service_account

    if info["type"] == "service_account":
        creds = service_account.Credentials.from_service_account_info(info, scopes=GOOGLE_SCOPES)
    else:  # not from_authorized_user_info: it always posts to Google's token URI, whatever token_uri says
        creds = credentials.Credentials(None, refresh_token=info["refresh_token"], token_uri=info["token_uri"],
                                        client_id=info["client_id"], client_secret=info["client_secret"],
                                        scopes=GOOGLE_SCOPES)
    try:  # verify per request: a session's own gives way to REQUESTS_CA_BUNDLE
        creds.refresh(functools.partial(Request(requests.Session()), verify=verify))
    except RefreshError as error:  # its second argument is the endpoint's JSON answer
        raise _no_token(where, error.args[1] if len(error.args) > 1 else None) from None
    except TransportError as error:
        raise _unreachable(where, info["token_uri"], error) from None
    expiry = creds.expiry.replace(tzinfo=datetime.UTC).timestamp() if creds.expiry else None
    return Minted(creds.token, int(expiry or time.time() + LIFETIME_SECONDS))


def _aws_token(aws: dict[str, str], cluster: dict[str, str], verify: str | bool, where: str) -> Minted:
    import botocore.session
    from botocore import UNSIGNED
    from botocore.config import Config
    from botocore.exceptions import BotoCoreError, ClientError

    target, session = aws_target(aws, cluster, where), botocore.session.Session()
    options = {"region_name": target["region"], "endpoint_url": aws.get("stsEndpoint"), "verify": verify}
    # The web identity token authenticates the call: unsigned, so no ambient AWS credentials are looked up.
    sts = session.create_client("sts", config=Config(signature_version=UNSIGNED), **options)
    try:
        creds = sts.assume_role_with_web_identity(
            RoleArn=aws["roleARN"], RoleSessionName=aws.get("roleSessionName", "modelplane-serving"),
            WebIdentityToken=aws["webIdentityToken"], DurationSeconds=LIFETIME_SECONDS)["Credentials"]
    except ClientError as error:
        code = str(error.response.get("Error", {}).get("Code", ""))
        code = code if re.fullmatch(r"[\w.]{1,64}", code) else "no error code given"
        raise CredentialError(f"{where}: STS AssumeRoleWithWebIdentity returned no credentials ({code})") from None
    except BotoCoreError as error:
        raise _unreachable(where, sts.meta.endpoint_url, error) from None
    signer = session.create_client("sts", aws_access_key_id=creds["AccessKeyId"], **options,
                                   aws_secret_access_key=creds["SecretAccessKey"],
                                   aws_session_token=creds["SessionToken"])
    # aws-iam-authenticator reads the cluster from this signed header, where `aws eks get-token` puts it.
    signer.meta.events.register("before-sign.sts.GetCallerIdentity",
                                lambda request, **_: request.headers.__setitem__("x-k8s-aws-id", target["cluster"]))
    url = signer.generate_presigned_url("get_caller_identity", ExpiresIn=60, HttpMethod="GET")
    token = "k8s-aws-v1." + base64.urlsafe_b64encode(url.encode()).decode().rstrip("=")
    return Minted(token, int(time.time()) + EKS_TOKEN_LIFETIME_SECONDS)


def _nebius_token(key: dict[str, str], verify: str | bool, where: str) -> Minted:
    import requests
    from google.auth import crypt, jwt

    now, token_type = int(time.time()), "urn:ietf:params:oauth:token-type:"
    claims = {"iss": key["account"], "sub": key["account"], "aud": "token-service.iam.new.nebiuscloud.net",
              "iat": now, "exp": now + 60}  # as the Nebius SDKs sign it
    form = {"grant_type": "urn:ietf:params:oauth:grant-type:token-exchange", "subject_token_type": token_type + "jwt",
            "subject_token": jwt.encode(crypt.RSASigner.from_string(key["key"], key["kid"]), claims).decode(),
            "requested_token_type": token_type + "access_token"}
    try:
        payload = requests.post(key["endpoint"], data=form, timeout=30, verify=verify).json()
    except requests.exceptions.JSONDecodeError:
        raise CredentialError(f"{where}: the token endpoint did not answer with JSON") from None
    except requests.RequestException as error:
        raise _unreachable(where, key["endpoint"], error) from None
    token = payload.get("access_token") if isinstance(payload, dict) else None
    if not isinstance(token, str) or not token:
        raise _no_token(where, payload)
    lifetime = payload.get("expires_in")
    return Minted(token, now + (lifetime if isinstance(lifetime, int) else LIFETIME_SECONDS))


def mint(settings: dict[str, Any]) -> Minted:
    """A bearer token for ``settings``: the identity ``type``, the parsed ``credential``, ``where`` (the secret's path,
    which starts every message), ``ca_file`` and the kubeconfig's current ``cluster`` (``name``, ``server``: AWS's)."""
    identity_type, credential, where = settings["type"], settings["credential"], settings["where"]
    verify = _verify(settings.get("ca_file"))
    try:
        if identity_type == AWS:
            return _aws_token(credential, settings.get("cluster") or {}, verify, where)
        return (_google_token if identity_type == GOOGLE else _nebius_token)(credential, verify, where)
    except ImportError as error:
        raise CredentialError(f"{where}: {identity_type} needs the Python module {error.name}: install the "
                              "collection's requirements.txt") from None


def write_private(path: str, data: str | bytes) -> None:
    """Write ``data`` to ``path`` readable by the owner only, never wider even for a moment."""
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path) or ".", prefix=".servingstack-")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data.encode("utf-8") if isinstance(data, str) else data)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def store_token(cache_file: str, minted: Minted) -> None:
    write_private(cache_file, json.dumps(asdict(minted)))


def plugin_token(config: dict[str, Any], now: int | None = None) -> Minted:
    """The cached token while it has more than REFRESH_MARGIN_SECONDS left, else a new one (then cached)."""
    try:
        with open(config["cache"], encoding="utf-8") as handle:
            cached = Minted(**json.load(handle))
        if cached.expires_at - (time.time() if now is None else now) > REFRESH_MARGIN_SECONDS:
            return cached
    except (OSError, ValueError, TypeError):
        pass  # no usable cache: mint
    minted = mint(config)
    store_token(config["cache"], minted)
    return minted


def plugin_main(argv: list[str]) -> int:
    """The exec credential plugin, ``plugin.py <config.json>``: prints an ExecCredential."""
    try:
        with open(argv[0], encoding="utf-8") as handle:
            minted = plugin_token(json.load(handle))
    except (IndexError, OSError, ValueError, KeyError, TypeError) as error:  # CredentialError is a ValueError
        config = argv[0] if argv else "(none given; usage: plugin.py <config.json>)"
        problem = error if isinstance(error, CredentialError) else f"config {config}: {type(error).__name__}"
        sys.stderr.write(f"modelplane.serving cloud identity: {problem}\n")
        return 1
    expires = datetime.datetime.fromtimestamp(minted.expires_at, tz=datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    sys.stdout.write(json.dumps({"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential",
                                 "status": {"token": minted.token, "expirationTimestamp": expires}}))
    return 0


if __name__ == "__main__":
    raise SystemExit(plugin_main(sys.argv[1:]))
