"""servingstack_barrier: how the component hosts of one converge tell each other they are done."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from ansible_collections.modelplane.serving.plugins.module_utils.servingstack import barrier

REPO = Path(__file__).resolve().parents[2]


def test_start_makes_a_private_directory_and_finish_removes_it(tmp_path):
    directory = barrier.start(str(tmp_path))
    assert stat.S_IMODE(os.stat(directory).st_mode) == 0o700
    barrier.mark(directory, "cert_manager", barrier.CONVERGED)
    assert barrier.finish(directory) is True
    assert not os.path.exists(directory)
    assert barrier.finish(directory) is False


def test_marks_are_read_back_and_only_known_outcomes_and_role_names_are_written(tmp_path):
    directory = barrier.start(str(tmp_path))
    assert barrier.read(directory, "nfd") is None
    barrier.mark(directory, "nfd", barrier.PREVIEWED)
    assert barrier.read(directory, "nfd") == "previewed"
    barrier.mark(directory, "nfd", barrier.FAILED)
    assert barrier.read(directory, "nfd") == "failed"
    with pytest.raises(ValueError, match="outcome must be one of"):
        barrier.mark(directory, "nfd", "done")
    with pytest.raises(ValueError, match="is not a role name"):
        barrier.mark(directory, "../escape", barrier.CONVERGED)
    assert sorted(os.listdir(directory)) == ["nfd"]


def test_wait_returns_at_once_when_every_outcome_is_there(tmp_path):
    directory = barrier.start(str(tmp_path))
    barrier.mark(directory, "a", barrier.CONVERGED)
    barrier.mark(directory, "b", barrier.FAILED)
    slept: list[float] = []
    assert barrier.wait(directory, ["a", "b"], 60, sleep=slept.append) == {"a": "converged", "b": "failed"}
    assert slept == []


def test_wait_polls_until_an_outcome_arrives_and_gives_up_at_the_timeout(tmp_path):
    directory = barrier.start(str(tmp_path))
    now = [0.0]

    def sleep(seconds: float) -> None:
        now[0] += seconds
        if now[0] >= 1.0:  # "another host" converges after a second
            barrier.mark(directory, "a", barrier.CONVERGED)

    assert barrier.wait(directory, ["a"], 60, clock=lambda: now[0], sleep=sleep) == {"a": "converged"}
    assert 1.0 <= now[0] < 1.5
    now[0] = 0.0
    assert barrier.wait(directory, ["a", "b"], 2, clock=lambda: now[0], sleep=sleep) == {
        "a": "converged", "b": "pending"}
    assert now[0] == pytest.approx(2.0)


def run_play(tmp_path: Path, tasks: list[dict], check: bool = False) -> subprocess.CompletedProcess[str]:
    play = tmp_path / "play.yml"
    play.write_text(yaml.safe_dump([{"name": "Barrier", "hosts": "localhost", "connection": "local",
                                     "gather_facts": False, "tasks": tasks}]))
    env = {**os.environ, "ANSIBLE_COLLECTIONS_PATH": str(REPO / ".collections"),
           "ANSIBLE_CONFIG": str(REPO / "ansible.cfg"), "ANSIBLE_NOCOLOR": "1"}
    return subprocess.run([str(Path(sys.executable).parent / "ansible-playbook"), "-i", "localhost,", str(play),
                           "-e", f"ansible_python_interpreter={sys.executable}", *(["--check"] if check else [])],
                          capture_output=True, text=True, env=env, timeout=300, check=False)


def barrier_task(title: str, **args: object) -> dict:
    return {"name": title, "modelplane.serving.servingstack_barrier": args}


@pytest.mark.slow
@pytest.mark.parametrize("check", [False, True])
def test_the_action_records_waits_and_reports_what_did_not_converge(tmp_path, check):
    tasks = [
        {**barrier_task("Start.", state="start", dir=str(tmp_path)), "register": "run"},
        barrier_task("A converged.", state="converged", dir="{{ run.dir }}", name="a"),
        barrier_task("B previewed.", state="converged", dir="{{ run.dir }}", name="b", previewed=True),
        {**barrier_task("Wait for both.", state="wait", dir="{{ run.dir }}", names=["a", "b"]), "register": "both"},
        {"name": "Show.", "ansible.builtin.assert": {"that": [
            "both.outcomes == {'a': 'converged', 'b': 'previewed'}", "both.previewed", "both is not changed"]}},
        barrier_task("C failed.", state="failed", dir="{{ run.dir }}", name="c"),
        {**barrier_task("Wait for c and d.", state="wait", dir="{{ run.dir }}", names=["a", "c", "d"], timeout=0),
         "ignore_errors": True, "register": "missing"},
        {"name": "Check.", "ansible.builtin.assert": {"that": [
            "missing is failed", "missing.not_converged == ['c', 'd']",
            "missing.msg == 'not converged: c (failed), d (pending)'"]}},
        {**barrier_task("Finish.", state="finish", dir="{{ run.dir }}"), "register": "done"},
        {"name": "Gone.", "ansible.builtin.assert": {"that": ["done.removed", "done is not changed"]}},
        {**barrier_task("Bad state.", state="nope", dir="{{ run.dir }}"), "ignore_errors": True, "register": "bad"},
        {"name": "Named.", "ansible.builtin.assert": {"that": ["bad.msg is search('not one of start')"]}},
    ]
    result = run_play(tmp_path, tasks, check=check)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert "changed=0" in result.stdout
    assert [path for path in tmp_path.iterdir() if path.name.startswith("servingstack-run-")] == []
