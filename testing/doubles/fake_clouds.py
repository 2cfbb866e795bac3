"""Local HTTPS test doubles of Google's token URI, AWS STS and Nebius IAM that verify what they are sent.

One server on 127.0.0.1 (self-signed certificate) with three endpoints:

- ``/google/token``: the JWT-bearer grant (the assertion's RS256 signature checked with the registered
  service account's public key, ``iss``, ``aud`` (Google's token URI), ``scope`` and lifetime) and the
  refresh-token grant (client id, secret and refresh token checked);
- ``/sts/``: ``AssumeRoleWithWebIdentity`` as an unsigned form (exact field set, role ARN, session name,
  the registered web identity token; no SigV4 header), answering the STS XML with fresh temporary
  credentials, which ``eks_token_valid`` later verifies EKS tokens with (botocore recomputes the SigV4
  query signature, as STS does when aws-iam-authenticator forwards the presigned URL);
- ``/nebius/exchange``: the RFC 8693 token-exchange form, the subject JWT's RS256 signature checked with the
  public key registered for its ``kid``, ``iss`` = ``sub`` = the account, ``aud`` and lifetime.

Tokens it issues are random; ``accepts(token)`` says whether the test cluster's token authenticator
(testing/cluster/token_webhook.py) should take one.
"""

from __future__ import annotations

import base64
import datetime
import hmac
import http.server
import json
import re
import secrets
import ssl
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding, rsa

from .token_endpoint import _self_signed

NEBIUS_AUDIENCE = "token-service.iam.new.nebiuscloud.net"
# Google's documented audience of every JWT-bearer assertion, whichever token URI it is posted to.
GOOGLE_AUDIENCE = "https://oauth2.googleapis.com/token"
STS_XMLNS = "https://sts.amazonaws.com/doc/2011-06-15/"


def b64url_decode(part: str) -> bytes:
    return base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))


def verify_rs256(token: str, public_key: rsa.RSAPublicKey) -> tuple[dict[str, Any], dict[str, Any]]:
    """The header and claims of an RS256 JWT whose signature ``public_key`` verifies (InvalidSignature if not)."""
    header_b64, claims_b64, signature_b64 = token.split(".")
    header = json.loads(b64url_decode(header_b64))
    if header.get("alg") != "RS256":
        raise ValueError("not RS256")
    public_key.verify(b64url_decode(signature_b64), f"{header_b64}.{claims_b64}".encode(), padding.PKCS1v15(),
                      hashes.SHA256())
    return header, json.loads(b64url_decode(claims_b64))


