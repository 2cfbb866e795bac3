"""Helm release records stored as real helm 3 keeps them (the Secret storage driver).

Secret ``sh.helm.release.v1.<name>.v<revision>`` in the release namespace, type ``helm.sh/release.v1``,
labels ``name``, ``owner: helm``, ``status``, ``version`` (and ``modifiedAt``);
``data.release`` = base64(gzip(JSON release)), then base64 again by the Secret API itself.
"""

from __future__ import annotations

import base64
import gzip
import json
import time
from datetime import UTC, datetime
from typing import Any

from helmdouble.kube import Kube, KubeError

SECRET_TYPE = "helm.sh/release.v1"


def now() -> str:
    """RFC 3339 with nanoseconds, as Go's time.Time marshals to JSON."""
    stamp = datetime.now(UTC)
    return stamp.strftime("%Y-%m-%dT%H:%M:%S.") + f"{stamp.microsecond:06d}000Z"


def _parse(stamp: str) -> datetime:
    text = stamp.rstrip("Z")
    if "." in text:
        head, frac = text.split(".", 1)
        text = f"{head}.{frac[:6]}"
        return datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%f").replace(tzinfo=UTC)
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%S").replace(tzinfo=UTC)


def go_time(stamp: str) -> str:
    """``2026-12-02 11:53:06.123456 +0000 UTC`` (helm list's ``updated``)."""
    moment = _parse(stamp)
    frac = f"{moment.microsecond:06d}".rstrip("0")
    return moment.strftime("%Y-%m-%d %H:%M:%S") + (f".{frac}" if frac else "") + " +0000 UTC"


def ansi_time(stamp: str) -> str:
    """``Wed Dec  2 11:53:06 2026`` (LAST DEPLOYED)."""
    moment = _parse(stamp)
    return moment.strftime("%a %b ") + f"{moment.day:2d}" + moment.strftime(" %H:%M:%S %Y")


def secret_name(name: str, revision: int) -> str:
    return f"sh.helm.release.v1.{name}.v{revision}"


def encode(release: dict[str, Any]) -> str:
    """The Secret's ``data.release``: base64(base64(gzip(json)))."""
    packed = base64.b64encode(gzip.compress(json.dumps(release, separators=(",", ":")).encode(), mtime=0))
    return base64.b64encode(packed).decode()


def decode(data: str) -> dict[str, Any]:
    raw = base64.b64decode(base64.b64decode(data))
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    return json.loads(raw)


def to_secret(release: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": SECRET_TYPE,
        "metadata": {
            "name": secret_name(release["name"], release["version"]),
            "namespace": release["namespace"],
            "labels": {
                "name": release["name"],
                "owner": "helm",
                "status": release["info"]["status"],
                "version": str(release["version"]),
                "modifiedAt": str(int(time.time())),
            },
        },
        "data": {"release": encode(release)},
    }


class Store:
    """Release history of one namespace (or all namespaces for listing)."""

    def __init__(self, kube: Kube) -> None:
        self.kube = kube

    def history(self, name: str, namespace: str) -> list[dict[str, Any]]:
        secrets = self.kube.list_secrets(namespace, {"owner": "helm", "name": name})
        releases = [decode(s["data"]["release"]) for s in secrets if s.get("data", {}).get("release")]
        return sorted(releases, key=lambda r: r["version"])

    def all(self, namespace: str | None) -> list[dict[str, Any]]:
        secrets = self.kube.list_secrets(namespace, {"owner": "helm"})
        releases = [decode(s["data"]["release"]) for s in secrets if s.get("data", {}).get("release")]
        return sorted(releases, key=lambda r: (r["namespace"], r["name"], r["version"]))

    def create(self, release: dict[str, Any]) -> None:
        self.kube.create(to_secret(release), release["namespace"])

    def update(self, release: dict[str, Any]) -> None:
        secret = to_secret(release)
        current = self.kube.get(secret, release["namespace"])
        if current is None:
            self.kube.create(secret, release["namespace"])
        else:
            self.kube.replace(secret, release["namespace"], current["metadata"].get("resourceVersion"))

    def delete(self, release: dict[str, Any]) -> None:
        try:
            self.kube.delete(to_secret(release), release["namespace"])
        except KubeError as exc:
            if exc.status != 404:
                raise


def list_element(release: dict[str, Any]) -> dict[str, Any]:
    """One row of ``helm list --output yaml``."""
    meta = release["chart"]["metadata"]
    return {
        "app_version": meta.get("appVersion") or "",
        "chart": f"{meta['name']}-{meta['version']}",
        "name": release["name"],
        "namespace": release["namespace"],
        "revision": str(release["version"]),
        "status": release["info"]["status"],
        "updated": go_time(release["info"]["last_deployed"]),
    }


def history_element(release: dict[str, Any]) -> dict[str, Any]:
    meta = release["chart"]["metadata"]
    return {
        "app_version": meta.get("appVersion") or "",
        "chart": f"{meta['name']}-{meta['version']}",
        "description": release["info"].get("description", ""),
        "revision": release["version"],
        "status": release["info"]["status"],
        "updated": release["info"]["last_deployed"],
    }


def status_text(release: dict[str, Any], show_notes: bool = True) -> str:
    lines = [
        f"NAME: {release['name']}",
        f"LAST DEPLOYED: {ansi_time(release['info']['last_deployed'])}",
        f"NAMESPACE: {release['namespace']}",
        f"STATUS: {release['info']['status']}",
        f"REVISION: {release['version']}",
        "TEST SUITE: None",
    ]
    notes = release["info"].get("notes")
    if show_notes and notes:
        lines += ["NOTES:", notes.rstrip("\n")]
    return "\n".join(lines) + "\n"
