# Copyright 2026 The modelplane.serving authors
# Apache License 2.0 (see LICENSE)
"""The options of ``servingstack_spec``: one argument spec that its action plugin and its module both check."""

from __future__ import annotations

import copy

from ansible_collections.kubernetes.core.plugins.module_utils.args_common import AUTH_ARG_SPEC

# Where the ServingStack comes from: exactly one of them.
SOURCES = ("definition", "src", "name")


def argument_spec() -> dict:
    """The kubernetes.core authentication options (for ``name``) and the three sources."""
    options = copy.deepcopy(AUTH_ARG_SPEC)
    options.update(
        definition={"type": "raw"},
        src={"type": "path"},
        name={"type": "str"},
        namespace={"type": "str"},
    )
    return options


# The rules between options, as keyword arguments of AnsibleModule and ActionBase.validate_argument_spec.
RULES: dict = {
    "mutually_exclusive": [SOURCES],
    "required_one_of": [SOURCES],
    # A live ServingStack needs its namespace; a manifest names its own.
    "required_by": {"name": ("namespace",), "namespace": ("name",)},
}

# The result key the module returns a live ServingStack under, unchecked: the action plugin validates it on the
# controller, where the CRD is, and returns what it returns for a file instead.
LIVE = "live"
