# Copyright 2026 The modelplane.serving authors
# Apache License 2.0 (see LICENSE)
"""Read a ServingStack document from YAML text or a file, with problems instead of tracebacks.

Duplicate keys are refused (PyYAML would silently keep the last one, hiding a typo'd override),
and a parse error names the file, line and column.
"""

from __future__ import annotations

from ansible_collections.modelplane.serving.plugins.module_utils.servingstack.errors import Problem
from ansible_collections.modelplane.serving.plugins.module_utils.servingstack.schema import KIND

try:
    import yaml
except ImportError:  # pragma: no cover - PyYAML ships with ansible-core
    yaml = None


def _loader() -> type:
    class StrictLoader(yaml.SafeLoader):
        """SafeLoader that refuses duplicate mapping keys."""

    def construct_mapping(loader: yaml.SafeLoader, node: yaml.MappingNode, deep: bool = False) -> dict:
        seen: set = set()
        for key_node, _value_node in node.value:
            key = loader.construct_object(key_node, deep=True)
            try:
                duplicate = key in seen
                seen.add(key)
            except TypeError:
                continue
            if duplicate:
                raise yaml.constructor.ConstructorError(
                    "while constructing a mapping", node.start_mark, f"found duplicate key {key!r}", key_node.start_mark
                )
        return yaml.SafeLoader.construct_mapping(loader, node, deep=deep)

    StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, construct_mapping)
    return StrictLoader


def _yaml_problem(origin: str, error: Exception) -> Problem:
    mark = getattr(error, "problem_mark", None)
    problem = getattr(error, "problem", None) or str(error)
    if mark is not None:
        return Problem(origin, f"line {mark.line + 1}, column {mark.column + 1}: invalid YAML: {problem}")
    return Problem(origin, f"invalid YAML: {problem}")


def load_yaml(text: str, origin: str) -> tuple[object, list[Problem]]:
    """The one ServingStack document in ``text`` (several documents: the one of kind ServingStack)."""
    if yaml is None:
        return None, [Problem(origin, "cannot read YAML: the PyYAML library is missing")]
    try:
        documents = [document for document in yaml.load_all(text, Loader=_loader()) if document is not None]
    except yaml.YAMLError as error:
        return None, [_yaml_problem(origin, error)]
    except (ValueError, TypeError, RecursionError) as error:  # odd scalars such as an out-of-range timestamp
        return None, [Problem(origin, f"invalid YAML: {error}")]
    if not documents:
        return None, [Problem(origin, "is empty: expected a ServingStack manifest")]
    if len(documents) == 1:
        return documents[0], []
    stacks = [document for document in documents if isinstance(document, dict) and document.get("kind") == KIND]
    if len(stacks) == 1:
        return stacks[0], []
    return None, [Problem(origin, f"holds {len(documents)} YAML documents, {len(stacks)} of kind {KIND}; "
                          f"expected exactly one {KIND}")]


def load_file(path: str) -> tuple[object, list[Problem]]:
    """The ServingStack document in the YAML file at ``path``."""
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except OSError as error:
        return None, [Problem(path, f"cannot read the file: {error.strerror or error}")]
    except UnicodeDecodeError:
        return None, [Problem(path, "cannot read the file: it is not UTF-8 text")]
    return load_yaml(text, path)
