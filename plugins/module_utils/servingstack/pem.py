# Copyright 2026 The modelplane.serving authors
# Apache License 2.0 (see LICENSE)
"""Checks on PEM text a user pastes into a ServingStack (``spec.gateway.clientCAs[].certificate``).

Messages never quote the text: it may be a key pasted by mistake.
"""

from __future__ import annotations

import re

try:
    from cryptography import x509
except ImportError:  # pragma: no cover - cryptography ships with ansible-core
    x509 = None

_BEGIN = re.compile(r"-----BEGIN ([A-Z0-9 ]+)-----")
_END = re.compile(r"-----END ([A-Z0-9 ]+)-----")


def check_certificates(text: str) -> str | None:
    """Why ``text`` is not one or more PEM CERTIFICATE blocks, or None when it is."""
    begins = _BEGIN.findall(text)
    if any("PRIVATE KEY" in label for label in begins):
        return (
            "a private key was pasted here (a PEM PRIVATE KEY block; the value is not shown); only the CA "
            "certificate belongs in clientCAs, so remove the key and treat it as exposed"
        )
    if not begins:
        return "is not PEM: expected one or more -----BEGIN CERTIFICATE----- blocks (the value is not shown)"
    others = sorted({label for label in begins if label != "CERTIFICATE"})
    if others:
        return f"contains a PEM {', '.join(others)} block; only CERTIFICATE blocks are allowed"
    if _END.findall(text) != begins:
        return "has a -----BEGIN CERTIFICATE----- block without its matching -----END CERTIFICATE----- line"
    if x509 is None:
        return None
    try:
        certificates = x509.load_pem_x509_certificates(text.encode("utf-8", "replace"))
    except ValueError:
        return "a CERTIFICATE block does not parse as an X.509 certificate (the value is not shown)"
    if len(certificates) != len(begins):
        return "a CERTIFICATE block does not parse as an X.509 certificate (the value is not shown)"
    return None
