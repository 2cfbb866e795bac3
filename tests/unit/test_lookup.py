"""The servingstack_component, servingstack_status and servingstack_objects lookups (the status and objects lookups
against a real API server: testing/cluster, one per module)."""

from __future__ import annotations

import ast
import base64
from pathlib import Path

import pytest
import yaml
from ansible.errors import AnsibleLookupError
from ansible_collections.modelplane.serving.plugins.lookup import (
    servingstack_component,
    servingstack_objects,
    servingstack_status,
)
from ansible_collections.modelplane.serving.plugins.module_utils.servingstack.components import GATEWAY_NAMESPACE

PLUGINS = Path(servingstack_component.__file__).resolve().parents[1]
CERT = "-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIUQ==\n-----END CERTIFICATE-----\n"


def docs(path: Path) -> dict[str, object]:
    """DOCUMENTATION and RETURN as mappings; EXAMPLES as its list of YAML documents (an inventory has several)."""
    tree = ast.parse(path.read_text())
    return {node.targets[0].id: list(yaml.safe_load_all(node.value.value)) if node.targets[0].id == "EXAMPLES"
            else yaml.safe_load(node.value.value) for node in tree.body
            if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") in
            {"DOCUMENTATION", "EXAMPLES", "RETURN"}}


@pytest.mark.parametrize("path", [
    PLUGINS / "lookup" / "servingstack_component.py",
    PLUGINS / "lookup" / "servingstack_status.py",
    PLUGINS / "lookup" / "servingstack_objects.py",
    PLUGINS / "modules" / "servingstack_status_update.py",
    PLUGINS / "inventory" / "servingstacks.py",
])
def test_documentation_parses(path):
    found = docs(path)
    # An inventory plugin returns nothing, so it has no RETURN.
    assert set(found) == {"DOCUMENTATION", "EXAMPLES"} | (set() if path.parent.name == "inventory" else {"RETURN"})
    assert all(found["EXAMPLES"])
    assert found["DOCUMENTATION"]["short_description"]


def test_status_lookup_defaults_match_the_names_the_roles_use():
    options = docs(PLUGINS / "lookup" / "servingstack_status.py")["DOCUMENTATION"]["options"]
    roles = PLUGINS.parent / "roles"
    envoy_gateway = yaml.safe_load((roles / "envoy_gateway" / "defaults" / "main.yml").read_text())
    trust_manager = yaml.safe_load((roles / "trust_manager" / "defaults" / "main.yml").read_text())
    # Where Modelplane's HTTPRoutes attach (parentRefs inference-gateway/modelplane-system).
    assert options["gateway_namespace"]["default"] == GATEWAY_NAMESPACE \
        == envoy_gateway["envoy_gateway_gateway_namespace"] == "modelplane-system"
    assert options["gateway_name"]["default"] == envoy_gateway["envoy_gateway_gateway_name"]
    assert options["ca_name"]["default"] == envoy_gateway["envoy_gateway_ca_name"] \
        == trust_manager["trust_manager_ca_name"]
    assert options["ca_configmap_namespace"]["default"] == trust_manager["trust_manager_target_namespace"]
    # envoy_gateway_ca_namespace's default: trust-manager's namespace in the components table.
    assert options["ca_secret_namespace"]["default"] == component("trust_manager")[0]["namespace"]
    # The servingstack role gives the lookup only what a play sets (servingstack_status_names): these defaults
    # stand for the roles' own.
    [read, _show] = yaml.safe_load((roles / "servingstack" / "tasks" / "status.yml").read_text())
    names = read["vars"]["servingstack_status_names"]
    for option, variable in {"gateway_name": "envoy_gateway_gateway_name",
                             "gateway_namespace": "envoy_gateway_gateway_namespace", "ca_name": "envoy_gateway_ca_name",
                             "ca_secret_namespace": "envoy_gateway_ca_namespace",
                             "ca_configmap_namespace": "trust_manager_target_namespace"}.items():
        assert f"'{option}': {variable} | default(none)" in names, option


def fragment_options(name: str) -> dict:
    """The options a modelplane.serving doc fragment adds."""
    from ansible_collections.modelplane.serving.plugins.doc_fragments import target_cluster

    assert name == "modelplane.serving.target_cluster", name
    return yaml.safe_load(target_cluster.ModuleDocFragment.DOCUMENTATION)["options"]


