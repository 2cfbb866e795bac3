"""Shared pytest setup: make the collection importable as ansible_collections.modelplane.serving."""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
COLLECTIONS = REPO / ".collections"
SHARED = REPO.parent / "shared"
UPSTREAM = SHARED / "upstream"

if str(COLLECTIONS) not in sys.path:
    sys.path.insert(0, str(COLLECTIONS))
