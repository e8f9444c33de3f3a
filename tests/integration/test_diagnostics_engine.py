"""Diagnostics beyond tests on the real engine: the bundled sample tasks' good, partial and
broken solutions, each run whole, their diagnostics pinned against hand counts; a task's
rules on a real delivery; a hostile workspace read within its bounds, links never followed.

Hand counts (non-blank lines, `grep -c .`): the oracles — semver/oracle/semver.py 359,
tidy/oracle/tidy.py 306, wordfreq/oracle/wordfreq.js 157; the files the solutions write —
semver good 258, partial 252, broken 258; tidy good 268, partial 266, broken 268; wordfreq
good 157, partial 143, broken 157. LOC% = 100 · delivery / oracle, to 2 places. The
signatures name 1 item (semver: its file), 10 (tidy: the file, 5 commands, 4 options) and 8
(wordfreq: the file, 4 commands, 3 options); every solution has them all.
"""

from __future__ import annotations

import json
import shutil

import pytest

from icae_tui.catalog.loader import load_catalog
from icae_tui.domain.events import DiagnosticsMade
from icae_tui.domain.states import RunStatus
from icae_tui.domain.task import Level
from icae_tui.runs.config import RunConfig
from icae_tui.runs.run import Run
from icae_tui.sandbox.base import BoxSpec, Role
from icae_tui.sandbox.registry import open_sandbox
from icae_tui.sandbox.tree import TreeBounds
from tests.conftest import BUNDLED_TASKS

pytestmark = pytest.mark.docker

# (task, solution): delivery LOC, oracle LOC, LOC%, items honoured / named, other files in
# the workspace (a py_compile run by the solution leaves __pycache__/<name>.pyc)
HAND = {
    ("semver", "good"): (258, 359, 71.87, 1, 1, 1),
    ("semver", "partial"): (252, 359, 70.19, 1, 1, 1),
    ("semver", "broken"): (258, 359, 71.87, 1, 1, 0),  # its py_compile failed: no .pyc
    ("tidy", "good"): (268, 306, 87.58, 10, 10, 1),
    ("tidy", "partial"): (266, 306, 86.93, 10, 10, 1),
    ("tidy", "broken"): (268, 306, 87.58, 10, 10, 0),  # never compiled
    ("wordfreq", "good"): (157, 157, 100.0, 8, 8, 0),
    ("wordfreq", "partial"): (143, 157, 91.08, 8, 8, 0),
    ("wordfreq", "broken"): (157, 157, 100.0, 8, 8, 0),
}


async def _run(task, agent, store, **extra):
    run = Run(RunConfig(task=task, agent=agent, level=Level.L1, pace_s=0, **extra), store)
    outcome = await run.execute()
    assert outcome.status is RunStatus.COMPLETED, outcome.error
    made = [e.diagnostics for e in store.events(run.run_id) if isinstance(e, DiagnosticsMade)]
    assert len(made) == 1, made
    return outcome, made[0]


@pytest.mark.parametrize(("task_id", "solution"), sorted(HAND))
async def test_sample_solutions_diagnostics_match_the_hand_counts(
    bundled_catalog, store, task_id, solution
):
    loc, oracle_loc, loc_pct, honoured, named, other = HAND[task_id, solution]
    outcome, made = await _run(bundled_catalog.tasks[task_id], f"scripted:{solution}", store)
    assert not made.error
    s = made.structure
    assert s is not None and s.complete and s.reference is not None
    assert (s.delivery.files, s.delivery.loc, s.delivery.folders, s.delivery.other_files) == (
        1, loc, 1, other
    )  # fmt: skip
    assert (s.reference_from, s.reference.files, s.reference.loc) == ("oracle", 1, oracle_loc)
    assert (s.file_pct, s.loc_pct, s.monolith) == (100.0, loc_pct, False)
    assert made.signature is not None
    assert (made.signature.honoured, made.signature.checked) == (honoured, named)
    assert made.critic is None  # no critic configured: none asked
    review = made.review
    score = outcome.score
    assert review is not None and score is not None and score.review == review
    assert review.components == {"signature": 1.0} and review.weights_from == "default"
    if solution == "broken":
        assert not score.build_ok and review.execution == 0.0 and review.combined == 0.0
    else:
        assert review.execution == round(score.overall, 4)
        assert review.combined == pytest.approx(0.8 * score.overall + 0.2 * 1.0, abs=1e-4)
    report = json.loads(outcome.report_path.read_text())
    assert report["diagnostics"]["structure"]["delivery"]["loc"] == loc
    assert report["score"]["review"] == review.model_dump(mode="json")


