"""AWX / Automation Controller configuration: playbooks/vars/awx.yml and playbooks/awx_setup.yml.

The vars are checked against what AWX itself accepts (its survey, credential-type injector and schedule rrule
validation, ported from AWX's API serializers and fields, and its injection of a credential's extra vars), and
against this repository (playbooks, the inventory file, the roles' variables, the chart mirror's rules, the
kubernetes.core of the execution environment).

awx.awx is not installable here (Galaxy is unreachable and the `ansible` package on PyPI does not carry it),
so awx_setup.yml runs against a stand-in awx.awx written into a temporary collections path: one module per
awx.awx module the playbook calls, accepting exactly that module's options (as awx.awx's argument_spec
names them) and recording each call. That checks the options the vars' items give each module, the order and
no_log, not AWX.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import jinja2
import pytest
import yaml
from ansible.galaxy.dependency_resolution.versioning import meets_requirements
from ansible_collections.modelplane.serving.plugins.filter.mirror import CHARTS
from ansible_collections.modelplane.serving.plugins.module_utils.servingstack import mirror
from awx_jobs import (
    MANAGEMENT_TYPE,
    RECAP_FIELDS,
    Job,
    PrivateDataDir,
    credential_type,
    inject_custom_credential,
    inject_kubernetes_bearer_token,
    job_template,
    launch_job,
    script_data,
    sliced_hosts,
)
from dateutil import rrule as dateutil_rrule
from jinja2.sandbox import ImmutableSandboxedEnvironment

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
PLAYBOOK = REPO / "playbooks" / "awx_setup.yml"
VARS = REPO / "playbooks" / "vars" / "awx.yml"
MIRROR_TYPE = "Modelplane chart mirror"
MANAGEMENT, MIRROR = "Modelplane management cluster", "Modelplane chart mirror"
# The templates that read charts: converge and check install or preview them, a teardown reads them for their CRDs.
CHART_PLAYBOOKS = {"playbooks/site.yml", "playbooks/teardown.yml"}

# awx.awx 24.6.1's argument_spec of each module awx_setup.yml calls (awx_collection/plugins/modules/*.py),
# plus the connection options every awx.awx module takes (module_utils/controller_api.py).
AWX_OPTIONS = {
    "credential_type": ["description", "injectors", "inputs", "kind", "name", "new_name", "state"],
    "credential": ["copy_from", "credential_type", "description", "inputs", "name", "new_name", "organization",
                   "state", "team", "update_secrets", "user"],
    "execution_environment": ["credential", "description", "image", "name", "new_name", "organization", "pull",
                              "state"],
    "project": ["allow_override", "copy_from", "credential", "custom_virtualenv", "default_environment",
                "description", "interval", "local_path", "name", "new_name", "notification_templates_error",
                "notification_templates_started", "notification_templates_success", "organization", "scm_branch",
                "scm_clean", "scm_delete_on_update", "scm_refspec", "scm_track_submodules", "scm_type",
                "scm_update_cache_timeout", "scm_update_on_launch", "scm_url", "signature_validation_credential",
                "state", "timeout", "update_project", "wait"],
    "inventory": ["copy_from", "description", "host_filter", "input_inventories", "instance_groups", "kind", "name",
                  "new_name", "organization", "prevent_instance_group_fallback", "state", "variables"],
    "inventory_source": ["credential", "custom_virtualenv", "description", "enabled_value", "enabled_var",
                         "execution_environment", "host_filter", "inventory", "limit", "name", "new_name",
                         "notification_templates_error", "notification_templates_started",
                         "notification_templates_success", "organization", "overwrite", "overwrite_vars",
                         "scm_branch", "source", "source_path", "source_project", "source_vars", "state", "timeout",
                         "update_cache_timeout", "update_on_launch", "verbosity"],
    "job_template": ["allow_simultaneous", "ask_credential_on_launch", "ask_diff_mode_on_launch",
                     "ask_execution_environment_on_launch", "ask_forks_on_launch", "ask_instance_groups_on_launch",
                     "ask_inventory_on_launch", "ask_job_slice_count_on_launch", "ask_job_type_on_launch",
                     "ask_labels_on_launch", "ask_limit_on_launch", "ask_scm_branch_on_launch",
                     "ask_skip_tags_on_launch", "ask_tags_on_launch", "ask_timeout_on_launch",
                     "ask_variables_on_launch", "ask_verbosity_on_launch", "become_enabled", "copy_from", "credential",
                     "credentials", "custom_virtualenv", "description", "diff_mode", "execution_environment",
                     "extra_vars", "force_handlers", "forks", "host_config_key", "instance_groups", "inventory",
                     "job_slice_count", "job_tags", "job_type", "labels", "limit", "name", "new_name",
                     "notification_templates_error", "notification_templates_started",
                     "notification_templates_success", "organization", "playbook", "prevent_instance_group_fallback",
                     "project", "scm_branch", "skip_tags", "start_at_task", "state", "survey_enabled", "survey_spec",
                     "timeout", "use_fact_cache", "vault_credential", "verbosity", "webhook_credential",
                     "webhook_service"],
    "schedule": ["credentials", "description", "diff_mode", "enabled", "execution_environment", "extra_data", "forks",
                 "instance_groups", "inventory", "job_slice_count", "job_tags", "job_type", "labels", "limit", "name",
                 "new_name", "organization", "rrule", "scm_branch", "skip_tags", "state", "timeout",
                 "unified_job_template", "verbosity"],
}
# The defaults of those options that awx_setup.yml relies on (its items leave them out).
AWX_DEFAULTS = {"state": "present", "wait": True}
AWX_CONNECTION_OPTIONS = ["controller_host", "controller_username", "controller_password", "controller_oauthtoken",
                          "validate_certs", "request_timeout", "controller_config_file"]

STAND_IN_MODULE = '''#!/usr/bin/python
"""Stand-in for awx.awx.{name} (tests/integration/test_awx_setup.py): takes its options, records the call."""
import json
import os

from ansible.module_utils.basic import AnsibleModule

OPTIONS = {options!r}
DEFAULTS = {defaults!r}


def main():
    spec = {{option: dict(type="raw", default=DEFAULTS.get(option)) for option in OPTIONS}}
    for secret in ("controller_password", "controller_oauthtoken"):
        spec[secret]["no_log"] = True
    module = AnsibleModule(argument_spec=spec, supports_check_mode=True)
    params = {{k: v for k, v in module.params.items() if v is not None}}
    with open(os.environ["AWX_STAND_IN_LOG"], "a") as log:
        log.write(json.dumps({{"module": "{name}", "check_mode": module.check_mode, "params": params}}) + "\\n")
    module.exit_json(changed=True)


main()
'''

# AWX's survey question types (awx/main/models/mixins.py SURVEY_TYPE_MAPPING) and what env injectors may not set
# (awx/main/constants.py ENV_BLOCKLIST; awx/main/fields.py also refuses ANSIBLE_*).
SURVEY_TYPES = {"text": str, "textarea": str, "password": str, "integer": int, "float": (float, int),
                "multiplechoice": str, "multiselect": str}
ENV_BLOCKLIST = {"VIRTUAL_ENV", "PATH", "PYTHONPATH", "JOB_ID", "INVENTORY_ID", "INVENTORY_SOURCE_ID",
                 "INVENTORY_UPDATE_ID", "AD_HOC_COMMAND_ID", "REST_API_URL", "REST_API_TOKEN", "MAX_EVENT_RES",
                 "CALLBACK_QUEUE", "CALLBACK_CONNECTION", "CACHE", "JOB_CALLBACK_DEBUG", "INVENTORY_HOSTVARS",
                 "AWX_HOST", "PROJECT_REVISION", "SUPERVISOR_CONFIG_PATH"}
SECRET_LIKE = re.compile(r"pass|secret|token|key|credential|kubeconfig|cert|auth", re.IGNORECASE)

KUBECONFIG = """\
apiVersion: v1
kind: Config
clusters:
  - name: management
    cluster: {server: "https://management.invalid:6443"}
