"""SM in a run (the `processes` backend, no Docker): the judge goes through the run's gateway to
a local OpenAI-compatible server, its calls recorded; a second run asks nothing (the cache); a
dead endpoint leaves SM not measured and says so; a stored run's recorded judge answers a
re-score with no endpoint at all."""

from __future__ import annotations

import asyncio
import json
import os
import socket
from pathlib import Path

import pytest

from icae_tui.cli import main
from icae_tui.domain.events import CaseFinished, CasesPlanned, ModelCallMade, Progress
from icae_tui.domain.states import ModelRole, RunStatus
from icae_tui.evaluation.semantic import JUDGE_CACHE_FILE, SM
from icae_tui.runs.config import RunConfig
from icae_tui.runs.run import Run
from icae_tui.sandbox import registry
from icae_tui.store.database import RunStore
from icae_tui.users.model_user import ModelConfig
from tests.conftest import BUNDLED_TASKS, FIXTURE_TASKS
from tests.openai_stub import serve

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the processes backend mounts")
# mini's partial solution: hidden/ops#0 prints "3" for "words=3", enhanced/edge#1 "0" for
# "words=0" (SP holds, EM fails: asked); hidden/ops#2 has the wrong side effect (SM 0);
# hidden/ops#1 and enhanced/edge#0 are exact (SM 1)
ASKED = {"hidden/ops#0", "enhanced/edge#1"}


@pytest.fixture(autouse=True)
def unsafe_allowed(monkeypatch):
    monkeypatch.setenv(registry.UNSAFE_VAR, "1")


def _same(body) -> str:
    return json.dumps({"same": True, "why": "the same count, without its label"})


def _config(task, base_url: str, **extra) -> RunConfig:
    judge = ModelConfig(model="judge-1", base_url=base_url)
    return RunConfig(task=task, agent="scripted:partial", pace_s=0, engine="processes",
                     judge_model=judge, **extra)  # fmt: skip


def _sm(store: RunStore, run_id: str) -> dict[str, float | None]:
    return {
        e.result.case_id: e.result.metrics.get(SM)
        for e in store.events(run_id)
        if isinstance(e, CaseFinished)
    }


def _dead_url() -> str:
    with socket.socket() as s:  # a port nothing listens on once this closes
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


async def test_sm_is_judged_through_the_gateway_and_cached(fixture_catalog, store):
    task = fixture_catalog.tasks["mini"]
    async with serve(_same) as stub:
        run = Run(_config(task, stub.base_url), store)
        outcome = await run.execute()
        assert outcome.status is RunStatus.COMPLETED, outcome.error
        assert len(stub.requests) == 2 and all(r["temperature"] == 0 for r in stub.requests)
        sm = _sm(store, run.run_id)
        assert {c for c, v in sm.items() if v == 1.0} == ASKED | {
            "hidden/ops#1", "enhanced/edge#0", "public/upper#0"
        }  # fmt: skip
        assert sm["hidden/ops#2"] == 0.0
        assert outcome.score is not None
        assert outcome.score.rates[SM] == 0.8 and outcome.score.semantic.measured == 5
        assert outcome.score.overall == 0.4  # SM never changes a verdict
        planned = next(e for e in store.events(run.run_id) if isinstance(e, CasesPlanned))
        assert SM in [m.name for m in planned.metrics]
        calls = [e for e in store.events(run.run_id) if isinstance(e, ModelCallMade)]
        assert [c.role for c in calls] == [ModelRole.JUDGE, ModelRole.JUDGE]
        assert all(c.model == "judge-1" for c in calls)

        again = Run(_config(task, stub.base_url), store)
        second = await again.execute()
        assert len(stub.requests) == 2  # every pair answered from the cache
        assert second.score is not None and second.score.rates[SM] == 0.8
        finished = [e.result for e in store.events(again.run_id) if isinstance(e, CaseFinished)]
        assert all("(cached)" in r.notes[SM] for r in finished if r.case_id in ASKED)


async def test_a_dead_judge_endpoint_leaves_sm_not_measured(fixture_catalog, store):
    run = Run(_config(fixture_catalog.tasks["mini"], _dead_url()), store)
    outcome = await run.execute()
    assert outcome.status is RunStatus.COMPLETED, outcome.error
    sm = _sm(store, run.run_id)
    assert all(sm[c] is None for c in ASKED)  # not measured: neither 0 nor 1
    assert sm["hidden/ops#1"] == 1.0 and sm["hidden/ops#2"] == 0.0
    assert outcome.score is not None and outcome.score.semantic.measured == 3
    said = [e.message for e in store.events(run.run_id) if isinstance(e, Progress)]
    assert any(m.startswith("SM judge: 2 cases not measured") for m in said), said


async def test_a_stored_run_re_scores_with_its_recorded_judge_and_no_endpoint(
    fixture_catalog, store
):
    task = fixture_catalog.tasks["mini"]
    async with serve(_same) as stub:
        recorded = Run(_config(task, stub.base_url), store)
        await recorded.execute()
    (store.path.parent / JUDGE_CACHE_FILE).unlink()  # no cache to answer from
    replay = Run(_config(task, _dead_url(), model_replay=recorded.run_id), store)
    outcome = await replay.execute()
    assert outcome.status is RunStatus.COMPLETED, outcome.error
    assert outcome.score is not None and outcome.score.rates[SM] == 0.8
    assert _sm(store, replay.run_id) == _sm(store, recorded.run_id)


