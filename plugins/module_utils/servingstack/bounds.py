# Copyright 2026 The modelplane.serving authors
# Apache License 2.0 (see LICENSE)
"""What a ServingStack document may cost before it is checked: the bounds, the bounded read of a file, the YAML
composer that counts values as it composes, and the walk over a document as data.

A hostile document (a symlink to /dev/zero, a YAML alias bomb, thousands of list items) is refused here, in time
and memory proportional to the bounds, before anything walks all of it: the schema's keywords and the CEL rules
(``spec.py``) then only ever see a document within the bounds, so a rule over a list runs on a list no longer than
its ``maxItems``. Every refusal is a ``Problem`` naming where, the value and the bound.

The bounds are the API server's own request limit (``MAX_BYTES``), ``MAX_VALUES``, and what the CRD's schema says
(``maxItems``, and how deep its fields nest), read from the schema the walk is given.
"""

from __future__ import annotations

import functools
import itertools
import os
import re
import stat
from typing import Any

from ansible_collections.modelplane.serving.plugins.module_utils.servingstack import schema
from ansible_collections.modelplane.serving.plugins.module_utils.servingstack.errors import DOCUMENT, Problem, join_path

try:
    from yaml.composer import Composer, ComposerError
    from yaml.events import AliasEvent
except ImportError:  # spec.py reports a missing PyYAML; data needs none of this
    Composer, ComposerError, AliasEvent = object, Exception, None

# The API server refuses a request body larger than this (3 MiB), so no stored ServingStack is larger.
MAX_BYTES = 3 * 1024 * 1024
MAX_BYTES_WHY = "3 MiB, the API server's request limit"
# A ServingStack the CRD accepts holds a few hundred values (each list is bounded by its maxItems); this leaves room
# for labels, annotations and a live object's managedFields, and keeps checking any document under a second or two.
MAX_VALUES = 10_000
FILE_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
              (stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISSOCK, "a socket"))


def too_large(size: int) -> str:
    """Why a text of ``size`` bytes is refused."""
    return f"is {size} bytes long, above the maximum {MAX_BYTES} ({MAX_BYTES_WHY})"


def read_text(path: str) -> tuple[str | None, list[Problem]]:
    """The text of the file at ``path``, read within a bound (never more than MAX_BYTES + 1 bytes); a problem
    when it is not a regular file, larger than MAX_BYTES or not UTF-8."""
    try:
        # O_NONBLOCK: opening a FIFO must not wait for a writer; it is refused below.
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as error:
        return None, [Problem(path, f"cannot read the file: {error.strerror or error}")]
    try:
        status = os.fstat(descriptor)
        kind = next((kind for test, kind in FILE_KINDS if test(status.st_mode)), "a special file")
        if not stat.S_ISREG(status.st_mode):
            target = f" (a symbolic link to {os.path.realpath(path)})" if os.path.islink(path) else ""
            return None, [Problem(path, f"is {kind}{target}, not a regular file: expected a YAML file")]
        if status.st_size > MAX_BYTES:
            return None, [Problem(path, too_large(status.st_size))]
        data = b""
        while len(data) <= MAX_BYTES:  # the file may have grown since fstat
            chunk = os.read(descriptor, MAX_BYTES + 1 - len(data))
            if not chunk:
                break
            data += chunk
    except OSError as error:
        return None, [Problem(path, f"cannot read the file: {error.strerror or error}")]
    finally:
        os.close(descriptor)
    if len(data) > MAX_BYTES:
        return None, [Problem(path, too_large(len(data)))]
    try:
        return data.decode("utf-8"), []
    except UnicodeDecodeError as error:
        return None, [Problem(path, f"is not UTF-8 text: byte 0x{data[error.start]:02x} at offset {error.start} "
                                    "is not valid UTF-8")]


class Exceeded(ComposerError):  # type: ignore[misc,valid-type]
    """A YAML stream beyond the bounds: not invalid YAML, but refused all the same."""


