"""status.py: conditions, components, error summaries and why the gateway address is pending."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from ansible_collections.modelplane.serving.plugins.module_utils.servingstack import status

PLAN = [{"name": "cert_manager", "version": "v1.21.1"}, {"name": "trust_manager", "version": "v0.24.0"},
        {"name": "envoy_gateway", "version": "v1.8.4"}]
NOW, LATER = "2026-12-02T21:00:00Z", "2026-12-02T22:00:00Z"


def by_type(conditions):
    return {condition["type"]: condition for condition in conditions}


def test_all_converged_with_an_address_is_ready():
    found = by_type(status.merge_conditions(None, status.wanted_conditions(PLAN, {}, "203.0.113.10", ""), 4, NOW))
    assert found["Ready"] == {"type": "Ready", "status": "True", "reason": "Available", "observedGeneration": 4,
                              "lastTransitionTime": NOW,
                              "message": "every component converged and the gateway is at 203.0.113.10"}
    assert (found["Synced"]["status"], found["Synced"]["reason"]) == ("True", "Converged")


def test_a_failed_component_is_named_in_reason_and_message():
    failed = {"trust_manager": "not converged: cert_manager (failed)",
              "cert_manager": "Failure when executing Helm command. Exited 1.\nstdout: \n"
                              "stderr: Error: context deadline"}
    found = by_type(status.wanted_conditions(PLAN, failed, "203.0.113.10", ""))
    assert found["Ready"]["status"] == found["Synced"]["status"] == "False"
    assert found["Ready"]["reason"] == "CertManagerFailed"  # the first failed in plan order
    assert found["Ready"]["message"] == ("cert_manager: Error: context deadline; "
                                         "trust_manager: not converged: cert_manager (failed)")


def test_a_pending_address_is_not_ready_and_says_why():
    found = by_type(status.wanted_conditions(PLAN, {}, None, "no load balancer"))
    assert (found["Ready"]["status"], found["Ready"]["reason"], found["Ready"]["message"]) == \
        ("False", "GatewayAddressPending", "no load balancer")
    assert found["Synced"]["status"] == "True"


def test_the_transition_time_stays_while_the_status_does():
    first = status.merge_conditions(None, status.wanted_conditions(PLAN, {}, None, "x"), 1, NOW)
    again = by_type(status.merge_conditions(first, status.wanted_conditions(PLAN, {}, None, "y"), 2, LATER))
    assert again["Ready"]["lastTransitionTime"] == NOW and again["Ready"]["message"] == "y"
    assert again["Ready"]["observedGeneration"] == 2
    flipped = by_type(status.merge_conditions(first, status.wanted_conditions(PLAN, {}, "1.2.3.4", ""), 2, LATER))
    assert flipped["Ready"]["lastTransitionTime"] == LATER and flipped["Synced"]["lastTransitionTime"] == NOW


def test_components_keep_the_last_installed_version_of_a_failed_one():
    previous = [{"name": "cert_manager", "version": "v1.20.0", "ready": True}]
    assert status.components_status(PLAN, {"cert_manager": "x", "trust_manager": "y"}, previous) == [
        {"name": "cert_manager", "version": "v1.20.0", "ready": False},
        {"name": "trust_manager", "ready": False},
        {"name": "envoy_gateway", "version": "v1.8.4", "ready": True},
    ]


def test_error_summaries_drop_credentials():
    pem = "-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----"
    assert status.error_summary(f"{pem} bad") == "<redacted> bad"
    assert status.error_summary("Unauthorized: Bearer abc.def") == "Unauthorized: Bearer <redacted>"
    assert status.error_summary("helm --kube-token s3cret failed") == "helm --kube-token <redacted> failed"
    assert status.error_summary('values: {"password": "hunter2", "x": 1}') == \
        'values: {"password": "<redacted>", "x": 1}'
    assert status.error_summary("data " + "QUJD" * 20) == "data <redacted>"
    assert status.error_summary("\n\nfirst\nsecond") == "first"
    assert status.error_summary(None) == "failed"
    assert len(status.error_summary("x " * 500)) == status.SUMMARY_MAX


def test_a_long_message_keeps_its_start_and_its_end():
    """ansible-core's words come first and the cause last: a clipped message keeps both."""
    wrapped = ("Task failed: Finalization of task args for 'ansible.builtin.set_fact' failed: Error while resolving "
               "value for 'servingstack_lease': The lookup plugin 'modelplane.serving.servingstack_lease' failed: "
               + "another converge of the target cluster holds the Lease " + "x" * 300
               + ": nothing was changed: run again once it has ended")
    summary = status.error_summary(wrapped)
    assert len(summary) == status.SUMMARY_MAX
    assert summary.startswith("Task failed: Finalization") and summary.endswith("run again once it has ended")
    assert "…" in summary


