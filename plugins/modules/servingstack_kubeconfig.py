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
    remove afterwards.
  - With a cloud identity (O(identity_type) and O(identity_credential)), authenticates as that identity instead of
    the kubeconfig's embedded credentials, as the ServingStack reference says. The current context's user is
    replaced by a bearer token minted from the credential.
  - C(GoogleApplicationCredentials) takes a Google service-account key (JSON) and exchanges a signed JWT for an
    OAuth 2.0 access token at the key's C(token_uri) (RFC 7523), over HTTPS with certificate verification.
  - C(AWSWebIdentityCredentials) and C(NebiusServiceAccountCredentials) are refused with a clear message by this
    release.
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
    description: CA bundle to verify the token endpoint with, instead of the system's.
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
  - The caller removes O(dest) when the converge ends (the servingstack role does so in an C(always) block).
requirements:
  - PyYAML
  - cryptography (signs the JWT for Google service-account keys)
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
"""

import os
import tempfile
import urllib.error

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.urls import open_url
from ansible_collections.modelplane.serving.plugins.module_utils.servingstack import cloud_identity
from ansible_collections.modelplane.serving.plugins.module_utils.servingstack.credentials import check_kubeconfig


def _write_private(path: str, text: str) -> None:
    """Write ``text`` to ``path`` readable by the owner only, never wider even for a moment."""
    # mkstemp creates the file 0600 with O_EXCL under an unpredictable name, then it is renamed.
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path) or ".", prefix=".servingstack-kubeconfig-")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


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
    module = AnsibleModule(
        argument_spec={
            "kubeconfig": {"type": "str", "required": True, "no_log": True},
            "dest": {"type": "path", "required": True},
            "identity_type": {"type": "str", "choices": list(cloud_identity.CLOUD_IDENTITY_TYPES)},
            "identity_credential": {"type": "str", "no_log": True},
            "identity_path": {"type": "str", "default": "spec.secrets"},
            "ca_file": {"type": "path"},
        },
        required_together=[("identity_type", "identity_credential")],
        supports_check_mode=True,
    )
    params = module.params
    try:
        check_kubeconfig(params["kubeconfig"], "kubeconfig")
        text = params["kubeconfig"]
        if params["identity_type"]:

            def post(url: str, body: bytes) -> bytes:
                return post_form(url, body, ca_file=params["ca_file"])

            token = cloud_identity.exchange(
                params["identity_type"], params["identity_credential"], params["identity_path"], post=post
            )
            text = cloud_identity.kubeconfig_with_token(text, token)
        _write_private(params["dest"], text)
    except ValueError as error:
        module.fail_json(msg=str(error))
    module.exit_json(
        changed=False, dest=params["dest"], authenticated_as=params["identity_type"] or "kubeconfig"
    )


if __name__ == "__main__":
    main()
