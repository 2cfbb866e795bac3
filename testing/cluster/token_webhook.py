"""A bearer-token authenticator for the test control plane: kube-apiserver's authentication webhook, served by the
test process itself.

`token_webhook(workdir, tokens=..., accept=...)` starts a small threaded HTTP server on 127.0.0.1 that answers
kube-apiserver's TokenReview (``authentication.k8s.io/v1``) with ``authenticated: true`` and a user for a token it
accepts, ``authenticated: false`` otherwise, and yields a `TokenWebhook` whose ``apiserver_args`` go to
``running_cluster(..., apiserver_args=webhook.apiserver_args)``:

- ``authentication-token-webhook-config-file``: a kubeconfig-format file naming the server. kube-apiserver 1.36
  takes an ``http://`` server there (the webhook client is client-go's REST client; only admission webhooks insist
  on https), and the server listens on 127.0.0.1 only, so plain HTTP: no CA to make.
- ``authentication-token-webhook-version=v1``: TokenReview v1 (the flag still defaults to v1beta1).
- ``authentication-token-webhook-cache-ttl=0s``: the webhook's own cache (2 minutes by default) off. A token the
  webhook starts accepting works from the next request on (kube-apiserver caches no failures). A token it stops
  accepting is refused within 10 seconds, not at once: kube-apiserver keeps successful token authentications for
  10 s in a cache over all its token authenticators, a fixed value no flag changes (v1.36.3,
  pkg/kubeapiserver/options/authentication.go, TokenSuccessCacheTTL).
- ``anonymous-auth=false`` with ``anonymous=False``: a request without credentials is refused with 401.

What the real API server (v1.36.3) does, checked: a bearer token the webhook refuses gets ``401 Unauthorized``
(Status reason and message ``Unauthorized``) whether anonymous requests are allowed or not: a refused token is an
error, and the anonymous authenticator only stands in when no authenticator failed. A request with no credentials
(or an empty bearer token) is ``system:anonymous``, which the cluster's authorization (``Node,RBAC``) refuses
with ``403 Forbidden``; only with ``anonymous-auth=false`` is it 401. Client certificates are checked before
tokens: the cluster's kubeconfig (the admin client certificate) keeps working, and a request that carries a
certificate and a token is the certificate's (the token is never reviewed). An accepted token's user is in
``system:masters``, so RBAC lets it do anything, like the admin.

Why a webhook rather than kube-apiserver's structured authentication configuration (``--authentication-config``
with a local JWT issuer): the tests authenticate with tokens they do not shape. The fake cloud token services
(`testing/doubles/fake_clouds.py`) hand out opaque random tokens and EKS tokens (a presigned STS URL), which only
their own checks (``FakeClouds.accepts``) can validate, and the inventory and AWX tests use fixed API keys; none of
them is a JWT an OIDC issuer would sign. A webhook validates whatever the test decides, and the test can change its
mind between two requests.
"""

from __future__ import annotations

import base64
import http.server
import json
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from .json_reply import JsonHandler

REVIEW_API = "authentication.k8s.io/v1"
# Groups of an accepted token's user: system:masters as well, so the user may do anything under RBAC too.
GROUPS = ["system:authenticated", "system:masters"]


@dataclass
class Review:
    """One TokenReview the API server sent: the token, and whether it was accepted (as whom)."""

    token: str
    username: str | None


@dataclass
class TokenWebhook:
    """The running webhook: ``tokens`` (accepted as they are) and ``accept`` (a callable: the token -> a truthy
    value to accept it, a str being the username) may change while the cluster runs; ``reviews`` lists what the API
    server asked, in order."""

    tokens: set[str] = field(default_factory=set)
    accept: Callable[[str], Any] | None = None
    username: str = "token-webhook-user"
    reviews: list[Review] = field(default_factory=list)
    url: str = ""
    apiserver_args: dict[str, str] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def review(self, token: str) -> str | None:
        """The username the token authenticates as, or None."""
        verdict: Any = token in self.tokens
        if not verdict and self.accept is not None:
            verdict = self.accept(token)
        username = (verdict if isinstance(verdict, str) and verdict else self.username) if verdict else None
        with self.lock:
            self.reviews.append(Review(token, username))
        return username

    def accepted(self) -> list[str]:
        """The tokens reviewed and accepted so far, in order (repeats included)."""
        with self.lock:
            return [review.token for review in self.reviews if review.username]

    def refused(self) -> list[str]:
        with self.lock:
            return [review.token for review in self.reviews if not review.username]


