"""Command line of the helm test double: argv like real helm 3, state in the cluster."""

from __future__ import annotations

import json
import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HELM_VERSION = "v3.17.3"
GIT_COMMIT = "e4da49785aa6e6ee2b86efd5dd9e43400318262b"

# Flags that take a value (long names; short aliases map to them below).
VALUE_FLAGS = {
    "--version",
    "--repo",
    "--namespace",
    "--kubeconfig",
    "--kube-context",
    "--timeout",
    "--values",
    "--set",
    "--set-string",
    "--set-json",
    "--set-file",
    "--set-literal",
    "--output",
    "--filter",
    "--history-max",
    "--post-renderer",
    "--post-renderer-args",
    "--description",
    "--max",
    "--template",
    "--cascade",
    "--revision",
    "--username",
    "--password",
    "--ca-file",
    "--cert-file",
    "--key-file",
    "--registry-config",
    "--repository-config",
    "--repository-cache",
    "--kube-apiserver",
    "--kube-token",
    "--kube-ca-file",
    "--burst-limit",
    "--qps",
    "--kube-as-user",
    "--kube-as-group",
    "--selector",
    "--offset",
    "--time-format",
    "--labels",
    "--name-template",
    "--keyring",
}
BOOL_FLAGS = {
    "--install",
    "--reset-values",
    "--reuse-values",
    "--reset-then-reuse-values",
    "--wait",
    "--wait-for-jobs",
    "--atomic",
    "--create-namespace",
    "--force",
    "--no-hooks",
    "--skip-crds",
    "--replace",
    "--dependency-update",
    "--insecure-skip-tls-verify",
    "--plain-http",
    "--take-ownership",
    "--skip-schema-validation",
    "--all",
    "--all-namespaces",
    "--deployed",
    "--failed",
    "--pending",
    "--superseded",
    "--uninstalled",
    "--uninstalling",
    "--keep-history",
    "--ignore-not-found",
    "--short",
    "--devel",
    "--force-update",
    "--cleanup-on-fail",
    "--render-subchart-notes",
    "--debug",
    "--verify",
    "--no-headers",
    "--date",
    "--reverse",
    "--generate-name",
    "--enable-dns",
    "--pass-credentials",
    "--help",
    "--show-resources",
    "--disable-openapi-validation",
}
SHORT = {
    "-n": "--namespace",
    "-o": "--output",
    "-i": "--install",
    "-a": "--all",
    "-A": "--all-namespaces",
    "-q": "--short",
    "-l": "--selector",
    "-m": "--max",
    "-g": "--generate-name",
    "-d": "--date",
    "-r": "--reverse",
    "-h": "--help",
}
SET_FLAGS = ("--set-json", "--set", "--set-string", "--set-file", "--set-literal")
SECRET_FLAGS = {"--password", "--kube-token"}


class HelmError(Exception):
    """Printed as ``Error: <message>`` on stderr, exit code 1."""


@dataclass
class Args:
    positionals: list[str] = field(default_factory=list)
    values: dict[str, list[str]] = field(default_factory=dict)  # value flags, in order
    bools: dict[str, bool] = field(default_factory=dict)
    ordered: list[tuple[str, str]] = field(default_factory=list)  # (flag, value) of value flags in argv order

    def value(self, flag: str, default: str | None = None) -> str | None:
        found = self.values.get(flag)
        return found[-1] if found else default

    def flag(self, flag: str) -> bool:
        return self.bools.get(flag, False)


def _parse_bool(flag: str, text: str) -> bool:
    lowered = text.lower()
    if lowered in ("1", "t", "true"):
        return True
    if lowered in ("0", "f", "false"):
        return False
    raise HelmError(f'invalid argument "{text}" for "{flag}" flag: strconv.ParseBool: parsing "{text}": invalid syntax')


def parse_argv(argv: list[str]) -> Args:
    """Parse flags anywhere in argv (helm accepts them before and after the subcommand)."""
    args = Args()
    i = 0
    while i < len(argv):
        token = argv[i]
        i += 1
        if token == "--":
            args.positionals.extend(argv[i:])
            break
        if not token.startswith("-") or token == "-":
            args.positionals.append(token)
            continue
        name, eq, inline = token.partition("=")
        if not name.startswith("--"):
            if len(name) > 2 and not eq:  # -nfoo
                name, inline, eq = name[:2], name[2:], "="
            if name == "-f":
                name = "-f"
            elif name in SHORT:
                name = SHORT[name]
            else:
                raise HelmError(f"unknown shorthand flag: {name[1:]!r} in {token}")
        if name == "-f" or name in VALUE_FLAGS:
            if eq:
                value = inline
            elif i < len(argv):
                value = argv[i]
                i += 1
            else:
                raise HelmError(f"flag needs an argument: {token}")
            args.values.setdefault(name, []).append(value)
            args.ordered.append((name, value))
        elif name == "--dry-run":  # optional value: --dry-run[=client|server|none]
            args.bools[name] = inline.lower() not in ("none", "false") if eq else True
        elif name in BOOL_FLAGS:
            args.bools[name] = _parse_bool(name, inline) if eq else True
        else:
            raise HelmError(f"unknown flag: {name}")
    return args


