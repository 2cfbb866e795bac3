"""The admission STAND-IN: what answers a webhook pod whose program cannot be built here (RUNTIME.md lists each
use and why). It allows every AdmissionReview, so it checks nothing the real webhook would: it only lets the
API server's calls succeed where the chart registers a webhook with failurePolicy Fail.

The runtime runs it as the pod's program (runtime.py), in the pod's network and mount namespaces, as its
ServiceAccount. It listens on each of the container's TCP ports: a connection that opens with a TLS handshake gets
TLS, any other plain HTTP (health and readiness probes, metrics). POST: an AdmissionReview answered `allowed`;
GET: 200.

- ``--cert FILE --key FILE``: the pod's own mounted certificate, read again whenever the file changes (the
  kubelet keeps the Secret volume current, cert-manager renews).
- ``--own-ca NAMESPACE/NAME --dns-names a,b,c``: the pod mounts none (cert-manager's webhook makes its CA
  itself): the CA Secret is read, or made, through the API as the pod's ServiceAccount, as cert-manager's webhook
  does (its chart's Role allows exactly that), and a serving certificate for the names is signed with it.

Usage: python admission_stand_in.py --ports P[,P...] (--cert FILE --key FILE | --own-ca NS/NAME --dns-names ...)
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import socket
import ssl
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from json_reply import JsonHandler

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from cluster.operator_double import issue_certificate, load_key_pair

ACCOUNT = Path("/var/run/secrets/kubernetes.io/serviceaccount")


def admission_response(review: dict[str, Any]) -> dict[str, Any]:
    """The AdmissionReview answer: allowed, for the request's uid, in the request's version."""
    request = review.get("request") or {}
    return {"apiVersion": review.get("apiVersion", "admission.k8s.io/v1"), "kind": "AdmissionReview",
            "response": {"uid": request.get("uid", ""), "allowed": True}}


class Certificates:
    """The serving certificate: an SSLContext, made again when the files change."""

    def __init__(self, cert: str, key: str) -> None:
        self.cert, self.key = cert, key
        self.stamp: tuple[float, float] | None = None
        self.context: ssl.SSLContext | None = None
        self.lock = threading.Lock()

    def current(self) -> ssl.SSLContext:
        with self.lock:
            stamp = (os.stat(self.cert).st_mtime, os.stat(self.key).st_mtime)
            if stamp != self.stamp or self.context is None:
                context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
                context.load_cert_chain(self.cert, self.key)
                self.context, self.stamp = context, stamp
            return self.context


class Handler(JsonHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:
        try:
            review = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))) or b"{}")
            self.reply(200, admission_response(review))
        except ValueError as err:
            self.reply(400, {"error": f"not an AdmissionReview: {err}"})

    def do_GET(self) -> None:
        self.reply(200, {"status": "ok", "standIn": True})


def serve_connection(conn: socket.socket, address: Any, certificates: Certificates) -> None:
    """TLS when the client opens with a handshake record (0x16), plain HTTP otherwise."""
    try:
        conn.settimeout(30)
        first = conn.recv(1, socket.MSG_PEEK)
        if first == b"\x16":
            conn = certificates.current().wrap_socket(conn, server_side=True)
        Handler(conn, address, None)  # type: ignore[arg-type]
    except (OSError, ssl.SSLError):
        pass
    finally:
        conn.close()


def listen(port: int, certificates: Certificates) -> None:
    server = socket.create_server(("0.0.0.0", port), reuse_port=False)
    while True:
        conn, address = server.accept()
        threading.Thread(target=serve_connection, args=(conn, address, certificates), daemon=True).start()


# -- a CA of its own (cert-manager's webhook) -------------------------------------------------------------------


def api(method: str, path: str, body: Any = None) -> tuple[int, dict[str, Any]]:
    """The API as the pod's ServiceAccount (the in-cluster configuration the runtime gives every pod)."""
    url = f"https://{os.environ['KUBERNETES_SERVICE_HOST']}:{os.environ['KUBERNETES_SERVICE_PORT']}{path}"
    token = (ACCOUNT / "token").read_text().strip()
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, method=method, headers={
        "Authorization": f"Bearer {token}", "Content-Type": "application/json", "Accept": "application/json"})
    context = ssl.create_default_context(cafile=str(ACCOUNT / "ca.crt"))
    try:
        with urllib.request.urlopen(request, context=context, timeout=10) as answer:
            return answer.status, json.loads(answer.read() or b"{}")
    except urllib.error.HTTPError as err:
        return err.code, {}


def own_ca(namespace: str, name: str) -> dict[str, Any]:
    """The CA Secret, made (a self-signed CA in ca.crt, tls.crt, tls.key) when it does not exist."""
    while True:
        status, secret = api("GET", f"/api/v1/namespaces/{namespace}/secrets/{name}")
        if status == 200 and load_key_pair(secret):
            return secret
        if status == 404:
            crt, key, _ = issue_certificate({"commonName": "cert-manager-webhook-ca", "isCA": True,
                                             "duration": "8760h", "privateKey": {"algorithm": "ECDSA"}}, None)
            data = {k: base64.b64encode(v).decode() for k, v in (("ca.crt", crt), ("tls.crt", crt), ("tls.key", key))}
            status, _ = api("POST", f"/api/v1/namespaces/{namespace}/secrets", {
                "apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "namespace": namespace},
                "type": "Opaque", "data": data})
            if status in (201, 409):
                continue
        print(f"the CA Secret {namespace}/{name}: HTTP {status}; trying again", file=sys.stderr, flush=True)
        time.sleep(1)


def serving_files(secret: dict[str, Any], dns_names: list[str], folder: Path) -> tuple[str, str]:
    pair = load_key_pair(secret)
    assert pair is not None
    crt, key, _ = issue_certificate({"dnsNames": dns_names, "privateKey": {"algorithm": "ECDSA"}}, pair)
    cert_file, key_file = folder / "tls.crt", folder / "tls.key"
    cert_file.write_bytes(crt)
    fd = os.open(key_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(key)
    return str(cert_file), str(key_file)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ports", required=True, help="the container's TCP ports, comma-separated")
    parser.add_argument("--cert")
    parser.add_argument("--key")
    parser.add_argument("--own-ca", metavar="NAMESPACE/NAME")
    parser.add_argument("--dns-names", default="")
    args = parser.parse_args(argv)
    if args.own_ca:
        namespace, name = args.own_ca.split("/", 1)
        folder = Path(tempfile.mkdtemp(prefix="stand-in-"))  # the pod's private /tmp
        cert, key = serving_files(own_ca(namespace, name), [n for n in args.dns_names.split(",") if n], folder)
    elif args.cert and args.key:
        cert, key = args.cert, args.key
    else:
        parser.error("--cert and --key, or --own-ca")
    certificates = Certificates(cert, key)
    ports = [int(port) for port in args.ports.split(",") if port]
    print(f"admission stand-in: allowing every request on ports {ports}", flush=True)
    for port in ports:
        threading.Thread(target=listen, args=(port, certificates), daemon=True).start()
    threading.Event().wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
