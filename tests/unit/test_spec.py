"""The spec core: every field's bounds, enum and default, and every rule, through ``spec.validate``."""

from __future__ import annotations

import copy
import os
import subprocess
import sys

import pytest
import yaml
from ansible_collections.modelplane.serving.plugins.module_utils.servingstack import outcome, schema, spec
from ansible_collections.modelplane.serving.plugins.module_utils.servingstack.errors import Problem, quote
from corpus import GOOGLE, HTTP, IGNORED, INVALID, KUBECONFIG, LEGACY_XR, MODULE_ONLY, VALID
from servingstack_docs import CERTIFICATE, DELETE, PRIVATE_KEY, REPO, edit, load_example


def messages(validation: spec.Validation) -> list[str]:
    return [str(problem) for problem in validation.errors]


@pytest.mark.parametrize("case", VALID, ids=lambda case: case.id)
def test_valid_documents_pass(case):
    validation = spec.validate(case.document())
    assert validation.errors == []
    assert isinstance(validation.manifest, dict)
    warned = [item["path"] for item in validation.ignored] + [problem.path for problem in validation.warnings]
    assert warned == list(case.warnings)


@pytest.mark.parametrize("case", INVALID + MODULE_ONLY, ids=lambda case: case.id)
def test_invalid_documents_name_path_value_and_rule(case):
    validation = spec.validate(case.document())
    assert validation.manifest is None
    matching = [problem for problem in validation.errors if problem.path == case.path]
    assert matching, f"no problem at {case.path}: {messages(validation)}"
    assert any(case.fragment in problem.message for problem in matching), messages(validation)
    for problem in validation.errors:
        assert str(problem) == f"{problem.path}: {problem.message}"
        assert "\n" not in problem.message


def test_reference_examples_from_the_brief():
    document = edit(load_example(), "spec.gateway.listeners[1]", {"name": "big", "port": 70000, "protocol": "HTTP"})
    document = edit(document, "spec.stack", "Dynamic")
    document = edit(document, "spec.gatway", {})
    found = messages(spec.validate(document))
    assert "spec.gateway.listeners[1].port: 70000 is above the maximum 65535" in found
    assert 'spec.stack: "Dynamic" is not one of Standard, Dynamo' in found
    assert any(message.startswith("spec.gatway: unknown field") for message in found)


def test_all_problems_are_reported_at_once_in_path_order():
    document = load_example()
    document["spec"]["stack"] = "Dynamic"
    document["spec"]["secrets"][0]["type"] = "kube"
    document["spec"]["gateway"]["listeners"] = [{"name": f"l{i}", "port": 70000 + i, "protocol": "HTTP"}
                                                for i in range(3)] * 1
    document["spec"]["versions"]["certManager"] = ""
    document["metadata"]["name"] = "Bad"
    validation = spec.validate(document)
    paths = [problem.path for problem in validation.errors]
    assert paths == sorted(paths, key=lambda path: path.replace("[", " ").replace("]", ""))
    assert {"metadata.name", "spec.stack", "spec.secrets[0].type", "spec.versions.certManager",
            "spec.gateway.listeners[0].port", "spec.gateway.listeners[1].port",
            "spec.gateway.listeners[2].port"} <= set(paths)


def test_list_indexes_sort_numerically():
    document = edit(load_example(), "spec.gateway.listeners",
                    [{"name": f"l{i}", "port": 0, "protocol": "HTTP"} for i in range(8)] + [])
    document["spec"]["gateway"]["clientCAs"] = [{"name": "a"}] * 12
    paths = [problem.path for problem in spec.validate(document).errors if "clientCAs[" in problem.path]
    assert paths.index("spec.gateway.clientCAs[2].certificate") < paths.index("spec.gateway.clientCAs[10].certificate")


DEFAULTS = {
    "stack": "Standard",
    "nvidiaDriverRoot": "/",
    "versions": {
        "certManager": "v1.21.1",
        "envoyGateway": "v1.8.4",
        "nodeFeatureDiscovery": "0.18.3",
        "nvidiaDraDriver": "0.4.0",
        "prometheus": "72.6.2",
        "trustManager": "v0.24.0",
    },
    "standard": {"leaderWorkerSet": "v0.8.0"},
    "dynamo": {"grove": "v0.1.0-alpha.12-rc2", "kaiScheduler": "v0.16.8", "modelExpress": "0.4.1"},
    "gateway": {"className": "envoy", "listeners": [{"name": "http", "port": 80, "protocol": "HTTP"}]},
}


