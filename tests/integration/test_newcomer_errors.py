"""What a newcomer's first mistakes print: one clear error each, in the words of the setting they got wrong.

A wrong servingstack_kubeconfig path, and a ServingStack whose kubeconfig Secret is not on the management cluster
(the real control plane here): the run fails with the problem alone, and nothing internal (an undefined variable,
Ansible's "The filter plugin ... failed:") follows or wraps it.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from stack_support import EXAMPLE, SITE, manifest, output

pytestmark = [pytest.mark.playbook]


def errors(stdout: str) -> list[str]:
    """The [ERROR] lines Ansible printed: the failed task's, then the converge's summary of it."""
    return [line for line in stdout.splitlines() if line.startswith("[ERROR]")]


def test_a_wrong_kubeconfig_path_gives_one_clear_error(run_playbook, tmp_path):
    missing = tmp_path / "no-such-kubeconfig"
    result = run_playbook(SITE, extra_vars={"servingstack_src": str(EXAMPLE), "servingstack_kubeconfig": str(missing)})
    assert result.rc != 0, output(result)
    said = f"cannot read the kubeconfig {missing}: No such file or directory"
    assert errors(result.stdout) and all(said in line for line in errors(result.stdout)), output(result)
    assert "is undefined" not in result.stdout, output(result)


def test_a_missing_secret_is_named_without_the_filters_prefix(run_playbook):
    document = manifest()
    secret = document["spec"]["secrets"][0]
    result = run_playbook(SITE, extra_vars={"servingstack_definition": document})
    assert result.rc != 0, output(result)
    said = (f"spec.secrets[0]: Secret {document['metadata']['namespace']}/{secret['name']} was not found on the "
            "management cluster")
    assert said in result.stdout, output(result)
    assert "filter plugin" not in result.stdout and "is undefined" not in result.stdout, output(result)
    assert all(said in line for line in errors(result.stdout)), output(result)


def test_the_example_names_its_secrets_as_these_tests_expect():
    assert Path(EXAMPLE).is_file() and manifest()["spec"]["secrets"][0]["type"] == "Kubeconfig"
