"""Cases judged as CLI-Tool-Bench judges them, on the real engine (issue 38): the task's own
sanitizer masks both sides' output in a box of its own before they are compared, the oracle
runs twice so what it still varies on is set apart, a case's lines run under `sh -c`, and a
prep line that fails fails the case (the oracle's: not counted).

Each shape failed before: the timestamp and the ordering were charged to the delivery, the
command ran under bash, a failing prep was ignored."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from icae_tui.domain.results import Verdict
from icae_tui.domain.task import Case, Task, TaskSpec
from icae_tui.evaluation.differential import Sides
from icae_tui.sandbox.base import CasePath
from icae_tui.sandbox.docker.engine import connect
from icae_tui.sandbox.docker.fuzz import ensure_task_code_image
from tests.integration.tool_images import ToolImages, command_task, evaluate

pytestmark = pytest.mark.docker

# The oracle prints its lines in a random order with the time; the delivery sorted, with
# another time. `fail-prep` fails on the delivery only; `oracle-prep` on the oracle only.
ORACLE = r"""#!/bin/sh
case "$1" in
  list) printf 'cherry\napple\nbanana\n' | shuf; echo "at $(date +%s%N)";;
  fail-prep|oracle-prep) [ "$1" = oracle-prep ] && exit 3; echo ready;;
  *) echo "$1";;
esac
"""
DELIVERY = r"""#!/bin/sh
case "$1" in
  list) printf 'apple\nbanana\ncherry\n'; echo "at 1";;
  fail-prep) echo "no such command" >&2; exit 4;;
  oracle-prep) echo ready;;
  *) echo "$1";;
esac
"""
IMAGES = ToolImages("benchmark-judging", ORACLE, DELIVERY)

# Masks digits and sorts the lines: what CLI-Tool-Bench's adapters do with sanitize_stdout.
SORTING = """import json, re, sys
texts = json.load(sys.stdin)
print(json.dumps(["\\n".join(sorted(re.sub(r"[0-9]+", "N", t).splitlines())) for t in texts]))
"""
BROKEN = "import sys\nsys.exit('the sanitizer broke')\n"
PATHS = [CasePath.SUPERVISED, CasePath.HOST]


def with_sanitizer(task: Task, folder: Path, program: str | None, *, oracle_runs: int) -> Task:
    data = task.spec.model_dump(mode="json", exclude_none=True)
    data["cases"]["oracle_runs"] = oracle_runs
    if program is not None:
        (folder / "sanitizer").mkdir(parents=True)
        (folder / "sanitizer" / "mask.py").write_text(program)
        data["sanitizer"] = {"program": "sanitizer/mask.py"}
    spec = TaskSpec.model_validate(data)
    return task.model_copy(update={"spec": spec, "root": str(folder)})


@pytest.fixture(scope="module")
def sanitizer_image() -> str:
    async def build() -> str:
        docker = await connect()
        try:
            return await ensure_task_code_image(docker, [])
        finally:
            await docker.close()

    return asyncio.run(build())


def judged(task: Task, images: Sides, image: str | None, path: CasePath) -> dict:
    sides = Sides(images.oracle_image, images.delivery_image, sanitizer_image=image)
    return asyncio.run(evaluate(task, sides, run_id="bench-judging", path=path))


@pytest.mark.parametrize("path", PATHS)
def test_the_tasks_sanitizer_masks_both_sides_before_they_are_compared(
    images: Sides, sanitizer_image: str, tmp_path: Path, path: CasePath
) -> None:
    base = command_task("judging", [Case(command="tool list")] * 3, timeout_s=10)
    raw = with_sanitizer(base, tmp_path / "raw", None, oracle_runs=1)
    for result in judged(raw, images, None, path).values():  # the time and the order differ
        assert result.verdict is Verdict.WRONG_ANSWER, result.reason
    masked = with_sanitizer(base, tmp_path / "masked", SORTING, oracle_runs=2)
    for result in judged(masked, images, sanitizer_image, path).values():
        assert result.verdict is Verdict.ACCEPTED, result.reason
        assert result.delivery is not None and result.oracle is not None
        assert result.delivery.sanitized == result.oracle.sanitized == "apple\nat N\nbanana\ncherry"
        assert "apple\nbanana\ncherry\nat 1" in result.delivery.stdout  # the raw output stays


def test_what_varies_past_the_sanitizer_is_set_apart_not_scored(
    images: Sides, sanitizer_image: str, tmp_path: Path
) -> None:
    # digits kept: the oracle's own two runs differ in time, so no delivery is charged
    keeps_digits = SORTING.replace('re.sub(r"[0-9]+", "N", t)', "t")
    task = with_sanitizer(
        command_task("judging", [Case(command="tool list")] * 2, timeout_s=10),
        tmp_path, keeps_digits, oracle_runs=2,
    )  # fmt: skip
    for result in judged(task, images, sanitizer_image, CasePath.SUPERVISED).values():
        assert result.verdict is Verdict.ORACLE_NONDETERMINISTIC, result.reason


def test_a_sanitizer_that_fails_leaves_the_output_as_it_was(
    images: Sides, sanitizer_image: str, tmp_path: Path
) -> None:
    task = with_sanitizer(
        command_task("judging", [Case(command="tool list"), Case(command="tool same")],
                     timeout_s=10),
        tmp_path, BROKEN, oracle_runs=1,
    )  # fmt: skip
    results = judged(task, images, sanitizer_image, CasePath.SUPERVISED)
    by_command = {r.command: r for r in results.values()}
    assert by_command["tool list"].verdict is Verdict.WRONG_ANSWER
    assert by_command["tool same"].verdict is Verdict.ACCEPTED
    assert all(r.delivery is not None and r.delivery.sanitized is None for r in results.values())


@pytest.mark.parametrize("path", PATHS)
def test_a_case_runs_under_sh_not_bash(images: Sides, path: CasePath) -> None:
    task = command_task(
        "judging", [Case(command='tool "${BASH_VERSION:-sh}"')], timeout_s=10
    )
    (result,) = judged(task, images, None, path).values()
    assert result.verdict is Verdict.ACCEPTED
    assert result.oracle is not None and result.oracle.stdout == "sh\n"


@pytest.mark.parametrize("path", PATHS)
def test_a_prep_line_that_fails_fails_the_case(images: Sides, path: CasePath) -> None:
    task = command_task(
        "judging",
        [Case(command="tool same", prep="tool fail-prep"),
         Case(command="tool same", prep="tool oracle-prep"),
         Case(command="tool same", prep="tool ok")],
        timeout_s=10,
    )  # fmt: skip
    results = sorted(judged(task, images, None, path).values(), key=lambda r: r.case_id)
    delivery_fails, oracle_fails, fine = results
    assert delivery_fails.verdict is Verdict.RUNTIME_ERROR
    assert "prep line failed (exit 4: no such command)" in delivery_fails.reason
    assert oracle_fails.verdict is Verdict.ORACLE_ERROR
    assert "prep line (exit 3" in oracle_fails.reason
    assert fine.verdict is Verdict.ACCEPTED
    assert json.loads(fine.model_dump_json())["delivery"]["prep_failed"] == ""
