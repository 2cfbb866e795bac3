# Copyright 2026 The modelplane.serving authors
# Apache License 2.0 (see LICENSE)
"""The one shape every ServingStack problem takes, ``<path>: <problem>``, and how a message quotes a value."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

# The path of a problem with the document as a whole.
DOCUMENT = "(document)"
# How many characters of a value a message may quote before it is shortened.
QUOTE_LIMIT = 64


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a document, at a dotted path such as ``spec.gateway.listeners[1].port``."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


def quote(value: object) -> str:
    """Render a value for a message: strings JSON-quoted, long ones shortened, containers summarised."""
    if value is None or isinstance(value, bool):
        return json.dumps(value)
    if isinstance(value, str):
        if "-----BEGIN" in value or "PRIVATE KEY" in value:
            # PEM text is never echoed, wherever it was pasted: it may be a private key.
            return "PEM text (not shown)"
        text = value if len(value) <= QUOTE_LIMIT else value[: QUOTE_LIMIT - 1] + "…"
        return json.dumps(text, ensure_ascii=False)
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, dict):
        return f"a mapping with {len(value)} key{'s' if len(value) != 1 else ''}"
    if isinstance(value, list | tuple):
        return f"a list of {len(value)} item{'s' if len(value) != 1 else ''}"
    return f"a {type(value).__name__}"


def join_path(parent: str, key: object) -> str:
    """``spec`` + ``gateway`` -> ``spec.gateway``; ``spec.secrets`` + 1 -> ``spec.secrets[1]``."""
    if isinstance(key, int) and not isinstance(key, bool):
        return f"{parent}[{key}]"
    return f"{parent}.{key}" if parent else str(key)


def sort_key(problem: Problem) -> tuple:
    """Orders problems by path, with list indexes compared as numbers (``[2]`` before ``[10]``)."""
    return tuple((0, int(part), "") if part.isascii() and part.isdigit() else (1, 0, part)
                 for part in re.findall(r"[0-9]+|[^0-9]+", problem.path))
