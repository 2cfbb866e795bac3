"""HTTP front of the stand-in: URL routing, query parameters, discovery, OpenAPI, watch streaming, stats."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from . import auth, protobuf
from .resources import ResourceType
from .selection import SelectorError
from .store import APIError, Cluster

KUBE_VERSION = {
    "major": "1", "minor": "34", "gitVersion": "v1.34.2", "gitCommit": "standin", "gitTreeState": "clean",
    "buildDate": "2026-01-01T00:00:00Z", "goVersion": "go1.24", "compiler": "gc", "platform": "linux/amd64",
    "emulationMajor": "1", "emulationMinor": "34", "minCompatibilityMajor": "1", "minCompatibilityMinor": "33",
}
VERB_NAMES = ("get", "list", "watch", "create", "update", "patch", "apply", "delete", "deletecollection")


class Stats:
    """Request counters per verb and per resource (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.reset()

    def reset(self) -> None:
        with self._lock:
            self.verbs: Counter[str] = Counter()
            self.resources: Counter[str] = Counter()
            self.paths: Counter[str] = Counter()
            self.total = 0

    def count(self, verb: str, resource: str | None) -> None:
        with self._lock:
            self.total += 1
            self.verbs[verb] += 1
            if resource:
                self.resources[f"{verb} {resource}"] += 1

    def snapshot(self) -> dict[str, Any]:
        with self._lock:
            return {"total": self.total, "verbs": dict(self.verbs), "resources": dict(self.resources)}


class StandInServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    # socketserver's default listen backlog is 5: a burst of connections (helm installing CRDs while other lanes
    # read, as a fleet converge does) overflowed it and clients saw "connection reset by peer", which a real API
    # server (Go's net/http, backlog SOMAXCONN) never does.
    request_queue_size = 1024

    def __init__(self, address: tuple[str, int], cluster: Cluster) -> None:
        super().__init__(address, Handler)
        self.cluster = cluster
        self.stats = Stats()
        self.stop_event = threading.Event()
        self.latency: list[float] = []

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host}:{port}"


def _flag(query: dict[str, list[str]], name: str) -> bool:
    return (query.get(name) or [""])[0].lower() in ("true", "1")


