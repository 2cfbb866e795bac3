"""Hostile ServingStacks, and the script that runs them through what reads them in a process of their own, so that a
test can measure what each cost: ``python hostile.py <cases> <out>`` reads each case ``[name, how, what]`` of the
JSON file ``cases`` as ``how`` says (``src``: the action plugin's read of the file ``what``; ``definition``: the
document ``BUILD[what]``, as a mapping or as YAML text; ``inventory``: the CR ``BUILD[what]``, as the servingstacks
inventory reads it), after one valid document has warmed everything up, and writes to ``out``, by name, the message
each got ("" when accepted; what it raised, if it did), the seconds it took and the peak resident megabytes while
it ran.

Its address space is capped, so a regression fails the tests with a MemoryError instead of taking the machine down.
"""

from __future__ import annotations

import json
import resource
import sys
import time
from pathlib import Path

COLLECTIONS = Path(__file__).resolve().parents[2] / ".collections"
BASE = {"apiVersion": "infrastructure.modelplane.ai/v1alpha1", "kind": "ServingStack", "metadata": {"name": "s"},
        "spec": {"stack": "Standard", "secrets": [{"type": "Kubeconfig", "name": "k", "key": "kubeconfig"}]}}
ADDRESS_SPACE = 4 * 1024**3


def with_spec(**fields: object) -> dict:
    return {**BASE, "spec": {**BASE["spec"], **fields}}


def listeners(count: int) -> list[dict]:
    return [{"name": f"l{index}", "port": 1000 + index, "protocol": "HTTP"} for index in range(count)]


def shared(width: int, levels: int) -> list:
    """A list of ``width`` references to one list of ``width``..., ``levels`` deep: width ** levels values in a few
    objects, as PyYAML builds an alias bomb."""
    value: list = ["lol"] * width
    for _level in range(levels - 1):
        value = [value] * width
    return value


def nested(levels: int) -> list:
    value: list = []
    for _level in range(levels):
        value = [value]
    return value


def cycle() -> list:
    value: list = []
    value.append(value)
    return value


BUILD = {
    "valid": lambda: BASE,
    "2000 listeners": lambda: with_spec(gateway={"listeners": listeners(2000)}),
    # The rules over the listeners (and the gateway's over its listeners) never walk a string in their place.
    "a string for the listeners": lambda: with_spec(gateway={"hostname": "ai.example.com", "listeners": "l" * 3000}),
    # 1000 ** 3 values within the schema's depth: only a count of values stops it.
    "shared lists under spec": lambda: with_spec(bomb=shared(1000, 3)),
    "shared lists under status": lambda: {**BASE, "status": {"bomb": shared(1000, 3)}},
    "nested 100000 levels": lambda: with_spec(stack=nested(100_000)),
    "a list that holds itself": lambda: with_spec(secrets=cycle()),
    "a 4 MB string": lambda: with_spec(stack="x" * 4_000_000),
    "4 MB of YAML text": lambda: "apiVersion: v1\n" + "#" * 4_000_000 + "\n",
}


def run(how: str, what: str) -> str:
    from ansible_collections.modelplane.serving.plugins.action.servingstack_spec import load_file, load_yaml
    from ansible_collections.modelplane.serving.plugins.inventory.servingstacks import stack_host
    from ansible_collections.modelplane.serving.plugins.module_utils.servingstack.outcome import outcome

    if how == "src":
        return outcome(*load_file(what)).get("msg", "")
    document = BUILD[what]()
    if how == "inventory":
        return "\n".join(stack_host(document, {})[1].get("servingstack_spec_errors", ()))
    found = outcome(*load_yaml(document, "definition")) if isinstance(document, str) else outcome(document, [])
    return found.get("msg", "")


def peak_megabytes() -> float:
    """The peak resident size of this process since the last ``reset_peak`` (VmHWM). Not ``ru_maxrss``, which never
    goes down and which Linux starts from the peak of the process that spawned this one (pytest's), whose memory a
    vfork shares until the exec."""
    status = Path("/proc/self/status").read_text()
    return int(next(line.split()[1] for line in status.splitlines() if line.startswith("VmHWM:"))) / 1024


def reset_peak() -> None:
    Path("/proc/self/clear_refs").write_text("5")  # VmHWM back to the resident size now


def measure(how: str, what: str) -> dict:
    reset_peak()
    start = time.monotonic()
    try:
        message = run(how, what)
    except BaseException as error:
        message = f"raised {type(error).__name__}: {error}"
    return {"message": message, "seconds": time.monotonic() - start, "megabytes": peak_megabytes()}


if __name__ == "__main__":
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))
    sys.path.insert(0, str(COLLECTIONS))
    cases, out = sys.argv[1:]
    run("definition", "valid")  # imports, the CRD read and its CEL rules compiled: not an input's cost
    costs = {name: measure(how, what) for name, how, what in json.loads(Path(cases).read_text())}
    Path(out).write_text(json.dumps(costs))
