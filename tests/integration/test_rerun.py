"""After a run whose delivery is kept: one case judged again, as it was and with an edited
input, against the frozen delivery and the oracle; then the delivery is discarded."""

from __future__ import annotations

import aiodocker
import pytest

from icae_tui.evaluation.rerun import discard_delivery, edited, rerun_case, shell_argv
from icae_tui.runs.config import RunConfig
from icae_tui.runs.run import Run

pytestmark = pytest.mark.docker


async def _image_exists(name: str) -> bool:
    docker = aiodocker.Docker()
    try:
        await docker.images.inspect(name)
        return True
    except aiodocker.DockerError:
        return False
    finally:
        await docker.close()


async def test_rerun_a_failing_case_as_it_was_and_edited(fixture_catalog, store):
    task = fixture_catalog.tasks["mini"]
    run = Run(RunConfig(task=task, agent="scripted:partial", pace_s=0, keep_delivery=True), store)
    outcome = await run.execute()
    assert outcome.status == "completed" and outcome.sides is not None
    sides = outcome.sides
    assert await _image_exists(sides.delivery_image)
    failed = next(r for r in outcome.results if not r.passed)
    ref = next(r for r in task.cases_in(*RunConfig(task=task).splits) if r.id == failed.case_id)

    again = await rerun_case(task, sides, ref, run_id=f"{run.run_id}-rerun")
    assert (again.case_id, again.verdict) == (failed.case_id, failed.verdict)

    upper = edited(ref, input={"op": "upper", "text": "fine"})  # what partial does right
    fixed = await rerun_case(task, sides, upper, run_id=f"{run.run_id}-rerun")
    assert fixed.passed, fixed.reason

    await discard_delivery(sides)
    assert not await _image_exists(sides.delivery_image)
    argv = await shell_argv(sides.oracle_image, task.spec.cases.workdir)
    assert argv[:6] == ["docker", "run", "--rm", "-it", "--network", "none"]


async def test_without_keep_the_delivery_is_removed(fixture_catalog, store):
    task = fixture_catalog.tasks["mini"]
    run = Run(RunConfig(task=task, agent="scripted:good", pace_s=0), store)
    outcome = await run.execute()
    assert outcome.sides is None
    assert not await _image_exists(f"icae-delivery-mini:{run.run_id}")
