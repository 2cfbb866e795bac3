"""The real helm and kubectl binaries that `make venv` installs (tools/install_kube_binaries.py), for tests.

helm 3.17.2 and kubectl 1.32.3 sit in .venv/bin, helm 4.3.1 in .venv/helm4/bin. Tests that drive helm are
parametrized over the majors `HELM_MAJOR` names (`3`, `4`, or `3,4`; both when unset) and marked `realhelm`,
so `HELM_MAJOR=4 make test-helm` runs them under helm 4 alone. A missing binary fails the test (it is a
broken bootstrap, not an environment to skip).
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]
VENV = REPO / ".venv"
KUBECTL = VENV / "bin" / "kubectl"
HELM_BINARIES = {3: VENV / "bin" / "helm", 4: VENV / "helm4" / "bin" / "helm"}
HELM_VERSIONS = {3: "v3.17.2", 4: "v4.3.1"}


def helm_majors(env: Mapping[str, str] | None = None) -> list[int]:
    """The helm majors this run tests: HELM_MAJOR as `3`, `4` or `3,4` (both when unset)."""
    raw = (os.environ if env is None else env).get("HELM_MAJOR", "").strip() or "3,4"
    majors = []
    for part in raw.split(","):
        if part.strip() not in ("3", "4"):
            raise ValueError(f"HELM_MAJOR: {raw!r} is not 3, 4 or 3,4")
        majors.append(int(part))
    return majors


def helm_params() -> list[Any]:
    """`pytest.mark.parametrize` values, one per helm major under test, each marked `realhelm`."""
    return [pytest.param(major, id=f"helm{major}", marks=pytest.mark.realhelm) for major in helm_majors()]


def binary(path: Path) -> Path:
    if not os.access(path, os.X_OK):
        raise AssertionError(f"{path} is missing: run `make venv` (tools/install_kube_binaries.py installs it)")
    return path


class Helm:
    """One real helm binary with its own cache/config/data homes, pointed at one kubeconfig."""

    def __init__(self, major: int, kubeconfig: str, home: Path) -> None:
        self.major = major
        self.path = binary(HELM_BINARIES[major])
        home.mkdir(parents=True, exist_ok=True)
        self.env = {
            **os.environ,
            "KUBECONFIG": kubeconfig,
            "HELM_CACHE_HOME": str(home / "cache"),
            "HELM_CONFIG_HOME": str(home / "config"),
            "HELM_DATA_HOME": str(home / "data"),
            "HOME": str(home),
        }

    def __call__(self, *args: str, check: bool = True, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run([str(self.path), *args], capture_output=True, text=True, env=self.env,
                              timeout=timeout, check=False)
        if check and proc.returncode != 0:
            raise AssertionError(f"helm {self.major}: helm {' '.join(args)} failed ({proc.returncode}):\n"
                                 f"{proc.stdout}\n{proc.stderr}")
        return proc
