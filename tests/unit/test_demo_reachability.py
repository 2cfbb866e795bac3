"""`make demo` on a machine that cannot reach the charts: one line saying what to do, within seconds
(tests/demo/reachability.py, run first by tests/demo/run)."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import time
from pathlib import Path

from servingstack_docs import DYNAMO_EXAMPLE, REPO

EXAMPLE = REPO / "examples" / "servingstack.yaml"


def load():
    spec = importlib.util.spec_from_file_location("demo_reachability", REPO / "tests" / "demo" / "reachability.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


reach = load()


def test_the_hosts_are_the_plans_chart_sources_and_the_crd_release_host():
    places = reach.needed(reach.chart_urls(EXAMPLE), reach.crd_urls())
    assert places == [("charts.jetstack.io", 443), ("registry.k8s.io", 443), ("docker.io", 443),
                      ("prometheus-community.github.io", 443), ("github.com", 443)]
    assert ("ghcr.io", 443) in reach.needed(reach.chart_urls(Path(DYNAMO_EXAMPLE)), [])
    assert reach.needed(["oci://x.example/charts"], ["https://github.com/a"], "http://mirror.local:8080/charts") == [
        ("mirror.local", 8080), ("github.com", 443)]


def test_every_host_is_tried_at_once_and_a_hanging_one_counts_as_no_answer():
    def check(host: str, port: int, timeout: float) -> str | None:
        if host == "hangs.example":
            time.sleep(timeout + 5)
        return None if host == "up.example" else "name not resolved"

    started = time.monotonic()
    down = reach.unreachable([("up.example", 443), ("down.example", 443), ("hangs.example", 443)], check, timeout=0.5)
    assert time.monotonic() - started < 3
    assert down == {"down.example": "name not resolved", "hangs.example": "no answer within 2 s"}


def test_the_advice_is_one_line_naming_the_hosts_and_what_to_do():
    line = reach.advice({"charts.jetstack.io": "name not resolved", "github.com": "name not resolved"})
    assert "\n" not in line and line.startswith("make demo: ")
    assert "(charts.jetstack.io, github.com: name not resolved)" in line
    assert "`make plan`" in line and "CHART_MIRROR=" in line
    mirror = reach.advice({"m.example": "Connection refused"}, "https://m.example/charts")
    assert mirror == ("make demo: the chart mirror https://m.example/charts cannot be reached (Connection refused); "
                      "check CHART_MIRROR, or run `make plan` to see the install plan without a cluster or network")


def test_the_probe_tells_a_refused_port_and_an_unknown_name():
    assert reach.probe("charts.example.invalid", 443, 1.0) == "name not resolved"
    assert reach.probe("127.0.0.1", 1, 1.0) == "Connection refused"


def test_make_demo_with_an_unreachable_mirror_says_one_line_within_seconds_and_starts_nothing():
    started = time.monotonic()
    proc = subprocess.run([str(REPO / "tests" / "demo" / "run")], capture_output=True, text=True, timeout=60,
                          cwd=REPO, env={**os.environ, "CHART_MIRROR": "https://charts.example.invalid"},
                          check=False)
    assert time.monotonic() - started < 10
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert proc.stderr.splitlines() == [
        "make demo: the chart mirror https://charts.example.invalid cannot be reached (name not resolved); check "
        "CHART_MIRROR, or run `make plan` to see the install plan without a cluster or network"]
