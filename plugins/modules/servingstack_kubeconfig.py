#!/usr/bin/python
# Copyright 2026 The modelplane.serving authors
# Apache License 2.0 (see LICENSE)
"""Write the kubeconfig a ServingStack converge uses, authenticated as its cloud identity if it has one."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: servingstack_kubeconfig
short_description: Write the kubeconfig a ServingStack converge uses to reach its target cluster
version_added: 0.1.0
author:
  - Modelplane engineers (@modelplaneai)
description:
  - Writes O(kubeconfig) to O(dest) with mode C(0600), for the tasks of one converge to use and for the caller to
    remove afterwards. Without a cloud identity this happens on the controller (an action plugin), where the
    ServingStack hosts run; with one, the module runs.
  - With a cloud identity (O(identity_type) and O(identity_credential)), authenticates as that identity instead of
    the kubeconfig's embedded credentials, as the ServingStack reference says. The current context's user is
    replaced by a kubeconfig C(exec) credential plugin that hands out a bearer token minted from the credential.
  - The credential is validated first (a wrong shape fails naming the field, before any network call), then one
    token is minted, so a wrong key fails here with a clear message rather than in the first component.
  - "Token refresh: the plugin is the collection's own C(cloud_identity) module_utils file, written with a C(0600)
    C(config.json) (the credential) and a C(token.json) cache into a private C(0700) directory C(<dest>.identity).
    The kubeconfig runs it as C(<python> <dir>/plugin.py <dir>/config.json): paths only, nothing secret in argv or
    the environment. kubernetes.core and helm run it when they load the kubeconfig and again when the token's
    C(expirationTimestamp) passes; it answers from the cache and mints a new token when the cached one has less
    than five minutes left, so runs longer than a token's lifetime keep working. Remove C(<dest>.identity) with
    O(dest) (RV(identity_dir))."
  - C(GoogleApplicationCredentials) takes a Google service-account key (JSON; a signed JWT is exchanged for an
    OAuth 2.0 access token at the key's C(token_uri), RFC 7523) or an C(authorized_user) credential (refresh-token
    grant at its C(token_uri)). C(external_account) and C(impersonated_service_account) are refused by name.
  - C(AWSWebIdentityCredentials) takes a JSON object with C(roleARN) and C(webIdentityToken) (optional
    C(roleSessionName), C(region), C(stsEndpoint), C(clusterName)). STS C(AssumeRoleWithWebIdentity) gives temporary
    credentials; the token is an EKS token, C(k8s-aws-v1.) and the base64url SigV4-presigned C(GetCallerIdentity)
    URL with the signed header C(x-k8s-aws-id) set to the cluster name (C(clusterName), else the current context's
    cluster name, the last segment of an EKS cluster ARN).
  - C(NebiusServiceAccountCredentials) takes the Nebius CLI's credentials JSON (C(subject-credentials) with C(alg)
    RS256, C(private-key), C(kid), C(iss), C(sub)) or provider-nebius's (C(private_key), C(public_key_id),
    C(account_id)); a signed JWT is exchanged for an access token with the RFC 8693 token-exchange form at
    C(https://auth.nebius.com/oauth2/token/exchange) (C(tokenEndpoint) beside it overrides).
  - Endpoints are HTTPS only, with certificate verification. C(token_uri), C(stsEndpoint) and C(tokenEndpoint) in the
    credential point them elsewhere, for private clouds and tests; they default to the real ones.
  - Neither the kubeconfig, the credential nor the token is ever returned or logged.
options:
  kubeconfig:
    description: The kubeconfig text (from the ServingStack's C(Kubeconfig) secret, or a file).
    type: str
    required: true
  dest:
    description: Where to write the kubeconfig. Written with mode C(0600).
    type: path
    required: true
  identity_type:
    description: The type of the ServingStack's cloud identity secret, if it has one.
    type: str
    choices: [GoogleApplicationCredentials, AWSWebIdentityCredentials, NebiusServiceAccountCredentials]
  identity_credential:
    description: The credential data of the cloud identity secret. Required with O(identity_type).
    type: str
  identity_path:
    description: Where the identity came from, used in messages (for example C(spec.secrets[1])).
    type: str
    default: spec.secrets
  ca_file:
    description: CA bundle to verify the token endpoints (Google, STS, Nebius IAM) with, instead of the system's.
    type: path
attributes:
  check_mode:
    support: full
    description: >-
      Writes O(dest) in check mode too: it is a private file on the controller that the following read-only tasks
      need, not a change to any cluster.
  diff_mode:
    support: none
    description: The content is secret, so no diff is shown.
notes:
  - The caller removes O(dest) and RV(identity_dir) when the converge ends (the servingstack role does so in an
    C(always) block).
  - The plugin runs with the Python interpreter that ran this module, so that interpreter must stay available while
    the kubeconfig is used (the controller's, with C(connection=local)).
requirements:
  - PyYAML
  - cryptography (signs the JWTs for Google service-account keys and Nebius service accounts)
  - botocore (SigV4-presigns the EKS token for C(AWSWebIdentityCredentials))
"""