def redact(argv: list[str]) -> list[str]:
    """argv with ``--set``-family values and credentials replaced (keys kept)."""
    out: list[str] = []
    pending: str | None = None
    for token in argv:
        if pending:
            out.append(_redact_value(pending, token))
            pending = None
            continue
        name, eq, value = token.partition("=")
        if name in SET_FLAGS or name in SECRET_FLAGS:
            if eq:
                out.append(f"{name}={_redact_value(name, value)}")
            else:
                out.append(token)
                pending = name
            continue
        out.append(token)
    return out


def _redact_value(flag: str, value: str) -> str:
    if flag in SECRET_FLAGS:
        return "<redacted>"
    if flag in ("--set-json", "--set-literal", "--set-file"):
        return value.partition("=")[0] + "=<redacted>"
    from helmdouble.values import _split_unescaped

    return ",".join(part.partition("=")[0] + "=<redacted>" for part in _split_unescaped(value, ",", braces=True))


# --------------------------------------------------------------------------- context


class Context:
    def __init__(self, args: Args) -> None:
        self.args = args
        self._kube: Any = None
        self._namespace = args.value("--namespace") or os.environ.get("HELM_NAMESPACE")

    @property
    def kube(self) -> Any:
        if self._kube is None:
            from helmdouble.kube import Kube, Unreachable

            if self.args.value("--kube-apiserver"):
                os.environ["HELM_KUBEAPISERVER"] = self.args.value("--kube-apiserver") or ""
            if self.args.value("--kube-token"):
                os.environ["HELM_KUBETOKEN"] = self.args.value("--kube-token") or ""
            try:
                self._kube = Kube(
                    self.args.value("--kubeconfig"),
                    self.args.value("--kube-context") or os.environ.get("HELM_KUBECONTEXT"),
                )
            except Unreachable as exc:
                raise HelmError(str(exc)) from exc
        return self._kube

    @property
    def namespace(self) -> str:
        if self._namespace:
            return self._namespace
        return self.kube.default_namespace

    @property
    def store(self) -> Any:
        from helmdouble.release import Store

        return Store(self.kube)


def out(text: str) -> None:
    sys.stdout.write(text)


def _yaml(data: Any) -> str:
    import yaml

    dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    return yaml.dump(data, Dumper=dumper, default_flow_style=False)


def _dump(data: Any, fmt: str) -> str:
    if fmt == "json":
        return json.dumps(data) + "\n"
    return _yaml(data)


def _output(args: Args) -> str:
    fmt = (args.value("--output") or "table").lower()
    if fmt not in ("table", "yaml", "json"):
        raise HelmError(f'invalid argument "{fmt}" for "-o, --output" flag: invalid format type')
    return fmt


def _check_timeout(args: Args) -> None:
    """Refuse an invalid ``--timeout`` before touching the cluster, as cobra's flag parsing does."""
    from helmdouble.wait import parse_duration

    timeout = args.value("--timeout")
    if timeout is not None:
        parse_duration(timeout)


def _release_name(args: Args, command: str, count: int = 1) -> list[str]:
    names = args.positionals[1 : 1 + count]
    if len(args.positionals) - 1 < count:
        raise HelmError(f'"helm {command}" requires {count} argument{"s" if count > 1 else ""}')
    return names


# --------------------------------------------------------------------------- simple commands


def cmd_version(ctx: Context) -> None:
    args = ctx.args
    if args.value("--template"):
        out(args.value("--template", "").replace("{{.Version}}", HELM_VERSION).replace("{{ .Version }}", HELM_VERSION))
        return
    if args.flag("--short"):
        out(f"{HELM_VERSION}+g{GIT_COMMIT[:7]}\n")
        return
    out(
        f'version.BuildInfo{{Version:"{HELM_VERSION}", GitCommit:"{GIT_COMMIT}", '
        'GitTreeState:"clean", GoVersion:"go1.23.7"}\n'
    )


