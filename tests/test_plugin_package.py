"""Plug-ins from an installed package (tests/plugin_package/): its backend, agent kind and
case scorer are found through their entry point groups (util/plugins.py) with no edit here:
the kind's agents in `icae agents` and the console's chooser, the backend by name running a
whole run (the processes backend's code: root, no engine), the scorer's metric in its report;
a broken entry point is one warning line naming it. The package goes into a temporary folder
put on sys.path (`pip install --no-deps --target`, offline), never into the venv."""

from __future__ import annotations

import contextlib
import importlib
import io
import logging
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from icae_tui.agents.registry import configured_agents, unregister_agent_kind
from icae_tui.cli import main
from icae_tui.domain.states import RunStatus
from icae_tui.evaluation import scorers
from icae_tui.results.report import build_report
from icae_tui.runs.config import RunConfig
from icae_tui.runs.run import Run
from icae_tui.sandbox import registry
from icae_tui.util import plugins
from tests.conftest import BUNDLED_TASKS

PACKAGE = Path(__file__).parent / "plugin_package"
GROUPS = ("icae_tui.backends", "icae_tui.agent_kinds", "icae_tui.scorers")


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """The package installed into a folder of its own (built from a copy: the source tree
    gets no build files)."""
    root = tmp_path_factory.mktemp("plugin")
    source, target = root / "source", root / "site"
    shutil.copytree(PACKAGE, source, ignore=shutil.ignore_patterns("__pycache__"))
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index",
         "--disable-pip-version-check", "--target", str(target), str(source)],
        check=True, capture_output=True, timeout=120,
    )  # fmt: skip
    return target


@pytest.fixture
def plugged_in(installed, monkeypatch):
    """The package importable and its entry points visible, for one test; after it, what
    it registered is gone and the groups load again when next asked."""
    monkeypatch.syspath_prepend(str(installed))
    importlib.invalidate_caches()
    plugins.forget()
    try:
        yield installed
    finally:
        registry.unregister_backend("demo-processes")
        unregister_agent_kind("echo")
        for scorer in scorers.registered_case_scorers():
            if scorer.name == "plugged":
                scorers.unregister_case_scorer(scorer)
        sys.modules.pop("icae_plugin_demo", None)
        plugins.forget()


def _agents_file(tmp_path: Path) -> Path:
    path = tmp_path / "agents.toml"
    path.write_text('[agents.parrot]\nkind = "echo"\nmodel = "m"\n'
                    'base_url = "http://127.0.0.1:9/v1"\nwords = "hi"\n')  # fmt: skip
    return path


def test_the_kind_s_agents_show_in_icae_agents_and_the_console(plugged_in, tmp_path, monkeypatch):
    from icae_tui.ui.screens.run_setup import configured_choice

    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))  # no user agents file
    agents = _agents_file(tmp_path)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["--tasks", str(BUNDLED_TASKS), "--agents", str(agents), "agents"])
    assert code == 0, err.getvalue()
    assert "echo:parrot" in out.getvalue() and "unknown kind" not in err.getvalue()
    entry = configured_agents([agents]).agents["parrot"]
    choice = configured_choice(entry, {})
    assert (choice.spec, choice.fix) == ("echo:parrot", "")  # the console can start it


def test_without_the_package_the_kind_is_unknown(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    plugins.forget()
    config = configured_agents([_agents_file(tmp_path)])
    assert "parrot" not in config.agents
    assert any("unknown kind 'echo'" in str(e) for e in config.errors)


def test_a_broken_entry_point_is_one_warning_line_naming_it(plugged_in, caplog):
    with caplog.at_level(logging.WARNING, logger=plugins.__name__):
        names = [s.name for s in scorers.case_scorers()]
        scorers.case_scorers()  # loaded once
    assert "plugged" in names
    [record] = caplog.records
    said = record.getMessage()
    assert "missing = icae_plugin_demo_missing:register" in said and "\n" not in said
    assert "ModuleNotFoundError" in said and record.exc_info is None


@pytest.mark.skipif(os.geteuid() != 0, reason="the processes backend mounts")
async def test_a_run_on_the_plugin_backend_reports_the_plugin_metric(
    plugged_in, bundled_catalog, store, monkeypatch
):
    monkeypatch.setenv(registry.UNSAFE_VAR, "1")
    backend, _ = registry.resolve("demo-processes")
    assert backend.summary == "the processes backend, from a plug-in"
    task = bundled_catalog.tasks["wordfreq"]
    config = RunConfig(task=task, agent="scripted:good", pace_s=0, engine="demo-processes")
    run = Run(config, store)
    outcome = await run.execute()
    assert outcome.status is RunStatus.COMPLETED, outcome.error
    report = build_report(store.events(run.run_id))
    assert report["metrics"][-1]["name"] == "plugged"
    assert all(c["metrics"]["plugged"] == 1.0 for c in report["cases"])  # the good solution
    assert report["score"]["rates"]["plugged"] == 1.0
