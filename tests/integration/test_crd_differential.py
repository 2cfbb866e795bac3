"""The ServingStack spec, differentially: the collection's verdict against a real API server's, spec by spec.

The shipped CRD (crds/) is installed on a real cluster; then each of several hundred documents, valid and
invalid, is judged twice:

* by the collection: ``outcome.outcome(document, [])``, what the ``servingstack_spec`` action plugin returns
  for a ``definition`` (it calls ``spec.validate``): ``failed`` or not;
* by the API server: a server-side dry-run create of the custom resource (``dryRun=All``,
  ``fieldValidation=Strict``, since the module refuses unknown fields), one raw POST per document through
  one connection pool. Like ``kubectl create -f``, it goes to ``metadata.namespace`` when that is a non-empty
  string (created first when it is a valid name), else to ``default``.

What the module ignores on input (a live object's ``status``, the fields Crossplane adds to an XR's spec:
``spec_strategies.what_the_module_reads``) is left out of what is sent: a create is not a live object.

The documents are deterministic (Hypothesis, derandomized, generation phase only): the whole unit corpus
(tests/unit/corpus.py), generated valid documents, random edits of the reference example and of valid
documents (tests/unit/spec_strategies.py), and near misses: a valid document with one value nudged across a
boundary (a trailing newline, one character too many, an uppercase letter, a float for an integer, an odd
label...), each nudge in turn, the value nudged chosen with a seeded ``random.Random``.
Documents JSON cannot carry as they are (NaN, non-string keys) are not sent.

Every disagreement must be a rule of the reference the CRD does not express, listed once in
``PYTHON_ONLY_RULES`` with its reason (the module's own list is ``spec.PYTHON_ONLY_RULES``): the module refuses,
every one of its problems is such a rule, and the API server accepts. Anything else is a bug in the CRD or in the
module, and fails the test. When the module refuses only for such rules, the API server must accept: a refusal
there means the module missed what the server saw.

The module evaluates the CRD's own CEL rules (``x-kubernetes-validations``), so when the API server refuses for
one, the module must report that rule's message, or a problem at or below the field the rule reports on (where it
skips a rule, the schema having refused a value already). Every CEL rule of the CRD must be seen refusing.
"""

from __future__ import annotations

import copy
import json
import math
import random
import re
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

import pytest
from ansible_collections.modelplane.serving.plugins.module_utils.servingstack import outcome, schema, spec
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unit"))
from corpus import IGNORED, INVALID, MODULE_ONLY, VALID
from servingstack_docs import CRD_FILE, DYNAMO_EXAMPLE, load_example
from spec_strategies import apply, edits, valid_documents, what_the_module_reads

pytestmark = [pytest.mark.playbook, pytest.mark.slow]

CRD_NAME = f"{schema.PLURAL}.{schema.GROUP}"
ENOUGH = 500
# How many documents of each generated family (the corpus adds its own ~200).
FAMILIES = {"valid": 120, "edited example": 260, "edited valid": 100, "near miss": 260}
QUERY = "dryRun=All&fieldValidation=Strict"
DNS1123_LABEL = re.compile(spec.DNS1123_LABEL.replace("$", r"\Z"))


@dataclass(frozen=True)
class PythonOnlyRule:
    """A rule the module enforces and the CRD does not: a problem at a path matching ``path`` whose message
    contains one of ``fragments``."""

    name: str
    path: str
    fragments: tuple[str, ...]
    reason: str

    def explains(self, problem: dict) -> bool:
        return bool(re.fullmatch(self.path, problem["path"])) and any(
            fragment in problem["message"] for fragment in self.fragments)


# The one list of the module's rules beyond the CRD, each with the reference's words and why no CRD says it.
PYTHON_ONLY_RULES = (
    PythonOnlyRule(
        "pem", r"spec\.gateway\.clientCAs\[\d+\]\.certificate",
        ("is not PEM", "only CERTIFICATE blocks are allowed", "without its matching",
         "does not parse as an X.509 certificate"),
        "reference: clientCAs[].certificate is 'The CA certificate, PEM encoded'. The CRD bounds its length and "
        "refuses a PEM PRIVATE KEY block; no CEL function parses PEM or X.509 (spec._pem_problem).",
    ),
    PythonOnlyRule(
        "grove older than v0.1.0-alpha.12-rc2", r"spec\.dynamo\.grove", ("in release order",),
        "reference: grove is 'Pinned at v0.1.0-alpha.12-rc2 or later' (grove#753), in release order, where "
        "alpha.12-rc1 < alpha.12-rc2 < alpha.12; CEL compares no versions, and semantic-version precedence (the "
        "Kubernetes CEL library's) orders those otherwise.",
    ),
)
assert len(PYTHON_ONLY_RULES) == len(spec.PYTHON_ONLY_RULES)