def cmd_plugin(ctx: Context) -> None:
    sub = ctx.args.positionals[1:2]
    if sub in (["list"], ["ls"]):
        out("NAME\tVERSION\tDESCRIPTION\n")
        return
    raise HelmError(f"helm test double: plugin {' '.join(sub)} is not supported")


def _repo_file(args: Args) -> Path:
    configured = args.value("--repository-config") or os.environ.get("HELM_REPOSITORY_CONFIG")
    if configured:
        return Path(configured)
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.expanduser("~/.config")
    return Path(base) / "helm" / "repositories.yaml"


def _repos(args: Args) -> dict[str, str]:
    import yaml

    path = _repo_file(args)
    if not path.exists():
        return {}
    data = yaml.safe_load(path.read_text()) or {}
    return {entry["name"]: entry["url"] for entry in data.get("repositories") or []}


def _save_repos(args: Args, repos: dict[str, str]) -> None:
    path = _repo_file(args)
    path.parent.mkdir(parents=True, exist_ok=True)
    entries = [{"name": name, "url": url} for name, url in sorted(repos.items())]
    path.write_text(_yaml({"apiVersion": "", "generated": "0001-01-01T00:00:00Z", "repositories": entries}))


def cmd_repo(ctx: Context) -> None:
    from helmdouble.catalog import CHARTS

    args = ctx.args
    sub = args.positionals[1] if len(args.positionals) > 1 else ""
    repos = _repos(args)
    if sub == "add":
        if len(args.positionals) < 4:
            raise HelmError('"helm repo add" requires 2 arguments')
        name, url = args.positionals[2], args.positionals[3].rstrip("/")
        known = {repo for chart in CHARTS for repo in chart.repos}
        if url not in known:
            raise HelmError(
                f'looks like "{url}" is not a valid chart repository or cannot be reached: '
                f"failed to fetch {url}/index.yaml : 404 Not Found"
            )
        if repos.get(name) == url:
            out(f'"{name}" already exists with the same configuration, skipping\n')
            return
        if name in repos and not args.flag("--force-update"):
            raise HelmError(f"repository name ({name}) already exists, please specify a different name")
        repos[name] = url
        _save_repos(args, repos)
        out(f'"{name}" has been added to your repositories\n')
    elif sub == "update" or sub == "up":
        if not repos:
            raise HelmError("no repositories found. You must add one before updating")
        out("Hang tight while we grab the latest from your chart repositories...\n")
        for name in sorted(repos):
            out(f'...Successfully got an update from the "{name}" chart repository\n')
        out("Update Complete. ⎈Happy Helming!⎈\n")
    elif sub in ("list", "ls"):
        if not repos:
            raise HelmError("no repositories to show")
        if _output(args) == "table":
            out("NAME\tURL\n" + "".join(f"{n}\t{u}\n" for n, u in sorted(repos.items())))
        else:
            out(_dump([{"name": n, "url": u} for n, u in sorted(repos.items())], _output(args)))
    elif sub in ("remove", "rm"):
        for name in args.positionals[2:]:
            if name not in repos:
                raise HelmError(f"no repo named {name!r} found")
            del repos[name]
            out(f'"{name}" has been removed from your repositories\n')
        _save_repos(args, repos)
    else:
        raise HelmError(f"helm test double: repo {sub} is not supported")


def resolve_chart(ctx: Context, ref: str) -> Any:
    from helmdouble.catalog import ChartNotFound, resolve
    from helmdouble.chart import Chart, LocalChartError, local_chart

    path = Path(ref)
    if path.exists():  # helm's LocateChart tries a local path before any repository
        try:
            return local_chart(path)
        except LocalChartError as exc:
            raise HelmError(str(exc)) from exc
    if path.is_absolute() or ref.startswith("."):
        raise HelmError(f'path "{ref}" not found')
    try:
        entry, version = resolve(ref, ctx.args.value("--version"), ctx.args.value("--repo"), _repos(ctx.args))
    except ChartNotFound as exc:
        raise HelmError(str(exc)) from exc
    return Chart(entry, version)


def cmd_show(ctx: Context) -> None:
    args = ctx.args
    if len(args.positionals) < 3:
        raise HelmError('"helm show" requires a subcommand and 1 argument')
    sub, ref = args.positionals[1], args.positionals[2]
    chart = resolve_chart(ctx, ref)
    if sub == "chart":
        out(_yaml(chart.metadata))
    elif sub == "values":
        out((chart.folder / "values.yaml").read_text())
    elif sub == "crds":
        out("".join("---\n" + _yaml(obj) for _src, obj in chart.crd_objects({}, "crds-dir")))
    elif sub == "readme":
        out("")
    elif sub == "all":
        out(_yaml(chart.metadata) + "---\n" + (chart.folder / "values.yaml").read_text())
    else:
        raise HelmError(f'unknown command "{sub}" for "helm show"')


