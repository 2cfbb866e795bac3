"""install / upgrade / uninstall / rollback, following helm 3's action package step by step."""

from __future__ import annotations

import json
import os
from typing import Any

from helmdouble.chart import KEEP_ANNOTATION, Chart, load_all
from helmdouble.cli import Context, HelmError, out, resolve_chart
from helmdouble.kube import KubeError
from helmdouble.release import now, status_text
from helmdouble.values import ValuesError, load_values_file, merge, parse_set
from helmdouble.wait import timeout, wait_deleted, wait_ready

MANAGED_BY = "app.kubernetes.io/managed-by"
RELEASE_NAME = "meta.helm.sh/release-name"
RELEASE_NAMESPACE = "meta.helm.sh/release-namespace"
SET_MODES = (
    ("--set-json", "json"),
    ("--set", "raw"),
    ("--set-string", "string"),
    ("--set-file", "file"),
    ("--set-literal", "literal"),
)


def user_values(ctx: Context) -> dict[str, Any]:
    """Values from -f/--values files (in order), then the --set family (in helm's order)."""
    result: dict[str, Any] = {}
    try:
        for flag, value in ctx.args.ordered:
            if flag in ("-f", "--values"):
                result = merge(result, load_values_file(value))
        for flag, mode in SET_MODES:
            for expr in ctx.args.values.get(flag, []):
                result = merge(result, parse_set(expr, mode))
    except ValuesError as exc:
        raise HelmError(str(exc)) from exc
    return result


def _values_problems(chart: Chart, user: dict[str, Any]) -> str | None:
    problems = chart.check(user)
    if not problems:
        return None
    if chart.schema is not None:
        head = "values don't meet the specifications of the schema(s) in the following chart(s):"
    else:
        head = (
            "values don't meet the specifications of the chart's values.yaml "
            "(checked by the helm test double, stricter than helm):"
        )
    return head + f"\n{chart.name}:\n" + "".join(f"- {p}\n" for p in problems)


def _render_problems(chart: Chart, user: dict[str, Any], namespace: str) -> str | None:
    problems = chart.render_failures(user, namespace)
    if not problems:
        return None
    return f"execution error at ({chart.name}/templates/validation.yaml): " + "; ".join(problems)


def _objects(manifest: str) -> list[dict[str, Any]]:
    return [doc for doc in load_all(manifest or "") if isinstance(doc, dict)]


def _key(obj: dict[str, Any], namespace: str) -> tuple[str, str, str]:
    meta = obj.get("metadata") or {}
    scoped = obj["kind"] not in ("CustomResourceDefinition", "Namespace", "ClusterRole", "ClusterRoleBinding")
    return obj["kind"], (meta.get("namespace") or namespace) if scoped else "", meta["name"]


def _owned(obj: dict[str, Any], name: str, namespace: str) -> dict[str, Any]:
    body = json.loads(json.dumps(obj))
    meta = body.setdefault("metadata", {})
    meta["labels"] = {**(meta.get("labels") or {}), MANAGED_BY: "Helm"}
    meta["annotations"] = {**(meta.get("annotations") or {}), RELEASE_NAME: name, RELEASE_NAMESPACE: namespace}
    return body


def _ownership_problem(live: dict[str, Any], name: str, namespace: str) -> str | None:
    meta = live.get("metadata") or {}
    labels, annotations = meta.get("labels") or {}, meta.get("annotations") or {}
    errors = []
    for kind, source, key, want in (
        ("label", labels, MANAGED_BY, "Helm"),
        ("annotation", annotations, RELEASE_NAME, name),
        ("annotation", annotations, RELEASE_NAMESPACE, namespace),
    ):
        if key not in source:
            errors.append(f'{kind} validation error: missing key "{key}": must be set to "{want}"')
        elif source[key] != want:
            errors.append(f'{kind} validation error: key "{key}" must equal "{want}": current value is "{source[key]}"')
    return "; ".join(errors) or None


def _check_ownership(ctx: Context, objects: list[dict[str, Any]], name: str, namespace: str, verb: str) -> None:
    if ctx.args.flag("--take-ownership"):
        return
    for obj in objects:
        live = ctx.kube.get(obj, namespace)
        if live is None:
            continue
        problem = _ownership_problem(live, name, namespace)
        if problem:
            kind, ns, obj_name = _key(obj, namespace)
            raise HelmError(
                f"rendered manifests contain a resource that already exists. Unable to continue with {verb}: "
                f'{kind} "{obj_name}" in namespace "{ns}" exists and cannot be imported into the current release: '
                f"invalid ownership metadata; {problem}"
            )


