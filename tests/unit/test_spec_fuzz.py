"""Property tests: whatever the document, ``spec.validate`` returns clean problems or a valid result.

Documents are the reference example with random edits (values of any JSON/YAML kind at known and
unknown paths, deletions, odd keys), plus wholly random values. Each run also checks that the
module is never looser than the CRD schema on what it reads: a document the module accepts, the CRD
accepts too, once what the module ignores (a live object's status, Crossplane's XR fields) is left out.
"""

from __future__ import annotations

import copy

import yaml
from ansible_collections.modelplane.serving.plugins.module_utils.servingstack import plan, spec
from ansible_collections.modelplane.serving.plugins.module_utils.servingstack.errors import Problem
from hypothesis import HealthCheck, given, settings
from servingstack_docs import CRD_FILE, crd_validator, load_example, strip_nulls
from spec_strategies import MARKER, apply, edits, valid_documents, values, what_the_module_reads

EXAMPLE = load_example()
VALIDATOR = crd_validator(
    yaml.safe_load(CRD_FILE.read_text())["spec"]["versions"][0]["schema"]["openAPIV3Schema"])


def check(document: object) -> None:
    before = copy.deepcopy(document)
    validation = spec.validate(document)
    # unchanged; a generated NaN compares unequal to itself, so compare the printed forms too
    assert document == before or repr(document) == repr(before)
    assert isinstance(validation, spec.Validation)
    assert isinstance(validation.ignored, list)
    for problem in validation.errors:
        assert isinstance(problem, Problem)
        assert isinstance(problem.path, str) and problem.path
        assert isinstance(problem.message, str) and problem.message
        assert "\n" not in problem.message
        assert MARKER not in problem.message
        assert "Traceback" not in problem.message
        assert spec.INTERNAL_ERROR not in problem.message
    if validation.errors:
        assert validation.manifest is None
    else:
        assert isinstance(validation.manifest, dict)
        assert plan.build_plan(validation.manifest["spec"])
        assert VALIDATOR.is_valid(strip_nulls(what_the_module_reads(document))), \
            "the module accepted what the CRD refuses"


@settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(edits)
def test_edited_examples_yield_problems_or_a_valid_result(changes):
    document = copy.deepcopy(EXAMPLE)
    for path, value in changes:
        apply(document, path, value)
    check(document)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(values)
def test_arbitrary_values_yield_problems(document):
    check(document)
    if not isinstance(document, dict):
        assert spec.validate(document).errors


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(valid_documents())
def test_generated_valid_documents_pass_the_module_and_the_crd(document):
    validation = spec.validate(document)
    assert validation.errors == []
    assert validation.ignored == []
    assert VALIDATOR.is_valid(document)
    assert len(plan.build_plan(validation.manifest["spec"])) == (7 if document["spec"]["stack"] == "Standard" else 8)
