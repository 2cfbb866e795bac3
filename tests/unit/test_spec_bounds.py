"""Hostile input costs nothing: each hostile spec file, definition or CR is refused (or, under ``status``, accepted
unwalked) in under 5 s and 200 MB, with a message naming the problem; and the bounds come from the CRD.

The hostile inputs run in a process of their own (tests/unit/hostile.py), one after the other: the time of each is
that of the read and the checks, after a valid document has warmed up the imports and the CEL rules; its memory is
the peak resident size of that whole process while it ran, imports and what earlier inputs left included (VmHWM,
reset before each: every allocation, libyaml's too, which tracemalloc would miss)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml
from ansible_collections.modelplane.serving.plugins.action.servingstack_spec import load_yaml
from ansible_collections.modelplane.serving.plugins.module_utils.servingstack import bounds, schema, spec
from ansible_collections.modelplane.serving.plugins.modules import servingstack_spec
from hostile import BASE, listeners
from servingstack_docs import load_example

HOSTILE = Path(__file__).with_name("hostile.py")
SECONDS, MEGABYTES = 5, 200
MAX_ITEMS = schema.SPEC["properties"]["gateway"]["properties"]["listeners"]["maxItems"]
DEPTH = bounds.schema_depth(spec._validator().schema)
BASE_YAML = yaml.safe_dump(BASE, sort_keys=False)


def alias_bomb(indent: str) -> str:
    """A billion laughs: ten anchors, each a list of nine aliases of the one before (9 ** 10 values)."""
    lines = ["a: &a [" + ", ".join(['"lol"'] * 9) + "]"]
    lines += [f"{name}: &{name} [{', '.join([f'*{before}'] * 9)}]"
              for before, name in zip("abcdefghi", "bcdefghij", strict=True)]
    return "".join(f"{indent}{line}\n" for line in lines)


def listeners_yaml(count: int) -> str:
    return BASE_YAML.replace("spec:\n", "spec:\n  gateway:\n    listeners:\n" + "".join(
        f"    - {{name: l{index}, port: {1000 + index}, protocol: HTTP}}\n" for index in range(count)))


def fifo(path: Path) -> None:
    os.mkfifo(path)  # no writer: opening it to read would wait for one


FILES: dict[str, tuple[Callable[[Path], object], str]] = {
    "alias bomb under spec": (
        lambda path: path.write_text(BASE_YAML + "  bomb:\n" + alias_bomb("    ")),
        "{file}: line 16, column 12: alias *d (7381 values) takes the document past 10000 values, the most a "
        "ServingStack document may hold (a YAML alias counts the values it names each time it is used)"),
    "alias bomb under status": (
        lambda path: path.write_text(BASE_YAML + "status:\n" + alias_bomb("  ")),
        "{file}: line 16, column 10: alias *d (7381 values) takes the document past 10000 values"),
    "symlink to /dev/zero": (
        lambda path: path.symlink_to("/dev/zero"),
        "{file}: is a character device (a symbolic link to /dev/zero), not a regular file: expected a YAML file"),
    "FIFO": (fifo, "{file}: is a FIFO (named pipe), not a regular file"),
    "directory": (Path.mkdir, "{file}: is a directory, not a regular file"),
    "3 MiB and a byte": (
        lambda path: path.write_text(BASE_YAML + "#" * (3 * 1024**2 - len(BASE_YAML)) + "\n"),
        "{file}: is 3145729 bytes long, above the maximum 3145728 (3 MiB, the API server's request limit)"),
    "Latin-1": (
        lambda path: path.write_bytes(BASE_YAML.replace("name: s", "name: caf\xe9").encode("latin-1")),
        "{file}: is not UTF-8 text: byte 0xe9 at offset"),
    "1000 listeners": (
        lambda path: path.write_text(listeners_yaml(1000)),
        f"- spec.gateway.listeners: has 1000 items, above the maximum {MAX_ITEMS}"),
    "2000 listeners": (
        lambda path: path.write_text(listeners_yaml(2000)),
        "{file}: line 1434, column 21: the document holds more than 10000 values, the most a ServingStack "
        "document may hold"),
    "3 MiB flat list": (
        lambda path: path.write_text(BASE_YAML + "  x: [" + "0," * (3 * 1024**2 // 2 - 200) + "0]\n"),
        "{file}: line 11, column 19959: the document holds more than 10000 values"),
    "1.5 million nested flow lists": (
        lambda path: path.write_text(BASE_YAML + "  x: " + "[" * (3 * 1024**2 // 2 - 200) + "\n"),
        f"{{file}}: line 11, column 16: values are nested more than {2 * bounds.crd_depth()} levels deep, twice as "
        "deep as any field of a ServingStack"),
    "4000 labels": (
        lambda path: path.write_text(BASE_YAML.replace("  name: s\n", "  name: s\n  labels:\n" + "".join(
            f"    k{index}: v{index}\n" for index in range(4000)))),
        ""),
}
DEFINITIONS = {
    "2000 listeners": f"spec.gateway.listeners: has 2000 items, above the maximum {MAX_ITEMS}",
    "a string for the listeners": f'spec.gateway.listeners: "{"l" * 63}…" is a string, not a list',
    "shared lists under spec": "spec.bomb: takes the document past 10000 values, the most a ServingStack may hold",
    "shared lists under status": "",  # never walked: accepted as it came
    "nested 100000 levels": f"holds values nested {DEPTH + 1} levels deep, deeper than any field of a ServingStack "
                            f"({DEPTH} levels)",
    "a list that holds itself": "spec.secrets[0][0][0]: holds values nested",
    "a 4 MB string": "spec.stack: takes the document past 3145728 characters of text (3 MiB, the API server's "
                     "request limit)",
    "4 MB of YAML text": "definition: is 4000016 bytes long, above the maximum 3145728",
}
INVENTORY = {
    "2000 listeners": f"spec.gateway.listeners: has 2000 items, above the maximum {MAX_ITEMS}",
    "shared lists under spec": "spec.bomb: takes the document past 10000 values",
}


@pytest.fixture(scope="module")
def costs(tmp_path_factory) -> dict[str, dict]:
    """What each hostile input cost, all measured in one process (tests/unit/hostile.py), one after the other."""
    folder = tmp_path_factory.mktemp("hostile")
    cases = [[f"definition {name}", "definition", name] for name in DEFINITIONS]
    cases += [[f"inventory {name}", "inventory", name] for name in INVENTORY]
    for index, (name, (make, _expected)) in enumerate(FILES.items()):
        make(folder / f"{index}.yaml")
        cases.append([f"src {name}", "src", str(folder / f"{index}.yaml")])
    (folder / "cases.json").write_text(json.dumps(cases))
    subprocess.run([sys.executable, str(HOSTILE), str(folder / "cases.json"), str(folder / "costs.json")],
                   stdin=subprocess.DEVNULL, check=True, timeout=180)
    found = json.loads((folder / "costs.json").read_text())
    for name, cost in found.items():
        print(f"{name}: {cost['seconds']:.2f} s, {cost['megabytes']:.0f} MB")
    return {name: {**found[name], "file": path} for name, _how, path in cases}


def check(cost: dict, expected: str) -> None:
    message = cost["message"]
    assert (expected in message) if expected else (message == ""), message
    assert "internal error" not in message and "Traceback" not in message and "raised" not in message
    assert cost["seconds"] < SECONDS, f"took {cost['seconds']:.1f} s"
    assert cost["megabytes"] < MEGABYTES, f"took {cost['megabytes']:.0f} MB"


@pytest.mark.parametrize("name", FILES)
def test_a_hostile_spec_file_is_refused_in_seconds_and_megabytes(costs, name):
    cost = costs[f"src {name}"]
    check(cost, FILES[name][1].format(file=cost["file"]))


@pytest.mark.parametrize("name", DEFINITIONS)
def test_a_hostile_definition_is_refused_in_seconds_and_megabytes(costs, name):
    check(costs[f"definition {name}"], DEFINITIONS[name])


@pytest.mark.parametrize("name", INVENTORY)
def test_a_hostile_cr_in_the_inventory_is_refused_in_seconds_and_megabytes(costs, name):
    check(costs[f"inventory {name}"], INVENTORY[name])


def test_a_cel_rule_never_runs_on_a_list_beyond_its_max_items(monkeypatch):
    evaluated: list[str] = []
    monkeypatch.setattr(spec, "holds", lambda rule, value: evaluated.append(value) or True)
    document = {**BASE, "spec": {**BASE["spec"], "gateway": {"listeners": listeners(MAX_ITEMS + 1)}}}
    assert [str(problem) for problem in spec.validate(document).errors] == [
        f"spec.gateway.listeners: has {MAX_ITEMS + 1} items, above the maximum {MAX_ITEMS}"]
    assert evaluated == []
    document["spec"]["gateway"]["listeners"] = listeners(MAX_ITEMS)
    assert not spec.validate(document).errors
    assert any('"l0"' in value for value in evaluated)  # the same rules run on a list within its maxItems


def test_the_depth_bound_is_the_crds():
    # metadata.labels.<key> is 3 deep, spec.gateway.listeners[].name 5: 6 with the document itself.
    assert DEPTH == bounds.crd_depth() == 1 + 1 + bounds.schema_depth(schema.SPEC["properties"]["gateway"])
    assert not spec.validate({**BASE, "spec": {**BASE["spec"], "gateway": {"listeners": listeners(1)}}}).errors


def test_a_saved_live_object_with_managed_fields_and_status_is_within_the_bounds():
    document, problems = load_yaml(BASE_YAML + """\