@pytest.mark.parametrize("message", [
    "cannot get a token: [Errno 111] Connection refused",
    "reading Secret platform/kc failed: secret: 404 Not Found",
    "reading Secret platform/west-gke-kubeconfig-for-the-production-cluster failed: 403 Forbidden",
    "GET https://127.0.0.1:6443/api/v1/namespaces/platform/secrets/west-gke-kubeconfig failed: 500",
    "api_key: <none> given",
])
def test_error_summaries_keep_the_text_around_what_is_no_credential(message):
    assert status.error_summary(message) == message


def test_error_summaries_redact_only_the_credential():
    assert status.error_summary("password=123 then") == "password=<redacted> then"
    assert status.error_summary("password: 1234 then") == "password: <redacted> then"
    assert status.error_summary("(token=abc) then") == "(token=<redacted>) then"
    assert status.error_summary("hash " + "ab12" * 12 + " then") == "hash <redacted> then"


ROLE = Path(__file__).resolve().parents[2] / "roles" / "servingstack"


def role_template(expression: str, **variables) -> object:
    """``expression`` rendered as the servingstack role's tasks see it, with ``variables``."""
    from ansible.parsing.dataloader import DataLoader
    from ansible.template import Templar, trust_as_template

    return Templar(loader=DataLoader(), variables=variables).template(trust_as_template(expression))


def rescue(path: str, task: str, fact: str) -> str:
    """The expression a rescue of the role's ``path`` keeps ``fact`` with."""
    found = []

    def walk(tasks):
        for entry in tasks:
            if entry.get("name") == task:
                found.append(entry["ansible.builtin.set_fact"][fact])
            for key in ("block", "rescue", "always"):
                walk(entry.get(key) or [])

    walk(yaml.safe_load((ROLE / "tasks" / path).read_text()))
    [expression] = found
    return expression


WRAPPED = ("Task failed: Action failed: Task failed: Finalization of task args for 'ansible.builtin.set_fact' failed: "
           "Error while resolving value for 'component_objects_found': The lookup plugin "
           "'modelplane.serving.servingstack_objects' failed: servingstack_objects: cannot reach\n  the cluster")


@pytest.mark.parametrize(("path", "task", "fact"), [
    ("main.yml", "Keep why the converge stopped, and where.", "servingstack_stopped"),
    ("status_only.yml", "Keep why the status could not be read.", "servingstack_status_error"),
])
@pytest.mark.parametrize(("message", "kept"), [
    # ansible-core's own text is kept as it is (issue 35: not parsed), on one line.
    (WRAPPED, "Task failed: Action failed: Task failed: Finalization of task args for 'ansible.builtin.set_fact' "
              "failed: Error while resolving value for 'component_objects_found': The lookup plugin "
              "'modelplane.serving.servingstack_objects' failed: servingstack_objects: cannot reach the cluster"),
    ("helm failed:\n  Error: boom", "helm failed: Error: boom"),
    ("", "failed (see the failed task in the run's output)"),
])
def test_a_rescue_keeps_the_failed_tasks_message_on_one_line(path, task, fact, message, kept):
    assert role_template(rescue(path, task, fact), ansible_failed_result={"msg": message}) == kept


def test_a_failed_components_message_is_the_failed_items_own():
    [component] = yaml.safe_load((ROLE / "tasks" / "component.yml").read_text())
    [record] = [task for task in component["rescue"] if task["name"].startswith("Record why the component failed")]
    failed = {"results": [{"failed": False}, {"failed": True, "msg": "helm failed:\n  Error: boom"}],
              "msg": "One or more items failed"}
    outcomes = role_template(record["ansible.builtin.set_fact"]["servingstack_outcomes"],
                             ansible_failed_result=failed, servingstack_component_entry={"name": "lws"},
                             servingstack_outcomes={})
    assert outcomes == {"lws": {"state": "failed", "msg": "helm failed: Error: boom"}}


