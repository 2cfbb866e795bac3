"""The corpus of ServingStack documents shared by the field tests and the CRD-agreement tests.

Each case edits the reference example. ``VALID`` cases pass both the module and the CRD (its OpenAPI
schema and its CEL rules); ``INVALID`` cases fail both, and the module names ``path`` with a message
containing ``fragment``; ``MODULE_ONLY`` cases pass the CRD but fail the module, for the reason given
(one of the module's PYTHON_ONLY_RULES, or what the API server checks on every object). ``IGNORED`` cases carry
what a live object has beyond its desired state (status, Crossplane's XR fields): the module
accepts them, drops ``ignored`` from the spec it returns (``dropped``) and the CRD accepts the
document without them. A case's ``warnings`` are the paths the module warns about (ignored pins
and accepted but unwise values), in that order.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from servingstack_docs import CERTIFICATE, DELETE, PRIVATE_KEY, SECOND_CERTIFICATE, edit, load_example

KUBECONFIG = {"type": "Kubeconfig", "name": "kc", "key": "kubeconfig"}
GOOGLE = {"type": "GoogleApplicationCredentials", "name": "sa", "key": "private_key"}
AWS = {"type": "AWSWebIdentityCredentials", "name": "aws", "key": "token"}
HTTP = {"name": "http", "port": 80, "protocol": "HTTP"}


def listeners(count: int) -> list[dict]:
    return [{"name": f"l{index}", "port": 8000 + index, "protocol": "HTTP"} for index in range(count)]


def ca(certificate: str, name: str = "gw") -> list[dict]:
    return [{"name": name, "certificate": certificate}]


GARBAGE = "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"
PUBLIC_KEY = "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n"


def client_cas(count: int) -> list[dict]:
    return [{"name": f"gw-{index}", "certificate": CERTIFICATE} for index in range(count)]


@dataclass(frozen=True)
class Case:
    id: str
    edits: tuple = ()
    path: str = ""
    fragment: str = ""
    why: str = ""
    warnings: tuple = field(default=())
    dropped: tuple = field(default=())

    def document(self) -> dict:
        document = load_example()
        for path, value in self.edits:
            document = edit(document, path, value)
        return document


def case(id: str, *edits: tuple, path: str = "", fragment: str = "", why: str = "", warnings: tuple = (),
         dropped: tuple = ()) -> Case:
    return Case(id, tuple(edits), path, fragment, why, warnings, dropped)


VALID = [
    case("reference example"),
    case("dynamo stack", ("spec.stack", "Dynamo")),
    case("minimal", ("spec", {"secrets": [KUBECONFIG]})),
    case("no namespace", ("metadata.namespace", DELETE)),
    case("kubeconfig only", ("spec.secrets", [KUBECONFIG])),
    case("identity first", ("spec.secrets", [AWS, KUBECONFIG])),
    case("secret namespace", ("spec.secrets[1].namespace", "crossplane-system")),
    case("secret name 253", ("spec.secrets[0].name", "a" * 253)),
    case("secret key 253", ("spec.secrets[0].key", "k" * 253)),
    case("secret key chars", ("spec.secrets[0].key", "config.yaml_v-2")),
    case("secret namespace 63", ("spec.secrets[0].namespace", "n" * 63)),
    case("port 1", ("spec.gateway.listeners[0].port", 1)),
    case("port 65535", ("spec.gateway.listeners[0].port", 65535)),
    case("tcp listener", ("spec.gateway.listeners[0].protocol", "TCP")),
    case("listener name 63", ("spec.gateway.listeners[0].name", "a" * 63)),
    case("listener name dotted", ("spec.gateway.listeners[0].name", "web.v1-a")),
    case("8 listeners", ("spec.gateway.listeners", listeners(8))),
    case("http and tcp listeners", ("spec.gateway.listeners[1]", {"name": "raw", "port": 9000, "protocol": "TCP"})),
    case("no listeners field", ("spec.gateway.listeners", DELETE)),
    case("empty listeners mean the default", ("spec.gateway.listeners", [])),
    case("hostname with listeners beside https", ("spec.gateway.hostname", "gw.example.com"),
         ("spec.gateway.listeners", [HTTP, {"name": "https-alt", "port": 8443, "protocol": "HTTP"}])),
    case("listener named https without hostname", ("spec.gateway.listeners", [dict(HTTP, name="https", port=443)])),
    case("class name 63", ("spec.gateway.className", "c" * 63)),
    case("class name dotted", ("spec.gateway.className", "envoy.inference")),
    case("hostname", ("spec.gateway.hostname", "west.gw.example.com")),
    case("hostname wildcard", ("spec.gateway.hostname", "*.example.com")),
    case("hostname 253", ("spec.gateway.hostname", ".".join(["a" * 63] * 3) + "." + "b" * 61)),
    # Client CAs without a hostname are stored but not enforced (no HTTPS listener): accepted with a warning.
    case("one client CA", ("spec.gateway.clientCAs", client_cas(1)), warnings=("spec.gateway.clientCAs",)),
    case("32 client CAs", ("spec.gateway.clientCAs", client_cas(32)), warnings=("spec.gateway.clientCAs",)),
    case("CA bundle", ("spec.gateway.clientCAs", [{"name": "gw", "certificate": CERTIFICATE + SECOND_CERTIFICATE}]),
         warnings=("spec.gateway.clientCAs",)),
    case("client CA name 240", ("spec.gateway.clientCAs", [{"name": "g" * 240, "certificate": CERTIFICATE}]),
         warnings=("spec.gateway.clientCAs",)),
    case("client CA with hostname", ("spec.gateway.hostname", "gw.example.com"),
         ("spec.gateway.clientCAs", client_cas(1))),
    case("driver root gke", ("spec.nvidiaDriverRoot", "/home/kubernetes/bin/nvidia")),
    case("driver root 512", ("spec.nvidiaDriverRoot", "/" + "d" * 511)),
    case("driver root empty means /", ("spec.nvidiaDriverRoot", "")),
    case("versions without v", ("spec.versions.certManager", "1.21.1")),
    case("version 32 chars", ("spec.versions.certManager", "v1.21.1-" + "a" * 24)),
    case("version with build", ("spec.versions.prometheus", "72.6.2+build.5")),
    case("envoy gateway v1.8.1", ("spec.versions.envoyGateway", "v1.8.1")),
    case("envoy gateway v1.8.0 with a warning", ("spec.versions.envoyGateway", "v1.8.0"),
         warnings=("spec.versions.envoyGateway",)),
    case("envoy gateway v1.8.1-rc.1 with a warning", ("spec.versions.envoyGateway", "v1.8.1-rc.1"),
         warnings=("spec.versions.envoyGateway",)),
    case("envoy gateway v1.8.12", ("spec.versions.envoyGateway", "1.8.12")),
    case("grove rc2", ("spec.stack", "Dynamo"), ("spec.dynamo.grove", "v0.1.0-alpha.12-rc2")),
    case("grove alpha.12", ("spec.stack", "Dynamo"), ("spec.dynamo.grove", "v0.1.0-alpha.12")),
    case("grove alpha.13", ("spec.stack", "Dynamo"), ("spec.dynamo.grove", "v0.1.0-alpha.13")),
    case("grove release", ("spec.stack", "Dynamo"), ("spec.dynamo.grove", "v0.1.0")),
    case("all pins", ("spec.versions", {"certManager": "v1.21.1", "envoyGateway": "v1.8.4",
                                        "nodeFeatureDiscovery": "0.18.3", "nvidiaDraDriver": "0.4.0",
                                        "prometheus": "72.6.2", "trustManager": "v0.24.0"})),
    case("dynamo pins ignored on standard", ("spec.dynamo", {"grove": "v0.1.0-alpha.11", "kaiScheduler": "main"}),
         warnings=("spec.dynamo.grove", "spec.dynamo.kaiScheduler")),
    case("standard pin ignored on dynamo", ("spec.stack", "Dynamo"), ("spec.standard.leaderWorkerSet", "latest"),
         warnings=("spec.standard.leaderWorkerSet",)),
    case("null gateway is absent", ("spec.gateway", None)),
    case("status", ("status", {"gateway": {"address": "a" * 256, "caCertificate": CERTIFICATE}})),
    case("status empty", ("status", {})),
    case("labels", ("metadata.labels", {"team": "inference"})),
    # The API server decodes a null label or annotation value into ObjectMeta's string maps as "".
    case("null label and annotation values", ("metadata.labels", {"team": None}),
         ("metadata.annotations", {"a": None})),
    case("labels prefixed and empty", ("metadata.labels", {"example.com/team": "in-ference_1.2", "tier": ""}),
         ("metadata.annotations", {"Example.com/Note": "x y\n" * 100})),
]

INVALID = [
    # stack
    case("stack enum", ("spec.stack", "Dynamic"), path="spec.stack",
         fragment='"Dynamic" is not one of Standard, Dynamo'),
    case("stack type", ("spec.stack", 1), path="spec.stack", fragment="1 is an integer, not a string"),
    case("stack lowercase", ("spec.stack", "dynamo"), path="spec.stack", fragment="not one of Standard, Dynamo"),
    # unknown fields at every level
    case("unknown root", ("specs", {}), path="specs", fragment='unknown field (did you mean "spec"?)'),
    case("unknown spec", ("spec.gatway", {}), path="spec.gatway", fragment='unknown field (did you mean "gateway"?)'),
    case("unknown gateway", ("spec.gateway.tls", {}), path="spec.gateway.tls", fragment="unknown field"),
    case("unknown listener", ("spec.gateway.listeners[0].hostname", "x.io"),
         path="spec.gateway.listeners[0].hostname", fragment="unknown field"),
    case("unknown versions", ("spec.versions.certmanager", "v1.21.1"), path="spec.versions.certmanager",
         fragment='did you mean "certManager"?'),
    case("unknown standard", ("spec.standard.lws", "v0.8.0"), path="spec.standard.lws", fragment="unknown field"),
    case("unknown dynamo", ("spec.dynamo.grov", "v0.1.0"), path="spec.dynamo.grov", fragment="unknown field"),
    case("unknown secret", ("spec.secrets[0].value", "x"), path="spec.secrets[0].value", fragment="unknown field"),
    case("unknown client CA", ("spec.gateway.clientCAs", [{"name": "a", "certificate": CERTIFICATE, "key": "x"}]),
         path="spec.gateway.clientCAs[0].key", fragment="unknown field"),
    # spec shape
    case("spec missing", ("spec", DELETE), path="spec", fragment="required field is missing"),
    case("spec null", ("spec", None), path="spec", fragment="required field is missing"),
    case("spec list", ("spec", []), path="spec", fragment="expected a mapping, got a list"),
    case("gateway list", ("spec.gateway", []), path="spec.gateway", fragment="expected a mapping, got a list"),
    case("versions string", ("spec.versions", "v1"), path="spec.versions", fragment='"v1" is a string, not a mapping'),
    # secrets
    case("secrets missing", ("spec.secrets", DELETE), path="spec.secrets", fragment="required field is missing"),
    case("secrets empty", ("spec.secrets", []), path="spec.secrets", fragment="has 0 items, below the minimum 1"),
    case("secrets 9", ("spec.secrets", [KUBECONFIG] + [GOOGLE] * 8), path="spec.secrets",
         fragment="has 9 items, above the maximum 8"),
    case("secrets mapping", ("spec.secrets", KUBECONFIG), path="spec.secrets",
         fragment="expected a list, got a mapping"),
    case("secret type enum", ("spec.secrets[0].type", "kubeconfig"), path="spec.secrets[0].type",
         fragment='"kubeconfig" is not one of Kubeconfig, GoogleApplicationCredentials, AWSWebIdentityCredentials, '
         "NebiusServiceAccountCredentials"),
    case("secret type missing", ("spec.secrets[0].type", DELETE), path="spec.secrets[0].type",
         fragment="required field is missing"),
    case("secret name missing", ("spec.secrets[0].name", DELETE), path="spec.secrets[0].name",
         fragment="required field is missing"),
    case("secret key missing", ("spec.secrets[0].key", DELETE), path="spec.secrets[0].key",
         fragment="required field is missing"),
    case("secret name 254", ("spec.secrets[0].name", "a" * 254), path="spec.secrets[0].name",
         fragment="is 254 characters long, above the maximum length 253"),
    case("secret name empty", ("spec.secrets[0].name", ""), path="spec.secrets[0].name",
         fragment='"" is not a DNS-1123 subdomain'),
    case("secret name upper", ("spec.secrets[0].name", "West"), path="spec.secrets[0].name",
         fragment="(a Secret name)"),
    case("secret name int", ("spec.secrets[0].name", 5), path="spec.secrets[0].name",
         fragment='5 is an integer, not a string (quote it in YAML: "5")'),
    case("secret key 254", ("spec.secrets[0].key", "k" * 254), path="spec.secrets[0].key",
         fragment="above the maximum length 253"),
    case("secret key slash", ("spec.secrets[0].key", "a/b"), path="spec.secrets[0].key",
         fragment="is not a Secret data key"),
    case("secret key empty", ("spec.secrets[0].key", ""), path="spec.secrets[0].key",
         fragment="is not a Secret data key"),
    case("secret namespace 254", ("spec.secrets[0].namespace", "n" * 254), path="spec.secrets[0].namespace",
         fragment="above the maximum length 253"),
    case("secret namespace 64", ("spec.secrets[0].namespace", "n" * 64), path="spec.secrets[0].namespace",
         fragment="is not a DNS-1123 label"),
    case("secret namespace dotted", ("spec.secrets[0].namespace", "a.b"), path="spec.secrets[0].namespace",
         fragment="(a namespace name)"),
    case("secret item string", ("spec.secrets[1]", "sa"), path="spec.secrets[1]",
         fragment='"sa" is a string, not a mapping'),
    # listeners
    case("port 0", ("spec.gateway.listeners[0].port", 0), path="spec.gateway.listeners[0].port",
         fragment="0 is below the minimum 1"),
    case("port 65536", ("spec.gateway.listeners[0].port", 65536), path="spec.gateway.listeners[0].port",
         fragment="65536 is above the maximum 65535"),
    case("port 70000 second", ("spec.gateway.listeners[1]", {"name": "big", "port": 70000, "protocol": "HTTP"}),
         path="spec.gateway.listeners[1].port", fragment="70000 is above the maximum 65535"),
    case("port negative", ("spec.gateway.listeners[0].port", -80), path="spec.gateway.listeners[0].port",
         fragment="-80 is below the minimum 1"),
    case("port string", ("spec.gateway.listeners[0].port", "80"), path="spec.gateway.listeners[0].port",
         fragment='"80" is a string, not an integer'),
    case("port bool", ("spec.gateway.listeners[0].port", True), path="spec.gateway.listeners[0].port",
         fragment="true is a boolean, not an integer"),
    case("port fraction", ("spec.gateway.listeners[0].port", 80.5), path="spec.gateway.listeners[0].port",
         fragment="80.5 is a number, not an integer"),
    case("protocol UDP", ("spec.gateway.listeners[0].protocol", "UDP"), path="spec.gateway.listeners[0].protocol",
         fragment='"UDP" is not one of HTTP, TCP'),
    case("protocol HTTPS", ("spec.gateway.listeners[0].protocol", "HTTPS"),
         path="spec.gateway.listeners[0].protocol", fragment="is not one of HTTP, TCP"),
    case("protocol lowercase", ("spec.gateway.listeners[0].protocol", "http"),
         path="spec.gateway.listeners[0].protocol", fragment="is not one of HTTP, TCP"),
    case("listener name empty", ("spec.gateway.listeners[0].name", ""), path="spec.gateway.listeners[0].name",
         fragment="below the minimum length 1"),
    case("listener name 64", ("spec.gateway.listeners[0].name", "a" * 64), path="spec.gateway.listeners[0].name",
         fragment="above the maximum length 63"),
    case("listener name underscore", ("spec.gateway.listeners[0].name", "web_1"),
         path="spec.gateway.listeners[0].name", fragment='"web_1" is not a Gateway API SectionName'),
    case("listener name dash", ("spec.gateway.listeners[0].name", "-web"), path="spec.gateway.listeners[0].name",
         fragment="is not a Gateway API SectionName"),
    case("listener name upper", ("spec.gateway.listeners[0].name", "HTTP"), path="spec.gateway.listeners[0].name",
         fragment="is not a Gateway API SectionName"),
    case("listener port missing", ("spec.gateway.listeners[0].port", DELETE), path="spec.gateway.listeners[0].port",
         fragment="required field is missing"),
    case("listener name missing", ("spec.gateway.listeners[0].name", DELETE), path="spec.gateway.listeners[0].name",
         fragment="required field is missing"),
    case("listener protocol missing", ("spec.gateway.listeners[0].protocol", DELETE),
         path="spec.gateway.listeners[0].protocol", fragment="required field is missing"),
    case("9 listeners", ("spec.gateway.listeners", listeners(9)), path="spec.gateway.listeners",
         fragment="has 9 items, above the maximum 8"),
    case("duplicate listener names", ("spec.gateway.listeners[1]", dict(HTTP, port=8080)),
         path="spec.gateway.listeners[1].name", fragment='"http" is already used by spec.gateway.listeners[0].name'),
    case("listeners mapping", ("spec.gateway.listeners", HTTP), path="spec.gateway.listeners",
         fragment="expected a list, got a mapping"),
    # className
    case("class name empty", ("spec.gateway.className", ""), path="spec.gateway.className",
         fragment="below the minimum length 1"),
    case("class name 64", ("spec.gateway.className", "c" * 64), path="spec.gateway.className",
         fragment="above the maximum length 63"),
    case("class name upper", ("spec.gateway.className", "Envoy"), path="spec.gateway.className",
         fragment="(a GatewayClass name)"),
    # clientCAs
    case("33 client CAs", ("spec.gateway.clientCAs", client_cas(33)), path="spec.gateway.clientCAs",
         fragment="has 33 items, above the maximum 32"),
    case("client CA empty certificate", ("spec.gateway.clientCAs", [{"name": "a", "certificate": ""}]),
         path="spec.gateway.clientCAs[0].certificate", fragment="the value is 0 characters long, below the minimum"),
    case("client CA certificate 16385", ("spec.gateway.clientCAs", [{"name": "a", "certificate": "A" * 16385}]),
         path="spec.gateway.clientCAs[0].certificate", fragment="above the maximum length 16384"),
    case("client CA certificate missing", ("spec.gateway.clientCAs", [{"name": "a"}]),
         path="spec.gateway.clientCAs[0].certificate", fragment="required field is missing"),
    case("client CA name missing", ("spec.gateway.clientCAs", [{"certificate": CERTIFICATE}]),
         path="spec.gateway.clientCAs[0].name", fragment="required field is missing"),
    case("client CA name empty", ("spec.gateway.clientCAs", [{"name": "", "certificate": CERTIFICATE}]),
         path="spec.gateway.clientCAs[0].name", fragment="below the minimum length 1"),
    case("client CA name 254", ("spec.gateway.clientCAs", [{"name": "g" * 254, "certificate": CERTIFICATE}]),
         path="spec.gateway.clientCAs[0].name", fragment="above the maximum length 253"),
    case("client CA name upper", ("spec.gateway.clientCAs", [{"name": "West", "certificate": CERTIFICATE}]),
         path="spec.gateway.clientCAs[0].name", fragment="(an InferenceGateway name)"),
    case("duplicate client CA names", ("spec.gateway.clientCAs", client_cas(1) * 2),
         path="spec.gateway.clientCAs[1].name", fragment='"gw-0" is already used by spec.gateway.clientCAs[0].name'),
    # hostname
    case("hostname empty", ("spec.gateway.hostname", ""), path="spec.gateway.hostname",
         fragment="below the minimum length 1"),
    case("hostname 254", ("spec.gateway.hostname", "a" * 254), path="spec.gateway.hostname",
         fragment="above the maximum length 253"),
    case("hostname upper", ("spec.gateway.hostname", "GW.example.com"), path="spec.gateway.hostname",
         fragment="is not a Gateway API Hostname"),
    case("hostname trailing dot", ("spec.gateway.hostname", "gw.example.com."), path="spec.gateway.hostname",
         fragment="is not a Gateway API Hostname"),
    case("hostname port", ("spec.gateway.hostname", "gw.example.com:443"), path="spec.gateway.hostname",
         fragment="is not a Gateway API Hostname"),
    case("hostname bare wildcard", ("spec.gateway.hostname", "*"), path="spec.gateway.hostname",
         fragment="is not a Gateway API Hostname"),
    case("hostname inner wildcard", ("spec.gateway.hostname", "gw.*.example.com"), path="spec.gateway.hostname",
         fragment="is not a Gateway API Hostname"),
    case("hostname url", ("spec.gateway.hostname", "https://gw.example.com"), path="spec.gateway.hostname",
         fragment="is not a Gateway API Hostname"),
    # nvidiaDriverRoot
    case("driver root 513", ("spec.nvidiaDriverRoot", "/" + "d" * 512), path="spec.nvidiaDriverRoot",
         fragment="is 513 characters long, above the maximum length 512"),
    case("driver root relative", ("spec.nvidiaDriverRoot", "home/nvidia"), path="spec.nvidiaDriverRoot",
         fragment="is not an absolute host path"),
    # A pattern's $ is Go's (the API server's): the end of the text, not before a final newline as in Python.
    case("driver root newline", ("spec.nvidiaDriverRoot", "\n"), path="spec.nvidiaDriverRoot",
         fragment="is not an absolute host path"),
    case("secret name trailing newline", ("spec.secrets[0].name", "kc\n"), path="spec.secrets[0].name",
         fragment="is not a DNS-1123 subdomain"),
    case("version trailing newline", ("spec.versions.certManager", "v1.21.1\n"), path="spec.versions.certManager",
         fragment="is not a semantic version"),
    # versions (1-32 chars, semver)
    *[
        case(f"{key} empty", (f"spec.versions.{key}", ""), path=f"spec.versions.{key}",
             fragment="below the minimum length 1")
        for key in ("certManager", "envoyGateway", "nodeFeatureDiscovery", "nvidiaDraDriver", "prometheus",
                    "trustManager")
    ],
    *[
        case(f"{key} 33", (f"spec.versions.{key}", "v1.8.4-" + "a" * 26), path=f"spec.versions.{key}",
             fragment="is 33 characters long, above the maximum length 32")
        for key in ("certManager", "envoyGateway", "nodeFeatureDiscovery", "nvidiaDraDriver", "prometheus",
                    "trustManager")
    ],
    case("version float", ("spec.versions.nodeFeatureDiscovery", 0.18), path="spec.versions.nodeFeatureDiscovery",
         fragment='0.18 is a number, not a string (quote it in YAML: "0.18")'),
    case("version latest", ("spec.versions.prometheus", "latest"), path="spec.versions.prometheus",
         fragment='"latest" is not a semantic version'),
    case("version two parts", ("spec.versions.envoyGateway", "v1.8"), path="spec.versions.envoyGateway",
         fragment="is not a semantic version"),
    case("version leading zero", ("spec.versions.certManager", "v1.021.1"), path="spec.versions.certManager",
         fragment="is not a semantic version"),
    case("version V prefix", ("spec.versions.certManager", "V1.21.1"), path="spec.versions.certManager",
         fragment="is not a semantic version"),
    # standard / dynamo pins: type and length always, even when ignored
    case("lws empty", ("spec.standard.leaderWorkerSet", ""), path="spec.standard.leaderWorkerSet",
         fragment="below the minimum length 1"),
    case("lws 33", ("spec.standard.leaderWorkerSet", "v" * 33), path="spec.standard.leaderWorkerSet",
         fragment="above the maximum length 32"),
    case("lws int", ("spec.standard.leaderWorkerSet", 8), path="spec.standard.leaderWorkerSet",
         fragment="8 is an integer, not a string"),
    case("ignored grove 33", ("spec.dynamo.grove", "g" * 33), path="spec.dynamo.grove",
         fragment="above the maximum length 32"),
    case("ignored kai empty", ("spec.dynamo.kaiScheduler", ""), path="spec.dynamo.kaiScheduler",
         fragment="below the minimum length 1"),
    case("ignored modelexpress float", ("spec.dynamo.modelExpress", 0.4), path="spec.dynamo.modelExpress",
         fragment="0.4 is a number, not a string"),
    case("ignored lws 33 on dynamo", ("spec.stack", "Dynamo"), ("spec.standard.leaderWorkerSet", "v" * 33),
         path="spec.standard.leaderWorkerSet", fragment="above the maximum length 32"),

    # CEL rules (x-kubernetes-validations): the API server evaluates them after defaulting
    case("no kubeconfig", ("spec.secrets", [GOOGLE]), path="spec.secrets",
         fragment="has no Kubeconfig secret; exactly one secret must have type Kubeconfig"),
    case("two kubeconfigs", ("spec.secrets", [KUBECONFIG, dict(KUBECONFIG, name="kc2")]), path="spec.secrets",
         fragment="has more than one Kubeconfig secret; exactly one secret must have type Kubeconfig"),
    case("two identities", ("spec.secrets", [KUBECONFIG, GOOGLE, AWS]), path="spec.secrets",
         fragment="has more than one cloud identity secret; at most one is allowed"),
    case("same port HTTP and TCP", ("spec.gateway.listeners[1]", {"name": "raw", "port": 80, "protocol": "TCP"}),
         path="spec.gateway.listeners", fragment="has two listeners on one port; each listener needs its own port"),
    case("same port same protocol", ("spec.gateway.listeners[1]", {"name": "web", "port": 80, "protocol": "HTTP"}),
         path="spec.gateway.listeners", fragment="Gateway API treats listeners sharing a port as conflicted"),
    case("listener named https with hostname", ("spec.gateway.hostname", "gw.example.com"),
         ("spec.gateway.listeners[1]", {"name": "https", "port": 8443, "protocol": "HTTP"}),
         path="spec.gateway.listeners",
         fragment="has a listener named https or on port 443, the name and port of the HTTPS listener the "
         "envoy_gateway role adds to the Gateway when spec.gateway.hostname is set"),
    case("listener on 443 with hostname", ("spec.gateway.hostname", "gw.example.com"),
         ("spec.gateway.listeners[0].port", 443), path="spec.gateway.listeners",
         fragment="has a listener named https or on port 443"),
    case("client CA name 241", ("spec.gateway.clientCAs", [{"name": "g" * 241, "certificate": CERTIFICATE}]),
         path="spec.gateway.clientCAs[0].name",
         fragment="is longer than 240 characters, the most for a client CA: the envoy_gateway role stores it in a "
         "ConfigMap named mp-client-ca-<name>"),
    case("client CA name 253", ("spec.gateway.clientCAs", [*client_cas(1), {"name": "g" * 253,
                                                                            "certificate": CERTIFICATE}]),
         path="spec.gateway.clientCAs[1].name", fragment="is longer than 240 characters, the most for a client CA"),
    case("private key pasted", ("spec.gateway.clientCAs", [{"name": "gw", "certificate": PRIVATE_KEY}]),
         path="spec.gateway.clientCAs[0].certificate", fragment="a private key was pasted here"),
    case("key after certificate", ("spec.gateway.clientCAs", ca(CERTIFICATE + PRIVATE_KEY)),
         path="spec.gateway.clientCAs[0].certificate", fragment="a private key was pasted here"),
    case("hostname IP", ("spec.gateway.hostname", "10.0.0.1"), path="spec.gateway.hostname",
         fragment='"10.0.0.1" is an IP address'),
    case("hostname label over 63", ("spec.gateway.hostname", "a" * 64 + ".example.com"), path="spec.gateway.hostname",
         fragment="has a label longer than 63 characters"),
    case("envoy gateway v1.9.0", ("spec.versions.envoyGateway", "v1.9.0"), path="spec.versions.envoyGateway",
         fragment="v1.9.x is out of range until the AI Gateway release that pairs with it"),
    case("envoy gateway v1.8.0-rc.1", ("spec.versions.envoyGateway", "v1.8.0-rc.1"), path="spec.versions.envoyGateway",
         fragment="must be a v1.8.x Envoy Gateway release, v1.8.0 or later"),
    case("envoy gateway v1.7.5", ("spec.versions.envoyGateway", "v1.7.5"), path="spec.versions.envoyGateway",
         fragment="Envoy AI Gateway v1.1.x"),
    case("envoy gateway v1.7.9", ("spec.versions.envoyGateway", "v1.7.9"), path="spec.versions.envoyGateway",
         fragment="is out of range"),
    case("envoy gateway v2.8.4", ("spec.versions.envoyGateway", "v2.8.4"), path="spec.versions.envoyGateway",
         fragment="is out of range"),
    # the pins of the stack in use are semantic versions (the other stack's are ignored)
    case("grove latest", ("spec.stack", "Dynamo"), ("spec.dynamo.grove", "latest"), path="spec.dynamo.grove",
         fragment='"latest" is not a semantic version'),
    case("kai main", ("spec.stack", "Dynamo"), ("spec.dynamo.kaiScheduler", "main"), path="spec.dynamo.kaiScheduler",
         fragment="is not a semantic version"),
    case("modelexpress latest", ("spec.stack", "Dynamo"), ("spec.dynamo.modelExpress", "latest"),
         path="spec.dynamo.modelExpress", fragment="is not a semantic version"),
    case("lws latest", ("spec.standard.leaderWorkerSet", "latest"), path="spec.standard.leaderWorkerSet",
         fragment="is not a semantic version"),
    case("pin in use trailing newline", ("spec.standard.leaderWorkerSet", "v0.8.0\n"),
         path="spec.standard.leaderWorkerSet", fragment="is not a semantic version"),
]

MODULE_ONLY = [
    # PYTHON_ONLY_RULES (plugins/module_utils/servingstack/spec.py): no CEL rule can state them
    case("not PEM", ("spec.gateway.clientCAs", [{"name": "gw", "certificate": "MIIBkTCB+wIJAK"}]),
         path="spec.gateway.clientCAs[0].certificate", fragment="is not PEM", why="PEM"),
    case("PEM garbage", ("spec.gateway.clientCAs", ca(GARBAGE)),
         path="spec.gateway.clientCAs[0].certificate", fragment="does not parse as an X.509 certificate", why="PEM"),
    case("PEM public key", ("spec.gateway.clientCAs", ca(PUBLIC_KEY)),
         path="spec.gateway.clientCAs[0].certificate", fragment="contains a PEM PUBLIC KEY block", why="PEM"),
    case("PEM truncated", ("spec.gateway.clientCAs", [{"name": "gw", "certificate": CERTIFICATE[:-30]}]),
         path="spec.gateway.clientCAs[0].certificate", fragment="without its matching", why="PEM"),
    case("grove rc1", ("spec.stack", "Dynamo"), ("spec.dynamo.grove", "v0.1.0-alpha.12-rc1"), path="spec.dynamo.grove",
         fragment="grove#753", why="release order"),
    case("grove alpha.11", ("spec.stack", "Dynamo"), ("spec.dynamo.grove", "v0.1.0-alpha.11"), path="spec.dynamo.grove",
         fragment="is older than v0.1.0-alpha.12-rc2 in release order", why="release order"),
    # what the API server checks on every object, not a CRD
    case("apiVersion", ("apiVersion", "infrastructure.modelplane.ai/v1"), path="apiVersion",
         fragment='"infrastructure.modelplane.ai/v1" is not infrastructure.modelplane.ai/v1alpha1',
         why="the API server routes by apiVersion"),
    case("kind", ("kind", "ServingStacks"), path="kind", fragment="is not ServingStack",
         why="the API server routes by kind"),
    case("metadata name", ("metadata.name", "West_GKE"), path="metadata.name",
         fragment='"West_GKE" is not a DNS-1123 subdomain (an object name)', why="the API server validates ObjectMeta"),
    case("metadata name missing", ("metadata.name", DELETE), path="metadata.name",
         fragment="required field is missing", why="the API server validates ObjectMeta"),
    case("metadata namespace", ("metadata.namespace", "Platform"), path="metadata.namespace",
         fragment="is not a DNS-1123 label", why="the API server validates ObjectMeta"),
    case("metadata unknown", ("metadata.lables", {}), path="metadata.lables",
         fragment='unknown field (did you mean "labels"?)', why="the API server validates ObjectMeta"),
    case("metadata name trailing newline", ("metadata.name", "west\n"), path="metadata.name",
         fragment="is not a DNS-1123 subdomain", why="the API server validates ObjectMeta"),
    case("label key", ("metadata.labels", {"a/b/c": "v"}), path="metadata.labels.a/b/c",
         fragment="(a label key)", why="the API server validates ObjectMeta"),
    case("label value", ("metadata.labels", {"team": "x y"}), path="metadata.labels.team",
         fragment='"x y" is not a label value', why="the API server validates ObjectMeta"),
    case("annotation key", ("metadata.annotations", {"-note": "v"}), path="metadata.annotations.-note",
         fragment="(an annotation key)", why="the API server validates ObjectMeta"),
]

CONDITIONS = [{"type": "Ready", "status": "True", "reason": "Available", "lastTransitionTime": "2026-01-01T00:00:00Z"}]
CROSSPLANE_V2 = {"compositionRef": {"name": "servingstack"}, "compositionRevisionRef": {"name": "servingstack-1a2b"},
                 "compositionUpdatePolicy": "Automatic", "resourceRefs": [{"apiVersion": "v1", "kind": "Secret",
                                                                          "name": "x"}]}
LEGACY_XR = {
    "compositionRef": {"name": "servingstack"},
    "compositionSelector": {"matchLabels": {"provider": "gcp"}},
    "compositionRevisionRef": {"name": "servingstack-1a2b"},
    "compositionRevisionSelector": {"matchLabels": {"channel": "stable"}},
    "compositionUpdatePolicy": "Manual",
    "resourceRefs": [{"apiVersion": "v1", "kind": "Secret", "name": "x"}],
    "writeConnectionSecretToRef": {"name": "conn", "namespace": "crossplane-system"},
    "publishConnectionDetailsTo": {"name": "conn", "configRef": {"name": "default"}},
    "claimRef": {"apiVersion": "infrastructure.modelplane.ai/v1alpha1", "kind": "ServingStack", "namespace": "platform",
                 "name": "west"},
    "environmentConfigRefs": [{"apiVersion": "apiextensions.crossplane.io/v1alpha1", "kind": "EnvironmentConfig",
                               "name": "env"}],
}

IGNORED = [
    case("crossplane status", ("status", {"conditions": CONDITIONS, "connectionDetails": {}})),
    case("status unknown field", ("status", {"address": "x"})),
    case("status address 257", ("status", {"gateway": {"address": "a" * 257}})),
    case("status CA 16385", ("status", {"gateway": {"caCertificate": "A" * 16385}})),
    case("status not a mapping", ("status", "Ready")),
    case("crossplane v2 spec.crossplane", ("spec.crossplane", CROSSPLANE_V2), dropped=("crossplane",)),
    case("crossplane v2 odd spec.crossplane", ("spec.crossplane", "anything"), dropped=("crossplane",)),
    *[case(f"legacy XR spec.{key}", (f"spec.{key}", value), dropped=(key,)) for key, value in LEGACY_XR.items()],
    case("legacy XR all fields", *[(f"spec.{key}", value) for key, value in LEGACY_XR.items()],
         ("status", {"conditions": CONDITIONS}), dropped=tuple(LEGACY_XR)),
    case("live metadata", ("metadata.uid", "5d1c"), ("metadata.resourceVersion", "42"), ("metadata.generation", 3),
         ("metadata.managedFields", [{"manager": "crossplane", "operation": "Apply"}]),
         ("metadata.finalizers", ["composite.apiextensions.crossplane.io"]),
         ("metadata.ownerReferences", [{"apiVersion": "v1", "kind": "X", "name": "x", "uid": "1"}])),
]
