"""A tiny raw-HTTP helper for the stand-in tests (status codes and headers matter there)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any


@dataclass
class Reply:
    code: int
    body: Any
    headers: dict[str, str]
    warnings: list[str]


def call(base: str, method: str, path: str, body: Any = None, content_type: str = "application/json",
         accept: str = "application/json") -> Reply:
    data = None
    if body is not None:
        data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
    request = urllib.request.Request(base + path, data=data, method=method,
                                     headers={"Content-Type": content_type, "Accept": accept})
    try:
        with urllib.request.urlopen(request, timeout=30) as resp:
            raw, code, headers = resp.read(), resp.status, resp.headers
    except urllib.error.HTTPError as err:
        raw, code, headers = err.read(), err.code, err.headers
    text = raw.decode()
    try:
        parsed: Any = json.loads(text) if text else None
    except ValueError:
        parsed = text
    return Reply(code, parsed, dict(headers.items()), headers.get_all("Warning") or [])


class Api:
    """`api.get("/api/v1/...")` style calls against one stand-in URL."""

    def __init__(self, base: str) -> None:
        self.base = base

    def get(self, path: str, **kw: Any) -> Reply:
        return call(self.base, "GET", path, **kw)

    def post(self, path: str, body: Any, **kw: Any) -> Reply:
        return call(self.base, "POST", path, body, **kw)

    def put(self, path: str, body: Any, **kw: Any) -> Reply:
        return call(self.base, "PUT", path, body, **kw)

    def patch(self, path: str, body: Any, ptype: str = "merge", **kw: Any) -> Reply:
        types = {"merge": "application/merge-patch+json", "json": "application/json-patch+json",
                 "strategic": "application/strategic-merge-patch+json", "apply": "application/apply-patch+yaml"}
        return call(self.base, "PATCH", path, body, content_type=types[ptype], **kw)

    def delete(self, path: str, body: Any = None) -> Reply:
        return call(self.base, "DELETE", path, body)