@pytest.mark.parametrize("key", sorted(DEFAULTS))
def test_every_default_of_the_reference(key):
    minimal = {"apiVersion": "infrastructure.modelplane.ai/v1alpha1", "kind": "ServingStack",
               "metadata": {"name": "s"}, "spec": {"secrets": [KUBECONFIG]}}
    validation = spec.validate(minimal)
    assert validation.errors == []
    assert validation.manifest["spec"][key] == DEFAULTS[key]


def test_defaults_fill_a_partial_group_without_touching_set_values():
    document = edit(load_example(), "spec.versions", {"prometheus": "70.0.0"})
    document = edit(document, "spec.gateway", {"hostname": "gw.example.com"})
    result = spec.validate(document).manifest["spec"]
    assert result["versions"] == dict(DEFAULTS["versions"], prometheus="70.0.0")
    assert result["gateway"] == dict(DEFAULTS["gateway"], hostname="gw.example.com")
    assert "clientCAs" not in result["gateway"]


def test_namespace_defaults_and_secret_namespaces():
    document = edit(load_example(), "metadata.namespace", DELETE)
    document = edit(document, "spec.secrets[1].namespace", "crossplane-system")
    manifest = spec.validate(document).manifest
    assert manifest["metadata"]["namespace"] == "default"
    assert manifest["spec"]["secrets"][0]["namespace"] == "default"
    assert manifest["spec"]["secrets"][1]["namespace"] == "crossplane-system"
    assert spec.validate(load_example()).manifest["spec"]["secrets"][0]["namespace"] == "platform"


def test_validate_does_not_modify_its_input():
    document = load_example()
    before = copy.deepcopy(document)
    spec.validate(document)
    assert document == before


def test_null_means_absent_and_takes_the_default():
    document = edit(load_example(), "spec.versions.certManager", None)
    assert spec.validate(document).manifest["spec"]["versions"]["certManager"] == "v1.21.1"


@pytest.mark.parametrize("stack,pins,expected", [
    ("Standard", {"dynamo": {"grove": "v0.1.0-alpha.1"}}, [("spec.dynamo.grove", "v0.1.0-alpha.1")]),
    ("Standard", {"dynamo": {"kaiScheduler": "x", "modelExpress": "0.4.1"}},
     [("spec.dynamo.kaiScheduler", "x"), ("spec.dynamo.modelExpress", "0.4.1")]),
    ("Dynamo", {"standard": {"leaderWorkerSet": "v0.1.0"}}, [("spec.standard.leaderWorkerSet", "v0.1.0")]),
    ("Dynamo", {"dynamo": {"grove": "v0.1.0"}}, []),
    ("Standard", {"standard": {"leaderWorkerSet": "v0.9.0"}}, []),
])
def test_pins_for_the_other_stack_are_ignored_with_a_warning(stack, pins, expected):
    document = edit(load_example(), "spec.stack", stack)
    for group, values in pins.items():
        document = edit(document, f"spec.{group}", values)
    validation = spec.validate(document)
    assert validation.errors == []
    assert [(item["path"], item["value"]) for item in validation.ignored] == expected
    for item in validation.ignored:
        other = "Dynamo" if stack == "Standard" else "Standard"
        assert item["reason"] == f"stack is {stack}: {other}-stack pins are ignored"


def test_defaults_are_never_reported_as_ignored():
    assert spec.validate(load_example()).ignored == []
    assert spec.validate(edit(load_example(), "spec.stack", "Dynamo")).ignored == []


def test_ignored_pins_are_still_length_checked_but_not_version_ruled():
    document = edit(load_example(), "spec.dynamo.grove", "v0.1.0-alpha.1")
    assert spec.validate(document).errors == []
    document = edit(load_example(), "spec.dynamo.grove", "")
    assert [problem.path for problem in spec.validate(document).errors] == ["spec.dynamo.grove"]


def test_private_key_and_certificate_text_is_never_echoed():
    marker_key = PRIVATE_KEY.splitlines()[1]
    marker_cert = CERTIFICATE.splitlines()[1]
    for certificate in (PRIVATE_KEY, CERTIFICATE + PRIVATE_KEY, CERTIFICATE[:-30], "A" * 20000,
                        CERTIFICATE.replace(marker_cert, marker_cert[::-1])):
        document = edit(load_example(), "spec.gateway.clientCAs", [{"name": "gw", "certificate": certificate}])
        validation = spec.validate(document)
        assert validation.errors, certificate[:40]
        for problem in validation.errors:
            assert marker_key not in problem.message
            assert marker_cert not in problem.message
            assert marker_cert[::-1] not in problem.message
            assert "AAAAAAAA" not in problem.message