def cel_rules(node: dict, path: str) -> dict[str, set[str]]:
    """Each CEL rule's message in the CRD, with the fields it reports on (``spec.secrets[].name``)."""
    found: dict[str, set[str]] = {}
    for rule in node.get("x-kubernetes-validations", ()):
        found.setdefault(rule["message"], set()).add(path + rule.get("fieldPath", ""))
    children = [(f"{path}.{name}", child) for name, child in node.get("properties", {}).items()]
    for child_path, child in children + ([(f"{path}[]", node["items"])] if "items" in node else []):
        for message, fields in cel_rules(child, child_path).items():
            found.setdefault(message, set()).update(fields)
    return found


CEL_RULES = cel_rules(schema.SPEC, "spec")


# --- the documents ------------------------------------------------------------------------------------------


def draw(strategy: st.SearchStrategy, count: int) -> list:
    """``count`` examples of ``strategy`` (fewer when it has fewer), the same on every run."""
    drawn: list = []

    @settings(derandomize=True, database=None, max_examples=count, phases=[Phase.generate], deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(strategy)
    def collect(example: object) -> None:
        drawn.append(copy.deepcopy(example))

    collect()
    return drawn[:count]


def edited(base: dict, changes: list) -> dict:
    document = copy.deepcopy(base)
    for path, value in changes:
        apply(document, path, value)
    return document


def leaves(node: object, path: str = "") -> list[str]:
    """The paths (``spec.gateway.listeners[0].port``) of every scalar in ``node``."""
    if isinstance(node, dict):
        return [leaf for key, child in node.items() for leaf in leaves(child, f"{path}.{key}" if path else key)]
    if isinstance(node, list):
        return [leaf for index, child in enumerate(node) for leaf in leaves(child, f"{path}[{index}]")]
    return [path]


def containers(node: object, path: str = "") -> list[str]:
    """The paths of every list in ``node``."""
    found: list[str] = []
    if isinstance(node, dict):
        for key, child in node.items():
            found += containers(child, f"{path}.{key}" if path else key)
    elif isinstance(node, list):
        found.append(path)
        for index, child in enumerate(node):
            found += containers(child, f"{path}[{index}]")
    return found


def get(document: dict, path: str) -> object:
    node: object = document
    for part in re.findall(r"[^.\[\]]+|\[\d+\]", path):
        node = node[int(part[1:-1])] if part.startswith("[") else node[part]  # type: ignore[index]
    return node


# Nudges of one scalar across a boundary of its schema: Go's and Python's regular expressions, lengths, types.
NUDGES: dict[str, Callable[[object], object]] = {
    "trailing newline": lambda v: f"{v}\n",
    "leading space": lambda v: f" {v}",
    "trailing dash": lambda v: f"{v}-",
    "trailing dot": lambda v: f"{v}.",
    "underscore": lambda v: f"{v}_x",
    "uppercase": lambda v: str(v).upper(),
    "non-ASCII": lambda v: f"{v}é",
    "empty": lambda v: "",
    "too long": lambda v: (str(v) or "a") * (600 // max(len(str(v)), 1) + 1),
    "one past 253": lambda v: "a" * 254,
    "one past 63": lambda v: "a" * 64,
    "as integer": lambda v: 7,
    "as float": lambda v: float(v) if isinstance(v, int) and not isinstance(v, bool) else 1.5,
    "as string": str,
    "as boolean": lambda v: True,
    "null": lambda v: None,
    "plus 65535": lambda v: v + 65535 if isinstance(v, int) else v,
    "zero": lambda v: 0,
    "negative": lambda v: -1,
}
LIST_NUDGES: dict[str, Callable[[list], list]] = {
    "duplicate first item": lambda items: [*items, copy.deepcopy(items[0])] if items else items,
    "empty list": lambda items: [],
    "first item dropped": lambda items: items[1:],
    "unknown key in first item": lambda items: [{**items[0], "extra": "x"}, *items[1:]]
    if items and isinstance(items[0], dict) else items,
    "first key of first item dropped": lambda items: [dict(list(items[0].items())[1:]), *items[1:]]
    if items and isinstance(items[0], dict) else items,
}


LABEL_KEYS = ("app", "example.com/app", "", "Example.com/app", "a/b/c", "a_b", "-a", "a" * 64, "é")
LABEL_VALUES = ("", "v", "x y", "v" * 64, "v-1.2_3", "-v", "v\n")
METADATA_NUDGES: dict[str, Callable[[random.Random], tuple[str, object]]] = {
    "labels": lambda rng: ("metadata.labels", {rng.choice(LABEL_KEYS): rng.choice(LABEL_VALUES)}),
    "annotations": lambda rng: ("metadata.annotations", {rng.choice(LABEL_KEYS): rng.choice(LABEL_VALUES)}),
}
SEED = 20260722


def near_misses(bases: list[dict]) -> list[dict]:
    """Each base (a valid document) with one scalar, list or metadata map nudged across a boundary: the nudges
    in turn, so each is tried about as often; which value, with a seeded ``random.Random``."""
    rng = random.Random(SEED)
    nudges = [*NUDGES, *LIST_NUDGES, *METADATA_NUDGES]
    found = []
    for index, base in enumerate(bases):
        name = nudges[index % len(nudges)]
        document = copy.deepcopy(base)
        if name in METADATA_NUDGES:
            path, value = METADATA_NUDGES[name](rng)
        elif name in LIST_NUDGES:
            path = rng.choice(containers(document))
            value = LIST_NUDGES[name](copy.deepcopy(get(document, path)))
        else:
            path = rng.choice(leaves(document))
            value = NUDGES[name](copy.deepcopy(get(document, path)))
        apply(document, path, value)
        found.append(document)
    return found


def sendable(family: str, candidates: list, count: int) -> list[tuple[str, object]]:
    """The first ``count`` of ``candidates`` JSON can carry (random edits often hold NaN or non-string keys)."""
    return [(family, document) for document in candidates if as_json(document) is not None][:count]


def documents() -> list[tuple[str, object]]:
    """(family, document) pairs: the corpus, then the generated families."""
    cases = (*VALID, *INVALID, *MODULE_ONLY, *IGNORED)
    found: list[tuple[str, object]] = [("corpus", case.document()) for case in cases]
    example = load_example()
    found += [("corpus", load_example(DYNAMO_EXAMPLE))]
    valid = draw(valid_documents(), max(FAMILIES["valid"], FAMILIES["near miss"]))
    found += sendable("valid", valid, FAMILIES["valid"])
    # Drawn three times over: about half the random edits are not JSON.
    count = FAMILIES["edited example"]
    found += sendable("edited example", [edited(example, changes) for changes in draw(edits, 3 * count)], count)
    count = FAMILIES["edited valid"]
    found += sendable("edited valid", [edited(base, changes) for base, changes in
                                       draw(st.tuples(valid_documents(), edits), 3 * count)], count)
    found += sendable("near miss", near_misses(valid), FAMILIES["near miss"])
    return found


def as_json(document: object) -> bytes | None:
    """``document`` as JSON, or None when JSON cannot carry it unchanged (NaN, infinities, non-string keys)."""
    try:
        text = json.dumps(document, allow_nan=False, ensure_ascii=False)
    except (TypeError, ValueError):
        return None
    if not same(json.loads(text), document):
        return None
    return text.encode("utf-8")


def same(left: object, right: object) -> bool:
    """Equal, type for type (JSON's 1.0 is not 1, and true is not 1)."""
    if type(left) is not type(right):
        return False
    if isinstance(left, dict):
        return left.keys() == right.keys() and all(same(left[key], right[key]) for key in left)  # type: ignore[attr-defined]
    if isinstance(left, list):
        return len(left) == len(right) and all(same(a, b) for a, b in zip(left, right, strict=True))  # type: ignore[arg-type]
    if isinstance(left, float):
        return left == right or (math.isnan(left) and math.isnan(right))  # type: ignore[arg-type]
    return left == right


# --- the verdicts -------------------------------------------------------------------------------------------


@dataclass
class Verdict:
    family: str
    document: object
    module_errors: list[dict]
    api_status: int
    api_message: str
    rules: tuple[str, ...] = ()
    problem: str = ""
    cel: list[str] = field(default_factory=list)

    @property
    def module_accepts(self) -> bool:
        return not self.module_errors

    @property
    def api_accepts(self) -> bool:
        return 200 <= self.api_status < 300


def module_errors(document: object) -> list[dict]:
    """The module's problems with ``document`` ([] when it accepts it)."""
    found = outcome.outcome(document, [])
    return list(found["errors"]) if found.get("failed") else []


def python_only(problem: dict) -> str | None:
    return next((rule.name for rule in PYTHON_ONLY_RULES if rule.explains(problem)), None)


def judge(verdict: Verdict) -> Verdict:
    """Fill ``rules`` (the listed rules a disagreement rests on) or ``problem`` (why it is unexplained)."""
    rules = [python_only(problem) for problem in verdict.module_errors]
    beyond_crd = bool(verdict.module_errors) and all(rules)
    if verdict.api_accepts and not verdict.module_accepts:
        if beyond_crd:
            verdict.rules = tuple(sorted({rule for rule in rules if rule}))
        else:
            verdict.problem = "the module refuses what the API server accepts, for a rule not listed"
    elif verdict.module_accepts and not verdict.api_accepts:
        verdict.problem = "the API server refuses what the module accepts"
    elif beyond_crd:
        verdict.problem = "the module refuses only for rules beyond the CRD, yet the API server refuses too"
    if not verdict.api_accepts:
        for message, fields in CEL_RULES.items():
            if message not in verdict.api_message:
                continue
            verdict.cel.append(message)
            if not verdict.problem and not any(
                    message in problem["message"] or any(spec.field_of(problem["path"]) == field
                                                         or spec.field_of(problem["path"]).startswith(
                                                             (f"{field}.", f"{field}[")) for field in fields)
                    for problem in verdict.module_errors):
                verdict.problem = f"CEL rule {message!r} refused, the module said nothing of it"
    return verdict


class DryRun:
    """Server-side dry-run creates of ServingStacks over one HTTP connection pool."""

    def __init__(self, api_client: object) -> None:
        self.api = api_client
        self.headers = {"Content-Type": "application/json", "Accept": "application/json"}
        # The kubeconfig's credentials, as the client sends them.
        self.api.update_params_for_auth(self.headers, [], ["BearerToken"], "", "POST", None)  # type: ignore[attr-defined]
        self.host = self.api.configuration.host  # type: ignore[attr-defined]
        self.pool = self.api.rest_client.pool_manager  # type: ignore[attr-defined]
        self.namespaces: set[str] = {"default"}
        self.calls = 0

    def request(self, method: str, path: str, body: bytes | None = None) -> tuple[int, dict]:
        response = self.pool.request(method, self.host + path, body=body, headers=self.headers, timeout=30.0)
        payload = response.data.decode("utf-8", "replace")
        try:
            data = json.loads(payload)
        except ValueError:
            data = {"message": payload}
        return response.status, data if isinstance(data, dict) else {"message": payload}

    def ensure_namespace(self, name: str) -> None:
        if name in self.namespaces or not DNS1123_LABEL.match(name):
            return
        body = json.dumps({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}).encode()
        status, data = self.request("POST", "/api/v1/namespaces", body)
        assert status in (201, 409), f"creating namespace {name}: {status} {data}"
        self.namespaces.add(name)

    def create(self, body: bytes, namespace: str) -> tuple[int, str]:
        self.ensure_namespace(namespace)
        path = (f"/apis/{schema.GROUP}/{schema.VERSION}/namespaces/{quote(namespace, safe='')}/{schema.PLURAL}"
                f"?{QUERY}")
        self.calls += 1
        status, data = self.request("POST", path, body)
        assert status < 500, f"the API server failed ({status}): {data}"
        return status, str(data.get("message", ""))


def target_namespace(document: object) -> str:
    """Where ``kubectl create -f`` sends ``document``: its non-empty namespace, else the context's (default)."""
    metadata = document.get("metadata") if isinstance(document, dict) else None
    namespace = metadata.get("namespace") if isinstance(metadata, dict) else None
    return namespace if isinstance(namespace, str) and namespace else "default"


def install_crd(handle: object, dry_run: DryRun) -> None:
    handle.kubectl("apply", "--server-side", "--force-conflicts", "-f", str(CRD_FILE))  # type: ignore[attr-defined]
    handle.wait_established(CRD_NAME)  # type: ignore[attr-defined]
    example = load_example()
    dry_run.ensure_namespace(example["metadata"]["namespace"])
    body = as_json(example)
    assert body is not None
    deadline = time.monotonic() + 60
    while True:
        # Established is set before every API server serves the new resource: wait until it is served.
        status, message = dry_run.create(body, example["metadata"]["namespace"])
        if status != 404 or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert 200 <= status < 300, f"the reference example is refused ({status}): {message}"


def tally(verdicts: list[Verdict], skipped: int, seconds: float) -> str:
    families = Counter(verdict.family for verdict in verdicts)
    both_accept = sum(verdict.module_accepts and verdict.api_accepts for verdict in verdicts)
    both_refuse = sum(not verdict.module_accepts and not verdict.api_accepts and not verdict.problem
                      for verdict in verdicts)
    listed = Counter(rule for verdict in verdicts for rule in verdict.rules)
    excepted = sum(bool(verdict.rules) for verdict in verdicts)
    unexplained = [verdict for verdict in verdicts if verdict.problem]
    statuses = Counter(verdict.api_status for verdict in verdicts)
    cel = Counter(message for verdict in verdicts for message in verdict.cel)
    lines = [
        f"ServingStack differential (module vs API server dry-run): {len(verdicts)} specs tried "
        f"({', '.join(f'{name} {count}' for name, count in families.items())}); {skipped} not JSON, not sent",
        f"  agreements: {both_accept + both_refuse} (both accept {both_accept}, both refuse {both_refuse})",
        f"  listed exceptions (module refuses, API accepts): {excepted}"
        + "".join(f"\n    {rule}: {count}" for rule, count in sorted(listed.items())),
        f"  unexplained: {len(unexplained)}",
        f"  API statuses: {dict(sorted(statuses.items()))}; CEL refusals: {dict(cel)}",
        f"  {len(verdicts)} dry-run creates in {seconds:.1f} s",
    ]
    return "\n".join(lines)


def describe(verdict: Verdict) -> str:
    shown = json.dumps(what_the_module_reads(verdict.document), ensure_ascii=False)
    return (f"- {verdict.problem} [{verdict.family}]\n  spec: {shown[:1500]}\n  module: "
            f"{'accepts' if verdict.module_accepts else verdict.module_errors}\n"
            f"  API server: {verdict.api_status} {verdict.api_message[:800]}")


def run_all(dry_run: DryRun, pairs: Iterable[tuple[str, object]]) -> tuple[list[Verdict], int, float]:
    verdicts: list[Verdict] = []
    skipped = 0
    started = time.monotonic()
    for family, document in pairs:
        sent = what_the_module_reads(document)
        body = as_json(sent)
        if body is None or as_json(document) is None:
            skipped += 1
            continue
        errors = module_errors(document)
        status, message = dry_run.create(body, target_namespace(sent))
        verdicts.append(judge(Verdict(family, document, errors, status, message)))
    return verdicts, skipped, time.monotonic() - started


def test_the_module_and_the_api_server_agree_on_every_spec(cluster):
    dry_run = DryRun(cluster.client())
    install_crd(cluster, dry_run)
    verdicts, skipped, seconds = run_all(dry_run, documents())
    report = tally(verdicts, skipped, seconds)
    print("\n" + report)
    unexplained = [verdict for verdict in verdicts if verdict.problem]
    assert not unexplained, report + "\n" + "\n".join(describe(verdict) for verdict in unexplained[:15])
    assert len(verdicts) >= ENOUGH, report
    both_accept = sum(verdict.module_accepts and verdict.api_accepts for verdict in verdicts)
    both_refuse = sum(not verdict.module_accepts and not verdict.api_accepts for verdict in verdicts)
    assert both_accept >= 100 and both_refuse >= 100, report
    # A listed rule no document exercises is stale (or the documents miss it): either way, say so.
    exercised = {rule for verdict in verdicts for rule in verdict.rules}
    assert exercised == {rule.name for rule in PYTHON_ONLY_RULES}, report
    seen_cel = {message for verdict in verdicts for message in verdict.cel}
    assert seen_cel == set(CEL_RULES), report
