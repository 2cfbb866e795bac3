# Copyright 2026 The modelplane.serving authors
# Apache License 2.0 (see LICENSE)
"""Action plugin for servingstack_barrier: runs on the controller only (see the module's documentation)."""

from __future__ import annotations

from typing import Any

from ansible.plugins.action import ActionBase
from ansible_collections.modelplane.serving.plugins.module_utils.servingstack import barrier

STATES = ("start", "converged", "failed", "wait", "finish")


def _true(value: Any) -> bool:
    return str(value).strip().lower() in {"true", "yes", "on", "1"}


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset({"state", "dir", "name", "names", "timeout", "previewed"})

    def run(self, tmp: Any = None, task_vars: dict[str, Any] | None = None) -> dict[str, Any]:
        result = super().run(tmp, task_vars)
        args = self._task.args
        state = args.get("state")
        if state not in STATES:
            return {**result, "failed": True, "msg": f"state: {state!r} is not one of {', '.join(STATES)}"}
        # Bookkeeping of this run on the controller: never a change to the cluster, also in check mode.
        result["changed"] = False
        if state == "start":
            return {**result, "dir": barrier.start(args.get("dir") or None)}
        directory = args.get("dir")
        if not directory:
            return {**result, "failed": True, "msg": f"dir is required with state {state}"}
        try:
            if state in (barrier.CONVERGED, barrier.FAILED):
                if not args.get("name"):
                    return {**result, "failed": True, "msg": f"name is required with state {state}"}
                outcome = barrier.PREVIEWED if state == barrier.CONVERGED and _true(args.get("previewed")) else state
                barrier.mark(str(directory), str(args["name"]), outcome)
                return result
            if state == "finish":
                return {**result, "removed": barrier.finish(str(directory))}
            names = [str(name) for name in args.get("names") or []]
            outcomes = barrier.wait(str(directory), names, float(args.get("timeout", 3600)))
        except (OSError, ValueError) as error:
            return {**result, "failed": True, "msg": f"servingstack_barrier: {error}"}
        missing = [name for name, outcome in outcomes.items() if outcome not in (barrier.CONVERGED, barrier.PREVIEWED)]
        result.update(outcomes=outcomes, not_converged=missing,
                      previewed=any(outcome == barrier.PREVIEWED for outcome in outcomes.values()))
        if missing:
            result.update(failed=True, msg="not converged: " + ", ".join(
                f"{name} ({outcomes[name]})" for name in missing))
        return result
