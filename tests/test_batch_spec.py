"""A batch's spec (icae_tui/batch/spec.py) and plan (plan.py): TOML with located errors, task
globs, the cores shared between runs, the plan's order, and what an item's attempts came to
(a resumed batch redoes nothing that finished, retries infrastructure, restarts the
interrupted)."""

from __future__ import annotations

from pathlib import Path

import pytest

from icae_tui.batch.plan import Attempt, BatchItem, ItemState, expand, progress_of
from icae_tui.batch.spec import BatchLimits, BatchSpec, BatchSpecError, match_tasks, parse_spec
from icae_tui.domain.states import FailureKind, ResponderMode, RunStatus
from icae_tui.domain.task import Level
from icae_tui.store.database import RunRow

SPEC = """\
name = "smoke"
tasks = ["semver", "t*"]
agents = ["scripted:good", "scripted:partial"]
levels = ["L1", "L2"]
repeats = 2
tasks_dir = "imported"

[limits]
runs_at_once = 2
max_attempts = 2
"""


def test_a_spec_reads_with_its_defaults_and_a_relative_tasks_dir(tmp_path):
    spec = parse_spec(SPEC, tmp_path / "b.toml")
    assert spec.name == "smoke" and spec.repeats == 2
    assert spec.levels == [Level.L1, Level.L2] and spec.responders == [ResponderMode.SIMULATED]
    assert spec.tasks_dir == str(tmp_path / "imported")
    assert spec.limits == BatchLimits(runs_at_once=2, max_attempts=2)


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ('tasks = ["a"]\nagents = ["x"]\nlevels = ["L9"]\n', "b.toml:3: levels.0: Input should be"),
        ('tasks = ["a"]\nagents = []\n', "b.toml:2: agents: List should have at least 1 item"),
        ('tasks = ["a", "a"]\nagents = ["x"]\n', "b.toml:1: tasks: named twice: a"),
        ('tasks = ["a"]\nagents = ["x"]\n\n[limits]\nruns_at_once = 0\n',
         "b.toml:5: limits.runs_at_once: Input should be greater than or equal to 1"),
        ('tasks = ["a"]\nagents = ["x"]\nrepeat = 2\n', "b.toml:3: repeat: Extra inputs"),
        ('agents = ["x"]\n', "b.toml: tasks: Field required"),
        ("tasks = [\n", "b.toml: invalid TOML"),
    ],
)  # fmt: skip
def test_a_bad_spec_names_its_file_line_and_field(text, said):
    with pytest.raises(BatchSpecError) as caught:
        parse_spec(text, Path("b.toml"))
    assert str(caught.value).startswith(said), str(caught.value)


def test_task_patterns_match_ids_and_globs_in_their_order_each_once():
    known = ["semver", "tidy", "tail", "wordfreq"]
    assert match_tasks(["wordfreq", "t*", "tidy"], known) == ["wordfreq", "tail", "tidy"]
    assert match_tasks(["*"], known) == ["semver", "tail", "tidy", "wordfreq"]
    with pytest.raises(BatchSpecError, match=r"no task matches 'nope', 'x\*' \(known: semver"):
        match_tasks(["semver", "nope", "x*"], known)


def test_the_cores_are_shared_between_the_runs():
    assert (BatchLimits().runs(8), BatchLimits().cases(8)) == (4, 2)
    assert (BatchLimits().runs(1), BatchLimits().cases(1)) == (1, 1)
    assert BatchLimits(runs_at_once=3).cases(8) == 2  # 8 // 3
    assert BatchLimits(runs_at_once=16).cases(8) == 1  # never below one
    assert BatchLimits(runs_at_once=2, cases_at_once=6).cases(8) == 6  # as asked