EXAMPLES = r"""
- name: Write the target cluster's kubeconfig, authenticated as the stack's Google service account.
  modelplane.serving.servingstack_kubeconfig:
    kubeconfig: "{{ target_kubeconfig_text }}"
    identity_type: GoogleApplicationCredentials
    identity_credential: "{{ service_account_key_json }}"
    identity_path: spec.secrets[1]
    dest: "{{ work_dir.path }}/kubeconfig"
  no_log: true
"""

RETURN = r"""
dest:
  description: The path written.
  returned: success
  type: str
  sample: /tmp/ansible.servingstack/kubeconfig
authenticated_as:
  description: C(kubeconfig) when the kubeconfig's own user is used, otherwise the cloud identity type.
  returned: success
  type: str
  sample: GoogleApplicationCredentials
identity_dir:
  description: The private directory holding the credential plugin, its configuration and its token cache.
  returned: success, with a cloud identity
  type: str
  sample: /tmp/ansible.servingstack/kubeconfig.identity
"""

import copy
import json
import os
import shutil
import sys
import urllib.error

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.urls import open_url
from ansible_collections.modelplane.serving.plugins.module_utils.servingstack import cloud_identity
from ansible_collections.modelplane.serving.plugins.module_utils.servingstack.credentials import (
    KUBECONFIG_OPTIONS,
    KUBECONFIG_RULES,
    check_kubeconfig,
)

# Appended to the plugin's copy of cloud_identity.py so that it runs as a script.
PLUGIN_MAIN = """

if __name__ == "__main__":
    raise SystemExit(plugin_main(sys.argv[1:]))
"""


def _write_private(path: str, text: str) -> None:
    """Write ``text`` to ``path`` readable by the owner only, never wider even for a moment."""
    cloud_identity.write_private(path, text)


def plugin_source() -> str:
    """The source of cloud_identity.py (from the AnsiballZ payload or the collection), runnable as a script."""
    loader = getattr(cloud_identity, "__loader__", None)
    source = loader.get_source(cloud_identity.__name__) if loader is not None else None
    if isinstance(source, bytes):  # Ansible's collection loader answers bytes, zipimport str
        source = source.decode("utf-8")
    if not source:
        with open(cloud_identity.__file__, encoding="utf-8") as handle:
            source = handle.read()
    return source + PLUGIN_MAIN


def write_identity_dir(directory: str, config: dict, minted: cloud_identity.Minted) -> list[str]:
    """Write the plugin, its configuration and the first token into ``directory`` (0700); return the argv."""
    if os.path.isdir(directory):
        shutil.rmtree(directory)
    os.mkdir(directory, 0o700)
    plugin, config_file = os.path.join(directory, "plugin.py"), os.path.join(directory, "config.json")
    cloud_identity.write_private(plugin, plugin_source())
    cloud_identity.write_private(config_file, json.dumps({**config, "cache": os.path.join(directory, "token.json")}))
    cloud_identity.store_token(os.path.join(directory, "token.json"), minted)
    return [sys.executable, plugin, config_file]


def post_form(url: str, body: bytes, ca_file: str | None = None, timeout: float = 30.0) -> bytes:
    """POST a form to an HTTPS token endpoint with certificate verification on; return the body."""
    if not url.startswith("https://"):
        raise cloud_identity.CredentialError(f"token endpoint {url!r}: only https:// endpoints are used")
    try:
        response = open_url(
            url, data=body, method="POST", timeout=timeout, validate_certs=True, ca_path=ca_file,
            headers={"Content-Type": "application/x-www-form-urlencoded"},
        )
        return response.read()
    except urllib.error.HTTPError as error:
        # An OAuth error answer (400/401) carries its reason in the body.
        return error.read()
    except (urllib.error.URLError, OSError) as error:
        reason = getattr(error, "reason", error)
        raise cloud_identity.CredentialError(f"token endpoint {url}: {reason}") from None


def main() -> None:
    module = AnsibleModule(argument_spec=copy.deepcopy(KUBECONFIG_OPTIONS), supports_check_mode=True,
                           **copy.deepcopy(KUBECONFIG_RULES))
    params = module.params
    result = {"changed": False, "dest": params["dest"], "authenticated_as": params["identity_type"] or "kubeconfig"}
    try:
        check_kubeconfig(params["kubeconfig"], "kubeconfig")
        text = params["kubeconfig"]
        if params["identity_type"]:
            where = params["identity_path"]
            # The credential's shape is checked before any network call.
            cloud_identity.validate(params["identity_type"], params["identity_credential"], where)
            cluster = cloud_identity.current_cluster(text)

            def post(url: str, body: bytes) -> bytes:
                return post_form(url, body, ca_file=params["ca_file"])

            minted = cloud_identity.mint(
                params["identity_type"], params["identity_credential"], where, post=post, cluster=cluster
            )
            config = {
                "type": params["identity_type"], "credential": params["identity_credential"], "where": where,
                "ca_file": params["ca_file"], "cluster": cluster,
            }
            result["identity_dir"] = params["dest"] + ".identity"
            argv = write_identity_dir(result["identity_dir"], config, minted)
            text = cloud_identity.kubeconfig_with_exec(text, argv)
        _write_private(params["dest"], text)
    except ValueError as error:
        module.fail_json(msg=str(error))
    module.exit_json(**result)


if __name__ == "__main__":
    main()
