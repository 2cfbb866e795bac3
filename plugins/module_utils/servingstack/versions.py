# Copyright 2026 The modelplane.serving authors
# Apache License 2.0 (see LICENSE)
"""Version pins: parsing, release order, and the rules on pins the CRD cannot state (``caution_envoy_gateway``,
``check_grove``). Every pin is a semantic version with an optional ``v`` (``v1.21.1``, ``0.18.3``,
``v0.1.0-alpha.12-rc2``): the CRD checks that, and the v1.8.x range of ``versions.envoyGateway``.

Release order differs from plain semver precedence in one way: a pre-release identifier
``<number>-<suffix>`` (``12-rc1``) is a candidate *for* ``<number>`` and sorts just before it,
so ``alpha.12-rc1 < alpha.12-rc2 < alpha.12 < alpha.13 < 0.1.0``. (Semver would put the
alphanumeric ``12-rc1`` after the numeric ``12``.) Alphanumeric identifiers compare naturally,
so ``rc9 < rc10``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

SEMVER_PATTERN = (
    r"^v?(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)"
    r"(?:-((?:0|[1-9][0-9]*|[0-9]*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9][0-9]*|[0-9]*[a-zA-Z-][0-9a-zA-Z-]*))*))?"
    r"(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$"
)
# $ as Go's (the CRD's pattern): the end of the text, never before a final newline ("v1.2.3\n" is no version).
_SEMVER = re.compile(SEMVER_PATTERN.replace("$", r"\Z"))
_CANDIDATE = re.compile(r"^([0-9]+)-(.+)$")
_PIECES = re.compile(r"[0-9]+|[^0-9]+")

ENVOY_GATEWAY_MINIMUM = "v1.8.0"
ENVOY_GATEWAY_ADVISED = "v1.8.1"
GROVE_MINIMUM = "v0.1.0-alpha.12-rc2"


@dataclass(frozen=True)
class Version:
    major: int
    minor: int
    patch: int
    prerelease: tuple[str, ...] = ()
    build: str = ""

    def release_key(self) -> tuple:
        """Sort key in release order (see the module docstring)."""
        return (
            self.major,
            self.minor,
            self.patch,
            0 if self.prerelease else 1,
            tuple(_identifier_key(identifier) for identifier in self.prerelease),
        )


def _natural(text: str) -> tuple:
    return tuple((0, int(piece)) if piece.isdigit() else (1, piece) for piece in _PIECES.findall(text))


def _identifier_key(identifier: str) -> tuple:
    if identifier.isdigit():  # identifiers are ASCII (SEMVER_PATTERN)
        # A bare number ranks after its own candidates (12-rc1 < 12).
        return (0, int(identifier), 1, ())
    candidate = _CANDIDATE.match(identifier)
    if candidate:
        return (0, int(candidate.group(1)), 0, _natural(candidate.group(2)))
    return (1, _natural(identifier))


def parse(text: object) -> Version | None:
    """The version a pin names, or None when it is not a (v-optional) semantic version."""
    match = _SEMVER.match(text) if isinstance(text, str) else None
    if not match:
        return None
    major, minor, patch, pre, build = match.groups()
    return Version(int(major), int(minor), int(patch), tuple(pre.split(".")) if pre else (), build or "")


def release_key(text: str) -> tuple:
    """Release-order key of a version string; raises ValueError when it does not parse."""
    version = parse(text)
    if version is None:
        raise ValueError(f"{text!r} is not a semantic version such as v1.2.3")
    return version.release_key()


def caution_envoy_gateway(text: object) -> str | None:
    """Why an in-range Envoy Gateway pin is unwise, or None when it is not (or is out of range: the CRD's rule)."""
    version = parse(text)
    if version is None or not release_key(ENVOY_GATEWAY_MINIMUM) <= version.release_key() \
            < release_key(ENVOY_GATEWAY_ADVISED):
        return None
    return (
        f"is accepted (the reference allows any v1.8.x) but unwise: it is older than {ENVOY_GATEWAY_ADVISED}, and "
        f"Envoy AI Gateway v1.1.x is built on Envoy Gateway {ENVOY_GATEWAY_ADVISED} and its README says it needs "
        f"{ENVOY_GATEWAY_ADVISED} or later, so the AI Gateway's extension server is untested against this release; "
        f"pin {ENVOY_GATEWAY_ADVISED} or later"
    )


def check_grove(text: str) -> str | None:
    """Why a Grove pin is too old, or None when it includes grove#753."""
    version = parse(text)
    if version is None or version.release_key() >= release_key(GROVE_MINIMUM):
        return None
    return (
        f"is older than {GROVE_MINIMUM} in release order; Grove must be {GROVE_MINIMUM} or later because earlier "
        "releases append Grove's own GROVE_* env vars after the template env instead of prepending them "
        "(grove#753), and Kubernetes expands $(VAR) only from variables listed earlier, which blocks Modelplane "
        "from aliasing MODELPLANE_LEADER_ADDRESS to them"
    )