users:
  - name: admin
    user: {token: "stand-in-management-token-9f8e7d"}
contexts:
  - name: management
    context: {cluster: management, user: admin}
current-context: management
"""


class Unsafe(str):
    """A `!unsafe` string: Ansible passes it on untemplated."""


class _VarsLoader(yaml.SafeLoader):
    pass


_VarsLoader.add_constructor("!unsafe", lambda loader, node: Unsafe(loader.construct_scalar(node)))


@pytest.fixture(scope="module")
def awx() -> dict:
    return yaml.load(VARS.read_text(), Loader=_VarsLoader)  # a SafeLoader that also knows !unsafe


def _names(awx: dict, key: str) -> set[str]:
    return {item["name"] for item in awx[key]}


def _job_type(template: dict) -> str:
    """A template's job type; awx_setup.yml sends run for one that names none."""
    return template.get("job_type", "run")


def _template(awx: dict, playbook: str, job_type: str = "run") -> dict:
    (found,) = [t for t in awx["controller_templates"] if t["playbook"] == playbook and _job_type(t) == job_type]
    return found


def _interval(rrule: str) -> float:
    """Seconds between a schedule's first two runs."""
    occurrences = dateutil_rrule.rrulestr(rrule, forceset=True)
    return (occurrences[1] - occurrences[0]).total_seconds()


def test_every_job_template_runs_a_playbook_of_this_repository_with_objects_the_vars_define(awx: dict):
    by_playbook: dict[str, list[dict]] = {}
    for template in awx["controller_templates"]:
        assert (REPO / template["playbook"]).is_file(), f"{template['name']}: {template['playbook']} does not exist"
        assert template["project"] in _names(awx, "controller_projects")
        assert template["inventory"] in _names(awx, "controller_inventories")
        assert template["execution_environment"] in _names(awx, "controller_execution_environments")
        assert template["forks"] >= 10  # README: at least the number of components (8 on a Dynamo stack)
        # On named execution nodes, and cancelled by AWX when they run away.
        assert template["instance_groups"] and all(isinstance(g, str) and g for g in template["instance_groups"])
        assert isinstance(template["timeout"], int) and template["timeout"] > 0, template["name"]
        by_playbook.setdefault(template["playbook"], []).append(template)
    converge = [t for t in by_playbook["playbooks/site.yml"] if _job_type(t) == "run"]
    check = [t for t in by_playbook["playbooks/site.yml"] if _job_type(t) == "check"]
    assert len(converge) == 1 and not converge[0].get("diff_mode")
    assert len(check) == 1 and check[0]["diff_mode"] is True
    assert {"playbooks/teardown.yml", "playbooks/status.yml"} <= set(by_playbook)


def test_the_fleet_converge_is_sliced_and_ends_before_the_next_scheduled_one_starts(awx: dict):
    converge = _template(awx, "playbooks/site.yml")
    assert isinstance(converge["job_slice_count"], int) and converge["job_slice_count"] > 1
    # AWX runs a sliced job's slices beside the next launch's (they are allow_simultaneous): the timeout is what
    # keeps one cluster from converging in two jobs at once.
    (schedule,) = [s for s in awx["controller_schedules"] if s["unified_job_template"] == converge["name"]]
    assert converge["timeout"] < _interval(schedule["rrule"])
    # The slices of one launch read one inventory update: a host's slice is its index among the inventory's hosts.
    (source,) = awx["controller_inventory_sources"]
    assert source["update_on_launch"] is True and source["update_cache_timeout"] > 0