def _rescore(store: RunStore, *argv: str, agents: Path | None = None) -> tuple[int, str]:
    import contextlib
    import io

    out = io.StringIO()
    tasks = FIXTURE_TASKS if store.run(argv[0]).task_id == "mini" else BUNDLED_TASKS
    files = ["--agents", str(agents)] if agents else []
    with contextlib.redirect_stdout(out):
        code = main(["--home", str(store.path.parent), "--tasks", str(tasks), *files,
                     "runs", "rescore", *argv])  # fmt: skip
    return code, out.getvalue()


async def test_runs_rescore_judges_sm_again_from_the_stored_outputs(fixture_catalog, store):
    task = fixture_catalog.tasks["mini"]
    async with serve(_same) as stub:
        recorded = Run(_config(task, stub.base_url), store)
        await recorded.execute()
    (store.path.parent / JUDGE_CACHE_FILE).unlink()
    # the same judge, no endpoint: its recorded answers
    code, out = await asyncio.to_thread(_rescore, store, recorded.run_id, "--judge-model",
                                        "judge-1")  # fmt: skip
    assert code == 0, out
    assert "2 answered from the run's recording, 0 not measured" in out
    assert _sm_line(out).split()[1:3] == ["80.0%", "80.0%"]  # stored, and judged again
    # another judge, which calls both pairs different: asked (not the recording), SM moves
    async with serve(lambda body: json.dumps({"same": False, "why": "differs"})) as other:
        code, out = await asyncio.to_thread(
            _rescore, store, recorded.run_id, "--judge-model", "judge-2",
            "--judge-base-url", other.base_url,
        )  # fmt: skip
        assert code == 0, out
        assert len(other.requests) == 2 and "0 answered from the run's recording" in out
    assert _sm_line(out).split()[1:3] == ["80.0%", "40.0%"]  # 4 of 5 measured → 2 of 5


def _judge_entry(tmp_path, base_url: str, model: str = "judge-1"):
    """An agents file with `[models.j]`: the judge's endpoint, named by --judge-endpoint j."""
    path = tmp_path / "models.toml"
    path.write_text(f'[models.j]\nmodel = "{model}"\nbase_url = "{base_url}"\n')
    return path


def _icae(store: RunStore, *argv: str) -> int:
    return main(["--home", str(store.path.parent), "--tasks", str(FIXTURE_TASKS), *argv])


async def test_icae_run_judge_endpoint_reaches_the_judge_as_the_flags_do(
    fixture_catalog, store, tmp_path, monkeypatch
):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))  # no user agents file
    async with serve(_same) as stub:
        agents = _judge_entry(tmp_path, stub.base_url)
        code = await asyncio.to_thread(
            _icae, store, "--agents", str(agents), "--engine", "processes", "--pace", "0",
            "run", "--task", "mini", "--agent", "scripted:partial", "--judge-endpoint", "j",
        )  # fmt: skip
        assert code == 0
        assert len(stub.requests) == 2 and {r["model"] for r in stub.requests} == {"judge-1"}
    [row] = store.runs()
    sm = _sm(store, row.run_id)  # the same judgement as the flags' run above
    assert {c for c, v in sm.items() if v == 1.0} == ASKED | {
        "hidden/ops#1", "enhanced/edge#0", "public/upper#0"
    }  # fmt: skip
    assert sm["hidden/ops#2"] == 0.0
    calls = [e for e in store.events(row.run_id) if isinstance(e, ModelCallMade)]
    assert [(c.role, c.model) for c in calls] == [(ModelRole.JUDGE, "judge-1")] * 2


async def test_runs_rescore_judge_endpoint_asks_the_entry_s_endpoint(
    fixture_catalog, store, tmp_path, monkeypatch
):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))  # no user agents file
    async with serve(_same) as stub:
        recorded = Run(_config(fixture_catalog.tasks["mini"], stub.base_url), store)
        await recorded.execute()
    (store.path.parent / JUDGE_CACHE_FILE).unlink()
    async with serve(lambda body: json.dumps({"same": False, "why": "differs"})) as other:
        agents = _judge_entry(tmp_path, other.base_url, model="judge-2")
        code, out = await asyncio.to_thread(
            _rescore, store, recorded.run_id, "--judge-endpoint", "j", agents=agents
        )
        assert code == 0, out
        assert len(other.requests) == 2 and "0 answered from the run's recording" in out
    assert "SM judge judge-2:" in out
    assert _sm_line(out).split()[1:3] == ["80.0%", "40.0%"]  # as with --judge-base-url


def _sm_line(out: str) -> str:
    return next(line for line in out.splitlines() if line.startswith("  SM "))  # a figure


async def test_runs_rescore_weights_the_stored_review_again(bundled_catalog, store):
    run = Run(RunConfig(task=bundled_catalog.tasks["semver"], agent="scripted:partial",
                        pace_s=0, engine="processes"), store)  # fmt: skip
    outcome = await run.execute()
    assert outcome.score is not None and outcome.score.review is not None
    review = outcome.score.review
    assert review.execution is not None and review.review is not None
    code, out = await asyncio.to_thread(_rescore, store, run.run_id, "--review-weights", "1,0")
    assert code == 0, out
    line = next(line for line in out.splitlines() if line.startswith("combined score"))
    # weights 1 / 0: the combined score is the execution figure alone
    assert line.endswith(f"{100 * review.combined:.1f}% → {100 * review.execution:.1f}%"), line