def _apply(ctx: Context, objects: list[dict[str, Any]], name: str, namespace: str) -> None:
    for obj in objects:
        body = _owned(obj, name, namespace)
        live = ctx.kube.get(body, namespace)
        try:
            if live is None:
                ctx.kube.create(body, namespace)
            else:
                ctx.kube.replace(body, namespace, (live.get("metadata") or {}).get("resourceVersion"))
        except KubeError as exc:
            verb = "create" if live is None else "update"
            raise HelmError(f"failed to {verb} resource: {exc}") from exc


def _kept(obj: dict[str, Any]) -> bool:
    return ((obj.get("metadata") or {}).get("annotations") or {}).get(KEEP_ANNOTATION) == "keep"


def _delete(ctx: Context, objects: list[dict[str, Any]], namespace: str) -> list[dict[str, Any]]:
    """Delete objects (reverse order) except those kept by resource policy; return the kept ones."""
    kept = []
    for obj in reversed(objects):
        if _kept(obj):
            kept.append(obj)
            continue
        ctx.kube.delete(obj, namespace)
    return kept


def _waits(ctx: Context) -> bool:
    """install/upgrade wait with ``--wait``, and with ``--atomic``, which sets it (helm: Wait = Wait || Atomic)."""
    return ctx.args.flag("--wait") or ctx.args.flag("--atomic")


def _wait_ready(ctx: Context, objects: list[dict[str, Any]], namespace: str) -> None:
    """helm's KubeClient.Wait / WaitWithJobs on the release's objects (``--wait-for-jobs`` adds Jobs)."""
    wait_ready(ctx, objects, namespace, timeout(ctx), jobs=ctx.args.flag("--wait-for-jobs"))


def _install_crds(ctx: Context, chart: Chart, user: dict[str, Any]) -> None:
    """Helm's crds/ directory: create what is missing, leave existing CRDs untouched."""
    for _src, crd in chart.crd_objects(user, "crds-dir"):
        try:
            ctx.kube.create(crd, "")
        except KubeError as exc:
            if exc.status != 409:
                raise HelmError(f"failed to install CRD {chart.name}/crds: {exc}") from exc


def _injected_failure(name: str) -> str | None:
    """Test hook: HELM_DOUBLE_FAIL=<release>[,<release>...] makes install/upgrade fail after applying."""
    names = {n.strip() for n in os.environ.get("HELM_DOUBLE_FAIL", "").split(",") if n.strip()}
    return "context deadline exceeded" if name in names else None


def _new_release(
    chart: Chart,
    name: str,
    namespace: str,
    user: dict[str, Any],
    revision: int,
    manifest: str,
    status: str,
    description: str,
    first_deployed: str | None = None,
) -> dict[str, Any]:
    stamp = now()
    release: dict[str, Any] = {
        "name": name,
        "info": {
            "first_deployed": first_deployed or stamp,
            "last_deployed": stamp,
            "deleted": "",
            "description": description,
            "status": status,
        },
        "chart": {
            "metadata": chart.metadata,
            "lock": None,
            "templates": [],
            "values": chart.defaults,
            "schema": None,
            "files": [],
        },
        "manifest": manifest,
        "version": revision,
        "namespace": namespace,
    }
    if user:
        release["config"] = user  # helm omits an empty config: `get values` then prints null
    return release


def upgrade(ctx: Context, name: str, ref: str, install_only: bool = False) -> None:
    args = ctx.args
    namespace = ctx.namespace
    history = ctx.store.history(name, namespace)
    installing = not history or history[-1]["info"]["status"] == "uninstalled"
    if install_only:
        if history and history[-1]["info"]["status"] not in ("uninstalled", "failed"):
            raise HelmError("INSTALLATION FAILED: cannot re-use a name that is still in use")
        _install(ctx, name, ref, history, prefix="INSTALLATION FAILED: ")
        return
    if installing:
        if not args.flag("--install"):
            raise HelmError(f'UPGRADE FAILED: "{name}" has no deployed releases')
        out(f'Release "{name}" does not exist. Installing it now.\n')
        _install(ctx, name, ref, history, prefix="")
        return
    _upgrade(ctx, name, ref, history)


