#!/usr/bin/env python
"""helm TEST DOUBLE: a stand-in for the real ``helm`` CLI, for tests only (see README.md here).

It keeps release state in the cluster the way helm 3 does and knows the charts catalogued in
``helmdouble/catalog.py`` from ``../shared/upstream``. Never referenced from plugins/ or roles/.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from helmdouble.cli import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
