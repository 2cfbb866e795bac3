"""Optional bearer-token authentication for the stand-in, answered as kube-apiserver answers it.

`StandIn(bearer_token=...)` takes the one token to accept, or a callable deciding whether a token is
valid (for tokens that differ per request, like EKS presigned-URL tokens). A request without an
`Authorization: Bearer <token>` header that passes gets 401 with the apiserver's `Unauthorized` Status.
"""

from __future__ import annotations

import hmac
from collections.abc import Callable, Mapping
from typing import Any

from .store import APIError

BearerCheck = str | Callable[[str], bool] | None


def unauthorized() -> APIError:
    """What kube-apiserver answers to a request it cannot authenticate."""
    return APIError(401, "Unauthorized", "Unauthorized")


def bearer_token(headers: Mapping[str, str]) -> str | None:
    """The token of an `Authorization: Bearer <token>` header, if there is one."""
    value = headers.get("Authorization") or ""
    scheme, _space, token = value.partition(" ")
    return token.strip() or None if scheme.lower() == "bearer" else None


def accepts(check: BearerCheck, headers: Mapping[str, str]) -> bool:
    """Whether a request with `headers` is authenticated under `check` (None: every request is)."""
    if check is None:
        return True
    token = bearer_token(headers)
    if token is None:
        return False
    if callable(check):
        try:
            return bool(check(token))
        except Exception:  # a malformed token is an unauthenticated request, not a stand-in error
            return False
    return hmac.compare_digest(token.encode(), check.encode())


def rejects(server: Any, headers: Mapping[str, str]) -> bool:
    """Whether the stand-in `server` (its `bearer_check`, if set) turns this request away."""
    return not accepts(getattr(server, "bearer_check", None), headers)
