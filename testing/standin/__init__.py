"""A TEST DOUBLE of the Kubernetes API server, for this repository's tests only.

The collection never uses it. See testing/standin/README.md for what it implements and its gaps.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

import yaml

from .auth import BearerCheck
from .server import StandInServer
from .store import APIError, Cluster

__all__ = ["APIError", "Cluster", "StandIn", "kubeconfig"]


def kubeconfig(url: str, name: str = "standin") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": name, "cluster": {"server": url}}],
        "users": [{"name": name, "user": {"token": "standin-test-double"}}],
        "contexts": [{"name": name, "context": {"cluster": name, "user": name, "namespace": "default"}}],
        "current-context": name,
        "preferences": {},
    }


class StandIn:
    """One stand-in API server on 127.0.0.1 (random port), served from a background thread."""

    def __init__(self, *, simulate_controllers: bool = False, port: int = 0, ready_after: float = 0.0,
                 bearer_token: BearerCheck = None) -> None:
        """`ready_after` (seconds, simulated controllers only): how long after a spec change a workload turns
        ready and a Job completes; 0 makes them ready at once. `bearer_token`: the token every API request must
        carry (or a callable validating it), else 401 Unauthorized (see auth.py); None accepts any request."""
        if ready_after < 0:
            raise ValueError(f"ready_after must be >= 0 seconds, not {ready_after}")
        if ready_after and not simulate_controllers:
            # Without simulated controllers nothing ever turns ready: a delay would silently mean nothing.
            raise ValueError("ready_after needs simulate_controllers=True")
        self.cluster = Cluster()
        self.server = StandInServer(("127.0.0.1", port), self.cluster)
        self.server.bearer_check = bearer_token
        self._thread: threading.Thread | None = None
        from .controllers import Controllers

        self.controllers = Controllers(self.cluster, automatic=simulate_controllers, ready_after=ready_after)

    @property
    def url(self) -> str:
        return self.server.url

    def start(self) -> StandIn:
        self._thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.1},
                                        name="standin", daemon=True)
        self._thread.start()
        return self

    def write_kubeconfig(self, path: str | os.PathLike[str]) -> Path:
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(target.name + ".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as handle:
            yaml.safe_dump(kubeconfig(self.url), handle, sort_keys=False)
        os.replace(tmp, target)
        return target

    def stats(self) -> dict[str, Any]:
        return self.server.stats.snapshot()

    def reset_stats(self) -> None:
        self.server.stats.reset()

    def stop(self) -> None:
        self.cluster.closed = True
        self.server.stop_event.set()
        with self.cluster.cond:
            self.cluster.cond.notify_all()
        self.server.shutdown()
        self.server.server_close()
        self.controllers.stop()

    def __enter__(self) -> StandIn:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
