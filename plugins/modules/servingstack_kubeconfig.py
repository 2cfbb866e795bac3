#!/usr/bin/python
# Copyright 2026 The modelplane.serving authors
# Apache License 2.0 (see LICENSE)
"""Connect a ServingStack converge to its target cluster: its kubeconfig, cloud identity and connection options."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: servingstack_kubeconfig
short_description: Connect a ServingStack converge to its target cluster, and only to it
version_added: 0.1.0
author:
  - Modelplane engineers (@modelplaneai)
description:
  - Gives the target cluster's kubeconfig (written with mode C(0600) into O(dest), or O(src) as it is) and every
    authentication option of the C(kubernetes.core) modules set explicitly from it, for C(module_defaults), with the
    task C(environment) that goes with them. It runs on the task's host, for the C(servingstack) role the controller,
    where the converge's C(kubernetes.core) tasks run and read these files.
  - With O(spec), the kubeconfig and the cloud identity's credential come from the Secrets its C(secrets) name (the
    C(Kubeconfig) entry, and the first other entry, if any, as the cloud identity), read from the management cluster
    the connection options (or their C(K8S_AUTH_*) variables) reach; they never name the target.
  - "Every problem is reported at once as C(<path>: <problem>), naming the Secret and key and never their data: an
    entry that names no Secret (no C(Kubeconfig) entry, or one without its C(name), C(key) or namespace) before any
    read; then a Secret not on the management cluster, a missing key, a value that is not base64-encoded UTF-8 text,
    a kubeconfig without clusters or without a current context, before anything is written."
  - With O(content), that kubeconfig text is written instead, authenticated as O(identity_type) with
    O(identity_credential) if given; with O(src), that file is used in place. Neither reads a cluster.
  - The C(K8S_AUTH_*) variables (what AWX injects for its Kubernetes credential, for the management cluster) take
    the place of every option a C(kubernetes.core) task leaves out (V(null)), so a converge meant for a workload
    cluster would reach the management cluster. Each option is therefore given, empty where the kubeconfig has none.
    Inline certificate data (C(certificate-authority-data), C(client-certificate-data), C(client-key-data)) is
    written to C(0600) files in O(dest), since the modules take paths.
  - With a cloud identity, the current context's user (its embedded credentials) is replaced by a kubeconfig C(exec)
    credential plugin that hands out a bearer token minted from the credential, as the ServingStack reference says.
    The credential's shape is checked first (naming the field, before any network call), then one token is minted,
    so a wrong key fails here with a clear message rather than in the first component.
  - "Token refresh: the plugin is the collection's own C(cloud_identity) module_utils file, written with a C(0600)
    C(config.json) (the parsed credential) and a C(token.json) cache into a private C(0700) directory
    C(<dest>/identity) (RV(identity_dir)), and run as C(<python> <dir>/plugin.py <dir>/config.json): nothing secret
    in argv or the environment. kubernetes.core and helm run it when they load the kubeconfig and when the token's
    C(expirationTimestamp) passes; it mints a new token when the cached one has less than five minutes left, so runs
    longer than a token's lifetime keep working."
  - C(GoogleApplicationCredentials) takes a Google service-account key (JSON; google-auth exchanges a signed JWT for
    an OAuth 2.0 access token at the key's C(token_uri), RFC 7523) or an C(authorized_user) credential (refresh-token
    grant at its C(token_uri)), with the cloud-platform and userinfo.email scopes. Other types (C(external_account),
    C(impersonated_service_account)) are refused naming the type.
  - C(AWSWebIdentityCredentials) takes a JSON object with C(roleARN) and C(webIdentityToken) (optional
    C(roleSessionName), C(region), C(stsEndpoint), C(clusterName)). STS C(AssumeRoleWithWebIdentity) gives temporary
    credentials; the token is an EKS token, C(k8s-aws-v1.) and the base64url SigV4-presigned C(GetCallerIdentity)
    URL with the signed header C(x-k8s-aws-id) set to the cluster name (C(clusterName), else the current context's
    cluster name, the last segment of an EKS cluster ARN), as C(aws eks get-token) makes it with botocore. The region
    is C(region), else the cluster ARN's, else the EKS endpoint's, else C(us-east-1); STS is C(stsEndpoint), else
    botocore's endpoint for the region.
  - C(NebiusServiceAccountCredentials) takes the Nebius CLI's credentials JSON (C(subject-credentials) with C(alg)
    RS256, C(private-key), C(kid), C(iss), C(sub)) or provider-nebius's (C(private_key), C(public_key_id),
    C(account_id)); a JWT (RS256, C(kid), C(iss) = C(sub) the account, C(aud) C(token-service.iam.new.nebiuscloud.net),
    one minute) is exchanged for an access token with the RFC 8693 token-exchange form at
    C(https://auth.nebius.com/oauth2/token/exchange) (C(tokenEndpoint) beside it overrides).
  - Endpoints are HTTPS only, with certificate verification (O(ca_file), else the system's trust store, which
    C(SSL_CERT_FILE) overrides). C(token_uri), C(stsEndpoint) and C(tokenEndpoint) in the credential point them
    elsewhere, for private clouds and tests; they default to the real ones.
  - Neither the kubeconfig, the credential nor the token is ever logged; the returned options hold the kubeconfig's
    static token, if it has one, so register the result with C(no_log).
options:
  spec:
    description:
      - The ServingStack's C(spec), as M(modelplane.serving.servingstack_spec) returns it, whose C(secrets) name the
        Secrets to read from the management cluster.
      - Exactly one of O(spec), O(content) and O(src) is required.
    type: dict
  namespace:
    description:
      - The ServingStack's namespace, the namespace of an entry of C(spec.secrets) that names none
        (M(modelplane.serving.servingstack_spec) fills each entry's in already). Only with O(spec).
    type: str
  content:
    description:
      - The kubeconfig text to write, instead of reading it with O(spec).
    type: str
  src:
    description:
      - Path of the target cluster's kubeconfig, used in place (not copied), instead of reading one with O(spec).
    type: path
  dest:
    description:
      - An existing private directory for the files (the kubeconfig, the cloud identity's, the certificates').
      - Not set, a new one only its owner can enter (mode C(0700)) is made in the controller's temporary directory
        (C(TMPDIR)), named C(*.servingstack), and returned as RV(dest); the caller removes it when the converge ends.
        It records the run's ansible-playbook process (C(owner.json)). The directories of this user that runs killed
        before they could remove theirs are removed first, once their ansible-playbook is gone (see
        C(docs/interrupted-runs.md)).
    type: path
  identity_type:
    description:
      - The type of the cloud identity to authenticate as, if any. Only with O(content); with O(spec), the identity
        entry of C(spec.secrets) gives it.
    type: str
    choices: [GoogleApplicationCredentials, AWSWebIdentityCredentials, NebiusServiceAccountCredentials]
  identity_credential:
    description: The cloud identity's credential data. Only with O(content); required with O(identity_type).
    type: str
  identity_path:
    description:
      - Where the identity came from, used in messages (for example C(spec.secrets[1])); C(spec.secrets) when not
        set. Only with O(content); with O(spec), messages name the identity entry's own path.
    type: str
  ca_file:
    description: CA bundle to verify the token endpoints (Google, STS, Nebius IAM) with, instead of the system's.
    type: path
extends_documentation_fragment:
  - modelplane.serving.kubernetes_auth
  - modelplane.serving.management_cluster
attributes:
  check_mode:
    support: full
    description: >-
      Reads the Secrets and writes the files in check mode too: they are private files on the controller that the
      following read-only tasks need, not a change to any cluster.
  diff_mode:
    support: none
    description: The content is secret, so no diff is shown.
notes:
  - Never reports a change, like a temporary file a run makes and removes. Removing RV(dest) removes every file it
    wrote (the servingstack role does so in an C(always) block, with M(ansible.builtin.file)).
  - The plugin runs with the Python interpreter that ran this module, so that interpreter must stay available while
    the kubeconfig is used (the controller's, with C(connection=local)).
  - C(kubernetes.core.helm) refuses a C(context) together with C(ca_cert) or C(validate_certs), so RV(helm) leaves
    out C(context) and gives an empty C(ca_cert) and a true C(validate_certs) (helm then follows the kubeconfig's
    current context), and RV(environment) sets C(HELM_KUBECONTEXT) and clears the other C(HELM_KUBE*) variables.
  - With a static token and a server both given, C(kubernetes.core.k8s) does not read the kubeconfig at all, so a
    kubeconfig's C(tls-server-name) is not used then.
requirements:
  - PyYAML
  - kubernetes >= 24.2.0 (only to read the Secrets, with O(spec))
  - cryptography (checks the RSA keys of Google service-account keys and Nebius service accounts)
  - google-auth (Google access tokens; signs the Nebius JWT)
  - botocore (STS C(AssumeRoleWithWebIdentity) and the SigV4-presigned EKS token for C(AWSWebIdentityCredentials))
  - requests (the Nebius token exchange; google-auth's transport)
"""

