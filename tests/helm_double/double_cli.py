"""Running the helm double against a stand-in, and reading the stand-in back, for the double's tests."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from standin.fixtures import ClusterHandle

HELM = [sys.executable, str(Path(__file__).resolve().parent / "helm.py")]


def helm(cluster: ClusterHandle, *argv: str, namespace: str) -> tuple[subprocess.CompletedProcess, float]:
    """Run the double in ``namespace``; the result and how long it took."""
    start = time.monotonic()
    result = subprocess.run([*HELM, *argv], capture_output=True, text=True, timeout=120, check=False,
                            env={**cluster.env, "HELM_NAMESPACE": namespace})
    return result, time.monotonic() - start


def get(cluster: ClusterHandle, path: str) -> dict[str, Any] | None:
    """GET ``path`` from the stand-in as JSON; None on 404."""
    try:
        with urllib.request.urlopen(cluster.url + path, timeout=30) as response:
            return json.loads(response.read())
    except urllib.error.HTTPError as error:
        if error.code == 404:
            return None
        raise