def run_lookup(module, terms, **options):
    """Run a lookup with its documented option defaults (the playbook tests load it through Ansible)."""
    documentation = docs(Path(module.__file__))["DOCUMENTATION"]
    documented = dict(documentation["options"])
    for fragment in documentation.get("extends_documentation_fragment", []):
        documented.update(fragment_options(fragment))
    values = {name: spec.get("default") for name, spec in documented.items() if name != "_terms"}
    unknown = set(options) - set(values)
    assert not unknown, f"undocumented options {unknown}"
    values.update(options)
    plugin = module.LookupModule()
    plugin.set_options = lambda var_options=None, direct=None: None
    plugin.get_option = lambda name, hostvars=None: values[name]
    plugin.get_options = lambda hostvars=None: dict(values)
    return plugin.run(list(terms), variables={}, **options)


def component(*terms, **options):
    return run_lookup(servingstack_component, terms, **options)


def test_component_entry_follows_the_spec_pins():
    [entry] = component("cert_manager", spec={"versions": {"certManager": "v1.20.2"}})
    assert entry["role"] == "modelplane.serving.cert_manager"
    assert [(r["release"], r["version"]) for r in entry["releases"]] == [("mp-cert-manager", "v1.20.2")]


def test_component_entry_without_a_spec_uses_the_defaults_and_accepts_a_manifest():
    [alone] = component("lws")
    pinned = {"standard": {"leaderWorkerSet": "v0.9.0"}}
    [from_manifest] = component("lws", spec={"apiVersion": "infrastructure.modelplane.ai/v1alpha1",
                                             "kind": "ServingStack", "spec": pinned})
    assert alone["releases"][0]["version"] == "v0.8.0"
    assert from_manifest["releases"][0]["version"] == "v0.9.0"


def test_unknown_components_and_bad_specs_are_named():
    with pytest.raises(AnsibleLookupError, match="'nope' is not a component"):
        component("nope")
    with pytest.raises(AnsibleLookupError, match="a plan entry needs its name and releases"):
        component({"name": "lws"})
    with pytest.raises(AnsibleLookupError, match=r"spec\.versions\.certManager"):
        component("cert_manager", spec={"versions": {"certManager": 5}})


@pytest.mark.parametrize("spec,where", [
    ({"versions": {"envoyGateway": "v1.9.0"}}, r'spec\.versions\.envoyGateway: "v1\.9\.0" is out of range'),
    ({"gateway": {"listeners": [{"name": "a", "port": 80, "protocol": "HTTP"},
                                {"name": "b", "port": 80, "protocol": "TCP"}]}},
     r"spec\.gateway\.listeners: has two listeners on one port"),
    ({"gateway": {"hostname": "gw.example.com", "listeners": [{"name": "https", "port": 8443, "protocol": "HTTP"}]}},
     r"spec\.gateway\.listeners: has a listener named https or on port 443"),
])
def test_the_component_lookup_refuses_what_the_spec_module_refuses(spec, where):
    with pytest.raises(AnsibleLookupError, match=where):
        component("envoy_gateway", spec=spec)


def test_the_component_lookup_takes_a_live_crossplane_xr_and_envoy_gateway_v1_8_0():
    live = {"apiVersion": "infrastructure.modelplane.ai/v1alpha1", "kind": "ServingStack",
            "spec": {"crossplane": {"compositionRef": {"name": "servingstack"}}, "resourceRefs": [],
                     "versions": {"envoyGateway": "v1.8.0"}, "gateway": {"listeners": []}},
            "status": {"conditions": [{"type": "Ready", "status": "True"}]}}
    [entry] = component("envoy_gateway", spec=live)
    assert entry["releases"][0]["version"] == "v1.8.0"