EXAMPLES = r"""
- name: Validate the live ServingStack.
  modelplane.serving.servingstack_spec:
    name: west-gke-stack
    namespace: platform
  register: servingstack

- name: Connect to its target cluster, authenticated as its cloud identity if it has one.
  modelplane.serving.servingstack_kubeconfig:
    spec: "{{ servingstack.servingstack.spec }}"
    namespace: "{{ servingstack.servingstack.metadata.namespace }}"
    # The management cluster's kubeconfig; K8S_AUTH_* or the default kubeconfig without it.
    kubeconfig: ~/.kube/management.yaml
  register: target
  no_log: true

- name: Converge on the target cluster only.
  module_defaults:
    group/kubernetes.core.k8s: "{{ target.k8s }}"
    group/kubernetes.core.helm: "{{ target.helm }}"
  environment: "{{ target.environment }}"
  block:
    - name: Create a namespace.
      kubernetes.core.k8s:
        kind: Namespace
        name: demo
  always:
    - name: Remove the kubeconfig and every other file of the target's.
      ansible.builtin.file:
        path: "{{ target.dest }}"
        state: absent
      check_mode: false

- name: Write a kubeconfig given as text, authenticated as a Google service account.
  modelplane.serving.servingstack_kubeconfig:
    content: "{{ target_kubeconfig_text }}"
    identity_type: GoogleApplicationCredentials
    identity_credential: "{{ service_account_key_json }}"
    identity_path: spec.secrets[1]
    dest: "{{ work_dir.path }}"
  no_log: true
"""

