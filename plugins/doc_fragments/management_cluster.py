# Copyright 2026 The modelplane.serving authors
# Apache License 2.0 (see LICENSE)
"""What the modules that read or write the management cluster share: kubernetes.core's connection options (with
modelplane.serving.kubernetes_auth) and membership of group/modelplane.serving.servingstack."""

from __future__ import annotations


class ModuleDocFragment:
    DOCUMENTATION = r"""
attributes:
  action_group:
    support: full
    membership:
      - modelplane.serving.servingstack
    description: >-
      C(module_defaults) for C(group/modelplane.serving.servingstack) set the management cluster's authentication
      options once, for every module of the group (those that read or write the management cluster: a live
      ServingStack, its Secrets, its status).
"""