def _survey_errors(survey: dict) -> list[str]:
    """What AWX's survey_spec endpoint refuses (awx/api/views JobTemplateSurveySpec._validate_spec_data)."""
    errors = [f"{field}: missing or not {kind.__name__}" for field, kind in
              (("name", str), ("description", str), ("spec", list)) if not isinstance(survey.get(field), kind)]
    seen: set[str] = set()
    for index, question in enumerate(survey.get("spec") or []):
        where = f"spec[{index}]"
        for field, kind in (("type", str), ("question_name", str), ("variable", str), ("required", bool)):
            if not isinstance(question.get(field), kind):
                errors.append(f"{where}.{field}: missing or not {kind.__name__}")
        if question.get("variable") in seen:
            errors.append(f"{where}.variable: {question['variable']} is asked twice")
        seen.add(question.get("variable"))
        kind = question.get("type")
        if kind not in SURVEY_TYPES:
            errors.append(f"{where}.type: {kind} is not one of {', '.join(SURVEY_TYPES)}")
            continue
        default = question.get("default", "")
        if default != "" and not isinstance(default, SURVEY_TYPES[kind]):
            errors.append(f"{where}.default: {default!r} is not a {kind} answer")
        if kind in ("multiplechoice", "multiselect"):
            choices = question.get("choices")
            if not choices:
                errors.append(f"{where}.choices: required for {kind}")
            elif default != "" and default not in choices:
                errors.append(f"{where}.default: {default!r} is not one of the choices {choices}")
    return errors


# Variables the playbooks themselves read (their header comments say so), not the roles.
PLAYBOOK_VARIABLES = {"servingstack_teardown_confirmed", "servingstack_hosts"}


def test_every_survey_is_one_awx_accepts_and_asks_for_nothing_secret(awx: dict):
    role_variables = set(yaml.safe_load((REPO / "roles/servingstack/meta/argument_specs.yml").read_text())
                         ["argument_specs"]["main"]["options"])
    for template in awx["controller_templates"]:
        survey = template.get("survey_spec")
        assert survey and template["survey_enabled"], f"{template['name']} has no survey"
        assert _survey_errors(survey) == [], template["name"]
        for question in survey["spec"]:
            assert question["type"] != "password", f"{template['name']}: {question['variable']}"
            assert not SECRET_LIKE.search(question["variable"]), f"{template['name']}: {question['variable']}"
            if question["variable"] not in PLAYBOOK_VARIABLES:
                assert question["variable"] in role_variables, f"{question['variable']} is no variable of the roles"
            # No survey answer may name what a ServingStack host carries: extra vars would override every host's.
            assert question["variable"] not in {"servingstack_name", "servingstack_namespace", "servingstack_src",
                                                "servingstack_kubeconfig", "servingstack_definition"}


def test_the_fleet_templates_ask_which_servingstacks_and_the_teardown_has_no_default(awx: dict):
    for playbook, job_type in (("playbooks/site.yml", "run"), ("playbooks/site.yml", "check"),
                               ("playbooks/teardown.yml", "run"), ("playbooks/status.yml", "run")):
        template = _template(awx, playbook, job_type)
        (hosts,) = [q for q in template["survey_spec"]["spec"] if q["variable"] == "servingstack_hosts"]
        assert hosts["type"] == "text" and hosts["required"] is True and hosts["min"] >= 1, template["name"]
        if playbook == "playbooks/teardown.yml":
            assert "default" not in hosts  # every teardown names what it tears down
        else:
            assert hosts["default"] == "servingstacks", template["name"]  # every ServingStack, as site.yml says


def test_teardown_cannot_be_launched_without_its_confirmation(awx: dict):
    teardown = _template(awx, "playbooks/teardown.yml")
    confirm = next(q for q in teardown["survey_spec"]["spec"] if q["variable"] == "servingstack_teardown_confirmed")
    # Required, a single choice and no default: AWX refuses a launch (UI, API, schedule) that does not pick it.
    assert confirm["required"] is True and "default" not in confirm and len(confirm["choices"]) == 1
    crds = next(q for q in teardown["survey_spec"]["spec"] if q["variable"] == "servingstack_remove_crds")
    assert crds["default"] == "false"


def _teardown(tmp_path: Path, answers: dict) -> Job:
    """The teardown template's job, launched through ansible-runner as AWX launches it (tests/integration/awx_jobs.py),
    over an empty inventory with an invalid spec: a run that got past the confirmation fails on the spec, before
    touching any cluster. ``answers`` are the launch's extra vars (its survey answers)."""
    spec = tmp_path / "stack.yaml"
    spec.write_text(yaml.safe_dump({
        "apiVersion": "infrastructure.modelplane.ai/v1alpha1", "kind": "ServingStack",
        "metadata": {"name": "teardown-guard", "namespace": "platform"},
        "spec": {"gateway": {"listeners": [{"name": "http", "port": 70000, "protocol": "HTTP"}]},
                 "secrets": [{"type": "Kubeconfig", "name": "x", "key": "kubeconfig"}]}}))
    # The template's management credential: a kubeconfig no run of these tests reaches (the spec fails first).
    return launch_job(tmp_path, "teardown", job_template("playbooks/teardown.yml"),
                      script_data({"_meta": {"hostvars": {}}}), {"servingstack_src": str(spec), **answers},
                      KUBECONFIG, timeout=300)


KUBECONFIG = yaml.safe_dump({
    "apiVersion": "v1", "kind": "Config", "current-context": "management",
    "clusters": [{"name": "management", "cluster": {"server": "https://127.0.0.1:9"}}],
    "contexts": [{"name": "management", "context": {"cluster": "management", "user": "awx"}}],
    "users": [{"name": "awx", "user": {"token": "not-a-real-token"}}]})


def test_a_job_gets_the_management_kubeconfig_as_a_private_file_of_its_own(tmp_path: Path):
    job = PrivateDataDir(tmp_path, "credential")
    env = inject_custom_credential(job.path, credential_type(MANAGEMENT_TYPE), {"kubeconfig": KUBECONFIG})
    assert set(env) == {"K8S_AUTH_KUBECONFIG", "KUBECONFIG"} and env["KUBECONFIG"] == env["K8S_AUTH_KUBECONFIG"]
    written = Path(env["KUBECONFIG"])
    assert written.parent == job.path / "env" and written.read_text() == KUBECONFIG
    assert written.stat().st_mode & 0o777 == 0o600


