# Copyright 2026 The modelplane.serving authors
# Apache License 2.0 (see LICENSE)
"""The ServingStack CRD, as the collection reads it, and the names of its API.

The CRD (``crds/servingstacks.infrastructure.modelplane.ai.yaml``, which the module reads from its copy in
``crd_yaml``) is the one contract: ``spec.validate`` checks a manifest against its openAPIV3Schema, defaults and CEL
rules. ``SPEC`` and ``STATUS`` are its schemas of spec and status. The names of the API are spelled out here as
well (tests/unit/test_crd.py keeps them the CRD's), so that the plugins that only need them parse no YAML.
"""

from __future__ import annotations

import functools

from ansible_collections.modelplane.serving.plugins.module_utils.servingstack import crd_yaml

try:
    import yaml
except ImportError:  # reading the CRD needs PyYAML (requirements.txt); the names below do not
    yaml = None

GROUP = "infrastructure.modelplane.ai"
VERSION = "v1alpha1"
API_VERSION = f"{GROUP}/{VERSION}"
KIND = "ServingStack"
PLURAL = "servingstacks"


@functools.cache
def definition() -> dict:
    """The CustomResourceDefinition (raises ImportError without PyYAML)."""
    if yaml is None:
        raise ImportError("reading the ServingStack CRD needs PyYAML")
    return yaml.load(crd_yaml.TEXT, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def open_api_schema() -> dict:
    """The CRD's ``openAPIV3Schema`` (of its one version)."""
    (version,) = definition()["spec"]["versions"]
    return version["schema"]["openAPIV3Schema"]


def __getattr__(name: str) -> dict:
    """``SPEC`` and ``STATUS``: the CRD's schemas of spec and status, read when first asked for."""
    if name in ("SPEC", "STATUS"):
        return open_api_schema()["properties"][name.lower()]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