async def test_task_rules_on_a_real_delivery(tmp_path, store):
    folder = tmp_path / "tasks" / "semver"
    shutil.copytree(BUNDLED_TASKS / "semver", folder)
    toml = folder / "task.toml"
    toml.write_text(toml.read_text() + (
        '\n[rules]\nforbidden_imports = ["re", "subprocess"]\nforbidden_libraries = ["semver"]\n'
        'required_files = ["semver.py", "README.md"]\n\n'
        "[review]\nweights = { execution = 0.5, review = 0.5 }\n"
    ))  # fmt: skip
    task = load_catalog(tmp_path / "tasks").tasks["semver"]
    outcome, made = await _run(task, "scripted:good", store, splits=())
    rules = made.rules
    assert rules is not None and rules.checked == 5
    found = {(v.rule, v.name, v.file, v.line) for v in rules.violations}
    # the good solution's line 8 is `import re`; it has no README.md; it imports no
    # subprocess and no package called semver (its own file is no import)
    assert found == {("forbidden_import", "re", "semver.py", 8),
                     ("required_file", "README.md", "README.md", None)}  # fmt: skip
    assert rules.rate == pytest.approx(3 / 5)
    review = made.review
    assert review is not None and review.weights_from == "task"
    assert review.components == {"signature": 1.0, "rules": 0.6}
    assert review.weights == {"execution": 0.5, "review": 0.5}
    assert review.execution is None and review.combined is None  # no case run: not measured


async def test_a_hostile_workspace_is_read_within_bounds_and_links_are_not_followed():
    sandbox = await open_sandbox("docker")
    try:
        image = await sandbox.base_image()
        box = await sandbox.create_box(BoxSpec(image=image, run_id="test-diagnostics",
                                               role=Role.TEST))  # fmt: skip
        try:
            made = await box.exec(
                "mkdir -p /workspace/deep /workspace/many && cd /workspace && "
                "printf 'a = 1\\n\\nb = 2\\n' > main.py && ln -s /etc/shadow deep/secret.py && "
                "ln -s / root && head -c 30000000 /dev/zero > blob.py && "
                "for i in $(seq 1 300); do echo x > many/f$i.txt; done",
                timeout_s=120,
            )
            assert made.exit_code == 0, made.stderr
            bounds = TreeBounds(max_entries=1000, file_bytes=4096, kept_bytes=8192)
            tree = await box.read_tree("/workspace", bounds, lambda p: p.endswith(".py"))
            assert tree is not None and tree.complete, tree.why_cut
            got = {e.path: e for e in tree.entries}
            # the top: main.py, blob.py, root, deep, many; deep/secret.py; many/f1..f300.txt
            assert len(tree.entries) == 5 + 1 + 300
            assert got["main.py"].head == b"a = 1\n\nb = 2\n"
            assert got["deep/secret.py"].kind == "link" and got["deep/secret.py"].head is None
            assert got["root"].kind == "link"
            assert not any(p.startswith(("root/", "etc/")) for p in got)  # never followed
            blob = got["blob.py"]
            assert blob.size == 30_000_000 and blob.cut and len(blob.head or b"") == 4096
            few = await box.read_tree("/workspace", TreeBounds(max_entries=100), lambda p: False)
            assert few is not None and not few.complete and len(few.entries) == 100
            assert "100 entries" in few.why_cut
            streamed = TreeBounds(max_stream_bytes=1_000_000)
            cut = await box.read_tree("/workspace", streamed, lambda p: False)
            assert cut is not None and not cut.complete and "bytes" in cut.why_cut  # 30 MB > 1 MB
            assert await box.read_tree("/nowhere", bounds, lambda p: True) is None
        finally:
            await box.remove()
    finally:
        await sandbox.close()