def test_a_certificate_bundle_parses():
    document = edit(load_example(), "spec.gateway.clientCAs", [{"name": "gw", "certificate": CERTIFICATE * 2}])
    assert spec.validate(document).errors == []


def test_kubeconfig_rule_is_not_repeated_when_a_type_is_wrong():
    document = edit(load_example(), "spec.secrets", [dict(KUBECONFIG, type="kubeconfig"), GOOGLE])
    paths = [problem.path for problem in spec.validate(document).errors]
    assert paths == ["spec.secrets[0].type"]


@pytest.mark.parametrize("document", [None, [], 3, "ServingStack", 1.5, True, {"spec": None}, {1: 2}, {None: {}},
                                      {"spec": {"secrets": [None]}}, {"metadata": []}, {"spec": {"gateway": 5}}])
def test_never_raises_on_odd_input(document):
    validation = spec.validate(document)
    assert validation.manifest is None
    assert validation.errors
    assert all(isinstance(problem, Problem) and problem.path and problem.message for problem in validation.errors)


def test_odd_root_messages():
    assert messages(spec.validate(None)) == [
        "(document): is null; expected a ServingStack manifest (a mapping with apiVersion, kind, metadata and spec)"]
    assert messages(spec.validate([1]))[0].startswith("(document): expected a ServingStack manifest")


def test_recursive_yaml_structure_is_refused_cleanly():
    loop: list = []
    loop.append(loop)
    document = edit(load_example(), "spec.secrets", [])
    document["spec"]["secrets"] = loop
    validation = spec.validate(document)
    assert validation.errors


def test_defaulted_spec_without_arguments_is_all_defaults():
    assert spec.defaulted_spec() == DEFAULTS


def test_defaulted_spec_of_a_spec():
    result = spec.defaulted_spec({"stack": "Dynamo", "secrets": [KUBECONFIG]})
    assert result["stack"] == "Dynamo"
    assert result["secrets"] == [KUBECONFIG]
    assert result["dynamo"] == DEFAULTS["dynamo"]


def test_defaulted_spec_refuses_an_invalid_spec():
    with pytest.raises(ValueError, match=r"spec.stack: \"x\" is not one of Standard, Dynamo"):
        spec.defaulted_spec({"stack": "x", "secrets": [KUBECONFIG]})


@pytest.mark.parametrize("path", ["apiVersion", "metadata.name", "spec.stack", "spec.secrets[0].name",
                                  "spec.gateway.hostname", "spec.nvidiaDriverRoot"])
def test_pem_text_is_never_echoed_wherever_it_is_pasted(path):
    validation = spec.validate(edit(load_example(), path, PRIVATE_KEY))
    problem = next(problem for problem in validation.errors if problem.path == path)
    assert "PEM text (not shown)" in problem.message or "the value" in problem.message
    assert PRIVATE_KEY.splitlines()[1] not in problem.message


def test_unicode_digits_in_keys_do_not_break_problem_ordering():
    validation = spec.validate({"¹": None, "١٢": 1, "spec": {"²": 1}})
    assert "spec.²" in [problem.path for problem in validation.errors]
    assert all(spec.INTERNAL_ERROR not in problem.message for problem in validation.errors)


@pytest.mark.parametrize("case", IGNORED, ids=lambda case: case.id)
def test_what_a_live_object_carries_is_ignored_never_refused(case):
    document = case.document()
    validation = spec.validate(document)
    assert validation.errors == []
    assert validation.ignored == [] and validation.warnings == []
    result = validation.manifest["spec"]
    assert not set(case.dropped) & set(result)
    # Everything else is what the document without those fields gives.
    plain = copy.deepcopy(document)
    plain.pop("status", None)
    for key in case.dropped:
        plain["spec"].pop(key)
    assert result == spec.validate(plain).manifest["spec"]
    # The status comes back as it came, unchecked.
    assert validation.manifest.get("status") == document.get("status")


def test_every_crossplane_field_of_the_brief_is_ignored():
    assert set(LEGACY_XR) | {"crossplane"} <= set(spec.CROSSPLANE_SPEC_FIELDS)
    assert not set(spec.CROSSPLANE_SPEC_FIELDS) & set(schema.SPEC["properties"])