status:
  conditions:
    - {type: Ready, status: "True", reason: Converged, message: ok, lastTransitionTime: "2026-12-06T00:00:00Z"}
""" .replace("metadata:\n  name: s\n", """\
metadata:
  name: s
  managedFields:
    - manager: ansible
      operation: Update
      subresource: status
      fieldsV1:
        f:status:
          f:conditions:
            k:{"type":"Ready"}:
              .: {}
              f:message: {}
"""), "live.yaml")
    assert problems == []
    assert not spec.validate(document).errors


def test_an_alias_inside_the_node_it_names_is_refused():
    _document, problems = load_yaml(BASE_YAML + "  x: &loop [*loop]\n", "loop.yaml")
    assert [str(problem) for problem in problems] == [
        "loop.yaml: line 11, column 13: alias *loop is used inside the node it names: a recursive structure is not a "
        "ServingStack"]


def test_the_documents_of_one_file_share_one_bound():
    document = BASE_YAML.replace("  name: s\n", "  name: s\n  labels: {" + ", ".join(
        f"k{index}: v" for index in range(2000)) + "}\n")
    assert load_yaml(document, "one.yaml")[1] == []
    _document, problems = load_yaml("---\n".join([document] * 3), "three.yaml")
    assert [problem.message.split(": ", 1)[1] for problem in problems] == [
        f"the document holds more than {bounds.MAX_VALUES} values, the most a ServingStack document may hold (a YAML "
        "alias counts the values it names each time it is used)"]


def test_a_valid_example_is_well_within_the_bounds():
    assert bounds.exceeded(load_example(), spec._validator().schema) == []


def test_the_module_documents_the_bounds():
    text = " ".join(servingstack_spec.DOCUMENTATION.split())
    assert f"more than {bounds.MAX_VALUES:,} values" in text
    assert f"more than {bounds.MAX_BYTES // 1024**2} MiB of text" in text


def test_the_component_lookup_defaults_a_spec_within_the_bounds_too():
    with pytest.raises(ValueError, match=f"- spec.gateway.listeners: has 2000 items, above the maximum {MAX_ITEMS}$"):
        spec.defaulted_spec({**BASE["spec"], "gateway": {"listeners": listeners(2000)}})