def service(ingress=None, kind="LoadBalancer"):
    return {"metadata": {"name": "envoy-gw", "namespace": "envoy-gateway-system"}, "spec": {"type": kind},
            "status": {"loadBalancer": {"ingress": ingress} if ingress else {}}}


def gateway(programmed=None, message=""):
    conditions = [] if programmed is None else [{"type": "Programmed", "status": programmed, "message": message,
                                                 "reason": "AddressNotAssigned"}]
    return {"metadata": {"name": "inference-gateway", "namespace": "gw"}, "status": {"conditions": conditions}}


def test_the_pending_address_says_why():
    assert "does not exist" in status.address_pending(None, [])
    message = status.address_pending(gateway("False", "No addresses have been assigned"), [service()])
    assert message.startswith("the LoadBalancer Service envoy-gateway-system/envoy-gw of the Gateway has no ingress")
    assert "no load-balancer controller" in message
    assert status.address_pending(gateway("False", "Invalid listener"), [service([{"ip": "1.2.3.4"}])]) == \
        "the Gateway gw/inference-gateway is not Programmed: Invalid listener"
    assert status.address_pending(gateway("False", ""), [service(kind="ClusterIP")]).endswith(
        "is not Programmed: AddressNotAssigned")
    assert "not Programmed yet" in status.address_pending(gateway(), [])
    assert "has no Service yet" in status.address_pending(gateway("True"), [])


def test_a_failed_components_reason_is_its_name_in_camel_case():
    found = by_type(status.wanted_conditions([{"name": "nvidia_dra", "version": "v1"}], {"nvidia_dra": "x"}, None, ""))
    assert found["Ready"]["reason"] == found["Synced"]["reason"] == "NvidiaDraFailed"


def test_a_helm_error_list_is_kept_on_the_summary_line():
    from ansible_collections.modelplane.serving.plugins.module_utils.servingstack.status import error_summary

    message = ("Failure when executing Helm command. Exited 1.\nstdout: Release does not exist.\n"
               "stderr: Error: release mp-cert-manager failed, and has been uninstalled due to atomic being set: "
               "2 errors occurred:\n"
               "\t* admission webhook \"deny\" denied the request: no\n\t* second\n\nError: trailing\n")
    assert error_summary(message) == ("Error: release mp-cert-manager failed, and has been uninstalled due to atomic "
                                      "being set: 2 errors occurred: * admission webhook \"deny\" denied the request: "
                                      "no * second")


# servingstack_status_update (the module): what it writes, and when it writes nothing.
PARAMS = {"status": {"gateway": {"address": "203.0.113.10"}}, "components": PLAN, "failed": {},
          "observed_generation": 3}


def test_a_status_as_wanted_needs_no_patch():
    update, patch = status.status_update({}, PARAMS, NOW)
    assert patch and update["changed"] is True
    again, nothing = status.status_update(patch, PARAMS, LATER, diff=True)
    assert nothing == {} and again["changed"] is False
    assert again["observed_generation"] == 3 and again["pending"] == ""
    # The transition times stay those of the first write.
    assert {c["lastTransitionTime"] for c in again["conditions"]} == {NOW}
    assert again["diff"]["before"]["conditions"] == again["diff"]["after"]["conditions"]


def test_a_pending_address_writes_why_the_lookup_says_it_is_pending():
    pending = {"pending": "the Gateway gw/inference-gateway is not Programmed: Invalid listener"}
    update, patch = status.status_update({}, {**PARAMS, "status": pending}, NOW)
    ready = by_type(patch["conditions"])["Ready"]
    assert (ready["reason"], ready["message"]) == ("GatewayAddressPending", pending["pending"])
    assert update["pending"] == pending["pending"] and set(patch) == {"conditions", "components", "observedGeneration"}


def test_a_gateway_key_no_longer_wanted_is_removed_and_others_left_alone():
    current = {"gateway": {"address": "203.0.113.10", "caCertificate": "x"}, "note": "someone else's"}
    _update, patch = status.status_update(current, {**PARAMS, "components": None}, NOW)
    assert patch == {"gateway": {"address": "203.0.113.10", "caCertificate": None}}


