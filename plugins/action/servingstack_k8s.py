# Copyright 2026 The modelplane.serving authors
# Apache License 2.0 (see LICENSE)
"""Action plugin for servingstack_k8s: read the objects on the controller, call kubernetes.core.k8s for what differs.

The logic is in ``module_utils/servingstack/k8s_objects.py``; this plugin validates the options, finds the
connection a ``kubernetes.core.k8s`` task would have (its ``module_defaults`` and the task environment), reads,
and runs the module only when something is to be written.
"""

from __future__ import annotations

from typing import Any

from ansible_collections.kubernetes.core.plugins.module_utils.args_common import AUTH_ARG_SPEC
from ansible_collections.modelplane.serving.plugins.module_utils.servingstack import k8s_objects, kubeclient, record
from ansible_collections.modelplane.serving.plugins.plugin_utils.cluster_action import ClusterReadAction

MODULE = "kubernetes.core.k8s"
# The keys of kubernetes.core.k8s's result that carry objects: left out when a Secret was written or deleted.
SECRET_BEARING = frozenset({"result", "diff", "invocation"})

ARGUMENT_SPEC: dict[str, Any] = {
    "state": {"type": "str", "choices": ["present", "absent"], "default": "present"},
    "definition": {"type": "raw", "required": True},
    "apply": {"type": "bool", "default": False},
    "wait": {"type": "bool", "default": False},
    "wait_condition": {"type": "dict", "options": {
        "type": {"type": "str", "required": True},
        "status": {"type": "str", "default": "True", "choices": ["True", "False", "Unknown"]},
        "reason": {"type": "str"},
    }},
    "wait_sleep": {"type": "int", "default": 1},
    "wait_timeout": {"type": "int", "default": 120},
    "journal": {"type": "path"},
    **AUTH_ARG_SPEC,
}


def _module_defaults(task: Any, templar: Any) -> dict[str, Any]:
    """The ``module_defaults`` a ``kubernetes.core.k8s`` task would get here (its groups' and its own), templated."""
    try:  # ansible-core 2.19
        from ansible.executor.module_common import _apply_action_arg_defaults

        return _apply_action_arg_defaults(MODULE, task, {}, templar)
    except ImportError:  # ansible-core 2.16 to 2.18
        from ansible.executor.module_common import get_action_args_with_defaults

        return get_action_args_with_defaults(MODULE, {}, task.module_defaults, templar,
                                             action_groups=task._parent._play._action_groups)


class ActionModule(ClusterReadAction):
    def run(self, tmp: Any = None, task_vars: dict[str, Any] | None = None) -> dict[str, Any]:
        result = super().run(tmp, task_vars)
        del tmp  # unused
        args = self.validate_argument_spec(ARGUMENT_SPEC)[0].validated_parameters
        # The connection: the task's own options over the module_defaults a kubernetes.core.k8s task would get.
        defaults = _module_defaults(self._task, self._templar)
        connection = {name: defaults[name] for name in AUTH_ARG_SPEC if defaults.get(name) is not None}
        connection.update({name: args[name] for name in AUTH_ARG_SPEC if args.get(name) is not None})
        environ = self._task_environ()
        check_mode = bool(self._task.check_mode)
        try:
            objects = k8s_objects.unique(k8s_objects.documents(args["definition"]))
            if not objects:
                return {**result, "changed": False, "sent": [], "previewed": []}
            kubeconfig, context = k8s_objects.read_target(connection, environ)
            client = kubeclient.connect(kubeconfig, context, environ)
            found = [kubeclient.find(client, obj) for obj in objects]
            if args["state"] == "absent":
                plan = k8s_objects.Plan(send=k8s_objects.plan_absent(objects, found))
            else:
                namespaces = []
                if check_mode:
                    namespaces = [name for name in k8s_objects.namespaces_to_check(objects, found, args["apply"])
                                  if kubeclient.read(client, {"apiVersion": "v1", "kind": "Namespace",
                                                              "metadata": {"name": name}}) is not None]
                condition = args["wait_condition"]
                plan = k8s_objects.plan_present(
                    objects, found, apply=args["apply"], check_mode=check_mode, namespaces=namespaces,
                    ready=(lambda obj: k8s_objects.ready(obj, condition)) if args["wait"] else None)
        except (k8s_objects.ObjectsError, kubeclient.KubeReadError) as error:
            return {**result, "failed": True, "msg": f"servingstack_k8s: {error}"}
        result.update(changed=bool(plan.previewed), sent=[k8s_objects.ref(obj) for obj in plan.send],
                      previewed=[k8s_objects.ref(obj) for obj in plan.previewed])
        if not plan.send:
            return self._noted(result, args, check_mode, objects)
        module_args = {**connection, "state": args["state"], "definition": plan.send, "wait": args["wait"],
                       "wait_sleep": args["wait_sleep"], "wait_timeout": args["wait_timeout"]}
        if args["state"] == "present":
            module_args["apply"] = args["apply"]
            if args["wait_condition"]:
                module_args["wait_condition"] = {key: value for key, value in args["wait_condition"].items()
                                                 if value is not None}
        done = self._execute_module(module_name=MODULE, module_args=module_args, task_vars=task_vars)
        if args["state"] == "present" and done.get("failed") and k8s_objects.created_meanwhile(done.get("msg")):
            # Another lane of the same cluster created one of these objects (a shared namespace) between the read
            # above and the module's create: run again, and the module patches what is there now.
            done = self._execute_module(module_name=MODULE, module_args=module_args, task_vars=task_vars)
        changed = bool(done.get("changed")) or result["changed"]
        if any(obj["kind"] == "Secret" for obj in plan.send):
            # What the module returns (the objects, their diff, its arguments) would show a Secret's data.
            done = {key: value for key, value in done.items() if key not in SECRET_BEARING}
        result.update(done)
        result["changed"] = changed
        return self._noted(result, args, check_mode, objects)

    @staticmethod
    def _noted(result: dict[str, Any], args: dict[str, Any], check_mode: bool,
               objects: list[dict[str, Any]]) -> dict[str, Any]:
        """Note in the journal (when given) which objects were applied, waited for how, or deleted: for the
        servingstack role's converge record, which reads them back once the converge ended."""
        if not args["journal"] or check_mode or result.get("failed"):
            return result
        try:
            if args["state"] == "absent":
                record.note(args["journal"], absent=objects)
            else:
                record.note(args["journal"], present=objects,
                            ready=(args["wait_condition"] or {}) if args["wait"] else None)
        except OSError as error:
            return {**result, "failed": True, "msg": f"servingstack_k8s: noting the objects in the journal: {error}"}
        return result
