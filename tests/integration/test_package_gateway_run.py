"""A whole run whose agent installs packages the normal way (`pip install`, `npm install` in
its box) through the run's package gateway, on the real engine and the real registries; then
the same run offline (`--packages cache`, the registries unreachable) with the same bytes.
The box still has no interface but `lo`."""

from __future__ import annotations

import json

import jsonschema
import pytest

from icae_tui.domain.events import (
    AgentCommandDone,
    AgentOutput,
    BuildChecked,
    PackageRefused,
    PackageServed,
    PhaseChanged,
)
from icae_tui.domain.states import PackageMode, PackageSource, Phase
from icae_tui.domain.task import Ecosystem, Level
from icae_tui.packages import MANIFEST_FILE
from icae_tui.runs.config import RunConfig
from icae_tui.runs.run import Run
from tests.conftest import ROOT
from tests.task_copies import add_solution, copy_mini, edit_toml, good_step, load_mini

pytestmark = pytest.mark.docker
SCHEMA = ROOT / "icae_tui" / "schemas" / "report-v3.schema.json"

# The oracle's behaviour, and a delivery that cannot start without both packages.
NEEDS_BOTH = (
    "import os\nimport six  # installed with pip through the gateway\n"
    "if not os.path.isfile('/workspace/node_modules/is-number/index.js'):\n"
    "    raise SystemExit('is-number is missing')\n"
)


def _task(tmp_path):
    folder = copy_mini(tmp_path)
    edit_toml(folder, "[interface]", '[image]\npackages = ["python3-pip", "npm"]\n\n[interface]')
    edit_toml(folder, 'build = "python3 -m py_compile /workspace/mini.py"',
              'build = "python3 -c \'import six\' && python3 -m py_compile /workspace/mini.py '
              '&& cd /workspace && npm cache clean --force && npm ci --no-audit --no-fund"')  # fmt: skip
    with (folder / "task.toml").open("a") as toml:
        toml.write('\n[packages]\nallow = ["pypi:six", "npm:is-number"]\n')
    write = good_step(folder)["write"]
    steps = [
        {"run": "ls /sys/class/net"},
        # --ignore-installed: Debian's python3-six may be in the image already
        {"run": "pip install --ignore-installed six==1.16.0"},
        {"run": "cd /workspace && npm init -y >/dev/null && npm install is-number@7.0.0"},
        {"run": "pip install requests"},  # not allowed: refused, with a message it sees
        {"write": {"path": "mini.py", "content": NEEDS_BOTH + write["content"]}},
        {"submit": "mini with its packages"},
    ]
    add_solution(folder, "deps", steps, pace_s=0)
    return load_mini(folder)


async def _run(task, store, mode):
    run = Run(RunConfig(task=task, agent="scripted:deps", level=Level.L1, pace_s=0,
                        packages=mode), store)  # fmt: skip
    return run, await run.execute()


def _served(events, phase_of):
    return [(e.ecosystem, e.name, e.version, e.sha256, e.source, phase_of[e.seq])
            for e in events if isinstance(e, PackageServed)]  # fmt: skip


def _phases(events):
    phase, out = Phase.PREPARE, {}
    for e in events:
        if isinstance(e, PhaseChanged):
            phase = e.phase
        out[e.seq] = phase
    return out


async def test_packages_installed_through_the_gateway_then_offline(tmp_path, store, monkeypatch):
    monkeypatch.setenv("ICAE_PACKAGE_CACHE", str(tmp_path / "package-cache"))
    task = _task(tmp_path)

    run, live = await _run(task, store, PackageMode.LIVE)
    events = store.events(run.run_id)
    assert live.status == "completed", live.error
    build = next(e for e in events if isinstance(e, BuildChecked))
    assert build.ok, build.reason + build.stderr
    assert live.score.overall == 1.0

    outputs = "".join(e.text for e in events if isinstance(e, AgentOutput))
    assert outputs.split("\n", 1)[0].strip() == "lo"  # no interface but loopback
    refused = [e for e in events if isinstance(e, PackageRefused)]
    # requests or one of its dependencies, whichever pip fetched first: none is allowed
    assert refused and all(r.status == 403 and r.ecosystem is Ecosystem.PYPI for r in refused)
    assert "[packages] allow list" in outputs  # pip showed the refusal to the agent
    done = [e for e in events if isinstance(e, AgentCommandDone)]
    assert [d.exit_code for d in done] == [0, 0, 0, 1]

    phase_of = _phases(events)
    served = _served(events, phase_of)
    agent = {(eco, name, version, sha) for eco, name, version, sha, _, ph in served
             if ph is Phase.GENERATE}  # fmt: skip
    assert {(eco, name, version) for eco, name, version, _ in agent} == {
        (Ecosystem.PYPI, "six", "1.16.0"), (Ecosystem.NPM, "is-number", "7.0.0")}
    assert all(src is PackageSource.UPSTREAM for *_, src, ph in served if ph is Phase.GENERATE)
    # the build's `npm ci` (its npm cache emptied) got the lockfile's tarball from the
    # package cache, offline
    built = [(name, src) for _, name, _, _, src, ph in served if ph is Phase.BUILD]
    assert built == [("is-number", PackageSource.CACHE)]
    assert (store.artifacts_dir / run.run_id / MANIFEST_FILE).is_file()
    report = json.loads(live.report_path.read_text())
    jsonschema.validate(report, json.loads(SCHEMA.read_text()))
    assert {(p["name"], p["phase"]) for p in report["packages"]["served"]} == {
        ("six", "generate"), ("is-number", "generate"), ("is-number", "build")}
    assert report["packages"]["refused"][0]["status"] == 403

    # the registries gone: cache mode answers, with the same bytes, and scores the same
    for var in ("ICAE_PYPI_INDEX", "ICAE_PYPI_JSON", "ICAE_PYPI_FILES", "ICAE_NPM_REGISTRY"):
        monkeypatch.setenv(var, "http://127.0.0.1:9/unreachable/")
    run2, offline = await _run(task, store, PackageMode.CACHE)
    events2 = store.events(run2.run_id)
    assert offline.status == "completed", offline.error
    outputs2 = "".join(e.text for e in events2 if isinstance(e, AgentOutput))
    assert offline.score.overall == 1.0, outputs2[-3000:]
    served2 = _served(events2, _phases(events2))
    again = {(eco, name, version, sha) for eco, name, version, sha, src, ph in served2
             if ph is Phase.GENERATE and src is PackageSource.CACHE}  # fmt: skip
    assert again == agent
    refused2 = [e for e in events2 if isinstance(e, PackageRefused)]
    assert [(r.name, r.status) for r in refused2] == [(r.name, r.status) for r in refused]
