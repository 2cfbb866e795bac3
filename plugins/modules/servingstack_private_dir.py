#!/usr/bin/python
# Copyright 2026 The modelplane.serving authors
# Apache License 2.0 (see LICENSE)
"""The private directory of one converge's files on the controller."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: servingstack_private_dir
short_description: Make or remove the private directory of a converge's files on the controller
version_added: 0.1.0
author:
  - Modelplane engineers (@modelplaneai)
description:
  - With O(state=present), makes a new directory only its owner can enter (mode C(0700)) in the controller's
    temporary directory (C(TMPDIR)), named C(*.servingstack). A converge keeps everything of its target cluster's
    there (the kubeconfig read from the management cluster, the cloud identity's files, the certificate files, helm's
    configuration with mirror credentials), so one removal takes it all.
  - With O(state=absent), removes O(path) and everything in it. It refuses a path that is not such a directory (a
    directory named C(*.servingstack), not a symbolic link), so a wrong path cannot delete a user's folder.
  - Run it where the C(kubernetes.core) tasks of the converge run (the role runs it on the ServingStack's host, the
    controller).
options:
  state:
    description: Make a new directory (V(present)) or remove O(path) (V(absent)).
    type: str
    choices: [present, absent]
    default: present
  path:
    description: The directory to remove. Required with O(state=absent).
    type: path
attributes:
  check_mode:
    support: full
    description: >-
      Makes and removes the directory in check mode too: it is a private folder on the controller that the following
      tasks need, not a change to any cluster.
  diff_mode:
    support: none
    description: Nothing is compared.
notes:
  - Never reports a change, like a temporary file a run makes and removes.
"""

EXAMPLES = r"""
- name: Make a private directory for the target cluster's files.
  modelplane.serving.servingstack_private_dir:
  register: private_dir

- name: Remove it and everything in it.
  modelplane.serving.servingstack_private_dir:
    path: "{{ private_dir.path }}"
    state: absent
"""

RETURN = r"""
path:
  description: The directory made, or the one given.
  returned: success
  type: str
  sample: /tmp/tmpa1b2c3d4.servingstack
existed:
  description: With O(state=absent), whether there was a directory to remove.
  returned: success, with O(state=absent)
  type: bool
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.modelplane.serving.plugins.module_utils.servingstack import target


def main() -> None:
    module = AnsibleModule(argument_spec=target.PRIVATE_DIR_OPTIONS, supports_check_mode=True,
                           **target.PRIVATE_DIR_RULES)
    try:
        module.exit_json(changed=False, **target.private_dir(module.params["state"], module.params["path"]))
    except target.TargetError as error:
        module.fail_json(msg=str(error))


if __name__ == "__main__":
    main()