def webhook_kubeconfig(url: str) -> dict[str, Any]:
    """The kubeconfig-format file kube-apiserver reads the webhook's address from (its user: none needed)."""
    return {
        "apiVersion": "v1", "kind": "Config", "current-context": "webhook",
        "clusters": [{"name": "token-webhook", "cluster": {"server": url}}],
        "users": [{"name": "kube-apiserver", "user": {}}],
        "contexts": [{"name": "webhook", "context": {"cluster": "token-webhook", "user": "kube-apiserver"}}],
    }


def _handler(webhook: TokenWebhook) -> type[http.server.BaseHTTPRequestHandler]:
    class Handler(JsonHandler):
        def do_POST(self) -> None:
            try:
                review = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))) or b"{}")
                spec = review.get("spec") or {}
                username = webhook.review(str(spec.get("token", "")))
            except Exception as error:  # an answer the API server can log, never a hung request
                self.reply(500, {"error": f"{type(error).__name__}: {error}"})
                return
            status: dict[str, Any] = {"authenticated": bool(username)}
            if username:
                status["user"] = {"username": username, "uid": username, "groups": GROUPS}
                if spec.get("audiences"):
                    status["audiences"] = spec["audiences"]
            else:
                status["error"] = "the token is not one the test accepts"
            self.reply(200, {"apiVersion": review.get("apiVersion", REVIEW_API), "kind": "TokenReview",
                              "status": status})

    return Handler


@contextmanager
def token_webhook(workdir: Path, *, tokens: Iterable[str] = (), accept: Callable[[str], Any] | None = None,
                  anonymous: bool = True, username: str = "token-webhook-user") -> Iterator[TokenWebhook]:
    """Serve the webhook for the duration of the block; start the cluster inside it with
    ``apiserver_args=webhook.apiserver_args``. ``anonymous=False`` refuses requests without credentials (401)."""
    webhook = TokenWebhook(tokens=set(tokens), accept=accept, username=username)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _handler(webhook))
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, name="token-webhook", daemon=True)
    thread.start()
    try:
        webhook.url = f"http://127.0.0.1:{server.server_address[1]}/authenticate"
        workdir.mkdir(parents=True, exist_ok=True)
        config = workdir / "token-webhook.kubeconfig"
        config.write_text(yaml.safe_dump(webhook_kubeconfig(webhook.url)))
        webhook.apiserver_args = {
            "authentication-token-webhook-config-file": str(config),
            "authentication-token-webhook-version": "v1",
            "authentication-token-webhook-cache-ttl": "0s",
        }
        if not anonymous:
            webhook.apiserver_args["anonymous-auth"] = "false"
        yield webhook
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


def token_kubeconfig(url: str, ca_file: str, token: str | None = None, name: str = "cluster") -> dict[str, Any]:
    """A kubeconfig for the cluster at ``url`` (TLS verified with ``ca_file``, inlined) whose user authenticates
    with the bearer ``token`` (no credentials at all without one): what a cloud or an AWX credential would give."""
    return {
        "apiVersion": "v1", "kind": "Config", "current-context": name,
        "clusters": [{"name": name, "cluster": {
            "server": url, "certificate-authority-data": base64.b64encode(Path(ca_file).read_bytes()).decode()}}],
        "users": [{"name": name, "user": {"token": token} if token else {}}],
        "contexts": [{"name": name, "context": {"cluster": name, "user": name}}],
    }