RETURN = r"""
dest:
  description: The directory of the files written.
  returned: success
  type: str
  sample: /tmp/tmpa1b2c3d4.servingstack
authenticated_as:
  description: C(kubeconfig) when the kubeconfig's own user is used, otherwise the cloud identity type.
  returned: success
  type: str
  sample: GoogleApplicationCredentials
identity_dir:
  description: The private directory holding the credential plugin, its configuration and its token cache.
  returned: success, with a cloud identity
  type: str
  sample: /tmp/tmpa1b2c3d4.servingstack/identity
k8s:
  description:
    - Every authentication option of C(kubernetes.core.k8s) and C(kubernetes.core.k8s_info), for
      C(module_defaults) of C(group/kubernetes.core.k8s); C(kubeconfig) is the target's kubeconfig (in RV(dest), or
      O(src)), C(context) its current context, C(host) its API server. Holds the kubeconfig's static token, if any.
  returned: success
  type: dict
helm:
  description:
    - The authentication options of C(kubernetes.core.helm), for C(module_defaults) of C(group/kubernetes.core.helm).
  returned: success
  type: dict
environment:
  description: The task environment for the target's tasks (C(KUBECONFIG), C(K8S_AUTH_*) and C(HELM_KUBE*)).
  returned: success
  type: dict
"""

import copy
import inspect
import json
import os
import shutil
import sys
import tempfile
from typing import Any

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.kubernetes.core.plugins.module_utils.args_common import AUTH_ARG_SPEC
from ansible_collections.kubernetes.core.plugins.module_utils.k8s.core import AnsibleK8SModule
from ansible_collections.modelplane.serving.plugins.module_utils.servingstack import cloud_identity, rundir, target

# With spec the identity comes from the identity secret, so the identity options go with content only.
RULES: dict[str, Any] = {
    "required_one_of": [("spec", "content", "src")],
    "mutually_exclusive": [("spec", "content", "src")],
    "required_together": [("identity_type", "identity_credential")],
    "required_by": {"namespace": ("spec",), "identity_type": ("content",), "identity_credential": ("content",),
                    "identity_path": ("content",)},
}


def write_identity_dir(directory: str, settings: dict[str, Any], minted: cloud_identity.Minted) -> list[str]:
    """Write the plugin (cloud_identity.py's source, from the AnsiballZ payload or the collection), its settings and
    the first token into ``directory`` (0700); return the argv."""
    if os.path.isdir(directory):
        shutil.rmtree(directory)
    os.mkdir(directory, 0o700)
    plugin, config_file = os.path.join(directory, "plugin.py"), os.path.join(directory, "config.json")
    cloud_identity.write_private(plugin, inspect.getsource(cloud_identity))
    cloud_identity.write_private(config_file, json.dumps({**settings, "cache": os.path.join(directory, "token.json")}))
    cloud_identity.store_token(os.path.join(directory, "token.json"), minted)
    return [sys.executable, plugin, config_file]