# --------------------------------------------------------------------------- release queries

STATE_FLAGS = {
    "--deployed": {"deployed"},
    "--failed": {"failed"},
    "--pending": {"pending-install", "pending-upgrade", "pending-rollback"},
    "--superseded": {"superseded"},
    "--uninstalled": {"uninstalled"},
    "--uninstalling": {"uninstalling"},
}


def cmd_list(ctx: Context) -> None:
    from helmdouble.release import list_element

    args = ctx.args
    fmt = _output(args)
    namespace = None if args.flag("--all-namespaces") else ctx.namespace
    pattern = args.value("--filter") or args.value("-f")
    regex = re.compile(pattern) if pattern else None
    releases = [r for r in ctx.store.all(namespace) if not regex or regex.search(r["name"])]
    wanted: set[str] = set()
    for flag, states in STATE_FLAGS.items():
        if args.flag(flag):
            wanted |= states
    if args.flag("--all"):
        wanted = set()
        show_all = True
    else:
        show_all = False
        if not wanted:
            wanted = {"deployed", "failed"}
    only_superseded = wanted == {"superseded"}
    if not only_superseded:
        latest: dict[tuple[str, str], dict[str, Any]] = {}
        for rel in releases:
            key = (rel["namespace"], rel["name"])
            if key not in latest or rel["version"] > latest[key]["version"]:
                latest[key] = rel
        releases = list(latest.values())
    if not show_all:
        releases = [r for r in releases if r["info"]["status"] in wanted]
    releases.sort(key=lambda r: (r["name"], r["namespace"]))
    rows = [list_element(r) for r in releases]
    if args.flag("--short"):
        out("".join(r["name"] + "\n" for r in rows))
    elif fmt == "table":
        header = "NAME\tNAMESPACE\tREVISION\tUPDATED\tSTATUS\tCHART\tAPP VERSION\n"
        out(
            header
            + "".join(
                f"{r['name']}\t{r['namespace']}\t{r['revision']}\t{r['updated']}\t{r['status']}\t{r['chart']}\t{r['app_version']}\n"
                for r in rows
            )
        )
    else:
        out(_dump(rows, fmt))


def _release(ctx: Context, name: str, revision: str | None = None) -> dict[str, Any]:
    history = ctx.store.history(name, ctx.namespace)
    if not history:
        raise HelmError("release: not found")
    if revision:
        found = next((r for r in history if str(r["version"]) == str(revision)), None)
        if found is None:
            raise HelmError("release: not found")
        return found
    return history[-1]


def cmd_get(ctx: Context) -> None:
    args = ctx.args
    if len(args.positionals) < 3:
        raise HelmError('"helm get" requires a subcommand and 1 argument')
    sub, name = args.positionals[1], args.positionals[2]
    rel = _release(ctx, name, args.value("--revision"))
    fmt = _output(args) if sub == "values" else "table"
    if sub == "values":
        if args.flag("--all"):
            from helmdouble.values import coalesce

            data: Any = coalesce(rel["chart"].get("values") or {}, rel.get("config") or {})
            title = "COMPUTED VALUES:"
        else:
            data = rel.get("config") or None
            title = "USER-SUPPLIED VALUES:"
        if fmt == "table":
            out(f"{title}\n" + _yaml(data))
        else:
            out(_dump(data, fmt))
    elif sub == "manifest":
        out(rel.get("manifest") or "")
        if rel.get("manifest"):
            out("\n")
    elif sub == "notes":
        notes = rel["info"].get("notes")
        if notes:
            out(f"NOTES:\n{notes}\n")
    elif sub == "hooks":
        out("")
    elif sub == "metadata":
        meta = rel["chart"]["metadata"]
        out(
            f"NAME: {rel['name']}\nCHART: {meta['name']}\nVERSION: {meta['version']}\n"
            f"APP_VERSION: {meta.get('appVersion', '')}\n"
            f"NAMESPACE: {rel['namespace']}\nREVISION: {rel['version']}\nSTATUS: {rel['info']['status']}\n"
        )
    elif sub == "all":
        from helmdouble.release import status_text

        out(status_text(rel, show_notes=False) + "USER-SUPPLIED VALUES:\n" + _yaml(rel.get("config") or None))
        out("\nHOOKS:\nMANIFEST:\n" + (rel.get("manifest") or "") + "\n")
    else:
        raise HelmError(f'unknown command "{sub}" for "helm get"')


