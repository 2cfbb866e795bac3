"""pytest fixtures serving the test charts (``build.py``) as a classic Helm chart repository.

``chart_repo`` (session scope) builds every test chart once into a temporary directory with the real helm, serves
that directory over HTTP on 127.0.0.1 (a random port, ``http.server`` in a daemon thread) and yields a ``ChartRepo``
(``url``, ``directory``, ``charts``). The server stops at the end of the session, or after ``TEST_CHARTS_LIFETIME``
seconds (default 3 hours) if the session outlives that, so a stuck run never leaves it behind.

``shared_repo()`` does the same once per process for the playbook tests, the demo and the benchmarks (they point
``servingstack_chart_mirror`` at its URL); it stops at exit. Both skip, with the reason, only when
``<repo>/../shared/upstream`` is absent. ``TEST_CHARTS_HELM`` picks the helm binary (default ``.venv/bin/helm``).
"""

from __future__ import annotations

import atexit
import base64
import functools
import http.server
import importlib.util
import os
import shutil
import ssl
import sys
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import pytest

HERE = Path(__file__).resolve().parent
REPO_ROOT = HERE.parents[1]
DEFAULT_LIFETIME = 3 * 3600.0


def load_build() -> ModuleType:
    """``build.py`` as a module, loaded by path (this folder is not a package)."""
    spec = importlib.util.spec_from_file_location("testing_charts_build", HERE / "build.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def helm_binary() -> str:
    return os.environ.get("TEST_CHARTS_HELM") or str(REPO_ROOT / ".venv" / "bin" / "helm")


def upstream_dir() -> Path:
    return REPO_ROOT.parent / "shared" / "upstream"


def skip_without_upstream() -> None:
    if not (upstream_dir() / "provenance.yaml").is_file():
        pytest.skip(f"upstream reference data absent ({upstream_dir()}): the test charts are built from it")


@dataclass(frozen=True)
class ChartRepo:
    url: str  # http://127.0.0.1:<port>
    directory: Path  # index.yaml and the .tgz files
    charts: tuple[str, ...]  # <name>-<version> of every chart built


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    # "Basic <base64 user:password>" the server demands, or None (set per server by serve()).
    authorization: str | None = None
    # Requests answered, with whether they were authorized: (path, authorized).
    seen: list[tuple[str, bool]] = []

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        authorized = self.authorization is None or self.headers.get("Authorization") == self.authorization
        self.seen.append((self.path, authorized))
        if not authorized:
            self.send_response(401)
            self.send_header("WWW-Authenticate", 'Basic realm="test charts"')
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        super().do_GET()


@dataclass
class _Server:
    httpd: http.server.ThreadingHTTPServer
    thread: threading.Thread
    deadline: threading.Timer

    seen: list[tuple[str, bool]]

    @property
    def url(self) -> str:
        host, port = self.httpd.server_address[:2]
        scheme = "https" if isinstance(self.httpd.socket, ssl.SSLSocket) else "http"
        return f"{scheme}://{host}:{port}"

    def stop(self) -> None:
        self.deadline.cancel()
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=10)


def serve(directory: Path, lifetime: float, *, tls: tuple[Path, Path] | None = None,
          basic_auth: tuple[str, str] | None = None) -> _Server:
    """Serve ``directory`` on 127.0.0.1 (random port) until ``stop()`` or ``lifetime`` seconds, whichever first;
    over HTTPS with ``tls`` (certificate and key files), demanding ``basic_auth`` (user, password) if given."""
    seen: list[tuple[str, bool]] = []
    token = None if basic_auth is None else "Basic " + base64.b64encode(":".join(basic_auth).encode()).decode()
    handler_class = type("ChartRepoHandler", (_QuietHandler,), {"authorization": token, "seen": seen})
    handler = functools.partial(handler_class, directory=str(directory))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    if tls is not None:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(str(tls[0]), str(tls[1]))
        httpd.socket = context.wrap_socket(httpd.socket, server_side=True)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, name="chart-repo", daemon=True)
    deadline = threading.Timer(lifetime, httpd.shutdown)
    deadline.daemon = True
    thread.start()
    deadline.start()
    return _Server(httpd, thread, deadline, seen)


@pytest.fixture(scope="session")
def chart_repo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ChartRepo]:
    skip_without_upstream()
    directory = tmp_path_factory.mktemp("chart-repo")
    server = serve(directory, float(os.environ.get("TEST_CHARTS_LIFETIME", DEFAULT_LIFETIME)))
    try:
        built = load_build().build(directory, helm=helm_binary(), url=server.url, upstream=upstream_dir())
        yield ChartRepo(server.url, directory, tuple(built))
    finally:
        server.stop()


_shared: ChartRepo | None = None
_shared_lock = threading.Lock()


def shared_repo() -> ChartRepo:
    """Every test chart built and served once per process (the playbook tests' chart mirror), stopped at exit.

    Skips the calling test, saying why, where ``../shared/upstream`` is absent."""
    global _shared  # pylint: disable=global-statement
    skip_without_upstream()
    with _shared_lock:
        if _shared is None:
            directory = Path(tempfile.mkdtemp(prefix="test-charts-"))
            server = serve(directory, float(os.environ.get("TEST_CHARTS_LIFETIME", DEFAULT_LIFETIME)))
            atexit.register(shutil.rmtree, directory, True)
            atexit.register(server.stop)
            built = load_build().build(directory, helm=helm_binary(), url=server.url, upstream=upstream_dir())
            _shared = ChartRepo(server.url, directory, tuple(built))
        return _shared