def test_defaulted_spec_ignores_crossplane_fields_too():
    given = {"secrets": [KUBECONFIG], "crossplane": {"compositionRef": {"name": "x"}}, **LEGACY_XR}
    assert spec.defaulted_spec(given) == spec.defaulted_spec({"secrets": [KUBECONFIG]})


def test_empty_listeners_and_driver_root_take_their_defaults():
    document = edit(load_example(), "spec.gateway.listeners", [])
    document = edit(document, "spec.nvidiaDriverRoot", "")
    result = spec.validate(document).manifest["spec"]
    assert result["gateway"]["listeners"] == DEFAULTS["gateway"]["listeners"]
    assert result["nvidiaDriverRoot"] == "/"
    assert spec.defaulted_spec({"secrets": [KUBECONFIG], "gateway": {"listeners": []}, "nvidiaDriverRoot": ""}) \
        == dict(DEFAULTS, secrets=[KUBECONFIG])


@pytest.mark.parametrize("path,value", [("spec.gateway.listeners", ""), ("spec.gateway.listeners", {}),
                                        ("spec.nvidiaDriverRoot", []), ("spec.gateway.className", "")])
def test_only_an_empty_value_of_the_fields_own_type_means_the_default(path, value):
    assert [problem.path for problem in spec.validate(edit(load_example(), path, value)).errors] == [path]


def test_envoy_gateway_v1_8_0_is_accepted_with_a_warning_saying_why():
    document = edit(load_example(), "spec.versions.envoyGateway", "v1.8.0")
    validation = spec.validate(document)
    assert validation.errors == []
    assert validation.manifest["spec"]["versions"]["envoyGateway"] == "v1.8.0"
    [warning] = validation.warnings
    assert str(warning) == (
        'spec.versions.envoyGateway: "v1.8.0" is accepted (the reference allows any v1.8.x) but unwise: it is older '
        "than v1.8.1, and Envoy AI Gateway v1.1.x is built on Envoy Gateway v1.8.1 and its README says it needs "
        "v1.8.1 or later, so the AI Gateway's extension server is untested against this release; pin v1.8.1 or later")
    result = outcome.outcome(document, [])
    assert "failed" not in result
    assert str(warning) in result["warnings"]
    assert spec.validate(load_example()).warnings == []


def test_client_cas_without_a_hostname_are_accepted_with_a_warning_saying_they_are_not_enforced():
    document = edit(load_example(), "spec.gateway.clientCAs", [{"name": "gw", "certificate": CERTIFICATE}])
    validation = spec.validate(document)
    assert validation.errors == []
    [warning] = validation.warnings
    assert str(warning) == (
        "spec.gateway.clientCAs: set without spec.gateway.hostname, so the gateway has no HTTPS listener to require "
        "client certificates on: the CAs are stored but not enforced; set spec.gateway.hostname to enforce them")
    # At plan time too: servingstack_spec (make plan) returns it among its warnings.
    assert str(warning) in outcome.outcome(document, [])["warnings"]
    with_hostname = edit(document, "spec.gateway.hostname", "gw.example.com")
    assert spec.validate(with_hostname).warnings == []


def test_a_warning_is_not_given_for_a_refused_pin():
    validation = spec.validate(edit(load_example(), "spec.versions.envoyGateway", "v1.7.0"))
    assert validation.errors and validation.warnings == []


def rules_of(*path: str) -> dict[str, dict]:
    """The CEL rules of a field of the spec's schema (``"gateway", "hostname"``), by message."""
    node = schema.SPEC
    for name in path:
        node = node.get("items", node)["properties"][name]
    return {rule["message"]: rule for rule in node["x-kubernetes-validations"]}


def test_a_rule_on_a_list_is_reported_at_its_field_path_with_its_message():
    document = edit(load_example(), "spec.gateway.hostname", "gw.example.com")
    document = edit(document, "spec.gateway.listeners", [HTTP, {"name": "https", "port": 443, "protocol": "HTTP"}])
    [(message, rule)] = rules_of("gateway").items()
    assert rule["fieldPath"] == ".listeners"
    assert messages(spec.validate(document)) == [f"spec.gateway.listeners: {message}"]
    # Reported with every other problem, all at once.
    document = edit(document, "spec.stack", "Dynamic")
    assert [problem.path for problem in spec.validate(document).errors] == ["spec.gateway.listeners", "spec.stack"]


