"""Before `make demo` starts anything: can this machine reach what the demo's converge downloads?

Without a local chart mirror the demo installs the upstream charts (charts.jetstack.io, registry.k8s.io, docker.io,
ghcr.io, prometheus-community.github.io) and fetches the Gateway API Inference Extension CRDs from github.com; with
CHART_MIRROR the charts come from that mirror. Every host is tried at once (name lookup and a TCP connection, a few
seconds in all); when one does not answer, one line on stderr says which and what to do, and the exit status is 2.

    python tests/demo/reachability.py --spec examples/servingstack.yaml [--mirror URL]
"""

from __future__ import annotations

import argparse
import re
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from urllib.parse import urlsplit

REPO = Path(__file__).resolve().parents[2]
# The default of envoy_gateway_inference_crds_url: where the converge reads the GAIE CRDs from.
CRD_DEFAULTS = REPO / "roles" / "envoy_gateway" / "defaults" / "main.yml"
TIMEOUT = 3.0

# (host, port) -> why it cannot be reached, or None when it answered.
Probe = Callable[[str, int, float], str | None]


def endpoint(url: str) -> tuple[str, int]:
    """(host, port) helm or the url lookup connects to for ``url`` (https://, http:// or oci://)."""
    parts = urlsplit(url)
    default = 80 if parts.scheme == "http" else 443
    return parts.hostname or "", parts.port or default


def chart_urls(spec_file: Path) -> list[str]:
    """The upstream chart sources of the spec's plan (oci:// references and repository URLs), in plan order."""
    import yaml

    collections = REPO / ".collections"
    if str(collections) not in sys.path:
        sys.path.insert(0, str(collections))
    from ansible_collections.modelplane.serving.plugins.module_utils.servingstack import plan, spec

    validation = spec.validate(yaml.safe_load(spec_file.read_text()))
    if validation.manifest is None:
        raise SystemExit(f"make demo: {spec_file} is not a valid ServingStack: "
                         + "; ".join(str(problem) for problem in validation.errors))
    return [release["chart_repo_url"] or release["chart_ref"]
            for component in plan.build_plan(validation.manifest["spec"]) for release in component["releases"]]


def crd_urls(defaults: Path = CRD_DEFAULTS) -> list[str]:
    """The https:// URLs in the envoy_gateway role's defaults (the GAIE release manifest)."""
    return re.findall(r"https://[^\s'\"]+", defaults.read_text())


def needed(charts: Iterable[str], crds: Iterable[str], mirror: str = "") -> list[tuple[str, int]]:
    """Every (host, port) the converge connects to, each once, in the order first needed."""
    urls = [mirror] if mirror else list(charts)
    found: list[tuple[str, int]] = []
    for url in [*urls, *crds]:
        place = endpoint(url)
        if place[0] and place not in found:
            found.append(place)
    return found


def probe(host: str, port: int, timeout: float) -> str | None:
    """Why ``host:port`` cannot be reached (its name does not resolve, the connection fails), or None."""
    try:
        addresses = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError:
        return "name not resolved"
    last = "no address"
    for family, kind, proto, _name, address in addresses:
        try:
            with socket.socket(family, kind, proto) as connection:
                connection.settimeout(timeout)
                connection.connect(address)
            return None
        except OSError as error:
            last = "timed out" if isinstance(error, TimeoutError) else (error.strerror or type(error).__name__)
    return last


def unreachable(places: list[tuple[str, int]], check: Probe = probe,
                timeout: float = TIMEOUT) -> dict[str, str]:
    """``host`` -> why, for each place that does not answer: all tried at once, none waited for beyond
    ``timeout`` and a second (a name lookup that hangs counts as no answer)."""
    found: dict[str, str] = {}
    lock = threading.Lock()

    def run(host: str, port: int) -> None:
        why = check(host, port, timeout)
        if why:
            with lock:
                found[host] = why

    threads = [threading.Thread(target=run, args=place, daemon=True) for place in places]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + timeout + 1.0
    for (host, _port), thread in zip(places, threads, strict=True):
        thread.join(max(0.0, deadline - time.monotonic()))
        if thread.is_alive():
            with lock:
                found.setdefault(host, f"no answer within {timeout + 1.0:.0f} s")
    return {host: found[host] for host, _port in places if host in found}


def advice(down: dict[str, str], mirror: str = "") -> str:
    """The one line `make demo` prints when ``down`` is not empty."""
    reasons = sorted(set(down.values()))
    cause = reasons[0] if len(reasons) == 1 else "; ".join(f"{host}: {why}" for host, why in down.items())
    hosts = ", ".join(down)
    mirror_host = endpoint(mirror)[0] if mirror else ""
    if mirror_host and mirror_host in down:
        return (f"make demo: the chart mirror {mirror} cannot be reached ({down[mirror_host]}); check CHART_MIRROR, "
                "or run `make plan` to see the install plan without a cluster or network")
    what = "the GAIE CRDs' host" if mirror else "the upstream chart registries"
    return (f"make demo: {what} cannot be reached ({hosts}: {cause}); on a machine without the internet run "
            "`make plan` (no cluster, no network), or `make demo CHART_MIRROR=<URL of a mirror of the charts>` "
            "where github.com (the GAIE CRDs) is reachable")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spec", type=Path, required=True)
    parser.add_argument("--mirror", default="")
    parser.add_argument("--timeout", type=float, default=TIMEOUT)
    options = parser.parse_args(argv)
    charts = [] if options.mirror else chart_urls(options.spec)
    down = unreachable(needed(charts, crd_urls(), options.mirror), timeout=options.timeout)
    if down:
        print(advice(down, options.mirror), file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
