"""servingstack_chart_mirror: parsing, every problem named with its path, and the plan pointed at the mirror."""

from __future__ import annotations

import pytest
from ansible_collections.modelplane.serving.plugins.module_utils.servingstack import mirror
from ansible_collections.modelplane.serving.plugins.module_utils.servingstack.plan import build_plan
from ansible_collections.modelplane.serving.plugins.module_utils.servingstack.spec import validate
from servingstack_docs import load_example

CHARTS = ("cert-manager", "lws", "kube-prometheus-stack", "gateway-helm")


def plan() -> list[dict]:
    return build_plan(validate(load_example()).manifest["spec"])


def mirrored_plan(parsed: mirror.Mirror | None) -> list[dict]:
    """The plan with each component's releases taken from the mirror, as the component role does
    (through the servingstack_component lookup)."""
    return [{**entry, "releases": mirror.apply_releases(entry["releases"], parsed)} for entry in plan()]


def releases_of(entries: list[dict]) -> dict[str, dict]:
    return {release["chart"]: release for entry in entries for release in entry["releases"]}


def problems(value: object) -> list[str]:
    with pytest.raises(mirror.MirrorError) as caught:
        mirror.parse(value, CHARTS)
    return caught.value.problems


def test_no_mirror_leaves_the_plan_alone() -> None:
    before = plan()
    assert mirror.parse("", CHARTS) is None and mirror.parse(None) is None and mirror.parse({}) is None
    assert mirrored_plan(None) == before


def test_a_classic_repository_serves_every_chart_by_name() -> None:
    mirrored = releases_of(mirrored_plan(mirror.parse("https://charts.example.internal/mp", CHARTS)))
    for chart, release in mirrored.items():
        assert (release["chart_ref"], release["chart_repo_url"]) == (chart, "https://charts.example.internal/mp")
        assert release["chart_source"] == {"login": "", "ca_file": "", "insecure_skip_tls_verify": False,
                                           "plain_http": False}
    # Versions, namespaces and release names are the plan's.
    upstream = releases_of(plan())
    assert {c: (r["release"], r["version"], r["namespace"]) for c, r in mirrored.items()} \
        == {c: (r["release"], r["version"], r["namespace"]) for c, r in upstream.items()}


def test_an_oci_prefix_serves_charts_under_it() -> None:
    setting = {"url": "oci://harbor.example.internal/modelplane/", "plain_http": True}
    mirrored = releases_of(mirrored_plan(mirror.parse(setting, CHARTS)))
    assert mirrored["lws"]["chart_ref"] == "oci://harbor.example.internal/modelplane/lws"
    assert mirrored["cert-manager"]["chart_ref"] == "oci://harbor.example.internal/modelplane/cert-manager"
    assert all(r["chart_repo_url"] is None and r["chart_source"]["plain_http"] for r in mirrored.values())


def test_a_per_chart_override_inherits_tls_but_not_credentials() -> None:
    setting = {"url": "https://a.example/charts", "username": "robot", "password": "s3cret", "ca_file": "/ca.pem",
               "charts": {"lws": {"url": "oci://b.example/k8s"}, "cert-manager": {"url": "upstream"}}}
    parsed = mirror.parse(setting, CHARTS)
    mirrored = releases_of(mirrored_plan(parsed))
    assert mirrored["lws"]["chart_ref"] == "oci://b.example/k8s/lws"
    assert mirrored["lws"]["chart_source"] == {"login": "", "ca_file": "/ca.pem", "insecure_skip_tls_verify": False,
                                               "plain_http": False}
    # url: upstream keeps the chart where the components table says.
    assert (mirrored["cert-manager"]["chart_ref"], mirrored["cert-manager"]["chart_repo_url"]) \
        == ("cert-manager", "https://charts.jetstack.io")
    # With credentials a classic repository is added under a name: charts are <name>/<chart>, no --repo.
    login = mirrored["kube-prometheus-stack"]["chart_source"]["login"]
    assert login.startswith("mp-mirror-")
    assert mirrored["kube-prometheus-stack"]["chart_ref"] == f"{login}/kube-prometheus-stack"
    assert mirrored["kube-prometheus-stack"]["chart_repo_url"] is None
    assert mirror.logins(parsed) == [{"name": login, "oci": False, "url": "https://a.example/charts",
                                      "host": "a.example", "username": "robot", "password": "s3cret",
                                      "ca_file": "/ca.pem", "insecure_skip_tls_verify": False}]


def test_an_oci_mirror_logs_in_by_host_and_plan_carries_no_password() -> None:
    parsed = mirror.parse({"url": "oci://harbor.example:8443/mp", "username": "u", "password": "p4ss"}, CHARTS)
    entries = mirrored_plan(parsed)
    assert "p4ss" not in repr(entries)
    assert {r["chart_source"]["login"] for r in releases_of(entries).values()} == {"harbor.example:8443"}
    assert [(login["host"], login["oci"]) for login in mirror.logins(parsed)] == [("harbor.example:8443", True)]


def test_without_credentials_there_is_no_login_so_helm_keeps_the_users_configuration() -> None:
    # roles/servingstack/tasks/connect.yml moves helm's configuration into the private directory only with logins.
    assert mirror.logins(mirror.parse("oci://r.example/mp", CHARTS)) == []


@pytest.mark.parametrize(("value", "expected"), [
    ("ftp://x.example/charts", 'servingstack_chart_mirror.url: "ftp://x.example/charts" is not a chart mirror URL'),
    ({"url": "https://u:pw@x.example/c"}, "servingstack_chart_mirror.url: the URL must not carry credentials"),
    ({"url": "https://x.example/c?x=1"}, "must not carry a query or fragment"),
    ({"url": "https://x.example/c", "username": "u"}, "servingstack_chart_mirror: username and password go together"),
    ({"url": "https://x.example/c", "plain_http": True}, "servingstack_chart_mirror.plain_http: true applies to oci://"),
    ({"url": "https://x.example/c", "insecure_skip_tls_verify": "yes"},
     'servingstack_chart_mirror.insecure_skip_tls_verify: "yes" is not a boolean'),
    ({"url": "https://x.example/c", "proxy": "p"}, "servingstack_chart_mirror.proxy: unknown key"),
    ({"url": "https://x.example/c", "charts": {"nginx": "https://y"}},
     "servingstack_chart_mirror.charts.nginx: not a chart of this collection"),
    ({"url": "https://x.example/c", "charts": {"lws": {"url": 7}}},
     "servingstack_chart_mirror.charts.lws.url: 7 is not a URL"),
    ({"url": "https://x.example/c", "charts": ["lws"]},
     "servingstack_chart_mirror.charts: a list of 1 item is not a mapping"),
    (42, "servingstack_chart_mirror: 42 is neither a URL nor a mapping with url"),
    ({"username": "u", "password": "p"}, "servingstack_chart_mirror.url: null is not a URL"),
])
def test_every_problem_names_its_path_value_and_rule(value: object, expected: str) -> None:
    found = problems(value)
    assert any(expected in problem for problem in found), found


def test_a_password_is_never_quoted() -> None:
    found = problems({"url": "https://x.example/c", "username": "u", "password": 12345678})
    assert found == ["servingstack_chart_mirror.password: must be a string (the value is not shown)"]
    assert "12345678" not in " ".join(found)


def test_problems_lists_every_problem_and_none_for_a_good_setting() -> None:
    assert mirror.problems("https://x.example/c", CHARTS) == [] and mirror.problems("", CHARTS) == []
    assert len(mirror.problems({"url": "ftp://x", "proxy": 1}, CHARTS)) == 2
