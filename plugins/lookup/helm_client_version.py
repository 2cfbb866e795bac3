# Copyright 2026 The modelplane.serving authors
# Apache License 2.0 (see LICENSE)
"""Lookup plugin: the version of the helm binary on the controller, as ``helm version --short`` says it."""

from __future__ import annotations

DOCUMENTATION = r"""
name: helm_client_version
author: Modelplane engineers (@modelplaneai)
short_description: The version of the helm binary on the controller
version_added: 0.1.0
description:
  - Runs C(helm version --short) on the controller and returns what it prints (for example C(v3.17.2+gcc0ef0b)).
  - The C(modelplane.serving.helm_release) role reads it before a release reaches helm, to refuse a helm it does not
    work with before anything is written. A lookup runs inside the task's own process, where the
    C(ansible.builtin.command) module would start a Python process of its own for each read.
  - Fails, naming the binary, when it cannot be run or exits with an error.
options:
  _terms:
    description: The helm binary, a name on the controller's C(PATH) or a path (one term).
    required: true
    type: list
    elements: str
  timeout:
    description: Seconds to wait for C(helm version) to answer.
    type: int
    default: 60
"""

EXAMPLES = r"""
- name: Show the controller's helm.
  ansible.builtin.debug:
    msg: "{{ lookup('modelplane.serving.helm_client_version', 'helm') }}"
"""

RETURN = r"""
_raw:
  description: What C(helm version --short) printed, without surrounding whitespace.
  type: list
  elements: str
"""

import subprocess
from typing import Any

from ansible.errors import AnsibleLookupError
from ansible.plugins.lookup import LookupBase


def client_version(binary: str, timeout: int = 60) -> str:
    """``binary version --short``'s output, stripped; AnsibleLookupError naming the binary when it does not answer."""
    try:
        done = subprocess.run([binary, "version", "--short"], capture_output=True, text=True, timeout=timeout,
                              check=False)
    except (OSError, subprocess.TimeoutExpired) as error:
        raise AnsibleLookupError(f"helm_client_version: cannot run {binary!r} version --short: {error}") from None
    if done.returncode != 0:
        said = " ".join((done.stderr or done.stdout).split()) or "nothing"
        raise AnsibleLookupError(f"helm_client_version: {binary!r} version --short exited with status "
                                 f"{done.returncode}: {said}")
    return done.stdout.strip()


class LookupModule(LookupBase):
    def run(self, terms: list[Any], variables: dict[str, Any] | None = None, **kwargs: Any) -> list[str]:
        self.set_options(var_options=variables, direct=kwargs)
        if len(terms) != 1:
            raise AnsibleLookupError(f"helm_client_version: give one helm binary, not {len(terms)} terms")
        return [client_version(str(terms[0]), self.get_option("timeout"))]