class BoundedComposer(Composer):  # type: ignore[misc,valid-type]
    """PyYAML's composer, counting the values of a YAML stream with its aliases expanded (an alias counts the values
    of the node it names, each time it is used) and refusing one past MAX_VALUES, or an alias inside the node it
    names (a recursive structure), before anything is constructed. PyYAML shares an aliased node's value, so an alias
    bomb costs nothing until something walks the result, and then it costs everything."""

    def __init__(self) -> None:
        super().__init__()
        self.values = 0  # of the whole stream: a file of many documents has the same bound
        self.depth = 0

    def compose_document(self) -> Any:
        self.sizes: dict[int, int] = {}  # id of a node of this document: its values, aliases expanded
        return super().compose_document()

    def compose_node(self, parent: Any, index: Any) -> Any:
        event = self.peek_event()
        target = self.anchors.get(event.anchor) if isinstance(event, AliasEvent) else None
        if target is None:  # a new node (or an undefined alias, which PyYAML refuses)
            self.count(1, event, "the document holds more than")
            self.depth += 1
            if self.depth > 2 * crd_depth():
                raise Exceeded(None, None, f"values are nested more than {2 * crd_depth()} levels deep, twice as deep "
                               "as any field of a ServingStack", event.start_mark)
            node = super().compose_node(parent, index)
            self.depth -= 1
            items = node.value if isinstance(node.value, list) else []
            self.sizes[id(node)] = 1 + sum(self.sizes[id(child)] for item in items
                                           for child in (item if isinstance(item, tuple) else (item,)))
            return node
        size = self.sizes.get(id(target))
        if size is None:
            raise Exceeded(None, None, f"alias *{event.anchor} is used inside the node it names: a recursive "
                           "structure is not a ServingStack", event.start_mark)
        self.count(size, event, f"alias *{event.anchor} ({size} values) takes the document past")
        return super().compose_node(parent, index)

    def count(self, values: int, event: Any, what: str) -> None:
        self.values += values
        if self.values > MAX_VALUES:
            raise Exceeded(None, None, f"{what} {MAX_VALUES} values, the most a ServingStack document may hold "
                           "(a YAML alias counts the values it names each time it is used)", event.start_mark)


@functools.cache
def crd_depth() -> int:
    """How deeply the CRD's fields nest. A YAML document is refused while it is composed when it nests twice as deep:
    a live object's managedFields, which a saved copy may hold, mirror its fields 5 levels further down, and libyaml
    takes time that grows with the square of the depth of nested flow collections ([[[...)."""
    (version,) = schema.definition()["spec"]["versions"]
    return schema_depth(version["schema"]["openAPIV3Schema"])


def schema_depth(node: dict) -> int:
    """How deeply values nest in ``node``'s schema: 1 for a field without fields, 1 more for each level of fields,
    list items or map values. A schema of ``{}`` (accepted as it comes) counts as a field without fields."""
    children = [*node.get("properties", {}).values(), node.get("items"), node.get("additionalProperties")]
    return 1 + max((schema_depth(child) for child in children if isinstance(child, dict)), default=0)


def field(path: str) -> str:
    """The field a path is in, to name a problem by: ``spec.gateway`` for ``spec.gateway.listeners[3].name``."""
    return re.match(r"[^.[]*([.][^.[]+)?", path).group() or DOCUMENT  # type: ignore[union-attr]


def exceeded(document: object, schema: dict) -> list[Problem]:
    """The bounds ``document`` breaks, checked against ``schema`` without recursion and without walking past a bound:
    more than MAX_VALUES values or MAX_BYTES of text in all (the walk stops there), a list longer than its
    ``maxItems``, values nested deeper than any field of the schema (neither walked further). What the schema takes
    as it comes (``{}``: a live object's ``status``, the server's metadata) is never walked."""
    limit, problems, too_deep = schema_depth(schema), [], set()
    values = size = 0
    pending: list[tuple[object, dict | None, str, int]] = [(document, schema, "", 1)]
    while pending:
        value, node, path, depth = pending.pop()
        if node == {}:
            continue
        values += 1
        size += len(value) if isinstance(value, str) else 0
        if values > MAX_VALUES or size > MAX_BYTES:
            what = (f"{MAX_VALUES} values" if values > MAX_VALUES else
                    f"{MAX_BYTES} characters of text ({MAX_BYTES_WHY})")
            return [*problems, Problem(field(path), f"takes the document past {what}, the most a ServingStack may "
                                                    "hold")]
        if not isinstance(value, list | dict) or not value:
            continue
        node = node or {}
        if depth >= limit:
            if field(path) not in too_deep:  # once per field: a bomb has thousands of such values
                too_deep.add(field(path))
                problems.append(Problem(path, f"holds values nested {depth + 1} levels deep, deeper than any field "
                                              f"of a ServingStack ({limit} levels)"))
        elif isinstance(value, list) and len(value) > node.get("maxItems", len(value)):
            problems.append(Problem(path, f"has {len(value)} items, above the maximum {node['maxItems']}"))
        elif isinstance(value, list):
            # No more items than could still fit: a list of millions costs no more than MAX_VALUES of them.
            pending += [(item, node.get("items"), join_path(path, index), depth + 1)
                        for index, item in enumerate(itertools.islice(value, MAX_VALUES - values + 1))]
        else:
            fields, others = node.get("properties", {}), node.get("additionalProperties")
            for key, item in itertools.islice(value.items(), MAX_VALUES - values + 1):
                size += len(key) if isinstance(key, str) else 0
                child = fields.get(key, others if isinstance(others, dict) else None)
                pending.append((item, child, join_path(path, key), depth + 1))
    return problems