def test_a_job_gets_awx_kubernetes_bearer_token_credential_as_its_injector_sets_it(tmp_path: Path):
    job = PrivateDataDir(tmp_path, "bearer")
    env = inject_kubernetes_bearer_token(job.path, "https://203.0.113.7:6443", "token-x", "-----BEGIN CERT...")
    ca = Path(env.pop("K8S_AUTH_SSL_CA_CERT"))
    assert env == {"K8S_AUTH_HOST": "https://203.0.113.7:6443", "K8S_AUTH_API_KEY": "token-x",
                   "K8S_AUTH_VERIFY_SSL": "True"}
    assert ca.parent == job.path / "env" and ca.read_text() == "-----BEGIN CERT..."
    assert ca.stat().st_mode & 0o777 == 0o660
    # Without a CA, AWX turns verification off rather than writing an empty file.
    assert inject_kubernetes_bearer_token(job.path, "https://h", "t", None)["K8S_AUTH_VERIFY_SSL"] == "False"


def test_a_slice_gets_its_hosts_their_groups_and_variables_as_awx_cuts_them():
    exported = {"_meta": {"hostvars": {"a/x": {"v": 1}, "a/y": {"v": 2}, "b/z": {"v": 3}}},
                "all": {"children": ["ungrouped", "servingstacks", "empty"]},
                "servingstacks": {"hosts": ["a/x", "a/y", "b/z"]}, "ns_a": {"hosts": ["a/x", "a/y"]},
                "empty": {"vars": {"k": "v"}}}
    second = script_data(exported, 2, 2)
    assert second["servingstacks"] == {"hosts": ["a/y"]} and second["ns_a"] == {"hosts": ["a/y"]}
    assert second["empty"] == {"vars": {"k": "v"}}  # a group with vars stays, without hosts
    assert second["all"] == {"hosts": [], "children": ["servingstacks", "ns_a", "empty"]}
    assert second["_meta"]["hostvars"]["a/y"]["v"] == 2 and set(second["_meta"]["hostvars"]) == {"a/y"}
    assert sliced_hosts(["b/z", "a/x", "a/y"], 1, 2) == ["a/x", "b/z"]
    assert sliced_hosts(["b/z", "a/x"], 1, 1) == ["a/x", "b/z"]


CONFIRM = "Nothing torn down: a teardown must be confirmed with -e servingstack_teardown_confirmed=true"


@pytest.mark.parametrize("answers", [{}, {"servingstack_teardown_confirmed": "false"},
                                     {"servingstack_teardown_confirmed": False}])
def test_teardown_refuses_to_run_unconfirmed_in_one_line_before_anything_else(tmp_path: Path, answers: dict):
    job = _teardown(tmp_path, answers)
    assert job.rc != 0 and job.status == "failed", job.output()
    assert CONFIRM in job.stdout, job.output()  # on one line
    assert "invalid ServingStack" not in job.stdout and "Traceback" not in job.stdout + job.stderr
    assert job.recap == {"localhost": {**dict.fromkeys(RECAP_FIELDS.values(), 0), "failed": 1}}, job.output()


def test_the_teardown_surveys_answer_confirms_teardown_yml(awx: dict, tmp_path: Path):
    teardown = _template(awx, "playbooks/teardown.yml")
    confirm = next(q for q in teardown["survey_spec"]["spec"] if q["variable"] == "servingstack_teardown_confirmed")
    # AWX passes a survey answer as a string extra var.
    job = _teardown(tmp_path, {"servingstack_teardown_confirmed": confirm["choices"][0]})
    assert CONFIRM not in job.stdout, job.output()
    assert "spec.gateway.listeners[0].port: 70000" in " ".join(job.stdout.split()), job.output()  # the role ran


class _Files:
    """`tower.filename` without a single-file injector: only its named files, and no string of its own."""

    def __init__(self, names: dict[str, str]) -> None:
        self.__dict__.update(names)

    def __str__(self) -> str:
        raise jinja2.UndefinedError("Must define unnamed file injector in order to reference `tower.filename`.")


def _leaves(node: object, path: str) -> list[tuple[str, object]]:
    """(path, template) of every key and value of an extra_vars injector: AWX renders both."""
    if isinstance(node, dict):
        found: list[tuple[str, object]] = []
        for key, value in node.items():
            found += [(f"{path}.{key} (its key)", key), *_leaves(value, f"{path}.{key}")]
        return found
    if isinstance(node, list):
        return [leaf for index, item in enumerate(node) for leaf in _leaves(item, f"{path}[{index}]")]
    return [(path, node)]


def _injector_errors(credential_type: dict) -> list[str]:
    """What AWX refuses in a credential type's injectors (awx/main/fields.py CredentialTypeInjectorField)."""
    injectors, errors = credential_type["injectors"], []
    fields = {f["id"]: "EXAMPLE" for f in credential_type["inputs"]["fields"]}
    templates = [key for key in injectors.get("file", {}) if key.startswith("template")]
    if set(injectors) - {"file", "env", "extra_vars"}:
        errors.append(f"injectors: unknown kinds {set(injectors) - {'file', 'env', 'extra_vars'}}")
    filename = "EXAMPLE_FILENAME" if templates == ["template"] else _Files(
        {name.split(".", 1)[1]: "EXAMPLE_FILENAME" for name in templates})
    namespace = {**fields, "tower": type("Tower", (), {"filename": filename})()}
    environment = ImmutableSandboxedEnvironment(undefined=jinja2.StrictUndefined)
    checked = [(f"injectors.{kind}.{key}", template) for kind in ("file", "env")
               for key, template in injectors.get(kind, {}).items()]
    checked += _leaves(injectors.get("extra_vars", {}), "injectors.extra_vars")
    for key in injectors.get("env", {}):
        if key.startswith("ANSIBLE_") or key in ENV_BLOCKLIST:
            errors.append(f"injectors.env.{key}: AWX does not let a credential set it")
    for where, template in checked:
        is_key = where.endswith("(its key)")
        if is_key and not (isinstance(template, str) and re.fullmatch(r"[a-zA-Z_{}][a-zA-Z0-9_{}]*", template)):
            errors.append(f"{where}: {template!r} is not a variable name AWX takes")
        if not is_key and not isinstance(template, Unsafe):
            errors.append(f"{where}: not !unsafe, so Ansible would render it before AWX does")
        try:
            environment.from_string(str(template)).render(namespace)
        except jinja2.TemplateError as error:
            errors.append(f"{where}: {error}")
    return errors