def test_the_component_lookup_points_the_releases_at_the_mirror_with_their_values_and_logins():
    mirror = {"url": "https://charts.example.internal/mp", "username": "robot", "password": "s3cret",
              "charts": {"kai-scheduler": {"url": "oci://harbor.example.internal/mp"},
                         "lws": {"url": "https://lws.example.internal", "username": "other", "password": "x"}}}
    [entry] = component("grove_kai", spec={"stack": "Dynamo"}, chart_mirror=mirror,
                        values={"grove-charts": {"replicaCount": 2}}, role_values={"kai-scheduler": {"a": {"b": 1}}})
    kai, grove = entry["releases"]
    assert (kai["chart_ref"], kai["chart_source"]["login"], kai["release_values"]) \
        == ("oci://harbor.example.internal/mp/kai-scheduler", "", {"a": {"b": 1}})
    assert grove["chart_ref"].endswith("/grove-charts") and grove["release_values"] == {"replicaCount": 2}
    # Only the login the releases use: not the lws override's, not one for the OCI override (no credentials).
    assert [(login["name"], login["password"]) for login in entry["logins"]] == [(grove["chart_source"]["login"],
                                                                                  "s3cret")]
    # A plan entry as the term gives the same, and applying the mirror twice is applying it once.
    assert component(entry, chart_mirror=mirror, values={"grove-charts": {"replicaCount": 2}},
                     role_values={"kai-scheduler": {"a": {"b": 1}}}) == [entry]
    [plain] = component("lws")
    assert plain["logins"] == [] and plain["releases"][0]["release_values"] == {}
    assert "chart_source" not in plain["releases"][0]


@pytest.mark.parametrize(("options", "message"), [
    ({"values": {"grove-chart": {}}}, r"^component_values\.grove-chart: no component installs a chart"),
    ({"role_values": {"lws": {}}},
     r"^roles/grove_kai/templates/values\.yaml\.j2: lws is not a chart of this component"),
    ({"chart_mirror": {"url": "ftp://x", "password": "hunter2"}},
     r"^servingstack_chart_mirror\.url: \"ftp://x\" is not a chart mirror URL.*username and password go together"),
])
def test_the_component_lookup_names_bad_values_and_mirror_settings(options, message):
    with pytest.raises(AnsibleLookupError, match=message) as raised:
        component("grove_kai", spec={"stack": "Dynamo"}, **options)
    assert "hunter2" not in str(raised.value)


@pytest.fixture(scope="module")
def api(tmp_path_factory):
    """A real cluster for the module's reads: (its handle, its kubeconfig). One node and no operator double: the
    tests only read and write objects."""
    from cluster.fixtures import running_cluster

    with running_cluster(tmp_path_factory.mktemp("lookup"), nodes=1, gpu_nodes=0, operator_double=False,
                         audit=False) as handle:
        yield handle, handle.kubeconfig


def read_status(kubeconfig, **options):
    return run_lookup(servingstack_status, [], kubeconfig=kubeconfig, **options)[0]


NO_GATEWAY = {"pending": "the Gateway does not exist on the target cluster"}


def test_status_says_why_before_the_gateway_exists(api):
    kubeconfig = api[1]
    assert read_status(kubeconfig, hostname="a.example.com") == NO_GATEWAY


def test_status_reads_the_address_and_the_published_ca(api):
    kubeconfig = api[1]
    from kubernetes import client, config

    api = config.new_client_from_config(config_file=kubeconfig)
    core = client.CoreV1Api(api)
    for namespace in ("modelplane-system", "cert-manager"):
        core.create_namespace({"metadata": {"name": namespace}})
    key = "-----BEGIN EC PRIVATE KEY-----\nMHcCAQ==\n-----END EC PRIVATE KEY-----\n"
    core.create_namespaced_secret("cert-manager", {"metadata": {"name": "mp-gateway-ca"}, "data": {
        "ca.crt": base64.b64encode(CERT.encode()).decode(), "tls.key": base64.b64encode(key.encode()).decode()}})
    # Without a Gateway there is no address; the CA falls back to the Secret's ca.crt (never tls.key).
    assert read_status(kubeconfig, hostname="a.example.com") == {"gateway": {"caCertificate": CERT}, **NO_GATEWAY}
    # Without a hostname the gateway has no CA to report.
    assert read_status(kubeconfig) == NO_GATEWAY
    core.create_namespaced_config_map("modelplane-system", {"metadata": {"name": "mp-gateway-ca"},
                                                            "data": {"ca.crt": CERT}})
    assert read_status(kubeconfig, hostname="a.example.com")["gateway"]["caCertificate"] == CERT