def read_secrets(module: AnsibleK8SModule, refs: list[dict[str, Any]]) -> list[dict[str, Any] | None]:
    """The Secrets of ``refs`` from the management cluster, None for one that does not exist."""
    module.requires("kubernetes")
    from ansible_collections.kubernetes.core.plugins.module_utils.k8s.client import get_api_client
    from kubernetes.dynamic.exceptions import NotFoundError

    found: list[dict[str, Any] | None] = []
    try:
        client = get_api_client(module=module)
        resource = client.resource("Secret", "v1")
        for ref in refs:
            try:
                found.append(client.get(resource, name=ref["name"], namespace=ref["namespace"]).to_dict())
            except NotFoundError:
                found.append(None)
    except Exception as error:  # the message names the cluster's answer (its status line), never a Secret's data
        names = ", ".join(f"{ref['namespace']}/{ref['name']}" for ref in refs)
        reason = error.summary() if hasattr(error, "summary") else str(error)
        module.fail_json(msg=f"cannot read the Secrets {names}: {reason}")
    return found


def target_config(module: AnsibleK8SModule) -> tuple[dict[str, Any], tuple[str, str, str] | None]:
    """The target's kubeconfig (parsed and checked) and its cloud identity ``(type, credential, path)`` or None: from
    the file, the options or the spec's Secrets. ValueError naming the problems."""
    params = module.params
    if params["src"] is not None:
        try:
            with open(params["src"], encoding="utf-8") as handle:
                text = handle.read()
        except (OSError, UnicodeDecodeError) as error:
            reason = getattr(error, "strerror", None) or type(error).__name__
            raise ValueError(f"cannot read the kubeconfig {params['src']}: {reason}") from None
        return target.load(text, params["src"]), None
    if params["spec"] is None:
        identity = (params["identity_type"], params["identity_credential"], params["identity_path"] or "spec.secrets")
        return target.load(params["content"], "content"), identity if params["identity_type"] else None
    refs = target.secret_refs(params["spec"], params["namespace"])
    config, texts = target.from_secrets(read_secrets(module, refs), refs)
    # Read here, not given as no_log options: Ansible removes them from any message only once told of them.
    module._module.no_log_values.update(texts)
    return config, (refs[1]["type"], texts[1], refs[1]["path"]) if len(refs) > 1 else None


def main() -> None:
    options = copy.deepcopy(AUTH_ARG_SPEC)  # the management cluster's, for spec
    options.update(
        spec={"type": "dict"},
        namespace={"type": "str"},
        content={"type": "str", "no_log": True},
        src={"type": "path"},
        dest={"type": "path"},
        identity_type={"type": "str", "choices": list(cloud_identity.CLOUD_IDENTITY_TYPES)},
        identity_credential={"type": "str", "no_log": True},
        identity_path={"type": "str"},
        ca_file={"type": "path"},
    )
    module = AnsibleK8SModule(module_class=AnsibleModule, check_k8s=False, argument_spec=options,
                              supports_check_mode=True, **copy.deepcopy(RULES))
    src, dest, made = module.params["src"], module.params["dest"], None
    try:
        config, identity = target_config(module)
        result = {"changed": False, "authenticated_as": identity[0] if identity else "kubeconfig"}
        # Made once the Secrets are read, and removed if anything fails: nothing in it would be of use.
        if not dest:
            rundir.sweep(tempfile.gettempdir())
            dest = made = tempfile.mkdtemp(suffix=rundir.SUFFIX)
            rundir.record_owner(dest, rundir.owner())
        result["dest"] = dest
        if identity:
            identity_type, text, where = identity
            context, cluster = target.selected(config)[1:3]
            # The credential's shape is checked before any network call; the plugin gets it parsed.
            settings = {"type": identity_type, "credential": target.parse_credential(identity_type, text, where),
                        "where": where, "ca_file": module.params["ca_file"],
                        "cluster": {"name": str(context.get("cluster") or ""), "server": str(cluster["server"])}}
            result["identity_dir"] = os.path.join(dest, "identity")
            minted = cloud_identity.mint(settings)
            config = target.with_exec(config, write_identity_dir(result["identity_dir"], settings, minted))
        path = src or os.path.join(dest, "kubeconfig")
        if not src:
            import yaml  # PyYAML ships with ansible-core; imported late so the module fails cleanly without it

            cloud_identity.write_private(path, yaml.safe_dump(config, default_flow_style=False, sort_keys=False))
        result.update(target.connection(config, path, dest))
    except Exception as error:  # the directory goes whatever failed; only ours are told as messages
        if made:
            shutil.rmtree(made, ignore_errors=True)
        if not isinstance(error, (ValueError, OSError)):
            raise
        module.fail_json(msg=str(error))
    module.exit_json(**result)


if __name__ == "__main__":
    main()