# A converge that stopped before its components: where it stopped and its error give the reason.
@pytest.mark.parametrize(("stopped_at", "message", "reason"), [
    ("spec", "invalid ServingStack: - spec.gateway.clientCAs[0].certificate: does not parse", "InvalidSpec"),
    ("spec", "cannot read ServingStack platform/x: it does not exist on the management cluster", "ConvergeFailed"),
    ("spec", "servingstack_chart_mirror.url: must be an https:// or oci:// URL", "ConvergeFailed"),
    ("credentials", "spec.secrets[0]: Secret platform/nope was not found on the management cluster",
     "CredentialsUnavailable"),
    ("credentials", "GoogleApplicationCredentials: the token endpoint refused the key: 400 invalid_grant",
     "CredentialsUnavailable"),
    ("credentials", "cannot read the Secrets platform/kc: Connection refused", "CredentialsUnavailable"),
    ("preflight", "servingstack_preflight: cannot reach the cluster at https://127.0.0.1:41003: Connection refused",
     "ClusterUnreachable"),
    ("preflight", "servingstack_preflight: cannot reach the cluster at https://west.invalid:443: "
                  "Name or service not known", "ClusterUnreachable"),
    ("preflight", "servingstack_preflight: cannot reach the cluster at https://10.0.0.1:443: MaxRetryError("
                  "\"... [SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: self-signed certificate\")",
     "ClusterUnreachable"),
    ("preflight", "servingstack_preflight: reading the cluster's version (/version) failed: ConnectTimeoutError "
                  "timed out", "ClusterUnreachable"),
    ("preflight", "servingstack_preflight: cannot reach the cluster at https://127.0.0.1:41003: 401 Unauthorized",
     "CredentialsUnavailable"),
    ("preflight", "servingstack_preflight: cannot load the kubeconfig: exec: process returned 1. token refused",
     "CredentialsUnavailable"),
    ("preflight", "Kubernetes v1.27.3 is older than v1.29, the oldest the pinned charts support: upgrade the cluster",
     "PreflightFailed"),
    ("preflight", "the cluster does not serve resource.k8s.io (DRA), which the NVIDIA DRA driver needs",
     "PreflightFailed"),
    ("components", "cannot reach the cluster at https://127.0.0.1:41003: Connection refused", "ClusterUnreachable"),
    ("components", "the plan could not be ordered", "ConvergeFailed"),
])
def test_a_stopped_converge_gets_the_reason_of_where_and_why_it_stopped(stopped_at, message, reason):
    assert status.stopped_reason(stopped_at, message) == reason


def test_a_stopped_converge_is_not_ready_nor_synced_with_a_one_line_message_without_credentials():
    message = ("spec.secrets[1]: the GoogleApplicationCredentials key was refused: token=abc123def\n"
               "-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----")
    params = {**PARAMS, "failed": {"cert_manager": "x"}, "stopped": message, "stopped_at": "credentials"}
    found = by_type(status.status_update({}, params, NOW)[1]["conditions"])
    assert found["Ready"] == {**found["Synced"], "type": "Ready"}
    assert (found["Ready"]["status"], found["Ready"]["reason"]) == ("False", "CredentialsUnavailable")
    assert found["Ready"]["message"] == ("spec.secrets[1]: the GoogleApplicationCredentials key was refused: "
                                         "token=<redacted>")


def test_a_stopped_converge_writes_its_conditions_and_generation_and_leaves_the_rest():
    ready = status.merge_conditions(None, status.wanted_conditions(PLAN, {}, "203.0.113.10", ""), 3, NOW)
    current = {"gateway": {"address": "203.0.113.10"}, "conditions": ready, "observedGeneration": 3,
               "components": [{"name": "cert_manager", "version": "v1.21.1", "ready": True}]}
    params = {"status": None, "components": None, "failed": {}, "observed_generation": 4,
              "stopped": "servingstack_preflight: cannot reach the cluster at https://127.0.0.1:1: Connection refused",
              "stopped_at": "preflight"}
    update, patch = status.status_update(current, params, LATER)
    assert set(patch) == {"conditions", "observedGeneration"}, patch  # no gateway, no components
    assert patch["observedGeneration"] == 4 and update["gateway"] == {"address": "203.0.113.10"}
    found = by_type(patch["conditions"])
    assert (found["Ready"]["status"], found["Ready"]["reason"]) == ("False", "ClusterUnreachable")
    assert found["Ready"]["message"] == params["stopped"]
    assert found["Ready"]["lastTransitionTime"] == LATER and found["Ready"]["observedGeneration"] == 4
    # The plan and the components' failures do not matter once the converge stopped; again, nothing changes.
    again, nothing = status.status_update({**current, **patch}, {**params, "components": PLAN}, LATER)
    assert nothing == {} and again["changed"] is False


