# Copyright 2026 The modelplane.serving authors
# Apache License 2.0 (see LICENSE)
"""Chart mirrors: point a plan's Helm charts at an internal mirror instead of the upstream registries.

``servingstack_chart_mirror`` is either a URL or a mapping::

    url: https://charts.example.internal/modelplane   # classic repository (charts by name), or
    # url: oci://harbor.example.internal/modelplane    # OCI prefix (oci://.../<chart>)
    username: robot$ci                                # optional, with password
    password: ...
    ca_file: /etc/pki/mirror-ca.pem                   # optional: the mirror's CA bundle (PEM)
    insecure_skip_tls_verify: false
    plain_http: false                                 # OCI over HTTP
    charts:                                           # optional per-chart overrides (same keys)
      kube-prometheus-stack: {url: https://other.example.internal/prometheus}

A chart override inherits the top level's keys it does not set; ``charts.<name>: {url: upstream}`` keeps that
chart on its upstream source. Every problem names its path, the value and the rule, and a password is never
quoted. Nothing here reads a cluster or imports Ansible.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import urlsplit

from .errors import quote

VARIABLE = "servingstack_chart_mirror"
UPSTREAM = "upstream"
KEYS = ("url", "username", "password", "ca_file", "insecure_skip_tls_verify", "plain_http")
FLAGS = ("insecure_skip_tls_verify", "plain_http")


class MirrorError(ValueError):
    """The mirror setting is wrong; ``problems`` lists every ``<path>: <problem>``."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems


@dataclass(frozen=True)
class Source:
    """Where one chart comes from, and how helm reaches it."""

    url: str  # a classic repository URL, an oci:// prefix, or UPSTREAM
    username: str = ""
    password: str = ""
    ca_file: str = ""
    insecure_skip_tls_verify: bool = False
    plain_http: bool = False

    @property
    def is_oci(self) -> bool:
        return self.url.startswith("oci://")

    @property
    def login(self) -> str:
        """The name helm knows this source's credentials by ('' without credentials).

        A classic repository with credentials is added as a named repository (``helm repo add``), since
        kubernetes.core.helm passes no credentials with ``--repo``; an OCI registry is logged in by host.
        """
        if not self.username:
            return ""
        if self.is_oci:
            return urlsplit(self.url).netloc
        return "mp-mirror-" + hashlib.sha256(self.url.encode()).hexdigest()[:10]


@dataclass(frozen=True)
class Mirror:
    default: Source
    charts: dict[str, Source]

    def source(self, chart: str) -> Source:
        return self.charts.get(chart, self.default)


def _url_problem(path: str, url: Any) -> str | None:
    if not isinstance(url, str) or not url:
        return f"{path}: {quote(url)} is not a URL (https://…, http://… or oci://…)"
    if url == UPSTREAM:
        return None
    parts = urlsplit(url)
    if parts.scheme not in ("https", "http", "oci") or not parts.netloc:
        return (f"{path}: {quote(url)} is not a chart mirror URL: it must start https://, http:// or oci:// "
                "and name a host")
    if parts.query or parts.fragment:
        return f"{path}: {quote(url)} must not carry a query or fragment"
    if parts.username or parts.password:
        # A URL's user info would reach helm's command line and the log: credentials have keys of their own.
        return f"{path}: the URL must not carry credentials; give them as username and password"
    return None


def _source(value: Any, path: str, inherit: Source | None, problems: list[str]) -> Source | None:
    if isinstance(value, str):
        value = {"url": value}
    if not isinstance(value, dict):
        problems.append(f"{path}: {quote(value)} is neither a URL nor a mapping with url")
        return None
    allowed = KEYS + (("charts",) if inherit is None else ())
    for key in sorted(set(value) - set(allowed)):
        problems.append(f"{path}.{key}: unknown key (known: {', '.join(allowed)})")
    fields: dict[str, Any] = {}
    if inherit is None or "url" in value:
        problem = _url_problem(f"{path}.url", value.get("url"))
        if problem:
            problems.append(problem)
        fields["url"] = value.get("url") if isinstance(value.get("url"), str) else ""
    mistyped = False
    for key in ("username", "password", "ca_file"):
        if key in value and value[key] is not None:
            if not isinstance(value[key], str):
                mistyped = True
                problems.append(f"{path}.{key}: must be a string (the value is not shown)" if key == "password"
                                else f"{path}.{key}: {quote(value[key])} is not a string")
            else:
                fields[key] = value[key]
    for key in FLAGS:
        if key in value and value[key] is not None:
            if not isinstance(value[key], bool):
                problems.append(f"{path}.{key}: {quote(value[key])} is not a boolean")
            else:
                fields[key] = value[key]
    source = replace(inherit, **fields) if inherit is not None else Source(**fields)
    if "url" in fields and inherit is not None and ("username" not in fields and "password" not in fields):
        # Credentials belong to a host: an override with another URL does not send the top level's there.
        source = replace(source, username="", password="")
    if bool(source.username) != bool(source.password) and not mistyped:
        problems.append(f"{path}: username and password go together (one of them is empty)")
    if source.plain_http and not source.is_oci and source.url != UPSTREAM:
        problems.append(f"{path}.plain_http: true applies to oci:// mirrors only (a classic repository says http://)")
    return source