def _install(ctx: Context, name: str, ref: str, history: list[dict[str, Any]], prefix: str) -> None:
    args = ctx.args
    namespace = ctx.namespace
    try:
        chart = resolve_chart(ctx, ref)
    except HelmError as exc:
        raise HelmError(prefix + str(exc)) from exc
    user = user_values(ctx)
    if not args.flag("--skip-crds"):
        _install_crds(ctx, chart, user)
    problem = _values_problems(chart, user) or _render_problems(chart, user, namespace)
    if problem:
        raise HelmError(prefix + problem)
    manifest = chart.manifest(user, name, namespace)
    objects = _objects(manifest)
    _check_ownership(ctx, objects, name, namespace, "install")
    if args.flag("--create-namespace"):
        ctx.kube.create_namespace(namespace)
    elif not ctx.kube.namespace_exists(namespace):
        raise HelmError(prefix + f'create: failed to create: namespaces "{namespace}" not found')
    revision = history[-1]["version"] + 1 if history else 1
    release = _new_release(
        chart, name, namespace, user, revision, manifest, "pending-install", "Initial install underway"
    )
    ctx.store.create(release)
    try:
        _apply(ctx, objects, name, namespace)
        if _waits(ctx):
            _wait_ready(ctx, objects, namespace)
        failure = _injected_failure(name)
        if failure:
            raise HelmError(failure)
    except HelmError as exc:
        release["info"].update(status="failed", description=f'Release "{name}" failed: {exc}', last_deployed=now())
        ctx.store.update(release)
        if args.flag("--atomic"):
            uninstall(ctx, name, quiet=True)
            raise HelmError(
                prefix + f"release {name} failed, and has been uninstalled due to atomic being set: {exc}"
            ) from exc
        raise HelmError(prefix + str(exc)) from exc
    release["info"].update(status="deployed", description="Install complete")
    ctx.store.update(release)
    out(status_text(release))


def _current(history: list[dict[str, Any]], name: str) -> dict[str, Any]:
    last = history[-1]
    status = last["info"]["status"]
    if status.startswith("pending"):
        raise HelmError("UPGRADE FAILED: another operation (install/upgrade/rollback) is in progress")
    if status == "deployed":
        return last
    deployed = [r for r in history if r["info"]["status"] == "deployed"]
    if deployed:
        return deployed[-1]
    if status in ("failed", "superseded"):
        return last
    raise HelmError(f'UPGRADE FAILED: "{name}" has no deployed releases')


def _upgrade_values(ctx: Context, current: dict[str, Any]) -> dict[str, Any]:
    args = ctx.args
    new = user_values(ctx)
    old = current.get("config") or {}
    if args.flag("--reset-values"):
        return new
    if args.flag("--reuse-values") or args.flag("--reset-then-reuse-values"):
        return merge(old, new)
    if not new and old:
        return old
    return new


def _upgrade(ctx: Context, name: str, ref: str, history: list[dict[str, Any]]) -> None:
    args = ctx.args
    namespace = ctx.namespace
    chart = resolve_chart(ctx, ref)
    current = _current(history, name)
    user = _upgrade_values(ctx, current)
    problem = _values_problems(chart, user) or _render_problems(chart, user, namespace)
    if problem:
        raise HelmError("UPGRADE FAILED: " + problem)
    manifest = chart.manifest(user, name, namespace)
    objects = _objects(manifest)
    old_objects = _objects(current.get("manifest") or "")
    old_keys = {_key(o, namespace) for o in old_objects}
    _check_ownership(ctx, [o for o in objects if _key(o, namespace) not in old_keys], name, namespace, "update")
    release = _new_release(
        chart,
        name,
        namespace,
        user,
        history[-1]["version"] + 1,
        manifest,
        "pending-upgrade",
        "Preparing upgrade",
        first_deployed=current["info"]["first_deployed"],
    )
    ctx.store.create(release)
    try:
        _apply(ctx, objects, name, namespace)
        new_keys = {_key(o, namespace) for o in objects}
        _delete(ctx, [o for o in old_objects if _key(o, namespace) not in new_keys], namespace)
        if _waits(ctx):
            _wait_ready(ctx, objects, namespace)
        failure = _injected_failure(name)
        if failure:
            raise HelmError(failure)
    except HelmError as exc:
        release["info"].update(status="failed", description=f'Upgrade "{name}" failed: {exc}', last_deployed=now())
        ctx.store.update(release)
        if args.flag("--atomic"):
            _atomic_rollback(ctx, name, current, exc)
            raise HelmError(
                f"UPGRADE FAILED: release {name} failed, and has been rolled back due to atomic being set: {exc}"
            ) from exc
        raise HelmError(f"UPGRADE FAILED: {exc}") from exc
    for old in history:
        if old["info"]["status"] == "deployed":
            old["info"].update(status="superseded", description="Superseded")
            ctx.store.update(old)
    release["info"].update(status="deployed", description="Upgrade complete")
    ctx.store.update(release)
    _prune_history(ctx, [*history, release])
    out(f'Release "{name}" has been upgraded. Happy Helming!\n' + status_text(release))


