"""Declared dependencies on the real engine (sandbox/docker/requires.py): a CLI-Tool-Bench
fuzzer that imports PyYAML runs in its box, made from an image with `[fuzz] requires`
installed (the box itself still has no network); an oracle image built with `[oracle]
requires = ["pip:six"]` imports six offline, and the agent's image does not have it."""

from __future__ import annotations

import pytest

from icae_tui.cli.importers import fuzz_in_a_box
from icae_tui.importers import cli_tool_bench as ctb
from icae_tui.importers.icae_eval import Outcome, TaskImport
from icae_tui.sandbox.docker.containers import container
from icae_tui.sandbox.docker.images import ensure_task_images
from icae_tui.sandbox.docker.requires import BUILD_CA
from tests.importers.ctb_tree import BASE_ADAPTER, HEADER
from tests.task_copies import copy_mini, edit_toml, load_mini

pytestmark = pytest.mark.docker

TOOL = "acme/yamlish"

START = (
    "import yaml\n"
    + HEADER
    + """
class Adapter(BaseRepoAdapter):
    base_image = "python:3.11"

    def install_oracle(self, container):
        container.exec_run("sh -c 'git clone https://github.com/acme/yamlish.git'")

    def install_agent(self, container, local_agent_path):
        raise NotImplementedError

    def generate_test_cases(self):
        BODY
        doc = yaml.safe_dump({"key": FuzzHelper.get_string(3, 6, "abc")}).strip()
        return [TestCase(command=f"yamlish '{doc}' {i}", category="yamlish <doc>")
                for i in range(CASES_PER_CATEGORY)]
"""
)


def _tree(root, body: str = "pass"):
    files = {"run_differential_test/BaseRepoAdapter.py": BASE_ADAPTER,
             f"run_differential_test/repo/{TOOL}/start.py":
                 START.replace("{per}", "3").replace("BODY", body)}  # fmt: skip
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def _fuzz(tree):
    result = TaskImport(TOOL, ctb.task_id(TOOL), Outcome.FAILED)
    return ctb.fuzz_output(tree, TOOL, 5, fuzz_in_a_box, result), result.problems


def test_a_fuzzer_that_imports_yaml_runs_in_its_box(tmp_path):
    tree = _tree(tmp_path)
    assert ctb.fuzz_job(tree, TOOL, 5).requires == ("pip:PyYAML",)  # read from its imports
    out, problems = _fuzz(tree)
    assert problems == [] and out is not None
    assert [c.command.split("'")[1][:5] for c in out.cases] == ["key: "] * 3


def test_the_fuzzers_box_from_its_image_still_has_no_network(tmp_path):
    probe = ("import sys; net = open('/proc/net/dev').read().splitlines()[2:]; "
             "sys.exit('interfaces=%s yaml=%s' % (sorted(l.split(':')[0].strip() for l in net), "
             "yaml.__name__))")  # fmt: skip
    out, problems = _fuzz(_tree(tmp_path, probe))
    assert out is None
    (problem,) = problems
    assert "interfaces=['lo'] yaml=yaml" in problem.message, problem.message


async def test_an_oracle_image_has_its_declared_dependencies(docker, tmp_path):
    folder = copy_mini(tmp_path)
    edit_toml(folder, "[oracle]\n", '[image]\npackages = ["python3-pip"]\n\n[oracle]\n'
              'requires = ["pip:six"]\n')  # fmt: skip
    task = load_mini(folder)
    assert task.spec.oracle is not None and task.spec.oracle.requires == ["pip:six"]
    images = await ensure_task_images(docker, task)
    check = f"python3 -c 'import six; print(six.__name__)' && test ! -e {BUILD_CA}"
    async with container(docker, images.oracle, run_id="t-requires", role="test") as box:
        res = await box.exec(check)  # a box with network none, as every case box
        assert (res.exit_code, res.stdout) == (0, b"six\n"), res.stderr
    async with container(docker, images.agent, run_id="t-requires", role="test") as box:
        res = await box.exec("python3 -c 'import six'")
        assert res.exit_code != 0  # the oracle's dependencies are the oracle's only