def test_the_plan_is_every_combination_tasks_first_with_stable_keys():
    spec = BatchSpec(tasks=["a", "b"], agents=["x", "y"], repeats=2)
    items = expand(spec, ["a", "b"])
    assert len(items) == 8 and [it.task_id for it in items[:4]] == ["a"] * 4
    assert items[0] == BatchItem("a", "x", "L1", "simulated", 1)
    assert items[1].key == "a|x|L1|simulated|2"
    assert len({it.key for it in items}) == 8


def _attempt(n: int, status: RunStatus | None, failure: FailureKind | None = None) -> Attempt:
    if status is None:  # killed before its run got a row
        return Attempt("k", n, None)
    row = RunRow(f"r{n}", "a", "x", "L1", "simulated", str(status), 1.0, 2.0, None, "",
                 failure=failure)  # fmt: skip
    return Attempt("k", n, row)


INFRA = FailureKind.INFRASTRUCTURE


@pytest.mark.parametrize(
    ("attempts", "state", "counted", "run_id"),
    [
        ([], ItemState.PENDING, 0, None),
        ([_attempt(1, RunStatus.COMPLETED)], ItemState.DONE, 1, "r1"),
        ([_attempt(1, RunStatus.RUNNING)], ItemState.RUNNING, 0, "r1"),
        # interrupted, cancelled, never started: again, not counted
        ([_attempt(1, RunStatus.INTERRUPTED), _attempt(2, RunStatus.CANCELLED),
          _attempt(3, None)], ItemState.PENDING, 0, "r2"),
        ([_attempt(1, RunStatus.INTERRUPTED), _attempt(2, RunStatus.COMPLETED)],
         ItemState.DONE, 1, "r2"),
        # infrastructure: retried until max_attempts (3 here)
        ([_attempt(1, RunStatus.FAILED, INFRA)], ItemState.PENDING, 1, "r1"),
        ([_attempt(1, RunStatus.FAILED, INFRA), _attempt(2, RunStatus.FAILED, INFRA),
          _attempt(3, RunStatus.FAILED, INFRA)], ItemState.GAVE_UP, 3, "r3"),
        ([_attempt(1, RunStatus.FAILED, INFRA), _attempt(2, RunStatus.COMPLETED)],
         ItemState.DONE, 2, "r2"),
        # the agent's, the input's, ours: results
        ([_attempt(1, RunStatus.FAILED, FailureKind.AGENT)], ItemState.FAILED, 1, "r1"),
        ([_attempt(1, RunStatus.FAILED, FailureKind.INTERNAL)], ItemState.FAILED, 1, "r1"),
        ([_attempt(1, RunStatus.FAILED, None)], ItemState.FAILED, 1, "r1"),  # an older store
    ],
)  # fmt: skip
def test_what_an_items_attempts_came_to(attempts, state, counted, run_id):
    p = progress_of(attempts, max_attempts=3)
    assert (p.state, p.attempts, p.run_id) == (state, counted, run_id)


def test_an_engine_pool_in_the_spec_and_as_flags():
    from icae_tui.batch.spec import EngineSlot
    from icae_tui.cli.batch import _slot

    spec = parse_spec('tasks = ["a"]\nagents = ["x"]\n\n[[engines]]\nname = "docker"\nruns = 2\n'
                      '\n[[engines]]\nname = "lab"\n', Path("b.toml"))  # fmt: skip
    assert spec.engines == [EngineSlot(name="docker", runs=2), EngineSlot(name="lab", runs=1)]
    with pytest.raises(BatchSpecError, match="engines named twice: lab"):
        parse_spec('tasks = ["a"]\nagents = ["x"]\n[[engines]]\nname = "lab"\n'
                   '[[engines]]\nname = "lab"\n', Path("b.toml"))  # fmt: skip
    assert _slot("lab:3") == EngineSlot(name="lab", runs=3)
    assert _slot("docker") == EngineSlot(name="docker", runs=1)
    import argparse

    for bad in ("lab:0", "lab:x", ":2"):
        with pytest.raises(argparse.ArgumentTypeError):
            _slot(bad)