def _injected_extra_vars(credential_type: dict, inputs: dict[str, str], filename: str) -> dict:
    """The extra vars file AWX writes for a job with a credential of this type (CredentialType.inject_credential):
    only inputs with a value are defined, every value rendered to a string, then dumped with each string !unsafe
    (awx/main/utils/safe_yaml.py) and read back as Ansible reads `-e @file`: strings."""
    namespace = {key: value for key, value in inputs.items() if value}
    namespace["tower"] = type("Tower", (), {"filename": filename})()
    environment = ImmutableSandboxedEnvironment()

    def build(node: object) -> object:
        if isinstance(node, dict):
            return {build(key): build(value) for key, value in node.items()}
        if isinstance(node, list):
            return [build(item) for item in node]
        return environment.from_string(str(node)).render(**namespace)

    class UnsafeDumper(yaml.SafeDumper):
        def represent_data(self, data: object) -> yaml.Node:
            if isinstance(data, str):
                return self.represent_scalar("!unsafe", data)
            return super().represent_data(data)

    written = yaml.dump(build(credential_type["injectors"].get("extra_vars", {})), Dumper=UnsafeDumper)
    assert written.count("!unsafe") >= 2  # AWX's own marking: Ansible never templates what a credential holds
    return yaml.load(written, Loader=_VarsLoader)


def _by_name(items: list[dict], name: str) -> dict:
    (found,) = [item for item in items if item["name"] == name]
    return found


def test_the_credential_type_injects_the_management_kubeconfig_as_a_file(awx: dict):
    credential_type = _by_name(awx["controller_credential_types"], MANAGEMENT_TYPE)
    assert credential_type["kind"] == "cloud"  # custom types are cloud or net; cloud ones attach to inventory sources
    assert _injector_errors(credential_type) == []
    (field,) = credential_type["inputs"]["fields"]
    assert field["id"] == "kubeconfig" and field["secret"] is True and field["multiline"] is True
    injectors = credential_type["injectors"]
    assert injectors["file"] == {"template": "{{ kubeconfig }}"}
    assert injectors["env"]["K8S_AUTH_KUBECONFIG"] == "{{ tower.filename }}"
    # kubernetes.core.helm would take K8S_AUTH_CONTEXT as a context next to the target's CA and refuse.
    assert "K8S_AUTH_CONTEXT" not in injectors["env"] and "extra_vars" not in injectors

    credential = _by_name(awx["controller_credentials"], MANAGEMENT)
    assert credential["credential_type"] == credential_type["name"]
    assert set(credential["inputs"]) == {"kubeconfig"}
    assert "lookup('ansible.builtin.file', modelplane_awx_management_kubeconfig)" in credential["inputs"]["kubeconfig"]
    sources = awx["controller_inventory_sources"]
    assert {s["credential"] for s in sources} == {credential["name"]}


def test_the_chart_mirror_type_is_one_awx_accepts_with_a_secret_password(awx: dict):
    credential_type = _by_name(awx["controller_credential_types"], MIRROR_TYPE)
    assert credential_type["kind"] == "cloud" and _injector_errors(credential_type) == []
    fields = {field["id"]: field for field in credential_type["inputs"]["fields"]}
    assert fields["password"]["secret"] is True
    assert credential_type["inputs"]["required"] == ["url"]
    # Only the extra var and the CA's file: no environment variable, which any process of the job would inherit.
    assert set(credential_type["injectors"]) == {"extra_vars", "file"}
    assert set(credential_type["injectors"]["extra_vars"]) == {"servingstack_chart_mirror"}
    credential = _by_name(awx["controller_credentials"], MIRROR)
    assert credential["credential_type"] == MIRROR_TYPE and set(credential["inputs"]) <= set(fields)


@pytest.mark.parametrize("inputs", [
    {"url": "oci://harbor.example.com/modelplane"},
    {"url": "https://charts.example.com/modelplane", "username": "robot$ci", "password": "p{{ 4 }}ss%s'\"",
     "ca_certificate": "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----"},
])
def test_the_chart_mirror_credential_injects_a_servingstack_chart_mirror_the_collection_accepts(
        awx: dict, inputs: dict[str, str]):
    credential_type = _by_name(awx["controller_credential_types"], MIRROR_TYPE)
    injected = _injected_extra_vars(credential_type, inputs, "/runner/env/tmpca123")
    setting = injected["servingstack_chart_mirror"]
    assert mirror.problems(setting, CHARTS) == [], setting
    source = mirror.parse(setting, CHARTS).default
    assert (source.url, source.username, source.password) == (inputs["url"], inputs.get("username", ""),
                                                              inputs.get("password", ""))
    # The CA becomes a file of the job, named only when there is one (an empty ca_file leaves helm's own roots).
    assert source.ca_file == ("/runner/env/tmpca123" if inputs.get("ca_certificate") else "")


def test_the_chart_mirror_check_catches_what_the_collection_refuses(awx: dict):
    credential_type = _by_name(awx["controller_credential_types"], MIRROR_TYPE)
    injected = _injected_extra_vars(credential_type, {"url": "oci://h.example/p", "username": "robot"}, "/f")
    assert any("username and password go together" in p for p in mirror.problems(injected["servingstack_chart_mirror"]))
    bad = {"inputs": credential_type["inputs"],
           "injectors": {"extra_vars": {"servingstack_chart_mirror": {"url": "{{ url }}", "pass-word": Unsafe("x")},
                                        "other": Unsafe("{{ token }}")}}}
    errors = _injector_errors(bad)
    assert any("servingstack_chart_mirror.url: not !unsafe" in e for e in errors), errors
    assert any("pass-word (its key)" in e for e in errors), errors
    assert any("injectors.extra_vars.other" in e and "token" in e for e in errors), errors


