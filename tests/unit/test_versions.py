"""Version parsing, release order and the Envoy Gateway and Grove rules."""

from __future__ import annotations

import itertools

import pytest
from ansible_collections.modelplane.serving.plugins.module_utils.servingstack import versions


@pytest.mark.parametrize("text", ["v1.21.1", "1.21.1", "0.18.3", "72.6.2", "v0.1.0-alpha.12-rc2", "v1.0.0-rc.1",
                                  "1.0.0+build.1", "v1.0.0-0.3.7", "v1.0.0-x.7.z.92", "v0.0.0"])
def test_semantic_versions_parse(text):
    assert versions.parse(text) is not None


@pytest.mark.parametrize("text", ["", "v", "1", "1.2", "v1.2", "1.2.3.4", "V1.2.3", "vv1.2.3", "01.2.3", "1.02.3",
                                  "1.2.03", "1.2.3-", "1.2.3-01", "1.2.3+", "latest", "main", " 1.2.3", "1.2.3 ",
                                  "1.2.3-a..b", None, 1, 1.2])
def test_non_versions_do_not_parse(text):
    assert versions.parse(text) is None


def test_parse_fields():
    parsed = versions.parse("v0.1.0-alpha.12-rc2+meta")
    assert (parsed.major, parsed.minor, parsed.patch) == (0, 1, 0)
    assert parsed.prerelease == ("alpha", "12-rc2")
    assert parsed.build == "meta"


RELEASE_ORDER = [
    "v0.0.9",
    "v0.1.0-alpha.1",
    "v0.1.0-alpha.11",
    "v0.1.0-alpha.12-rc1",
    "v0.1.0-alpha.12-rc2",
    "v0.1.0-alpha.12-rc10",
    "v0.1.0-alpha.12",
    "v0.1.0-alpha.13",
    "v0.1.0-beta.1",
    "v0.1.0-rc.1",
    "v0.1.0",
    "v0.1.1",
    "v0.2.0",
    "v1.0.0",
]


@pytest.mark.parametrize(("older", "newer"), list(itertools.combinations(RELEASE_ORDER, 2)))
def test_release_order(older, newer):
    assert versions.release_key(older) < versions.release_key(newer)


def test_release_order_differs_from_semver_for_candidates():
    # Semver ranks the numeric identifier 12 before the alphanumeric 12-rc1; release order does not.
    assert versions.release_key("v0.1.0-alpha.12-rc1") < versions.release_key("v0.1.0-alpha.12")


def test_v_prefix_and_build_do_not_change_order():
    assert versions.release_key("v1.2.3") == versions.release_key("1.2.3") == versions.release_key("1.2.3+x")


def test_release_key_refuses_non_versions():
    with pytest.raises(ValueError, match="is not a semantic version"):
        versions.release_key("latest")


@pytest.mark.parametrize("text", ["v1.8.1", "v1.8.4", "1.8.4", "v1.8.10", "v1.8.2-rc.1", "v1.8.4+build"])
def test_no_caution_from_v1_8_1(text):
    assert versions.caution_envoy_gateway(text) is None


@pytest.mark.parametrize("text", ["v1.8.0", "1.8.0", "v1.8.0+build", "v1.8.1-rc.1"])
def test_envoy_gateway_below_v1_8_1_is_in_range_with_a_caution(text):
    # The reference allows v1.8.x; the AI Gateway README says it needs v1.8.1 or later.
    reason = versions.caution_envoy_gateway(text)
    assert reason.startswith("is accepted (the reference allows any v1.8.x) but unwise: it is older than v1.8.1")
    assert "its README says it needs v1.8.1 or later" in reason


@pytest.mark.parametrize("text", ["v1.8.0-rc.1", "v1.7.9", "v1.9.0", "v1.9.0-rc.1", "v2.0.0", "v0.8.4", "latest"])
def test_no_caution_outside_the_range(text):
    assert versions.caution_envoy_gateway(text) is None


@pytest.mark.parametrize("text", ["v0.1.0-alpha.12-rc2", "v0.1.0-alpha.12-rc3", "v0.1.0-alpha.12", "v0.1.0-alpha.13",
                                  "v0.1.0", "0.2.0", "v1.0.0"])
def test_grove_new_enough(text):
    assert versions.check_grove(text) is None


@pytest.mark.parametrize("text", ["v0.1.0-alpha.12-rc1", "v0.1.0-alpha.11", "v0.1.0-alpha.1", "v0.0.9",
                                  "v0.1.0-alpha.12-beta"])
def test_grove_too_old(text):
    reason = versions.check_grove(text)
    assert reason.startswith("is older than v0.1.0-alpha.12-rc2 in release order")
    assert "grove#753" in reason
    assert "MODELPLANE_LEADER_ADDRESS" in reason
