# Copyright 2026 The modelplane.serving authors
# Apache License 2.0 (see LICENSE)
"""The ServingStack CRD, as the collection reads it, and the names of its API.

The CRD (``crds/servingstacks.infrastructure.modelplane.ai.yaml``, read from the collection's own ``crds/``) is the
one contract: ``spec.validate`` checks a manifest against its openAPIV3Schema, defaults and CEL rules. ``SPEC`` and
``STATUS`` are its schemas of spec and status. The names of the API are spelled out here as well
(tests/unit/test_crd.py keeps them the CRD's), so that the plugins that only need them parse no YAML.
"""

from __future__ import annotations

import functools
from pathlib import Path

try:
    import yaml
except ImportError:  # reading the CRD needs PyYAML (requirements.txt); the names below do not
    yaml = None

GROUP = "infrastructure.modelplane.ai"
VERSION = "v1alpha1"
API_VERSION = f"{GROUP}/{VERSION}"
KIND = "ServingStack"
PLURAL = "servingstacks"

# The collection's root is three folders up (plugins/module_utils/servingstack). Only the controller reads the CRD
# (the action plugin, inventory and lookups): a module, shipped with its module_utils alone, never does.
CRD_FILE = Path(__file__).parents[3] / "crds" / f"{PLURAL}.{GROUP}.yaml"


@functools.cache
def definition() -> dict:
    """The CustomResourceDefinition (raises ImportError without PyYAML)."""
    if yaml is None:
        raise ImportError("reading the ServingStack CRD needs PyYAML")
    with CRD_FILE.open(encoding="utf-8") as stream:
        return yaml.load(stream, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def __getattr__(name: str) -> dict:
    """``SPEC`` and ``STATUS``: the CRD's schemas of spec and status (of its one version), read when first asked for."""
    if name in ("SPEC", "STATUS"):
        (version,) = definition()["spec"]["versions"]
        return version["schema"]["openAPIV3Schema"]["properties"][name.lower()]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
