"""A small program for the pod runtime's tests (test_runtime.py), run for a test image registered only there: what a
container would do, observable through the API.

- ``--http PORT``: HTTP on 0.0.0.0:PORT. ``GET /ready`` answers 200 while the file ``--control DIR``/ready says
  ``yes`` (and, with ``--api-get PATH``, the API server answers that GET with 200 to the pod's ServiceAccount),
  else 503; any other GET answers the pod's name.
- ``--control DIR``: when ``DIR/exit`` changes from what it held at start, exit with that code (the directory is
  a ConfigMap volume: the test edits the ConfigMap).
- ``--exit-after SECONDS --code N``: a Job's container: exit with N after SECONDS.
- ``--webhook PORT --cert-dir DIR``: a validating admission webhook over TLS (DIR/tls.crt, DIR/tls.key) on PORT
  that refuses objects named ``refuse-*``, naming the pod in its message.
- ``--ignore-term``: SIGTERM does nothing (the grace period then ends in SIGKILL).
- ``--api-get PATH``: the in-cluster configuration (KUBERNETES_SERVICE_HOST, the ServiceAccount token and CA
  mounted at /var/run/secrets/kubernetes.io/serviceaccount), as a Go client's would be.
Standard library only.
"""

from __future__ import annotations

import argparse
import http.server
import json
import os
import signal
import ssl
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from json_reply import JsonHandler

ACCOUNT = Path("/var/run/secrets/kubernetes.io/serviceaccount")


def read(path: Path) -> str:
    try:
        return path.read_text().strip()
    except OSError:
        return ""


def api_status(path: str) -> int:
    """The API server's HTTP status for GET ``path`` as the pod's ServiceAccount (0: no answer)."""
    url = f"https://{os.environ['KUBERNETES_SERVICE_HOST']}:{os.environ['KUBERNETES_SERVICE_PORT']}{path}"
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {read(ACCOUNT / 'token')}"})
    context = ssl.create_default_context(cafile=str(ACCOUNT / "ca.crt"))
    try:
        with urllib.request.urlopen(request, context=context, timeout=5) as answer:
            return answer.status
    except urllib.error.HTTPError as err:
        return err.code
    except (OSError, ssl.SSLError):
        return 0


class State:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.api = 0

    def ready(self) -> bool:
        control_ok = self.args.control is None or read(Path(self.args.control) / "ready") == "yes"
        return control_ok and (self.args.api_get is None or self.api == 200)


def handler(state: State) -> type[JsonHandler]:
    pod = os.environ.get("POD_NAME", "?")

    class Handler(JsonHandler):
        def do_GET(self) -> None:
            if self.path == "/ready":
                ready = state.ready()
                self.reply(200 if ready else 503, {"ready": ready, "api": state.api})
            else:
                self.reply(200, {"pod": pod, "pid": os.getpid()})

        def do_POST(self) -> None:
            review = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))) or b"{}")
            request = review.get("request") or {}
            name = ((request.get("object") or {}).get("metadata") or {}).get("name", "")
            allowed = not name.startswith("refuse-")
            response: dict[str, Any] = {"uid": request.get("uid", ""), "allowed": allowed}
            if not allowed:
                response["status"] = {"code": 403, "message": f"refused by pod {pod} (pid {os.getpid()})"}
            self.reply(200, {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response})

    return Handler


def serve(server: http.server.ThreadingHTTPServer) -> None:
    threading.Thread(target=server.serve_forever, daemon=True).start()


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--http", type=int)
    parser.add_argument("--control")
    parser.add_argument("--exit-after", type=float)
    parser.add_argument("--code", type=int, default=0)
    parser.add_argument("--webhook", type=int)
    parser.add_argument("--cert-dir")
    parser.add_argument("--api-get")
    parser.add_argument("--name", help="ignored: shows $(VAR) expansion in the command line")
    parser.add_argument("--ignore-term", action="store_true", help="ignore SIGTERM (only SIGKILL ends it)")
    args = parser.parse_args()
    if args.ignore_term:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    print(f"started as pid {os.getpid()}: {' '.join(sys.argv[1:])}", flush=True)
    if args.exit_after is not None:
        time.sleep(args.exit_after)
        return args.code
    state = State(args)
    if args.http:
        serve(http.server.ThreadingHTTPServer(("0.0.0.0", args.http), handler(state)))
    if args.webhook:
        server = http.server.ThreadingHTTPServer(("0.0.0.0", args.webhook), handler(state))
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(f"{args.cert_dir}/tls.crt", f"{args.cert_dir}/tls.key")
        server.socket = context.wrap_socket(server.socket, server_side=True)
        serve(server)
    first_exit = read(Path(args.control) / "exit") if args.control else ""
    while True:
        if args.api_get:
            state.api = api_status(args.api_get)
        if args.control:
            wanted = read(Path(args.control) / "exit")
            if wanted != first_exit and wanted.isdigit():
                print(f"exiting with {wanted} as asked", flush=True)
                return int(wanted)
        time.sleep(0.3)


if __name__ == "__main__":
    sys.exit(main())