@dataclass
class FakeClouds:
    base_url: str = ""
    cert_file: str = ""
    google_accounts: dict[str, rsa.RSAPublicKey] = field(default_factory=dict)  # client_email -> key
    google_users: dict[str, tuple[str, str]] = field(default_factory=dict)  # refresh token -> (id, secret)
    role_arn: str = "arn:aws:iam::123456789012:role/modelplane-stack"
    web_identity_tokens: set[str] = field(default_factory=set)
    nebius_keys: dict[str, tuple[str, rsa.RSAPublicKey]] = field(default_factory=dict)  # kid -> (account, key)
    eks_cluster: str = ""
    issued: set[str] = field(default_factory=set)
    sts_credentials: dict[str, tuple[str, str]] = field(default_factory=dict)  # access key -> (secret, token)
    requests: list[tuple[str, dict[str, list[str]], dict[str, str]]] = field(default_factory=list)
    rejected: list[str] = field(default_factory=list)

    def url(self, path: str) -> str:
        return f"{self.base_url}{path}"

    # ------------------------------------------------------------------ endpoints

    def google(self, form: dict[str, str]) -> tuple[int, bytes, str]:
        grant = form.get("grant_type")
        if grant == "urn:ietf:params:oauth:grant-type:jwt-bearer":
            if set(form) != {"grant_type", "assertion"}:
                return self._oauth_error("invalid_request")
            header, claims = json.loads(b64url_decode(form["assertion"].split(".")[0])), None
            key = self.google_accounts.get(json.loads(b64url_decode(form["assertion"].split(".")[1])).get("iss"))
            if key is None:
                return self._oauth_error("invalid_client")
            try:
                header, claims = verify_rs256(form["assertion"], key)
            except Exception:
                return self._oauth_error("invalid_grant")
            now = time.time()
            if (claims.get("aud") != GOOGLE_AUDIENCE or not claims["iat"] - 60 <= now <= claims["exp"]
                    or claims["exp"] - claims["iat"] > 3600 or header.get("typ") != "JWT"
                    or "https://www.googleapis.com/auth/cloud-platform" not in claims.get("scope", "").split()):
                return self._oauth_error("invalid_grant")
        elif grant == "refresh_token":
            client = self.google_users.get(form.get("refresh_token", ""))
            if client is None or (form.get("client_id"), form.get("client_secret")) != client:
                return self._oauth_error("invalid_grant")
        else:
            return self._oauth_error("unsupported_grant_type")
        return self._issue(prefix="ya29.")

    def sts(self, form: dict[str, str], headers: dict[str, str]) -> tuple[int, bytes, str]:
        expected = {"Action", "Version", "RoleArn", "RoleSessionName", "WebIdentityToken", "DurationSeconds"}
        if "authorization" in {h.lower() for h in headers} or set(form) != expected:
            return self._sts_error("InvalidParameterValue")
        if form["Action"] != "AssumeRoleWithWebIdentity" or form["Version"] != "2011-06-15":
            return self._sts_error("InvalidAction")
        if not re.fullmatch(r"[\w+=,.@-]{2,64}", form["RoleSessionName"]) or not form["DurationSeconds"].isdigit():
            return self._sts_error("ValidationError")
        if form["WebIdentityToken"] not in self.web_identity_tokens:
            return self._sts_error("InvalidIdentityToken")
        if form["RoleArn"] != self.role_arn:
            return self._sts_error("AccessDenied")
        access_key = "ASIA" + secrets.token_hex(8).upper()
        secret_key, session_token = secrets.token_urlsafe(30), secrets.token_urlsafe(60)
        self.sts_credentials[access_key] = (secret_key, session_token)
        expiration = (datetime.datetime.now(datetime.UTC) + datetime.timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
        body = (
            f'<AssumeRoleWithWebIdentityResponse xmlns="{STS_XMLNS}"><AssumeRoleWithWebIdentityResult>'
            f"<Credentials><AccessKeyId>{access_key}</AccessKeyId><SecretAccessKey>{secret_key}</SecretAccessKey>"
            f"<SessionToken>{session_token}</SessionToken><Expiration>{expiration}</Expiration></Credentials>"
            f"<AssumedRoleUser><Arn>{form['RoleArn']}/{form['RoleSessionName']}</Arn></AssumedRoleUser>"
            "</AssumeRoleWithWebIdentityResult></AssumeRoleWithWebIdentityResponse>"
        )
        return 200, body.encode(), "text/xml"

    def nebius(self, form: dict[str, str]) -> tuple[int, bytes, str]:
        if (form.get("grant_type") != "urn:ietf:params:oauth:grant-type:token-exchange"
                or form.get("subject_token_type") != "urn:ietf:params:oauth:token-type:jwt"
                or form.get("requested_token_type") != "urn:ietf:params:oauth:token-type:access_token"):
            return self._oauth_error("invalid_request")
        token = form.get("subject_token", "")
        try:
            kid = json.loads(b64url_decode(token.split(".")[0])).get("kid")
            account, key = self.nebius_keys[kid]
            _header, claims = verify_rs256(token, key)
        except Exception:
            return self._oauth_error("invalid_grant")
        now = time.time()
        if (claims.get("iss") != account or claims.get("sub") != account or claims.get("aud") != NEBIUS_AUDIENCE
                or not claims["iat"] - 60 <= now <= claims["exp"] or claims["exp"] - claims["iat"] > 300):
            return self._oauth_error("invalid_grant")
        return self._issue(prefix="ne1", extra={"issued_token_type": "urn:ietf:params:oauth:token-type:access_token"})

    def _issue(self, prefix: str, extra: dict[str, str] | None = None) -> tuple[int, bytes, str]:
        token = prefix + secrets.token_urlsafe(24)
        self.issued.add(token)
        body = {"access_token": token, "token_type": "Bearer", "expires_in": 3599, **(extra or {})}
        return 200, json.dumps(body).encode(), "application/json"

    @staticmethod
    def _oauth_error(code: str) -> tuple[int, bytes, str]:
        return 400, json.dumps({"error": code}).encode(), "application/json"

    @staticmethod
    def _sts_error(code: str) -> tuple[int, bytes, str]:
        body = (f'<ErrorResponse xmlns="{STS_XMLNS}"><Error><Type>Sender</Type><Code>{code}</Code>'
                "<Message>refused by the fake STS</Message></Error><RequestId>0</RequestId></ErrorResponse>")
        return 400, body.encode(), "text/xml"

    # ------------------------------------------------------------------ what the Kubernetes API accepts

    def eks_token_valid(self, token: str) -> bool:
        """Whether ``token`` is an EKS token for ``eks_cluster`` signed with credentials this STS handed out."""
        from botocore.auth import SigV4QueryAuth
        from botocore.awsrequest import AWSRequest
        from botocore.credentials import Credentials

        if not token.startswith("k8s-aws-v1."):
            return False
        url = b64url_decode(token[len("k8s-aws-v1."):]).decode()
        parts = urlsplit(url)
        query = {k: v[0] for k, v in parse_qs(parts.query, keep_blank_values=True).items()}
        access_key, _date, region, service, terminal = query["X-Amz-Credential"].split("/")
        signed_at = datetime.datetime.strptime(query["X-Amz-Date"], "%Y%m%dT%H%M%SZ").replace(tzinfo=datetime.UTC)
        age = (datetime.datetime.now(datetime.UTC) - signed_at).total_seconds()
        if (not url.startswith(self.url("/sts/?")) or query.get("Action") != "GetCallerIdentity"
                or query.get("Version") != "2011-06-15" or query.get("X-Amz-Algorithm") != "AWS4-HMAC-SHA256"
                or query.get("X-Amz-Expires") != "60" or query.get("X-Amz-SignedHeaders") != "host;x-k8s-aws-id"
                or (service, terminal) != ("sts", "aws4_request") or not -60 <= age <= 15 * 60
                or access_key not in self.sts_credentials):
            return False
        secret_key, session_token = self.sts_credentials[access_key]
        if query.get("X-Amz-Security-Token") != session_token:
            return False
        unsigned = url[:url.index("&X-Amz-Signature=")]
        request = AWSRequest(method="GET", url=unsigned, headers={"x-k8s-aws-id": self.eks_cluster})
        request.context["timestamp"] = query["X-Amz-Date"]
        signer = SigV4QueryAuth(Credentials(access_key, secret_key, session_token), "sts", region, expires=60)
        expected = signer.signature(signer.string_to_sign(request, signer.canonical_request(request)), request)
        return hmac.compare_digest(expected, query["X-Amz-Signature"])

    def accepts(self, token: str) -> bool:
        """The token webhook's check: a token this fake issued, or a valid EKS token."""
        ok = token in self.issued or (bool(self.eks_cluster) and self.eks_token_valid(token))
        if not ok:
            self.rejected.append(token)
        return ok


@pytest.fixture(name="fake_clouds")
def fake_clouds_fixture(tmp_path) -> Iterator[FakeClouds]:
    cert_file, key_file = _self_signed(tmp_path)
    clouds = FakeClouds(cert_file=str(cert_file))

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            raw = self.rfile.read(int(self.headers["Content-Length"])).decode()
            form = {k: v[0] for k, v in parse_qs(raw, keep_blank_values=True).items()}
            headers = dict(self.headers.items())
            clouds.requests.append((self.path, parse_qs(raw, keep_blank_values=True), headers))
            if self.headers.get("Content-Type", "").split(";")[0] != "application/x-www-form-urlencoded":
                code, body, kind = clouds._oauth_error("invalid_request")
            elif self.path == "/google/token":
                code, body, kind = clouds.google(form)
            elif self.path == "/sts/":
                code, body, kind = clouds.sts(form, headers)
            elif self.path == "/nebius/exchange":
                code, body, kind = clouds.nebius(form)
            else:
                code, body, kind = 404, b"{}", "application/json"
            self.send_response(code)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert_file, key_file)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    clouds.base_url = f"https://localhost:{server.server_address[1]}"
    yield clouds
    server.shutdown()