def test_a_rule_on_a_scalar_is_reported_after_the_value():
    document = edit(load_example(), "spec.gateway.clientCAs", [{"name": "g" * 241, "certificate": CERTIFICATE}])
    message = next(message for message in rules_of("gateway", "clientCAs", "name") if "240" in message)
    assert messages(spec.validate(document)) == [f"spec.gateway.clientCAs[0].name: {quote('g' * 241)} {message}"]


def test_a_rule_is_not_evaluated_where_the_schema_refused_a_value():
    document = edit(load_example(), "spec.gateway.className", "E" * 64)
    assert messages(spec.validate(document)) == [
        f"spec.gateway.className: {quote('E' * 64)} is 64 characters long, above the maximum length 63"]


def test_a_stack_rule_names_the_pin_at_its_field_path():
    document = edit(load_example(), "spec.stack", "Dynamo")
    document = edit(document, "spec.dynamo", {"grove": "latest", "modelExpress": "0.4"})
    assert [problem.path for problem in spec.validate(document).errors] == ["spec.dynamo.grove",
                                                                            "spec.dynamo.modelExpress"]


def test_missing_python_packages_are_one_clean_problem(monkeypatch):
    monkeypatch.setattr(spec, "jsonschema", None)
    assert messages(spec.validate(load_example())) == [
        "(document): cannot be checked: this Python lacks jsonschema (see the requirements.txt of modelplane.serving)"]
    with pytest.raises(ValueError, match="lacks jsonschema"):
        spec.defaulted_spec({"secrets": [KUBECONFIG]})


def test_the_defaults_alone_need_no_cel():
    # Roles look the defaults up in fresh worker processes: cel-python's import and parser are not paid for them.
    program = ("import sys; from ansible_collections.modelplane.serving.plugins.module_utils.servingstack import spec; "
               "assert spec.defaulted_spec()['stack'] == 'Standard'; assert 'celpy' not in sys.modules")
    subprocess.run([sys.executable, "-c", program], check=True, timeout=60,
                   env=dict(os.environ, PYTHONPATH=str(REPO / ".collections")))


def role_file(path: str) -> dict:
    return yaml.safe_load((REPO / "roles" / "envoy_gateway" / path).read_text())


def test_the_rules_use_the_names_the_envoy_gateway_role_uses():
    defaults = role_file("defaults/main.yml")
    [https] = rules_of("gateway").values()
    assert f"l.name != '{defaults['envoy_gateway_https_listener']}'" in https["rule"]
    assert f"l.port != {int(defaults['envoy_gateway_https_port'])}" in https["rule"]
    # The longest client CA name leaves room for the prefix of the ConfigMap that stores it (at most 253).
    prefix = role_file("vars/main.yml")["envoy_gateway_client_ca_prefix"]
    longest = 253 - len(prefix)
    assert any(f"size(self) <= {longest}" == rule["rule"] and prefix in message
               for message, rule in rules_of("gateway", "clientCAs", "name").items())
    for name, refused in (("a" * longest, False), ("a" * (longest + 1), True)):
        document = edit(load_example(), "spec.gateway.clientCAs", [{"name": name, "certificate": CERTIFICATE}])
        assert bool(spec.validate(document).errors) is refused


@pytest.mark.parametrize("given,where", [
    ({"versions": {"envoyGateway": "v1.9.0"}}, r"spec\.versions\.envoyGateway: \"v1\.9\.0\" is out of range"),
    ({"gateway": {"listeners": [HTTP, dict(HTTP, name="web")]}},
     r"spec\.gateway\.listeners: has two listeners on one port"),
    ({"gateway": {"hostname": "gw.example.com", "listeners": [dict(HTTP, port=443)]}},
     r"spec\.gateway\.listeners: has a listener named https or on port 443"),
    ({"gateway": {"clientCAs": [{"name": "g" * 241, "certificate": CERTIFICATE}]}},
     r"spec\.gateway\.clientCAs\[0\]\.name: .* is longer than 240 characters"),
    ({"stack": "Dynamo", "dynamo": {"grove": "v0.1.0-alpha.11"}}, r"spec\.dynamo\.grove: .*\(grove#753\)"),
])
def test_defaulted_spec_applies_the_pin_and_listener_rules(given, where):
    with pytest.raises(ValueError, match=where):
        spec.defaulted_spec({"secrets": [KUBECONFIG], **given})