def _one(query: dict[str, list[str]], name: str) -> str | None:
    values = query.get(name)
    return values[0] if values else None


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: StandInServer

    def setup(self) -> None:
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, format: str, *args: Any) -> None:
        return

    # ------------------------------------------------------------ plumbing

    def _body(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _send(self, code: int, payload: Any, warnings: list[str] | None = None,
              content_type: str = "application/json") -> None:
        data = payload if isinstance(payload, bytes) else json.dumps(payload, separators=(",", ":")).encode()
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Cache-Control", "no-cache, private")
        self.send_header("Audit-Id", "standin")
        self.send_header("X-Test-Double", "kubernetes-api-standin")
        for text in warnings or []:
            quoted = text.replace("\\", "\\\\").replace('"', '\\"')
            self.send_header("Warning", f'299 - "{quoted}"')
        # Headers and body leave in one write (no Nagle/delayed-ACK stall); this is end_headers() plus the body.
        self._headers_buffer.extend([b"\r\n", data])
        self.flush_headers()

    def _error(self, exc: APIError) -> None:
        self._send(exc.code, exc.status())

    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_POST(self) -> None:
        self._dispatch("POST")

    def do_PUT(self) -> None:
        self._dispatch("PUT")

    def do_PATCH(self) -> None:
        self._dispatch("PATCH")

    def do_DELETE(self) -> None:
        self._dispatch("DELETE")

    def _dispatch(self, method: str) -> None:
        started = time.perf_counter()
        parts = urlsplit(self.path)
        query = parse_qs(parts.query, keep_blank_values=True)
        path = parts.path.rstrip("/") or "/"
        body = self._body()
        if not path.startswith("/_standin") and auth.rejects(self.server, self.headers):  # StandIn(bearer_token=)
            return self._error(auth.unauthorized())
        try:
            if "protobuf" in self.headers.get("Content-Type", ""):
                body = _from_protobuf(method, body)
            if path.startswith("/_standin"):
                self._debug(method, path, body)
            elif path.startswith("/api/") or path.startswith("/apis/") or path in ("/api", "/apis"):
                self._api(method, path, query, body)
            else:
                self._nonresource(path)
        except APIError as exc:
            self._error(exc)
        except SelectorError as exc:
            self._error(APIError(400, "BadRequest", str(exc)))
        except (BrokenPipeError, ConnectionResetError):
            return
        except Exception as exc:  # a stand-in bug: answer 500 with the reason rather than hang the client
            self._error(APIError(500, "InternalError", f"stand-in error: {type(exc).__name__}: {exc}"))
        finally:
            self.server.latency.append(time.perf_counter() - started)
            if len(self.server.latency) > 100_000:
                del self.server.latency[:50_000]

    # ------------------------------------------------------------ non-resource endpoints

    def _nonresource(self, path: str) -> None:
        cluster = self.server.cluster
        self.server.stats.count("discovery", None)
        if path == "/version":
            self._send(200, KUBE_VERSION)
        elif path in ("/healthz", "/readyz", "/livez"):
            self._send(200, b"ok", content_type="text/plain")
        elif path == "/openapi/v2":
            accept = self.headers.get("Accept", "")
            if "protobuf" in accept and "json" not in accept.split(",")[0]:
                # An empty protobuf Document: kubectl finds no schema and skips client-side validation. The type is
                # what kube-openapi answers with (no "@": Go's mime parser refuses the Accept spelling).
                self._send(200, b"", content_type="application/com.github.proto-openapi.spec.v2.v1.0+protobuf")
            else:
                self._send(200, {"swagger": "2.0", "info": {"title": "Kubernetes", "version": "v1.34.2"},
                                 "paths": {}, "definitions": {}})
        elif path == "/openapi/v3":
            self._send(200, {"paths": {_v3_key(g, v): {"serverRelativeURL": f"/openapi/v3/{_v3_key(g, v)}?hash=0"}
                                       for g, versions in cluster.group_versions().items() for v in versions}})
        elif path.startswith("/openapi/v3/"):
            key = path[len("/openapi/v3/"):]
            group, version = _split_v3_key(key)
            types = cluster.resources(group, version)
            if not types:
                raise APIError(404, "NotFound", "the server could not find the requested resource")
            self._send(200, _openapi_v3(types))
        else:
            raise APIError(404, "NotFound", "the server could not find the requested resource")

    # ------------------------------------------------------------ resources

    def _api(self, method: str, path: str, query: dict[str, list[str]], body: bytes) -> None:
        cluster = self.server.cluster
        segs = path.strip("/").split("/")
        if segs[0] == "api":
            group, rest = "", segs[1:]
        else:
            if len(segs) == 1:
                self.server.stats.count("discovery", None)
                return self._send(200, _group_list(cluster))
            group, rest = segs[1], segs[2:]
            if not rest:
                self.server.stats.count("discovery", None)
                versions = cluster.group_versions().get(group)
                if not versions:
                    raise APIError(404, "NotFound", "the server could not find the requested resource")
                return self._send(200, _group(group, versions))
        if not rest:
            self.server.stats.count("discovery", None)
            return self._send(200, {"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": [
                {"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1"}]})
        version, rest = rest[0], rest[1:]
        if not rest:
            self.server.stats.count("discovery", None)
            types = cluster.resources(group, version)
            if not types and version not in (cluster.group_versions().get(group) or []):
                raise APIError(404, "NotFound", "the server could not find the requested resource")
            resources = [entry for rt in sorted(types, key=lambda t: t.plural) for entry in rt.discovery()]
            gv = f"{group}/{version}" if group else version
            return self._send(200, {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv,
                                    "resources": resources})
        watch = _flag(query, "watch")
        if rest[0] == "watch":
            watch, rest = True, rest[1:]
        ns = None
        if len(rest) >= 3 and rest[0] == "namespaces":
            candidate = cluster.types.get((group, version, rest[2]))
            if candidate is not None and candidate.namespaced:
                ns, rest = rest[1], rest[2:]
        rt = cluster.type_for(group, version, rest[0])
        name = rest[1] if len(rest) > 1 else None
        sub = rest[2] if len(rest) > 2 else None
        served_sub = (sub == "status" and rt.status) or (sub == "finalize" and rt.kind == "Namespace")
        if sub is not None and not served_sub:
            raise APIError(404, "NotFound", "the server could not find the requested resource")
        if sub == "finalize":
            sub = None
        if rt.namespaced and ns is None and (name is not None or method == "POST"):
            raise APIError(404, "NotFound", "the server could not find the requested resource")
        self._resource(method, rt, ns, name, sub, watch, query, body)

    def _resource(self, method: str, rt: ResourceType, ns: str | None, name: str | None, sub: str | None,
                  watch: bool, query: dict[str, list[str]], body: bytes) -> None:
        cluster = self.server.cluster
        stats = self.server.stats
        dry_run = "All" in (query.get("dryRun") or [])
        if query.get("dryRun") and not dry_run:
            raise APIError(400, "BadRequest", f"invalid dry run option: {query['dryRun']}")
        strict = (_one(query, "fieldValidation") or "").lower() == "strict"
        warnings: list[str] = []
        labels, fields = _one(query, "labelSelector"), _one(query, "fieldSelector")
        if method == "GET" and watch:
            stats.count("watch", rt.resource_key)
            if name:
                fields = f"metadata.name={name}" + (f",{fields}" if fields else "")
            return self._watch(rt, ns, labels, fields, query)
        if method == "GET":
            if name is None:
                stats.count("list", rt.resource_key)
                if rt.namespaced and ns is not None and not cluster.namespace_exists(ns):
                    return self._send(200, {"kind": f"{rt.kind}List", "apiVersion": rt.group_version,
                                            "metadata": {"resourceVersion": str(cluster.rv)}, "items": []})
                result = cluster.list(rt, ns, labels, fields)
                return self._send(200, _maybe_table(self.headers.get("Accept", ""), result, rt))
            stats.count("get", rt.resource_key)
            return self._send(200, _maybe_table(self.headers.get("Accept", ""), cluster.get(rt, ns, name), rt))
        if method == "POST" and name is None:
            stats.count("create", rt.resource_key)
            obj = cluster.create(rt, ns, _json(body), dry_run=dry_run, strict=strict, warnings=warnings)
            return self._send(201, obj, warnings)
        if method == "PUT" and name is not None:
            stats.count("update", rt.resource_key)
            obj = cluster.update(rt, ns, name, _json(body), sub=sub, dry_run=dry_run, strict=strict,
                                 warnings=warnings)
            return self._send(200, obj, warnings)
        if method == "PATCH" and name is not None:
            content_type = self.headers.get("Content-Type", "")
            is_apply = content_type.startswith("application/apply-patch")
            stats.count("apply" if is_apply else "patch", rt.resource_key)
            existed = is_apply and (ns or "", name) in cluster._bucket(rt)
            obj = cluster.patch(rt, ns, name, body, content_type, sub=sub, dry_run=dry_run, strict=strict,
                                field_manager=_one(query, "fieldManager"), force=_flag(query, "force"),
                                warnings=warnings)
            return self._send(201 if is_apply and not existed else 200, obj, warnings)
        if method == "DELETE":
            options = _json(body) if body.strip() else {}
            options = options if isinstance(options, dict) else {}
            propagation = _one(query, "propagationPolicy") or options.get("propagationPolicy")
            dry_run = dry_run or "All" in (options.get("dryRun") or [])
            if name is None:
                stats.count("deletecollection", rt.resource_key)
                return self._send(200, cluster.delete_collection(rt, ns, labels, fields, dry_run=dry_run))
            stats.count("delete", rt.resource_key)
            obj = cluster.delete(rt, ns, name, dry_run=dry_run, propagation=propagation,
                                 preconditions=options.get("preconditions"))
            return self._send(200, obj)  # 200 whether deleted now or held by finalizers, as the API server does
        raise APIError(405, "MethodNotAllowed", "the server does not allow this method on the requested resource")

    def _watch(self, rt: ResourceType, ns: str | None, labels: str | None, fields: str | None,
               query: dict[str, list[str]]) -> None:
        timeout = float(_one(query, "timeoutSeconds") or 1800)
        events = self.server.cluster.watch(rt, ns, labels, fields, _one(query, "resourceVersion"), timeout,
                                           self.server.stop_event, initial_events=_flag(query, "sendInitialEvents"))
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("X-Test-Double", "kubernetes-api-standin")
        self.send_header("Cache-Control", "no-cache, private")
        self.end_headers()
        self.wfile.flush()
        try:
            for event in events:
                self._chunk(event)
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass
        self.close_connection = True

    def _chunk(self, event: dict[str, Any]) -> None:
        data = json.dumps(event, separators=(",", ":")).encode() + b"\n"
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    # ------------------------------------------------------------ debug endpoints

    def _debug(self, method: str, path: str, body: bytes) -> None:
        server = self.server
        if path == "/_standin/stats" and method == "GET":
            return self._send(200, server.stats.snapshot())
        if path == "/_standin/reset-stats" and method == "POST":
            server.stats.reset()
            return self._send(200, {"reset": True})
        if path == "/_standin/cel" and method == "GET":
            return self._send(200, server.cluster.cel.report())
        if path == "/_standin/controllers" and method == "POST":
            from . import controllers

            request = _json(body) or {}
            result = controllers.call(server.cluster, request.get("action", ""), request.get("args") or {})
            return self._send(200, {"result": result})
        raise APIError(404, "NotFound", f"no debug endpoint {method} {path}")


# ---------------------------------------------------------------- helpers


def _json(body: bytes) -> Any:
    try:
        return json.loads(body.decode() or "null")
    except (ValueError, UnicodeDecodeError) as exc:
        raise APIError(400, "BadRequest", f"error decoding request body: {exc}") from exc


def _from_protobuf(method: str, body: bytes) -> bytes:
    """A protobuf create/update/delete body as the JSON the rest of the server reads (see protobuf.py)."""
    if method == "PATCH":  # patches are never protobuf, as on the API server
        raise APIError(415, "UnsupportedMediaType", "the body of the request was in an unknown format - "
                                                    "accepted media types include: application/json-patch+json, "
                                                    "application/merge-patch+json, application/apply-patch+yaml")
    return json.dumps(protobuf.decode(body)[2]).encode() if body else body


def _group(group: str, versions: list[str]) -> dict[str, Any]:
    gvs = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
    return {"kind": "APIGroup", "apiVersion": "v1", "name": group, "versions": gvs, "preferredVersion": gvs[0]}


def _group_list(cluster: Cluster) -> dict[str, Any]:
    groups = [_group(g, vs) for g, vs in cluster.group_versions().items() if g]
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


def _v3_key(group: str, version: str) -> str:
    return f"api/{version}" if not group else f"apis/{group}/{version}"


def _split_v3_key(key: str) -> tuple[str, str]:
    parts = key.strip("/").split("/")
    if parts[0] == "api" and len(parts) == 2:
        return "", parts[1]
    if parts[0] == "apis" and len(parts) == 3:
        return parts[1], parts[2]
    raise APIError(404, "NotFound", "the server could not find the requested resource")


def _openapi_v3(types: list[ResourceType]) -> dict[str, Any]:
    """Paths only: enough for kubectl to see that the server validates fields itself (fieldValidation)."""
    params = [{"name": "fieldValidation", "in": "query", "schema": {"type": "string", "uniqueItems": True}},
              {"name": "dryRun", "in": "query", "schema": {"type": "string", "uniqueItems": True}},
              {"name": "fieldManager", "in": "query", "schema": {"type": "string", "uniqueItems": True}}]
    paths: dict[str, Any] = {}
    for rt in types:
        prefix = f"/api/{rt.version}" if not rt.group else f"/apis/{rt.group}/{rt.version}"
        scope = f"{prefix}/namespaces/{{namespace}}/{rt.plural}" if rt.namespaced else f"{prefix}/{rt.plural}"
        gvk = {"group": rt.group, "version": rt.version, "kind": rt.kind}
        op = {"x-kubernetes-group-version-kind": gvk, "parameters": params, "responses": {}}
        paths[scope] = {"post": dict(op, **{"x-kubernetes-action": "post"})}
        paths[f"{scope}/{{name}}"] = {"put": dict(op, **{"x-kubernetes-action": "put"}),
                                      "patch": dict(op, **{"x-kubernetes-action": "patch"})}
    return {"openapi": "3.0.0", "info": {"title": "Kubernetes", "version": "v1.34.2"}, "paths": paths,
            "components": {"schemas": {}}}


def _maybe_table(accept: str, payload: dict[str, Any], rt: ResourceType) -> dict[str, Any]:
    """Answer kubectl's `as=Table` requests with a two-column Table (NAME, AGE); plain JSON otherwise."""
    if "as=Table" not in accept:
        return payload
    items = payload.get("items", [payload])
    rows = [{"cells": [i["metadata"]["name"], i["metadata"].get("creationTimestamp", "")],
             "object": {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": i["metadata"]}}
            for i in items]
    return {"kind": "Table", "apiVersion": "meta.k8s.io/v1",
            "metadata": {"resourceVersion": (payload.get("metadata") or {}).get("resourceVersion", "")},
            "columnDefinitions": [
                {"name": "Name", "type": "string", "format": "name", "description": "Name", "priority": 0},
                {"name": "Created At", "type": "date", "format": "", "description": "creation time", "priority": 0}],
            "rows": rows}
