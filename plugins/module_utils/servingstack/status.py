# Copyright 2026 The modelplane.serving authors
# Apache License 2.0 (see LICENSE)
"""A ServingStack's ``status.gateway`` from the objects in the target cluster.

Pure functions over API objects (dicts as the API returns them); the ``servingstack_status``
lookup fetches the objects. The object names are the ones the ``envoy_gateway`` and
``trust_manager`` roles create by default; namespaces come from the components table.
"""

from __future__ import annotations

import base64
import binascii
import re
from typing import Any

from ansible_collections.modelplane.serving.plugins.module_utils.servingstack.components import BY_NAME

# The Gateway the envoy_gateway role creates (envoy_gateway_gateway_name).
GATEWAY_NAME = "inference-gateway"
GATEWAY_NAMESPACE = BY_NAME["envoy_gateway"].namespace
# The CA Secret (written by cert-manager, in the trust namespace) and the ConfigMap trust-manager
# publishes its certificate to (envoy_gateway_ca_secret, trust_manager_bundle_name and
# trust_manager_target_namespace).
CA_NAME = "mp-gateway-ca"
CA_SECRET_NAMESPACE = BY_NAME["trust_manager"].namespace
CA_CONFIGMAP_NAMESPACE = "modelplane-system"
CA_KEY = "ca.crt"

# Limits of the ServingStack status schema.
ADDRESS_MAX = 256
CA_MAX = 16384

_CERTIFICATE = re.compile(r"-----BEGIN CERTIFICATE-----\r?\n[A-Za-z0-9+/=\r\n]+?-----END CERTIFICATE-----")


def gateway_address(gateway: dict[str, Any] | None) -> str | None:
    """``status.addresses[0].value`` of a Gateway, or None before one is assigned."""
    addresses = ((gateway or {}).get("status") or {}).get("addresses") or []
    if not addresses or not isinstance(addresses[0], dict):
        return None
    value = addresses[0].get("value")
    if not isinstance(value, str) or not value or len(value) > ADDRESS_MAX:
        return None
    return value


def certificates(text: str | None) -> list[str]:
    """The PEM CERTIFICATE blocks in ``text`` (anything else, keys included, is dropped)."""
    if not text:
        return []
    return [block.replace("\r\n", "\n") + "\n" for block in _CERTIFICATE.findall(text)]


def ca_from_configmap(configmap: dict[str, Any] | None, key: str = CA_KEY) -> str | None:
    """The first certificate under ``data[key]`` of a ConfigMap."""
    blocks = certificates(((configmap or {}).get("data") or {}).get(key))
    return blocks[0] if blocks else None


def ca_from_secret(secret: dict[str, Any] | None, key: str = CA_KEY) -> str | None:
    """The first certificate under ``data[key]`` (base64) of a Secret; never ``tls.key``."""
    encoded = ((secret or {}).get("data") or {}).get(key)
    if not encoded:
        return None
    try:
        text = base64.b64decode(str(encoded), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return None
    blocks = certificates(text)
    return blocks[0] if blocks else None


def gateway_status(address: str | None, ca_certificate: str | None) -> dict[str, Any]:
    """``{gateway: {address, caCertificate}}`` with the missing keys left out (``{}`` when both are)."""
    gateway: dict[str, str] = {}
    if address:
        gateway["address"] = address
    if ca_certificate and len(ca_certificate) <= CA_MAX:
        gateway["caCertificate"] = ca_certificate
    return {"gateway": gateway} if gateway else {}