def test_no_survey_and_no_template_extra_vars_carry_the_chart_mirror(awx: dict):
    for template in awx["controller_templates"]:
        assert "servingstack_chart_mirror" not in (template.get("extra_vars") or {}), template["name"]
        assert all("mirror" not in q["variable"] for q in template["survey_spec"]["spec"]), template["name"]
    for schedule in awx["controller_schedules"]:
        assert "servingstack_chart_mirror" not in (schedule.get("extra_data") or {}), schedule["name"]


def test_the_credential_type_check_catches_what_awx_refuses(awx: dict):
    bad = {"inputs": {"fields": [{"id": "kubeconfig"}]},
           "injectors": {"env": {"ANSIBLE_CONFIG": Unsafe("{{ tower.filename }}"), "PATH": Unsafe("x"),
                                 "K8S_AUTH_KUBECONFIG": "{{ tower.filename }}", "X": Unsafe("{{ token }}")}}}
    errors = _injector_errors(bad)
    assert any("ANSIBLE_CONFIG: AWX does not" in e for e in errors) and any("PATH: AWX does not" in e for e in errors)
    assert any("K8S_AUTH_KUBECONFIG: not !unsafe" in e for e in errors)
    assert any("injectors.env.X" in e and "token" in e for e in errors)  # an input the type does not have
    assert any("ANSIBLE_CONFIG" in e and "filename" in e for e in errors)  # no file injector: no tower.filename


def _galaxy_version(path: Path, name: str = "kubernetes.core") -> str:
    (found,) = [c for c in yaml.safe_load(path.read_text())["collections"] if c["name"] == name]
    return str(found["version"])


def test_every_requirements_file_installs_the_kubernetes_core_of_the_execution_environment():
    galaxy = yaml.safe_load((REPO / "execution-environment.yml").read_text())["dependencies"]["galaxy"]
    (ee,) = [str(c["version"]) for c in galaxy["collections"] if c["name"] == "kubernetes.core"]
    assert re.fullmatch(r"\d+\.\d+\.\d+", ee), ee  # the EE pins one version
    # The root file (a clone, AWX 22.5.0 and later) and collections/ (what every AWX installs on a project sync).
    for path in (REPO / "requirements.yml", REPO / "collections" / "requirements.yml"):
        assert _galaxy_version(path).removeprefix("==") == ee, path
    # Within the range the collection declares it works with.
    declared = yaml.safe_load((REPO / "galaxy.yml").read_text())["dependencies"]["kubernetes.core"]
    assert meets_requirements(ee, declared), (ee, declared)
    # And the copy the tests run with, where `make venv` installed it.
    manifest = REPO / ".collections" / "ansible_collections" / "kubernetes" / "core" / "MANIFEST.json"
    if manifest.exists():
        assert json.loads(manifest.read_text())["collection_info"]["version"] == ee


def _rrule_errors(value: str) -> list[str]:
    """What AWX refuses in a schedule's rrule (awx/api/serializers.py SchedulePreviewSerializer.validate_rrule)."""
    errors = []
    dtstarts = re.findall(r".*?(DTSTART(;[^:]+)?\:[0-9]+T[0-9]+Z?)", value)
    if len(dtstarts) != 1:
        errors.append("exactly one DTSTART is required")
    if re.findall(r".*?(DTSTART:[0-9]+T[0-9]+) ", value):
        errors.append("DTSTART must not be a naive datetime")
    rules = re.findall(r".*?(RULE\:[^\s]*)", value)
    if not rules or any(kind in value.lower() for kind in ("exdate:", "rdate:")):
        errors.append("one RRULE and no EXDATE/RDATE")
    errors += [f"{rule}: INTERVAL required" for rule in rules if "interval" not in rule.lower()]
    errors += [f"{rule}: SECONDLY unsupported" for rule in rules if "secondly" in rule.lower()]
    try:
        parsed = dateutil_rrule.rrulestr(value, forceset=True)
        if any(r._dtstart.tzinfo is None for r in parsed._rrule):  # as AWX checks
            errors.append("DTSTART needs a TZID")
    except (ValueError, TypeError) as error:
        errors.append(f"rrule parsing: {error}")
    return errors


def test_the_schedule_converges_on_an_rrule_awx_accepts(awx: dict):
    (schedule,) = awx["controller_schedules"]
    assert _rrule_errors(schedule["rrule"]) == []
    assert _rrule_errors("DTSTART:20260101T000000 RRULE:FREQ=HOURLY") != []  # the check has teeth
    converge = _template(awx, "playbooks/site.yml")
    assert schedule["unified_job_template"] == converge["name"]
    # A scheduled launch answers no survey: every required question of the template needs a default.
    assert all("default" in q for q in converge["survey_spec"]["spec"] if q["required"])
    occurrences = dateutil_rrule.rrulestr(schedule["rrule"], forceset=True)
    first, second = occurrences[0], occurrences[1]
    assert (second - first).total_seconds() == 3600


def test_the_inventory_source_reads_the_servingstacks_with_the_inventory_plugin(awx: dict):
    (source,) = awx["controller_inventory_sources"]
    assert source["source"] == "scm" and source["source_project"] in _names(awx, "controller_projects")
    assert source["inventory"] in _names(awx, "controller_inventories")
    inventory_file = REPO / source["source_path"]
    assert inventory_file.name.endswith(".servingstacks.yml")
    assert yaml.safe_load(inventory_file.read_text())["plugin"] == "modelplane.serving.servingstacks"
    assert source["update_on_launch"] is True and source["execution_environment"] in _names(
        awx, "controller_execution_environments")


# ---- awx_setup.yml against the awx.awx stand-in ----