def parse(value: Any, chart_names: Iterable[str] = ()) -> Mirror | None:
    """The mirror setting, or None when it is empty. ``chart_names``: the charts an override may name."""
    if value in (None, "", {}):
        return None
    problems: list[str] = []
    default = _source(value, VARIABLE, None, problems)
    charts: dict[str, Source] = {}
    overrides = value.get("charts", {}) if isinstance(value, dict) else {}
    if not isinstance(overrides, dict):
        problems.append(f"{VARIABLE}.charts: {quote(overrides)} is not a mapping of chart name to settings")
        overrides = {}
    known = sorted(set(chart_names))
    for name, override in overrides.items():
        if known and name not in known:
            problems.append(f"{VARIABLE}.charts.{name}: not a chart of this collection (charts: {', '.join(known)})")
            continue
        if default is not None:
            found = _source(override, f"{VARIABLE}.charts.{name}", default, problems)
            if found is not None:
                charts[str(name)] = found
    if problems or default is None:
        raise MirrorError(problems)
    return Mirror(default, charts)


def problems(value: Any, chart_names: Iterable[str] = ()) -> list[str]:
    """Every ``<path>: <problem>`` of the mirror setting (none when it is fine or empty)."""
    try:
        parse(value, chart_names)
    except MirrorError as error:
        return error.problems
    return []


def chart_source(release: dict[str, Any], source: Source) -> dict[str, Any]:
    """``release`` (a plan entry's release) pointed at ``source``: chart_ref, chart_repo_url, chart_source."""
    if source.url == UPSTREAM:
        return {**release, "chart_source": {"login": "", "ca_file": "", "insecure_skip_tls_verify": False,
                                            "plain_http": False}}
    settings = {"login": source.login, "ca_file": source.ca_file,
                "insecure_skip_tls_verify": source.insecure_skip_tls_verify, "plain_http": source.plain_http}
    if source.is_oci:
        ref = f"{source.url.rstrip('/')}/{release['chart']}"
        return {**release, "chart_ref": ref, "chart_repo_url": None, "chart_source": settings}
    if source.login:
        # Added under this name by the login task; charts are then <name>/<chart> with no --repo.
        return {**release, "chart_ref": f"{source.login}/{release['chart']}", "chart_repo_url": None,
                "chart_source": settings}
    return {**release, "chart_ref": release["chart"], "chart_repo_url": source.url, "chart_source": settings}


def apply_releases(releases: list[dict[str, Any]], mirror: Mirror | None) -> list[dict[str, Any]]:
    """Plan releases with their charts taken from the mirror (none: unchanged). Applying it twice is applying once."""
    if mirror is None:
        return releases
    return [chart_source(release, mirror.source(release["chart"])) for release in releases]


def logins(mirror: Mirror | None) -> list[dict[str, Any]]:
    """One login per source with credentials: what the component role's login tasks take (holds passwords)."""
    if mirror is None:
        return []
    found: dict[str, dict[str, Any]] = {}
    for source in (mirror.default, *mirror.charts.values()):
        if source.login and source.login not in found:
            found[source.login] = {
                "name": source.login, "oci": source.is_oci, "url": source.url, "host": urlsplit(source.url).netloc,
                "username": source.username, "password": source.password, "ca_file": source.ca_file,
                "insecure_skip_tls_verify": source.insecure_skip_tls_verify,
            }
    return list(found.values())