def test_status_says_why_pending_even_when_the_services_cannot_be_listed(monkeypatch):
    from ansible_collections.modelplane.serving.plugins.module_utils.servingstack import kubeclient

    gateway = {"metadata": {"name": "inference-gateway", "namespace": "g"}, "status": {"conditions": [
        {"type": "Programmed", "status": "False", "message": "no LoadBalancer yet"}]}}

    def read(_client, ref):
        if ref["kind"] == "Service":
            raise kubeclient.KubeReadError("services is forbidden: 403")
        return gateway

    monkeypatch.setattr(kubeclient, "connect", lambda *_args: object())
    monkeypatch.setattr(kubeclient, "read", read)
    # The Services only say more about why: a caller who may not list them still gets the Gateway's reason.
    pending = "the Gateway g/inference-gateway is not Programmed: no LoadBalancer yet"
    assert read_status("unused") == {"pending": pending}


def test_a_missing_kubeconfig_is_a_clean_error(tmp_path):
    with pytest.raises(AnsibleLookupError, match="cannot load the kubeconfig"):
        read_status(str(tmp_path / "missing"))


def read_objects(kubeconfig, *terms):
    return run_lookup(servingstack_objects, terms, kubeconfig=kubeconfig)


def test_objects_reads_named_objects_lists_and_absent_ones_in_term_order(api):
    kubeconfig = api[1]
    from kubernetes import client, config

    core = client.CoreV1Api(config.new_client_from_config(config_file=kubeconfig))
    core.create_namespace({"metadata": {"name": "objects-test"}})
    for name, labels in (("a", {"pick": "yes"}), ("b", {"pick": "no"}), ("c", {"pick": "yes"})):
        core.create_namespaced_config_map("objects-test", {"metadata": {"name": name, "labels": labels},
                                                           "data": {"k": name}})
    named = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "b", "namespace": "objects-test"}}
    missing = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "zz", "namespace": "objects-test"}}
    listed = {"apiVersion": "v1", "kind": "ConfigMap", "namespace": "objects-test", "label_selector": "pick=yes"}
    unserved = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w", "namespace": "x"}}
    unserved_list = {"apiVersion": "example.com/v1", "kind": "Widget", "namespace": "x"}
    found = read_objects(kubeconfig, named, [missing, listed], unserved, unserved_list)
    assert len(found) == 5
    assert found[0]["data"] == {"k": "b"} and found[0]["metadata"]["uid"]
    assert found[1] is None
    # List items carry apiVersion and kind (the API leaves them out), so they can be deleted as they are.
    assert sorted(item["metadata"]["name"] for item in found[2]) == ["a", "c"]
    assert {(item["apiVersion"], item["kind"]) for item in found[2]} == {("v1", "ConfigMap")}
    assert found[3] is None and found[4] == []
    # metadata_only: the same list, each item its metadata alone (the API server's PartialObjectMetadata).
    (thin,) = read_objects(kubeconfig, {**listed, "metadata_only": True})
    assert sorted(item["metadata"]["name"] for item in thin) == ["a", "c"]
    assert all("data" not in item and item["metadata"]["labels"] == {"pick": "yes"} for item in thin), thin
    # With refs, one list of what exists, as references: nothing of the data, the absent ones left out.
    refs = run_lookup(servingstack_objects, (named, [missing, listed], unserved, unserved_list), kubeconfig=kubeconfig,
                      refs=True)
    assert refs[0] == {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "b", "namespace": "objects-test"}}
    assert sorted(ref["metadata"]["name"] for ref in refs[1:]) == ["a", "c"] and len(refs) == 3
    assert all(set(ref) == {"apiVersion", "kind", "metadata"} for ref in refs)
    cluster_scoped = run_lookup(servingstack_objects, ({"apiVersion": "v1", "kind": "Namespace",
                                                        "metadata": {"name": "objects-test"}},),
                                kubeconfig=kubeconfig, refs=True)
    assert cluster_scoped == [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "objects-test"}}]


def test_objects_refuses_a_term_without_kind_and_names_a_bad_kubeconfig(api, tmp_path):
    with pytest.raises(AnsibleLookupError, match="each term needs apiVersion and kind"):
        read_objects(api[1], {"apiVersion": "v1"})
    with pytest.raises(AnsibleLookupError, match="servingstack_objects: cannot load the kubeconfig"):
        read_objects(str(tmp_path / "missing"), {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "x"}})
    assert read_objects(api[1]) == []