def cmd_status(ctx: Context) -> None:
    from helmdouble.release import status_text

    args = ctx.args
    (name,) = _release_name(args, "status")
    rel = _release(ctx, name, args.value("--revision"))
    fmt = _output(args)
    if fmt == "table":
        out(status_text(rel))
    else:
        shown = {k: v for k, v in rel.items() if k != "chart"}
        shown["chart"] = {"metadata": rel["chart"]["metadata"]}
        out(_dump(shown, fmt))


def cmd_history(ctx: Context) -> None:
    from helmdouble.release import go_time, history_element

    args = ctx.args
    (name,) = _release_name(args, "history")
    history = ctx.store.history(name, ctx.namespace)
    if not history:
        raise HelmError("release: not found")
    limit = int(args.value("--max") or 256)
    rows = [history_element(r) for r in history][-limit:]
    fmt = _output(args)
    if fmt == "table":
        out(
            "REVISION\tUPDATED\tSTATUS\tCHART\tAPP VERSION\tDESCRIPTION\n"
            + "".join(
                f"{r['revision']}\t{go_time(r['updated'])}\t{r['status']}\t{r['chart']}\t{r['app_version']}\t{r['description']}\n"
                for r in rows
            )
        )
    else:
        out(_dump(rows, fmt))


# --------------------------------------------------------------------------- install / upgrade / uninstall


def cmd_upgrade(ctx: Context, install_only: bool = False) -> None:
    from helmdouble import deploy

    args = ctx.args
    command = "install" if install_only else "upgrade"
    if len(args.positionals) < 3:
        raise HelmError(f'"helm {command}" requires 2 arguments')
    _check_timeout(args)
    deploy.upgrade(ctx, args.positionals[1], args.positionals[2], install_only=install_only)


def cmd_uninstall(ctx: Context) -> None:
    from helmdouble import deploy

    args = ctx.args
    if len(args.positionals) < 2:
        raise HelmError('"helm uninstall" requires at least 1 argument')
    _check_timeout(args)
    for name in args.positionals[1:]:
        deploy.uninstall(ctx, name)


def cmd_rollback(ctx: Context) -> None:
    from helmdouble import deploy

    args = ctx.args
    if len(args.positionals) < 2:
        raise HelmError('"helm rollback" requires at least 1 argument')
    revision = int(args.positionals[2]) if len(args.positionals) > 2 else 0
    _check_timeout(args)
    deploy.rollback(ctx, args.positionals[1], revision)
    out("Rollback was a success! Happy Helming!\n")


COMMANDS = {
    "version": cmd_version,
    "plugin": cmd_plugin,
    "repo": cmd_repo,
    "show": cmd_show,
    "inspect": cmd_show,
    "list": cmd_list,
    "ls": cmd_list,
    "get": cmd_get,
    "status": cmd_status,
    "history": cmd_history,
    "hist": cmd_history,
    "upgrade": cmd_upgrade,
    "install": lambda ctx: cmd_upgrade(ctx, install_only=True),
    "uninstall": cmd_uninstall,
    "delete": cmd_uninstall,
    "del": cmd_uninstall,
    "un": cmd_uninstall,
    "rollback": cmd_rollback,
}


def _log(argv: list[str], code: int) -> None:
    path = os.environ.get("HELM_DOUBLE_LOG")
    if not path:
        return
    entry = {"argv": redact(argv), "namespace_env": os.environ.get("HELM_NAMESPACE"), "exit": code}
    with open(path, "a") as handle:
        handle.write(json.dumps(entry) + "\n")


def main(argv: list[str]) -> int:
    code = 0
    try:
        args = parse_argv(argv)
        if not args.positionals:
            out("The Kubernetes package manager (helm test double; see tests/helm_double/README.md)\n")
            return 0
        command = args.positionals[0]
        handler = COMMANDS.get(command)
        if handler is None:
            raise HelmError(f'unknown command "{command}" for "helm"')
        handler(Context(args))
    except HelmError as exc:
        sys.stderr.write(f"Error: {exc}\n")
        code = 1
    except BrokenPipeError:  # e.g. piped into head
        code = 0
    except Exception as exc:  # an API failure we did not map, or a bug: still starts with "Error: ", exit 1
        from helmdouble.kube import KubeError, Unreachable

        code = 1
        if isinstance(exc, (KubeError, Unreachable)):
            sys.stderr.write(f"Error: {exc}\n")
        else:  # a bug in the double: say so first, then show where
            import traceback

            sys.stderr.write(f"Error: internal error in the helm test double: {exc!r}\n{traceback.format_exc()}")
    finally:
        sys.stdout.flush()
        _log(argv, code)
    return code