def _prune_history(ctx: Context, history: list[dict[str, Any]]) -> None:
    """``--history-max`` (helm's default 10; 0 = no limit): drop the oldest revisions that are not deployed."""
    limit = int(ctx.args.value("--history-max") or 10)
    if limit <= 0 or len(history) <= limit:
        return
    removable = [r for r in history[:-1] if r["info"]["status"] != "deployed"]
    for old in removable[: len(history) - limit]:
        ctx.store.delete(old)


def _atomic_rollback(ctx: Context, name: str, current: dict[str, Any], cause: HelmError) -> None:
    """helm's upgrade failRelease with --atomic: roll back to the last deployed revision, always waiting."""
    try:
        _rollback_to(ctx, name, current, ctx.store.history(name, ctx.namespace), wait=True)
    except HelmError as exc:
        raise HelmError(
            "UPGRADE FAILED: an error occurred while rolling back the release. "
            f"original upgrade error: {cause}: {exc}"
        ) from exc


def _rollback_to(
    ctx: Context, name: str, target: dict[str, Any], history: list[dict[str, Any]], wait: bool = False
) -> dict[str, Any]:
    namespace = ctx.namespace
    last = history[-1]
    objects = _objects(target.get("manifest") or "")
    release = json.loads(json.dumps(target))
    stamp = now()
    release["version"] = last["version"] + 1
    release["info"].update(
        status="pending-rollback", description=f"Rollback to {target['version']}", last_deployed=stamp, deleted=""
    )
    ctx.store.create(release)
    _apply(ctx, objects, name, namespace)
    current_keys = {_key(o, namespace) for o in objects}
    _delete(ctx, [o for o in _objects(last.get("manifest") or "") if _key(o, namespace) not in current_keys], namespace)
    if wait:
        try:
            _wait_ready(ctx, objects, namespace)
        except HelmError as exc:
            # helm's performRollback: the new revision is failed, the deployed one is not superseded.
            release["info"].update(status="failed", description=f'Release "{name}" failed: {exc}')
            ctx.store.update(release)
            raise HelmError(f"release {name} failed: {exc}") from exc
    for old in history:
        if old["info"]["status"] == "deployed":
            old["info"].update(status="superseded", description="Superseded")
            ctx.store.update(old)
    release["info"]["status"] = "deployed"
    ctx.store.update(release)
    return release


def rollback(ctx: Context, name: str, revision: int) -> None:
    history = ctx.store.history(name, ctx.namespace)
    if not history:
        raise HelmError("release: not found")
    wanted = revision or (history[-2]["version"] if len(history) > 1 else history[-1]["version"])
    target = next((r for r in history if r["version"] == wanted), None)
    if target is None:
        raise HelmError(f"release has no {wanted} version")
    _rollback_to(ctx, name, target, history, wait=ctx.args.flag("--wait"))


def uninstall(ctx: Context, name: str, quiet: bool = False) -> None:
    args = ctx.args
    namespace = ctx.namespace
    keep_history = args.flag("--keep-history") and not quiet
    history = ctx.store.history(name, namespace)
    if not history:
        if args.flag("--ignore-not-found"):
            return
        raise HelmError(f"uninstall: Release not loaded: {name}: release: not found")
    last = history[-1]
    if last["info"]["status"] == "uninstalled":
        if keep_history:
            raise HelmError(f'the release named "{name}" is already deleted')
        for rel in history:
            ctx.store.delete(rel)
        if not quiet:
            out(f'release "{name}" uninstalled\n')
        return
    last["info"].update(status="uninstalling", description="Deletion in progress (or silently failed)")
    ctx.store.update(last)
    objects = _objects(last.get("manifest") or "")
    kept = _delete(ctx, objects, namespace)
    errors = []
    if args.flag("--wait") and not quiet:  # an --atomic purge does not wait (helm's failRelease)
        try:
            wait_deleted(ctx, [o for o in objects if not _kept(o)], namespace, timeout(ctx))
        except HelmError as exc:
            errors.append(str(exc))
    if keep_history:
        last["info"].update(status="uninstalled", description="Uninstallation complete", deleted=now())
        ctx.store.update(last)
    else:
        for rel in history:
            ctx.store.delete(rel)
    if errors:  # helm still records or purges the release, then reports what went wrong
        raise HelmError(f"uninstallation completed with {len(errors)} error(s): {'; '.join(errors)}")
    if quiet:
        return
    if kept:
        out("These resources were kept due to the resource policy:\n")
        out("".join(f"[{o['kind']}] {o['metadata']['name']}\n" for o in reversed(kept)))
        out("\n")
    out(f'release "{name}" uninstalled\n')
