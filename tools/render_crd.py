# Copyright 2026 The modelplane.serving authors
# Apache License 2.0 (see LICENSE)
"""Render the ServingStack CustomResourceDefinition from the collection's ``schema.py``, at build time.

``crds/servingstacks.infrastructure.modelplane.ai.yaml`` is this rendering (tests/unit/test_crd.py keeps it so)::

    .venv/bin/python tools/render_crd.py            # rewrite the file (make crd)
    .venv/bin/python tools/render_crd.py --check    # exit 1 when the file is stale

The schema is imported as ``ansible_collections.modelplane.serving``, which ``make venv`` links to this
repository in ``.collections``.
"""

from __future__ import annotations

import argparse
import copy
import sys
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
CRD_FILE = REPO / "crds" / "servingstacks.infrastructure.modelplane.ai.yaml"
if str(REPO / ".collections") not in sys.path:
    sys.path.insert(0, str(REPO / ".collections"))

from ansible_collections.modelplane.serving.plugins.module_utils.servingstack.schema import (  # noqa: E402
    GROUP,
    KIND,
    PLURAL,
    SHORT_NAMES,
    SINGULAR,
    SPEC,
    STATUS,
    VERSION,
)

# The Ready condition, for the printer columns.
READY_PATH = '.status.conditions[?(@.type=="Ready")]'

HEADER = """\
# The ServingStack CustomResourceDefinition (infrastructure.modelplane.ai/v1alpha1).
# Generated from plugins/module_utils/servingstack/schema.py by tools/render_crd.py: do not edit by hand.
# The servingstack_spec module enforces the same schema and also checks what a schema cannot:
# PEM certificates, semantic versions of the pins the chosen stack uses, and the version rules.
# The semantic-version pattern is one unbreakable regular expression, hence:
# yamllint disable rule:line-length
"""


def _public(node: object) -> object:
    """Drop the validator-only keys (those starting with ``_``)."""
    if isinstance(node, dict):
        return {key: _public(value) for key, value in node.items() if not key.startswith("_")}
    if isinstance(node, list):
        return [_public(item) for item in node]
    return copy.deepcopy(node)


def open_api_schema() -> dict:
    """The CRD's ``openAPIV3Schema``."""
    return {
        "type": "object",
        "description": "ServingStack installs the serving substrate on a Kubernetes cluster: LeaderWorkerSet "
        "(Standard) or Grove and the KAI Scheduler (Dynamo), plus Gateway API, cert-manager, and Prometheus.",
        "required": ["spec"],
        "properties": {
            "apiVersion": {
                "type": "string",
                "description": "APIVersion defines the versioned schema of this representation of an object.",
            },
            "kind": {
                "type": "string",
                "description": "Kind is a string value representing the REST resource this object represents.",
            },
            "metadata": {"type": "object"},
            "spec": _public(SPEC),
            "status": _public(STATUS),
        },
    }


def render() -> dict:
    """The whole CustomResourceDefinition."""
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{PLURAL}.{GROUP}"},
        "spec": {
            "group": GROUP,
            "names": {
                "kind": KIND,
                "listKind": f"{KIND}List",
                "plural": PLURAL,
                "singular": SINGULAR,
                "shortNames": list(SHORT_NAMES),
                "categories": ["modelplane"],
            },
            "scope": "Namespaced",
            "versions": [
                {
                    "name": VERSION,
                    "served": True,
                    "storage": True,
                    "subresources": {"status": {}},
                    "additionalPrinterColumns": [
                        {"name": "Stack", "type": "string", "jsonPath": ".spec.stack"},
                        {"name": "Ready", "type": "string", "jsonPath": READY_PATH + ".status"},
                        {"name": "Reason", "type": "string", "jsonPath": READY_PATH + ".reason", "priority": 1},
                        {"name": "Address", "type": "string", "jsonPath": ".status.gateway.address"},
                        {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
                    ],
                    "schema": {"openAPIV3Schema": open_api_schema()},
                }
            ],
        },
    }


def render_yaml() -> str:
    """The CRD as the YAML file in ``crds/`` (yamllint-clean: sequences indented under their key)."""

    class Dumper(yaml.SafeDumper):
        def increase_indent(self, flow: bool = False, indentless: bool = False) -> None:
            super().increase_indent(flow, False)

    return HEADER + "---\n" + yaml.dump(render(), Dumper=Dumper, sort_keys=False, width=100, default_flow_style=False)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only report whether the file is stale")
    args = parser.parse_args(argv)
    rendered = render_yaml()
    if args.check:
        if CRD_FILE.read_text(encoding="utf-8") != rendered:
            sys.stderr.write(f"{CRD_FILE.relative_to(REPO)} is stale: run tools/render_crd.py\n")
            return 1
        return 0
    CRD_FILE.write_text(rendered, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
