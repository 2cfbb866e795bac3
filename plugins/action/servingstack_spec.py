# Copyright 2026 The modelplane.serving authors
# Apache License 2.0 (see LICENSE)
"""Action plugin for servingstack_spec: read and validate every ServingStack on the controller, in Ansible's own
process (the module's ``action`` attribute says how): no module is shipped to the host for a file or a definition,
about half a second of every run, and only ``name`` runs one, kubernetes.core.k8s_info."""

from __future__ import annotations

from typing import Any

import yaml
from ansible.plugins.action import ActionBase
from ansible_collections.modelplane.serving.plugins.module_utils.servingstack.bounds import (
    MAX_BYTES,
    BoundedComposer,
    Exceeded,
    read_text,
    too_large,
)
from ansible_collections.modelplane.serving.plugins.module_utils.servingstack.errors import Problem
from ansible_collections.modelplane.serving.plugins.module_utils.servingstack.outcome import outcome
from ansible_collections.modelplane.serving.plugins.module_utils.servingstack.schema import API_VERSION, KIND
from ansible_collections.modelplane.serving.plugins.modules.servingstack_spec import ARGUMENT_SPEC, RULES
from yaml.constructor import SafeConstructor
from yaml.parser import Parser
from yaml.reader import Reader
from yaml.resolver import Resolver
from yaml.scanner import Scanner

# libyaml's parser when PyYAML has it (its wheels do): pure Python takes minutes to parse a 3 MiB document.
PARSER = (yaml.CParser,) if hasattr(yaml, "CParser") else (Reader, Scanner, Parser)


class StrictLoader(BoundedComposer, *PARSER, SafeConstructor, Resolver):  # type: ignore[misc]
    """PyYAML's safe loader, composing within ``bounds`` and refusing a duplicate key (PyYAML keeps the last one,
    hiding a typo'd override)."""

    def __init__(self, stream: str) -> None:
        if hasattr(yaml, "CParser"):
            yaml.CParser.__init__(self, stream)
        else:  # the pure-Python parser's parts, which PARSER made our bases: pylint cannot see through the tuple
            Reader.__init__(self, stream)  # pylint: disable=non-parent-init-called
            Scanner.__init__(self)  # pylint: disable=non-parent-init-called
            Parser.__init__(self)  # pylint: disable=non-parent-init-called
        BoundedComposer.__init__(self)
        SafeConstructor.__init__(self)
        Resolver.__init__(self)

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict:
        seen: set = set()
        for key_node, _value_node in node.value:
            key = self.construct_object(key_node, deep=True)
            try:
                duplicate = key in seen
                seen.add(key)
            except TypeError:  # an unhashable key, which PyYAML refuses itself
                continue
            if duplicate:
                raise yaml.constructor.ConstructorError("while constructing a mapping", node.start_mark,
                                                        f"found duplicate key {key!r}", key_node.start_mark)
        return super().construct_mapping(node, deep=deep)


def load_yaml(text: str, origin: str) -> tuple[object, list[Problem]]:
    """The one ServingStack document in ``text`` (of several, the one of kind ServingStack); a YAML error names
    ``origin``, the line and the column."""
    size = len(text.encode("utf-8", "surrogateescape"))
    if size > MAX_BYTES:
        return None, [Problem(origin, too_large(size))]
    try:
        documents = [document for document in yaml.load_all(text, Loader=StrictLoader) if document is not None]
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
        invalid = "" if isinstance(error, Exceeded) else "invalid YAML: "
        return None, [Problem(origin, f"{where}{invalid}{getattr(error, 'problem', None) or error}")]
    except (ValueError, TypeError, RecursionError) as error:  # odd scalars such as an out-of-range timestamp
        return None, [Problem(origin, f"invalid YAML: {error}")]
    stacks = [document for document in documents if isinstance(document, dict) and document.get("kind") == KIND]
    if len(documents) == 1 or len(stacks) == 1:
        return (documents if len(documents) == 1 else stacks)[0], []
    if not documents:
        return None, [Problem(origin, "is empty: expected a ServingStack manifest")]
    return None, [Problem(origin, f"holds {len(documents)} YAML documents, {len(stacks)} of kind {KIND}; "
                          f"expected exactly one {KIND}")]


def load_file(path: str) -> tuple[object, list[Problem]]:
    """The ServingStack document in the YAML file at ``path``."""
    text, problems = read_text(path)
    return (None, problems) if problems else load_yaml(text, path)


class ActionModule(ActionBase):
    TRANSFERS_FILES = False

    def run(self, tmp: Any = None, task_vars: dict[str, Any] | None = None) -> dict[str, Any]:
        result = super().run(tmp, task_vars)
        # Fails the task (AnsibleActionFail) with AnsibleModule's own message for a wrong option.
        _validation, options = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC, **RULES)
        if options["name"] is not None:
            # The task's own kubernetes.core options (module_defaults included): k8s_info applies their defaults and
            # environment fallbacks on the host.
            args = {key: value for key, value in self._task.args.items() if key not in ("definition", "src")}
            read = self._execute_module(module_name="kubernetes.core.k8s_info", task_vars=task_vars,
                                        module_args={**args, "kind": KIND, "api_version": API_VERSION})
            resources, api_found = read.pop("resources", None), read.pop("api_found", None)
            result.update(read)
            where = f"cannot read ServingStack {options['namespace']}/{options['name']}"
            if result.get("failed"):
                return {**result, "msg": f"{where}: {result.get('msg')}"}
            if not api_found:
                return {**result, "failed": True, "msg": f"{where}: the management cluster has no {KIND} "
                        f"({API_VERSION}) API; apply crds/servingstacks.infrastructure.modelplane.ai.yaml first"}
            if not resources:
                return {**result, "failed": True, "msg": f"{where}: it does not exist on the management cluster"}
            found = outcome(resources[0], [])
        elif options["src"] is not None:  # a controller path, ~ and $VARS already expanded
            found = outcome(*load_file(options["src"]))
        elif isinstance(options["definition"], str):
            found = outcome(*load_yaml(options["definition"], "definition"))
        else:
            found = outcome(options["definition"], [])
        warnings = found.pop("warnings")
        if warnings:
            result["warnings"] = [*result.get("warnings", ()), *warnings]
        result.update(found)
        return result