def test_a_refused_live_spec_names_its_generation():
    from ansible_collections.modelplane.serving.plugins.module_utils.servingstack import outcome

    refused = outcome.outcome({"apiVersion": "infrastructure.modelplane.ai/v1alpha1", "kind": "ServingStack",
                               "metadata": {"name": "x", "namespace": "platform", "generation": 7},
                               "spec": {"stack": "Nope"}}, [])
    assert refused["failed"] is True and refused["generation"] == 7
    assert "generation" not in outcome.outcome({"kind": "ServingStack", "spec": {}}, [])


def test_a_converge_whose_target_died_after_its_components_records_them_and_why_it_stopped():
    ready = status.merge_conditions(None, status.wanted_conditions(PLAN, {}, "203.0.113.10", ""), 3, NOW)
    old = [{"name": entry["name"], "version": "v0", "ready": True} for entry in PLAN]
    current = {"gateway": {"address": "203.0.113.10"}, "conditions": ready, "observedGeneration": 3,
               "components": old}
    first, rest = PLAN[0]["name"], [entry["name"] for entry in PLAN[1:]]
    refused = "cannot reach the cluster at https://127.0.0.1:1: Connection refused"
    params = {"status": None, "components": PLAN, "failed": {name: refused for name in rest}, "observed_generation": 4,
              "stopped": f"servingstack_status: {refused}",
              "stopped_at": "status"}
    _update, patch = status.status_update(current, params, LATER)
    assert set(patch) == {"conditions", "components", "observedGeneration"}, patch  # the gateway is left as it was
    found = by_type(patch["conditions"])
    assert (found["Ready"]["status"], found["Ready"]["reason"]) == ("False", "ClusterUnreachable")
    assert found["Ready"]["message"] == f"{', '.join(rest)} did not converge, then servingstack_status: {refused}"
    # The component that converged before the target died has its new version; the others keep what they had.
    by_name = {entry["name"]: entry for entry in patch["components"]}
    assert by_name[first]["ready"] is True and by_name[first]["version"] != "v0"
    assert all(by_name[name]["ready"] is False and by_name[name]["version"] == "v0" for name in rest), by_name
    # Stopped before the components were done, the same parameters leave status.components alone.
    _update, early = status.status_update(current, {**params, "stopped_at": "components"}, LATER)
    assert "components" not in early


@pytest.mark.parametrize(("message", "reason"), [
    ("another converge of the target cluster https://10.0.0.1:6443 is running: AWX job 7, ansible-playbook pid 12 "
     "on ee-1, started 2026-12-06T21:00:05Z holds the Lease kube-system/modelplane-servingstack",
     "ConvergeInProgress"),
    ("servingstack_lease: taking the Lease kube-system/modelplane-servingstack: cannot reach the cluster at "
     "https://127.0.0.1:41003: HTTPSConnectionPool(host='127.0.0.1', port=41003): Read timed out.",
     "ClusterUnreachable"),
    ("servingstack_lease: taking the Lease kube-system/modelplane-servingstack on the cluster at https://x: "
     "403 Forbidden", "CredentialsUnavailable"),
    # As the rescue keeps it: ansible-core's words around the lookup's own message.
    ("Task failed: Finalization of task args for 'ansible.builtin.set_fact' failed: Error while resolving value for "
     "'servingstack_lease': The lookup plugin 'modelplane.serving.servingstack_lease' failed: another converge of "
     "the target cluster https://10.0.0.1:6443 is running: AWX job 7 holds the Lease", "ConvergeInProgress"),
])
def test_a_converge_stopped_at_the_lease_says_whether_another_run_held_it(message, reason):
    assert status.stopped_reason("lease", message) == reason


def test_a_converge_that_recovered_releases_says_so_in_synced():
    recovered = ["Helm release lws-system/mp-lws was left pending-upgrade at revision 2 by a run that did not "
                 "finish: rolled back to revision 1, its newest deployed one"]
    found = by_type(status.wanted_conditions([{"name": "lws"}], {}, None, "no address", recovered))
    assert found["Synced"]["status"] == "True"
    assert found["Synced"]["message"] == f"all 1 components converged; {recovered[0]}"
    plain = by_type(status.wanted_conditions([{"name": "lws"}], {}, None, "no address"))
    assert plain["Synced"]["message"] == "all 1 components converged"
