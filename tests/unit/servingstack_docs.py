"""Helpers for the ServingStack unit tests: the examples, path edits and throwaway certificates."""

from __future__ import annotations

import copy
import datetime
import re
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "servingstack.yaml"
DYNAMO_EXAMPLE = REPO / "examples" / "dynamo.yaml"
CRD_FILE = REPO / "crds" / "servingstacks.infrastructure.modelplane.ai.yaml"

DELETE = object()
_STEP = re.compile(r"([^.\[\]]+)|\[(\d+)\]")


def steps(path: str) -> list[str | int]:
    return [name if name else int(index) for name, index in _STEP.findall(path)]


def edit(document: dict, path: str, value: object) -> dict:
    """A copy of ``document`` with ``path`` (``spec.gateway.listeners[0].port``) set to ``value`` (or deleted)."""
    result = copy.deepcopy(document)
    node = result
    parts = steps(path)
    for part in parts[:-1]:
        if isinstance(part, str) and part not in node:
            node[part] = {}
        node = node[part]
    last = parts[-1]
    if value is DELETE:
        del node[last]
    elif isinstance(last, int) and last == len(node):
        node.append(copy.deepcopy(value))
    else:
        node[last] = copy.deepcopy(value)
    return result


def load_example(path: Path = EXAMPLE) -> dict:
    return yaml.safe_load(path.read_text())


def make_certificate(common_name: str = "test-ca", ca: bool = True) -> tuple[str, str]:
    """A self-signed certificate and its key, both PEM."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now)
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_pem = certificate.public_bytes(serialization.Encoding.PEM).decode()
    key_pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()
    return cert_pem, key_pem


CERTIFICATE, PRIVATE_KEY = make_certificate("corpus-ca")
SECOND_CERTIFICATE = make_certificate("second-ca")[0]


def strip_nulls(value: object) -> object:
    """What the API server does before validating: drop null fields (none of ours is nullable)."""
    if isinstance(value, dict):
        return {key: strip_nulls(item) for key, item in value.items() if item is not None}
    if isinstance(value, list):
        return [strip_nulls(item) for item in value]
    return value


def to_json_schema(node: dict) -> dict:
    """A CRD structural schema as JSON Schema: unknown fields rejected (strict field validation), list-map keys
    unique (``x-list-map-keys``, checked by ``crd_validator``), patterns anchored as Go anchors them. CEL rules,
    defaults and formats are left out."""
    result: dict = {}
    for key, value in node.items():
        if key in ("description", "default", "format", "x-kubernetes-validations", "x-kubernetes-list-map-keys"):
            continue
        if key == "properties":
            result[key] = {name: to_json_schema(child) for name, child in value.items()}
        elif key == "items":
            result[key] = to_json_schema(value)
        elif key == "pattern":
            # Go's $ (the API server's) is the end of the text; jsonschema's Python $ also matches before a final
            # newline.
            result[key] = value.replace("$", r"\Z")
        elif key == "x-kubernetes-list-type":
            if value == "map":
                result["x-list-map-keys"] = node["x-kubernetes-list-map-keys"]
        else:
            result[key] = value
    if node.get("type") == "object" and "properties" in node:
        result["additionalProperties"] = False
    return result


def crd_validator(open_api_schema: dict):
    """A jsonschema validator for a CRD's openAPIV3Schema."""
    import jsonschema

    def list_map_keys(validator, keys, instance, schema):
        if not validator.is_type(instance, "array"):
            return
        seen = set()
        for item in instance:
            if not isinstance(item, dict):
                continue
            identity = tuple(repr(item.get(key)) for key in keys)
            if identity in seen:
                yield jsonschema.ValidationError(f"duplicate entries for keys {keys}: {identity}")
            seen.add(identity)

    cls = jsonschema.validators.extend(jsonschema.Draft7Validator, {"x-list-map-keys": list_map_keys})
    return cls(to_json_schema(open_api_schema))