@pytest.fixture(scope="module")
def stand_in(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("awx_stand_in")
    modules = root / "ansible_collections" / "awx" / "awx" / "plugins" / "modules"
    modules.mkdir(parents=True)
    for name, options in AWX_OPTIONS.items():
        (modules / f"{name}.py").write_text(STAND_IN_MODULE.format(
            name=name, options=options + AWX_CONNECTION_OPTIONS, defaults=AWX_DEFAULTS))
    return root


def _playbook(stand_in: Path, tmp_path: Path, *args: str, **env: str) -> tuple[subprocess.CompletedProcess, list]:
    log = tmp_path / "awx-calls.jsonl"
    environ = {key: value for key, value in os.environ.items()
               if not key.startswith(("CONTROLLER_", "TOWER_", "MODELPLANE_"))}
    environ.update({
        "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        "ANSIBLE_CONFIG": str(REPO / "ansible.cfg"),
        "ANSIBLE_COLLECTIONS_PATH": f"{stand_in}{os.pathsep}{REPO / '.collections'}",
        "ANSIBLE_NOCOLOR": "1",
        "AWX_STAND_IN_LOG": str(log),
        **env,
    })
    result = subprocess.run([str(BIN / "ansible-playbook"), str(PLAYBOOK), *args], cwd=REPO, env=environ,
                            capture_output=True, text=True, timeout=300, check=False)
    calls = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    return result, calls


def test_awx_setup_passes_the_syntax_check(stand_in: Path, tmp_path: Path):
    result, calls = _playbook(stand_in, tmp_path, "--syntax-check")
    assert result.returncode == 0, result.stdout + result.stderr
    assert calls == []


MIRROR_PASSWORD = "stand-in-mirror-password-5b1c0e"
CA_PEM = "-----BEGIN CERTIFICATE-----\nMIIBstandin\n-----END CERTIFICATE-----\n"


def _login(tmp_path: Path) -> dict[str, str]:
    kubeconfig = tmp_path / "management.yaml"
    kubeconfig.write_text(KUBECONFIG)
    return {"CONTROLLER_HOST": "https://awx.invalid", "CONTROLLER_OAUTH_TOKEN": "stand-in-controller-token",
            "MODELPLANE_MANAGEMENT_KUBECONFIG": str(kubeconfig)}


def _mirror_env(tmp_path: Path) -> dict[str, str]:
    ca = tmp_path / "mirror-ca.pem"
    ca.write_text(CA_PEM)
    return {"MODELPLANE_CHART_MIRROR_URL": "oci://harbor.example.com/modelplane",
            "MODELPLANE_CHART_MIRROR_USERNAME": "robot$modelplane", "MODELPLANE_CHART_MIRROR_PASSWORD": MIRROR_PASSWORD,
            "MODELPLANE_CHART_MIRROR_CA_FILE": str(ca)}


def _by_module(calls: list[dict]) -> dict[str, list[dict]]:
    by_module: dict[str, list[dict]] = {}
    for call in calls:
        by_module.setdefault(call["module"], []).append(call["params"])
    return by_module


def test_awx_setup_applies_the_vars_in_dependency_order_keeping_the_secrets_out_of_the_output(
        stand_in: Path, tmp_path: Path, awx: dict):
    result, calls = _playbook(stand_in, tmp_path, **_login(tmp_path), **_mirror_env(tmp_path))
    assert result.returncode == 0, result.stdout + result.stderr
    order = [call["module"] for call in calls]
    assert order == (["credential_type"] * len(awx["controller_credential_types"])
                     + ["credential"] * len(awx["controller_credentials"])
                     + ["execution_environment"] * len(awx["controller_execution_environments"])
                     + ["project"] * len(awx["controller_projects"])
                     + ["inventory"] * len(awx["controller_inventories"])
                     + ["inventory_source"] * len(awx["controller_inventory_sources"])
                     + ["job_template"] * len(awx["controller_templates"])
                     + ["schedule"] * len(awx["controller_schedules"]))
    by_module = _by_module(calls)

    types = {params["name"]: params for params in by_module["credential_type"]}
    assert types[MANAGEMENT_TYPE]["injectors"] == {  # passed on untemplated, for AWX to render at job start
        "file": {"template": "{{ kubeconfig }}"},
        "env": {"K8S_AUTH_KUBECONFIG": "{{ tower.filename }}", "KUBECONFIG": "{{ tower.filename }}"}}
    assert types[MIRROR_TYPE]["injectors"]["extra_vars"]["servingstack_chart_mirror"]["password"] == "{{ password }}"
    credentials = {params["name"]: params for params in by_module["credential"]}
    management = credentials[MANAGEMENT]
    assert management["inputs"] == {"kubeconfig": KUBECONFIG.rstrip("\n")}  # the file lookup drops the last newline
    assert management["update_secrets"] is False
    chart_mirror = credentials[MIRROR]
    assert chart_mirror["state"] == "present" and chart_mirror["update_secrets"] is False
    assert chart_mirror["inputs"] == {"url": "oci://harbor.example.com/modelplane", "username": "robot$modelplane",
                                      "password": MIRROR_PASSWORD, "ca_certificate": CA_PEM.rstrip("\n")}
    for secret in ("stand-in-management-token-9f8e7d", "stand-in-controller-token", MIRROR_PASSWORD):
        assert secret not in result.stdout + result.stderr

    templates = {params["name"]: params for params in by_module["job_template"]}
    for template in awx["controller_templates"]:
        sent = templates[template["name"]]
        assert sent["playbook"] == template["playbook"] and sent["job_type"] == _job_type(template)
        assert sent.get("survey_spec") == template.get("survey_spec")
        assert sent["survey_enabled"] is template["survey_enabled"] and sent["forks"] == template["forks"]
        assert (sent["instance_groups"], sent["timeout"]) == (template["instance_groups"], template["timeout"])
        assert sent.get("job_slice_count") == template.get("job_slice_count")
        # The chart mirror's credential on the templates that read charts, the management cluster's on all.
        wanted = [MANAGEMENT, MIRROR] if template["playbook"] in CHART_PLAYBOOKS else [MANAGEMENT]
        assert sent["credentials"] == wanted, template["name"]
        assert set(sent["credentials"]) <= set(credentials)
    assert templates["Modelplane serving: check (diff)"]["diff_mode"] is True
    assert templates["Modelplane serving: converge"]["job_slice_count"] > 1
    source = by_module["inventory_source"][0]
    assert (source["source"], source["source_path"]) == ("scm", "examples/awx/fleet.servingstacks.yml")
    assert source["update_cache_timeout"] == awx["controller_inventory_sources"][0]["update_cache_timeout"]
    assert by_module["schedule"][0]["rrule"] == awx["controller_schedules"][0]["rrule"]
    assert by_module["project"][0]["wait"] is True  # synced before templates name its playbooks


def test_awx_setup_without_a_chart_mirror_makes_no_mirror_credential_and_attaches_none(
        stand_in: Path, tmp_path: Path):
    result, calls = _playbook(stand_in, tmp_path, **_login(tmp_path))
    assert result.returncode == 0, result.stdout + result.stderr
    by_module = _by_module(calls)
    credentials = {params["name"]: params for params in by_module["credential"]}
    # One an earlier run made goes: the vars say there is no mirror.
    assert credentials[MIRROR]["state"] == "absent" and credentials[MANAGEMENT].get("state", "present") == "present"
    assert all(params["credentials"] == [MANAGEMENT] for params in by_module["job_template"])


def test_awx_setup_refuses_an_item_key_its_module_does_not_take(stand_in: Path, tmp_path: Path, awx: dict):
    schedule = {**awx["controller_schedules"][0], "extra_vars": {"servingstack_adopt": True}}
    result, calls = _playbook(stand_in, tmp_path, "-e", json.dumps({"controller_schedules": [schedule]}),
                              **_login(tmp_path))
    assert result.returncode != 0
    assert "Unsupported parameters" in result.stdout and "extra_vars" in result.stdout, result.stdout + result.stderr
    assert [call["module"] for call in calls].count("schedule") == 0 and len(calls) > 0


@pytest.mark.parametrize(("mirror_env", "message"), [
    ({"MODELPLANE_CHART_MIRROR_PASSWORD": ""}, "servingstack_chart_mirror: username and password go together"),
    ({"MODELPLANE_CHART_MIRROR_URL": "ftp://mirror.example.com"}, "servingstack_chart_mirror.url: "),
    ({"MODELPLANE_CHART_MIRROR_CA_FILE": "{missing}"}, "{missing} is not a file holding a PEM certificate"),
    ({"MODELPLANE_CHART_MIRROR_CA_FILE": "{not_pem}"}, "{not_pem} is not a file holding a PEM certificate"),
])
def test_awx_setup_refuses_a_wrong_chart_mirror_before_calling_the_controller(
        stand_in: Path, tmp_path: Path, mirror_env: dict[str, str], message: str):
    paths = {"missing": tmp_path / "nope.pem", "not_pem": tmp_path / "notes.txt"}
    paths["not_pem"].write_text("hunter2\n")
    env = {**_login(tmp_path), **_mirror_env(tmp_path),
           **{key: value.format(**paths) for key, value in mirror_env.items()}}
    result, calls = _playbook(stand_in, tmp_path, **env)
    assert result.returncode != 0
    said = " ".join(result.stdout.split())
    assert "modelplane_awx_chart_mirror" in said and message.format(**paths) in said, result.stdout + result.stderr
    assert calls == []
    for secret in ("hunter2", MIRROR_PASSWORD):
        assert secret not in result.stdout + result.stderr
    assert "Traceback" not in result.stdout + result.stderr


@pytest.mark.parametrize(("env", "message"), [
    ({"MODELPLANE_MANAGEMENT_KUBECONFIG": "{kubeconfig}"}, "CONTROLLER_HOST: not set, or no login"),
    ({"CONTROLLER_HOST": "https://awx.invalid", "CONTROLLER_USERNAME": "admin",
      "MODELPLANE_MANAGEMENT_KUBECONFIG": "{kubeconfig}"}, "CONTROLLER_HOST: not set, or no login"),
    ({"CONTROLLER_HOST": "https://awx.invalid", "CONTROLLER_OAUTH_TOKEN": "t"},
     "modelplane_awx_management_kubeconfig (MODELPLANE_MANAGEMENT_KUBECONFIG): not set"),
    ({"CONTROLLER_HOST": "https://awx.invalid", "CONTROLLER_OAUTH_TOKEN": "t",
      "MODELPLANE_MANAGEMENT_KUBECONFIG": "{missing}"}, "{missing} is not a file holding a kubeconfig"),
    ({"CONTROLLER_HOST": "https://awx.invalid", "CONTROLLER_OAUTH_TOKEN": "t",
      "MODELPLANE_MANAGEMENT_KUBECONFIG": "{not_kubeconfig}"},
     "{not_kubeconfig} is not a file holding a kubeconfig with clusters and a current-context"),
])
def test_awx_setup_refuses_a_missing_login_or_kubeconfig_before_calling_the_controller(
        stand_in: Path, tmp_path: Path, env: dict[str, str], message: str):
    paths = {"kubeconfig": tmp_path / "management.yaml", "missing": tmp_path / "nope.yaml",
             "not_kubeconfig": tmp_path / "notes.txt"}
    paths["kubeconfig"].write_text(KUBECONFIG)
    paths["not_kubeconfig"].write_text("secret-looking-line: hunter2\n")
    env = {key: value.format(**paths) for key, value in env.items()}
    result, calls = _playbook(stand_in, tmp_path, **env)
    assert result.returncode != 0
    assert message.format(**paths) in result.stdout, result.stdout + result.stderr
    assert calls == []
    assert "hunter2" not in result.stdout + result.stderr and "Traceback" not in result.stdout + result.stderr
